"""Claim `coercivity`: which activations dissipate (lambda_bar < 0), as Gaussian moments (docs/mathematics.md, section 5).

Derived (sympy, ``derive("coercivity")``): lambda_bar < 0 iff
  * edge:     (d-1) sw^2 E[phi'(U)^2] < (d-3) E[phi(U)^2],   U ~ N(0, sw^2 + sb^2), and
  * interior: N(rho) = b(rho) + beta a(rho)/2 > 0 on [-1, 1)  (in K(rho), k0, d, beta).

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.coercivity``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp

from ..bridge import function
from ..numeric.experiments import model_kernel
from ..numeric.layer_rates import edge_ratio, quadrature_kernel, rate_estimate, sup_ratio
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import agreement_test, deterministic_check, min_detectable
from ..symbolic.dissipation import coercivity as coercivity_derivation
from ..strategies import claim_configs
from ._util import all_deterministic, combine, configs, near_synchronized
from .base import Claim

ACTIVATIONS = ("relu", "tanh", "sin:1", "gelu", "erf", "leaky_relu:0.1", "softplus", "silu")
SIGMAS = ((1.0, 1.5), (1.0, 1.0), (1.0, 0.0), (0.6, 1.2))
DIMS = (3, 4, 5, 8, 12)
BETAS = (0.0, 1.0)
RHO_GRID = np.concatenate([np.linspace(-1.0, 0.99, 400), 1.0 - np.geomspace(1e-2, 1e-6, 60)])
# relu d=4 sb=1: d > 3 but sb/sw below sqrt(2/(d-3)): the edge condition fails, the energy grows
MC = (("relu", 8, 1.0, 1.5), ("relu", 4, 1.0, 1.0), ("relu", 8, 1.0, 0.0), ("sin:1", 4, 1.0, 0.0),
      ("tanh", 12, 1.0, 1.0))
# the models the statement applies to (budget["models"] picks among them, the Gaussian transformer by default):
# layers whose noise is the Gaussian field of a kernel K (the characterization reads K alone: k0 = sa^2 E[phi^2],
# k1 = sa^2 sw^2 E[phi'^2] and K(rho))
MODELS_APPLY = {"field": True, "unit": "layer"}
DEFAULT_MODEL = "gaussian"
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


def predicted(formula: Characterization, kf, d, sw, sa, beta) -> tuple[bool, bool]:
    """(edge condition, full characterization) of a model's kernel `kf` (k0, k1, K(rho)) at one parameter point:
    the moments are M0 = k0 / sa^2, M1 = k1 / (sa^2 sw^2)."""
    m0 = kf.k0 / (sa * sa)
    m1 = kf.k1 / (sa * sa * sw * sw) if sw > 0 else 0.0
    edge = bool(formula.edge(d, sw, m0, m1)) if math.isfinite(m1) else False
    K = np.asarray(kf.value(RHO_GRID[RHO_GRID < 1.0]), dtype=float)
    interior = bool(np.all(formula.interior(d, beta, RHO_GRID[RHO_GRID < 1.0], kf.k0, K)))
    return edge, edge and interior


def _kernels(act, d, sw, sb, sa, models, seen: set, *where):
    """(model, label suffix, the model's kernel, the evidence's kernel) for each of `models` at one point; a model
    other than the default whose kernel was judged already at (d, *where) is skipped (its kernel ignores the
    activation or the sigmas).  The Gaussian transformer's evidence reads K by quadrature (no derived closed
    form), another model's its own table."""
    out = []
    for model in models:
        mk = model_kernel(model, ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa))
        if model == DEFAULT_MODEL:
            out.append((model, "", mk, quadrature_kernel(act, sw, sb, sa)))
            continue
        tag = (model, d, *where, mk.table.tobytes())
        if tag not in seen:
            seen.add(tag)
            out.append((model, f" ({model})", mk, mk))
    return out


def check(formula: Characterization, budget: dict, seed: int, level: float):
    det = []
    models = tuple(budget.get("models", (DEFAULT_MODEL,)))
    grid = [(act, d, sw, sb, beta) for act in ACTIVATIONS[: int(budget["n_activations"])]
            for sw, sb in SIGMAS[: int(budget["n_sigmas"])] for d in DIMS for beta in BETAS]
    seen = set()
    for act, d, sw, sb, beta in configs(budget, grid):
        for model, suffix, mk, kf in _kernels(act, d, sw, sb, 1.0, models, seen, beta):
            if not math.isfinite(kf.k1):
                continue
            label = f"{act} d={d} sw={sw} sb={sb} beta={beta}{suffix}"
            lb, arg, err = sup_ratio(kf, d, beta)
            if abs(lb) > max(1e-6, 4 * err):
                edge, full = predicted(formula, mk, d, sw, 1.0, beta)
                det.append(deterministic_check(label, float(full), float(lb < 0), tol=0.0, truth=True,
                                               method="characterization vs sign of the exact layer's sup of Lf/f",
                                               details={"lambda_bar_layer": lb, "argmax_rho": arg}))
            limit, lerr = edge_ratio(kf, d, beta)
            if abs(limit) > max(1e-4 * (kf.k0 + kf.k1), 4 * lerr):
                edge, _ = predicted(formula, mk, d, sw, 1.0, beta)
                det.append(deterministic_check(f"{label}: edge", float(edge), float(limit < 0), tol=0.0, truth=True,
                                               method="moment condition vs sign of the exact layer's Lf/f at "
                                                      "rho -> 1"))
    checks = [all_deterministic(r"moment characterization against the sign of $\sup_\rho Lf/f$ of the exact layer", det,
                                method="deterministic (layer map second differences, quadrature kernel)")] \
        if det else []
    if "configs" in budget:     # an explored point: the characterization there (the MC runs at anchors)
        return checks
    parts = []
    seen = set()
    for i, (act, d, sw, sb) in enumerate(MC[: int(budget["n_mc"])]):
        for model, suffix, mk, _ in _kernels(act, d, sw, sb, 1.0, models, seen):
            edge, _ = predicted(formula, mk, d, sw, 1.0, 0.0)
            # the Monte Carlo samples the model's own field; another model than the default on its own streams
            x0 = near_synchronized(8, d, 0.01, as_key(seed, "start", i))
            m, se, n = rate_estimate(x0, mk, 0.0, int(budget["paths"]),
                                     as_key(seed, "rate", i, *((model,) if suffix else ())), model=model)
            parts.append(agreement_test(f"{act} d={d} sb={sb}{suffix}: energy {'decays' if edge else 'grows'}",
                                        m, se, 0.0, level=level, n=n, seed=seed,
                                        alternative="greater" if edge else "less",
                                        method="initial rate of E[E_0], exact layers, Richardson over the step"))
    for c in parts:
        # a sign test: the smallest rate of the wrong sign it detects (probability 0.9, Bonferroni)
        c.details["min_detectable_rate"] = min_detectable(c.stderr, 1.0, level, alternative=c.alternative,
                                                          tests=len(parts))
    checks.append(combine("near-synchronized energy decays if and only if the edge condition holds", parts, level,
                          method=f"one-sided z-tests, Bonferroni over {len(parts)}",
                          details={"min_detectable_rate": max(c.details["min_detectable_rate"] for c in parts)}))
    return checks


CLAIM = Claim(
    name="coercivity",
    title=r"Coercivity ($\bar\lambda < 0$): the activation characterization",
    statement=r"$\bar\lambda < 0$ if and only if $(d-1)\,\sigma_w^2\, E[\phi'(U)^2] < (d-3)\, E[\phi(U)^2]$ (the"
              r" edge) and $b(\rho) + \frac{\beta}{2} a(\rho) > 0$ on $[-1, 1)$ (the interior); for ReLU: $d > "
              r"3$ and $\sigma_b/\sigma_w > \sqrt{2/(d-3)}$.",
    derivation="coercivity",
    formula=derived_formula,
    checker=check,
    statistic=r"exact agreement with the sign of $\sup_\rho Lf/f$ of the exact layer; Monte Carlo sign of the "
              r"initial rate of $E[E_0]$ near synchronization (exact layers, Richardson over the step)",
    level=0.999,
    tolerance=r"deterministic: exact signs (points with $|\sup_\rho Lf/f| < \max(10^{-6}, 4 \times "
              r"\text{numerical error})$ skipped); Monte Carlo: one-sided, no allowance",
    budgets={"quick": {"n_activations": 4, "n_sigmas": 2, "n_mc": 4, "paths": 4000},
             "full": {"n_activations": len(ACTIVATIONS), "n_sigmas": len(SIGMAS), "n_mc": len(MC),
                      "paths": 20000}},
    derived_text=lambda: sp.sstr(coercivity_derivation().extras["edge_condition_moments"]) + " and N(rho) > 0",
    domain=DOMAIN, anchors=tuple((a, d, sw, sb, b) for a in ACTIVATIONS for sw, sb in SIGMAS for d in DIMS
                                 for b in BETAS),
)
