"""The verification suite: run the claims, control the family-wise false alarms.

``verify(mode, claims, seed, progress)`` runs each claim of the registry at the
mode's budget, then applies Holm's step-down procedure at level ``alpha`` to the
p-values of all the statistical checks run (the deterministic ones, quadrature
and exact algebra, pass or fail on their stated tolerance).  If every derived
formula is right (within the stated tolerances), the probability that the suite
reports any failure is at most ``alpha``.
"""
from __future__ import annotations

import sys
import types
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .claims import CLAIMS, UNAVAILABLE, ClaimResult, get_claim
from .claims.base import MODES
from .errors import ParameterError
from .params import check_int, check_real
from .stats import _jsonable, bonferroni, holm, holm_adjusted

DEFAULT_ALPHA = 0.01


@dataclass
class SuiteResult:
    """All claim results of one suite run, with the multiple-testing bookkeeping."""

    results: list[ClaimResult]
    mode: str
    seed: int
    alpha: float
    seconds: float
    n_stochastic: int
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def familywise_text(self) -> str:
        k = self.n_stochastic
        per = self.alpha / k if k else float("nan")
        return (f"family-wise false-alarm probability <= {self.alpha:g} "
                f"(Holm over {k} statistical checks; Bonferroni per-check level {per:.2g}; "
                f"deterministic checks judged on their stated tolerance)")

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({
            "passed": self.passed, "mode": self.mode, "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "familywise": {"alpha": self.alpha, "method": "holm", "n_checks": self.n_stochastic,
                           "bonferroni_per_check": self.alpha / self.n_stochastic
                           if self.n_stochastic else None, "text": self.familywise_text},
            "claims": [r.to_dict() for r in self.results],
            "unavailable": self.unavailable,
        })


def _apply_holm(results: list[ClaimResult], alpha: float) -> int:
    """Judge every statistical check by Holm at family level alpha; returns their number."""
    checks = [c for r in results for c in r.checks if c.pvalue is not None]
    if not checks:
        return 0
    pvals = [c.pvalue for c in checks]
    rejected = holm(pvals, alpha)
    adjusted = holm_adjusted(pvals)
    bonf = bonferroni(pvals, alpha)
    for c, rej, adj, b in zip(checks, rejected, adjusted, bonf):
        c.details["holm_adjusted_p"] = adj
        c.details["bonferroni_rejects"] = b
        c.details["own_level_passed"] = c.passed
        c.passed = not rej
    return len(checks)


def verify(mode: str = "quick", claims: Iterable[str] | None = None, seed: int = 0,
           progress: bool | Callable[[str], None] = False, *, alpha: float = DEFAULT_ALPHA) -> SuiteResult:
    """Run the named claims (all by default) and judge them with Holm at family level alpha.

    ``progress=True`` shows a tqdm bar on stderr; a callable gets each claim's name
    before it runs.
    """
    if mode not in MODES:
        raise ParameterError("mode", mode, f"one of {', '.join(MODES)}")
    seed = check_int("seed", seed, 0)
    alpha = check_real("alpha", alpha, 0.0, strict=True, maximum=0.5)
    names = list(CLAIMS) if not claims else list(dict.fromkeys(claims))
    selected = [get_claim(n) for n in names]
    t0 = time.perf_counter()
    results: list[ClaimResult] = []
    bar = None
    if progress is True:
        from tqdm import tqdm
        bar = tqdm(total=len(selected), file=sys.stderr, unit="claim", desc=f"verify --{mode}")
    try:
        for claim in selected:
            if bar is not None:
                bar.set_postfix_str(claim.name)
            elif callable(progress):
                progress(claim.name)
            results.append(claim.run(mode, seed))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    k = _apply_holm(results, alpha)
    return SuiteResult(results, mode, seed, alpha, time.perf_counter() - t0, k,
                       dict(UNAVAILABLE) if not claims else {})


__all__ = ["verify", "SuiteResult", "DEFAULT_ALPHA"]


class _CallableModule(types.ModuleType):
    """Importing this submodule rebinds ``sssn_verify.verify`` (the lazily re-exported
    function) to the module; calling the module calls :func:`verify`, so
    ``sssn_verify.verify(...)`` works either way."""

    def __call__(self, *args, **kwargs):
        return verify(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
