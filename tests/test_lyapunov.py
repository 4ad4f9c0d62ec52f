"""lambda_1: the two symbolic routes agree; the ReLU form; a one-step Monte Carlo of the model.

Monte Carlo (independent of every derived formula): two tokens at distance |x - y| =
sqrt(2u), u = 1e-6, take one projected step x' = Pi(x + sqrt(h) g(x)) with the two-point
Gaussian field sampled exactly (the difference g(x) - g(y) is drawn in the stable form
through gap = k0 - K(1-u), computed with mpmath at 40 digits from an oracle kernel).
E[log|x'-y'| - log|x-y|]/h -> lambda_1 as h, u -> 0; the zero-mean first-order term is
subtracted as a control variate and (h, h/2) are Richardson-extrapolated.  z-tests at
level 1e-4 (|z| < 3.89), 2 seeds x 3 activations; perturbed formulas (d-2 for d-1 in the
k0 term, a flipped sign of the k1 term, a missing factor 1/2) must be rejected.
"""
import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp

from sssn_verify.symbolic import derive
from sssn_verify.symbolic.lyapunov import (alpha, c_rem, gaussian_moment_constants, kernel_constants,
                                           lambda1_relu, lambda1_tangent, lambda1_two_point, sigma_a,
                                           sigma_b, sigma_w, tangent_log_growth)
from sssn_verify.symbolic.two_point import d, k0, k1, noise_coefficients, rho, u

Z_CRIT = 3.89


def oracle(dd, kk0, kk1):
    return ((dd - 3) * kk1 - (dd - 1) * kk0) / 2


def test_the_two_routes_agree_symbolically():
    assert sp.simplify(lambda1_tangent() - lambda1_two_point()) == 0
    assert sp.simplify(lambda1_tangent() - oracle(d, k0, k1)) == 0


def test_a_wrong_second_route_would_disagree():
    """Dropping the Itô correction factor 1/2 in route 2 changes the answer: the comparison has teeth."""
    b, a = noise_coefficients(k0 - k1 * u + c_rem * u**(1 + alpha))
    b, a = b.subs(rho, 1 - u), a.subs(rho, 1 - u)
    wrong = sp.limit(sp.expand(sp.Rational(1, 2) * (-b / u - a / u**2)), u, 0, "+")
    assert sp.simplify(wrong - lambda1_tangent()) != 0


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_tangent_flow_in_explicit_dimension(n):
    assert sp.simplify(tangent_log_growth(n) - oracle(n, k0, k1)) == 0


def test_relu_form_and_sign():
    target = -(sigma_a**2 / 4) * (2 * sigma_w**2 + (d - 1) * sigma_b**2)
    assert sp.simplify(lambda1_relu() - target) == 0
    assert sp.factor(sp.expand(lambda1_relu().subs(d, 2 + sp.Symbol("e", nonnegative=True)))).is_negative
    # the kernel module and our own Gaussian-moment integration give the same constants
    c0, c1, _ = kernel_constants("relu")
    g0, g1 = gaussian_moment_constants("relu")
    assert sp.simplify(c0 - g0) == 0 and sp.simplify(c1 - g1) == 0


def test_derivation_records_agreement():
    out = derive("lyapunov").to_dict()
    assert out["routes_agree"] is True
    assert "k1" in out["result"]


# ----------------------------------------------------------------------------- Monte Carlo
mp.mp.dps = 40


def relu_k(r, sw, sb, sa):
    s2 = sw**2 + sb**2
    c = (sw**2 * r + sb**2) / s2
    return sa**2 * s2 / (2 * mp.pi) * (mp.sqrt(1 - c * c) + (mp.pi - mp.acos(c)) * c)


def sin3_k(r, sw, sb, sa):
    s2 = sw**2 + sb**2
    c = sw**2 * r + sb**2
    return sa**2 * mp.exp(-9 * s2) * mp.sinh(9 * c)


def k1_numeric(kern, sig):
    return float(mp.diff(lambda r: kern(r, *sig), mp.mpf(1), direction=-1))


def distance_log_growth(rng, dim, uu, kk0, gap, h, n):
    """(mean, se) of (Delta log|x-y| - control)/h for the projected step."""
    x = np.zeros(dim)
    x[0] = 1.0
    r = 1.0 - uu
    y = np.zeros(dim)
    y[0], y[1] = r, math.sqrt(uu * (2.0 - uu))
    K = kk0 - gap
    z1 = rng.standard_normal((n, dim))
    z2 = rng.standard_normal((n, dim))
    gx = math.sqrt(h * kk0) * z1
    # g(x) - g(y) = (gap/k0) g(x) - sqrt(h) sqrt(gap (2 k0 - gap)/k0) z2, no cancellation
    diff = (gap / kk0) * gx - math.sqrt(h * gap * (2 * kk0 - gap) / kk0) * z2
    gy = gx - diff
    X = x + gx
    Y = y + gy
    nx = np.linalg.norm(X, axis=1, keepdims=True)
    ny = np.linalg.norm(Y, axis=1, keepdims=True)
    delta = X / nx - Y / ny
    dist0 = x - y
    growth = np.log(np.linalg.norm(delta, axis=1) / np.linalg.norm(dist0))
    # first-order, exactly centered part <P_x g(x) - P_y g(y), x - y>/|x - y|^2, written without
    # cancellation: P_x gx - P_y gy = diff - <x,gx>(x - y) - (<x, diff> + <x - y, gy>) y
    first = (diff - np.outer(gx @ x, dist0) - np.outer(diff @ x + gy @ dist0, y))
    control = (first @ dist0) / (dist0 @ dist0)
    m = (growth - control) / h
    return m.mean(), m.std(ddof=1) / math.sqrt(n)


CASES = [("relu", 4, relu_k, (1.0, 0.0, 1.0)), ("relu-bias", 6, relu_k, (1.0, 1.0, 1.0)),
         ("sin3", 5, sin3_k, (0.5, 0.0, 1.0))]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_step_monte_carlo_confirms_lambda1(case):
    name, dim, kern, sig = case
    uu = 1e-6
    kk0 = float(kern(mp.mpf(1), *sig))
    gap = float(kern(mp.mpf(1), *sig) - kern(1 - mp.mpf(uu), *sig))
    kk1 = k1_numeric(kern, sig)
    lam = float(lambda1_tangent().subs({d: dim, k0: kk0, k1: kk1}))
    wrong = {"d-2 for d-1": ((dim - 3) * kk1 - (dim - 2) * kk0) / 2,
             "flipped k1 sign": (-(dim - 3) * kk1 - (dim - 1) * kk0) / 2,
             "missing 1/2": (dim - 3) * kk1 - (dim - 1) * kk0}
    if name == "sin3":
        assert lam > 0        # the positive-exponent case of docs/mathematics.md, section 6
    for seed in (5, 6):
        rng = np.random.default_rng([seed, dim])
        h = 2e-3 / max(1.0, kk0 + kk1)
        m1, s1 = distance_log_growth(rng, dim, uu, kk0, gap, h, 300_000)
        m2, s2 = distance_log_growth(rng, dim, uu, kk0, gap, h / 2, 300_000)
        est, se = 2 * m2 - m1, math.sqrt(4 * s2**2 + s1**2)
        assert abs(est - lam) / se < Z_CRIT, (name, seed, est, lam, se)
        for label, w in wrong.items():
            assert abs(est - w) / se > Z_CRIT, (label, est, w, se)
