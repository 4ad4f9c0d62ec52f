"""sv.scan and ``sssn-verify scan``: a DataFrame of rates over a grid, checked against values
computed here independently of the package's formulas (the ReLU arc-cosine kernel written by hand,
the generator ratio L2 f / f derived by hand in a stable form, its sup by a separate dense grid and
golden-section search), and the CLI against the API."""
from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import sssn_verify as sv
from sssn_verify.errors import ParameterError
from sssn_verify.scan import parse_axis, scan


# ----------------------------------------------------------------------------- independent ReLU values
def _relu_gap(u, sw, sb, sa):
    """k0 - K(1 - u) for ReLU, written without cancellation: with cos(alpha) = (sw^2 rho + sb^2)/s^2,
    K = sa^2 s^2/(2 pi) (sin a + (pi - a) cos a), so k0 - K = sa^2 s^2/(2 pi) (2 (pi - a) sin^2(a/2)
    + (a - sin a)), every term >= 0; a - sin a by its series for small a."""
    s2 = sw * sw + sb * sb
    a = 2.0 * np.arcsin(np.sqrt(np.clip(sw * sw * u / (2.0 * s2), 0.0, 1.0)))
    a2 = a * a
    series = a * a2 / 6.0 * (1 - a2 / 20.0 * (1 - a2 / 42.0 * (1 - a2 / 72.0 * (1 - a2 / 110.0))))
    a_minus_sin = np.where(a < 0.1, series, a - np.sin(a))
    return sa * sa * s2 / (2 * np.pi) * (2.0 * (np.pi - a) * np.sin(a / 2) ** 2 + a_minus_sin)


def _relu_ratio(u, d, sw, sb, sa, beta):
    """L2 f / f at rho = 1 - u, f = e^beta - e^{beta rho}: b = -(d-1) k0 rho + (d-2+rho^2) K,
    a = 2 (1-rho^2)(k0 - rho K) give, with G = k0 - K, b = k0 u (d-3+u) - (d-2+rho^2) G and
    a = 2 u (2-u)(k0 u + rho G); f'/f = -beta/expm1(beta u) (-1/u at beta = 0)."""
    k0 = sa * sa * (sw * sw + sb * sb) / 2.0
    rho = 1.0 - u
    G = _relu_gap(u, sw, sb, sa)
    n_over_u = k0 * (d - 3 + u) - (d - 2 + rho * rho) * G / u + beta * (2 - u) * (k0 * u + rho * G)
    factor = np.where(beta * u > 0, beta * u / np.expm1(np.where(beta * u > 0, beta * u, 1.0)), 1.0)
    return -n_over_u * factor


def _relu_lambda_bar(d, sw, sb, sa, beta):
    """sup over rho in [-1, 1) of L2 f / f: the edge limit (d-1) k1 - (d-3) k0 (k1 = sa^2 sw^2/2) or
    the max over a dense grid in u (geometric near 0, uniform beyond), polished by golden-section
    search in the two cells around the best grid point (every row at once)."""
    d, sb = np.broadcast_arrays(np.asarray(d, float), np.asarray(sb, float))
    d, sb = d.ravel(), sb.ravel()
    k0 = sa * sa * (sw * sw + sb * sb) / 2.0
    k1 = sa * sa * sw * sw / 2.0
    edge = (d - 1) * k1 - (d - 3) * k0
    grid = np.unique(np.concatenate([np.geomspace(1e-12, 1e-3, 400), np.linspace(1e-3, 2.0, 4001)]))
    best = np.empty(d.size)
    for lo_row in range(0, d.size, 256):
        r = slice(lo_row, lo_row + 256)
        vals = _relu_ratio(grid[None, :], d[r, None], sw, sb[r, None], sa, beta)
        i = np.argmax(vals, axis=1)
        a = grid[np.maximum(i - 1, 0)]
        b = grid[np.minimum(i + 1, grid.size - 1)]
        g = (math.sqrt(5) - 1) / 2
        f = lambda uu: _relu_ratio(uu, d[r], sw, sb[r], sa, beta)   # noqa: E731
        x1, x2 = b - g * (b - a), a + g * (b - a)
        f1, f2 = f(x1), f(x2)
        for _ in range(80):
            left = f1 > f2
            b, a = np.where(left, x2, b), np.where(left, a, x1)
            x2n, x1n = np.where(left, x1, a + g * (b - a)), np.where(left, b - g * (b - a), x2)
            f2, f1 = np.where(left, f1, f(x2n)), np.where(left, f(x1n), f2)
            x1, x2 = x1n, x2n
        best[r] = np.maximum(vals[np.arange(i.size), i], np.maximum(f1, f2))
    return np.maximum(edge, best)


def test_scan_relu_agrees_with_independent_values():
    """The acceptance grid (10,240 points: d = 2..65, sigma_b in linspace(0, 3, 160), beta = 1) against
    the hand-written ReLU values: deterministic, tolerance 1e-9 relative to the independent value
    itself (measured: <= 1.3e-15); where that value is exactly 0 (d = 5, sigma_b = 1: the edge value
    (2 - 2 sigma_b^2)/2 vanishes) a relative error is undefined and the scan must give 0 to 1e-15 k0."""
    df = sv.scan(activation="relu", d=range(2, 66), sigma_b=np.linspace(0, 3, 160), sigma_w=1, sigma_a=1)
    assert len(df) == 10240 and list(df.columns[:7]) == ["activation", "d", "sigma_w", "sigma_b", "sigma_a",
                                                         "beta", "attention_scale"]
    d, sb = df["d"].to_numpy(float), df["sigma_b"].to_numpy()
    k0 = (1 + sb**2) / 2
    np.testing.assert_allclose(df["k0"], k0, rtol=1e-13)
    np.testing.assert_allclose(df["k1"], 0.5, rtol=1e-13)
    lam1 = -(2 + (d - 1) * sb**2) / 4                       # README's ReLU finding, sigma_a = sigma_w = 1
    assert np.all(np.abs(df["lambda1"] - lam1) <= 1e-9 * np.abs(lam1))      # lambda_1 < 0 everywhere
    ref = _relu_lambda_bar(d, 1.0, sb, 1.0, 1.0)
    got = df["lambda_bar"].to_numpy()
    zero = ref == 0.0
    assert 0 < zero.sum() <= 2 and np.all(np.abs(got[zero]) <= 1e-15 * k0[zero])
    err = np.abs(got[~zero] - ref[~zero]) / np.abs(ref[~zero])
    assert err.max() <= 1e-9, (err.max(), df[~zero].iloc[int(err.argmax())].to_dict())
    edge = (2 - (d - 3) * sb**2) / 2                        # README: (sigma_a^2/2)(2 sigma_w^2 - (d-3) sigma_b^2)
    assert np.all(np.abs(df["lambda_bar_edge"] - edge) <= 1e-12 * np.maximum(np.abs(edge), k0))
    # verdicts: lambda_1 < 0 always (ReLU); dissipation iff lambda_bar < 0 (C_att = 0 for V = I)
    assert df["synchronizes"].all()
    np.testing.assert_array_equal(df["dissipates"].fillna(False).to_numpy(bool), ref < 0)


def test_scan_rows_equal_regime():
    """Each row is regime's answer at that point (tanh, a quadrature kernel, and repulsive attention)."""
    df = sv.scan(activation="tanh", d=[2, 6], sigma_w=1.2, sigma_b=[0.0, 0.3], sigma_a=1, beta=[0, 1],
                 attention_scale=[1.0, -0.5])
    assert len(df) == 16
    for row in df.itertuples():
        V = row.attention_scale
        g = sv.regime(sv.ModelParams(activation="tanh", d=row.d, sigma_w=1.2, sigma_b=row.sigma_b, sigma_a=1,
                                     beta=row.beta, V=V))
        for col in ("k0", "k1", "lambda1", "lambda_bar", "lambda_bar_argmax", "lambda_bar_edge", "c_att",
                    "rate_lower_bound"):
            assert getattr(row, col) == pytest.approx(getattr(g, col), rel=1e-12, abs=1e-14), col
        assert (None if pd.isna(row.dissipates) else bool(row.dissipates)) == g.dissipates
        assert bool(row.synchronizes) == g.synchronizes


def test_scan_columns_and_attention_off():
    df = sv.scan(activation=["relu", "abs"], d=4, sigma_b=[0.5, 1.0], attention_scale=0)
    assert "c_att" not in df.columns and list(df["activation"]) == ["relu", "relu", "abs", "abs"]
    assert set(df.attrs["columns"]) == set(df.columns)


@pytest.mark.parametrize("kwargs", [dict(d=1), dict(sigma_b=[-1.0]), dict(d=[]), dict(beta=float("nan")),
                                    dict(activation="nope(u)")])
def test_scan_bad_input(kwargs):
    with pytest.raises(sv.SSSNError):
        sv.scan(**kwargs)


def test_axis_grammar():
    assert parse_axis("d", "2:5") == [2, 3, 4, 5]
    assert parse_axis("sigma_b", "0:3:4") == [0.0, 1.0, 2.0, 3.0]
    assert parse_axis("beta", "0.5,1,2") == [0.5, 1.0, 2.0]
    assert parse_axis("d", "4") == [4]
    assert parse_axis("activation", "relu,sin(3*u),Max(u, 0)") == ["relu", "sin(3*u)", "Max(u, 0)"]
    for bad in ("1:2:3:4", "a", "5:2", "inf"):
        with pytest.raises(ParameterError):
            parse_axis("d", bad)
    with pytest.raises(ParameterError):
        parse_axis("d", "2:3:4")                 # non-integer d


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sssn_verify", *args], capture_output=True, text=True,
                          timeout=600)


def test_cli_scan_same_numbers_as_api():
    out = _cli("scan", "--activation", "relu", "--d", "2:65", "--sigma-b", "0:3:160", "--sigma-w", "1",
               "--sigma-a", "1", "--format", "csv")
    assert out.returncode == 0, out.stderr
    cli = pd.read_csv(io.StringIO(out.stdout))
    api = sv.scan(activation="relu", d=range(2, 66), sigma_b=np.linspace(0, 3, 160), sigma_w=1, sigma_a=1)
    assert list(cli.columns) == list(api.columns)
    for col in ("d", "sigma_b", "k0", "k1", "lambda1", "lambda_bar", "lambda_bar_argmax", "lambda_bar_edge"):
        np.testing.assert_array_equal(cli[col].to_numpy(float), api[col].to_numpy(float))
    js = _cli("scan", "--activation", "relu", "--d", "4,5", "--sigma-b", "1", "--json")
    assert js.returncode == 0, js.stderr
    rows = json.loads(js.stdout)
    assert [r["d"] for r in rows] == [4, 5]
    assert all(r["dissipates"] in (True, False, None) for r in rows)
    bad = _cli("scan", "--d", "1:3")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_phase_diagram_exports_its_grid_and_draws_values(tmp_path):
    """phase-diagram --format csv|json prints the grid without --confirm (the numbers of sv.scan); the
    figure shows values in PNG, PDF or SVG."""
    grid = _cli("phase-diagram", "--activation", "relu", "--x", "d", "--y", "sigma_b", "--x-range", "2", "5",
                "--y-range", "0", "2", "--resolution", "3", "--beta", "0", "--format", "csv")
    assert grid.returncode == 0, grid.stderr
    frame = pd.read_csv(io.StringIO(grid.stdout))
    assert list(frame["d"]) == [2, 3, 4, 5] * 3 and list(frame["sigma_b"]) == [0.0] * 4 + [1.0] * 4 + [2.0] * 4
    api = sv.scan(activation="relu", d=[2, 3, 4, 5], sigma_b=[0.0, 1.0, 2.0], beta=0.0, attention_scale=0.0)
    api = api.sort_values(["sigma_b", "d"]).reset_index(drop=True)
    np.testing.assert_array_equal(frame["lambda_bar"].to_numpy(), api["lambda_bar"].to_numpy())
    from sssn_verify.phase_diagram import phase_grid
    lam1, lbar = phase_grid("relu", "d", "sigma_b", np.arange(2, 6), np.array([0.0, 1.0, 2.0]), {"beta": 0.0})
    np.testing.assert_array_equal(lbar.ravel(), frame["lambda_bar"].to_numpy())
    for ext in ("png", "pdf", "svg"):
        out = tmp_path / f"pd.{ext}"
        run = _cli("phase-diagram", "--activation", "relu", "--values", "lambda_bar", "--resolution", "4",
                   "--out", str(out))
        assert run.returncode == 0, run.stderr
        head = out.read_bytes()[:64]
        assert {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}[ext] in head
    assert _cli("phase-diagram", "--resolution", "3").returncode == 2          # neither --out nor a grid format


# ----------------------------------------------------------------------------- tidy results
def _fake_result(d=4, n_paths=3, n_tokens=5, depth=6):
    """A SimulationResult with made-up arrays of the engine's shapes (no simulation needed here)."""
    from sssn_verify.engine import SimulationResult
    rng = np.random.default_rng(0)
    p = sv.ModelParams(d=d, n_tokens=n_tokens, activation="tanh", sigma_b=0.3, Q=rng.normal(size=(d, d)))
    tokens = rng.normal(size=(n_paths, n_tokens, d))
    return SimulationResult(model="gaussian", params=p, depth=depth, width=None, n_paths=n_paths, seed=1,
                            init=tokens.copy(), tokens=tokens, energy=rng.random((n_paths, depth + 1)),
                            times=np.linspace(0, 1, depth + 1), betas=np.array([0.5, 2.0]),
                            energies=rng.random((n_paths, depth + 1, 2)))


def test_simulation_result_repr_xarray_and_plot(tmp_path):
    res = _fake_result()
    text = repr(res)
    assert len(text) < 400 and "array" not in text and "gaussian" in text and "(3, 5, 4)" in text
    ds = res.to_xarray()
    assert dict(ds["tokens"].sizes) == {"path": 3, "token": 5, "coordinate": 4}
    assert dict(ds["energy"].sizes) == {"path": 3, "layer": 7} and ds["energies"].dims == ("path", "layer", "beta")
    np.testing.assert_array_equal(ds["time"].values, res.times)
    np.testing.assert_array_equal(ds["energy"].values, res.energy)
    assert ds.attrs["activation"] == "tanh" and ds.attrs["d"] == 4 and ds.attrs["sigma_b"] == 0.3
    fig = res.plot(tmp_path / "e.svg")
    assert fig.axes[0].get_xlabel().startswith("layer") and (tmp_path / "e.svg").read_bytes()[:5] == b"<?xml"
    assert res.plot().axes                                   # no path: the Figure only


def test_regime_to_frame_and_fields():
    g = sv.regime(sv.ModelParams(activation="relu", d=8, sigma_b=1.0, beta=1.0))
    frame = g.to_frame()
    row = sv.scan(activation="relu", d=8, sigma_b=1.0, beta=1.0).iloc[0]
    assert len(frame) == 1 and set(sv.Regime.FIELDS) <= set(frame.columns) | {"rate_interval", "reason"}
    for col in ("k0", "k1", "lambda1", "lambda_bar", "lambda_bar_argmax", "c_att", "rate_lower_bound"):
        assert frame[col].iloc[0] == row[col], col
    d = g.to_dict()
    assert d["verdict"] == g.verdict and d["rate_interval"] == [g.rate_lower_bound, g.lambda_bar + g.c_att]
    assert set(d) <= set(sv.Regime.FIELDS) | {"verdict"}
    json.dumps(d, allow_nan=False)


@pytest.mark.parametrize("kwargs, verdict", [
    (dict(activation="relu", d=8, sigma_b=1.0, beta=1.0), "dissipates"),                 # lambda_bar < 0
    (dict(activation="relu", d=3, sigma_b=0.0, beta=1.0, V=-0.5), "does not dissipate"),  # repulsive attention
    (dict(activation="tanh", d=6, sigma_w=1.2, sigma_b=0.3, beta=1.0), "undetermined"),  # the case
])
def test_regime_verdict_in_words(kwargs, verdict):
    g = sv.regime(sv.ModelParams(**kwargs))
    assert g.verdict.startswith(verdict)
    a, b = g.rate_interval
    assert a <= b and f"{b:.6g}" in g.verdict if verdict == "undetermined" else True
    assert ("because " + g.reason) in g.text() and g.to_dict()["reason"] == g.reason


def test_verify_and_check_results_to_frame():
    from sssn_verify.stats import CheckResult
    from sssn_verify.verify import CHECK_COLUMNS, suite_of
    from sssn_verify.claims.base import ClaimResult
    checks = [CheckResult("a", True, 1.0, 0.1, (0.8, 1.2), 1.0, 0.99, 100, seed=0, pvalue=0.5),
              CheckResult("b", True, 2.0, None, None, 2.0, 0.99, 1, tolerance=1e-8, method="quadrature")]
    res = ClaimResult("kernel", "t", "s", "d", checks, "quick", 0, 0.99, 1.0)
    frame = suite_of([res], "quick", 0).to_frame()
    assert list(frame.columns) == list(CHECK_COLUMNS) and list(frame["check"]) == ["a", "b"]
    assert frame["ci_low"].iloc[0] == 0.8 and pd.isna(frame["ci_low"].iloc[1]) and frame["claim"].iloc[1] == "kernel"
    assert frame["holm_adjusted_p"].iloc[0] == pytest.approx(0.5)
    from sssn_verify.check import CheckOutcome
    out = CheckOutcome("lyapunov", "x", "consistent", 1.0, 0.1, 1.0, 1.0, dict(d=5, sigma_b=0.5), 0.999, 0.4,
                       0.0, 10, 0, "m", "user").to_frame()
    assert len(out) == 1 and out["param_d"].iloc[0] == 5 and out["verdict"].iloc[0] == "consistent"


# ----------------------------------------------------------------------------- long work shows itself
def test_verify_eta_from_recorded_times_and_budgets(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path / "cache"))
    from sssn_verify.claims import CLAIMS
    from sssn_verify.executor import InProcess, Task
    from sssn_verify.verify import budget_ratio, expected_seconds, record_seconds
    assert expected_seconds(["kernel", "lyapunov"], "full") == {"kernel": 1.0, "lyapunov": 1.0}   # nothing known
    record_seconds("quick", {"kernel": 2.0, "lyapunov": 8.0})
    ratio = budget_ratio(CLAIMS["kernel"], "full", "quick")
    assert ratio >= 25                                   # samples 40,000 -> 1,000,000 and more activations
    est = expected_seconds(["kernel", "lyapunov", "two_point"], "full")
    assert est["kernel"] == pytest.approx(2.0 * ratio)
    assert est["two_point"] == sorted([est["kernel"], est["lyapunov"]])[1]      # unknown: the median
    record_seconds("full", {"kernel": 30.0})
    assert expected_seconds(["kernel"], "full") == {"kernel": 30.0}           # its own mode first
    out = InProcess().run([Task("a", abs, (-1,), weight=3.0), Task("b", abs, (2,), weight=1.0)],
                          desc="t", progress=True)
    assert [o.value for o in out] == [1, 2] and "estimated work" in capsys.readouterr().err


def test_coupled_result_plot_and_repr(tmp_path):
    from sssn_verify.engine import CoupledResult
    rng = np.random.default_rng(1)
    p = sv.ModelParams(d=3, n_tokens=4)
    res = CoupledResult(model="coupled", params=p, depth=4, widths=(16, 64, math.inf), n_paths=5, seed=0,
                        init=rng.normal(size=(5, 4, 3)), tokens=rng.normal(size=(5, 3, 4, 3)),
                        energy=rng.random((5, 3, 5)), times=np.linspace(0, 1, 5),
                        max_dev=rng.random((5, 2)) + 0.1, max_dev_config=rng.random((5, 2)))
    assert len(repr(res)) < 400 and "widths=(16, 64, inf)" in repr(res)
    fig = res.plot(tmp_path / "c.png")
    assert fig.axes[0].get_xlabel() == "width m" and (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
