"""``sssn-verify derive`` / ``latex``: the JSON contract and bad-input handling.

Numbers are compared with an independent reference: scipy nested adaptive quadrature of the
conditional form K = sa^2 E_Z1[phi(U) E[phi(V) | Z1]] (split at the kink), tolerance 1e-8.
"""
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import quad

from sssn_verify.cli import main

SW, SB, SA = 1.2, 0.5, 0.8


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    out = capsys.readouterr().out

    def no_constants(name):
        raise AssertionError(f"invalid JSON constant {name}")
    return json.loads(out, parse_constant=no_constants)


def _gauss(z):
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def scipy_kernel(phi, r_, sw, sb, sa, kink=None):
    """Independent reference: nested scipy.quad of the conditional form."""
    S = sw * sw + sb * sb
    s, r = math.sqrt(S), (sw * sw * r_ + sb * sb) / S
    q = math.sqrt(max(0.0, 1 - r * r))

    def inner(z1):
        m, t = s * r * z1, s * q
        pts = [(kink - m) / t] if kink is not None and abs((kink - m) / t) < 12 else None
        return quad(lambda z2: phi(m + t * z2) * _gauss(z2), -12, 12, points=pts, epsabs=1e-13,
                    epsrel=1e-13, limit=200)[0]
    pts = [kink / s] if kink is not None else None
    return sa * sa * quad(lambda z1: phi(s * z1) * inner(z1) * _gauss(z1), -12, 12, points=pts,
                          epsabs=1e-12, epsrel=1e-12, limit=200)[0]


def test_relu_json_result_string_evaluates_correctly(capsys):
    out = run_json(capsys, "derive", "kernel", "--activation", "relu", "--format", "json")
    for key in ("name", "result", "latex", "assumptions", "steps", "k0", "k1", "method", "error_bound"):
        assert key in out
    assert out["name"] == "kernel" and out["method"] == "closed form"
    syms = {n: sp.Symbol(n, real=True) for n in ("rho", "sigma_w", "sigma_b", "sigma_a")}
    expr = sp.sympify(out["result"], locals=syms)
    assert expr.free_symbols <= set(syms.values())
    rng = np.random.default_rng(0)
    for _ in range(20):
        r_, sw, sb, sa = rng.uniform(-1, 1), rng.uniform(0.1, 2), rng.uniform(0, 2), rng.uniform(0.1, 2)
        S = sw**2 + sb**2
        c = (sw**2 * r_ + sb**2) / S
        hand = sa**2 * S / (2 * math.pi) * (math.sqrt(1 - c * c) + (math.pi - math.acos(c)) * c)
        got = float(expr.subs({syms["rho"]: r_, syms["sigma_w"]: sw, syms["sigma_b"]: sb, syms["sigma_a"]: sa}))
        assert got == pytest.approx(hand, rel=1e-12, abs=1e-14)
    assert out["k0"] == pytest.approx(0.5) and out["k1"] == pytest.approx(0.5)


def test_tanh_k0_k1_match_scipy(capsys):
    out = run_json(capsys, "derive", "kernel", "--activation", "tanh", "--sigma-w", str(SW), "--sigma-b",
                   str(SB), "--sigma-a", str(SA), "--format", "json")
    s = math.hypot(SW, SB)
    k0 = SA**2 * quad(lambda z: math.tanh(s * z) ** 2 * _gauss(z), -12, 12, epsabs=1e-14, limit=200)[0]
    k1 = SA**2 * SW**2 * quad(lambda z: (1 - math.tanh(s * z) ** 2) ** 2 * _gauss(z), -12, 12, epsabs=1e-14,
                              limit=200)[0]
    assert out["method"] == "quadrature"
    assert abs(out["k0"] - k0) < 1e-8 and abs(out["k1"] - k1) < 1e-8
    assert out["error_bound"] < 1e-8


@pytest.mark.parametrize("name,phi,kink", [
    ("relu", lambda x: max(x, 0.0), 0.0),
    ("tanh", math.tanh, None),
    ("gelu", lambda x: x * (1 + math.erf(x / math.sqrt(2))) / 2, None),
    ("u*erf(u)", lambda x: x * math.erf(x), None),
])
@pytest.mark.parametrize("r_", [-0.95, 0.3, 0.999])
def test_rho_value_matches_independent_quadrature(capsys, name, phi, kink, r_):
    out = run_json(capsys, "derive", "kernel", "--activation", name, "--sigma-w", str(SW), "--sigma-b", str(SB),
                   "--sigma-a", str(SA), "--rho", str(r_), "--format", "json")
    assert out["rho"] == r_
    assert abs(out["value"] - scipy_kernel(phi, r_, SW, SB, SA, kink)) < 1e-8


def test_jump_activation_gives_inf_as_a_string(capsys):
    out = run_json(capsys, "derive", "kernel", "--activation", "heaviside", "--format", "json")
    assert out["k1"] == "inf" and out["k1_symbolic"] == "oo" and out["k0"] == pytest.approx(0.5)


def test_ito_drift_json_and_listing(capsys):
    out = run_json(capsys, "derive", "ito_drift", "--format", "json")
    for key in ("name", "result", "latex", "assumptions", "steps"):
        assert key in out
    assert "(d - 1)" in out["result"]
    listing = run_json(capsys, "derive", "--format", "json")
    names = [d["name"] for d in listing["derivations"]]
    assert names[:2] == ["kernel", "ito_drift"]


def test_text_and_latex_formats(capsys):
    assert main(["derive", "kernel", "--activation", "erf", "--rho", "0.2"]) == 0
    text = capsys.readouterr().out
    assert "Result:" in text and "value" in text
    assert main(["derive", "ito_drift", "--format", "latex"]) == 0
    assert "\\begin{dmath*}" in capsys.readouterr().out


@pytest.mark.parametrize("argv,word", [
    (["derive", "kernel", "--activation", "u*v"], "v"),
    (["derive", "kernel", "--sigma-w", "-1"], "sigma_w"),
    (["derive", "kernel", "--sigma-w", "0", "--sigma-b", "0"], "sigma_w"),
    (["derive", "kernel", "--sigma-a", "nan"], "sigma_a"),
    (["derive", "kernel", "--rho", "1.5"], "rho"),
    (["derive", "kernel", "--activation", "leaky_relu:abc"], "abc"),
    (["derive", "no_such_thing"], "no_such_thing"),
])
def test_bad_input_exit_code_2_one_line(capsys, argv, word):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err and "Traceback" not in err


def test_console_script_bad_input_has_no_traceback():
    proc = subprocess.run([sys.executable, "-c", "import sys; from sssn_verify.cli import main; sys.exit(main())", "derive", "kernel", "--activation", "u*v"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
