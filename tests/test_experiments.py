"""numeric/experiments.py: the one Monte Carlo harness (Richardson, accumulator, control variates,
thread independence) and a model added as one file plus one registry line (``fixed_kernel``),
simulated and checked by every claim whose statement applies to it."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from sssn_verify.numeric import experiments as ex
from sssn_verify.numeric.rng import Key
from sssn_verify.params import ModelParams


def test_richardson_weights_cancel_the_powers_of_the_step():
    assert np.allclose(ex.richardson_weights(2), [-1.0, 2.0])
    assert np.allclose(ex.richardson_weights(3), np.array([1.0, -6.0, 8.0]) / 3.0)
    w = ex.richardson_weights(4)
    steps = 2.0 ** -np.arange(4)
    for j in range(1, 4):
        assert abs(w @ steps ** j) < 1e-13


def test_merge_blocks_equals_the_moments_of_all_paths():
    x = np.random.default_rng(0).standard_normal((10_000, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 2.0]])
    x += 5.0
    counts = ex.block_counts(x.shape[0])
    edges = np.concatenate([[0], np.cumsum(counts).astype(int)])
    mean = np.array([x[a:b].mean(axis=0) for a, b in zip(edges[:-1], edges[1:])])
    m2 = np.array([((x[a:b] - x[a:b].mean(axis=0)) ** 2).sum(axis=0) for a, b in zip(edges[:-1], edges[1:])])
    cm = np.array([np.cov(x[a:b, 1:].T, ddof=0) * (b - a) for a, b in zip(edges[:-1], edges[1:])])
    tot, sd, n, cov = ex.merge_blocks(counts, mean, m2, cm)
    assert n == x.shape[0]
    assert np.allclose(tot, x.mean(axis=0), rtol=1e-13)
    assert np.allclose(sd, x.std(axis=0, ddof=1), rtol=1e-12)
    assert np.allclose(cov, np.cov(x[:, 1:].T), rtol=1e-12)


def test_welford_equals_numpy():
    x = np.random.default_rng(1).standard_normal((500, 4)) + 3.0
    mean, m2, cm = np.zeros(4), np.zeros(4), np.zeros((2, 2))
    for i in range(x.shape[0]):
        ex.welford(mean, m2, cm, i + 1.0, x[i])
    assert np.allclose(mean, x.mean(axis=0), rtol=1e-13)
    assert np.allclose(m2 / 499, x.var(axis=0, ddof=1), rtol=1e-12)
    assert np.allclose(cm / 499, np.cov(x[:, 2:].T), rtol=1e-12)


def test_cross_fit_keeps_the_mean_and_removes_the_controls_variance():
    rng = np.random.default_rng(2)
    c = rng.standard_normal((40_000, 2))
    y = 1.0 + 0.1 * rng.standard_normal(40_000) + c @ np.array([3.0, -2.0])
    adj = ex.cross_fit(y, c)
    assert abs(adj.mean() - 1.0) < 4 * 0.1 / np.sqrt(y.size)
    assert adj.std() < 0.11 and y.std() > 3


def test_tangent_layer_is_thread_independent():
    import numba
    p = ModelParams(d=4, activation="tanh", sigma_w=1.2, sigma_b=0.3, sigma_a=1.0, V=0.0, n_tokens=1)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = ex.tangent_layer("gaussian", p, 1e-3, 3 * ex.BLOCK + 17, Key(5).child("test"), n_vectors=3, qr=True)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        b = ex.tangent_layer("gaussian", p, 1e-3, 3 * ex.BLOCK + 17, Key(5).child("test"), n_vectors=3, qr=True)
    finally:
        numba.set_num_threads(before)
    assert a.mean == b.mean and a.sd == b.sd and np.array_equal(a.cov, b.cov)
    c = ex.tangent_layer("gaussian", p, 1e-3, 3 * ex.BLOCK + 17, Key(5).child("other"), n_vectors=3, qr=True)
    assert c.mean != a.mean


def test_pair_layer_is_thread_independent_and_its_controls_have_mean_zero():
    import numba
    from sssn_verify.numeric.kernels import kernel
    from sssn_verify.numeric.layer_rates import two_tokens
    kf = kernel("tanh", 1.2, 0.3, 1.0)
    X = two_tokens(3, 0.3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a, ca = ex.pair_layer("gaussian", kf, X, "energy", 2 * ex.BLOCK + 5, Key(7).child("test"), 1e-3, beta=2.0)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        b, cb = ex.pair_layer("gaussian", kf, X, "energy", 2 * ex.BLOCK + 5, Key(7).child("test"), 1e-3, beta=2.0)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(a, b) and np.array_equal(ca, cb)
    # the whitened normals' controls: mean 0, and Z^2 - 1 summed over the d - 2 = 1 other coordinates has
    # variance 2 (independent of the statistic's law); z-tests at 0.001 over the 9 controls
    _, c = ex.pair_layer("gaussian", kf, X, "energy", 60_000, Key(7).child("controls"), 1e-3, beta=2.0)
    z = c.mean(axis=0) / (c.std(axis=0, ddof=1) / np.sqrt(c.shape[0]))
    assert np.all(np.abs(z) < 3.9), z
    assert c[:, 2].var() == pytest.approx(2.0, rel=0.05)


def test_slicing_the_blocks_never_changes_a_number(monkeypatch):
    """Issue 22: the harness calls its kernel on slices of blocks (Ctrl-C is seen between two calls);
    each block owns its generator state and rows, so all blocks in one call and one block per call
    give the same bits (tangent: moments; pair: per-path rates and controls, two and three tokens)."""
    from sssn_verify.numeric.kernels import kernel
    from sssn_verify.numeric.layer_rates import two_tokens
    p = ModelParams(d=4, activation="tanh", sigma_w=1.2, sigma_b=0.3, sigma_a=1.0, V=0.0, n_tokens=1)
    kf = kernel("tanh", 1.2, 0.3, 1.0)
    X3 = np.vstack([two_tokens(3, 0.3), [[0.0, 0.0, 1.0]]])
    runs = []
    for slicing in (lambda call, n: call(0, n), lambda call, n: [call(a, a + 1) for a in range(n)],
                    lambda call, n: [call(a, min(n, a + 2)) for a in range(0, n, 2)]):
        monkeypatch.setattr(ex, "run_sliced", slicing)
        t = ex.tangent_layer("gaussian", p, 1e-3, 3 * ex.BLOCK + 17, Key(5).child("test"), n_vectors=3, qr=True)
        two = ex.pair_layer("gaussian", kf, two_tokens(3, 0.3), "energy", 3 * ex.BLOCK + 5, Key(7).child("t"), 1e-3)
        three = ex.pair_layer("gaussian", kf, X3, "quadratic", 2 * ex.BLOCK + 9, Key(7).child("t"), 1e-3,
                              a=np.array([1.0, 0.5, 0.0]))
        runs.append((t, two, three))
    (t0, two0, three0), rest = runs[0], runs[1:]
    assert two0[1].shape == (3 * ex.BLOCK + 5, ex.N_CONTROLS) and three0[1].shape[0] == 0
    for t, two, three in rest:
        assert t.mean == t0.mean and t.sd == t0.sd and np.array_equal(t.cov, t0.cov)
        assert all(np.array_equal(x, y) for x, y in zip(two + three, two0 + three0))


# ----------------------------------------------------------------------------- a new model: one file + one line
def test_the_fixed_kernel_model_is_registered_and_simulated():
    from sssn_verify.engine import simulate
    from sssn_verify.numeric.models import MODELS, REGISTRY
    assert REGISTRY["fixed_kernel"] == "fixed_kernel" and MODELS["fixed_kernel"].field
    p = ModelParams(d=3, n_tokens=4, sigma_a=1.3, V=0.0, horizon=0.5)
    consts = ex.model_constants("fixed_kernel", p)
    from sssn_verify.numeric.kernels import _kernel_array
    rho = np.linspace(-1, 1, 101)
    assert np.allclose(_kernel_array(consts.table, rho), 1.69 * (rho + rho ** 3) / 2, atol=1e-12)
    assert (consts.k0, consts.k1) == pytest.approx((1.69, 3.38))
    r = simulate("fixed_kernel", p, depth=20, n_paths=8, seed=0, progress=False)
    assert np.all(np.isfinite(r.energy)) and np.allclose(np.linalg.norm(r.tokens, axis=-1), 1.0)
    assert np.all(r.energy[:, -1] != r.energy[:, 0])          # the noise moved the tokens
    # one exact layer of it, as the pair experiment runs it (antithetic, three levels)
    A, cv = ex.pair_layer("fixed_kernel", consts, np.eye(3)[:2], "energy", 1000, Key(0).child("test"), 1e-3)
    assert A.shape == (1000, 3) and cv.shape == (1000, ex.N_CONTROLS) and np.all(np.isfinite(A))


# budgets that keep each applicable claim's model-generic evidence small (the model named by "models")
SMALL = {
    "lyapunov": {"n_configs": 0, "n_one_step": 3, "one_step_paths": 200_000},
    "ito_drift": {"n_configs": 0, "n_one_step": 2, "one_step_paths": 200_000},
    "lyapunov_spectrum": {"n_configs": 2, "n_engine_configs": 0, "paths": 100_000},
    "spde_weak_form": {"n_configs": 2, "paths": 20_000},
    "two_point": {"n_configs": 1, "samples": 20_000},
    "dissipation": {"n_configs": 1, "paths": 20_000, "paths_bound": 2000},
    "coercivity": {"n_activations": 1, "n_sigmas": 1, "n_mc": 2, "paths": 4000},
}


def test_every_applicable_claim_runs_on_the_new_model_and_passes():
    from sssn_verify.claims import CLAIMS
    ran = []
    for name, claim in CLAIMS.items():
        declared = getattr(sys.modules[claim.checker.__module__], "MODELS_APPLY", None)
        if declared is None or "fixed_kernel" not in ex.models_where(**declared):
            continue
        res = claim.run("quick", 0, budget={**SMALL[name], "models": ("fixed_kernel",)})
        assert res.passed, (name, [c.to_dict() for c in res.checks])
        labels = [p["name"] for c in res.checks for p in c.details.get("points", [])]
        assert any("fixed_kernel" in s for s in labels), (name, labels)
        ran.append(name)
    assert set(ran) == set(SMALL)
    # and the evidence has power there: lambda_1 with (d-2) k1 for (d-3) k1 is rejected on the new model
    bad = CLAIMS["lyapunov"].run("quick", 0, level=1 - 1e-4, budget={**SMALL["lyapunov"], "models": ("fixed_kernel",)},
                                 formula=lambda d, k0, k1: ((d - 2) * k1 - (d - 1) * k0) / 2)
    assert not bad.passed


def test_a_five_percent_error_in_the_two_point_diffusion_is_rejected_on_the_new_model():
    """two_point on fixed_kernel (20k paths per overlap; a states min_detectable ~4 % there at this level): the squared
    diffusion 2.1 (1 - rho^2)(k0 - rho K) for 2 (1 - rho^2)(k0 - rho K) is rejected at level 1 - 1e-4, the derived
    one accepted, both read off the model's own kernel (K = sa^2 (rho + rho^3) / 2, not an activation's)."""
    from dataclasses import replace
    from sssn_verify.claims import CLAIMS
    from sssn_verify.claims.two_point import derived_formula
    f = derived_formula()
    budget = {**SMALL["two_point"], "models": ("fixed_kernel",)}
    good = CLAIMS["two_point"].run("quick", 0, level=1 - 1e-4, budget=budget)
    (check,) = good.checks
    a_points = [p for p in check.details["points"] if p["name"].startswith("a(")]
    assert good.passed and len(a_points) == 3 and all(p["min_detectable"] < 0.05 for p in a_points)
    sa = 1.0                                            # the configuration's sigma_a: K(-0.5) = -0.3125
    assert [p for p in check.details["points"] if p["name"] == "b(-0.5) (fixed_kernel)"][0]["expected"] == \
        pytest.approx(f.b(3, -0.5, sa ** 2, sa ** 2 * (-0.5 - 0.125) / 2), rel=1e-12)
    bad = CLAIMS["two_point"].run("quick", 0, level=1 - 1e-4, budget=budget,
                                  formula=replace(f, a=lambda *x: 1.05 * f.a(*x)))
    assert not bad.passed
