"""The law of synchronization (docs/mathematics.md, section 8), in numbers: the Lyapunov spectrum, the variance
rate of the log-distance and the law of the first time two tokens come within eps.

Every formula comes from ``symbolic.spectrum`` through the one bridge (nothing typed in):

* ``lyapunov_spectrum(d, k0, k1)``: lambda_i = ((d-1-2i) k1 - (d-1) k0)/2, i = 1..d-1;
* ``log_distance_variance(k0, k1)``: sigma^2 = k0 + k1;
* ``SyncTimeLaw``: log|x_1 - x_2| is a Brownian motion with drift lambda_1 and variance rate
  sigma^2 at small distance, so the time tau to go from eps0 to eps < eps0 is inverse
  Gaussian when lambda_1 < 0 (numbers from ``scipy.stats.invgauss`` with the derived
  (mu, scale)); for lambda_1 >= 0 the (possibly defective) CDF of the method of images is
  used, p_reach = (eps0/eps)^(-2 lambda_1/sigma^2) when lambda_1 > 0.  The depth at step delta
  is ``ceil(t_{1-alpha} / delta)`` (``spectrum.depth``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from .bridge import function
from .errors import ParameterError
from .params import ModelParams, check_int, check_real

QUANTILE_LEVELS = (0.1, 0.5, 0.9)


def _spectrum_fn():
    return function("spectrum.lambda_i", "numpy")


def _variance_fn():
    return function("spectrum.variance_rate", "math")


@lru_cache(maxsize=None)
def _law_fns():
    """(mean, variance, p_reach for m < 0, cdf, invgauss (mu, scale)) as callables of (m, sigma^2, a[, t])."""
    return {part: function(f"spectrum.passage_{part}", "scipy" if part == "cdf" else "math")
            for part in ("mean", "variance", "p_reach_away", "cdf", "mu", "scale")}


def lyapunov_spectrum(d: int, k0: float, k1: float) -> np.ndarray:
    """lambda_1 >= ... >= lambda_{d-1} (k1 = inf: +-inf by the sign of d-1-2i, nan where it is 0)."""
    d = check_int("d", d, 2)
    k0 = check_real("k0", k0, 0.0)
    k1 = float(k1)
    if math.isnan(k1):
        raise ParameterError("k1", k1, "must not be nan")
    i = np.arange(1, d)
    if math.isinf(k1):
        sign = np.sign(d - 1 - 2 * i)
        return np.select([sign > 0, sign < 0], [np.inf, -np.inf], np.nan)   # no 0 * inf
    return np.asarray(_spectrum_fn()(i, d, k0, k1), dtype=float) * np.ones(d - 1)


def log_distance_variance(k0: float, k1: float) -> float:
    """sigma^2 = lim Var(log|V_t|)/t (k1 = inf gives inf)."""
    k0 = check_real("k0", k0, 0.0)
    k1 = float(k1)
    if math.isinf(k1):
        return math.inf
    return float(_variance_fn()(k0, k1))


@dataclass(frozen=True)
class SyncTimeLaw:
    """Law of tau = first time |x_1 - x_2| falls from eps0 to eps (small-distance limit)."""

    lambda1: float
    sigma2: float
    eps0: float
    eps: float

    @property
    def level(self) -> float:
        """a = log(eps0 / eps)."""
        return math.log(self.eps0 / self.eps)

    @property
    def _args(self):
        return (-self.lambda1, self.sigma2, self.level)

    @property
    def inverse_gaussian(self):
        """The frozen scipy.stats.invgauss law (lambda_1 < 0 only)."""
        if not self.lambda1 < 0:
            raise ParameterError("lambda_1", self.lambda1, "must be < 0 for an inverse Gaussian law")
        from scipy import stats
        f = _law_fns()
        return stats.invgauss(f["mu"](*self._args), scale=f["scale"](*self._args))

    @property
    def p_reach(self) -> float:
        if self.lambda1 <= 0:
            return 1.0
        return float(_law_fns()["p_reach_away"](*self._args))

    @property
    def mean(self) -> float:
        return float(self.inverse_gaussian.mean()) if self.lambda1 < 0 else math.inf

    @property
    def std(self) -> float:
        return float(self.inverse_gaussian.std()) if self.lambda1 < 0 else math.inf

    def cdf(self, times) -> np.ndarray:
        """P(tau <= t) (defective when lambda_1 > 0: tends to p_reach)."""
        tt = np.asarray(times, dtype=float)
        if self.lambda1 < 0:
            return self.inverse_gaussian.cdf(tt)
        pos = np.where(tt > 0, tt, 1.0)
        return np.where(tt > 0, _law_fns()["cdf"](*self._args, pos), 0.0)

    def ppf(self, q: float) -> float:
        """The q-quantile of tau (inf when q >= p_reach)."""
        q = check_real("quantile", q, 0.0, strict=True, maximum=1.0)
        if self.lambda1 < 0:
            return float(self.inverse_gaussian.ppf(q)) if q < 1 else math.inf
        if q >= self.p_reach:
            return math.inf
        hi = self.level ** 2 / self.sigma2
        while float(self.cdf(hi)) < q:
            hi *= 2.0
            if hi > 1e300:
                return math.inf
        from scipy import optimize
        return float(optimize.brentq(lambda x: float(self.cdf(x)) - q, 0.0, hi, xtol=1e-14 * hi,
                                     rtol=1e-13))

    def quantiles(self, levels=QUANTILE_LEVELS) -> dict[str, float]:
        return {f"{q:g}": self.ppf(q) for q in levels}

    def time_for_alpha(self, alpha: float) -> float:
        """The smallest t with P(tau <= t) >= 1 - alpha (inf if never)."""
        alpha = check_real("alpha", alpha, 0.0, strict=True, maximum=1.0)
        if alpha >= 1.0:
            raise ParameterError("alpha", alpha, "must lie in (0, 1)")
        return self.ppf(1.0 - alpha)

    def depth(self, alpha: float, delta: float) -> float:
        """L(eps0, eps, alpha) = ceil(t_{1-alpha} / delta) layers of step delta (inf if never)."""
        delta = check_real("delta", delta, 0.0, strict=True)
        ta = self.time_for_alpha(alpha)
        if not math.isfinite(ta):
            return math.inf
        return float(function("spectrum.depth", "math")(ta, delta))

    def to_dict(self, alpha: float = 0.1, delta: float | None = None) -> dict:
        out = {"lambda1": self.lambda1, "log_distance_variance": self.sigma2, "eps0": self.eps0,
               "eps": self.eps, "mean": self.mean, "std": self.std, "quantiles": self.quantiles(),
               "p_reach": self.p_reach, "alpha": alpha, "time_for_alpha": self.time_for_alpha(alpha)}
        if delta is not None:
            out["delta"] = delta
            out["depth_for_alpha"] = self.depth(alpha, delta)
        from .stats import _jsonable     # scipy.stats: not on regime's import path
        return _jsonable(out)

    def text(self, alpha: float = 0.1, delta: float | None = None) -> str:
        def f(x):
            return f"{x:.6g}"
        lines = [f"lambda_1 = {f(self.lambda1)}   sigma^2 = {f(self.sigma2)}   "
                 f"a = log(eps0/eps) = {f(self.level)}",
                 "law of the synchronization time: " + ("inverse Gaussian" if self.lambda1 < 0 else
                                                        "defective (lambda_1 >= 0)" if self.lambda1 > 0
                                                        else "Levy (lambda_1 = 0)"),
                 f"mean = {f(self.mean)}   std = {f(self.std)}   p_reach = {f(self.p_reach)}",
                 "quantiles: " + "  ".join(f"q{k} = {f(v)}" for k, v in self.quantiles().items()),
                 f"time for P(tau <= t) >= {f(1 - alpha)}: {f(self.time_for_alpha(alpha))}"]
        if delta is not None:
            lines.append(f"depth at step delta = {f(delta)}: L = {f(self.depth(alpha, delta))}")
        return "\n".join(lines)


def rqf_log_distance_rates(sigma_q: float) -> tuple[float, float]:
    """(lambda_1, sigma^2) of the rqf field's log-distance at small distance, both from ``symbolic.general_field``
    through the bridge (``rqf_lambda1``, ``rqf_log_distance_variance``: the small-distance limits of its two-point
    motion, as ``spectrum`` derives them for the MLP fields)."""
    S = check_real("sigma_q", sigma_q, 0.0, strict=True)
    return (float(function("general_field.rqf_lambda1", "math")(S)),
            float(function("general_field.rqf_log_distance_variance", "math")(S)))


def rqf_spectrum(d: int, sigma_q: float) -> np.ndarray:
    """lambda_1 >= ... >= lambda_{d-1} of the rqf field (``symbolic.general_field.rqf_spectrum`` through the
    bridge)."""
    d = check_int("d", d, 2)
    S = check_real("sigma_q", sigma_q, 0.0, strict=True)
    i = np.arange(1, d, dtype=float)
    return np.asarray(function("general_field.rqf_spectrum", "numpy")(i, S), dtype=float) * np.ones(d - 1)


def sync_time_law(params: ModelParams, eps0: float, eps: float) -> SyncTimeLaw:
    """The law of the synchronization time for `params` (noise-only flow, k0, k1 from the kernel; for the
    rqf field lambda_1 and sigma^2 of :func:`rqf_log_distance_rates`, from ``symbolic.general_field``)."""
    from .numeric.kernels import kernel
    from .numeric.rates import lambda1
    eps0 = check_real("eps0", eps0, 0.0, strict=True, maximum=2.0)
    eps = check_real("eps", eps, 0.0, strict=True)
    if not eps < eps0:
        raise ParameterError("eps", eps, f"must be < eps0 = {eps0}")
    if params.field == "rqf":
        lam1, s2 = rqf_log_distance_rates(params.sigma_q)
        if not (lam1 < 0 and s2 > 0 and math.isfinite(1.0 / s2)):      # the law's times scale as 1/sigma_q^2
            raise ParameterError("sigma_q", params.sigma_q, "is too small for double precision (sigma_q^2 "
                                 "underflows, the times overflow): use a larger sigma_q")
        return SyncTimeLaw(lam1, s2, float(eps0), float(eps))
    kf = kernel(params)
    if not math.isfinite(kf.k1):
        raise ParameterError("activation", params.activation.name,
                             "has a jump (k1 = inf): the log-distance has infinite variance rate")
    s2 = log_distance_variance(kf.k0, kf.k1)
    if not s2 > 0:
        raise ParameterError("sigma_a", params.sigma_a, "gives no noise (k0 + k1 = 0): nothing moves")
    return SyncTimeLaw(float(lambda1(params.d, kf.k0, kf.k1)), float(s2), float(eps0), float(eps))


__all__ = ["lyapunov_spectrum", "log_distance_variance", "SyncTimeLaw", "sync_time_law", "rqf_log_distance_rates",
           "QUANTILE_LEVELS"]


# ---------------------------------------------------------------- empirical first passage
@dataclass(frozen=True)
class FirstPassage:
    """First-passage times of |x_1 - x_2| from eps0 down to eps in two-token runs.

    times (P,): passage times, ``inf`` for paths that had not passed by ``max_time``
    (right-censored); sigma2_hat: the pooled per-step variance of the log-distance
    increments over the step (used only by the Brownian-bridge monitoring correction).
    layers (P,): the layers each path ran, N = the layer in which its passage was detected (the grid
    or the bridge), else all of them: a stopping time of the layers; log_change (P,): log|x_1 - x_2|
    after those N layers minus its start.  By Wald's identity E[log_change] = m E[N] with m the mean
    log-distance increment of one layer while the increments are i.i.d. (the linear regime), which makes
    ``log_change - m N`` a control variate of mean zero for the passage time (``claims.synchronization_time``).
    """

    model: str
    params: ModelParams
    eps0: float
    eps: float
    step: float
    max_time: float
    n_paths: int
    seed: int
    times: np.ndarray
    sigma2_hat: float
    layers: np.ndarray | None = None
    log_change: np.ndarray | None = None

    @property
    def reached(self) -> np.ndarray:
        return np.isfinite(self.times)


def two_tokens(d: int, eps0: float) -> np.ndarray:
    """x_1 = e_1 and x_2 on the sphere at Euclidean distance eps0 from it, in the e_1 e_2 plane."""
    half = math.asin(eps0 / 2.0)
    x = np.zeros((2, d))
    x[0, 0] = 1.0
    x[1, 0], x[1, 1] = math.cos(2 * half), math.sin(2 * half)
    return x


def first_passage_times(params: ModelParams, eps0: float, eps: float, *, model: str = "gaussian",
                        step: float = 0.005, max_time: float = 10.0, n_paths: int = 1000, seed=0,
                        segment: int = 200, progress: bool | None = False) -> FirstPassage:
    """Two tokens started eps0 apart, noise only (V = 0), simulated by the engine
    (``model`` "gaussian": the Gaussian transformer with layers of step ``step``; "sde":
    projected Euler; "rqf", "rqf_sde": the same for the rqf field); the first time their distance falls to eps.

    Runs in segments of at most ``segment`` layers (fewer when the stored trajectories of the
    paths still running would exceed ~64 MB); paths that have passed are not simulated further.
    Between two layers the log-distance is monitored as a Brownian bridge (the standard
    continuity correction: a crossing inside the step with both ends above log eps has
    probability ``exp(-2 (y_0 - b)(y_1 - b) / (sigma2_hat step))``), so the discrete
    monitoring bias is O(step) instead of O(sqrt(step)); sigma2_hat is the pooled variance of
    the simulated increments so far (never the derived value).  Crossing times inside a step:
    linear interpolation (grid crossing) or the step's midpoint (bridge crossing).
    """
    from . import engine
    from .numeric import rng as _rng
    eps0 = check_real("eps0", eps0, 0.0, strict=True, maximum=1.0)
    eps = check_real("eps", eps, 0.0, strict=True)
    if not eps < eps0:
        raise ParameterError("eps", eps, f"must be < eps0 = {eps0}")
    step = check_real("step", step, 0.0, strict=True)
    max_time = check_real("max_time", max_time, step)
    P = check_int("n_paths", n_paths, 2)
    segment = check_int("segment", segment, 1)
    key = _rng.as_key(seed, "first-passage")
    sim = {"gaussian": engine.simulate_gaussian, "sde": engine.simulate_sde,
           "rqf": partial(engine.simulate, "rqf"), "rqf_sde": partial(engine.simulate, "rqf_sde")}.get(model)
    if sim is None:
        raise ParameterError("model", model, "must be 'gaussian', 'sde', 'rqf' or 'rqf_sde'")
    if (params.field == "rqf") != model.startswith("rqf"):
        raise ParameterError("model", model, f"does not simulate field {params.field!r} (rqf, rqf_sde: field 'rqf')")
    total = int(math.ceil(max_time / step - 1e-9))
    b = math.log(eps)
    X = np.broadcast_to(two_tokens(params.d, eps0), (P, 2, params.d)).copy()
    alive = np.arange(P)
    times = np.full(P, np.inf)
    layers = np.full(P, total, dtype=np.int64)
    log_change = np.zeros(P)
    y_start = math.log(float(np.linalg.norm(X[0, 0] - X[0, 1])))
    inc_sum, inc_sq, inc_n = 0.0, 0.0, 0
    done, k = 0, 0
    while done < total and alive.size:
        cap = max(1, int(64e6 / (alive.size * 2 * params.d * 8)) - 1)
        n = min(segment, total - done, cap)
        p = params.with_(n_tokens=2, V=0.0, horizon=n * step)
        res = sim(p, n, n_paths=alive.size, seed=key.child("segment", k), init=X[alive], store_every=1,
                  progress=progress)
        traj = res.trajectory
        y = np.log(np.linalg.norm(traj[:, :, 0] - traj[:, :, 1], axis=-1))      # (A, n+1)
        del traj
        dy = np.diff(y, axis=1)
        inc_sum += float(dy.sum())
        inc_sq += float((dy ** 2).sum())
        inc_n += dy.size
        s2 = (inc_sq / inc_n - (inc_sum / inc_n) ** 2) / step
        y0, y1 = y[:, :-1], y[:, 1:]
        with np.errstate(over="ignore", divide="ignore"):
            pb = np.where((y0 > b) & (y1 > b), np.exp(-2.0 * (y0 - b) * (y1 - b) / (s2 * step)), 1.0)
        u = key.child("bridge", k).generator().random(y1.shape)
        hit = (y1 <= b) | (u < pb)
        has = hit.any(axis=1)
        rows = np.nonzero(has)[0]
        j = hit[rows].argmax(axis=1)
        ya, yb = y0[rows, j], y1[rows, j]
        grid = yb <= b
        frac = np.where(grid, (ya - b) / np.where(grid, ya - yb, 1.0), 0.5)
        times[alive[rows]] = (done + j + frac) * step
        layers[alive[rows]] = done + j + 1
        log_change[alive[rows]] = yb - y_start
        log_change[alive[~has]] = y[~has, -1] - y_start        # overwritten while the path runs on
        X[alive] = res.tokens
        alive = alive[~has]
        done += n
        k += 1
    return FirstPassage(model, params, eps0, eps, step, total * step, P, seed, times,
                        float(s2) if inc_n else math.nan, layers, log_change)


__all__ += ["FirstPassage", "first_passage_times", "two_tokens"]


def censored_ks(fp: FirstPassage, law: SyncTimeLaw) -> tuple[float, float]:
    """(D, p): Kolmogorov-Smirnov distance sup_{t < T} |F_n(t) - F(t)| between the first-passage
    times and the law, censored at T = max_time (unreached paths count as tau >= T; works for
    defective laws, lambda_1 > 0).  The p-value is that of the full-line statistic with n
    paths (scipy.stats.kstwo): conservative, the supremum runs over a subset.
    """
    from scipy import stats
    n = fp.n_paths
    x = np.sort(fp.times[fp.reached & (fp.times < fp.max_time)])
    F = np.asarray(law.cdf(x), dtype=float)
    i = np.arange(1, x.size + 1)
    d_plus = float(np.max(i / n - F)) if x.size else 0.0
    d_minus = float(np.max(F - (i - 1) / n)) if x.size else 0.0
    d_end = float(law.cdf(fp.max_time)) - x.size / n          # just below T
    D = max(d_plus, d_minus, abs(d_end), 0.0)
    return D, float(stats.kstwo.sf(D, n))


__all__ += ["censored_ks"]


def sync_time_figure(law: SyncTimeLaw, fp: FirstPassage | None = None, *, horizon: float | None = None):
    """The predicted CDF of the synchronization time (and the empirical one of `fp`): a figure."""
    import matplotlib.pyplot as plt
    hi = horizon if horizon is not None else (fp.max_time if fp is not None else
                                              (law.ppf(0.995) if law.lambda1 < 0 else 10.0 / abs(law.lambda1)))
    ts = np.linspace(0.0, hi, 400)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(ts, law.cdf(ts), color="C3", linewidth=2, label="derived law P(tau <= t)")
    if fp is not None:
        tt = np.sort(fp.times[fp.reached])
        ax.step(tt, np.arange(1, tt.size + 1) / fp.n_paths, where="post", color="C0",
                label=f"two-token runs ({fp.n_paths} paths, step {fp.step:g})")
    if law.lambda1 > 0:
        ax.axhline(law.p_reach, color="0.5", linestyle="--", label=f"p_reach = {law.p_reach:.3g}")
    ax.set_xlabel("time t (= depth x step)")
    ax.set_ylabel(f"P(distance has fallen from {law.eps0:g} to {law.eps:g} by t)")
    ax.set_title(f"synchronization time: lambda_1 = {law.lambda1:.4g}, sigma^2 = {law.sigma2:.4g}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


__all__ += ["sync_time_figure"]
