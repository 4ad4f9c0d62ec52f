"""Helpers shared by the claim modules (no mathematics of the model here): a claim imports
these, never another claim."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..numeric.rng import as_key
from ..stats import (CheckResult, joint_min_detectable, linear_fit, min_detectable,
                     path_bootstrap_loglog_slope, slope_test)

EDGE_START = 1e-10          # u0 = 1 - rho0 of a two-token Monte Carlo when the sup is the edge limit


def _shown(parts: Sequence[CheckResult], mdes: Sequence[float | None], order: Sequence[int],
           passed: bool) -> tuple[int, float | None, str]:
    """Which sub-test a combined check shows, its power and the power's basis.

    `order` ranks the parts worst first.  A failing check shows its worst part.  A passing one shows
    the worst part with a stated power (a degenerate part, see ``stats.power_degeneracy``, is never
    shown while a powered one exists, and never lends its power).  The check's ``min_detectable`` is
    that of the shown part ("shown point"); if the shown part has none, the weakest (largest) of the
    parts' ("weakest point"); None if no part states one."""
    powered = [i for i in order if mdes[i] is not None]
    shown = order[0] if (not passed or not powered) else powered[0]
    if mdes[shown] is not None:
        return shown, mdes[shown], "shown point"
    if powered:
        return shown, max(mdes[i] for i in powered), "weakest point"
    return shown, None, "no point states a power"


def combine(name: str, parts: Sequence[CheckResult], level: float, *, method: str = "",
            details: dict[str, Any] | None = None) -> CheckResult:
    """One check out of several sub-tests: Bonferroni ``p = min(1, k min p_i)``.

    Every sub-test is listed in ``details['points']`` with its minimal detectable relative error at
    level ``1 - (1 - level)/k`` (None at a degenerate point: ``stats.power_degeneracy``).  The
    reported estimate/CI/expected are those of the sub-test with the smallest p-value (the worst
    agreement) among those with a stated power (the worst overall when the check fails), and the
    check's power is that shown sub-test's (``details['power_basis']``; see :func:`_shown`): the
    stated power is the power of the test whose interval is shown, never a degenerate point's.
    Valid under any dependence between the sub-tests.  A chi-square sub-test of several parts jointly
    (``details["joint"]``: the names it covers, their precisions ``(C^-1)_ii``, its degrees of freedom) also sees
    an error at one of them; each covered part's power is the stronger of its own and the joint test's
    (``stats.joint_min_detectable``).
    """
    parts = list(parts)
    k = len(parts)
    p = min(1.0, k * min(c.pvalue for c in parts))
    passed = bool(p >= 1.0 - level)
    mdes = [min_detectable(c.stderr, c.expected, level, tol=c.tolerance, bias=c.tolerance, alternative=c.alternative,
                           tests=k) for c in parts]
    # a joint (chi-square) sub-test also rejects an error at one of the parts it covers: a part's power is that of
    # the stronger of its own test and the joint one (their union rejects at least as often as either)
    for c in parts:
        joint = c.details.get("joint")
        if not joint:
            continue
        for covered, prec in zip(joint["covers"], joint["precision"]):
            for i, q in enumerate(parts):
                if q.name == covered and mdes[i] is not None and q.tolerance == 0.0:
                    mj = joint_min_detectable(prec, q.expected, level, int(joint["df"]), tests=k)
                    if mj is not None and mj < mdes[i]:
                        mdes[i] = mj
    order = sorted(range(k), key=lambda i: parts[i].pvalue if parts[i].pvalue is not None else 1.0)
    worst = parts[order[0]]
    i_shown, mde, basis = _shown(parts, mdes, order, passed)
    shown = parts[i_shown]
    pts = [{"name": c.name, "estimate": c.estimate, "stderr": c.stderr, "expected": c.expected,
            "pvalue": c.pvalue, "tolerance": c.tolerance, "alternative": c.alternative, "min_detectable": m,
            **({"power_note": c.details["power_note"]} if m is None and "power_note" in c.details else {})}
           for c, m in zip(parts, mdes)]
    return CheckResult(name=name, passed=passed, estimate=shown.estimate,
                       stderr=shown.stderr, ci=shown.ci, expected=shown.expected, level=level,
                       n=sum(c.n for c in parts), seed=shown.seed, pvalue=p,
                       statistic=shown.statistic, tolerance=shown.tolerance,
                       alternative=shown.alternative,
                       method=method or f"Bonferroni over {k} sub-tests ({shown.method})",
                       details={"worst": worst.name, "shown": shown.name, "power_basis": basis,
                                "points": pts, **(details or {})},
                       min_detectable=mde)


def all_deterministic(name: str, parts: Sequence[CheckResult], *, method: str = "",
                      details: dict[str, Any] | None = None) -> CheckResult:
    """One deterministic check that passes iff every part passes; shows the worst part (with a stated
    power, while the check passes) and states that part's power (see :func:`_shown`)."""
    parts = list(parts)

    def badness(c: CheckResult) -> float:
        if c.expected is None or not (math.isfinite(c.estimate) and math.isfinite(c.expected)):
            return 0.0 if c.passed else math.inf
        return abs(c.estimate - c.expected) / max(c.tolerance, 1e-300)

    passed = all(c.passed for c in parts)
    order = sorted(range(len(parts)), key=lambda i: -badness(parts[i]))
    mdes = [c.min_detectable for c in parts]
    i_shown, mde, basis = _shown(parts, mdes, order, passed)
    worst, shown = parts[order[0]], parts[i_shown]
    pts = [{"name": c.name, "estimate": c.estimate, "expected": c.expected, "tolerance": c.tolerance,
            "passed": c.passed, "min_detectable": c.min_detectable} for c in parts]
    return CheckResult(name=name, passed=passed, estimate=shown.estimate,
                       stderr=shown.stderr, ci=shown.ci, expected=shown.expected, level=shown.level,
                       n=len(parts), tolerance=shown.tolerance, method=method or shown.method,
                       details={"worst": worst.name, "shown": shown.name, "power_basis": basis,
                                "points": pts, **(details or {})},
                       min_detectable=mde, power=1.0)


def configs(budget: dict, anchors: Sequence, n_key: str = "n_configs") -> Sequence:
    """The configurations a checker runs: ``budget["configs"]`` (drawn from the claim's domain by
    ``sssn_verify.explore``) or else the first ``budget[n_key]`` hand-picked anchors."""
    if "configs" in budget:
        return [tuple(c) for c in budget["configs"]]
    return anchors[: int(budget.get(n_key, len(anchors)))]


def explored_params(budget: dict, params: dict, domain) -> dict:
    """A claim checked at one parameter set (``PARAMS``): that set, or the configuration drawn from
    the claim's `domain` by ``sssn_verify.explore`` (``budget["configs"]``, one at a time) over it."""
    if "configs" not in budget:
        return dict(params)
    (config,) = budget["configs"]
    return {**params, **dict(zip(domain.fields, config))}


def finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def estimates_figure(labels, estimate, stderr, expected, ylabel: str) -> dict:
    """The report's "estimates" figure spec: estimates with error bars against the formula."""
    return {"kind": "estimates", "labels": list(labels), "estimate": list(estimate),
            "stderr": list(stderr), "expected": list(expected), "ylabel": ylabel}


def near_synchronized(n: int, d: int, spread: float, seed) -> np.ndarray:
    """`n` tokens on S^{d-1} near e_1: e_1 + spread * N(0, I), normalised (`seed`: an int or a Key)."""
    rng = as_key(seed, "near-synchronized").generator()
    x = np.zeros((n, d))
    x[:, 0] = 1.0
    x += spread * rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---------------------------------------------------------------- convergence ladders (depth, width, N)

def bound_slope(shape: Callable, x: np.ndarray) -> float:
    """Least-squares log-log slope of the bound's shape over the ladder's points."""
    x = np.asarray(x, dtype=float)
    return linear_fit(np.log(x), np.log(shape(x))).slope


def ladder_check(name: str, x, samples, shape, *, level: float, seed: int, n_boot: int, xlabel: str,
                 bound_label: str, ylabel: str = r"$\mathbb{E}\,\max_l |X^l - X_{l\delta}|^2$",
                 extra: dict | None = None, fit=None):
    """Fit the slope of mean(samples) vs x (or take `fit`) and test it against the bound's slope
    (one-sided)."""
    if fit is None:
        fit = path_bootstrap_loglog_slope(x, samples, level=level, n_boot=n_boot, seed=seed)
    b = bound_slope(shape, x)
    res = slope_test(name, fit, b, level=level, direction="at_most", seed=seed)
    sharp = fit.ci[0] <= b <= fit.ci[1]
    means = samples.mean(axis=0)
    ses = samples.std(axis=0, ddof=1) / math.sqrt(samples.shape[0])
    res.details.update({
        "bound_slope": b, "sharp": bool(sharp),
        "verdict_sharpness": ("the bound looks sharp (slope CI contains its slope)" if sharp else
                              "the error decays faster than the bound on this range"),
        "x": list(map(float, x)), "mean": list(map(float, means)), "stderr": list(map(float, ses)),
        "figure": {"kind": "loglog", "x": list(map(float, x)), "y": list(map(float, means)),
                   "stderr": list(map(float, ses)), "slope": fit.slope, "intercept": fit.intercept,
                   "bound": list(map(float, shape(np.asarray(x, float)))), "bound_label": bound_label,
                   "xlabel": xlabel, "ylabel": ylabel},
        **(extra or {})})
    return res


# ---------------------------------------------------------------- sizing Monte Carlo evidence for a stated power

def paths_for(sd: float, target: float, level: float, power: float, n_min: int, n_max: int) -> int:
    """Paths giving a two-sided z-test at `level` probability `power` of rejecting an error of
    `target` (absolute) when one path has standard deviation `sd`: ((z_{1-a/2} + z_power) sd / target)^2,
    rounded up to whole blocks and clipped to [n_min, n_max]."""
    from scipy.stats import norm
    from ..numeric.one_step import BLOCK
    z = norm.isf((1.0 - level) / 2) + norm.ppf(power)
    n = (z * sd / target) ** 2 if target > 0 and math.isfinite(sd) else math.inf
    n = min(float(n_max), max(float(n_min), n))
    return int(math.ceil(n / BLOCK) * BLOCK)


def resolution(value: float, k0: float) -> float:
    """The absolute error (in units of `target`) the claims' one-step evidence is sized to detect at a
    point where the quantity is `value` (>= 0): min(max(value, k0/5), max(k0, value/5)).  An error of
    1 % of the value and one of 0.01 k0 are both detected wherever value/k0 lies in [1/5, 5] (a
    value near 0 is resolved to k0/5 only: a relative error means little there); beyond 5 k0 the
    resolution is value/5, still fine enough for a relative error and affordable."""
    return min(max(value, 0.2 * k0), max(k0, 0.2 * value))


def steering(value: float, k0: float) -> float:
    """A scale for `check`'s search (not a property of the evidence): k0 r^0.9 for r = value/k0 >= 1,
    k0 for 1/2 <= r <= 1, k0 (2r)^-0.1 below.  A relative error (discrepancy ~ r/steering) is steered
    to large r, where resolution() is coarse in k0 units and the evidence cheap; an additive one
    (~ k0/steering) to r in [1/2, 1] (then shrunk to the simplest such point), where resolution() is
    about k0 and the evidence's cost moderate, away from value ~ 0 where it is costly."""
    r = value / k0 if k0 > 0 else math.inf
    if not math.isfinite(r):
        return value
    return k0 * (r ** 0.9 if r >= 1.0 else 1.0 if r >= 0.5 else max(2 * r, 1e-12) ** -0.1)
