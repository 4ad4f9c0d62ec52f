"""The regime explorer and its CLI against independent computations.

k0 = sa^2 E[phi(sU)^2] and k1 = sa^2 sw^2 E[phi'(sU)^2] (Price) are computed here with
scipy.integrate.quad, lambda_1 and the edge value from the hand-derived oracles, and the
sup of L2 f/f by brute force on a dense rho grid with the ReLU closed form.
"""
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from sssn_verify.cli import main
from sssn_verify.params import ModelParams
from sssn_verify.regime import regime


def gauss_moment(fn, s):
    val, err = integrate.quad(lambda z: fn(s * z) * math.exp(-z * z / 2) / math.sqrt(2 * math.pi),
                              -12, 12, epsabs=1e-13, epsrel=1e-12, limit=400, points=[0.0])
    return val


ACTS = {
    "tanh": (np.tanh, lambda x: 1 / np.cosh(x) ** 2),
    "gelu": (lambda x: x * 0.5 * (1 + special.erf(x / math.sqrt(2))),
             lambda x: 0.5 * (1 + special.erf(x / math.sqrt(2))) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    "relu": (lambda x: max(x, 0.0), lambda x: 1.0 if x > 0 else 0.0),
    "erf": (special.erf, lambda x: 2 / math.sqrt(math.pi) * math.exp(-x * x)),
    "sin:1": (math.sin, math.cos),
    "leaky_relu:0.1": (lambda x: x if x > 0 else 0.1 * x, lambda x: 1.0 if x > 0 else 0.1),
}


def oracle_constants(name, sw, sb, sa):
    phi, dphi = ACTS[name]
    s = math.sqrt(sw * sw + sb * sb)
    return sa**2 * gauss_moment(lambda x: phi(x) ** 2, s), sa**2 * sw**2 * gauss_moment(lambda x: dphi(x) ** 2, s)


def relu_k(r, sw, sb, sa):
    s2 = sw**2 + sb**2
    c = np.clip((sw**2 * r + sb**2) / s2, -1, 1)
    return sa**2 * s2 / (2 * math.pi) * (np.sqrt(1 - c * c) + (math.pi - np.arccos(c)) * c)


def brute_lambda_bar_relu(dd, sw, sb, sa, beta):
    r = np.linspace(-1, 1 - 1e-4, 200001)
    K, k0 = relu_k(r, sw, sb, sa), relu_k(1.0, sw, sb, sa)
    b = -(dd - 1) * k0 * r + (dd - 2 + r * r) * K
    a = 2 * (1 - r * r) * (k0 - r * K)
    if beta == 0:
        vals = -b / (1 - r)
    else:
        f = np.exp(beta) - np.exp(beta * r)
        vals = -beta * np.exp(beta * r) * (b + beta * a / 2) / f
    k1 = sa**2 * sw**2 / 2
    edge = (dd - 1) * k1 - (dd - 3) * k0
    return max(float(vals.max()), edge)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_acceptance_relu_d8(capsys):
    code, out, _ = run_cli(capsys, "regime", "--activation", "relu", "--d", "8", "--sigma-w", "1",
                           "--sigma-b", "1", "--sigma-a", "1", "--json")
    assert code == 0
    got = json.loads(out)
    for key in ("k0", "k1", "lambda1", "lambda_bar", "lambda_bar_argmax", "c_att", "synchronizes", "dissipates"):
        assert key in got
    k0, k1 = oracle_constants("relu", 1.0, 1.0, 1.0)
    assert got["k0"] == pytest.approx(k0, abs=1e-10) and got["k1"] == pytest.approx(k1, abs=1e-10)
    assert got["lambda1"] == pytest.approx(((8 - 3) * k1 - (8 - 1) * k0) / 2, abs=1e-10)
    assert got["lambda_bar"] == pytest.approx(brute_lambda_bar_relu(8, 1.0, 1.0, 1.0, 1.0), abs=1e-6)
    assert got["c_att"] == 0.0
    assert got["synchronizes"] is True and got["dissipates"] is True


@pytest.mark.parametrize("name", ["tanh", "gelu"])
@pytest.mark.parametrize("sig,dd", [((1.0, 0.5, 1.2), 6), ((0.7, 0.0, 1.0), 3)])
def test_quadrature_activations(name, sig, dd):
    reg = regime(ModelParams(d=dd, activation=name, sigma_w=sig[0], sigma_b=sig[1], sigma_a=sig[2], beta=0.0))
    k0, k1 = oracle_constants(name, *sig)
    assert reg.k0 == pytest.approx(k0, rel=1e-8) and reg.k1 == pytest.approx(k1, rel=1e-8)
    assert reg.lambda1 == pytest.approx(((dd - 3) * k1 - (dd - 1) * k0) / 2, rel=1e-8, abs=1e-10)
    assert reg.lambda_bar_edge == pytest.approx((dd - 1) * k1 - (dd - 3) * k0, rel=1e-8, abs=1e-10)
    assert reg.lambda_bar >= reg.lambda_bar_edge - 1e-12


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["relu", "erf", "sin:1", "leaky_relu:0.1"]), st.integers(2, 12),
       st.floats(0.3, 1.5), st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0.5, 1.5))
def test_lambda1_property(name, dd, sw, sb, sa):
    reg = regime(ModelParams(d=dd, activation=name, sigma_w=sw, sigma_b=sb, sigma_a=sa, beta=0.0))
    k0, k1 = oracle_constants(name, sw, sb, sa)
    assert reg.lambda1 == pytest.approx(((dd - 3) * k1 - (dd - 1) * k0) / 2, rel=1e-8, abs=1e-10)
    assert reg.synchronizes == (reg.lambda1 < 0)


def test_relu_lambda_bar_property_grid():
    for dd, sb, beta in [(5, 2.0, 0.0), (8, 0.3, 0.5), (12, 1.5, 2.0), (4, 3.0, 0.0)]:
        reg = regime(ModelParams(d=dd, activation="relu", sigma_w=1.0, sigma_b=sb, sigma_a=1.0, beta=beta))
        assert reg.lambda_bar == pytest.approx(brute_lambda_bar_relu(dd, 1.0, sb, 1.0, beta), abs=1e-6)


def test_verdicts():
    no_bias = regime(ModelParams(d=8, activation="relu", sigma_w=1, sigma_b=0, V=0.0, beta=0.0))
    assert no_bias.synchronizes is True and no_bias.dissipates is False     # edge value > 0, no attention
    repulsive = regime(ModelParams(d=8, activation="relu", sigma_w=1, sigma_b=1, V=-1.0, beta=1.0))
    assert repulsive.c_att == pytest.approx(4.0)
    assert repulsive.rate_lower_bound == pytest.approx(-1.5 + 2.0) and repulsive.dissipates is False
    weak_bias = regime(ModelParams(d=6, activation="relu", sigma_w=1, sigma_b=0.7, beta=1.0))   # Q = K = V = I
    assert weak_bias.lambda_bar > 0 and weak_bias.rate_lower_bound < 0 and weak_bias.dissipates is None
    sine = regime(ModelParams(d=5, activation="sin:3", sigma_w=1, sigma_b=0, beta=0.0))
    assert sine.lambda1 > 0 and sine.synchronizes is False
    step = regime(ModelParams(d=3, activation="heaviside", beta=0.0))
    assert step.synchronizes is None and step.to_dict()["k1"] == "inf" and step.to_dict()["lambda1"] is None
    json.dumps(step.to_dict(), allow_nan=False)


def test_text_output(capsys):
    code, out, _ = run_cli(capsys, "regime", "--activation", "tanh", "--d", "6", "--sigma-b", "0.5")
    assert code == 0
    assert "two-point synchronization: yes" in out
    assert "energy dissipation: " in out


@pytest.mark.parametrize("argv", [
    ["regime", "--activation", "u*v"],
    ["regime", "--d", "1"],
    ["regime", "--sigma-w", "-1"],
    ["regime", "--beta", "-2"],
    ["regime", "--sigma-w", "0", "--sigma-b", "0"],
    ["phase-diagram", "--x", "d", "--y", "d", "--out", "x.png"],
    ["phase-diagram", "--x-range", "5", "1", "--out", "x.png"],
])
def test_bad_input_exit_2_one_line(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_phase_diagram_writes_png(capsys, tmp_path):
    out_file = tmp_path / "pd.png"
    code, out, _ = run_cli(capsys, "phase-diagram", "--activation", "relu", "--x", "d", "--y", "sigma_b",
                           "--x-range", "2", "7", "--y-range", "0", "2", "--resolution", "4",
                           "--out", str(out_file))
    assert code == 0 and out_file.stat().st_size > 1000
    from sssn_verify.phase_diagram import phase_grid
    lam1, lbar = phase_grid("relu", "d", "sigma_b", np.arange(2, 8), np.array([0.0, 2.0]),
                            dict(d=8, beta=0.0, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0))
    assert np.all(lam1 < 0)                                   # ReLU: lambda_1 < 0 always
    assert np.all(lbar[0] > 0)                                # no bias: never dissipates
    assert list(lbar[1] < 0) == [dd > 3 and 2.0 > math.sqrt(2 / (dd - 3)) for dd in range(2, 8)]
