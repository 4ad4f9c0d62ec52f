"""sssn_verify: derive and confirm the formulas of 'stochastic scaling limits and
synchronization by noise' for deep transformers with random MLP blocks.

The public API is re-exported here; see README.md for the architecture.  Heavy
modules (engine, regime, verification suite) load on first use.
"""
from importlib import import_module

from .activations import Activation, get_activation, registry_names
from .errors import (ActivationError, CandidateError, ClaimError, DerivationError, ParameterError,
                     SimulationError, SSSNError)
from .params import ModelParams
from .symbolic import Derivation, derive, derivation_names

__version__ = "0.1.0"

# name -> module that defines it (imported lazily: numba and the kernels cost seconds)
_LAZY = {
    "kernel": "sssn_verify.numeric.kernels",
    "regime": "sssn_verify.regime", "Regime": "sssn_verify.regime",
    "lambda1": "sssn_verify.numeric.rates", "lambda_bar": "sssn_verify.numeric.rates",
    "c_att": "sssn_verify.numeric.rates",
    "simulate_transformer": "sssn_verify.engine", "simulate_gaussian": "sssn_verify.engine",
    "simulate_sde": "sssn_verify.engine", "sde_refinement_ladder": "sssn_verify.engine",
    "lyapunov_tangent": "sssn_verify.engine",
    "verify": "sssn_verify.verify", "check_candidate": "sssn_verify.check",
    "phase_diagram_figure": "sssn_verify.phase_diagram",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sssn_verify' has no attribute {name!r}")


__all__ = [
    "Activation", "get_activation", "registry_names", "ModelParams", "Derivation", "derive",
    "derivation_names", "SSSNError", "ParameterError", "ActivationError", "DerivationError",
    "CandidateError", "ClaimError", "SimulationError", *_LAZY,
]
