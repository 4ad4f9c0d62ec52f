"""Claim `convergence_depth`: Theorem-1.1 analogue in the depth, at width m = infinity,

    E max_l |X^l - X_{l delta}|^2 = O(log L / L)     (an upper bound).

Checker: the engine's refinement ladder (``sde_refinement_ladder(kind="gaussian")``): the
Gaussian transformer with L = n_fine / f layers and the reference SDE with n_fine steps on one
Brownian field (coarse increments assembled from fine ones at the coarse level's points).
Per path the squared max deviation over the level's grid; the log-log slope of its mean
against L is fitted with a paths bootstrap (levels share paths) and tested one-sided
against the bound's own log-log slope over the same ladder (null: the error decays at least
as fast as the bound).  The report also says whether the bound looks sharp (slope CI
containing the bound's slope).  Levels stay at L <= n_fine / 8 so the reference's own
error is negligible.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..engine import sde_refinement_ladder
from ..params import ModelParams
from ..strategies import claim_configs
from ._util import explored_params, ladder_check
from .base import Claim

PARAMS = dict(d=3, n_tokens=4, horizon=1.0, beta=1.0, activation="relu", sigma_w=1.0, sigma_b=0.0,
              sigma_a=0.5)
# where it is explored (the ladder's range must be asymptotic: noise and attention near PARAMS')
DOMAIN = claim_configs(d=(2, 4), n_tokens=(2, 6), beta=(0.0, 2.0), activation=("relu", "tanh"),
                       sigma_w=(0.5, 1.0), sigma_b=(0.0, 0.5), sigma_a=(0.25, 0.6))


def derived_formula() -> Callable[[np.ndarray], np.ndarray]:
    """The bound's shape in L: log L / L."""
    return lambda L: np.log(L) / L


def check(shape, budget: dict, seed: int, level: float):
    p = ModelParams(**explored_params(budget, PARAMS, DOMAIN))
    n_fine = int(budget["n_fine"])
    factors = tuple(int(f) for f in budget["factors"])
    lad = sde_refinement_ladder(p, depth=n_fine, factors=(1, *factors), kind="gaussian",
                                n_paths=int(budget["paths"]), seed=seed, progress=False)
    L = n_fine / np.array(factors, dtype=float)
    samples = lad.max_dev[:, 1:] ** 2
    return [ladder_check(r"depth ladder ($m = \infty$): slope of $\log E \max_l |X^l - X_{\mathrm{ref}}|^2$ against "
                         r"$\log L$", L, samples, shape,
                         level=level, seed=seed, n_boot=int(budget["n_boot"]), xlabel="depth $L$",
                         bound_label=r"$\log L / L$",
                         extra={"n_fine": n_fine, "params": {k: str(v) for k, v in
                                                              explored_params(budget, PARAMS, DOMAIN).items()}})]


CLAIM = Claim(
    name="convergence_depth",
    title=r"Pathwise convergence in depth at $m = \infty$ (Theorem 1.1 analogue)",
    statement=r"Under the refinement coupling, $E \max_{l} |X^{l} - X_{l\delta}|^2 = O(\log L / L)$ for the "
              r"Gaussian transformer ($m = \infty$) against the limiting stochastic differential equation: the "
              r"error decays at least as fast as the bound.",
    derivation=None,
    formula=derived_formula,
    checker=check,
    statistic=r"slope of $\log E \max_l |X^l - X_{\mathrm{ref}}(l\delta)|^2$ against $\log L$ (bootstrap over "
              r"paths)",
    level=0.999,
    tolerance=r"none beyond the one-sided test: the slope is at most that of $\log L / L$ over the same depths "
              r"$L$",
    budgets={"quick": {"n_fine": 512, "factors": (8, 16, 32, 64), "paths": 200, "n_boot": 1000},
             "full": {"n_fine": 2048, "factors": (16, 32, 64, 128, 256), "paths": 3000, "n_boot": 2000}},
    derived_text=lambda: r"$E \max_{l} |X^{l} - X_{l\delta}|^2 = O(\log L / L + 1/m)$ (here $m = \infty$)",
    derived_kind="stated",
    domain=DOMAIN, anchors=(tuple(PARAMS[k] for k in DOMAIN.fields),),
)
