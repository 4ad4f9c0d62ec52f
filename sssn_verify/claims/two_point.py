"""Claim `two_point`: the overlap rho = <X_i, X_j> of two tokens is a diffusion (docs/mathematics.md, section 5)
with noise-part drift b(rho) and squared diffusion a(rho) as derived by sympy.

Checker: one layer of the noise-only model from x = e1, y = rho e1 + sqrt(1-rho^2) e2,
``x' = Pi(x + sqrt(delta) g_x)``, ``y' = Pi(y + sqrt(delta) g_y)`` with (g_x, g_y) the Gaussian
field at the two points (covariance [[k0, K(rho)], [K(rho), k0]] per coordinate, K from
``numeric.kernels``).  Statistics: ``E[drho]/delta`` (the mean-zero linear term
``sqrt(delta)(<P_x g_x, y> + <x, P_y g_y>)`` subtracted as a control variate) and
``E[drho^2]/delta``, both Richardson-extrapolated over (delta, 2 delta) on common random
numbers, which removes the O(delta) bias (O(delta^2) is left: ~1e-4 relative at the noise per
step used, far below the statistical error), so the tolerance is statistical only.  z-tests,
Bonferroni over the points of a configuration.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp

from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rng import as_key
from ..stats import agreement_test
from ..bridge import function
from ..symbolic.two_point import two_point_coefficients
from ..strategies import HIDDEN_STACKS, NO_HIDDEN, claim_configs, hidden_stack
from ._util import combine, configs, estimates_figure
from .base import Claim

CONFIGS = (  # (activation, d, sigma_w, sigma_b, sigma_a)
    ("relu", 3, 1.0, 0.0, 1.0),
    ("relu", 5, 1.0, 1.0, 1.0),
    ("tanh", 4, 1.2, 0.3, 1.0),
)
RHOS = (-0.5, 0.3, 0.9)
# where it is explored (the step adapts to the noise, so the O(delta^2) remainder stays negligible)
# a deep block is one more kernel K (the check samples the Gaussian field of K: k0 and K(rho) only)
DOMAIN = claim_configs(activation=("relu", "tanh", "gelu", "erf", "sin:3", "leaky_relu:0.1"), d=(2, 10),
                       sigma_w=(0.3, 1.5), sigma_b=(0.0, 1.5), sigma_a=(0.3, 1.5), hidden=HIDDEN_STACKS)


@dataclass(frozen=True)
class TwoPointFormula:
    """b(d, rho, k0, K) and a(d, rho, k0, K): the coefficients being checked."""

    b: Callable[[float, float, float, float], float]
    a: Callable[[float, float, float, float], float]


@lru_cache(maxsize=None)
def derived_formula() -> TwoPointFormula:
    return TwoPointFormula(function("two_point.b", "math"), function("two_point.a", "math"))


def one_step_moments(d: int, rho: float, k0: float, K: float, delta: float, n: int,
                     rng: np.random.Generator):
    """Richardson-extrapolated (mean drho/delta, its stderr, mean drho^2/delta, its stderr)."""
    x = np.zeros(d)
    x[0] = 1.0
    y = np.zeros(d)
    y[0], y[1] = rho, np.sqrt(1.0 - rho * rho)
    z1 = rng.standard_normal((n, d))
    z2 = rng.standard_normal((n, d))
    gx = np.sqrt(k0) * z1
    gy = (K / np.sqrt(k0)) * z1 + np.sqrt(max(k0 - K * K / k0, 0.0)) * z2
    lin_x = gx @ y - rho * (gx @ x)          # <P_x g_x, y>
    lin_y = gy @ x - rho * (gy @ y)          # <x, P_y g_y>
    lin = lin_x + lin_y

    def moments(h):
        xn = x + np.sqrt(h) * gx
        yn = y + np.sqrt(h) * gy
        xn /= np.linalg.norm(xn, axis=1, keepdims=True)
        yn /= np.linalg.norm(yn, axis=1, keepdims=True)
        dr = np.einsum("ij,ij->i", xn, yn) - rho
        return (dr - np.sqrt(h) * lin) / h, dr * dr / h

    m1, s1 = moments(delta)
    m2, s2 = moments(2 * delta)
    drift = 2 * m1 - m2
    sq = 2 * s1 - s2
    return (drift.mean(), drift.std(ddof=1) / np.sqrt(n), sq.mean(), sq.std(ddof=1) / np.sqrt(n))


def check(formula: TwoPointFormula, budget: dict, seed: int, level: float):
    rng = as_key(seed, "one-step").generator()
    n, delta = int(budget["samples"]), float(budget["delta"])
    checks = []
    labels, est, se, exp = [], [], [], []
    for act, d, sw, sb, sa, *deep in configs(budget, CONFIGS):
        hidden = deep[0] if deep else NO_HIDDEN
        kf = numeric_kernel(act, sw, sb, sa, hidden=hidden_stack(hidden))
        parts = []
        for r in RHOS:
            K = float(np.asarray(kf.value(np.array([r]))).ravel()[0])
            # the O(delta^2) remainder grows with the noise per step k0 d delta: keep that small
            h = min(delta, float(budget.get("noise_per_step", 1.0)) / (kf.k0 * d))
            mb, sbe, ma, sae = one_step_moments(d, r, kf.k0, K, h, n, rng)
            b_exp, a_exp = formula.b(d, r, kf.k0, K), formula.a(d, r, kf.k0, K)
            parts.append(agreement_test(f"b({r})", mb, sbe, b_exp, level=level, n=n, seed=seed))
            parts.append(agreement_test(f"a({r})", ma, sae, a_exp, level=level, n=n, seed=seed))
            deep_label = "" if hidden == NO_HIDDEN else f" then {hidden}"
            labels += [f"b {act}{deep_label} d={d} rho={r}", f"a {act}{deep_label} d={d} rho={r}"]
            est += [mb, ma]
            se += [sbe, sae]
            exp += [b_exp, a_exp]
        checks.append(combine(f"`{act}`" + ("" if hidden == NO_HIDDEN else f" then `{hidden}`")
                              + f", $d={d}$, $\\sigma_w={sw}$, $\\sigma_b={sb}$: drift and diffusion of "
                              f"$\\rho$", parts, level,
                              method=f"one-step moments, Richardson, z-tests (Bonferroni over {len(parts)})"))
    checks[0].details["figure"] = estimates_figure(labels, est, se, exp, r"coefficients $b(\rho)$, $a(\rho)$")
    return checks


def _derived_text() -> str:
    _, b, a = two_point_coefficients()
    return f"b = {sp.sstr(b)}; a = {sp.sstr(a)}"


CLAIM = Claim(
    name="two_point",
    title=r"Two-point motion: drift and squared diffusion of the overlap",
    statement=r"$\rho = \langle X_i, X_j\rangle$ solves $d\rho = b(\rho)\, dt + \sqrt{a(\rho)}\, dB$ (noise "
              r"part) with $b(\rho) = -(d-1)\,k_0 \rho + (d - 2 + \rho^2)\, K(\rho)$ and $a(\rho) = 2(1 - "
              r"\rho^2)(k_0 - \rho K(\rho))$.",
    derivation="two_point",
    formula=derived_formula,
    checker=check,
    statistic=r"one-step moments $E[d\rho]/\delta$ (with a control variate) and $E[(d\rho)^2]/\delta$, "
              r"Richardson-extrapolated in $\delta$",
    level=0.999,
    tolerance=r"none: statistical only (Richardson leaves $O(\delta^2)$, about $10^{-4}$ relative at the noise "
              r"per step used)",
    power=r"per configuration, a relative error of $b$ or $a$ of about 1 to 3 % at the best-resolved overlap "
          r"(quick; about 4.5 times smaller in full mode); rejected with probability 0.9 at the claim's level",
    budgets={"quick": {"samples": 100_000, "delta": 0.002, "noise_per_step": 0.01},
             "full": {"samples": 2_000_000, "delta": 0.001, "noise_per_step": 0.005}},
    derived_text=_derived_text,
    domain=DOMAIN, anchors=tuple((*c, NO_HIDDEN) for c in CONFIGS),
)
