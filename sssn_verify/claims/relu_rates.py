"""Claim `relu_rates`: the explicit ReLU rates and their sign pattern (docs/mathematics.md, section 5), derived by sympy:

    lambda_1    = -(sa^2/4) (2 sw^2 + (d-1) sb^2)            < 0 always;
    lambda_edge =  (sa^2/2) (2 sw^2 - (d-3) sb^2)            < 0  iff  d > 3 and sb/sw > sqrt(2/(d-3)).

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.relu_rates``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp

from ..bridge import function
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rng import as_key
from ..numeric.layer_rates import edge_log_drift, edge_ratio, quadrature_kernel, rate_estimate, two_tokens
from ..stats import agreement_test, deterministic_check
from ..symbolic.dissipation import relu_edge_rate, relu_region
from ..symbolic.lyapunov import lambda1_relu
from ..strategies import claim_configs
from ._util import EDGE_START, all_deterministic, combine, configs
from .base import CandidateCheck, Claim, Evidence

GRID_SIGMAS = ((1.0, 0.0, 1.0), (0.7, 1.3, 1.1), (1.2, 0.5, 0.6))
GRID_D = (2, 3, 4, 7, 12)
SIGN_D = tuple(range(2, 13))
SIGN_T = (0.0, 0.45, 0.75, 0.9, 1.2, 1.6, 2.5)     # sigma_b / sigma_w, away from the thresholds
MC_LAMBDA1 = ((10, 1.0, 1.0, 0.5), (2, 1.0, 0.5, 1.0))
MC_EDGE = ((3, 1.0, 0.0, 1.0), (8, 1.0, 1.5, 1.0))
# where the explicit formulas and the sign pattern are explored: (d, sigma_w, sigma_b, sigma_a)
DOMAIN = claim_configs(d=(2, 40), sigma_w=(0.05, 3.0), sigma_b=(0.0, 3.0), sigma_a=(0.05, 3.0))


@dataclass(frozen=True)
class ReluRates:
    lambda1: Callable[[int, float, float, float], float]
    edge: Callable[[int, float, float, float], float]
    region: Callable[[int, float], bool]


@lru_cache(maxsize=None)
def derived_formula() -> ReluRates:
    d_set = relu_region()[4]
    thr_f = function("coercivity.relu_threshold", "math")

    def region(d, t):
        return bool(d_set.contains(d)) and t > thr_f(d)
    return ReluRates(function("lyapunov.lambda1_relu", "math"), function("dissipation.edge_rate_relu", "math"),
                     region)


def _kf(sw, sb, sa):
    """K by quadrature for the deterministic evidence (one homogeneity-scaled table)."""
    return quadrature_kernel("relu", sw, sb, sa)


def _k(sw, sb, sa):
    kf = _kf(sw, sb, sa)
    return kf.k0, kf.k1


def _layer_lambda1(d, sw, sb, sa):
    """(lim_{u->0} drift of log|x - y| under one exact Gaussian layer, its error): the dynamics' lambda_1."""
    return edge_log_drift(_kf(sw, sb, sa), d)


def _layer_edge(d, sw, sb, sa):
    """(lim_{rho->1} Lf/f of one exact Gaussian layer, its error) at beta = 0: the dynamics' edge rate."""
    return edge_ratio(_kf(sw, sb, sa), d, 0.0)


def check(formula: ReluRates, budget: dict, seed: int, level: float):
    checks = []
    det = []
    explored = configs(budget, ())            # (d, sigma_w, sigma_b, sigma_a) drawn from DOMAIN
    grid = explored or [(d, sw, sb, sa) for sw, sb, sa in GRID_SIGMAS for d in GRID_D]
    for d, sw, sb, sa in grid:
        l1, l1err = _layer_lambda1(d, sw, sb, sa)
        det.append(deterministic_check(f"lambda_1 d={d} ({sw},{sb},{sa})", formula.lambda1(d, sw, sb, sa),
                                       l1, tol=2 * l1err + 1e-12 * (1 + abs(l1)), error=l1err,
                                       method="log-distance drift of one exact Gaussian layer at u = 1e-14"))
        edge, err = _layer_edge(d, sw, sb, sa)
        det.append(deterministic_check(f"lambda_edge d={d} ({sw},{sb},{sa})", formula.edge(d, sw, sb, sa),
                                       edge, tol=2 * err + 1e-12 * (1 + abs(edge)), error=err,
                                       method="generator of one exact Gaussian layer at u = 1e-14"))
    checks.append(all_deterministic(r"explicit ReLU $\lambda_1$ and $\lambda_{\mathrm{edge}}$ against the exact "
                                    r"layer's log-distance "
                                    r"drift and energy generator at the edge", det,
                                    method="deterministic (layer map second differences, quadrature kernel)"))
    sign = []
    # explored points: the sign at sb/sw (sw = sa = 1 scales out), unless within 1e-9 of the threshold
    sign_points = [(sb / sw, d) for d, sw, sb, _ in explored] or [
        (t, d) for t in SIGN_T[: int(budget["n_t"])] for d in SIGN_D]
    for t, d in sign_points:
        k0, k1 = _k(1.0, t, 1.0)
        edge, err = _layer_edge(d, 1.0, t, 1.0)
        if abs(edge) <= max(4 * err, 1e-9 * (k0 + k1)):
            continue
        sign.append(deterministic_check(f"d={d} sb/sw={t}: lambda_edge < 0", float(formula.region(d, t)),
                                        float(edge < 0), tol=0.0, truth=True, method="sign of the exact layer's edge "
                                                                                     "rate"))
        l1, l1err = _layer_lambda1(d, 1.0, t, 1.0)
        if abs(l1) > 4 * l1err:
            sign.append(deterministic_check(f"d={d} sb/sw={t}: lambda_1 < 0",
                                            float(formula.lambda1(d, 1.0, t, 1.0) < 0), float(l1 < 0), tol=0.0, truth=True,
                                            method="sign of the exact layer's log-distance drift"))
    if sign:
        checks.append(all_deterministic(r"sign pattern: $\lambda_1 < 0$ always; $\lambda_{\mathrm{edge}} < 0$ if and "
                                        r"only if "
                                        r"$d > 3$ and $\sigma_b/\sigma_w > "
                                        r"\sqrt{2/(d-3)}$", sign, method="exact signs"))
    if explored:            # the Monte Carlo part runs at its anchors only
        return checks
    parts = []
    for i, (d, sw, sb, sa) in enumerate(MC_LAMBDA1):
        m, se, n = rate_estimate(two_tokens(d, EDGE_START), numeric_kernel("relu", sw, sb, sa), 0.0,
                                 int(budget["paths"]),
                                 as_key(seed, "lambda1", i), log_distance=True)
        lam = formula.lambda1(d, sw, sb, sa)
        parts.append(agreement_test(f"lambda_1 d={d} sb={sb} (drift of log|x - y|, rho0 = 1 - 1e-10)", m, se, lam,
                                    level=level, n=n, seed=seed,
                                    method="exact layers, antithetic, Richardson over the step, control variates"))
    for i, (d, sw, sb, sa) in enumerate(MC_EDGE):
        m, se, n = rate_estimate(two_tokens(d, EDGE_START), numeric_kernel("relu", sw, sb, sa), 0.0,
                                 int(budget["paths_energy"]), as_key(seed, "edge", i))
        lam = formula.edge(d, sw, sb, sa)
        parts.append(agreement_test(f"lambda_edge d={d} sb={sb} (initial rate of E f(rho_t), rho0 = 1 - 1e-10)",
                                    m, se, lam, level=level, n=n, seed=seed,
                                    method="exact layers, antithetic, Richardson over the step, control variates"))
    checks.append(combine(r"Monte Carlo: exact layers' log-distance drift ($\lambda_1$) and edge rate", parts, level,
                          method=f"z-tests, Bonferroni over {len(parts)}"))
    return checks


# ---------------------------------------------------------------- check (a user's ReLU lambda_1)
def candidate_evidence(point: dict, seed: int, level: float) -> Evidence:
    """lambda_1 of ReLU from the dynamics: the drift of log|x - y| of one exact Gaussian layer as the
    distance -> 0 (second differences of the layer map, kernel by quadrature), with its stated error."""
    value, err = _layer_lambda1(int(point["d"]), point["sigma_w"], point["sigma_b"], point["sigma_a"])
    tol = 4 * err + 1e-12 * (1 + abs(value))
    return Evidence(value, err, 1, "drift of log|x - y| of one exact Gaussian layer at u = 1e-14 (second "
                    "differences of the layer map, kernel by quadrature; independent of the derivation)",
                    tolerance=tol)


CANDIDATE = CandidateCheck(
    variables=("d", "sigma_w", "sigma_b", "sigma_a"), axes=("d", "sigma_w", "sigma_b", "sigma_a"),
    derived=lambda v: derived_formula().lambda1(v["d"], v["sigma_w"], v["sigma_b"], v["sigma_a"]),
    evidence=candidate_evidence, error_scale=lambda v, derived: 1e-8 + 1e-6 * abs(derived), activation="relu",
    description=r"$\lambda_1$ of ReLU from the dynamics: the drift of $\log|x - y|$ of one exact Gaussian layer as "
                r"the distance tends to $0$ (second differences of the layer map, the kernel by quadrature), with its "
                r"stated error")


CLAIM = Claim(
    name="relu_rates",
    title=r"ReLU: explicit rates and their sign pattern (the condition $d > 3$)",
    statement=r"ReLU: $\lambda_1 = -\frac{\sigma_a^2}{4}\left(2\sigma_w^2 + (d-1)\,\sigma_b^2\right) < 0$ for "
              r"every $d$; $\lambda_{\mathrm{edge}} = \frac{\sigma_a^2}{2}\left(2\sigma_w^2 - "
              r"(d-3)\,\sigma_b^2\right) < 0$ if and only if $d > 3$ and $\sigma_b/\sigma_w > \sqrt{2/(d-3)}$ "
              r"($d > 3$ alone does not suffice: no bias, no dissipation).",
    derivation="dissipation",
    formula=derived_formula,
    checker=check,
    statistic=r"the exact layer's log-distance drift and energy generator at the edge (deterministic); their "
              r"initial rates under exact layers (Monte Carlo)",
    level=0.999,
    tolerance=r"deterministic: twice the stated layer error ($10^{-8}$ to $10^{-7}$), exact signs; Monte Carlo:"
              r" none (Richardson)",
    budgets={"quick": {"n_t": len(SIGN_T), "paths": 200_000, "paths_energy": 400_000},
             "full": {"n_t": len(SIGN_T), "paths": 2_000_000, "paths_energy": 4_000_000}},
    derived_text=lambda: f"lambda_1 = {sp.sstr(lambda1_relu())}; lambda_edge = {sp.sstr(relu_edge_rate())}; "
                         f"region: d > 3 and sb/sw > {sp.sstr(relu_region()[3])}",
    domain=DOMAIN, anchors=tuple((d, sw, sb, sa) for sw, sb, sa in GRID_SIGMAS for d in GRID_D),
    candidate=CANDIDATE,
)
