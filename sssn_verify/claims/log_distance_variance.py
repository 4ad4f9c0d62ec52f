"""Claim `log_distance_variance`: the variance rate of the top tangent log-norm (docs/mathematics.md, section 8),

    sigma^2 = lim Var(log|V_t|)/t = k0 + k1      (sympy: tangent flow and two-point routes agree).

Checker: the engine's tangent flow (Benettin) of the Gaussian transformer, the SDE (projected
Euler) and, in full mode, the finite-width transformer, noise only.  log|V_t| has independent
stationary increments, layer by layer (isotropy, fresh noise), so the pooled sample variance of the
per-layer increments, divided by the step T/L, estimates sigma^2 (standard error ``sqrt((m4 - s^4)/n)``,
n = paths x layers).  The O(delta) time-step bias is removed by Richardson over depths L and 2L,
``2 v(2L) - v(L)`` (independent runs).  The horizon is short, T = HORIZON: the estimate depends on
delta = T/L only and its precision on P L, so a short horizon shrinks the O(delta^2) remainder for free;
the z-test against k0 + k1 from ``numeric.kernels`` allows the measured remainder REL_TOL = 0.03 %;
Bonferroni over the configurations.

More (moved from this docstring, with the measurements): docs/modules.md,
``sssn_verify.claims.log_distance_variance``.
"""
from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Callable

import numpy as np
import sympy as sp

from ..engine import lyapunov_tangent
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import agreement_test
from ..symbolic.spectrum import variance_rate_tangent
from ..strategies import HIDDEN_STACKS, NO_HIDDEN, claim_configs, hidden_stack
from ._util import combine, configs, estimates_figure
from .base import CandidateCheck, Claim, Evidence

#: the horizon T (delta = T / depth) and the allowance for the O(delta^2) remainder after Richardson (see above)
HORIZON = 0.25
REL_TOL = 0.0003

# (model, activation, d, sigma_w, sigma_b, sigma_a); quick mode runs the first `n_configs`
CONFIGS = (
    ("gaussian", "relu", 5, 1.0, 1.0, 1.0),
    ("sde", "sin:3", 4, 1.0, 0.0, 1.0),          # lambda_1 > 0
    ("gaussian", "tanh", 4, 1.2, 0.3, 1.0),
    ("transformer", "relu", 3, 1.0, 0.0, 1.0),
    ("sde", "gelu", 6, 1.0, 0.5, 1.0),
)
# where it is explored: noise per layer (k0 + k1) T / L at most the first anchor's
# (a deep block is one more kernel K of the Gaussian transformer and the SDE: they read it through k0, k1)
DOMAIN = claim_configs(model=("gaussian", "sde"), activation=("relu", "tanh", "gelu"), d=(2, 6),
                       sigma_w=(0.5, 1.0), sigma_b=(0.0, 1.0), sigma_a=(0.5, 1.0), hidden=HIDDEN_STACKS)


@lru_cache(maxsize=None)
def derived_formula() -> Callable[[float, float], float]:
    """sigma^2(k0, k1) from the sympy derivation (through the bridge)."""
    from ..bridge import function
    return function("spectrum.variance_rate", "math")


def block_variance(running: np.ndarray, blocks: int, horizon: float) -> tuple[float, float, int]:
    """(Var(increment)/(T/B), its stderr, n) from the cumulative log-growth (P, L+1)."""
    L = running.shape[1] - 1
    inc = np.diff(running[:, :: L // blocks], axis=1).ravel()
    n = inc.size
    c = inc - inc.mean()
    s2 = float(c @ c / (n - 1))
    m4 = float(np.mean(c ** 4))
    scale = blocks / horizon
    return s2 * scale, math.sqrt(max(m4 - s2 * s2, 0.0) / n) * scale, n


def estimate(model, act, d, sw, sb, sa, budget, seed, hidden: str = NO_HIDDEN):
    """Richardson-extrapolated variance rate and its stderr; the two raw levels in details.  `hidden`: a
    configuration's hidden stack (``strategies.hidden_stack``)."""
    P = int(budget["paths"] if model != "transformer" else budget["paths_transformer"])
    return _estimate(model, act, d, sw, sb, sa, float(budget["horizon"]), int(budget["depth"]), P,
                     int(budget["width"]), seed, hidden)


@lru_cache(maxsize=64)
def _estimate(model, act, d, sw, sb, sa, T, L, P, width, seed, hidden=NO_HIDDEN):
    # cached: a pure function of its arguments, so a mutated formula is judged on the same runs
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1, horizon=T,
                    hidden=hidden_stack(hidden))
    levels = []
    for j, depth in enumerate((L, 2 * L)):
        r = lyapunov_tangent(p, model=model, depth=depth, n_paths=P, seed=as_key(seed, "level", j),
                             width=width if model == "transformer" else None, progress=False)
        levels.append(block_variance(r.running, depth, T))      # every layer a block
    (v1, s1, n1), (v2, s2, n2) = levels
    return 2 * v2 - v1, math.sqrt(4 * s2 * s2 + s1 * s1), n1 + n2, {"v_L": v1, "v_2L": v2, "depth_L": L}


def check(formula, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp = [], [], [], [], []
    for i, (model, act, d, sw, sb, sa, *deep) in enumerate(configs(budget, CONFIGS)):
        hidden = deep[0] if deep else NO_HIDDEN
        kf = numeric_kernel(act, sw, sb, sa, hidden=hidden_stack(hidden))
        expected = formula(kf.k0, kf.k1)
        value, s, n, info = estimate(model, act, d, sw, sb, sa, budget, as_key(seed, "config", i), hidden=hidden)
        label = f"{model} {act} d={d} sb={sb}" + ("" if hidden == NO_HIDDEN else f" then {hidden}")
        parts.append(agreement_test(label, value, s, expected, level=level, n=n, seed=seed,
                                    rel_tol=budget["rel_tol"], details={"k0": kf.k0, "k1": kf.k1, **info}))
        labels.append(label)
        est.append(value)
        se.append(s)
        exp.append(expected)
    return [combine(r"$\sigma^2$: $\operatorname{Var}(\log|V_t|)/t$ (Richardson over $L$ and $2L$) against $k_0 + "
                    r"k_1$", parts, level,
                    method=f"z-tests, Bonferroni over {len(parts)} configurations",
                    details={"figure": estimates_figure(labels, est, se, exp, r"$\sigma^2$")})]


# ---------------------------------------------------------------- check (a user's formula for sigma^2)
# the Gaussian transformer's tangent flow at one point (the checker's estimator: per-layer variances,
# Richardson over L, 2L, the same O(delta^2) allowance); the design's points run a quarter of the paths
CANDIDATE_BUDGET = {"paths": 20_000, "paths_transformer": 0, "depth": 100, "width": 0, "horizon": HORIZON,
                    "rel_tol": REL_TOL}
DESIGN_BUDGET = {**CANDIDATE_BUDGET, "paths": 5_000}
EVIDENCE = (r"the noise-only tangent flow of the Gaussian transformer at the point (Benettin's method): the pooled "
            r"variance of the per-layer increments of $\log|V|$ per unit time, Richardson-extrapolated over the "
            r"depths $L$ and $2L$ (independent runs); a z-test with the claim's allowance of "
            f"{100 * REL_TOL:g} % for the " r"$O(\delta^2)$ remainder; "
            f"{CANDIDATE_BUDGET['paths']} paths of {CANDIDATE_BUDGET['depth']} and {2 * CANDIDATE_BUDGET['depth']} "
            "layers")


def candidate_evidence(point: dict, seed, level: float, budget: dict = CANDIDATE_BUDGET) -> Evidence:
    """sigma^2 = Var(log|V_t|)/t of the Gaussian transformer at `point` (the checker's `estimate`)."""
    value, s, n, info = estimate("gaussian", point["activation"], int(point["d"]), point["sigma_w"],
                                 point["sigma_b"], point["sigma_a"], budget, as_key(seed, "evidence"),
                                 hidden=point.get("hidden", NO_HIDDEN))
    return Evidence(value, s, n, f"tangent-flow per-layer variance of log|V|, Gaussian transformer, "
                                 f"{budget['paths']} paths, Richardson over L = {budget['depth']}, 2L",
                    rel_tol=budget["rel_tol"], details=info)


CANDIDATE = CandidateCheck(
    variables=("d", "k0", "k1", "sigma_w", "sigma_b", "sigma_a"), axes=("d", "sigma_w", "sigma_b", "sigma_a"),
    derived=lambda v: derived_formula()(v["k0"], v["k1"]), evidence=candidate_evidence,
    # the relative spread of a per-layer variance, sqrt(2 / (paths x layers)), at L and 2L: Richardson's
    # 4 x 2 / (2 P L) + 2 / (P L) = 6 / (P L)
    error_scale=lambda v, derived: abs(derived) * (CANDIDATE_BUDGET["rel_tol"] + math.sqrt(
        6.0 / (CANDIDATE_BUDGET["paths"] * CANDIDATE_BUDGET["depth"]))) + 1e-12,
    admissible=lambda pt: math.isfinite(numeric_kernel(pt["activation"], pt["sigma_w"], pt["sigma_b"], pt["sigma_a"],
                                                       hidden=hidden_stack(pt.get("hidden"))).k1),
    description=EVIDENCE, design_evidence=partial(candidate_evidence, budget=DESIGN_BUDGET))


CLAIM = Claim(
    name="log_distance_variance",
    title=r"Variance rate $\sigma^2$ of the log-distance",
    statement=r"$\log|V_t| - \lambda_1 t$ is a Brownian motion with variance rate $\sigma^2 = k_0 + k_1$ "
              r"($\operatorname{Var}(\log|V_t|)/t = \sigma^2$; the same for $\log|x_1 - x_2|$ at small "
              r"distance).",
    derivation="log_distance_variance",
    formula=derived_formula,
    checker=check,
    statistic=r"pooled variance of the per-layer increments of $\log|V|$ per unit time, Richardson-extrapolated "
              r"over $L$ and $2L$ ($T = 1/4$)",
    level=0.999,
    tolerance=r"$|E[\text{estimate}] - \sigma^2| \le 0.0003\,\sigma^2$ (remainder $O(\delta^2)$ after "
              r"Richardson at $\delta = 1/400$, measured)",
    budgets={"quick": {"n_configs": 2, "paths": 20_000, "paths_transformer": 4_000, "depth": 100,
                       "width": 64, "horizon": HORIZON, "rel_tol": REL_TOL},
             "full": {"n_configs": len(CONFIGS), "paths": 60_000, "paths_transformer": 30_000, "depth": 100,
                      "width": 128, "horizon": HORIZON, "rel_tol": REL_TOL}},
    derived_text=lambda: f"sigma^2 = {sp.sstr(variance_rate_tangent())}",
    domain=DOMAIN, anchors=tuple((*c, NO_HIDDEN) for c in CONFIGS),
    candidate=CANDIDATE,
)
