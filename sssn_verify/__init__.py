"""sssn_verify: derive and confirm the formulas of 'stochastic scaling limits and
synchronization by noise' for deep transformers with random MLP blocks.

The public API is re-exported here (see README.md for the architecture and
docs/mathematics.md for the mathematics).  Every name loads on first use: sympy,
numba and the kernels cost seconds, and ``sssn-verify regime`` on a warm cache needs
none of them.  Every public name is the plain object its module defines
(``inspect.signature(sv.regime)`` shows its parameters, ``help`` its docstring).

Some submodules share their name with their public function (``regime``, ``verify``,
``scan``).  They are registered here, unexecuted, with the standard library's ``importlib.util.LazyLoader``,
so importing them later never binds the module over the function; the module itself is
``sys.modules["sssn_verify.regime"]`` (``importlib.import_module`` returns it).
"""
from __future__ import annotations

import sys
from importlib import import_module

__version__ = "0.1.0"

from .outputs import default_numba_cache as _default_numba_cache  # noqa: E402

_default_numba_cache()      # NUMBA_CACHE_DIR under the private cache, before any module imports numba

# name -> module that defines it (imported lazily)
_LAZY = {
    "Activation": "sssn_verify.activations", "get_activation": "sssn_verify.activations",
    "registry_names": "sssn_verify.activations",
    "SSSNError": "sssn_verify.errors", "ParameterError": "sssn_verify.errors",
    "ActivationError": "sssn_verify.errors", "DerivationError": "sssn_verify.errors",
    "CandidateError": "sssn_verify.errors", "ClaimError": "sssn_verify.errors",
    "SimulationError": "sssn_verify.errors", "ExpressionError": "sssn_verify.errors",
    "OutputError": "sssn_verify.errors", "ResourceError": "sssn_verify.errors",
    "MissingExtraError": "sssn_verify.errors", "NonFiniteError": "sssn_verify.errors",
    "NumericalError": "sssn_verify.errors",
    "ModelParams": "sssn_verify.params",
    "Derivation": "sssn_verify.symbolic", "derive": "sssn_verify.symbolic",
    "derivation_names": "sssn_verify.symbolic",
    "kernel": "sssn_verify.numeric.kernels",
    "regime": "sssn_verify.regime", "Regime": "sssn_verify.regime",
    "lambda1": "sssn_verify.regime", "lambda_bar": "sssn_verify.regime", "c_att": "sssn_verify.regime",
    "simulate_transformer": "sssn_verify.engine", "simulate_gaussian": "sssn_verify.engine",
    "simulate_sde": "sssn_verify.engine", "sde_refinement_ladder": "sssn_verify.engine",
    "lyapunov_tangent": "sssn_verify.engine", "simulate_coupled": "sssn_verify.engine",
    "verify": "sssn_verify.verify", "check_candidate": "sssn_verify.check",
    "phase_diagram_figure": "sssn_verify.phase_diagram", "scan": "sssn_verify.scan",
}


def _register_lazily(name: str) -> None:
    """Put submodule `name` into sys.modules without running it (it runs on first attribute
    access) and without binding it on this package (only a first import binds)."""
    from importlib.util import LazyLoader, find_spec, module_from_spec
    spec = find_spec(f"{__name__}.{name}")
    spec.loader = LazyLoader(spec.loader)
    module = module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


for _name, _module in _LAZY.items():          # the submodules named like their public function
    if _module == f"{__name__}.{_name}":
        _register_lazily(_name)
del _name, _module


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value                          # later look-ups skip this function
        return value
    raise AttributeError(f"module 'sssn_verify' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
