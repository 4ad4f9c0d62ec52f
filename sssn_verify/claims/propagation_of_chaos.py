"""Claim `propagation_of_chaos`: at fixed noise, the empirical measure of N tokens approaches that
of a much larger reference system (docs/mathematics.md, section 4):

    E W_2^2(mu^N_t, mu^ref_t) decays at least like N^{-1/2}   (d < 4).

Fixed noise: the engine's literal-weights mode draws the MLP weights of every layer from the
path's seed alone (the number of draws does not depend on N), so an N-token system and the
N_ref-token reference run with the same seed see the *same* random MLP at every layer --
the same realization of the common noise -- while each feels its own attention.  The N
tokens start as the first N of the reference's i.i.d. uniform initial tokens.
W_2^2 between the two empirical measures (uniform weights, squared Euclidean cost) is an
exact optimal-transport value from POT (``ot.emd2``).  The log-log slope of its mean against
N (paths bootstrap) is tested one-sided against -1/2.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import ot

from ..engine import simulate_transformer
from ..numeric.rng import as_key, uniform_sphere
from ..params import ModelParams
from ..strategies import claim_configs
from ._util import explored_params, ladder_check
from .base import Claim

PARAMS = dict(d=3, horizon=1.0, beta=1.0, activation="relu", sigma_w=1.0, sigma_b=0.0, sigma_a=0.7)
# where it is explored (d < 4)
DOMAIN = claim_configs(d=(2, 3), beta=(0.0, 1.0), activation=("relu", "tanh"), sigma_w=(0.5, 1.0),
                       sigma_b=(0.0, 0.5), sigma_a=(0.3, 0.7))


def derived_formula() -> Callable[[np.ndarray], np.ndarray]:
    """The rate's shape in N: N^{-1/2}."""
    return lambda N: np.asarray(N, dtype=float) ** -0.5


def w2_squared(x: np.ndarray, y: np.ndarray) -> float:
    """W_2^2 between the uniform empirical measures on the rows of x and y (POT, exact)."""
    M = ot.dist(x, y, metric="sqeuclidean")
    return float(ot.emd2(np.full(len(x), 1.0 / len(x)), np.full(len(y), 1.0 / len(y)), M))


def fixed_noise_distances(ns, n_ref: int, budget: dict, seed: int) -> np.ndarray:
    """(P, len(ns)): W_2^2(mu^N_T, mu^ref_T) per path, same MLP weights (same seed) in every run."""
    P, depth, width = int(budget["paths"]), int(budget["depth"]), int(budget["width"])
    prm = explored_params(budget, PARAMS, DOMAIN)
    d = prm["d"]
    X0 = uniform_sphere(as_key(seed, "tokens").generator(), (P, n_ref), d)
    ref = simulate_transformer(ModelParams(n_tokens=n_ref, **prm), depth=depth, width=width, n_paths=P,
                               seed=seed, init=X0, mode="literal", progress=False).tokens
    out = np.empty((P, len(ns)))
    for j, n in enumerate(ns):
        sub = simulate_transformer(ModelParams(n_tokens=int(n), **prm), depth=depth, width=width,
                                   n_paths=P, seed=seed, init=X0[:, :n], mode="literal",
                                   progress=False).tokens
        for p in range(P):
            out[p, j] = w2_squared(sub[p], ref[p])
    return out


def check(shape, budget: dict, seed: int, level: float):
    ns = np.array(budget["ns"], dtype=int)
    samples = fixed_noise_distances(ns, int(budget["n_ref"]), budget, seed)
    return [ladder_check(f"$E\\, W_2^2(\\mu^N_T, \\mu^{{\\mathrm{{ref}}}}_T)$, $N_{{\\mathrm{{ref}}}} = "
                         f"{budget['n_ref']}$, fixed noise: slope against $N$",
                         ns.astype(float), samples, shape, level=level, seed=seed,
                         n_boot=int(budget["n_boot"]), xlabel="tokens $N$", bound_label="$N^{-1/2}$",
                         ylabel=r"$\mathbb{E}\,W_2^2(\mu^N_T, \mu^{\mathrm{ref}}_T)$",
                         extra={"params": {k: str(v) for k, v in explored_params(budget, PARAMS, DOMAIN).items()},
                                "width": budget["width"],
                                "depth": budget["depth"]})]


CLAIM = Claim(
    name="propagation_of_chaos",
    title=r"Propagation of chaos at fixed noise ($d < 4$)",
    statement=r"At fixed noise, $E\, W_2^2(\mu^N_t, \mu^{\mathrm{ref}}_t)$ between an $N$-token system and a "
              r"much larger reference system decays at least like $N^{-1/2}$ for $d < 4$ (here $d = 3$, "
              r"attention on).",
    derivation=None,
    formula=derived_formula,
    checker=check,
    statistic=r"slope of $\log E\, W_2^2$ against $\log N$, with $W_2^2$ the exact optimal-transport cost "
              r"between the empirical measures, bootstrap over paths",
    level=0.999,
    tolerance=r"none beyond the one-sided test: the slope is at most $-1/2$",
    budgets={"quick": {"ns": (8, 16, 32, 64), "n_ref": 512, "paths": 30, "depth": 32, "width": 64,
                       "n_boot": 1000},
             "full": {"ns": (8, 16, 32, 64, 128), "n_ref": 1024, "paths": 1600, "depth": 32,
                      "width": 64, "n_boot": 2000}},
    derived_text=lambda: r"$E\, W_2^2(\mu^N_t, \mu^{\mathrm{ref}}_t) = O(N^{-1/2})$ at fixed noise, $d < 4$",
    derived_kind="stated",
    domain=DOMAIN, anchors=(tuple(PARAMS[k] for k in DOMAIN.fields),),
)
