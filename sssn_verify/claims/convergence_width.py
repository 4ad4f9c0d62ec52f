"""Claim `convergence_width`: Theorem-1.1 analogue in the width, at fixed depth L,

    E max_l |X^{l,m} - X^{l,inf}|^2 = O(1/m)      (docs/mathematics.md, sections 3 and 8).

Checker: the engine's width coupling (``engine.simulate_coupled``: nested hidden units and one
standard normal per layer, F = Khat_m^{1/2} xi for each width, G = K^{1/2} xi for m = inf).
Per path the squared max over layers of max_i |x_i^{l,m} - x_i^{l,inf}|, for a ladder of widths on
the same paths; the log-log slope of its mean against m is fitted with a paths bootstrap
(``stats.path_bootstrap_loglog_slope``: widths share paths, so paths are resampled together).

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.convergence_width``.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ..engine import simulate_coupled
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import path_bootstrap_loglog_slope, slope_test
from ..strategies import claim_configs
from ._util import combine, configs, ladder_check
from .base import Claim

# a configuration's fields as they read in check names (LaTeX prose)
_TEX = {"sigma_w": r"\sigma_w", "sigma_b": r"\sigma_b", "sigma_a": r"\sigma_a"}

FIXED = dict(n_tokens=4, horizon=1.0, beta=1.0)
CONFIGS = (("relu", 3, 1.0, 0.0, 0.5),)          # (activation, d, sigma_w, sigma_b, sigma_a)
#: deep-block anchors (full mode: ``n_deep``): a configuration and the hidden layers after the first
#: (``ModelParams.hidden``; every hidden layer of width m, nested in the coupling)
DEEP_CONFIGS = ((("tanh", 3, 0.9, 0.2, 0.3), (("relu", 1.1, 0.3),)),)
#: the ladder must start in the asymptotic regime: the error at m = 16 is about 0.3 k0 d T
#: (measured), and once it nears its O(1) saturation (the tokens live on the sphere) the slope
#: over 16..512 is shallower than the rate (k0 d T = 1.8: slope -0.95; 3.7: -0.70), so the
#: explored domain keeps k0 d T <= 1/2 (error at m = 16 below ~0.15).  Larger noise needs a
#: ladder of larger widths, not a tolerance.
MAX_NOISE = 0.5


def _asymptotic(config) -> bool:
    """k0 d T <= MAX_NOISE.  ReLU is positively homogeneous, so k0 = sa^2 (sw^2 + sb^2) k0(1, 0, 1)
    from one kernel table (a table per drawn (sw, sb) would cost ~1 s per hypothesis draw)."""
    from ..numeric.kernels import kernel
    act, d, sw, sb, sa = config
    if act == "relu":
        k0 = kernel("relu", 1.0, 0.0, 1.0).k0 * sa * sa * (sw * sw + sb * sb)
    else:
        k0 = kernel(act, sw, sb, sa).k0
    return k0 * d * FIXED["horizon"] <= MAX_NOISE


# where it is explored: ReLU (one compiled kernel), moderate noise and dimension
DOMAIN = claim_configs(activation=("relu",), d=(2, 6), sigma_w=(0.5, 1.25), sigma_b=(0.0, 1.0),
                       sigma_a=(0.2, 0.7),
                       where=(_asymptotic, "total noise k0 d T above MAX_NOISE (outside the asymptotic regime of "
                                           "the O(1/m) rate at this depth)"))


def derived_formula() -> float:
    """The claimed exponent of m in the width part of the bound: O(1/m)."""
    return -1.0


def width_errors(config, budget: dict, seed: int, hidden=()):
    """(widths, samples (P, K)): per path max_l max_i |x_i^{l,m} - x_i^{l,inf}|^2 for each width;
    `hidden` (ModelParams.hidden) makes the block deep (every hidden layer of width m, nested)."""
    act, d, sw, sb, sa = config
    p = ModelParams(d=int(d), activation=act, sigma_w=float(sw), sigma_b=float(sb), sigma_a=float(sa),
                    hidden=hidden, **FIXED)
    widths = tuple(int(m) for m in budget["widths"])
    res = simulate_coupled(p, int(budget["depth"]), widths + (math.inf,), n_paths=int(budget["paths"]),
                           seed=seed, progress=False)
    return np.array(widths, dtype=float), res.max_dev ** 2


def _one(config, exponent: float, budget: dict, seed: int, level: float, hidden=()):
    x, samples = width_errors(config, budget, seed, hidden=hidden)
    fit = path_bootstrap_loglog_slope(x, samples, level=level, n_boot=int(budget["n_boot"]), seed=seed)
    means = samples.mean(axis=0)
    local = np.diff(np.log(means)) / np.diff(np.log(x))
    z = NormalDist()
    mde = (z.inv_cdf(level) + z.inv_cdf(0.8)) * fit.stderr
    label = ", ".join(f"`{v}`" if isinstance(v, str) else f"${_TEX.get(k, k)}={v}$"     # LaTeX prose
                      for k, v in zip(DOMAIN.fields, config))
    if hidden:
        label += ", then " + ", ".join(f"`{a}` (${sw}$, ${sb}$)" for a, sw, sb in hidden)
    extra = {"config": dict(zip(DOMAIN.fields, map(str, config))), "hidden": [list(map(str, h)) for h in hidden],
             "depth": int(budget["depth"]),
             "paths": int(budget["paths"]), "claimed_exponent": exponent, "local_slopes": local.tolist(),
             "min_detectable_exponent_error_80pct_power": mde,
             "coupling": "nested hidden units, one xi per layer: F = Khat_m^{1/2} xi, G = K^{1/2} xi"}
    bound = ladder_check(f"{label}: bound, slope of $\\log E \\max_l |X^{{l,m}} - X^{{l,\\infty}}|^2$ against "
                         f"$\\log m$ at most ${exponent:g}$",
                         x, samples, lambda m: np.asarray(m, float) ** exponent, level=level, seed=seed,
                         n_boot=int(budget["n_boot"]), xlabel="width $m$", bound_label=f"$m^{{{exponent:g}}}$",
                         ylabel=r"$\mathbb{E}\,\max_l |X^{l,m} - X^{l,\infty}|^2$", extra=extra, fit=fit)
    order = slope_test(f"{label}: order, slope at least ${exponent:g}$ (the rate is attained)", fit, exponent,
                       level=level, direction="at_least", seed=seed,
                       details={"sharp": bound.details["sharp"], **extra})
    return bound, order


def check(exponent, budget: dict, seed: int, level: float):
    a = float(exponent)
    pairs = [_one(c, a, budget, as_key(seed, "config", i), level) for i, c in enumerate(configs(budget, CONFIGS))]
    if "configs" not in budget:                       # explored points are one-layer blocks; anchors add deep ones
        deep = {**budget, **budget.get("deep", {})}   # a deep block's m x m hidden weights: smaller ladder
        pairs += [_one(c, a, deep, as_key(seed, "deep", i), level, hidden=h)
                  for i, (c, h) in enumerate(DEEP_CONFIGS[: int(budget.get("n_deep", 0))])]
    if len(pairs) == 1:
        return list(pairs[0])
    return [combine(f"bound: width slope at most ${a:g}$", [b for b, _ in pairs], level,
                    method=f"one-sided slope tests, Bonferroni over {len(pairs)}"),
            combine(f"order: width slope at least ${a:g}$", [o for _, o in pairs], level,
                    method=f"one-sided slope tests, Bonferroni over {len(pairs)}")]


CLAIM = Claim(
    name="convergence_width",
    title=r"Pathwise convergence in width at fixed depth (Theorem 1.1 analogue)",
    statement=r"Under the width coupling (nested hidden units, one standard normal per layer), $E \max_{l} "
              r"|X^{l,m} - X^{l,\infty}|^2 = O(1/m)$ at fixed depth $L$, and the order $1/m$ is attained; for "
              r"one-layer and (full mode) deep MLP blocks, every hidden layer of width $m$.",
    derivation=None,
    formula=derived_formula,
    checker=check,
    statistic=r"slope of $\log E \max_l \max_i |x_i^{l,m} - x_i^{l,\infty}|^2$ against $\log m$ (bootstrap over"
              r" paths)",
    level=0.999,
    tolerance=r"none beyond the two one-sided tests: the slope is at most $a$ (bound) and at least $a$ (order),"
              r" $a = -1$",
    budgets={"quick": {"depth": 16, "widths": (16, 32, 64, 128, 256, 512), "paths": 1000, "n_boot": 1000},
             "full": {"depth": 32, "widths": (32, 64, 128, 256, 512, 1024), "paths": 4000, "n_boot": 2000,
                      "n_deep": len(DEEP_CONFIGS),
                      "deep": {"depth": 16, "widths": (16, 32, 64, 128, 256), "paths": 1000}}},
    derived_text=lambda: (r"$E \max_{l} |X^{l,m} - X^{l,\infty}|^2 = O(1/m)$ at fixed $L$ (the exponent of "
                           r"$m$ is $-1$)"),
    derived_kind="stated",
    domain=DOMAIN, anchors=CONFIGS,
)
