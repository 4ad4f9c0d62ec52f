"""Claim `commuting_limits`: the limits L -> infinity and m -> infinity commute (Theorem 1.1 analogue).

Both iterated limits are the SDE of docs/mathematics.md, section 3: the finite-width transformer at *fixed*
small width m converges, as L -> infinity, to the same SDE (its per-layer noise has the exact
covariance K for every m, non-Gaussian corrections vanish over many layers), and the
Gaussian transformer (m = infinity first) converges to it as L -> infinity.

Checker: the observable E[E_0(mu_T)] (the beta = 0 energy at the horizon, engine output) for
(L, m) = (L, 2), (L, 16), (L, inf) against the limit SDE run with 4L steps; all runs share the
initial tokens (same seed), so each comparison is a paired z-test of per-path differences,
with an O(1/L) allowance.  Bonferroni over the comparisons.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..engine import simulate_gaussian, simulate_sde, simulate_transformer
from ..params import ModelParams
from ..stats import agreement_test, mean_ci
from ._util import combine, estimates_figure
from ..strategies import claim_configs
from ._util import explored_params
from .base import Claim

PARAMS = dict(d=3, n_tokens=4, horizon=1.0, beta=1.0, activation="relu", sigma_w=1.0, sigma_b=0.0,
              sigma_a=0.7)
# where it is explored (the 0.06 / L weak-error allowance is calibrated near PARAMS)
DOMAIN = claim_configs(d=(2, 4), n_tokens=(2, 4), beta=(0.0, 1.0), activation=("relu", "tanh"),
                       sigma_w=(0.5, 1.0), sigma_b=(0.0, 0.5), sigma_a=(0.3, 0.7))


def sde_limit(params: ModelParams, depth: int, n_paths: int, seed: int) -> np.ndarray:
    """Per-path E_0(mu_T) of the limit SDE (projected Euler, `depth` steps)."""
    return simulate_sde(params, depth=depth, n_paths=n_paths, seed=seed, progress=False).energy[:, -1]


def derived_formula() -> Callable[..., np.ndarray]:
    return sde_limit


def check(limit, budget: dict, seed: int, level: float):
    p = ModelParams(**explored_params(budget, PARAMS, DOMAIN))
    L, P = int(budget["depth"]), int(budget["paths"])
    ref = limit(p, 4 * L, P, seed)
    runs = {"m = inf (Gaussian transformer)": simulate_gaussian(p, depth=L, n_paths=P, seed=seed,
                                                                progress=False).energy[:, -1]}
    for m in budget["widths"]:
        runs[f"m = {m}"] = simulate_transformer(p, depth=L, width=int(m), n_paths=P, seed=seed,
                                                progress=False).energy[:, -1]
    parts, labels, est, se, exp = [], [], [], [], []
    for name, vals in runs.items():
        diff = mean_ci(vals - ref)
        parts.append(agreement_test(f"L = {L}, {name} vs SDE limit", vals.mean(), diff.stderr, ref.mean(),
                                    level=level, n=P, seed=seed, abs_tol=budget["c_bias"] / L,
                                    method="paired z-test (shared initial tokens)",
                                    details={"difference": diff.mean}))
        labels.append(name)
        est.append(float(vals.mean()))
        se.append(diff.stderr)
        exp.append(float(ref.mean()))
    return [combine("E[E_0(mu_T)] at large L for m = 2, 16, inf vs the SDE limit", parts, level,
                    method=f"paired z-tests, Bonferroni over {len(parts)}",
                    details={"figure": estimates_figure(labels, est, se, exp, r"$\mathbb{E}[E_0(\mu_T)]$"),
                             "params": {k: str(v) for k, v in explored_params(budget, PARAMS, DOMAIN).items()}})]


CLAIM = Claim(
    name="commuting_limits",
    title="The limits L -> inf and m -> inf commute",
    statement="lim_m lim_L = lim_L lim_m = the SDE of docs/mathematics.md, section 3: at large L the finite-width transformer "
              "at fixed small m, and the Gaussian transformer (m = inf), both match the SDE in law.",
    derivation=None,
    formula=derived_formula,
    checker=check,
    statistic="paired per-path differences of E_0(mu_T) against the SDE run with 4L steps",
    level=0.999,
    tolerance="|difference| <= 0.06 / L (O(1/L) weak error of the layer maps)",
    budgets={"quick": {"depth": 32, "paths": 8_000, "widths": (2, 16), "c_bias": 0.06},
             "full": {"depth": 128, "paths": 100_000, "widths": (2, 16, 128), "c_bias": 0.06}},
    derived_text=lambda: "lim_m lim_L X^{L,m} = lim_L lim_m X^{L,m} = X (the SDE)",
    derived_kind="stated",
    domain=DOMAIN, anchors=(tuple(PARAMS[k] for k in DOMAIN.fields),),
)
