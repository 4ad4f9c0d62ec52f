"""Claim `ito_drift`: the radial projection creates the Itô drift (docs/mathematics.md, section 3)

    c(x) = -Sigma x - tr(Sigma)/2 x + (3/2)(x^T Sigma x) x,   Sigma = k0 I:  c(x) = -(d-1) k0/2 x.

Checkers (both Richardson-extrapolated over (delta, 2 delta) on common random numbers,
which removes the O(delta) bias of the one-step mean):

* isotropic, with the real noise: one layer of the finite-width transformer (engine,
  attention off, width m, horizon delta) from x = e1; statistic ``(<x', x> - 1)/delta``,
  whose linear term vanishes identically, so its variance is O(1); z-test against gamma(d, k0)
  with k0 from ``numeric.kernels``;
* general Sigma: Gaussian g ~ N(0, Sigma) with a random SPD Sigma at a random x;
  statistic ``(Pi(x + sqrt(delta) g) - x - sqrt(delta) P_x g)/delta`` (the mean-zero
  linear term subtracted), every coordinate z-tested against c(x), Bonferroni over them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp

from ..bridge import function
from ..engine import simulate_transformer
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rng import generator, uniform_sphere
from ..params import ModelParams, check_int, check_real
from ..stats import agreement_test, mean_ci
from ..symbolic.ito import general_drift, isotropic_drift_coefficient
from ..strategies import claim_configs
from ._util import combine, configs, estimates_figure, mc_error_scale
from .base import CandidateCheck, Claim, Evidence

# (activation, d, sigma_w, sigma_b, sigma_a) for the isotropic check; quick mode uses the ReLU
# ones only (each activation costs one numba compilation of the engine)
CONFIGS = (
    ("relu", 3, 1.0, 0.0, 1.0),
    ("relu", 6, 1.0, 1.0, 1.0),
    ("tanh", 4, 1.2, 0.3, 1.0),
)
# where it is explored (the step adapts to the noise per step k0 d delta, as the O(delta^2)
# remainder grows with it); the drift depends on phi only through k0, and each activation
# costs one numba compilation of the engine, so ReLU with every sigma
DOMAIN = claim_configs(activation=("relu",), d=(2, 10), sigma_w=(0.3, 1.5), sigma_b=(0.0, 1.5),
                       sigma_a=(0.3, 1.5))


@dataclass(frozen=True)
class ItoFormula:
    """gamma(d, k0) of the isotropic drift, and c(x, Sigma) for a general covariance."""

    coefficient: Callable[[float, float], float]
    general: Callable[[np.ndarray, np.ndarray], np.ndarray]


@lru_cache(maxsize=None)
def derived_coefficient() -> Callable[[float, float], float]:
    """gamma(d, k0) from the sympy derivation (through the bridge)."""
    return function("ito_drift.gamma", "math")


@lru_cache(maxsize=None)
def _general_parts():
    """c(x) = c_x(x^T Sigma x, tr Sigma) x + c_Sx(...) Sigma x, through the bridge."""
    return function("ito_drift.general_x", "math"), function("ito_drift.general_sigma_x", "math")


def _derived_general(x: np.ndarray, Sigma: np.ndarray) -> np.ndarray:
    fx, fsx = _general_parts()
    q, t = float(x @ Sigma @ x), float(np.trace(Sigma))
    return fx(q, t) * x + fsx(q, t) * (Sigma @ x)


def derived_formula() -> ItoFormula:
    return ItoFormula(derived_coefficient(), _derived_general)


def one_step_coefficient(params: ModelParams, *, seed: int, n_paths: int, delta: float, width: int):
    """Monte Carlo gamma: Richardson (2 Y(delta) - Y(2 delta)) of Y = (<x', e1> - 1)/delta over
    one noise-only layer of the width-`width` transformer; same seed = same weights for both steps.

    Returns (estimate, stderr, n_paths, info).
    """
    n_paths = check_int("n_paths", n_paths, 2)
    delta = check_real("delta", delta, 0.0, strict=True, maximum=0.25)
    p = params.with_(V=0.0, n_tokens=1)
    x0 = np.zeros((1, p.d))
    x0[0, 0] = 1.0
    ys = []
    for h in (delta, 2 * delta):
        res = simulate_transformer(p.with_(horizon=h), depth=1, width=width, n_paths=n_paths, seed=seed,
                                   init=x0, progress=False)
        ys.append((res.tokens[:, 0, 0] - 1.0) / h)
    y = 2 * ys[0] - ys[1]
    est = mean_ci(y)
    return est.mean, est.stderr, n_paths, {"raw_delta": float(ys[0].mean()), "raw_2delta": float(ys[1].mean())}


def _general_sigma_check(formula: ItoFormula, d: int, n: int, delta: float, seed: int, level: float,
                         tol: float):
    rng = generator(seed, stream=31)
    A = rng.standard_normal((d, d))
    Sigma = A @ A.T / d + 0.2 * np.eye(d)
    x = uniform_sphere(rng, (), d)
    g = rng.standard_normal((n, d)) @ np.linalg.cholesky(Sigma).T
    lin = g - np.outer(g @ x, x)                         # P_x g

    def stat(h):
        z = x + np.sqrt(h) * g
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        return (z - x - np.sqrt(h) * lin) / h

    y = 2 * stat(delta) - stat(2 * delta)
    expected = formula.general(x, Sigma)
    parts = [agreement_test(f"c_{i}(x)", y[:, i].mean(), y[:, i].std(ddof=1) / np.sqrt(n), expected[i],
                            level=level, n=n, seed=seed, abs_tol=tol * float(np.trace(Sigma)))
             for i in range(d)]
    return combine(f"general Sigma (d={d}, random SPD): every coordinate of c(x)", parts, level,
                   method=f"Gaussian one-step moments, control variate, Richardson, z-tests (Bonferroni over {d})")


def check(formula: ItoFormula, budget: dict, seed: int, level: float):
    checks, parts = [], []
    labels, est, se, exp = [], [], [], []
    for act, d, sw, sb, sa in configs(budget, CONFIGS):
        k0 = numeric_kernel(act, sw, sb, sa).k0
        p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa)
        delta = min(budget["delta"], float(budget.get("noise_per_step", 1.0)) / (k0 * d))
        m, s, n, info = one_step_coefficient(p, seed=seed, n_paths=budget["paths"], delta=delta,
                                             width=budget["width"])
        expected = formula.coefficient(d, k0)
        parts.append(agreement_test(f"gamma {act} d={d}", m, s, expected, level=level, n=n, seed=seed,
                                    abs_tol=budget["abs_tol"] * k0, details=info))
        labels.append(f"{act} d={d}")
        est.append(m)
        se.append(s)
        exp.append(expected)
    checks.append(combine(f"isotropic coefficient gamma(d, k0), width-{budget['width']} transformer layer",
                          parts, level, method=f"engine one-step moments, Richardson, z-tests "
                                               f"(Bonferroni over {len(parts)})",
                          details={"figure": estimates_figure(labels, est, se, exp, r"$\gamma$ in $c(x) = \gamma x$")}))
    checks.append(_general_sigma_check(formula, int(budget["general_d"]), int(budget["general_samples"]),
                                       budget["delta"], seed, level, budget["abs_tol"]))
    return checks


# ---------------------------------------------------------------- check (a user's formula for gamma)
CANDIDATE_BUDGET = {"paths": 40000, "delta": 0.01, "delta_scale": 0.02, "width": 64, "rel_tol": 0.02}


def candidate_evidence(point: dict, seed: int, level: float, budget: dict = CANDIDATE_BUDGET) -> Evidence:
    """gamma from one-step Monte Carlo moments of the finite-width layer map (Richardson in delta)."""
    kf = numeric_kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"])
    # the O(delta^2) remainder grows with the noise per step k0 d delta: keep that small
    delta = min(budget["delta"], budget["delta_scale"] / (kf.k0 * point["d"]))
    p = ModelParams(d=int(point["d"]), activation=point["activation"], sigma_w=point["sigma_w"],
                    sigma_b=point["sigma_b"], sigma_a=point["sigma_a"])
    est, se, n, info = one_step_coefficient(p, seed=seed, n_paths=budget["paths"], delta=delta,
                                            width=budget["width"])
    return Evidence(est, se, n, f"one-step Monte Carlo moments of the width-{budget['width']} layer map, "
                    f"Richardson in delta = {delta:.3g}", rel_tol=budget["rel_tol"], details={**info, "delta": delta})


CANDIDATE = CandidateCheck(
    variables=("d", "k0", "sigma_w", "sigma_b", "sigma_a"), axes=("d", "sigma_w", "sigma_b", "sigma_a"),
    derived=lambda v: derived_coefficient()(v["d"], v["k0"]), evidence=candidate_evidence,
    error_scale=mc_error_scale)


CLAIM = Claim(
    name="ito_drift",
    title="Ito drift of the radial projection",
    statement="Pi(x + delta a + sqrt(delta) g) = x + sqrt(delta) P_x g + delta (P_x a + c(x)) + o(delta) in mean, "
              "c(x) = -Sigma x - tr(Sigma)/2 x + (3/2)(x^T Sigma x) x; for Sigma = k0 I: c(x) = -(d-1) k0/2 x.",
    derivation="ito_drift",
    formula=derived_formula,
    checker=check,
    statistic="one-step mean displacement / delta, Richardson-extrapolated (engine layer; Gaussian for general Sigma)",
    level=0.999,
    tolerance="|E - formula| <= 0.01 k0 (isotropic) or 0.01 tr(Sigma) (general): O(delta^2) remainder",
    budgets={"quick": {"paths": 40_000, "delta": 0.005, "width": 64, "abs_tol": 0.01, "n_configs": 2,
                       "noise_per_step": 0.03,
                       "general_d": 4, "general_samples": 100_000},
             "full": {"paths": 1_000_000, "delta": 0.002, "width": 256, "abs_tol": 0.005, "noise_per_step": 0.012,
                      "general_d": 5, "general_samples": 2_000_000}},
    derived_text=lambda: f"gamma = {sp.sstr(isotropic_drift_coefficient())}; "
                         f"c = {sp.sstr(general_drift())}",
    domain=DOMAIN, anchors=CONFIGS,
    candidate=CANDIDATE,
)
