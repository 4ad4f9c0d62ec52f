"""C_att, the energy-lowering condition and the near-synchronization rate for H attention heads
(symbolic/dissipation.attention_bound, numeric/rates), against a plain numpy multi-head attention.

A_i = sum_h V_h sum_j softmax_j(beta <Q_h x_i, K_h x_j>) x_j; the attention part of the token
velocity is P_{x_i} A_i, so d rho_ij/dt = <P_{x_i} A_i, x_j> + <x_i, P_{x_j} A_j> exactly (no
time stepping).  The bound is checked on random token configurations, including nearly
coincident pairs where it is tight.
"""
from __future__ import annotations

import numpy as np
import pytest

from sssn_verify.errors import ParameterError
from sssn_verify.numeric.rates import c_att, c_att_general, energy_lowering, heads, near_sync_rate


def attention(X, beta, Q, K, V):
    """Plain numpy multi-head attention (Q, K, V of shape (H, d, d))."""
    A = np.zeros_like(X)
    for Qh, Kh, Vh in zip(Q, K, V):
        logits = beta * (X @ Qh.T) @ (X @ Kh.T).T
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        A += (w @ X) @ Vh.T
    return A


def rho_rates(X, beta, Q, K, V):
    """(1 - rho_ij, d(1 - rho_ij)/dt) for every pair i < j."""
    A = attention(X, beta, Q, K, V)
    vel = A - np.sum(A * X, axis=1, keepdims=True) * X
    G = X @ X.T
    drho = vel @ X.T + X @ vel.T
    iu = np.triu_indices(len(X), 1)
    return 1 - G[iu], -drho[iu]


def configurations(rng, n_configs, N, d):
    for k in range(n_configs):
        X = rng.standard_normal((N, d))
        if k % 2:   # a tight cluster plus one far token: nearly coincident pairs
            X[:-1] = X[0] + 1e-3 * rng.standard_normal((N - 1, d))
        yield X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("H,beta", [(1, 0.7), (2, 0.0), (2, 1.5), (3, 4.0)])
def test_bound_holds_on_random_configurations(H, beta):
    rng = np.random.default_rng(100 + H)
    d, N = 4, 6
    worst = 0.0
    for trial in range(20):
        Q, K, V = (rng.standard_normal((H, d, d)) for _ in range(3))
        C = c_att(beta, Q, K, V)
        assert C == pytest.approx(c_att_general(beta, Q, K, V)) and C > 0
        for X in configurations(rng, 10, N, d):
            gap, rate = rho_rates(X, beta, Q, K, V)
            ratio = np.abs(rate) / gap
            assert np.all(ratio <= C * (1 + 1e-9)), (ratio.max(), C)
            worst = max(worst, ratio.max() / C)
    assert worst > 0.05          # the configurations do probe the bound


def test_bound_is_attained_for_two_heads_at_beta_zero():
    """V_h = -I/2 (two heads, beta = 0): C_att = 2 sum_h ||V_h|| = 2, and two tokens close to
    each other come apart at rate 2 (1 - rho): a bound 1% smaller would be violated."""
    d = 3
    Q = K = np.stack([np.eye(d)] * 2)
    V = np.stack([-0.5 * np.eye(d)] * 2)
    C = c_att(0.0, Q, K, V)
    assert C == pytest.approx(2.0, rel=1e-14)
    t = 1e-4
    X = np.array([[1.0, 0, 0], [np.cos(t), np.sin(t), 0]])
    gap, rate = rho_rates(X, 0.0, Q, K, V)
    assert abs(rate[0]) / gap[0] > 0.99 * C


def test_energy_lowering_heads_do_not_raise_the_energy():
    """Heads with V_h = v_h I, v_h >= 0 and Q_h^T K_h = I (plus a head with V_h = 0 and any Q, K):
    C_att = 0, and dE_beta/dt <= 0 on random configurations (E_beta's time derivative from the
    exact pair rates)."""
    rng = np.random.default_rng(7)
    d, N, beta = 4, 7, 2.0
    R = np.linalg.qr(rng.standard_normal((d, d)))[0]
    Q = np.stack([R, np.eye(d), rng.standard_normal((d, d))])
    K = np.stack([R, np.eye(d), rng.standard_normal((d, d))])      # Q_h^T K_h = I for h = 0, 1
    V = np.stack([0.8 * np.eye(d), 0.3 * np.eye(d), np.zeros((d, d))])
    assert energy_lowering(beta, Q, K, V) and c_att(beta, Q, K, V) == 0.0
    for X in configurations(rng, 30, N, d):
        gap, rate = rho_rates(X, beta, Q, K, V)
        rho = 1 - gap
        # E_beta = (1/(2 beta N^2)) sum_{i != j} (e^beta - e^{beta rho_ij}): dE/dt over pairs i < j
        dE = np.sum(np.exp(beta * rho) * rate) / N**2
        assert dE <= 1e-12
    # breaking the condition in one head makes C_att positive
    V_bad = V.copy()
    V_bad[1, 0, 1] = 0.2
    assert not energy_lowering(beta, Q, K, V_bad) and c_att(beta, Q, K, V_bad) > 0


def test_a_zero_head_changes_nothing_and_one_head_is_h_equals_one():
    rng = np.random.default_rng(3)
    d = 5
    Q, K, V = (rng.standard_normal((d, d)) for _ in range(3))
    Z = np.zeros((d, d))
    one = c_att(1.3, Q, K, V)
    assert c_att(1.3, Q[None], K[None], V[None]) == one
    two = c_att(1.3, np.stack([Q, rng.standard_normal((d, d))]), np.stack([K, rng.standard_normal((d, d))]),
                np.stack([V, Z]))
    assert two == pytest.approx(one, rel=1e-14)


def test_near_synchronization_rate_of_heads_is_that_of_their_sum():
    """Two tokens at distance t -> 0: [d(1-rho)/dt]/(1-rho) -> -2 <(sum_h V_h) x, x> (any weights)."""
    rng = np.random.default_rng(11)
    d, beta = 3, 2.5
    Q, K, V = (rng.standard_normal((2, d, d)) for _ in range(3))
    x = np.array([1.0, 0.0, 0.0])
    t = 1e-5
    X = np.array([x, [np.cos(t), np.sin(t), 0.0]])
    gap, rate = rho_rates(X, beta, Q, K, V)
    expected = -2 * x @ V.sum(axis=0) @ x
    assert rate[0] / gap[0] == pytest.approx(expected, rel=1e-3, abs=1e-4)
    # the lower bound uses lambda_min of the symmetric part of sum_h V_h
    Vs = V.sum(axis=0)
    lam_min = np.linalg.eigvalsh((Vs + Vs.T) / 2).min()
    assert near_sync_rate(d, 1.0, 0.5, V) == pytest.approx(near_sync_rate(d, 1.0, 0.5, Vs))
    assert near_sync_rate(d, 1.0, 0.5, V) == pytest.approx((d - 1) * 0.5 - (d - 3) * 1.0 - 2 * lam_min)


def test_bad_head_shapes_are_parameter_errors():
    with pytest.raises(ParameterError):
        heads(np.zeros((2, 3, 3)), np.zeros((3, 3, 3)), np.zeros((2, 3, 3)))
    with pytest.raises(ParameterError):
        heads(np.eye(3), np.eye(3), np.zeros((2, 4, 4)))
    with pytest.raises(ParameterError):
        heads(np.eye(3), np.eye(3), np.full((3, 3), np.nan))
