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
MODULES = ("kernel", "ito", "two_point", "lyapunov", "dissipation", "spde", "spectrum")


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
    """Run the derivation `name`; keyword arguments it does not take are ignored."""
    _load_all()
    if name not in DERIVATIONS:
        raise DerivationError(f"unknown derivation {name!r}; known: {', '.join(DERIVATIONS)}")
    fn = DERIVATIONS[name]
    accepted = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in accepted})


def derivation_names() -> list[str]:
    _load_all()
    return list(DERIVATIONS)


__all__ = ["Derivation", "Step", "DERIVATIONS", "register", "derive", "derivation_names"]
