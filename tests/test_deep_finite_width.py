"""The finite-width deep MLP block (issue 25, deliverable 1): numeric/models/finite_width.py with a hidden stack.

* the field's covariance at two tokens, E[F(x) F(y)^T], from the model's own compiled noise at
  width m = 2048 (exact in law: first layer, middle layers and readout through their Gram
  matrices), against K(rho) I_d of the composed kernel (numeric.kernels, derived by the NNGP
  recursion); z-tests at a stated level, their power, and wrong kernels rejected;
* literal weights and exact-in-law sampling have the same law (a two-sample test at m = 96);
* the tangent step's J_F(y) v equals a central difference of F on the same literal weights, and
  the tangent flow's exponent at m = 512 is the derived lambda_1;
* the width coupling's width-m system has the transformer's law, and convergence_width's
  checker finds the slope -1 on a deep block; the CLI's simulate transformer / phase-diagram take --hidden;
* the one-layer block is untouched (tests/test_golden.py and the engine tests pin its numbers).

The parameters appear in no other test.  Streams: ``as_key(SEED, "deep-finite-width", <check>)``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from sssn_verify import stats
from sssn_verify.errors import ParameterError
from sssn_verify.numeric.field_samples import field_samples, tangent_samples
from sssn_verify.numeric.kernels import kernel
from sssn_verify.numeric.rng import as_key
from sssn_verify.params import ModelParams

SEED = 2512
P = ModelParams(activation="tanh", sigma_w=1.3, sigma_b=0.2, sigma_a=1.1, d=3,
                hidden=(("relu", 1.4, 0.5), ("tanh", 1.2, 0.3)))
RHO = 0.3
Y = np.array([[1.0, 0.0, 0.0], [RHO, math.sqrt(1 - RHO ** 2), 0.0]])
LEVEL = 0.999          # family-wise, Bonferroni over the three statistics
N_STATS = 3


def _statistics(F):
    """Per layer: <F(x), F(y)>/d (mean K(rho)), (|F(x)|^2 + |F(y)|^2)/(2d) (mean k0), and the
    mean of the off-diagonal products F(x)_c F(y)_c' (c != c'; mean 0: the covariance is K I)."""
    d = F.shape[2]
    cross = np.einsum("pc,pe->pce", F[:, 0], F[:, 1])
    a = np.trace(cross, axis1=1, axis2=2) / d
    b = (np.einsum("pc,pc->p", F[:, 0], F[:, 0]) + np.einsum("pc,pc->p", F[:, 1], F[:, 1])) / (2 * d)
    off = (cross.sum(axis=(1, 2)) - np.trace(cross, axis1=1, axis2=2)) / (d * (d - 1))
    return a, b, off


def _tests(F, kf, scale):
    a, b, off = _statistics(F)
    lv = 1 - (1 - LEVEL) / N_STATS
    n = F.shape[0]
    out = []
    for name, s, e in (("K(rho)", a, kf(RHO)), ("k0", b, kf.k0)):
        est = stats.mean_ci(s)
        out.append(stats.z_test(name, est.mean, est.stderr, e, level=lv, n=n))
    est = stats.mean_ci(off)
    out.append(stats.z_test("off-diagonal", est.mean, est.stderr, 0.0, level=lv, n=n))
    return out, scale


@pytest.fixture(scope="module")
def exact_samples():
    # m = 2048: the finite-width mean differs from the NNGP limit by O(1/m) (the middle layers'
    # Gram fluctuations), ~2e-4 k0 here, < 0.05 of a standard error (2.2e-3 k0)
    return field_samples("transformer", P, Y, 16000, as_key(SEED, "deep-finite-width", "covariance"),
                         width=2048, mode="exact")


def test_covariance_is_the_composed_kernel(exact_samples):
    kf = kernel(P)
    checks, _ = _tests(exact_samples, kf, kf.k0)
    for c in checks:
        assert c.passed, c
    k_check, k0_check, off_check = checks
    # power: the smallest relative error detected with probability 0.9 at this level
    assert k_check.min_detectable < 0.05 and k0_check.min_detectable < 0.03, checks
    assert off_check.stderr < 0.01 * kf.k0


@pytest.mark.parametrize("wrong", [
    {"hidden": ()},                                             # the one-layer kernel
    {"hidden": (("relu", 1.4, 0.5),)},                          # the last hidden layer forgotten
    {"hidden": (("relu", 1.4, 0.5), ("tanh", 1.2 * 1.08, 0.3))},  # its sigma_w 8 % off
])
def test_a_wrong_kernel_is_rejected(exact_samples, wrong):
    kf = kernel(P.with_(**wrong))
    checks, _ = _tests(exact_samples, kf, kf.k0)
    assert not (checks[0].passed and checks[1].passed), checks


def test_literal_and_exact_have_one_law():
    """Two-sample z-tests (level 0.999, Bonferroni over the 2 statistics) at width m = 96."""
    n = 3000
    key = as_key(SEED, "deep-finite-width", "modes")
    F_lit = field_samples("transformer", P, Y, n, key.child("literal"), width=96, mode="literal")
    F_ex = field_samples("transformer", P, Y, n, key.child("exact"), width=96, mode="exact")
    for s_lit, s_ex, name in zip(_statistics(F_lit)[:2], _statistics(F_ex)[:2], ("K", "k0")):
        diff = s_lit.mean() - s_ex.mean()
        se = math.sqrt(s_lit.var(ddof=1) / n + s_ex.var(ddof=1) / n)
        c = stats.z_test(f"literal - exact ({name})", diff, se, 0.0, level=1 - 0.001 / 2, n=2 * n)
        assert c.passed, c
        assert se < 0.02 * kernel(P).k0     # detects a 0.09 k0 difference with probability 0.9


def test_tangent_is_the_jacobian_of_the_literal_field():
    """J_F(y) v from the tangent step vs (F(y + e v) - F(y - e v)) / (2 e) on the same literal
    weights (the same stream draws the same weights whatever the rows): deterministic, 1e-6."""
    y = np.array([0.6, -0.48, 0.64])
    v = np.array([[0.8, 0.6, 0.0], [0.0, 0.8, 0.6]])
    key = as_key(SEED, "deep-finite-width", "tangent")
    T = tangent_samples("transformer", P, y, v, 5, key, width=40, mode="literal")
    e = 1e-6
    for a in range(2):
        rows = np.array([y + e * v[a], y - e * v[a], y])
        F = field_samples("transformer", P, rows, 5, key, width=40, mode="literal")
        fd = (F[:, 0] - F[:, 1]) / (2 * e)
        np.testing.assert_allclose(T[:, 0], F[:, 2], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(T[:, a + 1], fd, rtol=1e-6, atol=1e-7)
    # a slightly wrong Jacobian (the chain rule without the last layer's phi') would be off by O(1)
    assert np.max(np.abs(T[:, 1])) > 1e-2


def test_tangent_flow_exponent_of_the_finite_width_deep_block_is_the_derived_lambda1():
    """One exact layer of the deep block's tangent flow at width m = 512 (experiments.tangent_layer:
    Richardson over h = 0.02, 0.01; P = 20000, noise only, d = 3, where lambda_1 = -k0) against the
    derived lambda_1 of the composed kernel: z-test at level 0.999 (measured 0.7 se); the
    one-layer block's lambda_1 is rejected (measured 17.5 se); detects a 7.4 % error with prob. 0.9."""
    import sssn_verify as sv
    from sssn_verify.numeric.experiments import tangent_layer
    r = tangent_layer("transformer", P, 0.02, 20000, as_key(SEED, "deep-finite-width", "lyapunov"), width=512)
    right, one = sv.regime(P.with_(V=0.0)).lambda1, sv.regime(P.with_(V=0.0, hidden=())).lambda1
    check = stats.z_test("lambda_1 (finite-width deep block)", r.mean["lam"], r.stderr["lam"], right, level=LEVEL,
                         n=r.n)
    assert check.passed and check.min_detectable < 0.08, check
    assert not stats.z_test("one-layer lambda_1", r.mean["lam"], r.stderr["lam"], one, level=LEVEL, n=r.n).passed


def test_coupled_deep_block_width_m_system_has_the_transformer_law():
    """The coupled width-16 system of a deep block against the literal-weights transformer (its
    model): mean energy E_0 after L = 6 layers, noise only, N = 3, d = 3; two-sample z-test at
    level 0.999, independent seeds, P = 1500 each."""
    from sssn_verify.engine import simulate_coupled, simulate_transformer
    p = P.with_(n_tokens=3, V=0.0, sigma_a=0.6)
    n, L = 1500, 6
    c = simulate_coupled(p, L, (16, 32, "inf"), n_paths=n, seed=as_key(SEED, "deep-finite-width", "coupled"),
                         progress=False)
    t = simulate_transformer(p, L, 16, n_paths=n, seed=as_key(SEED, "deep-finite-width", "coupled-ref"),
                             mode="literal", progress=False)
    a, b = c.energy[:, 0, -1], t.energy[:, -1]
    se = math.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
    check = stats.z_test("coupled m = 16 vs transformer (E_0 after L layers)", a.mean() - b.mean(), se, 0.0,
                         level=LEVEL, n=2 * n)
    assert check.passed, check
    assert c.energy[:, 0, 0].mean() - a.mean() > 5 * se          # the energy moved (measured 6.9 se)


def test_convergence_width_of_a_deep_block_is_one_over_m():
    """claims.convergence_width's checker on a deep block (hidden layers nested in the coupling):
    the log-log slope of E max_l |X^{l,m} - X^{l,inf}|^2 over m = 16..128 (paths bootstrap,
    level 0.999) contains -1, and its one-sided tests reject the rates m^-2 and m^0.  The hidden stack's
    activations are P's (relu, tanh): the coupled kernel the test above compiles (a kernel is one per
    activation stack; the sigmas are arguments)."""
    from sssn_verify.claims.convergence_width import width_errors
    config = ("tanh", 3, 0.9, 0.2, 0.3)
    x, samples = width_errors(config, {"widths": (16, 32, 64, 128), "depth": 8, "paths": 600},
                              as_key(SEED, "deep-finite-width", "width"), hidden=(("relu", 1.1, 0.3), ("tanh", 1.2, 0.3)))
    fit = stats.path_bootstrap_loglog_slope(x, samples, level=LEVEL, n_boot=500, seed=SEED)
    assert fit.ci[0] < -1.0 < fit.ci[1], fit
    for wrong in (-2.0, 0.0):
        assert not (fit.ci[0] < wrong < fit.ci[1]), (wrong, fit)


def test_cli_simulate_transformer_and_phase_diagram_take_hidden(capsys, tmp_path):
    """The refusals are lifted: `simulate transformer --hidden` runs the deep block, and
    `phase-diagram --hidden` evaluates every cell on the deep block's kernel (= regime's rates)."""
    import csv
    import io

    import sssn_verify as sv
    from sssn_verify.cli import main
    out = tmp_path / "deep.npz"
    assert main(["simulate", "transformer", "--width", "8", "--depth", "2", "--n-tokens", "2", "--d", "3",
                 "--activation", "tanh", "--hidden", "relu 1.4 0.5", "--hidden", "tanh 1.2 0.3",
                 "--no-attention", "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    with np.load(out) as z:
        assert np.allclose(np.linalg.norm(z["tokens"], axis=-1), 1.0)
    argv = ["phase-diagram", "--activation", "erf", "--hidden", "relu 1.15 0.35", "--x", "d", "--x-range", "4", "6",
            "--y", "sigma_b", "--y-range", "0.1", "0.7", "--resolution", "2", "--format", "csv"]
    assert main(argv) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3 * 2
    for r in rows:
        g = sv.regime(ModelParams(activation="erf", d=int(r["d"]), sigma_b=float(r["sigma_b"]), V=0.0,
                                  hidden=(("relu", 1.15, 0.35),)))
        assert float(r["lambda1"]) == pytest.approx(g.lambda1, rel=1e-12, abs=1e-14)
        one = sv.regime(ModelParams(activation="erf", d=int(r["d"]), sigma_b=float(r["sigma_b"]), V=0.0))
        assert abs(float(r["lambda1"]) - one.lambda1) > 1e-3     # not the one-layer block's
