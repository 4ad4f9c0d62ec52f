"""Deep MLP blocks (issue 25, deliverable 1): ModelParams.hidden, the composed kernel, the rates and the CLI.

The acceptance values are independent of the package: a layer-by-layer quadrature written here
(QUADPACK through scipy.integrate.quad, in polar coordinates split where a pre-activation changes
sign, the NNGP recursion S_{l+1} = sigma_w^2 E phi(U)^2 + sigma_b^2, C_{l+1} = sigma_w^2
E phi(U) phi(V) + sigma_b^2), and neural-tangents' ``stax.serial`` NNGP values recorded in
tests/data/neural_tangents_nngp.json (tests/data/record_neural_tangents.py says how; neural-tangents
is not a dependency).  The parameters below appear in no other test.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

import sssn_verify as sv
from sssn_verify.errors import ActivationError, ParameterError
from sssn_verify.numeric.kernels import kernel
from sssn_verify.params import ModelParams, check_hidden, hidden_spec

DATA = Path(__file__).parent / "data" / "neural_tangents_nngp.json"

# ----------------------------------------------------------------------------- independent quadrature
PHI = {"relu": lambda x: max(x, 0.0), "tanh": math.tanh, "erf": math.erf,
       "gelu": lambda x: x * (1 + math.erf(x / math.sqrt(2))) / 2}
DPHI = {"relu": lambda x: 1.0 if x > 0 else 0.0, "tanh": lambda x: 1 - math.tanh(x) ** 2,
        "erf": lambda x: 2 / math.sqrt(math.pi) * math.exp(-x * x),
        "gelu": lambda x: (1 + math.erf(x / math.sqrt(2))) / 2 + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)}
_OPT = dict(epsabs=1e-15, epsrel=1e-13, limit=200)


def _e1(f, S):
    """E f(sqrt(S) Z), Z ~ N(0, 1)."""
    s = math.sqrt(S)
    g = lambda z: f(s * z) * math.exp(-z * z / 2)
    return (integrate.quad(g, -np.inf, 0, **_OPT)[0] + integrate.quad(g, 0, np.inf, **_OPT)[0]) / math.sqrt(2 * math.pi)


def _e2(f, S, c):
    """E f(U) f(V), Var U = Var V = S, Cov = c: polar coordinates (U = sqrt(S) R cos t,
    V = sqrt(S) R cos(t - alpha), cos alpha = c/S), t split where cos t or cos(t - alpha) vanishes."""
    s, al = math.sqrt(S), math.acos(max(-1.0, min(1.0, c / S)))
    cuts = sorted({-math.pi, -math.pi / 2, math.pi / 2, math.pi,
                   *[((al + k * math.pi / 2 + math.pi) % (2 * math.pi)) - math.pi for k in (-1, 1)]})

    def inner(t):
        cu, cv = math.cos(t), math.cos(t - al)
        return integrate.quad(lambda R: f(s * R * cu) * f(s * R * cv) * R * math.exp(-R * R / 2), 0, 40, **_OPT)[0]
    return sum(integrate.quad(inner, a, b, **_OPT)[0] for a, b in zip(cuts[:-1], cuts[1:])) / (2 * math.pi)


def independent_K(layers, sa, rho):
    """K(rho) of the block [(act, sigma_w, sigma_b), ...] by the NNGP recursion, layer by layer."""
    _, sw, sb = layers[0]
    S, c = sw ** 2 + sb ** 2, sw ** 2 * rho + sb ** 2
    for (prev, _, _), (_, sw, sb) in zip(layers[:-1], layers[1:]):
        S, c = sw ** 2 * _e1(lambda x: PHI[prev](x) ** 2, S) + sb ** 2, sw ** 2 * _e2(PHI[prev], S, c) + sb ** 2
    return sa ** 2 * _e2(PHI[layers[-1][0]], S, c)


def independent_k0_k1(layers, sa):
    """(k0, k1): E phi_L^2 at the last variance, and k1 as the product over layers of
    sigma_w^2 E phi'^2 (the derivative of the recursion at rho = 1, Price's theorem)."""
    S, k1 = layers[0][1] ** 2 + layers[0][2] ** 2, 1.0
    for i, (act, sw, _) in enumerate(layers):
        k1 *= sw ** 2 * _e1(lambda x: DPHI[act](x) ** 2, S)
        if i + 1 < len(layers):
            S = layers[i + 1][1] ** 2 * _e1(lambda x: PHI[act](x) ** 2, S) + layers[i + 1][2] ** 2
    return sa ** 2 * _e1(lambda x: PHI[layers[-1][0]](x) ** 2, S), sa ** 2 * k1


# two blocks in no other test: a quadrature one (tanh -> relu -> gelu) and a closed-form one (relu -> erf)
QUAD = dict(layers=[("tanh", 1.15, 0.35), ("relu", 1.25, 0.15), ("gelu", 0.85, 0.45)], sa=0.95)
CLOSED = dict(layers=[("relu", 0.95, 0.55), ("erf", 1.35, 0.25)], sa=1.05)
RHOS = (-0.8, -0.25, 0.35, 0.85, 0.995)
REL = 1e-8


def _params(case, **more):
    (act, sw, sb), *hidden = case["layers"]
    return ModelParams(activation=act, sigma_w=sw, sigma_b=sb, sigma_a=case["sa"], hidden=tuple(hidden), **more)


@pytest.mark.parametrize("case, method", [(QUAD, "quadrature"), (CLOSED, "closed form")])
def test_composed_kernel_matches_independent_quadrature(case, method):
    kf = kernel(_params(case))
    assert kf.method == method and kf.error_bound < 1e-12
    k0, k1 = independent_k0_k1(case["layers"], case["sa"])
    assert kf.k0 == pytest.approx(k0, rel=REL) and kf.k1 == pytest.approx(k1, rel=REL)
    for rho in RHOS:
        assert kf.value(rho) == pytest.approx(independent_K(case["layers"], case["sa"], rho), rel=REL), rho
    # K(1) of the recursion is k0 (the two independent routes agree)
    assert independent_K(case["layers"], case["sa"], 1.0) == pytest.approx(k0, rel=1e-12)


def test_independent_check_rejects_a_slightly_wrong_block():
    """The 1e-8 comparison has the power to see a hidden sigma_w off by 1e-7 (relative), and a
    recursion that forgets the bias (sigma_b^2) of the last hidden layer."""
    (act, sw, sb), (h1, w1, b1), (h2, w2, b2) = QUAD["layers"]
    right = independent_K(QUAD["layers"], QUAD["sa"], 0.35)
    off = kernel(act, sw, sb, QUAD["sa"], hidden=[(h1, w1, b1), (h2, w2 * (1 + 1e-7), b2)]).value(0.35)
    no_bias = kernel(act, sw, sb, QUAD["sa"], hidden=[(h1, w1, b1), (h2, w2, 0.0)]).value(0.35)
    for wrong in (off, no_bias):
        assert abs(wrong / right - 1) > 10 * REL
    assert kernel(_params(QUAD)).value(0.35) == pytest.approx(right, rel=REL)


class _IndependentKernel:
    """The duck type numeric.rates reads (k0, gap), from the independent quadrature."""

    def __init__(self, case):
        self.case = case
        self.k0, self.k1 = independent_k0_k1(case["layers"], case["sa"])

    def gap(self, us):
        return np.array([self.k0 - independent_K(self.case["layers"], self.case["sa"], 1.0 - u) for u in np.ravel(us)])


def test_lambda1_and_lambda_bar_match_independent_values():
    from sssn_verify.bridge import function
    from sssn_verify.numeric.rates import ratio
    lam1 = function("lyapunov.lambda1", "math")
    edge = function("dissipation.edge_rate", "math")
    # closed-form block, d = 5, beta = 1: the sup sits at the edge rho -> 1
    ind = _IndependentKernel(CLOSED)
    g = sv.regime(_params(CLOSED, d=5, beta=1.0))
    assert g.lambda1 == pytest.approx(lam1(5, ind.k0, ind.k1), rel=REL)
    assert g.lambda_bar_argmax == 1.0 and g.lambda_bar == pytest.approx(edge(5, ind.k0, ind.k1), rel=REL)
    # quadrature block, d = 9, beta = 4: the sup sits at rho = -1 (u = 2), away from the edge
    ind = _IndependentKernel(QUAD)
    g = sv.regime(_params(QUAD, d=9, beta=4.0))
    assert g.lambda1 == pytest.approx(lam1(9, ind.k0, ind.k1), rel=REL)
    assert g.lambda_bar_argmax == -1.0
    assert g.lambda_bar == pytest.approx(float(ratio(ind, 9, 4.0, np.array([2.0]))[0]), rel=REL)
    # and no other overlap does better, by the independent kernel (coarse grid, plus the edge value)
    others = ratio(ind, 9, 4.0, np.array([0.05, 0.3, 0.7, 1.1, 1.5, 1.9]))
    assert np.all(others < g.lambda_bar) and edge(9, ind.k0, ind.k1) < g.lambda_bar


def test_composed_kernels_match_neural_tangents_stax():
    """neural-tangents' NNGP of stax.serial(Dense, act, Dense, act, ..., Dense) at the recorded overlaps
    (Dense(W_std = sigma_w sqrt(d)) on the unit token for the first layer, Dense(W_std = sigma_w) after)."""
    data = json.loads(DATA.read_text())
    assert len(data["cases"]) == 4
    for case in data["cases"]:
        kf = kernel(case["activation"], case["sigma_w"], case["sigma_b"], case["sigma_a"], hidden=case["hidden"])
        ours = kf.value(np.array(case["rho"]))
        np.testing.assert_allclose(ours, case["K"], rtol=1e-12, atol=0, err_msg=str(case))


def test_one_hidden_layer_is_the_one_layer_kernel_composed():
    """hidden = () is today's kernel exactly; an identity hidden layer with sigma_w = 1, sigma_b = 0
    leaves the field's covariance unchanged (m^{-1/2} W phi(h) has the covariance of phi(h))."""
    base = kernel("tanh", 1.05, 0.4, 0.85)
    assert kernel(ModelParams(activation="tanh", sigma_w=1.05, sigma_b=0.4, sigma_a=0.85)).table is base.table
    # relu -> identity(1, 0): K is relu's arc-cosine kernel with the readout applied to h^2 = W phi(h^1)
    one = kernel("relu", 1.05, 0.4, 0.85)
    two = kernel("relu", 1.05, 0.4, 1.0, hidden=[("identity", 1.0, 0.0)])
    # identity readout: K = sigma_a^2 (sigma_w^2 E phi phi + sigma_b^2) with sigma_a = 1, hidden sigma 1, 0
    rhos = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(two.value(rhos), one.value(rhos) / 0.85 ** 2, rtol=1e-13)


# ----------------------------------------------------------------------------- the derivation
def test_chain_rule_derivation_and_the_relu_relu_closed_form():
    """symbolic.deep_kernel: k1 is the product of sigma_w,l^2 M1_l (sympy's chain rule on undetermined
    H_l); the ReLU -> ReLU closed form, evaluated by mpmath, against the independent quadrature and
    against the numeric table; its k1 against a one-sided difference quotient of the closed form."""
    import mpmath as mp
    import sympy as sp
    from sssn_verify.symbolic import derive
    from sssn_verify.symbolic.deep_kernel import layer_symbols, relu_relu
    from sssn_verify.symbolic.symbols import rho, sigma_a, sigma_b, sigma_w
    der = derive("deep_kernel")
    sw, sb, m0, m1, _ = layer_symbols()
    assert der.extras["k1"] == sigma_a ** 2 * sp.Mul(*[w ** 2 for w in sw]) * sp.Mul(*m1)
    assert der.extras["k0"] == sigma_a ** 2 * m0[-1]
    K, k0, k1, _, _ = relu_relu()
    w2, b2 = layer_symbols(2)[0][1], layer_symbols(2)[1][1]
    vals = {sigma_w: sp.Rational(13, 10), sigma_b: sp.Rational(7, 20), w2: sp.Rational(4, 5),
            b2: sp.Rational(3, 5), sigma_a: sp.Rational(11, 10)}
    layers, sa = [("relu", 1.3, 0.35), ("relu", 0.8, 0.6)], 1.1
    f = sp.lambdify(rho, K.subs(vals), "mpmath")
    kf = kernel("relu", 1.3, 0.35, 1.1, hidden=[("relu", 0.8, 0.6)])
    for x in (-0.7, 0.1, 0.9):
        assert float(f(x)) == pytest.approx(independent_K(layers, sa, x), rel=REL)
        assert float(f(x)) == pytest.approx(kf.value(x), rel=1e-13)
    assert float(k0.subs(vals)) == pytest.approx(kf.k0, rel=1e-14)
    assert float(k1.subs(vals)) == pytest.approx(kf.k1, rel=1e-14)
    with mp.workdps(50):
        h = mp.mpf("1e-20")
        # K(1) - K(1-h) = k1 h + O(h^{3/2}); K(1) = k0 exactly (sqrt(1 - r^2) at r = 1 would be a rounding root)
        slope = (mp.mpf(sp.Rational(k0.subs(vals)).p) / sp.Rational(k0.subs(vals)).q - f(1 - h)) / h
        assert abs(float(slope) / float(k1.subs(vals)) - 1) < 1e-8


# ----------------------------------------------------------------------------- validation
def test_hidden_validation():
    p = ModelParams(hidden=[("tanh", 1.2, 0.1), "relu 1 0.5", ("sin(3*u) + u", 0.5, 0)])
    assert [(a.name, w, b) for a, w, b in p.hidden] == [("tanh", 1.2, 0.1), ("relu", 1.0, 0.5),
                                                       (p.hidden[2][0].name, 0.5, 0.0)]
    assert hidden_spec(p.hidden).startswith("tanh 1.2 0.1; relu 1.0 0.5; ")
    assert ModelParams(hidden=None).hidden == () and ModelParams().hidden == ()
    assert p == ModelParams(hidden=p.hidden) and hash(p) == hash(ModelParams(hidden=p.hidden))
    bad = [("hidden", "relu 1 0"), ("hidden[0]", [("relu", 1.0)]), ("hidden[0].sigma_w", [("relu", 0.0, 1.0)]),
           ("hidden[0].sigma_w", [("relu", -1.0, 0.0)]), ("hidden[1].sigma_b", [("relu", 1, 0), ("relu", 1, -0.1)]),
           ("hidden[0].sigma_w", [("relu", float("nan"), 0.0)]), ("hidden[0].sigma_b", [("relu", 1.0, 1e7)]),
           ("hidden[0]", ["relu 1"]), ("hidden[0].sigma_w", ["relu x 0"]), ("hidden", 3),
           ("hidden layers", [("relu", 1, 0)] * 9), ("hidden[0]", [{"a": 1, "b": 2, "c": 3}])]
    for name, value in bad:
        with pytest.raises(ParameterError) as exc:
            ModelParams(hidden=value)
        assert exc.value.name == name, (value, exc.value)
    with pytest.raises(ActivationError):
        ModelParams(hidden=[("no_such_thing", 1.0, 0.0)])
    with pytest.raises(ActivationError):
        check_hidden(["__import__('os') 1 0"])
    # a discontinuous activation may be followed by smooth ones only
    kernel("heaviside", 1.0, 0.3, 1.0, hidden=[("tanh", 1.0, 0.2)])
    with pytest.raises(ParameterError, match="after a jump"):
        kernel("heaviside", 1.0, 0.3, 1.0, hidden=[("relu", 1.0, 0.2)])
    # an infinite moment deeper in the block is an ActivationError, not a wrong number
    with pytest.raises(ActivationError):
        kernel("relu", 3.0, 0.0, 1.0, hidden=[("exp(u**2)", 1.0, 0.0)])


def test_deep_jump_kernel_has_infinite_k1_and_stable_gap():
    kf = kernel("heaviside", 1.1, 0.3, 0.9, hidden=[("erf", 1.2, 0.1)])
    assert kf.method == "closed form" and math.isinf(kf.k1)
    us = np.array([1e-10, 1e-8, 1e-6])
    slope = kf.gap(us) / np.sqrt(us)              # k0 - K(1 - u) ~ c sqrt(u)
    assert np.all(np.isfinite(slope)) and np.ptp(slope) < 1e-3 * slope.max()


# ----------------------------------------------------------------------------- everything that depends on K
def test_rates_spectrum_and_sync_time_use_the_deep_kernel():
    p = _params(CLOSED, d=6, beta=0.5)
    kf = kernel(p)
    g = sv.regime(p)
    assert (g.k0, g.k1) == (kf.k0, kf.k1) and g.hidden == hidden_spec(p.hidden)
    one = sv.regime(p.with_(hidden=()))
    assert g.k0 != one.k0 and g.lambda1 != one.lambda1
    assert sv.lambda1(p) == g.lambda1 and sv.lambda_bar(p) == g.lambda_bar
    assert g.log_distance_variance == pytest.approx(kf.k0 + kf.k1, rel=1e-15)
    from sssn_verify.sync_time import sync_time_law
    law = sync_time_law(p, eps0=0.1, eps=1e-4)
    assert law.lambda1 == g.lambda1 and law.sigma2 == g.log_distance_variance
    frame = sv.scan(activation="relu", d=[6], sigma_w=0.95, sigma_b=0.55, sigma_a=1.05, beta=0.5,
                    hidden=p.hidden)
    assert frame["lambda_bar"].iloc[0] == g.lambda_bar and frame["hidden"].iloc[0] == g.hidden
    assert "hidden" not in sv.scan(d=3).columns


def test_gaussian_and_sde_models_sample_the_deep_field():
    from sssn_verify.numeric.models import gaussian, sde
    p = _params(QUAD, d=3, n_tokens=3)
    kf = kernel(p)
    for model in (gaussian, sde):
        consts = model.prepare(p).consts
        assert consts.table is kf.table or np.array_equal(consts.table, kf.table)
    res = sv.simulate_gaussian(p, depth=4, n_paths=8, seed=1, progress=False)
    assert np.all(np.isfinite(res.tokens))
    # the finite-width deep block; its hidden stack (relu, tanh) is test_deep_finite_width's, whose simulate kernel
    # is compiled anyway (one kernel per activation stack: gelu here would compile one for this line alone)
    fw = sv.simulate_transformer(p.with_(hidden=(QUAD["layers"][1], ("tanh", 0.85, 0.45))), depth=2, width=4,
                                 n_paths=2, progress=False)
    assert np.all(np.isfinite(fw.tokens)) and fw.info["hidden_exact"] in (True, False)


# ----------------------------------------------------------------------------- CLI
def _exit_code(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_cli_hidden_option(capsys, tmp_path):
    from sssn_verify.cli import main
    argv = ["regime", "--activation", "relu", "--sigma-w", "0.95", "--sigma-b", "0.55", "--sigma-a", "1.05",
            "--hidden", "erf 1.35 0.25", "--d", "5", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    g = sv.regime(_params(CLOSED, d=5))
    assert out["hidden"] == "erf 1.35 0.25" and out["k0"] == g.k0 and out["lambda_bar"] == g.lambda_bar
    assert main(["derive", "kernel", "--hidden", "erf 1.35 0.25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hidden"] == "erf 1.35 0.25"
    assert main(["scan", "--d", "4,5", "--hidden", "sin(2*u) + u 0.7 0.1", "--hidden", "relu 1 0",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out.count("0.7 0.1; relu 1.0 0.0") == 2
    for argv, what in ((["regime", "--hidden", "tanh 1"], "ACT SIGMA_W SIGMA_B"),
                       (["regime", "--hidden", "tanh 0 1"], "must be > 0")):
        assert _exit_code(main, argv) == 2, argv
        err = capsys.readouterr().err
        assert what in err and len(err.strip().splitlines()) == 1, err
