"""lambda_bar(beta) for the general covariance tensor and the rqf field (symbolic.general_field) against
independent numbers.

* The ratio L2 f / f of the derivation (through the bridge) against a numpy Monte Carlo of one layer
  x' = Pi(x + sqrt(h) Q x), Q = S (B + B^T)/2, written here: the initial rate (E f(rho') - f(rho)) / h with
  antithetic noise (Q and -Q) and Richardson over h, h/2, h/4 on shared normals, divided by f(rho) (computed
  stably as expm1's).  Each point is a two-sided z-test at level 0.999 (Bonferroni over the points), n = 400 000
  pairs, seed Key(0).child("test", "rqf-lambda-bar", i); the smallest relative error it detects with
  probability 0.9 (``stats.min_detectable``) is below 5 % at every point and is asserted; the Richardson bias is
  shown negligible (the estimates at steps h and 2h differ by < 0.1 standard errors), and the law that ignores
  the y x^T term of the tensor (c = 0) is rejected.
* The supremum over rho: lambda_bar = 2 S^2 (derived: the edge) against a dense grid of the ratio in mpmath
  (80 digits), rho = -1 included and points up to 1 - 1e-30.
* The K(rho) I fields: the general ratio, edge value and factor T at b = c = e = f = 0, a = K, a(1) = k0,
  a'(1) = k1 minus symbolic.dissipation's simplify to 0 (symbol for symbol).
* The CLI: regime, find and scan --field rqf report lambda_bar.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sympy as sp

from sssn_verify.bridge import function
from sssn_verify.numeric.rng import Key
from sssn_verify.stats import min_detectable, z_test

#: (S, d, rho, beta): bulk, negative rho, beta = 0, near the edge, near antipodal, large beta, S = 2 near the edge
POINTS = [(1.0, 5, 0.3, 1.0), (0.7, 3, -0.6, 2.0), (1.3, 4, 0.85, 0.0), (1.0, 2, 0.95, 3.0), (1.0, 6, -0.95, 0.5),
          (0.5, 8, 0.0, 20.0), (2.0, 3, 0.99, 0.0)]
LEVEL = 1 - 0.001 / len(POINTS)          # Bonferroni: family-wise level 0.999
N_PAIRS = 400_000


def _layer_ratio(S, d, rho, beta, h, n, key, c_term=True):
    """Per pair: the Richardson (h, h/2, h/4) estimate of [E f(rho') - f(rho)] / (h f(rho)) for one rqf layer
    x' = Pi(x + sqrt(h) Q x) (antithetic: Q and -Q), at x = e1, y = rho e1 + sqrt(1 - rho^2) e2.  Only Q e1 and
    Q e2 enter: the first two columns and rows of B (their 2 x 2 corner shared).  `c_term` False: the field
    W(x) = Q' x with Q' = S B / sqrt(2) (non-symmetric: covariance (S^2/2) rho I, the tensor without y x^T)."""
    rng = key.generator()
    cols = rng.standard_normal((n, d, 2))
    rows = rng.standard_normal((n, 2, d))
    rows[:, :, :2] = cols[:, :2, :]
    if c_term:
        Qx, Qe2 = (S * (cols[:, :, j] + rows[:, j, :]) / 2 for j in (0, 1))
    else:
        Qx, Qe2 = (S * cols[:, :, j] / math.sqrt(2) for j in (0, 1))
    s = math.sqrt(1 - rho * rho)
    x = np.zeros(d)
    x[0] = 1.0
    y = np.zeros(d)
    y[0], y[1] = rho, s
    Qy = rho * Qx + s * Qe2

    def rel(dr):                     # (f(rho + dr) - f(rho)) / f(rho) for f = e^beta - e^(beta rho), or 1 - rho
        return -np.expm1(beta * dr) / math.expm1(beta * (1 - rho)) if beta > 0 else -dr / (1 - rho)

    def g(step):
        out = 0.0
        for sign in (1.0, -1.0):
            xp = x + sign * math.sqrt(step) * Qx
            yp = y + sign * math.sqrt(step) * Qy
            r = np.sum(xp * yp, axis=1) / (np.linalg.norm(xp, axis=1) * np.linalg.norm(yp, axis=1))
            out = out + rel(r - rho) / 2
        return out / step

    g1, g2, g4 = g(h), g(h / 2), g(h / 4)
    return (8 * g4 - 6 * g2 + g1) / 3


def _derived_ratio(rho, beta, S):
    name = "general_field.rqf_energy_ratio" if beta > 0 else "general_field.rqf_energy_ratio0"
    return float(function(name, "math")(rho, beta, S))


def _step(S, rho, beta, c=0.04):
    """The layer step: small against the scales of the pair energy (1 - rho^2, 1/beta) and of the noise (1/S^2)."""
    return c * (1 - rho * rho) / (S * (1 + beta)) ** 2


@pytest.mark.parametrize("i", range(len(POINTS)))
def test_the_ratio_is_the_initial_rate_of_one_rqf_layer(i):
    S, d, rho, beta = POINTS[i]
    key = Key(0).child("test", "rqf-lambda-bar", i)
    est = _layer_ratio(S, d, rho, beta, _step(S, rho, beta), N_PAIRS, key)
    mean, se = float(est.mean()), float(est.std(ddof=1)) / math.sqrt(N_PAIRS)
    want = _derived_ratio(rho, beta, S)
    check = z_test("rqf L2 f / f", mean, se, want, level=LEVEL, n=N_PAIRS, seed=0)
    assert check.passed, (POINTS[i], mean, se, want)
    # its power: a 5 % error is detected with probability 0.9 at this level
    assert check.min_detectable is not None and check.min_detectable < 0.05, check.min_detectable
    assert check.min_detectable == pytest.approx(min_detectable(se, want, LEVEL), rel=1e-12)
    # the Richardson bias is negligible: the estimate at step 2h is the same within 0.1 standard errors
    est2 = _layer_ratio(S, d, rho, beta, 2 * _step(S, rho, beta), N_PAIRS, key)
    assert abs(float(est2.mean()) - mean) < 0.1 * se


@pytest.mark.parametrize("i", [0, 3])
def test_the_layer_check_rejects_the_law_without_the_y_x_transpose_term(i):
    """The same Monte Carlo for a field with covariance (S^2/2) rho I (rqf's a, c = 0): its rate differs from the
    derived rqf ratio by many standard errors, so the check above sees the c(rho) y x^T term."""
    S, d, rho, beta = POINTS[i]
    est = _layer_ratio(S, d, rho, beta, _step(S, rho, beta), N_PAIRS, Key(0).child("test", "rqf-lambda-bar-c0", i),
                       c_term=False)
    mean, se = float(est.mean()), float(est.std(ddof=1)) / math.sqrt(N_PAIRS)
    assert not z_test("c = 0 law", mean, se, _derived_ratio(rho, beta, S), level=LEVEL, n=N_PAIRS).passed


@pytest.mark.parametrize("S", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("beta", [0.0, 0.5, 3.0, 20.0])
def test_the_supremum_is_the_edge_value_on_a_dense_mpmath_grid(S, beta):
    import mpmath as mp
    lam = function("general_field.rqf_lambda_bar", "math")(S)
    assert lam == pytest.approx(2 * S * S, rel=1e-15)                 # docs/mathematics.md
    name = "general_field.rqf_energy_ratio" if beta > 0 else "general_field.rqf_energy_ratio0"
    R = function(name, "mpmath")
    with mp.workdps(80):                 # 1 - rho down to 1e-30: f loses 30 of the 80 digits
        grid = [mp.mpf(-1) + mp.mpf(2) * k / 4000 for k in range(4000)]
        grid += [1 - mp.mpf(10) ** -j for j in range(4, 31)]
        vals = [R(r, mp.mpf(beta), mp.mpf(S)) for r in grid]
        top = max(vals)
        assert top <= mp.mpf(lam) * (1 + mp.mpf(10) ** -14)           # never above the derived supremum
        assert vals[-1] == max(vals)                                   # the largest value: the point nearest 1
        assert abs(vals[-1] - mp.mpf(2) * mp.mpf(S) ** 2) < mp.mpf(10) ** -25    # and the edge is approached
        # interior: strictly below by a margin away from the edge (the sup is not attained)
        assert max(v for r, v in zip(grid, vals) if r <= mp.mpf("0.9")) < mp.mpf(lam) * mp.mpf("0.999")
    lb, arg, edge = (function(f"general_field.rqf_{n}", "math") for n in ("lambda_bar", "lambda_bar_anti",
                                                                          "lambda_bar_edge"))
    assert float(arg(beta, S)) == 0.0 and edge(S) == lam               # the antipodal value, below the edge


def test_the_general_tensor_gives_the_k_rho_identity_case_symbol_for_symbol():
    from sssn_verify.symbolic import dissipation as ds
    from sssn_verify.symbolic import general_field as gf
    from sssn_verify.symbolic.symbols import Krho, beta, k0, k1, rho
    g = gf.general_energy_generator()
    sub = {gf.b_r: 0, gf.c_r: 0, gf.e_r: 0, gf.f_r: 0, gf.a_1: k0, gf.a_r: Krho, gf.a1_prime: k1, gf.c_1: 0}
    cert = ds.endpoint_certificate()
    # beta > 0: the ratio of today's endpoint certificate (L2 f / f with dissipation's generator factor)
    assert sp.simplify(g["R"].subs(sub) - cert["R"]) == 0
    # beta = 0: L2 (1 - rho) / (1 - rho) = -b / (1 - rho) with two_point's b
    f0, _ = ds.energy_profile(False)
    today0 = sp.diff(f0, rho) * ds.generator_factor(False) / f0
    assert sp.simplify(g["R0"].subs(sub) - today0) == 0 and sp.simplify(g["R0"].subs(sub) - cert["R0"]) == 0
    assert sp.simplify(g["T"].subs(sub) - cert["T"]) == 0
    assert sp.expand(gf.general_edge_rate().subs(sub) - ds.edge_rate()) == 0
    # the generator factor N = b + beta a / 2 itself
    b, a = gf.general_two_point_coefficients()
    assert sp.simplify((b + beta * a / 2).subs(sub) - ds.generator_factor(True)) == 0
    assert all(r == 0 for r in gf.general_energy_mlp_residual())
    assert all(r == 0 for r in gf.general_endpoint_certificate()["residuals"])


def test_the_rqf_certificate_conditions_and_the_result():
    from sssn_verify.symbolic import general_field as gf
    from sssn_verify.symbolic.symbols import rho
    rq = gf.rqf_energy_rate()
    S = gf.sigma_q
    assert all(rq["conditions"].values())
    # the sign decision is not vacuous: a sign change inside, or a negative polynomial, is not shown >= 0
    assert not gf._nonnegative_on_sphere_range(rho) and not gf._nonnegative_on_sphere_range(rho**2 - 1)
    assert gf._nonnegative_on_sphere_range((1 - rho) * (1 + rho) ** 3)
    assert sp.simplify(rq["C0"] - S**2 * (1 - rho**2)) == 0 and rq["R0_minus"] == 0 and rq["anti"] == 0
    assert sp.simplify(rq["lambda_bar"] - 2 * S**2) == 0 and rq["edge"] == rq["lambda_bar"]
    assert rq["lambda_bar"].free_symbols == {S}                       # free of d and beta
    assert list(rq["critical0"]) == [sp.Rational(-1, 2)]
    dv = __import__("sssn_verify.symbolic", fromlist=["derive"]).derive("general_field")
    assert sp.Eq(sp.Symbol("lambda_bar"), 2 * S**2) in dv.result


# ----------------------------------------------------------------------------- the commands
def _run(argv, capsys):
    """(exit code, stdout, stderr) of the command line, in process (argparse's refusals exit by SystemExit)."""
    from hostile_cli_helpers import run
    return run(argv, capsys)[:3]


def test_regime_rqf_reports_lambda_bar(capsys):
    code, out, err = _run(["regime", "--field", "rqf", "--sigma-q", "1", "--d", "5", "--json"], capsys)
    assert code == 0, err
    r = json.loads(out)
    assert isinstance(r["lambda_bar"], float) and math.isfinite(r["lambda_bar"])
    assert r["lambda_bar"] == pytest.approx(2.0, rel=1e-15)
    assert (r["lambda_bar_argmax"], r["lambda_bar_edge"], r["sup_at_edge"]) == (1.0, r["lambda_bar"], True)
    # default attention V = I, Q = K = I: C_att = 0, the rate near synchronization 2 - 2 = 0: undetermined
    assert r["c_att"] == 0.0 and r["rate_lower_bound"] == pytest.approx(0.0, abs=1e-15)
    import sssn_verify as sv
    assert sv.lambda_bar(field="rqf", sigma_q=1.0, d=5) == r["lambda_bar"]          # the public function too
    assert r["dissipates"] is None and r["verdict"].startswith("undetermined: the rate lies in [0, 2]")
    code, out, err = _run(["regime", "--field", "rqf", "--sigma-q", "0.7", "--d", "3", "--no-attention", "--json"],
                          capsys)
    r = json.loads(out)
    assert code == 0 and r["dissipates"] is False and r["verdict"] == "does not dissipate", err
    assert r["rate_lower_bound"] == pytest.approx(0.98, rel=1e-14) == r["lambda_bar"]
    code, out, err = _run(["regime", "--field", "rqf", "--sigma-q", "1", "--d", "5"], capsys)
    assert code == 0 and "lambda_bar(beta) = 2   attained at rho -> 1 (edge)" in out, out


def test_find_and_scan_rqf_use_lambda_bar(capsys):
    import sssn_verify as sv
    from sssn_verify.explore import RQF_QUANTITIES, RQF_UNDEFINED, find
    assert "lambda_bar" in RQF_QUANTITIES and "lambda_bar" not in RQF_UNDEFINED
    res = find("lambda_bar < 0", field="rqf", max_examples=30)
    c = res.counterexample
    assert res.found and res.values["lambda_bar"] == pytest.approx(2 * c["sigma_q"] ** 2, rel=1e-13)
    assert not find("lambda_bar > 0", field="rqf", max_examples=30).found
    code, out, err = _run(["find", "lambda_bar < 0", "--field", "rqf", "--explore", "20"], capsys)
    assert code == 1 and "field rqf" in out and "lambda_bar = " in out, (out, err)
    df = sv.scan(field="rqf", sigma_q=[0.5, 1.5], d=[2, 7], beta=[0.0, 4.0], attention_scale=[0.0, -0.5])
    np.testing.assert_allclose(df["lambda_bar"], 2 * df["sigma_q"] ** 2, rtol=1e-15)
    np.testing.assert_allclose(df["rate_lower_bound"], 2 * df["sigma_q"] ** 2 - 2 * df["attention_scale"], rtol=1e-14)
    assert df["sup_at_edge"].all() and (df["lambda_bar_argmax"] == 1.0).all()
    assert not df["dissipates"].any() and df["dissipates"].notna().all()       # lower bound > 0 everywhere
    for row in df.itertuples():
        g = sv.regime(sv.ModelParams(field="rqf", sigma_q=row.sigma_q, d=row.d, beta=row.beta, V=row.attention_scale))
        assert (row.lambda_bar, row.lambda_bar_edge, row.rate_upper_bound) == (
            g.lambda_bar, g.lambda_bar_edge, g.lambda_bar + g.c_att)
        assert bool(row.dissipates) == g.dissipates


def test_find_help_names_the_rqf_quantities_explore_accepts():
    """find --help lists lambda_bar among the rqf quantities and refuses only what explore refuses."""
    import re

    from sssn_verify.cli import build_parser
    from sssn_verify.explore import RQF_QUANTITIES, RQF_UNDEFINED
    sub = build_parser(["find"])._subparsers._group_actions[0].choices["find"]
    text = " ".join(sub.format_help().split())
    listed, refused = re.search(r"--field rqf .*?its quantities are (.*) \((.*?) are not defined for it", text).groups()
    names = {re.sub(r" .*", "", q.strip()) for q in listed.split(",")}
    assert names == set(RQF_QUANTITIES) and "lambda_bar" in names
    assert refused == "k1 and the MLP sigmas" and set(RQF_UNDEFINED) == {"k1", "sigma_w", "sigma_b", "sigma_a"}


def test_check_dissipation_on_rqf_is_refused_for_its_evidence_not_for_want_of_lambda_bar(capsys):
    """lambda_bar is derived for rqf; check dissipation still refuses the field, because its variables and its
    evidence (one exact Gaussian layer of the MLP field's kernel) are the MLP field's."""
    from sssn_verify.check import RQF_REFUSALS
    reason = RQF_REFUSALS["dissipation"]
    assert "not derived" not in reason and "undefined" not in reason
    assert "evidence" in reason and "MLP field" in reason
    code, out, err = _run(["check", "dissipation", "--candidate", "2*sigma_q**2", "--field", "rqf"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "evidence" in err and "rqf" in err, err


@pytest.mark.parametrize("S, beta", [(1.7, 1.0), (0.6, 7.5)])
def test_derive_general_field_rqf_gives_lambda_bar_and_its_edge_and_antipodal_values(S, beta, capsys):
    """derive general_field --field rqf prints lambda_bar(beta) (regime's), its argmax, the edge value 2 S^2 and the
    value 0 at rho = -1 (docs/mathematics.md), in JSON, text and LaTeX."""
    import sssn_verify as sv
    argv = ["derive", "general_field", "--field", "rqf", "--sigma-q", str(S), "--d", "4"]
    argv += [] if beta == 1.0 else ["--beta", str(beta)]            # 1 is the default
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    g = sv.regime(field="rqf", sigma_q=S, d=4, beta=beta)
    assert got["beta"] == beta
    assert (got["lambda_bar"], got["lambda_bar_argmax"], got["lambda_bar_edge"]) == (
        g.lambda_bar, g.lambda_bar_argmax, g.lambda_bar_edge)
    assert got["lambda_bar"] == pytest.approx(2 * S**2, rel=1e-15) and got["lambda_bar_argmax"] == 1.0
    assert got["lambda_bar_edge"] == pytest.approx(2 * S**2, rel=1e-15) and got["lambda_bar_anti"] == 0.0
    code, out, err = _run(argv, capsys)
    assert code == 0 and f"beta={beta}, lambda_bar={g.lambda_bar}, lambda_bar_argmax=1.0" in out, err
    assert f"lambda_bar_edge={g.lambda_bar_edge}, lambda_bar_anti=0.0" in out
    code, out, err = _run([*argv, "--format", "latex"], capsys)
    assert code == 0 and f"$\\beta = {beta:g}$" in out and "$\\bar\\lambda(\\beta) = " in out, err


@pytest.mark.parametrize("argv, words", [
    (["kernel", "--beta", "2"], ["beta", "general_field --field rqf"]),
    (["general_field", "--beta", "2"], ["beta", "general_field --field rqf"]),
    (["general_field", "--field", "rqf", "--beta", "nan"], ["beta", "finite"]),
    (["general_field", "--field", "rqf", "--beta", "-1"], ["beta", ">= 0"]),
    (["general_field", "--field", "rqf", "--beta", "1e300"], ["beta"]),
])
def test_derive_beta_refusals(argv, words, capsys):
    code, out, err = _run(["derive", *argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
