"""Claim `coercivity`: which activations dissipate (lambda_bar < 0), as Gaussian moments (docs/mathematics.md, section 5).

Derived (sympy, ``derive("coercivity")``): lambda_bar < 0 iff
  * edge:     (d-1) sw^2 E[phi'(U)^2] < (d-3) E[phi(U)^2],   U ~ N(0, sw^2 + sb^2), and
  * interior: N(rho) = b(rho) + beta a(rho)/2 > 0 on [-1, 1)  (in K(rho), k0, d, beta).

Checkers:

* deterministic: the characterization, evaluated with the moments M0 = k0/sa^2,
  M1 = k1/(sa^2 sw^2) and K(rho) of ``numeric.kernels``, against the sign of the numerical
  supremum ``numeric.rates.lambda_bar`` over a grid of activations, d, (sw, sb) and beta
  (points with |lambda_bar| < 1e-6, on the boundary, are skipped);
* Monte Carlo (engine, Gaussian transformer): tokens started near synchronization; the mean
  energy must decay when the edge condition holds and grow when it fails (one-sided z-tests
  on E_0(t) - E_0(0) whose null is the predicted direction), Bonferroni.
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
from ..numeric.rates import lambda_bar, ratio
from ..stats import agreement_test, deterministic_check
from ..symbolic.dissipation import coercivity as coercivity_derivation
from ..strategies import claim_configs
from ._util import all_deterministic, combine, configs
from .base import Claim
from .dissipation import energy_paths

ACTIVATIONS = ("relu", "tanh", "sin:1", "gelu", "erf", "leaky_relu:0.1", "softplus", "silu")
SIGMAS = ((1.0, 1.5), (1.0, 1.0), (1.0, 0.0), (0.6, 1.2))
DIMS = (3, 4, 5, 8, 12)
BETAS = (0.0, 1.0)
RHO_GRID = np.concatenate([np.linspace(-1.0, 0.99, 400), 1.0 - np.geomspace(1e-2, 1e-6, 60)])
# relu d=4 sb=1: d > 3 but sb/sw below sqrt(2/(d-3)): the edge condition fails, the energy grows
MC = (("relu", 8, 1.0, 1.5), ("relu", 4, 1.0, 1.0), ("relu", 8, 1.0, 0.0), ("sin:1", 4, 1.0, 0.0),
      ("tanh", 12, 1.0, 1.0))
# where the characterization is explored: (activation, d, sigma_w, sigma_b, beta), sigma_a = 1
DOMAIN = claim_configs(activation=ACTIVATIONS, d=(2, 16), sigma_w=(0.2, 2.0), sigma_b=(0.0, 2.0), beta=(0.0, 4.0))


@dataclass(frozen=True)
class Characterization:
    edge: Callable[[int, float, float, float], bool]              # (d, sw, M0, M1)
    interior: Callable[[int, float, np.ndarray, float, np.ndarray], np.ndarray]   # N(rho) > 0


@lru_cache(maxsize=None)
def derived_formula() -> Characterization:
    edge_f = function("coercivity.edge_moments", "math")
    N_f = function("dissipation.generator_factor", "numpy")
    return Characterization(lambda d, sw, m0, m1: edge_f(d, sw, m0, m1) < 0,
                            lambda d, b, r, k0, K: np.asarray(N_f(d, b, r, k0, K)) > 0)


def predicted(formula: Characterization, act, d, sw, sb, sa, beta) -> tuple[bool, bool]:
    """(edge condition, full characterization) at one parameter point, from kernel numerics."""
    kf = numeric_kernel(act, sw, sb, sa)
    m0 = kf.k0 / (sa * sa)
    m1 = kf.k1 / (sa * sa * sw * sw) if sw > 0 else 0.0
    edge = bool(formula.edge(d, sw, m0, m1)) if math.isfinite(m1) else False
    K = np.asarray(kf.value(RHO_GRID[RHO_GRID < 1.0]), dtype=float)
    interior = bool(np.all(formula.interior(d, beta, RHO_GRID[RHO_GRID < 1.0], kf.k0, K)))
    return edge, edge and interior


def check(formula: Characterization, budget: dict, seed: int, level: float):
    det = []
    grid = [(act, d, sw, sb, beta) for act in ACTIVATIONS[: int(budget["n_activations"])]
            for sw, sb in SIGMAS[: int(budget["n_sigmas"])] for d in DIMS for beta in BETAS]
    for act, d, sw, sb, beta in configs(budget, grid):
        lb, _ = lambda_bar(act, d, sw, sb, 1.0, beta)
        if not math.isfinite(lb) or abs(lb) < 1e-6:
            continue
        edge, full = predicted(formula, act, d, sw, sb, 1.0, beta)
        det.append(deterministic_check(f"{act} d={d} sw={sw} sb={sb} beta={beta}", float(full),
                                       float(lb < 0), tol=0.0,
                                       method="characterization vs sign of numeric sup",
                                       details={"lambda_bar": lb}))
        kf = numeric_kernel(act, sw, sb, 1.0)
        limit = float(ratio(kf, d, beta, np.array([1e-9]))[0])
        if abs(limit) > 1e-4 * (kf.k0 + kf.k1):
            det.append(deterministic_check(f"{act} d={d} sw={sw} sb={sb} beta={beta}: edge",
                                           float(edge), float(limit < 0), tol=0.0,
                                           method="moment condition vs sign of L2 f/f at rho -> 1"))
    checks = [all_deterministic("moment characterization vs sign of lambda_bar (numeric sup)", det,
                                method="deterministic (kernel numerics)")] if det else []
    if "configs" in budget:     # an explored point: the characterization there (the MC runs at anchors)
        return checks
    parts = []
    for i, (act, d, sw, sb) in enumerate(MC[: int(budget["n_mc"])]):
        edge, _ = predicted(formula, act, d, sw, sb, 1.0, 0.0)
        _, times, E = energy_paths("gaussian", act, d, sw, sb, 1.0, 0.0, 0.0,
                                   {"tokens": 8, "spread": 0.01, "depth": budget["depth"],
                                    "paths": budget["paths"]}, seed + 13 * i)
        j = int(np.argmin(np.abs(times - 0.25)))
        D = E[:, j] - E[:, 0]
        parts.append(agreement_test(f"{act} d={d} sb={sb}: energy {'decays' if edge else 'grows'}",
                                    float(D.mean()), float(D.std(ddof=1) / math.sqrt(D.size)), 0.0,
                                    level=level, n=D.size, seed=seed,
                                    alternative="greater" if edge else "less",
                                    details={"ratio": float(E[:, j].mean() / E[:, 0].mean())}))
    checks.append(combine("near-synchronized energy decays iff the edge condition holds", parts, level,
                          method=f"one-sided z-tests, Bonferroni over {len(parts)}"))
    return checks


CLAIM = Claim(
    name="coercivity",
    title="Coercivity (lambda_bar < 0): the activation characterization",
    statement="lambda_bar < 0 iff (d-1) sw^2 E[phi'(U)^2] < (d-3) E[phi(U)^2] (edge) and b + beta a/2 > 0 on "
              "[-1, 1) (interior); for ReLU: d > 3 and sb/sw > sqrt(2/(d-3)).",
    derivation="coercivity",
    formula=derived_formula,
    checker=check,
    statistic="exact agreement with the sign of the numeric sup; MC sign of E_0(t) - E_0(0) near synchronization",
    level=0.999,
    tolerance="deterministic: exact signs (|lambda_bar| < 1e-6 skipped); MC: one-sided, no allowance",
    budgets={"quick": {"n_activations": 4, "n_sigmas": 2, "n_mc": 4, "depth": 64, "paths": 4000},
             "full": {"n_activations": len(ACTIVATIONS), "n_sigmas": len(SIGMAS), "n_mc": len(MC),
                      "depth": 128, "paths": 20000}},
    derived_text=lambda: sp.sstr(coercivity_derivation().extras["edge_condition_moments"]) + " and N(rho) > 0",
    domain=DOMAIN, anchors=tuple((a, d, sw, sb, b) for a in ACTIVATIONS for sw, sb in SIGMAS for d in DIMS
                                 for b in BETAS),
)
