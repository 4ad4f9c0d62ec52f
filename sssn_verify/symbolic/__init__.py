"""Sympy derivations. Every public function returns a :class:`Derivation`.

``DERIVATIONS`` maps a derivation's name to the function that produces it;
modules add themselves with :func:`register`.  ``derive(name, **kw)`` runs one.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Callable

from ..errors import DerivationError
from .derivation import Derivation, Step

DERIVATIONS: dict[str, Callable[..., Derivation]] = {}

# modules holding derivations, in the order of the LaTeX document
MODULES = ("kernel", "ito", "two_point", "lyapunov", "dissipation", "spde", "spectrum", "deep_kernel", "projective", "general_field")


def register(name: str):
    """Decorator: make a derivation function available under `name`."""
    def deco(fn):
        DERIVATIONS[name] = fn
        return fn
    return deco


def _load_all() -> None:
    for mod in MODULES:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{mod}":
                raise


def derive(name: str, **kwargs) -> Derivation:
    """Run the derivation `name` with its keyword arguments (see :func:`derivation_parameters`).

    A keyword the derivation does not take (e.g. a misspelt ``activaton=``) is a DerivationError.
    """
    _load_all()
    if name not in DERIVATIONS:
        raise DerivationError(f"unknown derivation {name!r}; known: {', '.join(DERIVATIONS)}")
    accepted = derivation_parameters(name)
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise DerivationError(f"derivation {name!r} takes no keyword {', '.join(map(repr, unknown))}; "
                              f"it takes: {', '.join(accepted) or 'none'}")
    return DERIVATIONS[name](**kwargs)


def derivation_parameters(name: str) -> list[str]:
    """The keyword arguments derivation `name` accepts (e.g. ``["activation"]`` for kernel)."""
    _load_all()
    if name not in DERIVATIONS:
        raise DerivationError(f"unknown derivation {name!r}; known: {', '.join(DERIVATIONS)}")
    return list(inspect.signature(DERIVATIONS[name]).parameters)


def derivation_names() -> list[str]:
    """Registered derivations in the order of MODULES (the LaTeX document's), whatever the import order."""
    _load_all()
    rank = {f"{__name__}.{m}": i for i, m in enumerate(MODULES)}
    return sorted(DERIVATIONS, key=lambda n: rank.get(DERIVATIONS[n].__module__, len(MODULES)))


__all__ = ["Derivation", "Step", "DERIVATIONS", "register", "derive", "derivation_names", "derivation_parameters"]
