"""Claim `dissipation`: lambda_bar(beta) and the energy bound (Theorem 1.4 analogue, docs/mathematics.md, section 5)

    E[E_beta(mu_t)] <= exp((lambda_bar + C_att) t) E[E_beta(mu_0)].

Checkers:

* Monte Carlo (engine): N tokens started near synchronization (where the bound is sharpest:
  every pair sits near rho = 1), noise only or with energy-lowering attention (Q = K = V = I,
  C_att = 0); per path ``D(t) = E_beta(t) - (1 + tol) e^{(lambda_bar + C_att) t} E_beta(0)`` at
  four times; one-sided z-tests of the null ``E D(t) <= 0`` (the bound holds), Bonferroni.
  ``tol`` is the allowance for the O(1/L) bias of the layer maps against the SDE;
* deterministic: the sympy edge value ``(d-1) k1 - (d-3) k0`` is the limit rho -> 1 of
  ``L2 f / f`` computed by ``numeric.rates.ratio`` (u = 1e-9) for several activations, and it
  equals the numerical supremum where the argmax is the edge.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp

from ..bridge import function
from ..engine import simulate_gaussian, simulate_transformer
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rates import c_att, lambda_bar, ratio
from ..params import ModelParams
from ..stats import agreement_test, deterministic_check
from ..symbolic.dissipation import edge_rate
from ..strategies import claim_configs
from ._util import all_deterministic, combine, configs
from .base import CandidateCheck, Claim, Evidence

# (model, activation, d, sigma_w, sigma_b, sigma_a, beta, attention V); the first is sharp
CONFIGS = (
    ("gaussian", "relu", 6, 1.0, 1.5, 1.0, 0.0, 0.0),
    ("transformer", "relu", 8, 1.0, 1.0, 1.0, 1.0, 1.0),
    ("gaussian", "tanh", 8, 1.0, 1.0, 1.0, 2.0, 0.0),
    ("gaussian", "gelu", 10, 1.0, 1.5, 1.0, 1.0, 1.0),
)
EDGE_CASES = (("relu", 6, 1.0, 1.5, 1.0), ("tanh", 5, 1.2, 0.3, 1.0), ("gelu", 8, 1.0, 1.0, 1.0),
              ("sin:3", 4, 1.0, 0.0, 1.0), ("erf", 7, 0.8, 0.5, 1.0))
TIMES = (0.25, 0.5, 0.75, 1.0)
# where it is explored: Gaussian transformer, V = v I with v in [0, 1] (energy-lowering: C_att = 0)
DOMAIN = claim_configs(model=("gaussian",), activation=("relu", "tanh", "gelu", "erf"), d=(2, 10),
                       sigma_w=(0.5, 1.5), sigma_b=(0.0, 1.5), sigma_a=(0.5, 1.5), beta=(0.0, 3.0), V=(0.0, 1.0))


@dataclass(frozen=True)
class DissipationFormula:
    lambda_bar: Callable[[str, int, float, float, float, float], float]
    c_att: Callable[[float, np.ndarray, np.ndarray, np.ndarray], float]
    edge: Callable[[float, float, float], float]


@lru_cache(maxsize=None)
def _edge_fn():
    return function("dissipation.edge_rate", "math")


def derived_formula() -> DissipationFormula:
    return DissipationFormula(lambda a, d, sw, sb, sa, beta: lambda_bar(a, d, sw, sb, sa, beta)[0],
                              c_att, lambda d, k0, k1: _edge_fn()(d, k0, k1))


def near_synchronized(n: int, d: int, spread: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(51,)))
    x = np.zeros((n, d))
    x[:, 0] = 1.0
    x += spread * rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def energy_paths(model, act, d, sw, sb, sa, beta, V, budget, seed):
    """(times, E_beta per path and layer) from near-synchronized tokens."""
    p = ModelParams(d=d, n_tokens=int(budget["tokens"]), horizon=max(TIMES), beta=beta, activation=act,
                    sigma_w=sw, sigma_b=sb, sigma_a=sa, V=V)
    x0 = near_synchronized(p.n_tokens, d, budget["spread"], seed)
    kw = dict(depth=int(budget["depth"]), n_paths=int(budget["paths"]), seed=seed, init=x0, betas=[beta],
              progress=False)
    if model == "transformer":
        r = simulate_transformer(p, width=int(budget["width"]), **kw)
    else:
        r = simulate_gaussian(p, **kw)
    return p, r.times, r.energies[:, :, 0]


def check(formula: DissipationFormula, budget: dict, seed: int, level: float):
    checks, parts = [], []
    figure = None
    for i, (model, act, d, sw, sb, sa, beta, V) in enumerate(configs(budget, CONFIGS)):
        p, times, E = energy_paths(model, act, d, sw, sb, sa, beta, V, budget, seed + 7 * i)
        lam = formula.lambda_bar(act, d, sw, sb, sa, beta)
        ca = formula.c_att(beta, p.Q, p.K, p.V)
        rate = lam + ca
        tol = budget["c_bias"] / budget["depth"]
        for t in TIMES:
            j = int(np.argmin(np.abs(times - t)))
            bound = (1 + tol) * math.exp(rate * times[j])
            D = E[:, j] - bound * E[:, 0]
            parts.append(agreement_test(f"{model} {act} d={d} beta={beta} V={V}: t={times[j]:.2f}",
                                        float(D.mean()), float(D.std(ddof=1) / math.sqrt(D.size)), 0.0,
                                        level=level, n=D.size, seed=seed, alternative="greater",
                                        details={"ratio": float(E[:, j].mean() / E[:, 0].mean()),
                                                 "bound": math.exp(rate * times[j]),
                                                 "lambda_bar": lam, "c_att": ca}))
        if figure is None:
            m = E.mean(axis=0)
            figure = {"kind": "decay", "t": list(map(float, times)), "mean": list(map(float, m)),
                      "stderr": list(map(float, E.std(axis=0, ddof=1) / math.sqrt(E.shape[0]))),
                      "bound": list(map(float, np.exp(rate * times) * m[0])),
                      "ylabel": rf"$\mathbb{{E}}[E_\beta(\mu_t)]$ ({act}, $d = {d}$, $\beta = {beta}$)"}
    checks.append(combine("E[E_beta(mu_t)] <= e^{(lambda_bar + C_att) t} E[E_beta(mu_0)] (near-synchronized start)",
                          parts, level, method=f"one-sided z-tests, Bonferroni over {len(parts)}",
                          details={"figure": figure}))
    det = []
    edges = [c[1:6] for c in budget["configs"]] if "configs" in budget else EDGE_CASES[: int(budget["n_edge"])]
    for act, d, sw, sb, sa in edges:
        kf = numeric_kernel(act, sw, sb, sa)
        edge = formula.edge(d, kf.k0, kf.k1)
        limit = float(ratio(kf, d, 1.0, np.array([1e-9]))[0])
        det.append(deterministic_check(f"{act} d={d}: lim_(rho->1) L2 f/f", limit, edge,
                                       tol=1e-3 * (kf.k0 + kf.k1), method="stable ratio at u = 1e-9"))
        for beta in (0.0, 1.0):
            value, arg = lambda_bar(act, d, sw, sb, sa, beta)
            if arg == 1.0:
                det.append(deterministic_check(f"{act} d={d} beta={beta}: sup at the edge",
                                               value, edge, tol=1e-9 * (1 + abs(edge)), method="numeric sup"))
    checks.append(all_deterministic("edge value (d-1) k1 - (d-3) k0 vs the numerics of L2 f / f", det,
                                    method="deterministic (kernel numerics)"))
    return checks


# ---------------------------------------------------------------- check (a user's formula for lambda_bar)
def candidate_evidence(point: dict, seed: int, level: float) -> Evidence:
    """The supremum of L2 f / f over rho computed numerically (kernel numerics), with its stated error."""
    value, argmax = lambda_bar(point["activation"], int(point["d"]), point["sigma_w"], point["sigma_b"],
                               point["sigma_a"], point["beta"])
    err = 1e-6 + 1e-4 * abs(value)
    return Evidence(float(value), err, 1, "supremum of L2 f / f over rho (kernel numerics)", tolerance=err,
                    details={"argmax_rho": float(argmax)})


def _at_edge(points: list) -> list:
    """The closed form is the edge value: keep the points where the supremum sits at rho -> 1."""
    return [pt for pt in points if lambda_bar(pt["activation"], int(pt["d"]), pt["sigma_w"], pt["sigma_b"],
                                              pt["sigma_a"], pt["beta"])[1] == 1.0]


CANDIDATE = CandidateCheck(
    variables=("d", "k0", "k1", "beta", "sigma_w", "sigma_b", "sigma_a"),
    axes=("d", "beta", "sigma_w", "sigma_b", "sigma_a"),
    derived=lambda v: _edge_fn()(v["d"], v["k0"], v["k1"]) if math.isfinite(v["k1"]) else math.inf,
    evidence=candidate_evidence, error_scale=lambda v, derived: 1e-6 + 1e-4 * abs(derived),
    domain=_at_edge, aliases=("lambda_bar",))


CLAIM = Claim(
    name="dissipation",
    title="Dissipation rate lambda_bar and the energy bound (Theorem 1.4 analogue)",
    statement="lambda_bar(beta) = sup_rho L2 f / f (edge value (d-1) k1 - (d-3) k0) and "
              "E[E_beta(mu_t)] <= exp((lambda_bar + C_att) t) E[E_beta(mu_0)], C_att = 0 for Q = K = V = I.",
    derivation="dissipation",
    formula=derived_formula,
    checker=check,
    statistic="per-path E_beta(t) - bound(t) E_beta(0) from near-synchronized tokens (one-sided), "
              "and the edge limit of L2 f/f (deterministic)",
    level=0.999,
    tolerance="bound inflated by (1 + 2/L) for the O(1/L) layer-map bias; edge limit within 1e-3 (k0 + k1)",
    budgets={"quick": {"n_configs": 3, "n_edge": 3, "tokens": 8, "spread": 0.05, "depth": 64, "paths": 4000,
                       "width": 64, "c_bias": 2.0},
             "full": {"n_configs": len(CONFIGS), "n_edge": len(EDGE_CASES), "tokens": 8, "spread": 0.05,
                      "depth": 128, "paths": 20000, "width": 128, "c_bias": 2.0}},
    derived_text=lambda: f"lambda_edge = {sp.sstr(edge_rate())}; lambda_bar = sup_rho L2 f/f (numeric)",
    domain=DOMAIN, anchors=CONFIGS,
    candidate=CANDIDATE,
)
