"""Claim `lyapunov_spectrum`: all d-1 Lyapunov exponents of the noise-only flow (docs/mathematics.md, section 8),

    lambda_i = ((d - 1 - 2i) k1 - (d-1) k0) / 2,  i = 1..d-1     (sympy: k-volume growth rates).

Checker: the QR (Benettin) tangent flow of the SDE, k = d-1 tangent vectors, projected Euler,
with the O(h) time-step bias removed by Richardson extrapolation *on shared noise*: every
path runs the fine scheme (step h) and the coarse one (step 2h, driven by the sums of two fine
increments) side by side, and ``2 rate(h) - rate(2h)`` is formed per path, so the paths stay
i.i.d. and the extrapolation costs little variance.  Each exponent is z-tested against the
formula at k0, k1 from ``numeric.kernels`` (allowance for the O(h^2) remainder), and the vector
of all exponents gets a joint chi-square test with the covariance estimated across paths
(the exponents' estimates are strongly correlated through the common radial noise);
Bonferroni over everything.

The SDE's tangent flow is driven by finite-dimensional noise: at x with orthonormal tangents
V_j, W(x) ~ N(0, k0 h I) and DW(x)[V_j] = M V_j with M a d x d matrix of i.i.d. N(0, k1 h)
entries (the derived covariances Cov(DW[U], DW[V]) = k1 <U, V> I, Cov(W, DW[V]) = 0).  The
engine's tangent flow follows one vector; until it offers k vectors with a shared-noise
refinement, the kernel lives here (small, @njit, per-path seeds of ``numeric.rng``).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp
from numba import njit, prange
from scipy import stats as _st

from ..errors import ParameterError, SimulationError
from ..numeric import rng as _rng
from ..numeric.fields import normal, rng_state
from ..numeric.kernels import kernel as numeric_kernel
from ..stats import CheckResult, agreement_test
from ..symbolic.spectrum import spectrum
from ..strategies import claim_configs
from ._util import combine, configs, estimates_figure
from .base import Claim

# (activation, d, sigma_w, sigma_b, sigma_a, horizon, coarse steps); quick mode runs the first
# `n_configs`, full mode multiplies the steps by `step_factor`.  Steps are chosen so that the
# O(h^2) remainder after extrapolation, ~ (lambda_{d-1} h)^2, stays below the tolerance.
CONFIGS = (
    ("relu", 5, 1.0, 1.0, 1.0, 1.0, 100),
    ("sin:3", 4, 1.0, 0.0, 1.0, 0.5, 200),    # lambda = (1.5, -3, -7.5): lambda_1 > 0
    ("tanh", 6, 1.2, 0.3, 1.0, 1.0, 100),
    ("relu", 8, 0.7, 1.3, 0.5, 1.0, 100),
    ("gelu", 3, 1.5, 0.5, 1.0, 1.0, 100),
)
SPECTRUM_STREAM = 11
# where it is explored (the SDE checks; noise per step as in the anchors: sigma_a <= 0.8)
DOMAIN = claim_configs(activation=("relu", "tanh", "gelu"), d=(2, 6), sigma_w=(0.5, 1.25), sigma_b=(0.0, 1.0),
                       sigma_a=(0.5, 0.8), horizon=(1.0, 1.0), steps=(100, 100))

# the engine's k-vector tangent flow (QR after every layer) of the Gaussian and the finite-width
# transformer: (model, activation, d, sigma_w, sigma_b, sigma_a, depth L); Richardson over L, 2L
# on independent runs (the engine has no shared-noise refinement for tangent flows), so these
# checks carry sqrt(5) times the statistical error of the SDE's.  Quick mode runs the first
# `n_engine_configs`.
ENGINE_CONFIGS = (
    ("gaussian", "relu", 4, 1.0, 0.5, 1.0, 100),
    ("transformer", "relu", 4, 1.0, 0.5, 1.0, 100),
    ("gaussian", "tanh", 5, 1.2, 0.3, 1.0, 100),
)


@lru_cache(maxsize=None)
def derived_formula() -> Callable[[int, float, float], np.ndarray]:
    """(lambda_1, ..., lambda_{d-1})(d, k0, k1) from the sympy derivation (through the bridge)."""
    from ..bridge import function
    fn = function("spectrum.lambda_i", "numpy")
    return lambda d, k0, k1: np.asarray(fn(np.arange(1, d), d, k0, k1), dtype=float) * np.ones(d - 1)


@njit(cache=True)
def _euler_qr(x, V, w, M, h, cc, logs, z, Z):
    """One projected Euler step of (x, V) with noise (w, M), then QR of V; adds log R_jj to logs."""
    d, k = V.shape
    xw = 0.0
    for c in range(d):
        xw += x[c] * w[c]
    for c in range(d):
        z[c] = x[c] + h * cc * x[c] + w[c] - xw * x[c]
    for j in range(k):
        vw = 0.0
        for c in range(d):
            vw += V[c, j] * w[c]
        xmv = 0.0
        for c in range(d):
            mv = 0.0
            for e in range(d):
                mv += M[c, e] * V[e, j]
            Z[c, j] = V[c, j] * (1.0 + h * cc) - (V[c, j] * xw + x[c] * vw) + mv
            xmv += x[c] * mv
        for c in range(d):
            Z[c, j] -= xmv * x[c]
    nz = 0.0
    for c in range(d):
        nz += z[c] * z[c]
    nz = math.sqrt(nz)
    for c in range(d):
        x[c] = z[c] / nz
    for j in range(k):                       # v' = P_{x'} dz / |z|
        p = 0.0
        for c in range(d):
            p += x[c] * Z[c, j]
        for c in range(d):
            Z[c, j] = (Z[c, j] - p * x[c]) / nz
    for j in range(k):                       # modified Gram-Schmidt
        for i in range(j):
            p = 0.0
            for c in range(d):
                p += V[c, i] * Z[c, j]
            for c in range(d):
                Z[c, j] -= p * V[c, i]
        r = 0.0
        for c in range(d):
            r += Z[c, j] * Z[c, j]
        r = math.sqrt(r)
        if not (r > 0.0) or not np.isfinite(r):
            return False
        logs[j] += math.log(r)
        for c in range(d):
            V[c, j] = Z[c, j] / r
    return True


@njit(cache=True, parallel=True)
def spectrum_paths(seeds, d, n_coarse, h, k0, k1, fine, coarse, status):
    """Fine (step h) and coarse (step 2h, summed noise) QR tangent flows of the SDE per path.

    fine, coarse (P, d-1): accumulated log R_jj; status[p] = 1 when a frame degenerated.
    """
    P = seeds.shape[0]
    k = d - 1
    cc = -0.5 * (d - 1) * k0
    s0 = math.sqrt(k0 * h)
    s1 = math.sqrt(k1 * h)
    for p in prange(P):
        st = rng_state(seeds[p])
        xf = np.zeros(d)
        xc = np.zeros(d)
        xf[0] = 1.0
        xc[0] = 1.0
        Vf = np.zeros((d, k))
        for j in range(k):
            Vf[j + 1, j] = 1.0
        Vc = Vf.copy()
        w = np.empty(d)
        M = np.empty((d, d))
        wc = np.empty(d)
        Mc = np.empty((d, d))
        z = np.empty(d)
        Z = np.empty((d, k))
        lf = np.zeros(k)
        lc = np.zeros(k)
        ok = True
        for s in range(n_coarse):
            wc[:] = 0.0
            Mc[:, :] = 0.0
            for half in range(2):
                for c in range(d):
                    w[c] = s0 * normal(st)
                for c in range(d):
                    for e in range(d):
                        M[c, e] = s1 * normal(st)
                for c in range(d):
                    wc[c] += w[c]
                    for e in range(d):
                        Mc[c, e] += M[c, e]
                ok = ok and _euler_qr(xf, Vf, w, M, h, cc, lf, z, Z)
            ok = ok and _euler_qr(xc, Vc, wc, Mc, 2.0 * h, cc, lc, z, Z)
            if not ok:
                status[p] = 1
                break
        fine[p, :] = lf
        coarse[p, :] = lc


def richardson_spectrum(d: int, k0: float, k1: float, horizon: float, n_coarse: int, n_paths: int,
                        seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-path rates (P, d-1): fine, coarse and Richardson ``2 fine - coarse``."""
    if not (math.isfinite(k1) and k0 >= 0 and k1 >= 0):
        raise ParameterError("k1", k1, "must be finite (phi without jumps)")
    seeds = _rng.path_seeds(seed, n_paths, SPECTRUM_STREAM)
    fine = np.zeros((n_paths, d - 1))
    coarse = np.zeros((n_paths, d - 1))
    status = np.zeros(n_paths, dtype=np.int64)
    spectrum_paths(seeds, d, n_coarse, horizon / (2 * n_coarse), k0, k1, fine, coarse, status)
    if status.any():
        raise SimulationError(f"QR tangent flow degenerated on {int(status.sum())} path(s) (d={d})")
    fine /= horizon
    coarse /= horizon
    return fine, coarse, 2.0 * fine - coarse


@lru_cache(maxsize=32)
def _estimate(act, d, sw, sb, sa, T, n_coarse, P, seed):
    # cached: a pure function of its arguments, so a mutated formula is judged on the same runs
    kf = numeric_kernel(act, sw, sb, sa)
    fine, coarse, rich = richardson_spectrum(d, kf.k0, kf.k1, T, n_coarse, P, seed)
    return kf.k0, kf.k1, rich.mean(axis=0), np.cov(rich.T).reshape(d - 1, d - 1) / P, fine.mean(axis=0), \
        coarse.mean(axis=0)


@lru_cache(maxsize=32)
def _engine_estimate(model, act, d, sw, sb, sa, L, P, width, seed):
    # cached: a pure function of its arguments, so a mutated formula is judged on the same runs
    from ..engine import lyapunov_tangent
    from ..params import ModelParams
    kf = numeric_kernel(act, sw, sb, sa)
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1, horizon=1.0)
    runs = [lyapunov_tangent(p, model=model, depth=depth, n_paths=P, seed=seed + 31 * j, n_vectors=d - 1,
                             width=width if model == "transformer" else None, progress=False).rates
            for j, depth in enumerate((L, 2 * L))]
    mean = 2 * runs[1].mean(axis=0) - runs[0].mean(axis=0)
    cov = (4 * np.cov(runs[1].T) + np.cov(runs[0].T)).reshape(d - 1, d - 1) / P
    return kf.k0, kf.k1, mean, cov, runs[1].mean(axis=0), runs[0].mean(axis=0)


def chi2_test(name, est, cov, expected, *, level, n, seed) -> CheckResult:
    """Joint test of the vector of exponents: (est - expected)^T cov^-1 (est - expected) ~ chi^2_k."""
    diff = est - expected
    stat = float(diff @ np.linalg.solve(cov, diff))
    p = float(_st.chi2.sf(stat, diff.size))
    return CheckResult(name=name, passed=bool(p >= 1 - level), estimate=stat, stderr=None, ci=None,
                       expected=float(diff.size), level=level, n=n, seed=seed, pvalue=p, statistic=stat,
                       method=f"chi-square ({diff.size} df), covariance estimated across paths")


def check(formula, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp = [], [], [], [], []
    P = int(budget["paths"])
    for c, (act, d, sw, sb, sa, T, steps) in enumerate(configs(budget, CONFIGS)):
        n_coarse = int(steps * budget["step_factor"])
        k0, k1, mean, cov, fine, coarse = _estimate(act, d, sw, sb, sa, T, n_coarse, P, seed + 7919 * c)
        lam = np.asarray(formula(d, k0, k1), dtype=float).ravel()
        if lam.size != d - 1:
            raise ParameterError("formula", lam.size, f"must give d-1 = {d - 1} exponents")
        label = f"{act} d={d} sb={sb}"
        sds = np.sqrt(np.diag(cov))
        for i in range(d - 1):
            tol = budget["rel_tol"] * abs(lam[i]) + budget["abs_tol"] * (k0 + k1)
            parts.append(agreement_test(f"{label}: lambda_{i + 1}", mean[i], sds[i], lam[i], level=level, n=P,
                                        seed=seed, abs_tol=tol,
                                        details={"fine": float(fine[i]), "coarse": float(coarse[i]),
                                                 "step_fine": T / (2 * n_coarse)}))
            labels.append(f"{label} l{i + 1}")
            est.append(float(mean[i]))
            se.append(float(sds[i]))
            exp.append(float(lam[i]))
        parts.append(chi2_test(f"{label}: all {d - 1} exponents jointly", mean, cov, lam, level=level, n=P,
                               seed=seed))
    Pe = int(budget["engine_paths"])
    n_engine = 0 if "configs" in budget else int(budget["n_engine_configs"])     # explored: the SDE only
    for c, (model, act, d, sw, sb, sa, L) in enumerate(ENGINE_CONFIGS[:n_engine]):
        k0, k1, mean, cov, fine, coarse = _engine_estimate(model, act, d, sw, sb, sa, L, Pe,
                                                           int(budget["width"]), seed + 104729 * (c + 1))
        lam = np.asarray(formula(d, k0, k1), dtype=float).ravel()
        label = f"{model} {act} d={d} sb={sb}"
        sds = np.sqrt(np.diag(cov))
        for i in range(d - 1):
            tol = budget["engine_rel_tol"] * abs(lam[i]) + budget["abs_tol"] * (k0 + k1)
            parts.append(agreement_test(f"{label}: lambda_{i + 1}", mean[i], sds[i], lam[i], level=level, n=Pe,
                                        seed=seed, abs_tol=tol,
                                        details={"depth_2L": float(fine[i]), "depth_L": float(coarse[i])}))
            labels.append(f"{label} l{i + 1}")
            est.append(float(mean[i]))
            se.append(float(sds[i]))
            exp.append(float(lam[i]))
    return [combine("Lyapunov spectrum: QR tangent flow (Richardson on shared noise) vs "
                    "((d-1-2i) k1 - (d-1) k0)/2", parts, level,
                    method=f"z-tests and chi-square tests, Bonferroni over {len(parts)}",
                    details={"figure": estimates_figure(labels, est, se, exp, r"$\lambda_i$")})]


CLAIM = Claim(
    name="lyapunov_spectrum",
    title="Lyapunov spectrum of the noise-only flow",
    statement="The Lyapunov exponents of the noise-only flow on S^{d-1} are lambda_i = ((d-1-2i) k1 - (d-1) k0)/2, "
              "i = 1..d-1: equally spaced by k1, the top one is lambda_1.",
    derivation="lyapunov_spectrum",
    formula=derived_formula,
    checker=check,
    statistic="per-path 2 rate(h) - rate(2h) of log R_ii from the QR tangent flow of the SDE on shared noise",
    level=0.999,
    tolerance="|E - lambda_i| <= 0.003 |lambda_i| + 0.002 (k0 + k1) (O(h^2) remainder); chi-square: none",
    budgets={"quick": {"n_configs": 2, "paths": 16_000, "step_factor": 1, "rel_tol": 0.003, "abs_tol": 0.002,
                       "n_engine_configs": 1, "engine_paths": 8_000, "engine_rel_tol": 0.01, "width": 64},
             "full": {"n_configs": len(CONFIGS), "paths": 50_000, "step_factor": 2, "rel_tol": 0.002,
                      "abs_tol": 0.001, "n_engine_configs": len(ENGINE_CONFIGS), "engine_paths": 40_000,
                      "engine_rel_tol": 0.01, "width": 128}},
    derived_text=lambda: f"lambda_i = {sp.sstr(spectrum())}",
    domain=DOMAIN, anchors=CONFIGS,
)
