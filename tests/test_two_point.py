"""Two-point motion of rho = <X_i, X_j>: the sympy derivation against oracles and Monte Carlo.

Monte Carlo: one step of the *model's* projected update x' = Pi(x + sqrt(h) g), with
(g(x), g(y)) sampled exactly from the two-point Gaussian field (Cov = k0 I, K(rho) I), which
does not use the derived drift c(x) at all.  Moments with step h and h/2 are Richardson-
extrapolated to h -> 0.  The zero-mean first-order term <g_x, y - rho x> + <g_y, x - rho y>
is subtracted from the increment as a control variate (it is exactly centered).
Each z-test is two-sided at level 1e-4 (|z| < 3.89); 3 seeds x 3 parameter sets x 2 moments
= 18 tests, Bonferroni family level < 2e-3.  Perturbed formulas (d-1 for d-2, a flipped
sign, a missing factor 2) must give |z| > 3.89 in every case.
"""
import math

import numpy as np
import pytest
import sympy as sp

import pair_step

from sssn_verify.symbolic import derive
from sssn_verify.symbolic.two_point import (Krho, attention_rho_identity, d, k0, noise_coefficients, rho,
                                            two_point_noise_explicit)

Z_CRIT = 3.89        # two-sided 1e-4


def oracle_b(dd, r, kk0, K):
    return -(dd - 1) * kk0 * r + (dd - 2 + r**2) * K


def oracle_a(r, kk0, K):
    return 2 * (1 - r**2) * (kk0 - r * K)


def test_symbolic_coefficients_match_the_hand_derivation():
    b, a = noise_coefficients()
    assert sp.simplify(b - oracle_b(d, rho, k0, Krho)) == 0
    assert sp.simplify(a - oracle_a(rho, k0, Krho)) == 0
    # and the check can fail: d-1 for d-2
    assert sp.simplify(b - oracle_b(d + 1, rho, k0, Krho)) != 0


@pytest.mark.parametrize("n", [2, 3, 5])
def test_explicit_coordinates_without_the_affine_fit(n):
    drift, diffusion = two_point_noise_explicit(n)
    assert sp.simplify(drift - oracle_b(n, rho, k0, Krho)) == 0
    assert sp.simplify(diffusion - oracle_a(rho, k0, Krho)) == 0


def test_attention_identity_and_a_wrong_variant():
    drho, claim, residual = attention_rho_identity()
    assert residual == 0
    assert sp.simplify(-drho - claim.subs(rho, -rho)) != 0


def test_derivation_object_renders():
    dv = derive("two_point")
    assert "K_rho" in dv.to_dict()["result"]
    assert "\\rho" in dv.latex()


# ----------------------------------------------------------------------------- Monte Carlo
def relu_kernel(r, sw, sb, sa):
    """Oracle (arc-cosine kernel with bias), independent of the package."""
    s2 = sw**2 + sb**2
    c = (sw**2 * r + sb**2) / s2
    return sa**2 * s2 / (2 * math.pi) * (math.sqrt(max(0.0, 1 - c * c)) + (math.pi - math.acos(c)) * c)


def tanh_kernel(r, sw, sb, sa, n=120):
    """Oracle by 2-D Gauss-Hermite quadrature (numpy only)."""
    z, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    s2 = sw**2 + sb**2
    c = (sw**2 * r + sb**2) / s2
    s = math.sqrt(s2)
    Z1, Z2 = np.meshgrid(z, z, indexing="ij")
    W = np.outer(w, w)
    U = s * Z1
    V = s * (c * Z1 + math.sqrt(1 - c * c) * Z2)
    return sa**2 * float(np.sum(W * np.tanh(U) * np.tanh(V)))


def extrapolated(rng, dim, r, kk0, K, h=2e-3, n=400_000):
    return pair_step.extrapolated(rng, dim, r, kk0, K, h, n)


CASES = [  # (name, dim, rho, kernel oracle, sigmas)
    ("relu", 5, 0.3, relu_kernel, (1.0, 0.5, 1.0)),
    ("relu", 3, -0.5, relu_kernel, (1.2, 0.0, 0.8)),
    ("tanh", 4, 0.6, tanh_kernel, (1.0, 0.3, 1.0)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-d{c[1]}" for c in CASES])
def test_one_step_monte_carlo_confirms_drift_and_diffusion(case):
    name, dim, r, kern, sig = case
    kk0, K = kern(1.0, *sig), kern(r, *sig)
    lam_b, lam_a = noise_coefficients()
    b_num = float(lam_b.subs({d: dim, rho: r, k0: kk0, Krho: K}))
    a_num = float(lam_a.subs({d: dim, rho: r, k0: kk0, Krho: K}))
    wrong_b = {"d-1 for d-2": -(dim - 1) * kk0 * r + (dim - 1 + r * r) * K,
               "flipped sign": -(dim - 1) * kk0 * r - (dim - 2 + r * r) * K}
    wrong_a = {"missing factor 2": a_num / 2, "flipped sign": 2 * (1 - r * r) * (kk0 + r * K)}
    for seed in (11, 12, 13):
        rng = np.random.default_rng([seed, dim])
        (mb, sb), (ma, sa) = extrapolated(rng, dim, r, kk0, K)
        assert abs(mb - b_num) / sb < Z_CRIT, (seed, mb, b_num, sb)
        assert abs(ma - a_num) / sa < Z_CRIT, (seed, ma, a_num, sa)
        for label, wb in wrong_b.items():
            assert abs(mb - wb) / sb > Z_CRIT, (label, mb, wb, sb)
        for label, wa in wrong_a.items():
            assert abs(ma - wa) / sa > Z_CRIT, (label, ma, wa, sa)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_spde_generator_is_laplace_beltrami(n):
    """(k0/2) Delta_S from Itô equals k0/2 times the Laplacian of phi(x/|x|); d-2 for d-1 fails."""
    from sssn_verify.symbolic.spde import laplace_beltrami_by_extension, noise_generator
    xs = list(sp.symbols(f"x1:{n + 1}", real=True))
    phi = xs[0] ** 2 * xs[-1] + 3 * xs[0]
    pt = dict(zip(xs, [sp.Rational(3, 5), sp.Rational(4, 5)] + [0] * (n - 2)))
    lb = (k0 / 2 * laplace_beltrami_by_extension(phi, xs)).subs(pt)
    right = noise_generator(phi, xs, -(n - 1) * k0 / 2).subs(pt)
    wrong = noise_generator(phi, xs, -(n - 2) * k0 / 2).subs(pt)
    assert sp.simplify(right - lb) == 0
    assert sp.simplify(wrong - lb) != 0
    assert "Delta_{S}" in derive("spde").result_latex
