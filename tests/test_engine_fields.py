"""The one Gaussian sampler: random numbers, the semi-definite Cholesky policy, the field.

Statistical tests: stated level (|z| <= 4.5, KS p >= 1e-4), sample size and seed, and each
shows that a wrong law is rejected.
"""
import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from sssn_verify.numeric.fields import (STATUS_NOT_PSD, STATUS_OK, correlated_normals, fill_normal,
                                        kernel_cholesky, mlp_preactivations, psd_cholesky, rng_state)
from sssn_verify.numeric.kernels import kernel


@njit(cache=False)  # test-local: never a stale cache of the engine code it calls
def _draw(seed, n):
    st = rng_state(seed)
    out = np.empty(n)
    fill_normal(st, out)
    return out


@njit(cache=False)  # test-local: never a stale cache of the engine code it calls
def _field(seed, B, d):
    st = rng_state(seed)
    n = B.shape[0]
    out = np.empty((n, d))
    correlated_normals(st, B, np.empty((n, d)), out)
    return out


def _factor(C, rtol=1e-13):
    B = np.zeros_like(C)
    status = psd_cholesky(np.ascontiguousarray(C), B, rtol)
    return status, B


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ziggurat_normals_are_standard_normal(seed):
    """2e5 draws: KS test, mean, variance, kurtosis and the 3.5-sigma tail (the ziggurat's
    base strip); a N(0, 1.02^2) sample of the same size is rejected by the variance test."""
    x = _draw(seed, 200_000)
    n = x.size
    assert stats.kstest(x, "norm").pvalue > 1e-4
    assert abs(x.mean()) <= 4.5 / math.sqrt(n)
    assert abs(x.var() - 1.0) <= 4.5 * math.sqrt(2.0 / n)
    assert abs(np.mean(x ** 4) - 3.0) <= 4.5 * math.sqrt(96.0 / n)
    tail = 2 * stats.norm.sf(3.5)
    assert abs(np.mean(np.abs(x) > 3.5) - tail) <= 4.5 * math.sqrt(tail / n)
    wrong = 1.02 * x
    assert abs(wrong.var() - 1.0) > 4.5 * math.sqrt(2.0 / n)


def test_streams_differ_by_seed_and_repeat_by_seed():
    assert np.array_equal(_draw(5, 100), _draw(5, 100))
    a, b = _draw(5, 10_000), _draw(6, 10_000)
    assert abs(np.corrcoef(a, b)[0, 1]) < 4.5 / 100


def test_positive_definite_matrix_is_factorised_exactly():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 12):
        M = rng.standard_normal((n, n))
        C = M @ M.T + 0.1 * np.eye(n)
        status, B = _factor(C)
        assert status == STATUS_OK
        assert np.allclose(B @ B.T, C, atol=1e-12 * np.abs(C).max())


def test_rank_deficient_matrices_are_stable():
    """Pre-activation covariances with N > d + 1 and identity-activation kernels are singular."""
    rng = np.random.default_rng(1)
    Y = rng.standard_normal((200, 4))
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    C = Y @ Y.T + 0.25  # rank 5
    status, B = _factor(C)
    assert status == STATUS_OK
    assert np.count_nonzero(np.abs(B).sum(axis=0)) == 5
    assert np.allclose(B @ B.T, C, atol=1e-11)


def test_coincident_points_get_identical_noise():
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((4, 3))
    Y = np.vstack([Y, Y[1:2], Y[3:4]])  # points 4, 5 duplicate points 1, 3
    C = Y @ Y.T + 1.0
    status, B = _factor(C)
    assert status == STATUS_OK
    assert np.array_equal(B[4], B[1]) and np.array_equal(B[5], B[3])
    G = _field(3, B, 7)
    assert np.array_equal(G[4], G[1]) and np.array_equal(G[5], G[3])


def test_not_positive_semidefinite_or_nan_is_reported():
    assert _factor(np.array([[1.0, 2.0], [2.0, 1.0]]))[0] == STATUS_NOT_PSD
    assert _factor(np.array([[1.0, np.nan], [np.nan, 1.0]]))[0] == STATUS_NOT_PSD
    assert _factor(np.array([[-1.0]]))[0] == STATUS_NOT_PSD


def test_tiny_pivot_is_clipped_at_the_documented_tolerance():
    """Two points with correlation 1 - 1e-15: the pivot 2e-15 is below 1e-13, so the second
    point copies the first (policy); at rtol = 1e-16 it is kept."""
    r = 1.0 - 1e-15
    C = np.array([[1.0, r], [r, 1.0]])
    _, B = _factor(C)
    assert B[1, 1] == 0.0 and B[1, 0] == pytest.approx(r)
    _, B = _factor(C, rtol=1e-16)
    assert B[1, 1] > 0.0


@pytest.mark.parametrize("sep", [1e-3, 1e-6, 1e-9, 1e-12])
def test_gap_form_keeps_the_noise_difference_of_near_coincident_tokens(sep):
    """Var(G(x) - G(y)) = 2 (k0 - K(rho)) = 2 gap(u), u = |x - y|^2 / 2, to relative 1e-6 even
    where the plain kernel matrix K(rho) loses it to rounding (the naive factor is shown wrong)."""
    kf = kernel("relu", 1.0, 0.5, 1.0)
    x = np.array([1.0, 0.0, 0.0])
    y = np.array([math.cos(sep), math.sin(sep), 0.0])
    u = 0.5 * np.sum((x - y) ** 2)
    g = kf.gap(u)
    G = np.array([[0.0, g], [g, 0.0]])
    B = np.zeros((2, 2))
    assert kernel_cholesky(kf.k0, G, np.zeros((2, 2)), B, 1e-13) == STATUS_OK
    var_diff = np.sum((B[0] - B[1]) ** 2)
    assert abs(var_diff - 2 * g) <= 1e-6 * 2 * g
    # the naive route through K(rho) = k0 - g cannot resolve it at small separations
    K = np.array([[kf.k0, kf.k0 - g], [kf.k0 - g, kf.k0]])
    _, Bn = _factor(K)
    naive = np.sum((Bn[0] - Bn[1]) ** 2)
    if sep <= 1e-9:
        assert abs(naive - 2 * g) > 0.5 * 2 * g


def test_field_covariance_matches_kernel_matrix():
    """Empirical covariance of the field at 3 points (20000 draws, d = 1) vs K(<x_i, x_j>):
    z-tests |z| <= 4.5 per entry; the kernel with sigma_a scaled by 1.1 is rejected."""
    kf = kernel("relu", 1.0, 0.5, 1.0)
    X = np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0, 0, 1.0]])
    gram = X @ X.T
    Kmat = kf.matrix(gram)
    G = np.array([[kf.gap(1 - min(gram[i, j], 1.0)) if i != j else 0.0 for j in range(3)]
                  for i in range(3)])
    B = np.zeros((3, 3))
    kernel_cholesky(kf.k0, G, np.zeros((3, 3)), B, 1e-13)
    n = 20_000
    samples = np.stack([_field(s, B, 1)[:, 0] for s in range(n)])
    emp = samples.T @ samples / n
    se = np.sqrt((np.outer(np.diag(Kmat), np.diag(Kmat)) + Kmat ** 2) / n)
    assert np.all(np.abs(emp - Kmat) <= 4.5 * se)
    assert np.any(np.abs(emp - 1.21 * Kmat) > 4.5 * se)


@njit(cache=False)  # test-local: never a stale cache of the engine code it calls
def _preacts(seed, Y, bias, sw, sb, m):
    st = rng_state(seed)
    s0 = st[0]
    n, d = Y.shape
    Z = np.empty((n, m))
    code = mlp_preactivations(st, Y, bias, sw, sb, True, Z, np.empty((n, n)), np.empty((n, n)),
                              np.empty((n, m)), np.empty((1, 1)), np.empty(1), 1e-13)
    return code, Z, s0, st[0]


def test_rank_deficient_exact_preactivations_draw_rank_rows_and_keep_the_law():
    """N = 7 tokens in d = 2 (with the bias: rank 3): the exact pre-activations consume about
    3 m words of the generator (not 7 m; counted from the SplitMix64 state, which advances by a
    constant per word), and their covariance matches sw^2 <y_i, y_j> + sb^2 over 40000 i.i.d.
    columns (each of the 28 entries |z| <= 4.5); sb = 0.6 instead of 0.5 is rejected."""
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((7, 2))
    Y /= np.linalg.norm(Y, axis=1)[:, None]
    bias = np.ones(7)
    sw, sb, m = 1.0, 0.5, 4000
    golden_inv = pow(0x9E3779B97F4A7C15, -1, 1 << 64)
    cols = []
    for seed in range(10):
        code, Z, s0, s1 = _preacts(seed, Y, bias, sw, sb, m)
        assert code == STATUS_OK
        words = ((int(s1) - int(s0)) * golden_inv) % (1 << 64)
        assert 3 * m <= words <= 3 * m * 1.05, words
        cols.append(Z)
    Z = np.concatenate(cols, axis=1)
    target = sw ** 2 * Y @ Y.T + sb ** 2
    emp = Z @ Z.T / Z.shape[1]
    se = np.sqrt((np.outer(np.diag(target), np.diag(target)) + target ** 2) / Z.shape[1])
    iu = np.triu_indices(7)
    assert np.max(np.abs((emp - target) / se)[iu]) <= 4.5
    wrong = sw ** 2 * Y @ Y.T + 0.6 ** 2
    assert np.max(np.abs((emp - wrong) / se)[iu]) > 4.5
