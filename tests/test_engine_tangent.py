"""Tangent flow (Benettin): reproducibility, exact Jacobians, the top Lyapunov exponent.

Statistical tests: |z| <= 4.5 with the reported standard error; the oracle is the team's
hand-derived ReLU formula lambda_1 = -(sa^2/4)(2 sw^2 + (d-1) sb^2) (used only as a test
oracle); the wrong variants (d-2 for d-1, flipped sign, missing factor 2) are rejected.
"""
import math

import numba
import numpy as np
import pytest
from numba import njit

from sssn_verify import ModelParams, ParameterError
from sssn_verify.engine import lyapunov_tangent, tangent_initial
from sssn_verify.numeric.fields import mlp_outputs, mlp_preactivations, rng_state
from sssn_verify.numeric.sphere import push

Z_CRIT = 4.5


def _lambda1(d, sw, sb, sa):
    return -(sa ** 2 / 4) * (2 * sw ** 2 + (d - 1) * sb ** 2)


def test_reproducible_and_thread_independent():
    p = ModelParams(d=4, n_tokens=1, horizon=2.0, V=0.0, sigma_b=0.5)
    kw = dict(model="transformer", depth=40, width=32, n_paths=5, seed=3, progress=False)
    a = lyapunov_tangent(p, **kw)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        b = lyapunov_tangent(p, **kw)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(a.rates, b.rates) and a.rates.shape == (5,)
    assert a.running.shape == (5, 41) and np.allclose(a.running[:, -1], a.log_growth)
    assert np.isfinite(a.stderr) and a.stderr > 0
    assert np.allclose(np.linalg.norm(a.tokens, axis=1), 1.0, atol=1e-12)


def test_projection_jacobian_matches_finite_differences():
    rng = np.random.default_rng(0)
    z, dz = rng.standard_normal(5), rng.standard_normal(5)
    eps = 1e-6
    fd = ((z + eps * dz) / np.linalg.norm(z + eps * dz) - (z - eps * dz) / np.linalg.norm(z - eps * dz)) / (2 * eps)
    a, b = z.copy(), dz.copy()[None, :]
    push(a, b)
    assert np.allclose(a, z / np.linalg.norm(z)) and np.allclose(b[0], fd, atol=1e-8)


@njit(cache=False)  # test-local: never a stale cache of the engine code it calls
def _mlp_pair(seed, rows, bias, m, exact_pre, exact_out):
    """(F(y), J_F(y) v) for rows (y, v) (tanh) or F at rows (y+eps v, y-eps v): same weights."""
    st = rng_state(seed)
    n, d = rows.shape
    Z = np.empty((n, m))
    C = np.empty((n, n))
    L = np.empty((n, n))
    mlp_preactivations(st, rows, bias, 1.0, 0.5, exact_pre, Z, C, L, np.empty((n, m)),
                       np.empty((d, m)), np.empty(m), 1e-13)
    if bias[1] == 0.0:
        for k in range(m):
            z = Z[0, k]
            Z[1, k] = (1.0 - math.tanh(z) ** 2) * Z[1, k]
            Z[0, k] = math.tanh(z)
    else:
        for i in range(n):
            for k in range(m):
                Z[i, k] = math.tanh(Z[i, k])
    out = np.empty((n, d))
    mlp_outputs(st, Z, 1.0, exact_out, out, C, L, np.empty((n, d)), np.empty((m, d)), 1e-13)
    return out


def test_literal_mlp_jacobian_action_is_exact():
    """Literal weights: J_F(y) v equals the central difference of F with the same weights."""
    rng = np.random.default_rng(1)
    y = rng.standard_normal(6)
    y /= np.linalg.norm(y)
    v = rng.standard_normal(6)
    eps = 1e-5
    jac = _mlp_pair(7, np.stack([y, v]), np.array([1.0, 0.0]), 40, False, False)
    pm = _mlp_pair(7, np.stack([y + eps * v, y - eps * v]), np.array([1.0, 1.0]), 40, False, False)
    assert np.allclose(jac[1], (pm[0] - pm[1]) / (2 * eps), atol=1e-8)


def test_exact_in_law_jacobian_has_the_law_of_the_literal_one():
    """Moments of (F_1, (J_F v)_1, F_1 (J_F v)_1, (J_F v)_1^2) over 6000 draws, exact vs literal:
    |z| <= 4.5; a literal pair at sigma_b = 1.5 (different law) is rejected."""
    rng = np.random.default_rng(2)
    y = rng.standard_normal(5)
    y /= np.linalg.norm(y)
    v = rng.standard_normal(5) * 0.7
    rows, bias = np.stack([y, v]), np.array([1.0, 0.0])

    def stats(exact, seed0):
        out = np.array([_mlp_pair(seed0 + s, rows, bias, 3, exact, exact)[:, 0] for s in range(6000)])
        return np.stack([out[:, 0], out[:, 1], out[:, 0] * out[:, 1], out[:, 1] ** 2, out[:, 0] ** 4], 1)

    a, b = stats(True, 0), stats(False, 10_000)
    z = (a.mean(0) - b.mean(0)) / np.sqrt(a.var(0) / len(a) + b.var(0) / len(b))
    assert np.all(np.abs(z) <= Z_CRIT), z
    # a different law (v scaled by 1.3) must be detected by the same statistics
    rows2 = np.stack([y, 1.3 * v])
    out = np.array([_mlp_pair(20_000 + s, rows2, bias, 3, False, False)[:, 0] for s in range(6000)])
    c = np.stack([out[:, 0], out[:, 1], out[:, 0] * out[:, 1], out[:, 1] ** 2, out[:, 0] ** 4], 1)
    z_bad = (a.mean(0) - c.mean(0)) / np.sqrt(a.var(0) / len(a) + c.var(0) / len(c))
    assert np.max(np.abs(z_bad)) > Z_CRIT


@pytest.mark.parametrize("model,width,paths", [("sde", None, 400), ("gaussian", None, 400),
                                               ("transformer", 16, 200)])
def test_lyapunov_exponent_matches_relu_formula(model, width, paths):
    """ReLU, d = 5, sw = sb = 1: lambda_1 = -1.5.  T = 10, delta = 0.01; |rate - lambda_1| <=
    4.5 se + 0.03 (the O(delta) discretisation allowance), wrong variants rejected."""
    d, sw, sb, sa = 5, 1.0, 1.0, 1.0
    p = ModelParams(d=d, n_tokens=1, horizon=10.0, V=0.0, sigma_w=sw, sigma_b=sb, sigma_a=sa)
    r = lyapunov_tangent(p, model=model, depth=1000, width=width, n_paths=paths, seed=11, progress=False)
    tol = Z_CRIT * r.stderr + 0.03
    assert abs(r.rate - _lambda1(d, sw, sb, sa)) <= tol, (r.rate, r.stderr)
    for wrong in (_lambda1(d - 1, sw, sb, sa), -_lambda1(d, sw, sb, sa), 2 * _lambda1(d, sw, sb, sa)):
        assert abs(r.rate - wrong) > tol


def test_bad_inputs():
    p = ModelParams(d=3, n_tokens=1, activation="heaviside")
    with pytest.raises(ParameterError, match="jump"):
        lyapunov_tangent(p, model="gaussian", depth=2, n_paths=2)
    with pytest.raises(ParameterError):
        lyapunov_tangent(p, model="nope", depth=2)
    with pytest.raises(ParameterError):
        lyapunov_tangent(p, model="transformer", depth=2)  # width missing
    x0, v0 = tangent_initial(ModelParams(d=3, n_tokens=1), 4, 0, init=[0, 0, 2.0], tangent=[1.0, 0, 5.0])
    assert np.allclose(x0, [0, 0, 1]) and np.allclose(v0, [1, 0, 0])
    with pytest.raises(ParameterError):
        tangent_initial(ModelParams(d=3, n_tokens=1), 2, 0, init=[0, 0, 1.0], tangent=[0, 0, 1.0])
