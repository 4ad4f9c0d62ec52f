"""The Itô drift of the radial projection: invariant derivation, explicit coordinates, numerics.

Numeric oracles:
* Gauss-Hermite (tensor grid, 24 nodes per axis, deterministic) of E[Pi(x + delta a + sqrt(delta) g) - x]/delta
  at delta = 0.008, 0.004, 0.002, two-level Richardson (the expansion is in integer powers of delta);
* Monte Carlo, n = 200000 antithetic pairs (g, -g), seeds 0..4, the same Richardson combination,
  two-sided z-test at level 99.9% (|z| > 3.29 rejects).
Both accept the derived -(d-1) k0/2 and reject -(d-2) k0/2 and the flipped sign +(d-1) k0/2.
"""
import math

import numpy as np
import pytest
import sympy as sp

from sssn_verify.symbolic import derive
from sssn_verify.symbolic.ito import (SX, X, d, explicit_coordinate_drift, general_drift,
                                      isotropic_drift_coefficient, k0, trS, xSx)

Z_CRIT = 3.29


def gamma(dim, k0_val):
    return float(isotropic_drift_coefficient().subs({d: dim, k0: k0_val}))


def wrong_gammas(dim, k0_val):
    return {"d-2 for d-1": -(dim - 2) * k0_val / 2, "flipped sign": (dim - 1) * k0_val / 2}


def general_drift_numeric(x, Sigma):
    """Evaluate the derived general drift: coefficient(x) * x + coefficient(Sigma x) * Sigma x."""
    g = general_drift()
    cx = g.coeff(X)
    cs = g.coeff(SX)
    vals = {xSx: float(x @ Sigma @ x), trS: float(np.trace(Sigma))}
    return float(cx.subs(vals)) * x + float(cs.subs(vals)) * (Sigma @ x)


# ------------------------------------------------------------------ symbolic
def test_isotropic_drift_matches_the_hand_derivation_oracle():
    assert sp.simplify(isotropic_drift_coefficient() + (d - 1) * k0 / 2) == 0
    der = derive("ito_drift")
    assert "k0*(d - 1)/2" in sp.sstr(der.result)
    assert sp.sstr(der.to_dict()["coefficient"]) == sp.sstr(-k0 * (d - 1) / 2)
    assert der.to_dict()["result"].startswith("Eq(c, ")


def test_general_drift_has_the_three_terms():
    g = general_drift()
    assert sp.simplify(g.coeff(SX) + 1) == 0
    assert sp.simplify(g.coeff(X) - (sp.Rational(3, 2) * xSx - trS / 2)) == 0


@pytest.mark.parametrize("dim", [2, 3, 4, 5])
def test_explicit_coordinates_agree_with_the_invariant_derivation(dim):
    drift, _ = explicit_coordinate_drift(dim, True)
    expected = isotropic_drift_coefficient().subs(d, dim) * sp.Matrix([1] + [0] * (dim - 1))
    assert sp.simplify(drift - expected) == sp.zeros(dim, 1)
    # and a wrong coefficient is not mistaken for it
    wrong = -(dim - 2) * k0 / 2 * sp.Matrix([1] + [0] * (dim - 1))
    assert sp.simplify(drift - wrong) != sp.zeros(dim, 1)


@pytest.mark.parametrize("dim", [2, 3, 4])
def test_explicit_coordinates_general_sigma(dim):
    drift, Sigma = explicit_coordinate_drift(dim, False)
    x = sp.Matrix([1] + [0] * (dim - 1))
    g = general_drift()
    expected = (g.coeff(X).subs({xSx: (x.T * Sigma * x)[0], trS: Sigma.trace()}) * x
                + g.coeff(SX) * (Sigma * x))
    assert sp.simplify(drift - expected) == sp.zeros(dim, 1)


# ------------------------------------------------------------------ numeric
def _mean_step(x, a, G, w, delta):
    """sum_k w_k (Pi(x + delta a + sqrt(delta) G_k) - x) / delta."""
    y = x + delta * a + math.sqrt(delta) * G
    p = y / np.linalg.norm(y, axis=1, keepdims=True)
    return (w[:, None] * (p - x)).sum(axis=0) / delta


def _richardson(f, delta):
    """Two-level Richardson extrapolation to delta -> 0 of f(delta) = c + C1 delta + C2 delta^2 + ..."""
    r1 = lambda dl: 2 * f(dl / 2) - f(dl)
    return (4 * r1(delta / 2) - r1(delta)) / 3


def _gauss_hermite_grid(dim, n, chol):
    z, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    grids = np.meshgrid(*([z] * dim), indexing="ij")
    Z = np.stack([g.ravel() for g in grids], axis=1)
    W = np.prod(np.stack(np.meshgrid(*([w] * dim), indexing="ij"), axis=0).reshape(dim, -1), axis=0)
    return Z @ chol.T, W


@pytest.mark.parametrize("dim", [2, 3])
def test_gauss_hermite_drift_with_richardson(dim):
    rng = np.random.default_rng(dim)
    k0_val = 0.8
    x = np.zeros(dim)
    x[0] = 1.0
    a = rng.standard_normal(dim)
    G, W = _gauss_hermite_grid(dim, 24, math.sqrt(k0_val) * np.eye(dim))
    extrap = _richardson(lambda dl: _mean_step(x, a, G, W, dl), 0.008)
    tangential = a - (x @ a) * x
    derived = gamma(dim, k0_val) * x + tangential
    assert np.max(np.abs(extrap - derived)) < 1e-4, (extrap, derived)
    for label, g in wrong_gammas(dim, k0_val).items():
        assert np.max(np.abs(extrap - (g * x + tangential))) > 0.1, label


def test_gauss_hermite_general_sigma():
    dim = 3
    rng = np.random.default_rng(7)
    B = rng.standard_normal((dim, dim))
    Sigma = 0.3 * (B @ B.T) / dim + 0.2 * np.eye(dim)
    x = rng.standard_normal(dim)
    x /= np.linalg.norm(x)
    a = np.zeros(dim)
    G, W = _gauss_hermite_grid(dim, 24, np.linalg.cholesky(Sigma))
    extrap = _richardson(lambda dl: _mean_step(x, a, G, W, dl), 0.008)
    derived = general_drift_numeric(x, Sigma)
    assert np.max(np.abs(extrap - derived)) < 1e-4
    # dropping the 3/2 (x^T Sigma x) x term is detected
    wrong = derived - 1.5 * (x @ Sigma @ x) * x
    assert np.max(np.abs(extrap - wrong)) > 0.05


@pytest.mark.parametrize("dim", [3, 5, 8])
def test_monte_carlo_drift_z_test(dim):
    k0_val = 0.6
    x = np.zeros(dim)
    x[0] = 1.0
    a = np.zeros(dim)
    delta, n = 0.01, 200_000
    for seed in range(5):
        g = math.sqrt(k0_val) * np.random.default_rng(seed).standard_normal((n, dim))

        def per_sample(dl):
            out = []
            for sign in (1.0, -1.0):
                y = x + dl * a + sign * math.sqrt(dl) * g
                out.append((y[:, 0] / np.linalg.norm(y, axis=1) - 1.0) / dl)
            return 0.5 * (out[0] + out[1])              # antithetic pair

        samples = 2 * per_sample(delta / 2) - per_sample(delta)   # Richardson, common random numbers
        mean, se = samples.mean(), samples.std(ddof=1) / math.sqrt(n)
        assert abs(mean - gamma(dim, k0_val)) / se < Z_CRIT, (dim, seed, mean, se)
        for label, g_wrong in wrong_gammas(dim, k0_val).items():
            assert abs(mean - g_wrong) / se > Z_CRIT, (label, dim, seed)
