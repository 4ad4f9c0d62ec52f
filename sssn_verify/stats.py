"""Statistics the claims are judged by: intervals, tests, slope fits, multiple testing.

Every numeric check of the toolkit ends in a :class:`CheckResult`: an estimate, its standard
error and confidence interval, the value the derivation predicts, the test's level, sample size
and seed, a p-value for "the derived formula is right" (within a stated tolerance, the
allowance for a known deterministic bias: :func:`agreement_test`) and its power
(``min_detectable``: the smallest relative error of the formula rejected with probability at least ``POWER`` =
0.9, wherever the estimator's bias lies within the tolerance).  The
suite controls the family-wise false-alarm probability with Holm's step-down procedure
(:func:`holm`), reporting the Bonferroni bound too.  The power formula and the tolerance policy
at length: docs/numerics.md, section "Statistics".
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import stats as _st

from .errors import NonFiniteError, ParameterError
from .numeric.rng import as_key
from .params import check_int, check_real

ALTERNATIVES = ("two-sided", "greater", "less")
#: the probability of rejection at which a check's minimal detectable error is stated
POWER = 0.9


def _check_level(level: float) -> float:
    level = check_real("level", level, 0.0, strict=True)
    if level >= 1.0:
        raise ParameterError("level", level, "a confidence level must lie in (0, 1)")
    return level


def _check_alternative(alternative: str) -> str:
    if alternative not in ALTERNATIVES:
        raise ParameterError("alternative", alternative, f"one of {', '.join(ALTERNATIVES)}")
    return alternative


def _as_sample(x, name: str = "sample", minimum: int = 2) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if arr.size < minimum:
        raise ParameterError(name, f"{arr.size} values", f"needs at least {minimum} values")
    if not np.all(np.isfinite(arr)):
        raise NonFiniteError(name, "<non-finite values>", "all values must be finite")
    return arr


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else (None if math.isnan(f) else ("inf" if f > 0 else "-inf"))
    return v


@dataclass
class CheckResult:
    """The verdict of one numeric check.

    ``passed`` says whether the derived value is consistent with the numerics at
    ``level`` (the confidence level; the test's false-alarm probability is
    ``1 - level``).  ``pvalue`` is the p-value of the null "the derived formula is
    right" (None for deterministic checks, which pass or fail on their tolerance).
    ``min_detectable`` is the check's power: the smallest relative error of ``expected``
    it rejects with probability at least ``power`` (see :func:`min_detectable`, whose ``bias`` is the
    tolerance: the estimator may be biased by up to it; None if unknown).
    """

    name: str
    passed: bool
    estimate: float
    stderr: float | None
    ci: tuple[float, float] | None
    expected: float | None
    level: float
    n: int
    seed: int | None = None
    pvalue: float | None = None
    statistic: float | None = None
    tolerance: float = 0.0
    alternative: str = "two-sided"
    method: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    min_detectable: float | None = None
    power: float = POWER

    def __post_init__(self):
        if self.seed is not None:          # an int or a Key: the user's seed is recorded
            self.seed = as_key(self.seed).seed

    @property
    def stochastic(self) -> bool:
        """True when the check is a statistical test (it has a p-value)."""
        return self.pvalue is not None

    def with_level(self, level: float) -> "CheckResult":
        """The same check judged at another confidence level (same p-value)."""
        if self.pvalue is None:
            return self
        level = _check_level(level)
        mde = self.min_detectable
        if mde is not None and self.stderr is not None and self.expected is not None:
            # rescaled at the new level (normal quantiles: exact for z-tests, the large-df limit otherwise)
            mde = min_detectable(self.stderr, self.expected, level, tol=self.tolerance, bias=self.tolerance,
                                 alternative=self.alternative, power=self.power)
        return _replace(self, level=level, passed=bool(self.pvalue >= 1.0 - level), min_detectable=mde)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ci"] = None if self.ci is None else [self.ci[0], self.ci[1]]
        return _jsonable(out)


Verdict = CheckResult  # the name used in the issue text


def _replace(obj, **kw):
    from dataclasses import replace
    return replace(obj, **kw)


# ----------------------------------------------------------------------------- intervals

def normal_ci(estimate: float, stderr: float, level: float = 0.95) -> tuple[float, float]:
    """``estimate +- z_{(1+level)/2} stderr``."""
    level = _check_level(level)
    q = _st.norm.ppf(0.5 + level / 2)
    return (float(estimate - q * stderr), float(estimate + q * stderr))


def t_ci(estimate: float, stderr: float, df: float, level: float = 0.95) -> tuple[float, float]:
    """``estimate +- t_{df,(1+level)/2} stderr``."""
    level = _check_level(level)
    q = _st.t.ppf(0.5 + level / 2, df)
    return (float(estimate - q * stderr), float(estimate + q * stderr))


@dataclass(frozen=True)
class MeanEstimate:
    """A sample mean with its standard error, degrees of freedom and interval."""

    mean: float
    stderr: float
    df: float
    n: int
    ci: tuple[float, float]
    level: float


def mean_ci(sample, level: float = 0.95) -> MeanEstimate:
    """Mean of i.i.d. values, stderr ``s/sqrt(n)``, Student-t interval with n-1 df."""
    x = _as_sample(sample)
    n = x.size
    se = float(x.std(ddof=1) / math.sqrt(n))
    m = float(x.mean())
    return MeanEstimate(m, se, n - 1, n, t_ci(m, se, n - 1, level), level)


def batch_means(series, n_batches: int = 20, level: float = 0.95) -> MeanEstimate:
    """Mean of a correlated series by non-overlapping batch means (t interval, b-1 df).

    The series is cut into ``n_batches`` equal consecutive batches (the remainder at
    the start is dropped); the batch averages are treated as i.i.d.
    """
    x = _as_sample(series)
    b = check_int("n_batches", n_batches, 2)
    if x.size < b:
        raise ParameterError("n_batches", b, f"at most the series length {x.size}")
    size = x.size // b
    means = x[x.size - b * size:].reshape(b, size).mean(axis=1)
    est = mean_ci(means, level)
    return MeanEstimate(est.mean, est.stderr, est.df, int(b * size), est.ci, level)


# ----------------------------------------------------------------------------- power
def min_detectable(stderr: float, expected: float, level: float, *, tol: float = 0.0,
                   alternative: str = "two-sided", power: float = POWER, df: float | None = None,
                   tests: int = 1, bias: float = 0.0) -> float | None:
    """The smallest relative error ``|mu - expected| / |expected|`` rejected with probability
    ``power`` by a test at ``level`` (Bonferroni over ``tests`` such tests):
    ``(tol + bias + (q_{1-alpha'} + q_{power}) stderr) / |expected|``, ``alpha' = (1 - level)/tests``
    (halved for two-sided tests), q the normal (or Student-t, ``df``) quantile.  None when
    ``expected`` is 0 or not finite (no relative scale).

    ``bias``: how far the estimator's mean mu may lie from the true quantity.  An error of the *formula*
    (``expected`` against the truth) of relative size m moves ``|mu - expected|`` by at least
    ``m |expected| - bias``, so the power against formula errors counts it: the checks pass their
    tolerance (the allowance for a known bias of the estimator) as ``bias`` (:func:`agreement_test`).
    Without it the statement held only for an unbiased estimator: ``commuting_limits``, whose estimate
    sits near the edge of its O(1/L) allowance, rejected an injected error of the stated size at 0.68 in
    the direction of its bias and 0.98 in the other (benchmarks/injected_power.py)."""
    level = _check_level(level)
    if expected is None or stderr is None:
        return None
    expected, stderr = float(expected), float(stderr)
    if not (math.isfinite(expected) and expected != 0.0 and math.isfinite(stderr)):
        return None
    if power_degeneracy(stderr, expected, tol) is not None:
        return None
    alpha = (1.0 - level) / max(1, int(tests))
    if _check_alternative(alternative) == "two-sided":
        alpha /= 2
    dist = _st.norm if df is None or not math.isfinite(df) else _st.t(df)
    m = float((tol + float(bias) + (dist.isf(alpha) + dist.ppf(power)) * stderr) / abs(expected))
    return m if math.isfinite(m) else None


def joint_min_detectable(precision: float, expected: float, level: float, df: int, *, tests: int = 1,
                         power: float = POWER) -> float | None:
    """The smallest relative error of ONE coordinate (``expected``) of a vector that a chi-square test of the whole
    vector (``df`` coordinates, covariance C, at ``level``, Bonferroni over ``tests``) rejects with probability
    ``power``: an error e there has noncentrality ``e^2 (C^-1)_ii`` (``precision``), so ``e = sqrt(delta* /
    precision)`` with delta* the noncentrality at which the noncentral chi-square exceeds the test's critical value
    with probability ``power``.  With correlated coordinates the joint test sees one coordinate's error against its
    conditional variance ``1 / precision``, smaller than its marginal one (``lyapunov_spectrum``: half)."""
    from scipy.optimize import brentq
    level = _check_level(level)
    if expected is None or precision is None or not (math.isfinite(expected) and expected != 0.0
                                                     and math.isfinite(precision) and precision > 0):
        return None
    crit = _st.chi2.isf((1.0 - level) / max(1, int(tests)), df)
    delta = brentq(lambda nc: _st.ncx2.sf(crit, df, nc) - power, 1e-9, 1e4 + 100 * crit, xtol=1e-10)
    return float(math.sqrt(delta / precision) / abs(expected))


#: a standard error below this fraction of |expected| (and no tolerance): the point has (nearly) zero variance.  Below
#: it the test would resolve relative errors under the accuracy to which the Monte Carlo estimators are unbiased
#: (Richardson leaves O(delta^3), about 1e-6 relative), and what is left of the per-path values is rare large
#: residuals, so the standard error is itself unreliable: measured at dissipation's antipodal start (relu d = 8,
#: beta = 1, 40 000 paths: relative stderr 4e-7), the stderr varied by 70 % between seeds, the spread of the
#: estimates was 1.7 times the mean stderr, and an error of the stated min_detectable was rejected at rates 0.68
#: and 0.73, not 0.9 (benchmarks/injected_power.py).  Regular points of the claims sit at 1e-4 and above.
ZERO_VARIANCE_REL = 1e-6
#: |expected| below this fraction of (stderr + tolerance): the quantity vanishes at the point
VANISHING_REL = 1e-6


def power_degeneracy(stderr, expected, tol: float = 0.0) -> str | None:
    """Why a test at a point states no relative power (None: it does).

    A *degenerate* point is excluded from every power figure (its ``min_detectable`` is None, the reason
    in ``details["power_note"]``), so that it never makes a check or a claim look stronger than the
    test it shows: the quantity vanishes there (``expected`` is 0, or below ``VANISHING_REL`` times
    the test's resolution: an odd kernel at rho = 0), or the estimate has zero variance and the test
    no tolerance (``stderr <= ZERO_VARIANCE_REL |expected|``: the identity activation's k1, a start at
    a fixed point, the antipodal start of the dissipation rate; the stated power would be rounding noise or below
    the estimator's accuracy, and is not achieved).  A zero-variance point judged within a
    tolerance is a deterministic test: its power (``tol / |expected|``, twice that in :func:`agreement_test`,
    which counts the tolerance as a possible bias too) is kept."""
    if expected is None or stderr is None:
        return "no expected value or no standard error"
    e, s = float(expected), float(stderr)
    if not (math.isfinite(e) and math.isfinite(s)):
        return "non-finite expected value or standard error"
    tol = float(tol or 0.0)
    if e == 0.0 or abs(e) <= VANISHING_REL * (s + tol):
        return "the quantity vanishes at this point (no relative scale)"
    if tol == 0.0 and s <= ZERO_VARIANCE_REL * abs(e):
        return ("zero variance at this point (the estimate is exact up to rounding or the estimator's accuracy): "
                "deterministic, no power stated")
    return None


def power_text(check: "CheckResult") -> str:
    """'detects >= 0.52 % (prob. 0.9)' (or 'power unknown'), for the CLI and reports."""
    m = check.min_detectable
    if m is None or not math.isfinite(m):
        return "power unknown"
    return f"detects >= {100 * m:.2g} % (prob. {check.power:g})"


# ----------------------------------------------------------------------------- tests

def _pvalue(stat: float, alternative: str, df: float | None) -> float:
    dist = _st.norm if df is None or not math.isfinite(df) else _st.t(df)
    if alternative == "two-sided":
        return float(min(1.0, 2.0 * dist.sf(abs(stat))))
    if alternative == "greater":
        return float(dist.sf(stat))
    return float(dist.cdf(stat))


def agreement_test(name: str, estimate: float, stderr: float, expected: float, *,
                   level: float = 0.999, n: int, seed=None,
                   df: float | None = None, abs_tol: float = 0.0, rel_tol: float = 0.0,
                   alternative: str = "two-sided", method: str = "",
                   details: dict | None = None) -> CheckResult:
    """z-test (``df=None``) or t-test of ``E[estimate] = expected`` up to a tolerance.

    With ``tol = abs_tol + rel_tol |expected|`` the statistic is the excess
    ``(|estimate - expected| - tol)_+ / stderr`` (signed for one-sided tests):

    * ``two-sided``: H0 ``|mu - expected| <= tol``;
    * ``greater``: H0 ``mu <= expected + tol`` (rejected when the estimate is too large);
    * ``less``: H0 ``mu >= expected - tol`` (rejected when the estimate is too small).

    Passes when the p-value is at least ``1 - level``.  Its ``min_detectable`` is the power against an
    error of the formula: the tolerance counted twice (once as the test's allowance, once as the bias it
    allows the estimator: ``min_detectable(..., tol=tol, bias=tol)``), so that an error of that size is
    rejected with probability at least ``POWER`` wherever the estimator's bias lies within the tolerance.
    """
    level = _check_level(level)
    alternative = _check_alternative(alternative)
    estimate = float(estimate)
    expected = float(expected)
    if not math.isfinite(float(stderr)):
        raise NonFiniteError("stderr", "<non-finite value>", "a standard error must be finite")
    stderr = check_real("stderr", stderr, 0.0)
    tol = check_real("abs_tol", abs_tol, 0.0) + check_real("rel_tol", rel_tol, 0.0) * abs(expected)
    diff = estimate - expected
    if alternative == "two-sided":
        excess = max(0.0, abs(diff) - tol)
    elif alternative == "greater":
        excess = diff - tol
    else:
        excess = diff + tol
    if stderr == 0.0:
        stat = 0.0 if excess == 0.0 else math.copysign(math.inf, excess)
    else:
        stat = excess / stderr
    p = _pvalue(stat, alternative, df)
    ci = normal_ci(estimate, stderr, level) if df is None else t_ci(estimate, stderr, df, level)
    details = dict(details or {})
    note = power_degeneracy(stderr, expected, tol)
    if note is not None:
        details.setdefault("power_note", note)
    return CheckResult(name=name, passed=bool(p >= 1.0 - level), estimate=estimate, stderr=stderr,
                       ci=ci, expected=expected, level=level, n=int(n), seed=seed, pvalue=p,
                       statistic=float(stat), tolerance=tol, alternative=alternative,
                       method=method or ("z-test" if df is None else f"t-test (df={df:g})"),
                       details=details,
                       min_detectable=min_detectable(stderr, expected, level, tol=tol, bias=tol,
                                                     alternative=alternative, df=df))


def z_test(name: str, estimate: float, stderr: float, expected: float, **kw) -> CheckResult:
    """Normal-theory test of ``E[estimate] = expected`` (see :func:`agreement_test`)."""
    kw.pop("df", None)
    return agreement_test(name, estimate, stderr, expected, **kw)


def t_test(name: str, sample, expected: float, *, level: float = 0.999, seed=None,
           **kw) -> CheckResult:
    """One-sample t-test of ``mean(sample) = expected`` (see :func:`agreement_test`)."""
    est = mean_ci(sample, 0.95)
    return agreement_test(name, est.mean, est.stderr, expected, level=level, n=est.n, seed=seed,
                          df=est.df, **kw)


def deterministic_check(name: str, value: float, expected: float, *, tol: float,
                        level: float = 1.0 - 1e-12, n: int = 1, method: str = "quadrature",
                        error: float | None = None, details: dict | None = None,
                        truth: bool = False) -> CheckResult:
    """Pass iff ``|value - expected| <= tol`` (quadrature or exact algebra: no p-value).

    ``error`` is the stated numerical error of ``value`` (reported as its stderr);
    ``level`` is nominal (deterministic checks do not enter the family-wise count).
    ``truth=True``: value and expected are truth values (1.0/0.0: a sign, a region); such a check
    has no relative power (a formula off by a small factor has the same sign), so it states none.
    """
    tol = check_real("tol", tol, 0.0)
    value, expected = float(value), float(expected)
    ok = bool(abs(value - expected) <= tol) if math.isfinite(value) and math.isfinite(expected) \
        else bool(value == expected)
    err = tol if error is None else float(error)
    mde = tol / abs(expected) if (math.isfinite(expected) and math.isfinite(tol)
                                  and abs(expected) > VANISHING_REL * tol and expected != 0.0) else None
    details = dict(details or {})
    if truth:
        mde = None
        details.setdefault("power_note", "a truth-value (sign) check: no relative power")
    return CheckResult(name=name, passed=ok, estimate=value, stderr=err,
                       ci=(value - err, value + err), expected=expected, level=level, n=int(n),
                       tolerance=tol, method=method, details=details,
                       min_detectable=mde, power=1.0)


# ----------------------------------------------------------------------------- slopes

@dataclass(frozen=True)
class SlopeFit:
    """A straight-line fit ``y = intercept + slope x`` with the slope's uncertainty."""

    slope: float
    intercept: float
    stderr: float
    ci: tuple[float, float]
    df: float
    n: int
    level: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def linear_fit(x, y, *, sigma=None, level: float = 0.95, method: str = "ols",
               n_boot: int = 2000, seed=0) -> SlopeFit:
    """Fit ``y = a + b x``.

    ``method='ols'``: (weighted, with ``sigma`` the standard errors of y) least
    squares, t interval with n-2 df from the residual scatter.  With ``sigma``
    given the stderr is ``max(model-based, residual-based)`` so neither noisy
    points nor curvature make it over-confident.
    ``method='bootstrap'``: pairs bootstrap (seeded), percentile interval.
    """
    x = _as_sample(x, "x", 3)
    y = _as_sample(y, "y", 3)
    if x.size != y.size:
        raise ParameterError("y", f"{y.size} values", f"must have as many values as x ({x.size})")
    level = _check_level(level)
    w = np.ones_like(x) if sigma is None else 1.0 / np.square(_as_sample(sigma, "sigma", x.size))
    if not np.all(np.isfinite(w)):
        raise NonFiniteError("sigma", "<zero or non-finite>", "standard errors must be > 0")

    def fit(xx, yy, ww):
        X = np.column_stack([np.ones_like(xx), xx])
        WX = X * ww[:, None]
        cov = np.linalg.inv(X.T @ WX)
        beta = cov @ (WX.T @ yy)
        return beta, cov

    beta, cov = fit(x, y, w)
    n = x.size
    df = n - 2
    if method == "ols":
        resid = y - (beta[0] + beta[1] * x)
        chi2 = float(np.sum(w * resid ** 2))
        scale = chi2 / df if df > 0 else 0.0
        if sigma is None:
            se = math.sqrt(cov[1, 1] * scale)
        else:
            se = math.sqrt(cov[1, 1] * max(1.0, scale))
        ci = t_ci(beta[1], se, df, level)
    elif method == "bootstrap":
        rng = as_key(seed, "bootstrap").generator()
        idx = rng.integers(0, n, size=(check_int("n_boot", n_boot, 100), n))
        slopes = []
        for row in idx:
            if np.ptp(x[row]) == 0:
                continue
            b, _ = fit(x[row], y[row], w[row])
            slopes.append(b[1])
        slopes = np.asarray(slopes)
        se = float(slopes.std(ddof=1))
        lo, hi = np.quantile(slopes, [0.5 - level / 2, 0.5 + level / 2])
        ci = (float(lo), float(hi))
    else:
        raise ParameterError("method", method, "one of ols, bootstrap")
    return SlopeFit(float(beta[1]), float(beta[0]), float(se), ci, float(df), int(n), level, method)


def loglog_slope(x, y, *, stderr=None, level: float = 0.95, method: str = "ols",
                 seed=0) -> SlopeFit:
    """Slope of ``log y`` against ``log x`` (the rate exponent), with its interval.

    ``stderr`` (of y) becomes the delta-method stderr ``stderr/y`` of ``log y``.
    """
    x = _as_sample(x, "x", 3)
    y = _as_sample(y, "y", 3)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ParameterError("y", "<non-positive values>", "log-log fits need positive x and y")
    sig = None if stderr is None else _as_sample(stderr, "stderr", 3) / y
    return linear_fit(np.log(x), np.log(y), sigma=sig, level=level, method=method, seed=seed)


def path_bootstrap_loglog_slope(x, samples, *, level: float = 0.95, n_boot: int = 1000,
                                seed=0) -> SlopeFit:
    """Slope of ``log mean(samples[:, r])`` against ``log x[r]`` with a paths bootstrap.

    ``samples`` (P, R) holds one value per path and level; levels computed on the same
    paths are correlated, so the rows (paths) are resampled together (seeded): stderr =
    sd of the bootstrap slopes, percentile interval; df = inf (normal-theory tests).
    """
    x = _as_sample(x, "x", 3)
    s = np.asarray(samples, dtype=float)
    if s.ndim != 2 or s.shape[1] != x.size or s.shape[0] < 2:
        raise ParameterError("samples", f"shape {s.shape}", f"must be (paths >= 2, {x.size})")
    if not np.all(np.isfinite(s)):
        raise NonFiniteError("samples", "<non-finite values>", "all values must be finite")
    if np.any(x <= 0):
        raise ParameterError("samples", "<array>", "values must be finite and x positive")
    lx = np.log(x)
    X = np.column_stack([np.ones_like(lx), lx])
    proj = np.linalg.pinv(X)                     # (2, R): least-squares coefficients

    means = s.mean(axis=0)
    if np.any(means <= 0):
        raise ParameterError("samples", "<non-positive means>", "log-log fits need positive means")
    beta = proj @ np.log(means)
    rng = as_key(seed, "bootstrap").generator()
    P = s.shape[0]
    idx = rng.integers(0, P, size=(check_int("n_boot", n_boot, 100), P))
    boot_means = s[idx].mean(axis=1)             # (B, R)
    boot_means = np.maximum(boot_means, np.finfo(float).tiny)
    slopes = (np.log(boot_means) @ proj.T)[:, 1]
    se = float(slopes.std(ddof=1))
    lo, hi = np.quantile(slopes, [0.5 - _check_level(level) / 2, 0.5 + level / 2])
    return SlopeFit(float(beta[1]), float(beta[0]), se, (float(lo), float(hi)), math.inf, int(x.size),
                    level, "path bootstrap")


def slope_test(name: str, fit: SlopeFit, bound: float, *, level: float = 0.999,
               direction: str = "at_most", tol: float = 0.0, seed=None,
               details: dict | None = None) -> CheckResult:
    """Test a fitted rate exponent against a bound.

    ``direction='at_most'``: H0 ``slope <= bound + tol`` (decay at least as fast as the
    bound; rejected when the data decay significantly slower).  ``'at_least'``: H0
    ``slope >= bound - tol``.  ``'equal'``: H0 ``|slope - bound| <= tol``.
    """
    alt = {"at_most": "greater", "at_least": "less", "equal": "two-sided"}.get(direction)
    if alt is None:
        raise ParameterError("direction", direction, "one of at_most, at_least, equal")
    df = fit.df if fit.method == "ols" and math.isfinite(fit.df) else None
    return agreement_test(name, fit.slope, fit.stderr, bound, level=level, n=fit.n, seed=seed,
                          df=df, abs_tol=tol,
                          alternative=alt, method=f"slope {fit.method} fit, one-sided"
                          if alt != "two-sided" else f"slope {fit.method} fit",
                          details={"intercept": fit.intercept, "fit_ci": list(fit.ci),
                                   **(details or {})})


# ----------------------------------------------------------------------------- multiple testing

def bonferroni(pvalues: Sequence[float], alpha: float = 0.01) -> list[bool]:
    """Reject H0_i iff ``p_i <= alpha / K`` (K = number of tests); FWER <= alpha."""
    p = np.asarray(pvalues, dtype=float)
    alpha = check_real("alpha", alpha, 0.0, strict=True, maximum=1.0)
    if p.size == 0:
        return []
    return [bool(v <= alpha / p.size) for v in p]


def holm(pvalues: Sequence[float], alpha: float = 0.01) -> list[bool]:
    """Holm's step-down procedure: FWER <= alpha under any dependence.

    Sort ``p_(1) <= ... <= p_(K)``; reject while ``p_(i) <= alpha / (K - i + 1)``.
    """
    p = np.asarray(pvalues, dtype=float)
    alpha = check_real("alpha", alpha, 0.0, strict=True, maximum=1.0)
    k = p.size
    reject = [False] * k
    for rank, i in enumerate(np.argsort(p, kind="stable")):
        if p[i] <= alpha / (k - rank):
            reject[i] = True
        else:
            break
    return reject


def holm_adjusted(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values ``max_{j<=i} min(1, (K-j+1) p_(j))`` in the input order."""
    p = np.asarray(pvalues, dtype=float)
    k = p.size
    order = np.argsort(p, kind="stable")
    adj = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        adj[i] = running
    return [float(v) for v in adj]


def familywise_bound(alphas: Sequence[float]) -> float:
    """Bonferroni (union) bound on the family-wise false-alarm probability: ``min(1, sum alpha_i)``."""
    return float(min(1.0, sum(float(a) for a in alphas)))


__all__ = [
    "CheckResult", "Verdict", "POWER", "min_detectable", "joint_min_detectable", "power_degeneracy", "power_text", "MeanEstimate", "SlopeFit", "normal_ci", "t_ci", "mean_ci",
    "batch_means", "agreement_test", "z_test", "t_test", "deterministic_check", "linear_fit",
    "loglog_slope", "path_bootstrap_loglog_slope", "slope_test", "bonferroni", "holm", "holm_adjusted", "familywise_bound",
]
