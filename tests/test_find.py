"""`find`: hypothesis search for counterexamples over the regime quantities (issue 13).

Counterexamples are confirmed here by numbers that do not use the toolkit's kernel or
rate code: Gauss-Hermite quadrature of K(rho) and the two-point drift derived by hand
(Ito on rho = <X, Y> with dX = P_X dW(X) - (d-1) k0/2 X dt):

    b(rho) = -(d-1) k0 rho + K(rho) (d - 2 + rho^2),   L2 (1 - rho) / (1 - rho) = -b(rho)/(1 - rho),

and lambda_bar(0) >= -b(rho)/(1 - rho) at every rho in [-1, 1).
"""
import json
import math

import numpy as np
import pytest

from sssn_verify.cli import main
from sssn_verify.errors import ExpressionError, ParameterError
from sssn_verify.explore import find, judge, parse_statement

_X, _W = np.polynomial.hermite_e.hermegauss(160)
_W = _W / _W.sum()


def gh_kernel(phi, rho, sw, sb, sa):
    """K(rho) = sa^2 E[phi(U) phi(V)] by 2-D Gauss-Hermite (Cov(U, V) = sw^2 rho + sb^2)."""
    s2 = sw**2 + sb**2
    c = (sw**2 * rho + sb**2) / s2
    z1, z2 = np.meshgrid(_X, _X, indexing="ij")
    u = math.sqrt(s2) * z1
    v = math.sqrt(s2) * (c * z1 + math.sqrt(max(0.0, 1 - c * c)) * z2)
    return sa**2 * float(np.sum(np.outer(_W, _W) * phi(u) * phi(v)))


def test_relu_lambda_bar_counterexample_is_d4_and_is_one():
    res = find("lambda_bar < 0", "d > 3", activation="relu", seed=0)
    assert res.found
    c = res.counterexample
    assert c["activation"] == "relu" and c["d"] == 4 and c["beta"] == 0.0
    relu = lambda x: np.maximum(x, 0.0)  # noqa: E731
    k0 = gh_kernel(relu, 1.0, c["sigma_w"], c["sigma_b"], c["sigma_a"])
    rhos = np.linspace(-0.9, 0.9, 7)
    rates = [(-(-(c["d"] - 1) * k0 * r + gh_kernel(relu, r, c["sigma_w"], c["sigma_b"], c["sigma_a"])
                * (c["d"] - 2 + r * r))) / (1 - r) for r in rhos]
    # the kink makes 160-node Gauss-Hermite accurate to ~1e-3 relative; the margin is far larger
    assert max(rates) > 0.05 * k0
    assert res.values["lambda_bar"] >= max(rates) - 1e-2 * k0
    assert res.to_dict()["counterexample"]["d"] == 4


def test_relu_lambda1_negative_everywhere():
    res = find("lambda1 < 0", activation="relu", max_examples=60, seed=3)
    assert not res.found and res.examples >= 30 and res.undetermined == 0


def test_sin3_lambda1_counterexample_is_one():
    res = find("lambda1 < 0", activation="sin(3*u)", seed=0)
    assert res.found
    c = res.counterexample
    s = math.hypot(c["sigma_w"], c["sigma_b"])
    k0 = c["sigma_a"]**2 * float(np.sum(_W * np.sin(3 * s * _X)**2))
    k1 = c["sigma_a"]**2 * c["sigma_w"]**2 * float(np.sum(_W * (3 * np.cos(3 * s * _X))**2))
    lam1 = ((c["d"] - 3) * k1 - (c["d"] - 1) * k0) / 2
    assert lam1 > 0.1 * k0
    assert res.values["lambda1"] == pytest.approx(lam1, rel=1e-6)


def test_same_seed_same_result_and_cli_json(capsys):
    a = find("lambda1 < 0 or d < 5", activation="sin:3", max_examples=20, seed=7).to_dict()
    b = find("lambda1 < 0 or d < 5", activation="sin:3", max_examples=20, seed=7).to_dict()
    assert a == b and a["found"] and a["counterexample"]["d"] == 5
    assert main(["find", "lambda1 < 0", "--activation", "sin:3", "--max-examples", "20",
                 "--seed", "7", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {"found", "counterexample", "values", "examples", "domain"} <= set(out)
    assert set(out["counterexample"]) == {"activation", "d", "sigma_w", "sigma_b", "sigma_a", "beta"}


def test_numerical_error_is_never_a_counterexample():
    # relu, d = 4, sw = sa = 1, sb = 0, beta = 0: lambda_bar = 1 (sup at the edge, error 1e-4)
    at = "d == 4 and sigma_w == 1 and sigma_b == 0 and sigma_a == 1 and beta == 0"
    within = find("lambda_bar < 1 + 1e-5", at, max_examples=5)
    assert not within.found and within.undetermined == 1
    beyond = find("lambda_bar < 1 - 1e-3", at, max_examples=5)
    assert beyond.found and beyond.values["lambda_bar"] == pytest.approx(1.0, abs=1e-4)
    assert beyond.domain["d"] == [4, 4]


def test_judge_three_valued():
    s = parse_statement("lambda1 < 0 and (k0 > 1 or not d >= 3)").expr
    vals = {"lambda1": -1.0, "lambda_bar": 0.0, "k0": 0.5, "k1": 1.0, "c_att": 0.0, "d": 2.0,
            "sigma_w": 1.0, "sigma_b": 0.0, "sigma_a": 1.0, "beta": 0.0}
    errs = {k: 0.0 for k in vals}
    assert judge(s, vals, errs)[0] is True
    assert judge(s, {**vals, "d": 3.0}, errs)[0] is False
    assert judge(s, {**vals, "lambda1": -1e-9}, {**errs, "lambda1": 1e-8})[0] is None
    assert judge(parse_statement("lambda1 < 0").expr, {**vals, "lambda1": math.inf}, errs)[0] is False


@pytest.mark.parametrize("text, exc", [
    ("lambda1 + 1", ExpressionError), ("__import__('os')", ExpressionError),
    ("lambda2 < 0", ExpressionError), ("d > 3 and 'x'", ExpressionError), ("", ExpressionError)])
def test_bad_statements(text, exc):
    with pytest.raises(exc):
        find(text)


def test_bad_assumption_and_cli_exit_2(capsys):
    with pytest.raises(ParameterError):
        find("lambda1 < 0", "d > 64")
    assert main(["find", "lambda1 <", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_quadrature_activations_search_sigmas_on_the_grid_and_say_so():
    """Issue 22 (find answers in seconds): an activation whose kernel needs quadrature builds one table
    per (sigma_w, sigma_b), so find searches those two on check's grid (SIGMA_GRID_QUADRATURE values
    each, an open end moved half a step inside) and says so; closed-form activations stay continuous."""
    from hypothesis import given, settings

    from sssn_verify.explore import _grid, _strategy
    from sssn_verify.strategies import SIGMA_GRID_QUADRATURE as G
    dom = {"d": [2, 64, False, False], "sigma_w": [0.05, 3.0, False, False], "sigma_b": [0.0, 3.0, True, False],
           "sigma_a": [0.05, 3.0, False, False], "beta": [0.0, 20.0, False, False]}
    grid_w, grid_b = _grid(0.05, 3.0, False, False, G), _grid(0.0, 3.0, True, False, G)
    assert len(grid_w) == G and grid_w[0] == 0.05 and grid_w[-1] == 3.0 and 0 < grid_b[0] < grid_b[1]
    seen = {"tanh": set(), "relu": set()}

    @settings(max_examples=60, derandomize=True, database=None, deadline=None)
    @given(_strategy(dom, ["tanh", "relu"]))
    def draw(point):
        seen[point["activation"]].add((point["sigma_w"], point["sigma_b"]))
        if point["activation"] == "tanh":
            assert point["sigma_w"] in grid_w and point["sigma_b"] in grid_b, point
    draw()
    assert 1 <= len(seen["tanh"]) <= G * G and len(seen["relu"]) > G * G
    res = find("lambda_bar < 100", activation="tanh", max_examples=8)
    assert any(f"{G} x {G} grid" in n for n in res.notes), res.notes


def test_statements_over_k0_and_k1_build_no_kernel_table(monkeypatch):
    """Issue 22 (find answers within 10 s): lambda1, k0, k1, c_att, lambda_proj and the parameters need
    only k0 = K(1) and k1 = K'(1): two 1-D quadratures per point (kernels.kernel_point, the numbers the
    table's header holds, each with its own error), no table, so sigma_w and sigma_b stay continuous for
    a quadrature activation (gelu: 15.9 s cold before, ~3 s now).  The counterexample is confirmed by
    Gauss-Hermite, and its values and errors are those of kernel_point."""
    from sssn_verify.numeric import kernels

    def no_table(*args):
        raise AssertionError(f"a kernel table was built: {args}")
    monkeypatch.setattr(kernels, "_unit_table", no_table)
    res = find("lambda1 < 0", "sigma_b > 0", activation="tanh", max_examples=40, seed=1)
    assert res.found and not any("grid" in n for n in res.notes), res.notes
    c = res.counterexample
    kp = kernels.kernel_point("tanh", c["sigma_w"], c["sigma_b"], c["sigma_a"])
    assert (res.values["k0"], res.values["k1"], res.errors["k0"], res.errors["k1"]) == (
        kp.k0, kp.k1, kp.k0_error, kp.k1_error) and kp.k0_error < 1e-12
    assert math.isnan(res.values["lambda_bar"])
    from scipy.integrate import quad          # adaptive: Gauss-Hermite converges slowly for tanh(s z), s ~ 3
    s = math.hypot(c["sigma_w"], c["sigma_b"])

    def gauss(f):
        return quad(lambda z: f(s * z) * math.exp(-z * z / 2) / math.sqrt(2 * math.pi), -np.inf, np.inf,
                    epsabs=1e-14, epsrel=1e-13, limit=500)[0]
    k0 = c["sigma_a"]**2 * gauss(lambda u: math.tanh(u)**2)
    k1 = c["sigma_a"]**2 * c["sigma_w"]**2 * gauss(lambda u: (1 - math.tanh(u)**2)**2)
    assert kp.k0 == pytest.approx(k0, rel=1e-10) and kp.k1 == pytest.approx(k1, rel=1e-10)
    assert ((c["d"] - 3) * k1 - (c["d"] - 1) * k0) / 2 > 0
