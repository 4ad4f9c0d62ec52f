"""Claim `lyapunov_spectrum`: all d-1 Lyapunov exponents of the noise-only flow (docs/mathematics.md, section 8),

    lambda_i = ((d - 1 - 2i) k1 - (d-1) k0) / 2,  i = 1..d-1     (sympy: k-volume growth rates).

Checker: one exactly sampled layer of a field model (``numeric.experiments.tangent_layer`` with QR,
k = d-1 tangent vectors; the Gaussian transformer and the SDE's Euler step by default, any model of
``MODELS_APPLY`` through ``budget["models"]``).  The law is rotation invariant and fresh every layer,
so the per-layer log R_ii of the Benettin QR are i.i.d. and their mean over h is the exponent at step
h; the mean-zero linear term is subtracted and Richardson ``2 Y(h) - Y(2h)`` on shared normals
leaves O(h^2).  Each exponent is z-tested against the formula at the model's k0, k1 (statistical
only), the vector of all exponents by a chi-square test with the covariance across paths (the
estimates are correlated through the common radial noise); Bonferroni over everything.  The
engine's k-vector tangent flow over a horizon is a consistency check (``ENGINE_CONFIGS``).
"""
from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Callable

import numpy as np
import sympy as sp
from scipy import stats as _st

from ..errors import ParameterError
from ..numeric.experiments import model_constants, models_where, tangent_layer
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import CheckResult, agreement_test
from ..symbolic.spectrum import spectrum
from ..strategies import HIDDEN_STACKS, NO_HIDDEN, claim_configs, hidden_stack
from ._util import combine, configs, estimates_figure
from .base import CandidateCheck, Claim, Evidence

# (activation, d, sigma_w, sigma_b, sigma_a); quick mode runs the first `n_configs`
CONFIGS = (
    ("relu", 5, 1.0, 1.0, 1.0),
    ("sin:3", 4, 1.0, 0.0, 1.0),    # lambda = (1.5, -3, -7.5): lambda_1 > 0
    ("tanh", 6, 1.2, 0.3, 1.0),
    ("relu", 8, 0.7, 1.3, 0.5),
    ("gelu", 3, 1.5, 0.5, 1.0),
)
STEP_NOISE = 0.01          # d (k0 + k1) h: the noise of one layer (Richardson leaves O(h^2))
# the models the statement applies to: those whose noise is the Gaussian field of a kernel K
MODELS_APPLY = {"field": True}
# (a deep block is one more kernel K: the one-layer check reads it through k0, k1)
DOMAIN = claim_configs(activation=("relu", "tanh", "gelu"), d=(2, 6), sigma_w=(0.5, 1.25), sigma_b=(0.0, 1.0),
                       sigma_a=(0.5, 0.8), hidden=HIDDEN_STACKS)

# the engine's k-vector tangent flow (QR after every layer) of the Gaussian and the finite-width
# transformer: (model, activation, d, sigma_w, sigma_b, sigma_a, depth L); Richardson over L, 2L
# on independent runs (the engine has no shared-noise refinement for tangent flows), so these
# checks carry sqrt(5) times the statistical error of independent runs.  Quick mode runs the first
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


def one_layer_spectrum(model: str, act, d: int, sw: float, sb: float, sa: float, n_paths: int, key,
                       step_noise: float = STEP_NOISE, hidden: str = NO_HIDDEN):
    """(k0, k1, Moments) of one layer of `model` with QR on d-1 tangent vectors, Richardson over 2h, h
    (`hidden`: a configuration's hidden stack, ``strategies.hidden_stack``)."""
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1,
                    hidden=hidden_stack(hidden))
    c = model_constants(model, p)
    if not (math.isfinite(c.k1) and c.k0 >= 0 and c.k1 >= 0):
        raise ParameterError("k1", c.k1, "must be finite (phi without jumps)")
    h = step_noise / (d * (c.k0 + c.k1))
    return c.k0, c.k1, tangent_layer(model, p, 2.0 * h, n_paths, key, n_vectors=d - 1, qr=True)


@lru_cache(maxsize=32)
def _estimate(model, act, d, sw, sb, sa, P, seed, c, hidden=NO_HIDDEN):
    # cached: a pure function of its arguments, so a mutated formula is judged on the same runs
    k0, k1, r = one_layer_spectrum(model, act, d, sw, sb, sa, P, as_key(seed, model, c), hidden=hidden)
    names = [f"lam_{i + 1}" for i in range(d - 1)]
    pick = lambda lv: np.array([r.mean[f"{n}@{lv}"] for n in names])  # noqa: E731
    return k0, k1, np.array([r.mean[n] for n in names]), r.cov[:d - 1, :d - 1] / r.n, pick(1), pick(0), r.hs[1]


@lru_cache(maxsize=32)
def _engine_estimate(model, act, d, sw, sb, sa, L, P, width, seed):
    # cached: a pure function of its arguments, so a mutated formula is judged on the same runs
    from ..engine import lyapunov_tangent
    from ..params import ModelParams
    kf = numeric_kernel(act, sw, sb, sa)
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1, horizon=1.0)
    runs = [lyapunov_tangent(p, model=model, depth=depth, n_paths=P, seed=as_key(seed, "level", j), n_vectors=d - 1,
                             width=width if model == "transformer" else None, progress=False).rates
            for j, depth in enumerate((L, 2 * L))]
    mean = 2 * runs[1].mean(axis=0) - runs[0].mean(axis=0)
    cov = (4 * np.cov(runs[1].T) + np.cov(runs[0].T)).reshape(d - 1, d - 1) / P
    return kf.k0, kf.k1, mean, cov, runs[1].mean(axis=0), runs[0].mean(axis=0)


def chi2_test(name, est, cov, expected, *, level, n, seed, covers=()) -> CheckResult:
    """Joint test of the vector of exponents: (est - expected)^T cov^-1 (est - expected) ~ chi^2_k.  `covers`
    names the z-tests of the coordinates: ``details["joint"]`` lets ``_util.combine`` state their power with the
    joint test's (it sees one exponent's error against its conditional variance, about half the marginal one)."""
    diff = est - expected
    stat = float(diff @ np.linalg.solve(cov, diff))
    p = float(_st.chi2.sf(stat, diff.size))
    details = {}
    if covers:
        details["joint"] = {"covers": list(covers), "precision": np.diag(np.linalg.inv(cov)).tolist(),
                            "df": int(diff.size)}
    return CheckResult(name=name, passed=bool(p >= 1 - level), estimate=stat, stderr=None, ci=None,
                       expected=float(diff.size), level=level, n=n, seed=seed, pvalue=p, statistic=stat,
                       method=f"chi-square ({diff.size} df), covariance estimated across paths", details=details)


def check(formula, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp = [], [], [], [], []
    P = int(budget["paths"])
    for c, (act, d, sw, sb, sa, *deep) in enumerate(configs(budget, CONFIGS)):
        hidden = deep[0] if deep else NO_HIDDEN
        for model in budget["models"]:
            k0, k1, mean, cov, fine, coarse, h = _estimate(model, act, d, sw, sb, sa, P, seed, c, hidden)
            lam = np.asarray(formula(d, k0, k1), dtype=float).ravel()
            if lam.size != d - 1:
                raise ParameterError("formula", lam.size, f"must give d-1 = {d - 1} exponents")
            label = f"{model} {act} d={d} sb={sb}" + ("" if hidden == NO_HIDDEN else f" then {hidden}")
            sds = np.sqrt(np.diag(cov))
            for i in range(d - 1):
                parts.append(agreement_test(f"{label}: lambda_{i + 1}", mean[i], sds[i], lam[i], level=level, n=P,
                                            seed=seed, details={"h": float(h), "raw_h": float(fine[i]),
                                                                "raw_2h": float(coarse[i]), "k0": k0, "k1": k1}))
                labels.append(f"{label} l{i + 1}")
                est.append(float(mean[i]))
                se.append(float(sds[i]))
                exp.append(float(lam[i]))
            parts.append(chi2_test(f"{label}: all {d - 1} exponents jointly", mean, cov, lam, level=level, n=P,
                                   seed=seed, covers=[f"{label}: lambda_{i + 1}" for i in range(d - 1)]))
    Pe = int(budget["engine_paths"])
    n_engine = 0 if "configs" in budget else int(budget["n_engine_configs"])     # explored: one layer only
    for c, (model, act, d, sw, sb, sa, L) in enumerate(ENGINE_CONFIGS[:n_engine]):
        k0, k1, mean, cov, fine, coarse = _engine_estimate(model, act, d, sw, sb, sa, L, Pe,
                                                           int(budget["width"]), as_key(seed, "engine", c))
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
    return [combine(r"Lyapunov spectrum: one exactly sampled layer, QR (Richardson on shared normals) against "
                    r"$\lambda_i = \frac{(d-1-2i)\,k_1 - (d-1)\,k_0}{2}$", parts, level,
                    method=f"z-tests and chi-square tests, Bonferroni over {len(parts)}",
                    details={"figure": estimates_figure(labels, est, se, exp, r"$\lambda_i$")})]


# ---------------------------------------------------------------- check (a user's formula for lambda_i)
# one exactly sampled Gaussian-transformer layer with QR on d-1 tangent vectors at the point (the
# checker's estimator); the candidate is judged at its index i by a z-test (statistical only)
CANDIDATE_PATHS = 400_000
DESIGN_PATHS = 100_000
EVIDENCE = (r"one exactly sampled noise-only layer of the Gaussian transformer with the QR decomposition of $d-1$ "
            r"tangent vectors: per path $(\log R_{ii} - \text{linear term})/h$, Richardson-extrapolated over the "
            r"steps $h$ and $2h$ on shared normals (no allowance for a bias), " f"{CANDIDATE_PATHS} paths; "
            r"the exponent $\lambda_i$ of index $1 \le i \le d-1$ z-tested")


def candidate_evidence(point: dict, seed, level: float, paths: int = CANDIDATE_PATHS) -> Evidence:
    """lambda_i of the Gaussian transformer at `point` from one exactly sampled layer with QR."""
    d, i = int(point["d"]), int(point["i"])
    k0, k1, mean, cov, fine, coarse, h = _estimate("gaussian", point["activation"], d, point["sigma_w"],
                                                   point["sigma_b"], point["sigma_a"], int(paths),
                                                   as_key(seed, "evidence"), 0, point.get("hidden", NO_HIDDEN))
    return Evidence(float(mean[i - 1]), float(math.sqrt(cov[i - 1, i - 1])), int(paths),
                    f"one exactly sampled Gaussian layer, QR of {d - 1} tangent vectors, {paths} paths, "
                    f"Richardson h = {h:.3g}, 2h", details={"h": float(h), "raw_h": float(fine[i - 1]),
                                                          "raw_2h": float(coarse[i - 1]), "index": i})


def _candidate_admissible(pt: dict) -> bool:
    return (1 <= int(pt["i"]) <= int(pt["d"]) - 1
            and math.isfinite(numeric_kernel(pt["activation"], pt["sigma_w"], pt["sigma_b"], pt["sigma_a"],
                                             hidden=hidden_stack(pt.get("hidden"))).k1))


def _derived_lambda_i(v: dict) -> float:
    d, i = int(v["d"]), int(v["i"])
    return float(derived_formula()(d, v["k0"], v["k1"])[i - 1])


CANDIDATE = CandidateCheck(
    variables=("d", "i", "k0", "k1", "sigma_w", "sigma_b", "sigma_a"), axes=("d", "i", "sigma_w", "sigma_b", "sigma_a"),
    derived=_derived_lambda_i, evidence=candidate_evidence,
    # a rough per-path spread ~ sqrt(d) (k0 + k1) over the paths (only steers the search)
    error_scale=lambda v, derived: math.sqrt(v["d"]) * (v["k0"] + v["k1"]) / math.sqrt(CANDIDATE_PATHS) + 1e-12,
    admissible=_candidate_admissible, domain={"i": (1, 5)}, description=EVIDENCE,
    design_evidence=partial(candidate_evidence, paths=DESIGN_PATHS))


CLAIM = Claim(
    name="lyapunov_spectrum",
    title="Lyapunov spectrum of the noise-only flow",
    statement=r"The Lyapunov exponents of the noise-only flow on $S^{d-1}$ are $\lambda_i = \frac{(d-1-2i)\,k_1 "
              r"- (d-1)\,k_0}{2}$ for $i = 1, \dots, d-1$: equally spaced by $k_1$, the top one is $\lambda_1$.",
    derivation="lyapunov_spectrum",
    formula=derived_formula,
    checker=check,
    statistic=r"one exactly sampled layer: per-path $(\log R_{ii} - \text{linear term})/h$ of the QR "
              r"decomposition of $d-1$ tangent vectors, Richardson over $h$ and $2h$ on shared normals, "
              r"independent across paths; engine: the QR tangent flow over a horizon",
    level=0.999,
    tolerance=r"one layer: none (statistical only; Richardson leaves $O(h^2)$); engine: $|E - \lambda_i| \le "
              r"0.01\,|\lambda_i| + 0.002\,(k_0 + k_1)$ (time-step bias $O(T/L)$)",
    budgets={"quick": {"n_configs": 2, "paths": 200_000, "models": ("gaussian", "sde"), "abs_tol": 0.002,
                       "n_engine_configs": 1, "engine_paths": 8_000, "engine_rel_tol": 0.01, "width": 64},
             "full": {"n_configs": len(CONFIGS), "paths": 1_000_000, "models": ("gaussian", "sde"),
                      "abs_tol": 0.001, "n_engine_configs": len(ENGINE_CONFIGS), "engine_paths": 40_000,
                      "engine_rel_tol": 0.01, "width": 128}},
    derived_text=lambda: f"lambda_i = {sp.sstr(spectrum())}",
    domain=DOMAIN, anchors=tuple((*c, NO_HIDDEN) for c in CONFIGS),
    candidate=CANDIDATE,
)
