"""sssn_verify: derive and confirm the formulas of 'stochastic scaling limits and
synchronization by noise' for deep transformers with random MLP blocks.

The public API is re-exported here (see README.md for the architecture and
docs/mathematics.md for the mathematics).  Every name loads on first use: sympy,
numba and the kernels cost seconds, and ``sssn-verify regime`` on a warm cache needs
none of them.

Some public functions share their name with the submodule that defines them
(``regime``, ``verify``).  Importing such a submodule makes Python bind it as an
attribute of this package, which used to hide the function (``sv.regime(p)`` worked once,
then raised TypeError).  The package's module class makes every such submodule callable
when it is bound: ``sssn_verify.regime(p)`` calls the function ``regime``, and
``import sssn_verify.regime as m`` still gives the module (for monkeypatching, say).
"""
from __future__ import annotations

import sys
import types
from importlib import import_module

__version__ = "0.1.0"

# name -> module that defines it (imported lazily)
_LAZY = {
    "Activation": "sssn_verify.activations", "get_activation": "sssn_verify.activations",
    "registry_names": "sssn_verify.activations",
    "SSSNError": "sssn_verify.errors", "ParameterError": "sssn_verify.errors",
    "ActivationError": "sssn_verify.errors", "DerivationError": "sssn_verify.errors",
    "CandidateError": "sssn_verify.errors", "ClaimError": "sssn_verify.errors",
    "SimulationError": "sssn_verify.errors", "ExpressionError": "sssn_verify.errors",
    "OutputError": "sssn_verify.errors", "ResourceError": "sssn_verify.errors",
    "MissingExtraError": "sssn_verify.errors",
    "ModelParams": "sssn_verify.params",
    "Derivation": "sssn_verify.symbolic", "derive": "sssn_verify.symbolic",
    "derivation_names": "sssn_verify.symbolic",
    "kernel": "sssn_verify.numeric.kernels",
    "regime": "sssn_verify.regime", "Regime": "sssn_verify.regime",
    "lambda1": "sssn_verify.numeric.rates", "lambda_bar": "sssn_verify.numeric.rates",
    "c_att": "sssn_verify.numeric.rates",
    "simulate_transformer": "sssn_verify.engine", "simulate_gaussian": "sssn_verify.engine",
    "simulate_sde": "sssn_verify.engine", "sde_refinement_ladder": "sssn_verify.engine",
    "lyapunov_tangent": "sssn_verify.engine", "simulate_coupled": "sssn_verify.engine",
    "verify": "sssn_verify.verify", "check_candidate": "sssn_verify.check",
    "phase_diagram_figure": "sssn_verify.phase_diagram", "scan": "sssn_verify.scan",
}


def __getattr__(name):
    if name in _LAZY:
        module = import_module(_LAZY[name])
        if module.__name__ == f"{__name__}.{name}":      # bound (callable) by the import itself
            return module
        value = getattr(module, name)
        setattr(sys.modules[__name__], name, value)      # later look-ups skip this function
        return value
    raise AttributeError(f"module 'sssn_verify' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _CallableModule(types.ModuleType):
    """A submodule named like its public function: calling it calls that function."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    """The package's module class: a submodule bound under a public name becomes callable (see above)."""

    def __setattr__(self, name, value):
        if (name in _LAZY and isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}"
                and not callable(value)):
            value.__class__ = _CallableModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = sorted(_LAZY)
