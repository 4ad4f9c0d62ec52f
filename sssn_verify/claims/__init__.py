"""The claims registry: ``CLAIMS`` maps a claim's name to its :class:`Claim`.

One module per claim (in the order of docs/mathematics.md).  A claim whose building blocks (a
derivation module, the engine) are not importable is left out of ``CLAIMS``
and listed in ``UNAVAILABLE`` with the reason: a claim is never faked.
"""
from __future__ import annotations

import importlib

from ..errors import ClaimError
from .base import MODES, Claim, ClaimResult

# module name -> order in the suite (cheap deterministic claims first)
CLAIM_MODULES = (
    "kernel", "ito_drift", "two_point", "lyapunov", "relu_rates", "coercivity", "dissipation",
    "synchronization", "convergence_depth", "convergence_width", "commuting_limits",
    "propagation_of_chaos", "lyapunov_spectrum", "log_distance_variance", "synchronization_time",
    "attention_bound", "spde_weak_form", "metastability", "projective", "rqf",
)

CLAIMS: dict[str, Claim] = {}
UNAVAILABLE: dict[str, str] = {}


def _load() -> None:
    for mod in CLAIM_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{mod}")
        except ImportError as exc:  # a building block has not landed
            if getattr(exc, "name", None) != f"{__name__}.{mod}":
                UNAVAILABLE[mod] = f"{type(exc).__name__}: {exc}"
            continue
        claim = module.CLAIM
        CLAIMS[claim.name] = claim


def get_claim(name: str) -> Claim:
    """The claim called `name` or one of its aliases (``lambda1`` for ``lyapunov``, declared by the claim's
    candidate check), or ClaimError listing the known ones."""
    if name in CLAIMS:
        return CLAIMS[name]
    for claim in CLAIMS.values():
        if claim.candidate is not None and name in claim.candidate.aliases:
            return claim
    extra = f" (unavailable: {UNAVAILABLE[name]})" if name in UNAVAILABLE else ""
    aliases = [f"{a} ({c.name})" for c in CLAIMS.values() if c.candidate is not None for a in c.candidate.aliases]
    raise ClaimError(f"unknown claim {name!r}{extra}; known: {', '.join(CLAIMS)}; aliases: {', '.join(aliases)}")


_load()

__all__ = ["CLAIMS", "UNAVAILABLE", "CLAIM_MODULES", "MODES", "Claim", "ClaimResult", "get_claim"]
