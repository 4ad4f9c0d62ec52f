"""The finite-width transformer: reproducibility, robustness, agreement with numpy, Ito drift.

Statistical tests state their level (two-sided z with |z| <= 4.5, i.e. about 7e-6 per
test), sample size and seeds; each one also shows that a wrong formula is rejected.
"""
import math

import numba
import numpy as np
import pytest

from sssn_verify import ModelParams, ParameterError, SimulationError
from sssn_verify.engine import initial_tokens, simulate_transformer

Z_CRIT = 4.5


def numpy_reference(params, X0, depth, width, rng, sa_factor=1.0):
    """Plain numpy transformer with literal Gaussian weights (independent of the engine)."""
    X = np.array(X0, dtype=float)
    P, N, d = X.shape
    delta = params.horizon / depth
    phi = params.activation.numpy
    for _ in range(depth):
        if params.attention_on:
            s = params.beta * np.einsum("pia,pja->pij", X @ params.Q.T, X @ params.K.T)
            s -= s.max(axis=-1, keepdims=True)
            w = np.exp(s)
            w /= w.sum(axis=-1, keepdims=True)
            Y = X + delta * (w @ (X @ params.V.T))
            Y /= np.linalg.norm(Y, axis=-1, keepdims=True)
        else:
            Y = X
        W = rng.standard_normal((P, d, width)) * params.sigma_w
        b = rng.standard_normal((P, 1, width)) * params.sigma_b
        A = rng.standard_normal((P, width, d)) * params.sigma_a * sa_factor
        H = phi(Y @ W + b)
        Z = Y + math.sqrt(delta) * (H @ A) / math.sqrt(width)
        X = Z / np.linalg.norm(Z, axis=-1, keepdims=True)
    return X


def _stats(X, X0):
    """Per-path statistics: x_1[0], <x_1, x_2>, |D_1|^2, |D_2|^2, <D_1, D_3> with D = X - X0."""
    D = X - X0
    return np.stack([X[:, 0, 0], np.sum(X[:, 0] * X[:, 1], -1), np.sum(D[:, 0] ** 2, -1),
                     np.sum(D[:, 1] ** 2, -1), np.sum(D[:, 0] * D[:, 2], -1)], 1)


def _welch_z(a, b):
    return (a.mean(0) - b.mean(0)) / np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))


PARAMS = ModelParams(d=4, n_tokens=3, horizon=1.0, beta=2.0, sigma_w=1.0, sigma_b=0.5, sigma_a=1.0)


def test_same_seed_is_bit_identical_across_runs_threads_and_chunks():
    kw = dict(depth=6, width=32, n_paths=9, seed=11)
    ref = simulate_transformer(PARAMS, **kw, progress=False)
    again = simulate_transformer(PARAMS, **kw, progress=False)
    chunked = simulate_transformer(PARAMS, **kw, progress=True)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = simulate_transformer(PARAMS, **kw, progress=False)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = simulate_transformer(PARAMS, **kw, progress=False)
    finally:
        numba.set_num_threads(old)
    for other in (again, chunked, one, two):
        assert np.array_equal(ref.tokens, other.tokens)
        assert np.array_equal(ref.energy, other.energy)
    other_seed = simulate_transformer(PARAMS, **{**kw, "seed": 12}, progress=False)
    assert not np.array_equal(ref.tokens, other_seed.tokens)
    # different paths are different (independent streams)
    assert len({tuple(np.round(t.ravel(), 12)) for t in ref.tokens}) == kw["n_paths"]


def test_tokens_stay_on_the_sphere_for_ten_thousand_layers():
    p = ModelParams(d=3, n_tokens=3, horizon=50.0, beta=1.0, sigma_b=0.3)
    res = simulate_transformer(p, depth=10_000, width=8, n_paths=2, seed=3, progress=False)
    assert np.max(np.abs(np.linalg.norm(res.tokens, axis=-1) - 1.0)) < 1e-12
    assert np.all(np.isfinite(res.energy)) and res.energy.shape == (2, 10_001)


def test_large_beta_softmax_does_not_overflow_and_matches_numpy_deterministically():
    # sigma_a = 0 switches the MLP noise off: the layer map is deterministic attention
    for beta in (0.0, 3.0, 1e4):
        p = PARAMS.with_(beta=beta, sigma_a=0.0, Q=np.diag([1.0, 2.0, 0.5, 1.0]), V=0.7)
        res = simulate_transformer(p, depth=5, width=4, n_paths=2, seed=5, progress=False)
        ref = numpy_reference(p, res.init, 5, 4, np.random.default_rng(0))
        assert np.all(np.isfinite(res.tokens))
        assert np.max(np.abs(res.tokens - ref)) < 1e-12


def test_energy_is_e0_after_every_layer():
    res = simulate_transformer(PARAMS, depth=4, width=16, n_paths=3, seed=2, betas=(0.0, 2.0),
                               store_every=1, progress=False)
    X = res.trajectory
    gram = np.einsum("plia,plja->plij", X, X)
    e0 = 0.5 * np.mean(1.0 - gram, axis=(-1, -2))
    e2 = np.mean(np.exp(2.0) - np.exp(2.0 * gram), axis=(-1, -2)) / 4.0
    assert np.allclose(res.energy, e0, atol=1e-14)
    assert np.allclose(res.energies[..., 0], e0, atol=1e-14)
    assert np.allclose(res.energies[..., 1], e2, rtol=1e-10, atol=1e-13)
    assert np.array_equal(res.trajectory[:, -1], res.tokens)


def test_blow_up_raises_simulation_error_naming_layer_and_parameters():
    p = PARAMS.with_(sigma_a=1.0)
    object.__setattr__(p, "sigma_a", 1e200)   # past ModelParams' documented limit: the engine's own guard
    with pytest.raises(SimulationError, match=r"layer 1 .*sigma_a=1e\+200"):
        simulate_transformer(p, depth=3, width=8, n_paths=2, seed=0, progress=False)


@pytest.mark.parametrize("kw", [dict(depth=0), dict(width=0), dict(n_paths=0), dict(mode="fast"),
                                dict(init=np.zeros((3, 4))), dict(init=np.ones((2, 4))),
                                dict(betas=(-1.0,))])
def test_bad_arguments_raise_parameter_error(kw):
    args = dict(depth=2, width=4, n_paths=1, seed=0, progress=False)
    args.update(kw)
    with pytest.raises(ParameterError):
        simulate_transformer(PARAMS, **args)


def test_init_is_used_and_projected():
    init = np.array([[2.0, 0, 0, 0], [0, 3.0, 0, 0], [1.0, 1.0, 0, 0]])
    res = simulate_transformer(PARAMS, depth=1, width=4, n_paths=2, seed=0, init=init, progress=False)
    assert np.allclose(res.init[0], init / np.linalg.norm(init, axis=1, keepdims=True))
    assert np.allclose(initial_tokens(PARAMS, 2, 0, init), res.init)


@pytest.mark.parametrize("mode", ["exact", "literal"])
def test_one_layer_statistics_match_numpy_reference(mode):
    """Two-sample z-tests (|z| <= 4.5 each, 5 statistics) engine vs plain numpy; 4000 paths.

    The same test rejects a numpy reference with sigma_a off by 25 percent.
    """
    p = PARAMS.with_(horizon=0.5)
    n = 4000
    init = initial_tokens(p, 1, 99)[0]
    res = simulate_transformer(p, depth=1, width=6, n_paths=n, seed=21, init=init, mode=mode,
                               progress=False)
    ref = numpy_reference(p, np.broadcast_to(init, (n, 3, 4)), 1, 6, np.random.default_rng(22))
    wrong = numpy_reference(p, np.broadcast_to(init, (n, 3, 4)), 1, 6, np.random.default_rng(23),
                            sa_factor=1.25)
    z_ok = _welch_z(_stats(res.tokens, init), _stats(ref, init))
    z_bad = _welch_z(_stats(res.tokens, init), _stats(wrong, init))
    assert np.all(np.abs(z_ok) <= Z_CRIT), z_ok
    assert np.max(np.abs(z_bad)) > Z_CRIT, z_bad


def test_exact_in_law_and_literal_modes_agree_in_distribution():
    """Moments of the 2-layer output, 4000 paths each, exact vs literal (|z| <= 4.5 each)."""
    init = initial_tokens(PARAMS, 1, 7)[0]
    kw = dict(depth=2, width=5, n_paths=4000, init=init, progress=False)
    a = _stats(simulate_transformer(PARAMS, seed=1, mode="exact", **kw).tokens, init)
    b = _stats(simulate_transformer(PARAMS, seed=2, mode="literal", **kw).tokens, init)
    c = _stats(simulate_transformer(PARAMS.with_(sigma_b=1.0), seed=3, mode="literal", **kw).tokens,
               init)
    assert np.all(np.abs(_welch_z(a, b)) <= Z_CRIT)
    assert np.max(np.abs(_welch_z(a, c))) > Z_CRIT


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_layer_radial_displacement_is_the_ito_drift(seed):
    """E<x' - x, x> / delta -> -(d-1) k0 / 2 (noise only, ReLU k0 = sa^2 (sw^2 + sb^2) / 2).

    delta = 1e-4 (bias O(delta)), 20000 one-token paths, |z| <= 4.5; the wrong variants
    d-2 for d-1, a missing factor 1/2, and a flipped sign are rejected by the same test.
    """
    d = 5
    p = ModelParams(d=d, n_tokens=1, horizon=1e-4, V=0.0, sigma_w=1.0, sigma_b=0.5, sigma_a=1.0)
    k0 = p.sigma_a ** 2 * (p.sigma_w ** 2 + p.sigma_b ** 2) / 2  # oracle (team conventions)
    res = simulate_transformer(p, depth=1, width=64, n_paths=20_000, seed=seed, progress=False)
    x0, x1 = res.init[:, 0], res.tokens[:, 0]
    radial = np.sum((x1 - x0) * x0, axis=-1) / p.horizon
    se = radial.std(ddof=1) / math.sqrt(radial.size)
    right = -(d - 1) * k0 / 2
    assert abs(radial.mean() - right) <= Z_CRIT * se
    for wrong in (-(d - 2) * k0 / 2, -(d - 1) * k0, (d - 1) * k0 / 2):
        assert abs(radial.mean() - wrong) > Z_CRIT * se


def test_vectorisable_exp_is_accurate_on_the_softmax_range():
    from sssn_verify.numeric.attention import exp_nonpositive
    x = -np.concatenate([np.linspace(0, 700, 20001), np.random.default_rng(0).exponential(3.0, 5000)])
    got = np.array([exp_nonpositive(t) for t in x])
    assert np.max(np.abs(got / np.exp(x) - 1)) < 1e-15
    assert exp_nonpositive(-800.0) == 0.0 and exp_nonpositive(0.0) == 1.0


def test_energies_at_large_beta_and_at_synchronization():
    from sssn_verify.numeric.observables import energies_numpy, energy_beta, energy_beta_scaled
    X = np.tile(np.array([[0.6, 0.8, 0.0]]), (4, 1))
    assert energy_beta(X, 1e4) == 0.0 and energy_beta(X, 0.0) == 0.0
    Y = np.array([[1.0, 0, 0], [0, 1.0, 0], [0.6, 0.8, 0]])
    assert energy_beta(Y, 3.0) == pytest.approx(energies_numpy(Y, 3.0), rel=1e-13)
    assert energy_beta(Y, 0.0) == pytest.approx(energies_numpy(Y, 0.0), rel=1e-13)
    assert np.isfinite(energy_beta_scaled(Y, 1e4)) and energy_beta_scaled(Y, 1e4) > 0


@pytest.mark.parametrize("beta", [0.0, 5e-324, 1e-310, 1e-300, 1e-8, 1e-3, 0.7])
def test_energy_beta_at_tiny_and_subnormal_beta(beta):
    """E_beta -> E_0 as beta -> 0, with full accuracy down to subnormal beta: against mpmath at 60
    digits of (1/(2 beta N^2)) sum_ij e^{beta g_ij} expm1(beta (1 - g_ij)), g = <x_i, x_j> (E_0 at beta = 0)."""
    import mpmath
    from sssn_verify.numeric.observables import energies_numpy, energy_beta, energy_beta_scaled
    Y = np.array([[1.0, 0, 0], [0, 1.0, 0], [0.6, 0.8, 0], [0.0, 0.6, -0.8]])
    with mpmath.workdps(60):
        G = [[mpmath.fsum(mpmath.mpf(a) * mpmath.mpf(b) for a, b in zip(x, y)) for y in Y] for x in Y]
        n2 = len(Y) ** 2
        if beta == 0.0:
            ref = mpmath.fsum(1 - g for row in G for g in row) / (2 * n2)
        else:
            b = mpmath.mpf(beta)
            ref = mpmath.fsum(mpmath.exp(b * g) * mpmath.expm1(b * (1 - g)) for row in G for g in row) / (2 * b * n2)
        ref_scaled = ref * mpmath.exp(-mpmath.mpf(beta))
    assert energy_beta(Y, beta) == pytest.approx(float(ref), rel=1e-14)
    assert energy_beta_scaled(Y, beta) == pytest.approx(float(ref_scaled), rel=1e-14)
    assert energies_numpy(Y, beta) == pytest.approx(float(ref), rel=1e-14)


def test_parallel_kernels_run_blas_on_one_thread_and_restore_it():
    """While the path-parallel kernels run, every OpenBLAS in the process is set to one thread
    (no oversubscription: numba's threads already cover the cores); the counts come back after."""
    import scipy.linalg.cython_blas  # noqa: F401  (numba's np.dot goes through it)
    from sssn_verify.numeric.blas_threads import _controls, single_threaded_blas
    try:
        with open("/proc/self/maps") as fh:
            loaded = any("openblas" in line.lower() for line in fh)
    except OSError:  # not Linux: the helper finds nothing and changes nothing
        loaded = False
    controls = _controls()
    assert bool(controls) == loaded
    saved = [g() for g, _ in controls]
    try:
        for _, set_threads in controls:   # a count other than one (tests/conftest.py starts BLAS on one thread)
            set_threads(2)
        before = [g() for g, _ in controls]
        assert all(n == 2 for n in before)
        with single_threaded_blas():
            assert all(g() == 1 for g, _ in controls)
        assert [g() for g, _ in controls] == before
        with single_threaded_blas(False):
            assert [g() for g, _ in controls] == before
    finally:
        for (_, set_threads), n in zip(controls, saved):
            set_threads(n)
