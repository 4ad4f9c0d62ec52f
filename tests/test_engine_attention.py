"""Multi-head attention through the model seam, and the k-vector tangent flow.

A_i(X) = sum_h V_h sum_j softmax_j(beta <Q_h x_i, K_h x_j>) x_j, checked against an
independent plain-numpy implementation: exactly (one deterministic layer, sigma_a = 0, every
model, |diff| <= 1e-12) and statistically (the CLI with H = 2 random heads, one noisy layer,
two-sample z-tests |z| <= 4.5 per statistic, i.e. level about 7e-6 each, 4000 paths, seeds
stated); wrong variants (heads averaged, only one head, a softmax shared by the heads) are
rejected by the same checks.
"""
import json
import math

import numpy as np
import pytest

from sssn_verify import ModelParams, ParameterError
from sssn_verify.cli import main
from sssn_verify.engine import initial_tokens, lyapunov_tangent, simulate, simulate_transformer

Z_CRIT = 4.5
D, N = 4, 5


def _heads(H, seed):
    rng = np.random.default_rng(seed)
    return {n: np.eye(D) + 0.6 * rng.standard_normal((H, D, D)) for n in ("Q", "K", "V")}


def numpy_attention(X, beta, Q, K, V, variant="sum"):
    """Plain numpy multi-head attention over leading axes of X (..., N, d)."""
    out = 0.0
    shared = None
    for h in range(Q.shape[0]):
        s = beta * np.einsum("...ia,...ja->...ij", X @ Q[h].T, X @ K[h].T)
        if variant == "shared-softmax":
            shared = s if shared is None else shared
            s = shared
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        out = out + w @ (X @ V[h].T)
        if variant == "first-head":
            break
    return out / Q.shape[0] if variant == "mean" else out


def _proj(Z):
    return Z / np.linalg.norm(Z, axis=-1, keepdims=True)


def numpy_layer(model, X, p, heads, variant="sum"):
    """One noise-free layer (sigma_a = 0) of `model` in numpy."""
    A = numpy_attention(X, p.beta, heads["Q"], heads["K"], heads["V"], variant)
    if model == "sde":
        A = A - np.sum(A * X, -1, keepdims=True) * X
    return _proj(X + p.horizon * A)


@pytest.mark.parametrize("model", ["transformer", "gaussian", "sde"])
def test_one_deterministic_layer_is_the_numpy_multi_head_attention(model):
    heads = _heads(3, 1)
    p = ModelParams(d=D, n_tokens=N, horizon=0.3, beta=1.7, sigma_a=0.0, **heads)
    res = simulate(model, p, 1, 8 if model == "transformer" else None, n_paths=3, seed=2, progress=False)
    err = np.max(np.abs(res.tokens - numpy_layer(model, res.init, p, heads)))
    assert err <= 1e-12, err
    for variant in ("mean", "first-head", "shared-softmax"):
        assert np.max(np.abs(res.tokens - numpy_layer(model, res.init, p, heads, variant))) > 1e-4, variant


def numpy_transformer_layer(X, p, heads, width, rng):
    """One noisy layer of the finite-width transformer with literal weights (ReLU)."""
    Y = numpy_layer("transformer", X, p, heads)
    P, _, d = X.shape
    W = rng.standard_normal((P, d, width)) * p.sigma_w
    b = rng.standard_normal((P, 1, width)) * p.sigma_b
    A = rng.standard_normal((P, width, d)) * p.sigma_a
    return _proj(Y + math.sqrt(p.horizon) * (np.maximum(Y @ W + b, 0.0) @ A) / math.sqrt(width))


def _stats(X, X0):
    Dx = X - X0
    return np.stack([X[:, 0, 0], X[:, 1, 2], np.sum(X[:, 0] * X[:, 1], -1), np.sum(Dx[:, 0] ** 2, -1),
                     np.sum(Dx[:, 2] * X0[:, 3], -1)], 1)


def _welch_z(a, b):
    return (a.mean(0) - b.mean(0)) / np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))


def test_cli_two_heads_agree_statistically_with_numpy(tmp_path):
    """`simulate transformer --attention qkv.npz` (H = 2 random heads, one layer, delta = 0.5,
    m = 6, exact-in-law MLP) vs numpy with literal weights: 5 statistics over 4000 paths each,
    |z| <= 4.5; numpy with the heads averaged instead of summed is rejected (|z| > 4.5)."""
    heads = _heads(2, 5)
    np.savez(tmp_path / "qkv.npz", **heads)
    p = ModelParams(d=D, n_tokens=N, horizon=0.5, beta=2.0, sigma_w=1.0, sigma_b=0.5, sigma_a=0.5, **heads)
    init = initial_tokens(p, 1, 3)[0]
    np.save(tmp_path / "init.npy", init)
    n = 4000
    out = tmp_path / "run.npz"
    assert main(["simulate", "transformer", "--attention", str(tmp_path / "qkv.npz"), "--n-tokens", str(N),
                 "--d", str(D), "--width", "6", "--depth", "1", "--horizon", "0.5", "--beta", "2",
                 "--sigma-b", "0.5", "--sigma-a", "0.5", "--paths", str(n), "--seed", "8", "--mode", "exact",
                 "--init", str(tmp_path / "init.npy"), "--out", str(out), "--no-progress"]) == 0
    z = np.load(out)
    assert json.loads(str(z["settings"]))["heads"] == 2
    X0 = np.broadcast_to(init, (n, N, D))
    ref = numpy_transformer_layer(X0, p, heads, 6, np.random.default_rng(9))
    z_ok = _welch_z(_stats(z["tokens"], X0), _stats(ref, X0))
    assert np.all(np.abs(z_ok) <= Z_CRIT), z_ok
    mean = {k: v / 2 if k == "V" else v for k, v in heads.items()}
    bad = numpy_transformer_layer(X0, p.with_(V=mean["V"]), mean, 6, np.random.default_rng(10))
    z_bad = _welch_z(_stats(z["tokens"], X0), _stats(bad, X0))
    assert np.max(np.abs(z_bad)) > Z_CRIT, z_bad


def _golden():
    from pathlib import Path
    return np.load(Path(__file__).parent / "golden" / "engine.npz")


def test_one_head_stack_reproduces_the_single_head_golden_arrays():
    """Q, K, V given as (1, d, d) stacks run the multi-head code with H = 1: the arrays recorded
    from the single-head engine (tests/golden) come back bit for bit."""
    rng = np.random.default_rng(20261202)
    mats = {name: (np.eye(3) + 0.3 * rng.standard_normal((3, 3)))[None] for name in ("Q", "K", "V")}
    p = ModelParams(d=3, n_tokens=4, horizon=1.0, beta=2.0, sigma_w=1.0, sigma_b=0.5, sigma_a=1.0, **mats)
    assert p.n_heads == 1
    g = _golden()
    res = simulate_transformer(p, 6, 16, n_paths=3, seed=11, mode="exact", betas=(0.0, 2.0), store_every=2,
                               progress=False)
    assert np.array_equal(res.trajectory, g["transformer_exact.trajectory"])
    res = simulate("sde", p, 8, n_paths=3, seed=11, betas=(0.0, 2.0), store_every=2, progress=False)
    assert np.array_equal(res.energies, g["sde.energies"])


@pytest.mark.parametrize("model", ["transformer", "gaussian", "sde"])
def test_a_head_with_zero_value_matrix_changes_nothing(model):
    one = _heads(1, 3)
    two = {n: np.concatenate([one[n], _heads(1, 4)[n]]) for n in ("Q", "K", "V")}
    two["V"][1] = 0.0
    p1 = ModelParams(d=D, n_tokens=N, beta=1.5, sigma_b=0.5, **one)
    p2 = p1.with_(**two)
    assert p2.n_heads == 2 and p1.n_heads == 1
    width = 12 if model == "transformer" else None
    a = simulate(model, p1, 5, width, n_paths=3, seed=4, store_every=1, progress=False)
    b = simulate(model, p2, 5, width, n_paths=3, seed=4, store_every=1, progress=False)
    assert np.array_equal(a.trajectory, b.trajectory)
    ta = lyapunov_tangent(p1, model, depth=5, width=width, n_paths=2, seed=1, progress=False)
    tb = lyapunov_tangent(p2, model, depth=5, width=width, n_paths=2, seed=1, progress=False)
    assert np.array_equal(ta.running, tb.running)
    # and a head with V_h != 0 does change the run
    two["V"][1] = 0.5 * np.eye(D)
    c = simulate(model, p1.with_(**two), 5, width, n_paths=3, seed=4, store_every=1, progress=False)
    assert not np.allclose(a.trajectory, c.trajectory)


def test_params_accept_head_stacks_and_reject_mismatches():
    p = ModelParams(d=3, Q=np.ones((2, 3, 3)), K=np.eye(3), V=np.zeros((2, 3, 3)))
    assert p.n_heads == 2 and not p.attention_on
    Q, K, V = p.heads()
    assert Q.shape == K.shape == V.shape == (2, 3, 3) and np.array_equal(K[1], np.eye(3))
    with pytest.raises(ParameterError):
        ModelParams(d=3, Q=np.ones((2, 3, 3)), V=np.ones((3, 3, 3)))
    with pytest.raises(ParameterError):
        ModelParams(d=3, V=np.ones((2, 4, 4)))
    with pytest.raises(ParameterError):
        ModelParams(d=3, V=np.ones((2, 2, 3, 3)))


@pytest.mark.parametrize("model", ["transformer", "gaussian", "sde"])
def test_k_tangent_vectors_give_the_exponents_of_a_linear_flow(model):
    """Noise off (sigma_a = 0), V = diag(mu), x0 = e_1 (the attracting fixed point): the
    tangent map is diagonal with factors (1 + h mu_j) / (1 + h mu_1) (transformer, Gaussian)
    or 1 + h (mu_j - mu_1) (Euler step of the SDE), so QR must return, sorted, the logs of
    the two largest per unit time (after a transient of order 1/T, T = 400: tolerance 2e-2).
    Without the re-orthonormalisation both vectors would give the top one (0.1 apart)."""
    mu = np.array([0.5, 0.2, -0.3, 0.1])
    p = ModelParams(d=4, n_tokens=1, horizon=400.0, sigma_a=0.0, V=np.diag(mu))
    L, h = 2000, 0.2
    res = lyapunov_tangent(p, model, depth=L, width=4 if model == "transformer" else None, n_paths=2,
                           seed=3, init=np.eye(4)[0], n_vectors=2, progress=False)
    if model == "sde":
        expect = np.log(1 + h * (np.array([0.2, 0.1]) - 0.5)) / h
    else:
        expect = np.log((1 + h * np.array([0.2, 0.1])) / (1 + h * 0.5)) / h
    assert res.rates.shape == (2, 2) and res.running.shape == (2, L + 1, 2) and res.rate.shape == (2,)
    assert np.max(np.abs(res.rates - expect)) < 2e-2, (res.rates, expect)
    assert abs(res.rate[1] - res.rate[0]) > 0.05


def test_n_vectors_is_validated():
    p = ModelParams(d=3, n_tokens=1)
    with pytest.raises(ParameterError):
        lyapunov_tangent(p, "sde", depth=2, n_vectors=3)
    with pytest.raises(ParameterError):
        lyapunov_tangent(p, "sde", depth=2, n_vectors=0)


@pytest.mark.parametrize("content", [{"Q": np.eye(3), "K": np.eye(3)}, {"Q": np.eye(3), "K": np.eye(3),
                                     "V": np.eye(3), "W": np.eye(3)}, {"Q": np.eye(3), "K": np.eye(3),
                                     "V": np.ones((2, 4, 4))}, "not an npz"])
def test_cli_bad_attention_files_exit_2_with_one_line(tmp_path, capsys, content):
    f = tmp_path / "qkv.npz"
    if isinstance(content, dict):
        np.savez(f, **content)
    else:
        f.write_text(content)
    argv = ["simulate", "sde", "--d", "3", "--depth", "2", "--attention", str(f), "--out", str(tmp_path / "o.npz")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sssn-verify simulate: error:") and "\n" not in err


def test_cli_no_attention_switches_attention_off(tmp_path):
    out = tmp_path / "o.npz"
    assert main(["simulate", "gaussian", "--d", "3", "--n-tokens", "3", "--depth", "2", "--no-attention",
                 "--out", str(out), "--no-progress"]) == 0
    assert json.loads(str(np.load(out)["settings"]))["attention"] is False
