"""Fields declared by their covariance tensor and the random quadratic form rqf (issue 25.2, first part).

Independent numbers: the rqf layer x' = Pi(x + sqrt(h) Q x), Q = S (B + B^T)/2, written here with numpy
(B drawn entry by entry; nothing of the package's samplers or derivations), Monte Carlo over B:

* the covariance tensor E[(Qx)(Qy)^T] entrywise (z-tests at 1e-4 two-sided, 16 entries, Bonferroni 1.6e-3);
* the two-point drift and squared diffusion of rho from one step at h and h/2 (Richardson), antithetic in
  Q -> -Q; 3 keys x 2 moments z-tests at 1e-4; the coefficients of a K(rho) I field with K = S^2 rho / 2
  (the y x^T term ignored) are rejected (|z| > 3.89 at every key);
* lambda_1 from the one-step growth of log|x - y| at |x - y|^2 = 2e-12 (Richardson, antithetic), z-test.
"""
import math

import numpy as np
import pytest
import sympy as sp

from sssn_verify.bridge import compile_expression
from sssn_verify.numeric.rng import as_key
from sssn_verify.symbolic import derive
from sssn_verify.symbolic.general_field import (a_1, a_r, c_r, general_two_point_coefficients, rqf_lambda1,
                                                rqf_projective, rqf_tensor, rqf_two_point, sigma_q,
                                                special_case_residual)
from sssn_verify.symbolic.symbols import d, rho

Z_CRIT = 3.89


def test_general_tensor_reduces_to_the_kernel_case_and_the_c_term_matters():
    assert special_case_residual() == (0, 0)
    b, a = general_two_point_coefficients()
    assert b.has(c_r) and a.has(c_r)          # the y x^T term enters both


def test_derivation_renders():
    dv = derive("general_field")
    assert "sigma_q" in dv.to_dict()["result"] and "\\rho" in dv.latex()


def _rqf(gen, n, dim, S):
    B = gen.standard_normal((n, dim, dim))
    return S * (B + np.transpose(B, (0, 2, 1))) / 2


def test_rqf_covariance_tensor_by_monte_carlo():
    dim, S, r = 4, 1.3, 0.4
    x = np.eye(dim)[0]
    y = r * x + math.sqrt(1 - r * r) * np.eye(dim)[1]
    Q = _rqf(as_key(0, "test_general_field", "tensor").generator(), 200_000, dim, S)
    prod = np.einsum("pi,pj->pij", Q @ x, Q @ y)
    T = rqf_tensor()
    want = (float(T[a_r].subs({rho: r, sigma_q: S})) * np.eye(dim)
            + float(T[c_r].subs(sigma_q, S)) * np.outer(y, x))
    z = (prod.mean(axis=0) - want) / (prod.std(axis=0, ddof=1) / math.sqrt(prod.shape[0]))
    assert np.all(np.abs(z) < Z_CRIT), z
    # the K(rho) I form alone (no y x^T term) is rejected
    z_wrong = (prod.mean(axis=0) - float(T[a_r].subs({rho: r, sigma_q: S})) * np.eye(dim)) / (
        prod.std(axis=0, ddof=1) / math.sqrt(prod.shape[0]))
    assert np.max(np.abs(z_wrong)) > Z_CRIT


def _one_step(gen, dim, r, S, h, n):
    """(mean, se) of drho/h and drho^2/h for the layer x' = Pi(x + sqrt(h) Q x), antithetic in Q."""
    x = np.eye(dim)[0]
    y = r * x + math.sqrt(1 - r * r) * np.eye(dim)[1]
    Q = _rqf(gen, n, dim, S)
    m1, m2 = 0.0, 0.0
    out1, out2 = [], []
    for sgn in (1.0, -1.0):
        X = x + sgn * math.sqrt(h) * (Q @ x)
        Y = y + sgn * math.sqrt(h) * (Q @ y)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        Y /= np.linalg.norm(Y, axis=1, keepdims=True)
        dr = np.einsum("ij,ij->i", X, Y) - r
        out1.append(dr / h)
        out2.append(dr * dr / h)
    m1 = (out1[0] + out1[1]) / 2
    m2 = (out2[0] + out2[1]) / 2
    return (m1.mean(), m1.std(ddof=1) / math.sqrt(n)), (m2.mean(), m2.std(ddof=1) / math.sqrt(n))


@pytest.mark.parametrize("dim, r, S", [(3, 0.5, 1.0), (6, -0.3, 0.8)])
def test_rqf_two_point_motion_by_monte_carlo(dim, r, S):
    b, a = rqf_two_point()
    args = (d, rho, sigma_q)
    bv = compile_expression(args, b, "math")(dim, r, S)
    av = compile_expression(args, a, "math")(dim, r, S)
    # a K(rho) I field with K = S^2 rho / 2 (the y x^T term ignored): the two-point coefficients it would have
    k0, K = S * S / 2, S * S * r / 2
    wrong_b = -(dim - 1) * k0 * r + (dim - 2 + r * r) * K
    wrong_a = 2 * (1 - r * r) * (k0 - r * K)
    h, n = 2e-3, 200_000
    for seed in (1, 2, 3):
        gen = as_key(seed, "test_general_field", "pairs", dim).generator()
        (b1, sb1), (a1, sa1) = _one_step(gen, dim, r, S, h, n)
        (b2, sb2), (a2, sa2) = _one_step(gen, dim, r, S, h / 2, n)
        mb, sb = 2 * b2 - b1, math.sqrt(4 * sb2**2 + sb1**2)
        ma, sa = 2 * a2 - a1, math.sqrt(4 * sa2**2 + sa1**2)
        assert abs(mb - bv) / sb < Z_CRIT, (seed, mb, bv, sb)
        assert abs(ma - av) / sa < Z_CRIT, (seed, ma, av, sa)
        assert abs(mb - wrong_b) / sb > Z_CRIT and abs(ma - wrong_a) / sa > Z_CRIT


def test_rqf_lambda1_by_monte_carlo():
    dim, S, u0, n = 5, 1.1, 1e-12, 200_000
    lam = float(rqf_lambda1().subs(sigma_q, S))
    s = math.sqrt(u0 / 2)
    c = math.sqrt(1 - u0 / 2)
    x, y = np.zeros(dim), np.zeros(dim)
    x[0] = y[0] = c
    x[1], y[1] = s, -s
    gen = as_key(0, "test_general_field", "lambda1").generator()
    Q = _rqf(gen, n, dim, S)

    def rate(h):
        tot = 0.0
        for sgn in (1.0, -1.0):
            X = x + sgn * math.sqrt(h) * (Q @ x)
            Y = y + sgn * math.sqrt(h) * (Q @ y)
            nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
            D = X / nx[:, None] - Y / ny[:, None]
            tot = tot + 0.5 * np.log(np.einsum("ij,ij->i", D, D) / (2 * u0))
        return tot / (2 * h)
    est = 2 * rate(1e-3) - rate(2e-3)
    m, se = est.mean(), est.std(ddof=1) / math.sqrt(n)
    assert abs(m - lam) / se < Z_CRIT, (m, lam, se)
    assert abs(m - lam / 2) / se > Z_CRIT


def test_rqf_projective_rates():
    B, A, ratio, sup, lam = rqf_projective()
    assert sp.simplify(lam - rqf_lambda1()) == 0 and sp.simplify(sup - 2 * sigma_q**2) == 0
    # the supremum against a dense grid of the ratio written out here from the two-point coefficients
    b, a = rqf_two_point()
    f = compile_expression((rho, sigma_q), sp.simplify(-(2 * rho * b + a) / (1 - rho**2)), "math")
    grid = max(f(x, 1.0) for x in np.linspace(0, 0.999999, 2001))
    assert grid <= 2.0 + 1e-12 and grid > 2.0 - 1e-5
    assert a_1 in rqf_tensor()
