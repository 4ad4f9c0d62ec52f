"""Claim `lyapunov`: the top Lyapunov exponent of the noise-only flow (docs/mathematics.md, section 5),

    lambda_1 = ((d-3) k1 - (d-1) k0) / 2        (sympy: tangent flow and two-point routes agree).

Checker: the engine's tangent flow (Benettin renormalisation, exact Jacobians) of the
*finite-width* transformer (ReLU, with and without bias) and of the Gaussian transformer
(more activations, including sin(3u) where lambda_1 > 0); per-path rates log|v_T|/T are
i.i.d. across paths, so the mean rate has a plain stderr; z-test against the formula
evaluated at k0, k1 from ``numeric.kernels``, with a time-step bias allowance.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable

import sympy as sp

from ..bridge import function
from ..engine import lyapunov_tangent
from ..numeric.kernels import kernel as numeric_kernel
from ..params import ModelParams
from ..stats import agreement_test
from ..symbolic.lyapunov import lambda1_tangent
from ..strategies import claim_configs
from ._util import combine, configs, estimates_figure, mc_error_scale
from .base import CandidateCheck, Claim, Evidence

# (model, activation, d, sigma_w, sigma_b, sigma_a); quick mode runs the first `n_configs`
CONFIGS = (
    ("transformer", "relu", 3, 1.0, 0.0, 1.0),
    ("transformer", "relu", 5, 1.0, 1.0, 1.0),
    ("gaussian", "relu", 8, 1.0, 0.5, 1.0),
    ("gaussian", "tanh", 4, 1.2, 0.3, 1.0),
    ("gaussian", "gelu", 6, 1.0, 0.5, 1.0),
    ("gaussian", "sin:3", 4, 1.0, 0.0, 1.0),      # lambda_1 > 0
    ("gaussian", "sin:3", 3, 1.0, 0.0, 1.0),      # lambda_1 < 0 for the same activation
    ("transformer", "tanh", 4, 1.2, 0.3, 1.0),
    ("transformer", "sin:3", 4, 1.0, 0.0, 1.0),
)

# where the claim is explored: the Gaussian transformer, moderate noise per layer (the
# time-step bias stays inside the stated allowance), lambda_1 of either sign
DOMAIN = claim_configs(model=("gaussian",), activation=("relu", "tanh", "gelu", "erf", "sin:3"),
                       d=(2, 6), sigma_w=(0.5, 1.25), sigma_b=(0.0, 1.0), sigma_a=(0.5, 1.25))


@lru_cache(maxsize=None)
def derived_formula() -> Callable[[float, float, float], float]:
    """lambda_1(d, k0, k1) from the sympy derivation (through the bridge)."""
    return function("lyapunov.lambda1", "math")


def estimate(model: str, act: str, d: int, sw: float, sb: float, sa: float, budget: dict, seed: int):
    """(rate, stderr, n_paths) of the tangent flow, noise only (V = 0).

    The depth grows with the noise per layer, (k0 + k1) T / L <= budget["step_noise"]: the
    O(T/L) time-step bias of the rate scales with it (sin(3u), d = 2 at L = 100: -2.70 vs -2.50).
    """
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1,
                    horizon=float(budget["horizon"]))
    kf = numeric_kernel(act, sw, sb, sa)
    depth = max(int(budget["depth"]), math.ceil(p.horizon * (kf.k0 + kf.k1) / budget["step_noise"]))
    r = lyapunov_tangent(p, model=model, depth=depth,
                         width=int(budget["width"]) if model == "transformer" else None,
                         n_paths=int(budget["paths"] if model == "gaussian" else budget["paths_transformer"]),
                         seed=seed, progress=False)
    return r.rate, r.stderr, r.n_paths


def check(formula, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp = [], [], [], [], []
    for i, (model, act, d, sw, sb, sa) in enumerate(configs(budget, CONFIGS)):
        kf = numeric_kernel(act, sw, sb, sa)
        lam = formula(d, kf.k0, kf.k1)
        rate, s, n = estimate(model, act, d, sw, sb, sa, budget, seed + 7919 * i)
        tol = budget["rel_tol"] * abs(lam) + budget["abs_tol"] * (kf.k0 + kf.k1)
        label = f"{model} {act} d={d} sb={sb}"
        parts.append(agreement_test(label, rate, s, lam, level=level, n=n, seed=seed, abs_tol=tol,
                                    details={"k0": kf.k0, "k1": kf.k1}))
        labels.append(label)
        est.append(rate)
        se.append(s)
        exp.append(lam)
    return [combine("lambda_1: tangent-flow rate vs ((d-3) k1 - (d-1) k0)/2", parts, level,
                    method=f"z-tests, Bonferroni over {len(parts)} configurations",
                    details={"figure": estimates_figure(labels, est, se, exp, r"$\lambda_1$")})]


# ---------------------------------------------------------------- check (a user's formula for lambda_1)
CANDIDATE_BUDGET = {"paths": 4000, "depth": 400, "max_depth": 8000, "step_noise": 0.005, "horizon": 2.0,
                    "rel_tol": 0.03}


def candidate_evidence(point: dict, seed: int, level: float, budget: dict = CANDIDATE_BUDGET) -> Evidence:
    """Mean tangent-flow rate of the Gaussian transformer (noise only) at `point`, with its stderr."""
    kf = numeric_kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"])
    T = budget["horizon"]
    # keep the noise per layer, k0 d T / L, small: the time-step bias is O(k0 d T / L)
    depth = int(min(budget["max_depth"], max(budget["depth"], math.ceil(T * kf.k0 * point["d"] / budget["step_noise"]))))
    p = ModelParams(d=int(point["d"]), activation=point["activation"], sigma_w=point["sigma_w"],
                    sigma_b=point["sigma_b"], sigma_a=point["sigma_a"], V=0.0, n_tokens=1, horizon=T)
    res = lyapunov_tangent(p, model="gaussian", depth=depth, n_paths=budget["paths"], seed=seed, progress=False)
    return Evidence(float(res.rate), float(res.stderr), int(res.n_paths),
                    f"tangent flow of the Gaussian transformer, {budget['paths']} paths, depth {depth}, T = {T}",
                    rel_tol=budget["rel_tol"], details={"depth": depth})


CANDIDATE = CandidateCheck(
    variables=("d", "k0", "k1", "sigma_w", "sigma_b", "sigma_a"), axes=("d", "sigma_w", "sigma_b", "sigma_a"),
    derived=lambda v: derived_formula()(v["d"], v["k0"], v["k1"]), evidence=candidate_evidence,
    error_scale=mc_error_scale,
    admissible=lambda pt: math.isfinite(numeric_kernel(pt["activation"], pt["sigma_w"], pt["sigma_b"],
                                                       pt["sigma_a"]).k1),
    aliases=("lambda1",))


CLAIM = Claim(
    name="lyapunov",
    title="Top Lyapunov exponent lambda_1 of the noise-only flow",
    statement="lambda_1 = lim (1/t) log|V_t| = ((d-3) k1 - (d-1) k0)/2 for the linearized noise-only flow "
              "(finite-width transformer, Gaussian transformer and SDE alike as the depth grows).",
    derivation="lyapunov",
    formula=derived_formula,
    checker=check,
    statistic="mean over paths of log|v_T|/T from the tangent flow (Benettin), i.i.d. across paths",
    level=0.999,
    tolerance="|E rate - lambda_1| <= 0.03 |lambda_1| + 0.005 (k0 + k1) (O(T/L) time-step bias)",
    budgets={"quick": {"n_configs": 7, "paths": 20_000, "paths_transformer": 8_000, "depth": 100,
                       "width": 64, "horizon": 1.0, "rel_tol": 0.03, "abs_tol": 0.005, "step_noise": 0.01},
             "full": {"n_configs": len(CONFIGS), "paths": 200_000, "paths_transformer": 50_000,
                      "depth": 200, "width": 128, "horizon": 1.0, "rel_tol": 0.02, "abs_tol": 0.003,
                      "step_noise": 0.005}},
    derived_text=lambda: f"lambda_1 = {sp.sstr(lambda1_tangent())}",
    domain=DOMAIN, anchors=CONFIGS,
    candidate=CANDIDATE,
)
