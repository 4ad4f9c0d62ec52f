"""C_att derived from the softmax Jacobian (symbolic/dissipation.py, attention part) and the claim
``attention_bound`` (claims/attention_bound.py) that checks it against the exact attention dynamics.

Derivation: the pieces are checked against independent numbers (finite differences of a plain
numpy softmax mean, Monte Carlo of random keys), and a slightly wrong piece is shown non-zero.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from sssn_verify.symbolic import dissipation as D
from sssn_verify.symbolic.symbols import beta, norm_KtQ, norm_V, rho, sum_V, sum_VKQ


def test_softmax_jacobian_is_beta_cov_KtQ_and_a_wrong_one_is_not():
    for n in (2, 3, 4):
        assert all(r == 0 for r in D.softmax_mean_jacobian_residual(n))
    # numerically: finite differences of m(x) = softmax-weighted mean of keys, central, h = 1e-6
    rng = np.random.default_rng(0)
    d, n, b = 4, 5, 1.7
    Q, K = rng.standard_normal((2, d, d))
    Y = rng.standard_normal((n, d))
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)

    def m(x):
        s = b * (Q @ x) @ (K @ Y.T)
        p = np.exp(s - s.max())
        return (p / p.sum()) @ Y

    x = rng.standard_normal(d)
    J = np.column_stack([(m(x + 1e-6 * e) - m(x - 1e-6 * e)) / 2e-6 for e in np.eye(d)])
    s = b * (Q @ x) @ (K @ Y.T)
    p = np.exp(s - s.max())
    p /= p.sum()
    mu = p @ Y
    cov = (Y - mu).T @ (p[:, None] * (Y - mu))
    assert np.allclose(J, b * cov @ K.T @ Q, atol=1e-8)
    assert not np.allclose(J, b * cov @ Q.T @ K, atol=1e-3)          # the transposed product is wrong
    assert np.linalg.norm(cov, 2) <= np.trace(cov) <= 1 - mu @ mu + 1e-12


def test_covariance_trace_identities():
    for n in (2, 3, 4):
        assert D.covariance_trace_identities(n) == (0, 0)


def test_derived_constants_and_sharpness():
    _, _, C = D.attention_constant()
    assert sp.expand(C - 2 * norm_V * (1 + beta * norm_KtQ)) == 0
    _, Ch, _, _ = D.attention_constant_heads()
    assert sp.expand(Ch - 2 * (sum_V + beta * sum_VKQ)) == 0
    v, ratio, lim = D.sharp_pair_ratio()
    assert sp.simplify(ratio - v * (1 + rho)) == 0 and lim == 2 * v
    # the ratio bound is nondecreasing in rho and its value at rho = 1 is C (a missing sqrt would not be)
    r1, C1, *_ = D.attention_ratio_bound(1)
    assert sp.simplify(C1 - C) == 0
    xs = np.linspace(-1, 1, 41)
    f = sp.lambdify((rho, beta, norm_V, norm_KtQ), r1)
    vals = np.array([f(x, 0.7, 1.3, 0.4) for x in xs])
    assert np.all(np.diff(vals) >= -1e-14) and vals[-1] == pytest.approx(float(C.subs({beta: 0.7, norm_V: 1.3,
                                                                                     norm_KtQ: 0.4})))


def test_zero_case_is_a_derived_condition():
    dE, nonpos = D.energy_lowering_derivative(3)
    assert nonpos is True
    cond = D.energy_lowering_condition()
    assert isinstance(cond, sp.Or)
    from sssn_verify.symbolic import derive
    res = derive("attention_bound").result
    assert isinstance(res, sp.Piecewise) and res.args[0].cond == cond
