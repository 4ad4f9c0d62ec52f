"""The width coupling (issue 11.2-11.4): roots exact near coincidence, each system follows its
model's law, determinism, the CLI, and the `convergence_width` claim with its mutations.

Statistical tests state level, sample size and seed; mutations are judged at level 1 - 1e-4
(stricter than the suite's per-check level), as in tests/test_claims.py.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
from statistics import NormalDist

from sssn_verify import ModelParams
from sssn_verify.claims import CLAIMS, UNAVAILABLE
from sssn_verify.cli import main
from sssn_verify.engine import simulate, simulate_coupled, simulate_gaussian, simulate_transformer
from sssn_verify.errors import ParameterError
from sssn_verify.numeric.fields import (STATUS_NOT_PSD, STATUS_OK, edge_rows, gap_matrix, graded_sqrt,
                                        nearest_tree, tree_field_cov)
from sssn_verify.numeric.kernels import kernel

STRICT = 1 - 1e-4
RELU = dict(activation="relu", sigma_w=1.0, sigma_b=0.0, sigma_a=0.7, beta=1.0)


def _sphere(rows):
    x = np.asarray(rows, dtype=float)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ----------------------------------------------------------------------------- the root
def test_graded_sqrt_is_the_symmetric_root_of_a_correlation_matrix():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 8))
    C = X @ X.T
    d = np.sqrt(np.diag(C))
    R = C / np.outer(d, d)
    A = np.empty_like(R)
    assert graded_sqrt(R, A, 1e-13) == STATUS_OK
    assert np.allclose(A, A.T, atol=1e-14)
    assert np.allclose(A, scipy.linalg.sqrtm(R).real, atol=1e-12)
    # a general C: A = D R^(1/2), A A^T = C
    assert graded_sqrt(C, A, 1e-13) == STATUS_OK
    assert np.allclose(A, np.diag(d) @ scipy.linalg.sqrtm(R).real, atol=1e-11)
    assert np.allclose(A @ A.T, C, atol=1e-12 * C.max())


def test_graded_sqrt_keeps_tiny_rows_rank_deficiency_and_zero_rows():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 2))                     # rank 2 (N > m)
    X[1] *= 1e-12                                       # a 1e-12 difference row
    X[3] = 0.0                                          # a coincident token: zero edge
    C = X @ X.T
    A = np.empty_like(C)
    assert graded_sqrt(C, A, 1e-13) == STATUS_OK
    scale = np.sqrt(np.outer(np.diag(C), np.diag(C))) + 1e-300
    assert np.all(np.abs(A @ A.T - C) <= 1e-12 * scale)  # relative to each entry's own scale
    assert np.all(A[3] == 0.0)
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])            # correlation 2: clipped to 1 (rounding policy)
    assert graded_sqrt(bad, np.empty((2, 2)), 1e-13) == STATUS_OK
    assert graded_sqrt(np.array([[1.0, 0.0], [0.0, -1.0]]), np.empty((2, 2)), 1e-13) == STATUS_NOT_PSD
    assert graded_sqrt(np.array([[1.0, 0.0], [0.0, np.nan]]), np.empty((2, 2)), 1e-13) == STATUS_NOT_PSD


def test_tree_field_covariance_is_exact_for_pairs_close_to_each_other_far_from_token_0():
    """Identity activation: K(rho) = sa^2 (sw^2 rho + sb^2), so the covariance of the field's tree
    differences is sa^2 sw^2 <e_s, e_t> with the edge vectors computed directly (independent)."""
    sw, sb, sa = 1.3, 0.4, 0.9
    kf = kernel("identity", sw, sb, sa)
    rng = np.random.default_rng(2)
    x0, x2 = _sphere(rng.standard_normal((2, 3)))
    v = rng.standard_normal(3)
    Y = _sphere([x0, x2, x2 + 1e-7 * v, x0 + 3e-8 * rng.standard_normal(3)])
    n = Y.shape[0]
    order, parent = np.empty(n, np.int64), np.empty(n, np.int64)
    nearest_tree(Y, np.zeros(n), 1.0, 0.0, 3, order, parent)
    G, C = np.empty((n, n)), np.empty((n, n))
    gap_matrix(kf.table, Y, G)
    tree_field_cov(G, kf.k0, order, parent, C)
    E = np.empty_like(Y)
    edge_rows(Y, order, parent, E)
    exact = sa ** 2 * sw ** 2 * (E @ E.T)
    exact[0, 0] = kf.k0
    exact[0, 1:] = exact[1:, 0] = sa ** 2 * sw ** 2 * (E[1:] @ E[0])
    tiny = np.linalg.norm(E, axis=1) < 1e-6
    assert tiny.sum() == 2                              # both short pairs are edges of the tree
    scale = np.sqrt(np.outer(np.diag(exact), np.diag(exact)))
    err = np.abs(C - exact)
    both_tiny = np.outer(tiny, tiny) & ~np.eye(n, dtype=bool)
    assert np.all(err[~both_tiny] <= 1e-6 * scale[~both_tiny])   # edge variances: 2 g, exact
    assert np.all(err[both_tiny] <= 16 * np.finfo(float).eps * kf.k0)  # stated: mixed difference


# ----------------------------------------------------------------------------- each system's law
def _log_change(tokens0, tokens):
    return np.log(np.linalg.norm(tokens[..., 0, :] - tokens[..., 1, :], axis=-1)
                  / np.linalg.norm(tokens0[..., 0, :] - tokens0[..., 1, :], axis=-1))


@pytest.mark.parametrize("eps", [1e-7, 1e-10])
def test_each_coupled_system_has_its_model_law_for_tokens_nearly_coincident(eps):
    """Mean change of log|x1 - x2| over L = 10 layers for two tokens eps apart (ReLU, d = 8,
    sigma = (1, 1, 1), lambda_1 = -2.25, noise only): the coupled width-16 system against the
    literal-weights transformer, the coupled m = inf system against the Gaussian transformer.
    Two-sample z-tests, independent seeds, P = 1500 each, level 1 - 1e-4 (Bonferroni over 2);
    the old cancellation (a rate off by ~0.5, ~10 standard errors) would be caught."""
    p = ModelParams(d=8, n_tokens=2, activation="relu", sigma_w=1.0, sigma_b=1.0, sigma_a=1.0, V=0.0)
    x = np.zeros((2, 8))
    x[0, 0] = 1.0
    x[1, 0], x[1, 1] = 1.0, eps
    P, L = 1500, 10
    c = simulate_coupled(p, L, (16, "inf"), n_paths=P, seed=11, init=x, progress=False)
    ref = {0: simulate_transformer(p, L, 16, n_paths=P, seed=12, init=x, mode="literal", progress=False),
           1: simulate_gaussian(p, L, n_paths=P, seed=13, init=x, progress=False)}
    z_crit = NormalDist().inv_cdf(1 - (1 - STRICT) / 4)
    for r, res in ref.items():
        a = _log_change(c.init, c.tokens[:, r])
        b = _log_change(res.init, res.tokens)
        se = math.sqrt(a.var(ddof=1) / P + b.var(ddof=1) / P)
        assert abs(a.mean() - b.mean()) <= z_crit * se, (r, a.mean(), b.mean(), se)
        assert a.mean() < -0.5                          # synchronizing (lambda_1 T = -2.25)


def test_systems_are_distinct_and_energies_recorded():
    p = ModelParams(d=3, n_tokens=4, **RELU)
    res = simulate_coupled(p, 6, (8, 32, math.inf), n_paths=5, seed=0, progress=False)
    assert res.widths == (8, 32, math.inf) and res.tokens.shape == (5, 3, 4, 3)
    assert res.energy.shape == (5, 3, 7) and res.max_dev.shape == (5, 2)
    assert np.allclose(res.energy[:, :, 0], res.energy[:, :1, 0])   # same start
    assert np.all(res.max_dev > 0) and np.all(res.max_dev_config >= res.max_dev)
    assert np.allclose(np.linalg.norm(res.tokens, axis=-1), 1.0)
    same = simulate("coupled", p, 6, width=("inf", 8, 32), n_paths=5, seed=0, progress=False)
    assert np.array_equal(same.tokens, res.tokens)          # one way: simulate delegates


def test_coupled_run_is_deterministic_across_chunks_and_threads():
    p = ModelParams(d=3, n_tokens=4, **RELU)
    whole = simulate_coupled(p, 5, (16, 64, "inf"), n_paths=6, seed=4, progress=False)
    parts = [simulate_coupled(p, 5, (16, 64, "inf"), n_paths=6, seed=4, progress=False, paths=(a, b))
             for a, b in ((0, 2), (2, 6))]
    assert np.array_equal(whole.tokens, np.concatenate([q.tokens for q in parts]))
    assert np.array_equal(whole.max_dev, np.concatenate([q.max_dev for q in parts]))
    code = ("import numpy as np, sys; from sssn_verify import ModelParams; "
            "from sssn_verify.engine import simulate_coupled; "
            f"p = ModelParams(d=3, n_tokens=4, **{RELU!r}); "
            "r = simulate_coupled(p, 5, (16, 64, 'inf'), n_paths=6, seed=4, progress=False); "
            "sys.stdout.write(r.tokens.tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "NUMBA_NUM_THREADS": "1"}).stdout
    assert bytes.fromhex(out) == whole.tokens.tobytes()


def test_bad_widths_are_refused():
    p = ModelParams(d=3, n_tokens=2, **RELU)
    for widths in ((16,), (16, 16), (0, "inf"), ("x", "inf"), (-math.inf, 4), None):
        with pytest.raises(ParameterError):
            simulate_coupled(p, 2, widths)
    with pytest.raises(ParameterError):
        simulate_coupled(p, 2, (4, "inf"), mode="literal")


# ----------------------------------------------------------------------------- CLI
def test_cli_simulate_coupled_writes_npz_and_plot(tmp_path, capsys):
    out, png = tmp_path / "c.npz", tmp_path / "c.png"
    rc = main(["simulate", "coupled", "--widths", "16,64,inf", "--n-tokens", "3", "--depth", "4",
               "--paths", "4", "--seed", "2", "--out", str(out), "--plot", str(png)])
    assert rc == 0
    z = np.load(out)
    assert list(z["widths"]) == [16.0, 64.0, math.inf]
    assert z["tokens"].shape == (4, 3, 3, 3) and z["max_dev"].shape == (4, 2)
    assert json.loads(str(z["settings"]))["widths"] == ["16", "64", "inf"]
    assert png.stat().st_size > 1000
    assert "m=16" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["--widths", "16,abc"], [], ["--widths", "16,inf", "--width", "4"], ["--widths", "16,inf", "--mode", "literal"],
    ["--widths", "8"]])
def test_cli_simulate_coupled_bad_input_exits_2_with_one_line(tmp_path, capsys, argv):
    rc = main(["simulate", "coupled", "--depth", "2", "--out", str(tmp_path / "x.npz"), *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and not (tmp_path / "x.npz").exists()


# ----------------------------------------------------------------------------- the claim
def claim(name):
    assert name in CLAIMS, f"claim {name} not registered: {UNAVAILABLE.get(name)}"
    return CLAIMS[name]


def test_convergence_width_is_available_and_declares_domain_and_anchors():
    c = claim("convergence_width")
    assert "convergence_width" not in UNAVAILABLE
    assert c.domain is not None and c.anchors and c.formula() == -1.0


FAST = {"paths": 800, "n_boot": 500}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_convergence_width_accepts_one_over_m(seed):
    res = claim("convergence_width").run("quick", seed, budget=FAST)
    assert res.passed, [(c.name, c.estimate, c.ci, c.pvalue) for c in res.checks]
    bound = res.checks[0]
    assert -1.15 < bound.estimate < -0.85 and bound.ci[0] < bound.estimate < bound.ci[1]


@pytest.mark.parametrize("exponent", [-2.0, 0.0, -1.5, -0.5])
def test_convergence_width_rejects_wrong_rates(exponent):
    res = claim("convergence_width").run("quick", 0, level=STRICT, formula=exponent, budget=FAST)
    assert not res.passed


def test_convergence_width_runs_an_explored_configuration():
    from sssn_verify.claims.convergence_width import _asymptotic
    config = ("relu", 5, 0.8, 0.5, 0.35)
    assert _asymptotic(config) and not _asymptotic(("relu", 5, 0.8, 0.5, 0.9))
    k0 = kernel("relu", 0.8, 0.5, 0.9).k0                       # the homogeneity shortcut is exact
    assert _asymptotic(("relu", 2, 0.8, 0.5, 0.9)) == (2 * k0 <= 0.5)
    assert kernel("relu", 1, 0, 1).k0 * 0.81 * (0.64 + 0.25) == pytest.approx(k0, rel=1e-12)
    res = claim("convergence_width").run("quick", 5, budget={**FAST, "configs": [config]})
    assert res.passed and "d=5" in res.checks[0].name


def test_commuting_limits_reports_the_l_by_m_table_and_its_surface():
    """The table's m = inf column is the depth error, finite widths add the width error; the
    fitted surface a log L / L + b / m has positive a, b (errors shrink in both L and m)."""
    from sssn_verify.claims.commuting_limits import PARAMS, error_table
    tab = error_table(ModelParams(**PARAMS), {"depths": (8, 16), "widths": (16, 64), "n_fine": 64,
                                               "paths": 120}, 3)
    e = np.array(tab["error"])
    assert e.shape == (2, 3) and tab["widths"] == [16, 64, "inf"]
    assert np.allclose(e[:, -1], tab["depth_error"])
    assert np.allclose(e[:, :-1], np.array(tab["depth_error"])[:, None] + np.array(tab["width_error"]))
    assert np.all(e[:, 0] > e[:, 1])
    s = tab["surface"]
    assert s["a"] > 0 and s["b"] > 0 and s["relative_rms_residual"] < 0.5 and "| 16 |" in tab["text"]


def test_the_report_shows_a_checks_error_table_and_its_surface():
    from sssn_verify.claims.base import ClaimResult
    from sssn_verify.report import html_report, markdown
    from sssn_verify.stats import CheckResult
    from sssn_verify.verify import SuiteResult
    table = {"reference": "SDE, 64 Euler steps", "entry": "dep + w", "text": "| L \\ m | 16 | inf |\n| 8 | 0.3 | 0.1 |",
             "surface": {"form": "a log L / L + b / m", "a": 0.29, "b": 3.8, "a_stderr": 0.01, "b_stderr": 0.1,
                         "chi2_per_dof": 1.7, "relative_rms_residual": 0.07}}
    chk = CheckResult(name="c", passed=True, estimate=0.1, stderr=0.01, ci=(0.07, 0.13), expected=0.1, level=0.999,
                      n=10, seed=0, pvalue=0.5, details={"table": table})
    suite = SuiteResult([ClaimResult("commuting_limits", "t", "s", "d", [chk], "quick", 0, 0.999, 1.0)],
                        "quick", 0, 0.01, 1.0, 1)
    md, html = markdown(suite), html_report(suite)
    assert "| 8 | 0.3 | 0.1 |" in md and "a = 0.29" in md and "b = 3.8" in md
    assert "<pre>| L \\ m | 16 | inf |" in html and "relative RMS residual <math" in html
    assert "<mn>0.29</mn><mo>±</mo>" in html and "chi" not in html.split("Fitted", 1)[1][:2000]   # MathML, no ASCII
