"""sssn_verify: derive and confirm the formulas of 'stochastic scaling limits and
synchronization by noise' for deep transformers with random MLP blocks.

The public API is re-exported here; see README.md for the architecture.
"""
from .activations import Activation, get_activation, registry_names
from .errors import (ActivationError, CandidateError, ClaimError, DerivationError, ParameterError,
                     SimulationError, SSSNError)
from .params import ModelParams
from .symbolic import Derivation, derive, derivation_names

__version__ = "0.1.0"

__all__ = [
    "Activation", "get_activation", "registry_names", "ModelParams", "Derivation", "derive",
    "derivation_names", "SSSNError", "ParameterError", "ActivationError", "DerivationError",
    "CandidateError", "ClaimError", "SimulationError",
]
