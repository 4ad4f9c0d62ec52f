"""The rqf field (``--field rqf --sigma-q S``) on scan, sync-time, phase-diagram, find, derive, check and warmup,
and the projective columns of scan / phase-diagram --values.

The numbers are compared with values computed here without the package's derivation: the closed forms of
docs/mathematics.md ("The random quadratic form": a(1) = S^2/2, lambda_1 = -S^2, lambda_bar = lambda_bar_proj = 2 S^2,
lambda_proj = -S^2) typed in numpy, a numpy Monte Carlo of one layer of the tangent flow of
x' = Pi(x + sqrt(h) Q x) written here (for lambda_1 and the variance rate of the log-distance that
sync-time uses), the inverse Gaussian moments written by hand, and regime's answers (the command the
others must agree with).  Then the refusals (one line, exit 2) and the CLI against the Python API.
"""
from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

import sssn_verify as sv
from sssn_verify.errors import SSSNError

SIGMAS = (0.3, 1.0, 1.7)


def _docs(S):
    """docs/mathematics.md's rqf rates at S (numpy, typed from the document)."""
    S = np.asarray(S, dtype=float)
    return {"k0": S**2 / 2, "lambda1": -S**2, "lambda_bar_proj": 2 * S**2, "lambda_proj": -S**2}


def _run(argv, capsys):
    """(exit code, stdout, stderr) of the command line, in process (argparse's refusals exit by SystemExit)."""
    from hostile_cli_helpers import run
    return run(argv, capsys)[:3]


def _refused(argv, capsys, *words):
    code, out, err = _run(argv, capsys)
    assert code == 2, (argv, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# ----------------------------------------------------------------------------- an independent Monte Carlo
def _rqf_tangent_moments(S: float, d: int, h: float, n: int, seed: int):
    """One layer of the tangent flow of x' = Pi(x + sqrt(h) Q x), Q = S (B + B^T)/2, from x = e_1, v = e_2,
    antithetic (Q, -Q) and Richardson over h, h/2 on the same Q: (mean rate of log|v'|, its stderr, the variance
    rate E[(log|v'|)^2]/h, its stderr).  The derivative of Pi at y is (I - y y^T/|y|^2)/|y|."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, d, d))
    Q = S * (B + np.swapaxes(B, 1, 2)) / 2
    x = np.zeros(d)
    x[0] = 1.0
    v = np.zeros(d)
    v[1] = 1.0

    def logv(step, sign):
        g = sign * math.sqrt(step) * Q
        y = x + g @ x                                   # (n, d)
        w = v + g @ v
        ny = np.linalg.norm(y, axis=1)
        yh = y / ny[:, None]
        w = w - np.sum(w * yh, axis=1)[:, None] * yh
        return np.log(np.linalg.norm(w, axis=1) / ny)

    def rates(step):
        a, b = logv(step, 1.0), logv(step, -1.0)
        return (a + b) / 2 / step, (a * a + b * b) / 2 / step

    m1, q1 = rates(h)
    m2, q2 = rates(h / 2)
    mean = 2 * m2 - m1
    var = 2 * q2 - q1
    return mean.mean(), mean.std(ddof=1) / math.sqrt(n), var.mean(), var.std(ddof=1) / math.sqrt(n)


# ----------------------------------------------------------------------------- scan
def test_scan_rqf_against_the_documents_closed_forms_and_regime():
    from sssn_verify.scan import COLUMNS, MLP_ONLY_COLUMNS, RQF_COLUMNS
    df = sv.scan(field="rqf", sigma_q=list(SIGMAS), d=[2, 5], beta=[0.0, 2.0], attention_scale=[1.0, -0.5])
    assert len(df) == 3 * 2 * 2 * 2 and list(df.columns) == list(RQF_COLUMNS)
    assert not set(MLP_ONLY_COLUMNS) & set(df.columns)
    ref = _docs(df["sigma_q"].to_numpy())
    ref.update(lambda_bar=2 * df["sigma_q"].to_numpy() ** 2, lambda_bar_edge=2 * df["sigma_q"].to_numpy() ** 2)
    for col, want in ref.items():
        np.testing.assert_allclose(df[col].to_numpy(), want, rtol=1e-13, err_msg=col)
    assert df["synchronizes"].all() and df["sync_up_to_sign"].all() and df["odd_field"].all()
    for row in df.itertuples():
        g = sv.regime(sv.ModelParams(field="rqf", sigma_q=row.sigma_q, d=row.d, beta=row.beta, V=row.attention_scale))
        assert (row.k0, row.lambda1, row.lambda_bar_proj, row.lambda_proj, row.lambda_bar, row.lambda_bar_edge) == (
            g.k0, g.lambda1, g.lambda_bar_proj, g.lambda_proj, g.lambda_bar, g.lambda_bar_edge)
        assert row.rate_lower_bound == pytest.approx(g.rate_lower_bound, rel=1e-13, abs=1e-15)
        assert (None if pd.isna(row.dissipates) else bool(row.dissipates)) == g.dissipates
        assert row.c_att == pytest.approx(g.c_att, rel=1e-13, abs=0.0)
        assert bool(row.synchronizes) == g.synchronizes and bool(row.sync_up_to_sign) == g.sync_up_to_sign
    # the order of the grid: d, sigma_q, beta, attention_scale (the last fastest)
    assert list(df["attention_scale"][:2]) == [1.0, -0.5] and list(df["d"][:8]) == [2] * 8
    # COLUMNS says which columns an rqf scan lacks
    for c in MLP_ONLY_COLUMNS:
        assert "absent from an rqf scan" in COLUMNS[c], c
    assert set(df.attrs["columns"]) == set(df.columns) and df.attrs["field"] == "rqf"
    off = sv.scan(field="rqf", sigma_q=1.0, attention_scale=0.0)
    assert "c_att" not in off.columns


def test_scan_projective_columns_in_every_frame():
    """odd_field, lambda_bar_proj, lambda_proj, sync_up_to_sign: regime's values where the field is odd (tanh,
    sin:3 without bias), NaN / <NA> elsewhere (a bias, ReLU)."""
    from sssn_verify.scan import PROJECTIVE_COLUMNS
    df = sv.scan(activation=["tanh", "relu", "sin:3"], d=[3, 6], sigma_w=1.2, sigma_b=[0.0, 0.4], beta=[0.0, 1.5])
    assert set(PROJECTIVE_COLUMNS) <= set(df.columns)
    odd = (df["activation"] != "relu") & (df["sigma_b"] == 0.0)
    np.testing.assert_array_equal(df["odd_field"].to_numpy(), odd.to_numpy())
    assert df.loc[~odd, ["lambda_bar_proj", "lambda_proj"]].isna().all().all()
    assert df.loc[~odd, "sync_up_to_sign"].isna().all()
    assert df.loc[odd, ["lambda_bar_proj", "lambda_proj"]].notna().all().all()
    for row in df[odd].itertuples():
        g = sv.regime(activation=row.activation, d=row.d, sigma_w=1.2, sigma_b=0.0, beta=row.beta)
        assert g.odd_field
        assert row.lambda_proj == pytest.approx(g.lambda_proj, rel=1e-12, abs=1e-14)
        assert row.lambda_bar_proj == pytest.approx(g.lambda_bar_proj, rel=1e-12, abs=1e-14)
        assert bool(row.sync_up_to_sign) == g.sync_up_to_sign
    # the projective energy rate does not involve beta
    both = df[odd].groupby(["activation", "d"])["lambda_bar_proj"].nunique()
    assert (both == 1).all()
    for col in PROJECTIVE_COLUMNS:
        assert col in sv.scan(activation="relu").columns


def test_scan_cli_agrees_with_the_api_and_says_undefined(capsys):
    code, out, err = _run(["scan", "--field", "rqf", "--sigma-q", "0.5:2:4", "--d", "3,5", "--format", "csv"], capsys)
    assert code == 0, err
    cli = pd.read_csv(io.StringIO(out))
    api = sv.scan(field="rqf", sigma_q=np.linspace(0.5, 2, 4), d=[3, 5])
    assert list(cli.columns) == list(api.columns)
    for col in ("d", "sigma_q", "k0", "lambda1", "lambda_bar_proj", "lambda_proj"):
        np.testing.assert_array_equal(cli[col].to_numpy(float), api[col].to_numpy(float))
    # undefined projective rates: empty in CSV, null in JSON, "undefined"/"undetermined" in text
    code, out, _ = _run(["scan", "--activation", "relu,tanh", "--d", "4", "--format", "csv"], capsys)
    frame = pd.read_csv(io.StringIO(out))
    assert frame["lambda_proj"].isna().tolist() == [True, False]
    code, out, _ = _run(["scan", "--activation", "relu", "--d", "4", "--json"], capsys)
    (row,) = json.loads(out)
    assert row["lambda_proj"] is None and row["lambda_bar_proj"] is None and row["sync_up_to_sign"] is None
    assert row["odd_field"] is False
    code, out, _ = _run(["scan", "--activation", "relu", "--d", "4"], capsys)
    assert "undefined" in out and "undetermined" in out and "NaN" not in out and "<NA>" not in out


@pytest.mark.parametrize("argv, words", [
    (["--field", "rqf", "--sigma-w", "2"], ["sigma_w", "rqf"]),
    (["--field", "rqf", "--activation", "tanh"], ["activation", "rqf"]),
    (["--field", "rqf", "--hidden", "tanh 1 0"], ["hidden", "rqf"]),
    (["--sigma-q", "2"], ["sigma_q", "rqf"]),
    (["--field", "rqf", "--sigma-q", "0"], ["sigma_q", "> 0"]),
    (["--field", "rqf", "--sigma-q", "nan"], ["sigma_q"]),
    (["--field", "rqf", "--sigma-q", "1e999"], ["sigma_q"]),
    (["--field", "rqf", "--sigma-q", "1:2:0"], ["sigma_q"]),
    (["--field", "rqf", "--sigma-q", "1,,2"], ["sigma_q"]),
    (["--field", "rqf", "--sigma-q", "1e7"], ["sigma_q"]),
    (["--field", "quadratic"], ["field"]),
])
def test_scan_field_refusals(argv, words, capsys):
    _refused(["scan", *argv], capsys, *words)


def test_scan_field_refusals_in_python():
    for kwargs in (dict(field="rqf", sigma_w=2.0), dict(field="rqf", activation=["relu", "tanh"]), dict(sigma_q=2.0),
                   dict(field="rqf", sigma_q=[]), dict(field="rqf", sigma_q=-1.0), dict(field="x"),
                   dict(field="rqf", sigma_q=float("inf"))):
        with pytest.raises(SSSNError):
            sv.scan(**kwargs)


# ----------------------------------------------------------------------------- phase diagram
def test_phase_diagram_rqf_grid_and_figure(capsys, tmp_path):
    code, out, err = _run(["phase-diagram", "--field", "rqf", "--x", "d", "--y", "sigma_q", "--x-range", "2", "4",
                           "--y-range", "0.5", "1.5", "--resolution", "3", "--format", "csv"], capsys)
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame["d"]) == [2, 3, 4] * 3 and list(frame["sigma_q"]) == [0.5] * 3 + [1.0] * 3 + [1.5] * 3
    for col, want in _docs(frame["sigma_q"].to_numpy()).items():
        np.testing.assert_allclose(frame[col].to_numpy(), want, rtol=1e-13, err_msg=col)
    # the default y axis of --field rqf is sigma_q
    code, out, _ = _run(["phase-diagram", "--field", "rqf", "--resolution", "2", "--x-range", "2", "3", "--json"], capsys)
    assert code == 0 and {r["sigma_q"] for r in json.loads(out)} == {0.1, 2.0}
    from sssn_verify.phase_diagram import phase_grid, sign_regions
    lam1, lbp = phase_grid("relu", "d", "sigma_q", np.arange(2, 5), np.array([0.5, 1.0]), {}, field="rqf")
    np.testing.assert_allclose(lam1, -np.array([[0.25] * 3, [1.0] * 3]), rtol=1e-13)
    np.testing.assert_allclose(lbp, np.array([[0.5] * 3, [2.0] * 3]), rtol=1e-13)
    code_ = sign_regions("relu", "d", "sigma_q", np.arange(2, 5), np.array([0.5, 1.0]), {}, field="rqf")
    assert np.all(code_ == 1)                       # lambda_1 < 0, lambda_bar_proj > 0 everywhere
    fig = sv.phase_diagram_figure(field="rqf", sigma_q=1.0, x="d", y="sigma_q", xs=np.arange(2, 5),
                                  ys=np.array([0.5, 1.0]), values="lambda_proj")
    assert "rqf" in fig.axes[0].get_title()
    out_png = tmp_path / "rqf.png"
    code, out, err = _run(["phase-diagram", "--field", "rqf", "--values", "lambda_bar_proj", "--resolution", "3",
                           "--out", str(out_png)], capsys)
    assert code == 0 and out_png.read_bytes()[:4] == b"\x89PNG", err


def test_phase_diagram_rqf_lambda_bar_is_scans_and_regimes(capsys, tmp_path):
    """--values lambda_bar and --beta with --field rqf: the grid's lambda_bar and dissipation columns are those of
    scan's rqf rows and of regime at every point (2 sigma_q^2, docs/mathematics.md), the figure draws it at beta."""
    argv = ["phase-diagram", "--field", "rqf", "--x", "d", "--y", "sigma_q", "--x-range", "2", "4", "--y-range",
            "0.5", "1.5", "--resolution", "3", "--beta", "2.5", "--values", "lambda_bar"]
    code, out, err = _run([*argv, "--format", "csv"], capsys)
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert (frame["beta"] == 2.5).all()
    np.testing.assert_allclose(frame["lambda_bar"], 2 * frame["sigma_q"] ** 2, rtol=1e-13)
    api = sv.scan(field="rqf", d=[2, 3, 4], sigma_q=[0.5, 1.0, 1.5], beta=2.5, attention_scale=0.0)
    for row in frame.itertuples():
        g = sv.regime(field="rqf", sigma_q=row.sigma_q, d=row.d, beta=2.5, V=0.0)
        want = api[(api["d"] == row.d) & (api["sigma_q"] == row.sigma_q)].iloc[0]
        for col in ("lambda_bar", "lambda_bar_edge", "lambda_bar_argmax", "rate_lower_bound"):
            assert getattr(row, col) == want[col] == getattr(g, col), col
        assert row.rate_upper_bound == want["rate_upper_bound"] == g.lambda_bar + g.c_att
        assert row.dissipates == want["dissipates"] == g.dissipates is False
    png = tmp_path / "rqf_lambda_bar.png"
    code, out, err = _run([*argv, "--out", str(png)], capsys)
    assert code == 0 and png.read_bytes()[:4] == b"\x89PNG", err
    fig = sv.phase_diagram_figure(field="rqf", sigma_q=1.0, beta=2.5, x="d", y="sigma_q", xs=np.arange(2, 5),
                                  ys=np.array([0.5, 1.0]), values="lambda_bar")
    assert "lambda_bar (beta=2.5)" in fig.axes[0].get_title()


def test_phase_diagram_projective_values_blank_where_not_odd(capsys, tmp_path):
    code, out, err = _run(["phase-diagram", "--activation", "tanh", "--x", "d", "--y", "sigma_b", "--x-range", "3", "4",
                           "--y-range", "0", "1", "--resolution", "2", "--values", "lambda_bar_proj", "--format", "csv"],
                          capsys)
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert frame.loc[frame["sigma_b"] == 0, "lambda_bar_proj"].notna().all()
    assert frame.loc[frame["sigma_b"] > 0, "lambda_bar_proj"].isna().all()
    png = tmp_path / "t.png"
    code, _, err = _run(["phase-diagram", "--activation", "tanh", "--x", "sigma_w", "--y", "sigma_b", "--resolution", "3",
                         "--values", "lambda_proj", "--out", str(png)], capsys)
    assert code == 0 and png.exists(), err
    _refused(["phase-diagram", "--activation", "relu", "--values", "lambda_proj", "--out", str(png)], capsys,
             "lambda_proj", "not odd")


@pytest.mark.parametrize("argv, words", [
    (["--field", "rqf", "--y", "sigma_b", "--format", "csv"], ["sigma_b", "rqf"]),
    (["--field", "rqf", "--x", "beta", "--format", "csv"], ["beta", "not an axis"]),
    (["--field", "rqf", "--beta", "-1", "--format", "csv"], ["beta"]),
    (["--field", "rqf", "--sigma-a", "2", "--format", "csv"], ["sigma_a", "rqf"]),
    (["--field", "rqf", "--confirm", "--out", "/tmp/never.png"], ["confirm", "rqf"]),
    (["--x", "sigma_q", "--format", "csv"], ["sigma_q", "rqf"]),
    (["--sigma-q", "3", "--format", "csv"], ["sigma_q", "rqf"]),
    (["--field", "rqf", "--sigma-q", "-1", "--x", "d", "--y", "d", "--format", "csv"], ["y"]),
    (["--field", "rqf", "--x", "d", "--y", "sigma_q", "--y-range", "-1", "1", "--format", "csv"], ["sigma_q"]),
])
def test_phase_diagram_field_refusals(argv, words, capsys):
    _refused(["phase-diagram", *argv], capsys, *words)


# ----------------------------------------------------------------------------- sync-time
@pytest.mark.parametrize("S", [0.7, 1.3])
def test_sync_time_rqf_rates_against_an_independent_layer_monte_carlo(S, capsys):
    """lambda_1 and the log-distance variance rate sync-time uses for rqf against one layer of the tangent flow
    simulated here (numpy, antithetic, Richardson): within 5 standard errors plus the O(h^2) bias allowance."""
    code, out, err = _run(["sync-time", "--field", "rqf", "--sigma-q", str(S), "--d", "4", "--eps0", "1e-2",
                           "--eps", "1e-5", "--json"], capsys)
    assert code == 0, err
    law = json.loads(out)
    m, m_se, v, v_se = _rqf_tangent_moments(S, 4, 0.02 / S**2, 200_000, seed=11)
    assert abs(law["lambda1"] - m) <= 5 * m_se + 2e-3 * S**2, (law["lambda1"], m, m_se)
    assert abs(law["log_distance_variance"] - v) <= 5 * v_se + 5e-3 * S**2, (law["log_distance_variance"], v, v_se)
    # the documents' closed forms, and the inverse Gaussian moments written by hand: a/|m|, a s^2/|m|^3
    assert law["lambda1"] == pytest.approx(-S**2, rel=1e-13)
    assert law["log_distance_variance"] == pytest.approx(2 * S**2, rel=1e-13)
    a = math.log(1e-2 / 1e-5)
    assert law["mean"] == pytest.approx(a / S**2, rel=1e-10)
    assert law["std"] == pytest.approx(math.sqrt(a * 2 * S**2 / S**6), rel=1e-10)
    # the Python API gives the same law
    from sssn_verify.sync_time import sync_time_law
    api = sync_time_law(sv.ModelParams(field="rqf", sigma_q=S, d=4), 1e-2, 1e-5)
    assert (api.lambda1, api.sigma2, api.mean) == (law["lambda1"], law["log_distance_variance"], law["mean"])


@pytest.mark.parametrize("argv, words", [
    (["--field", "rqf", "--activation", "tanh"], ["activation", "rqf"]),
    (["--field", "rqf", "--sigma-q", "inf"], ["sigma_q"]),
    (["--field", "rqf", "--sigma-q", "0"], ["sigma_q"]),
    (["--sigma-q", "2"], ["sigma_q", "rqf"]),
    (["--field", "rqf", "--sigma-q", "x"], ["sigma-q"]),
    (["--field", "rqf", "--sigma-q", "1e-300"], ["sigma_q", "too small"]),
])
def test_sync_time_field_refusals(argv, words, capsys):
    _refused(["sync-time", "--eps0", "1e-2", "--eps", "1e-4", *argv], capsys, *words)


# ----------------------------------------------------------------------------- find
def test_find_rqf(capsys):
    from sssn_verify.explore import find
    res = find("lambda1 < 0", field="rqf", max_examples=40)
    assert not res.found and res.undetermined == 0 and res.domain["sigma_q"] == [0.05, 3.0]
    res = find("lambda_bar_proj < 0", field="rqf", max_examples=40)
    c = res.counterexample
    assert res.found and c["field"] == "rqf" and set(c) == {"field", "d", "sigma_q", "beta"}
    assert res.values["lambda_bar_proj"] == pytest.approx(2 * c["sigma_q"] ** 2, rel=1e-13)
    assert res.values["lambda_bar"] == pytest.approx(2 * c["sigma_q"] ** 2, rel=1e-13)   # derived for rqf
    assert res.values["k1"] != res.values["k1"]                                  # nan: not defined for rqf
    # --sigma-q pins the scale: lambda_proj = -S^2 < -1 holds for S = 1.2 and fails for S = 0.9
    assert not find("lambda_proj < -1", field="rqf", sigma_q=1.2, max_examples=20).found
    res = find("lambda_proj < -1", field="rqf", sigma_q=0.9, max_examples=20)
    assert res.found and res.counterexample["sigma_q"] == 0.9
    assert res.values["lambda_proj"] == pytest.approx(-0.81, rel=1e-13)
    # the CLI gives the same search
    code, out, err = _run(["find", "lambda_proj < -1", "--field", "rqf", "--sigma-q", "0.9", "--explore", "20",
                           "--json"], capsys)
    assert code == 1, err
    assert json.loads(out)["counterexample"] == res.counterexample
    code, out, _ = _run(["find", "k0 < 4", "--field", "rqf", "--explore", "200"], capsys)
    assert code == 1 and "field rqf" in out                                    # a(1) = S^2/2 >= 4 at S >= 2.83


@pytest.mark.parametrize("argv, words", [
    (["k1 > 0", "--field", "rqf"], ["k1", "rqf"]),
    (["lambda1 < 0", "--field", "rqf", "--assume", "sigma_b > 1"], ["sigma_b", "rqf"]),
    (["lambda1 < 0", "--field", "rqf", "--activation", "tanh"], ["activation", "rqf"]),
    (["lambda1 < 0", "--field", "rqf", "--activations", "all"], ["activation", "rqf"]),
    (["lambda1 < 0", "--sigma-q", "2"], ["sigma_q", "rqf"]),
    (["sigma_q > 1"], ["sigma_q", "rqf"]),
    (["lambda1 < 0", "--field", "rqf", "--sigma-q", "nan"], ["sigma_q"]),
    (["lambda1 < 0", "--field", "rqf", "--sigma-q", "1e300"], ["sigma_q"]),
    (["lambda1 < 0", "--field", "rqf", "--assume", "sigma_q > 5"], ["sigma_q"]),
])
def test_find_field_refusals(argv, words, capsys):
    _refused(["find", *argv], capsys, *words)


# ----------------------------------------------------------------------------- derive
def test_derive_general_field_at_the_rqf_parameters(capsys):
    S = 1.7
    code, out, err = _run(["derive", "general_field", "--field", "rqf", "--sigma-q", str(S), "--d", "5", "--json"],
                          capsys)
    assert code == 0, err
    got = json.loads(out)
    # docs/mathematics.md: lambda_i = -i S^2, i = 1..d-1
    np.testing.assert_allclose(got["lyapunov_spectrum"], -np.arange(1, 5) * S**2, rtol=1e-13)
    want = _docs(S)
    assert got["field"] == "rqf" and got["sigma_q"] == S and got["name"] == "general_field"
    assert got["a1"] == pytest.approx(want["k0"], rel=1e-13)
    assert got["one_point_rate"] == pytest.approx(S**2 / 4, rel=1e-13)             # Brownian motion at rate S^2/4
    for k in ("lambda1", "lambda_bar_proj", "lambda_proj"):
        assert got[k] == pytest.approx(float(want[k]), rel=1e-13), k
    assert got["log_sin_rate"] == pytest.approx(-S**2, rel=1e-13)
    assert got["log_distance_variance"] == pytest.approx(2 * S**2, rel=1e-13)
    g = sv.regime(field="rqf", sigma_q=S)
    assert (got["a1"], got["lambda1"], got["lambda_proj"]) == (g.k0, g.lambda1, g.lambda_proj)
    code, out, _ = _run(["derive", "general_field", "--field", "rqf", "--sigma-q", str(S), "--format", "latex"], capsys)
    assert code == 0 and "For the rqf field at $\\sigma_q = 1.7$" in out and "\\lambda_1 = -2.89" in out
    code, out, _ = _run(["derive", "general_field", "--field", "rqf", "--sigma-q", "1.5"], capsys)
    assert code == 0 and "field=rqf, sigma_q=1.5, d=3, a1=1.125" in out and "lambda_proj=-2.25" in out
    code, out, _ = _run(["derive", "general_field", "--json"], capsys)      # without --field: no rqf numbers
    assert code == 0 and "a1" not in json.loads(out)


@pytest.mark.parametrize("argv, words", [
    (["kernel", "--field", "rqf"], ["general_field", "kernel"]),
    (["all", "--field", "rqf"], ["general_field"]),
    (["general_field", "--sigma-q", "2"], ["sigma_q", "rqf"]),
    (["general_field", "--field", "rqf", "--sigma-q", "0"], ["sigma_q"]),
    (["general_field", "--field", "rqf", "--sigma-w", "3"], ["sigma_w", "rqf"]),
])
def test_derive_field_refusals(argv, words, capsys):
    _refused(["derive", *argv], capsys, *words)


# ----------------------------------------------------------------------------- check, warmup
def test_check_refuses_every_claim_the_rqf_field_does_not_enter_with_the_reason(capsys):
    from sssn_verify.check import RQF_REFUSALS, check_candidate, checkable
    claims = set(checkable().values())
    assert set(RQF_REFUSALS) == claims - {"attention_bound"}        # C_att: no noise field enters it
    for alias in checkable():
        name = checkable()[alias]
        if name == "attention_bound":
            continue
        line = _refused(["check", alias, "--candidate", "k0", "--field", "rqf"], capsys, name, "rqf")
        assert RQF_REFUSALS[name].split(":")[0] in line
        with pytest.raises(SSSNError):
            check_candidate(alias, "k0", field="rqf")
    _refused(["check", "attention_bound", "--candidate", "2*(sum_V + beta*sum_VKQ)", "--field", "rqf",
              "--sigma-w", "2"], capsys, "sigma_w", "rqf")
    _refused(["check", "attention_bound", "--candidate", "2*(sum_V + beta*sum_VKQ)", "--sigma-q", "2"], capsys,
             "sigma_q", "rqf")


def test_warmup_field_rqf_covers_the_rqf_kernels(capsys):
    from sssn_verify.cli.warmup import rqf_steps
    labels = [label for label, _ in rqf_steps()]
    assert {"simulate rqf", "simulate rqf_sde", "tangent flow", "one-layer rates"} <= set(labels)
    _refused(["warmup", "--field", "rqf", "--sigma-w", "2"], capsys, "sigma_w", "rqf")


# ----------------------------------------------------------------------------- help
@pytest.mark.parametrize("name", ["scan", "sync-time", "phase-diagram", "find", "derive", "check", "warmup"])
def test_field_options_in_help_with_an_example_and_default(name):
    from sssn_verify.cli import build_parser
    sub = build_parser([name])._subparsers._group_actions[0].choices[name]
    text = " ".join(sub.format_help().split())
    assert "--field {mlp,rqf}" in text and "--sigma-q" in text
    assert "rqf: the scale of the random symmetric matrix Q" in text
    assert "(default: mlp)" in text
    assert "(default: 1)" in text or "(default: 1.0)" in text or "(default: searched over" in text
    examples = sub.format_help().rsplit("\nexamples:\n", 1)[1]
    assert "--field rqf" in examples, name
