"""Where the supremum of L2 f / f sits (issue 27, item 6): at rho -> 1 or at rho = -1, never inside.

* Symbolic: the derivation's certificate (symbolic/dissipation ``endpoint_certificate``,
  ``schoenberg_chord``) has zero residuals, and the result states lambda_bar = max(edge, antipodal).
* Independent numerics (the textbook ratio typed here, not the derivation; float64 on dense rho grids,
  mpmath at 30 digits for a subset):
  - thousands of random positive-definite (Schoenberg) kernels K = sum a_n rho^n, a_n >= 0, among them
    the near-extremal family a_0 + a_2k rho^2k, over d in [2, 64] and beta in [0, 20]: the ratio never
    exceeds max(edge, value at rho = -1) inside, and never exceeds the certificate's
    w R(1) + (1 - w) R(-1), w = (1 + rho) psi(beta (1 - rho))/2;
  - every nonnegative combination of the monomials rho^0, ..., rho^200 at once (a two-constraint
    cone test) on a (d, beta, rho) grid;
  - the toolkit's kernels (registry activations, expressions, mixtures, deep blocks, large sigma_b,
    small d): lambda_bar and its argmax from numeric/rates against the dense-grid sup.
* A regression: a polynomial user activation whose kernel's gap loses digits near rho = 1 used to give
  a spurious near-edge "interior" maximum 1.4e-3 above the true value; now the edge value, exactly.
"""
import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp

from sssn_verify.numeric.kernels import kernel
from sssn_verify.numeric.rates import lambda_bar, lambda_bar_rows
from sssn_verify.symbolic import derive
from sssn_verify.symbolic.dissipation import (K_minus, endpoint_certificate, lambda_bar_closed,
                                              schoenberg_chord)
from sssn_verify.symbolic.symbols import beta as beta_sym
from sssn_verify.symbolic.symbols import d as d_sym
from sssn_verify.symbolic.symbols import k0 as k0_sym
from sssn_verify.symbolic.symbols import k1 as k1_sym

NMAX = 60
RHO = np.concatenate([np.linspace(-1.0, 1.0 - 1e-4, 4001)[1:],              # rho = -1 itself is an endpoint
                      -1.0 + np.geomspace(1e-9, 1e-2, 60), 1.0 - np.geomspace(1e-4, 1e-2, 60)])


# ----------------------------------------------------------------------------- the oracle (textbook)
def ratio_textbook(a, d, beta, rho):
    """L2 f / f from its definition: b f' + a f''/2 over f, f = e^beta - e^{beta rho} (1 - rho at beta = 0),
    b = -(d-1) k0 rho + (d-2+rho^2) K, a = 2 (1-rho^2)(k0 - rho K); K = sum a_n rho^n (rows of `a`)."""
    a = np.atleast_2d(a)
    K = np.polynomial.polynomial.polyval(rho, a.T)                  # (kernels, points)
    return ratio_from_values(K, a.sum(axis=1)[:, None], d, beta, rho)


def ratio_from_values(K, k0, d, beta, rho):
    """The same ratio from the values K(rho) (rows: kernels, columns: the points rho) and k0 (a column)."""
    b = -(d - 1) * k0 * rho + (d - 2 + rho**2) * K
    diff2 = 2 * (1 - rho**2) * (k0 - rho * K)
    if beta == 0:
        return -b / (1 - rho)
    em = np.expm1(beta * (1 - rho))                                   # f / e^{beta rho}
    return (b * (-beta) + diff2 / 2 * (-beta**2)) / em


def endpoints(a, d, beta):
    a = np.atleast_2d(a)
    n = np.arange(a.shape[1])
    k0, k1 = a.sum(axis=1), (a * n).sum(axis=1)
    edge = (d - 1) * k1 - (d - 3) * k0
    km1 = (a * (-1.0) ** n).sum(axis=1)
    b_m1 = (d - 1) * (k0 + km1)                                       # b(-1); a(-1) = 0
    anti = -b_m1 / 2 if beta == 0 else -beta * b_m1 / np.expm1(2 * beta)
    return edge, anti, k0


def random_kernels(rng, count):
    """Rows of coefficients a_n >= 0, n <= NMAX: sparse, near-extremal (a_0 + a_2k), smooth, MLP-like."""
    out = np.zeros((count, NMAX + 1))
    for i in range(count):
        kind = i % 4
        if kind == 0:
            idx = rng.choice(NMAX + 1, size=rng.integers(1, 5), replace=False)
            out[i, idx] = rng.exponential(size=idx.size)
        elif kind == 1:                  # the family the cone test finds closest to an interior maximum
            out[i, 0] = 1.0
            out[i, 2 * rng.integers(1, NMAX // 2 + 1)] = 10.0 ** rng.uniform(-4, 0)
            if rng.random() < 0.5:
                out[i, 2 * rng.integers(0, NMAX // 2) + 1] = 10.0 ** rng.uniform(-6, -1)
        elif kind == 2:
            out[i] = rng.uniform(0, 1) ** np.arange(NMAX + 1) * rng.exponential(size=NMAX + 1)
        else:                            # Hermite-like: c_n^2 / n! r^n expanded in rho (r = s rho + t)
            c2 = rng.exponential(size=12) / np.array([math.factorial(k) for k in range(12)])
            s = rng.uniform(0.05, 1)
            poly = np.polynomial.polynomial.Polynomial([1 - s, s])           # r = s rho + (1 - s)
            tot = sum(c * poly**k for k, c in enumerate(c2))
            out[i, :tot.coef.size] = tot.coef
    return out


# ----------------------------------------------------------------------------- symbolic
def test_certificate_residuals_vanish_and_the_result_states_the_closed_form():
    cert, sch = endpoint_certificate(), schoenberg_chord()
    assert all(r == 0 for r in cert["residuals"]) and all(r == 0 for r in sch["residuals"])
    dv = derive("dissipation")
    assert isinstance(dv.result, sp.Tuple) and len(dv.result) == 2
    closed = dv.result[1].rhs
    assert closed == lambda_bar_closed()
    le = sp.Symbol("lambda_edge")
    anti = -beta_sym * (d_sym - 1) * (k0_sym + K_minus) / (sp.exp(2 * beta_sym) - 1)     # oracle, typed here
    piece = closed.args[1][0]
    assert isinstance(piece, sp.Max) and set(piece.args) - {le} and sp.simplify(
        (set(piece.args) - {le}).pop() - anti) == 0
    assert closed.args[0] == (le, sp.Eq(beta_sym, 0))
    assert "never" in dv.extras["sup_location"]


def test_the_certificate_is_sharp_in_its_weight():
    """At a point, the identity holds with the weight w = (1 + rho) psi / 2 and fails with the naive
    weight (1 + rho)/2 (no psi): a wrong certificate is caught."""
    from sssn_verify.symbolic.dissipation import edge_rate
    from sssn_verify.symbolic.symbols import Krho, rho
    cert = endpoint_certificate()
    b_ = cert["beta"]
    pt = {b_: sp.Rational(3, 2), rho: sp.Rational(-1, 3), d_sym: 7, k0_sym: 2, k1_sym: 3, Krho: sp.Rational(1, 2),
          K_minus: sp.Rational(1, 5)}

    def gap(w):
        return (w * edge_rate() + (1 - w) * cert["anti"] - cert["R"] - sum(cert["gap_terms"])).subs(pt)

    assert abs(complex(gap(cert["weight"]).evalf(30))) < 1e-25
    assert abs(complex(gap((1 + rho) / 2).evalf(30))) > 1e-3


# ----------------------------------------------------------------------------- random Schoenberg kernels
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_positive_definite_kernels_never_peak_inside(seed):
    rng = np.random.default_rng(seed)
    kernels = random_kernels(rng, 400)
    worst_excess = -np.inf
    for start in range(0, kernels.shape[0], 50):
        block = kernels[start:start + 50]
        d = int(rng.integers(2, 65))
        beta = float(rng.choice([0.0, rng.uniform(0, 1), rng.uniform(1, 5), rng.uniform(5, 20)]))
        R = ratio_textbook(block, d, beta, RHO)
        edge, anti, k0 = endpoints(block, d, beta)
        scale = np.abs(edge) + np.abs(anti) + k0
        top = np.maximum(edge, anti)
        excess = ((R.max(axis=1) - top) / scale)
        worst_excess = max(worst_excess, excess.max())
        # the certificate: R <= w edge + (1 - w) anti with w = (1 + rho) psi(beta (1 - rho)) / 2
        x = beta * (1 - RHO)
        psi = np.where(x > 0, x / np.expm1(np.where(x > 0, x, 1.0)), 1.0)
        w = (1 + RHO) * psi / 2
        chord = w * edge[:, None] + (1 - w) * anti[:, None]
        assert np.all(R <= chord + 1e-9 * scale[:, None]), (seed, start, d, beta)
    assert worst_excess < 1e-9, worst_excess


def test_random_kernels_at_30_digits_near_both_ends():
    """mpmath at 30 digits next to rho = 1 (u down to 1e-12) and rho = -1, where floats lose digits."""
    with mp.workdps(30):          # local: other modules' tests set their own global precision
        _random_kernels_at_30_digits()


def _random_kernels_at_30_digits():
    rng = np.random.default_rng(11)
    kernels = random_kernels(rng, 24)
    us = [mp.mpf(10) ** (-k) for k in range(2, 13)] + [2 - mp.mpf(10) ** (-k) for k in range(2, 13)] + \
        [mp.mpf(k) / 20 for k in range(1, 40)]
    for row in kernels:
        coef = [mp.mpf(float(c)) for c in row]
        for d, beta in ((int(rng.integers(2, 65)), mp.mpf(float(rng.uniform(0, 8)))), (4, mp.mpf(0))):
            k0 = sum(coef)
            k1 = sum(n * c for n, c in enumerate(coef))
            km1 = sum(c * (-1) ** n for n, c in enumerate(coef))
            edge = (d - 1) * k1 - (d - 3) * k0
            anti = -(d - 1) * (k0 + km1) / 2 if beta == 0 else -beta * (d - 1) * (k0 + km1) / mp.expm1(2 * beta)
            top = max(edge, anti)
            for u in us:
                r = 1 - u
                K = mp.polyval(coef[::-1], r)
                b = -(d - 1) * k0 * r + (d - 2 + r * r) * K
                a = 2 * (1 - r * r) * (k0 - r * K)
                val = -b / u if beta == 0 else (-beta * b - beta**2 * a / 2) / mp.expm1(beta * u)
                assert val < top, (d, beta, u, val, top)


def test_no_combination_of_monomials_up_to_200_peaks_inside():
    """All nonnegative combinations of rho^0..rho^200 at once: R(rho*) > R(1) and R(rho*) > R(-1) for one
    combination iff two generators (A_n, B_n) = (R_n(rho*) - R_n(1), R_n(rho*) - R_n(-1)) span a direction
    with both coordinates positive.  Checked on a (d, beta, rho*) grid."""
    n = np.arange(201)[:, None]
    rhos = np.linspace(-0.995, 0.995, 200)
    monomials = rhos[None, :] ** n                                                   # K = rho^n, k0 = 1
    eye = np.eye(n.size)
    feasible = 0
    for d in (2, 3, 4, 5, 8, 16, 64):
        for beta in (0.0, 0.05, 0.3, 1.0, 2.0, 3.0, 4.0, 6.0, 10.0, 20.0):
            R = ratio_from_values(monomials, 1.0, d, beta, rhos)                     # R_n(rho*), row n
            edge, anti, _ = endpoints(eye, d, beta)
            A, B = R - edge[:, None], R - anti[:, None]
            scale = np.abs(edge)[:, None] + np.abs(anti)[:, None] + 1.0
            A, B = A / scale, B / scale
            tol = 1e-12
            P, Q = A > tol, B > tol
            both = (P & Q).any(axis=0)
            # n in P (B_n <= 0), m in Q (A_m <= 0): feasible iff B_m/|A_m| > |B_n|/A_n for some pair
            with np.errstate(divide="ignore", invalid="ignore"):
                lo = np.where(P, -B / A, np.inf).min(axis=0)
                hi = np.where(Q, np.where(A < -tol, B / -A, np.inf), -np.inf).max(axis=0)
            feasible += int(np.sum(both | (P.any(axis=0) & Q.any(axis=0) & (hi > lo * (1 + 1e-9) + 1e-12))))
    assert feasible == 0


def test_the_oracle_sees_interior_maxima_of_kernels_that_are_not_positive_definite():
    """The assumption matters, and the dense-grid oracle is not blind: K = 0.128 rho + 1.218 rho^2 -
    1.129 rho^3 (a negative coefficient; no MLP builds it) at d = 7, beta = 0.5 peaks at rho = 0.049 with
    L2 f / f = -0.074, far above the edge value -5.81 and the value at rho = -1, -4.25."""
    a = np.array([[0.0, 0.128, 1.218, -1.129]])
    R = ratio_textbook(a, 7, 0.5, RHO)[0]
    edge, anti, _ = endpoints(a, 7, 0.5)
    i = int(np.argmax(R))
    assert abs(RHO[i] - 0.049) < 0.01 and R[i] > max(edge[0], anti[0]) + 4.0


# ----------------------------------------------------------------------------- the toolkit's kernels
TOOLKIT = [  # (activation, sigma_w, sigma_b, sigma_a, hidden)
    ("relu", 1.0, 1.0, 1.0, ()), ("relu", 0.3, 3.0, 1.0, ()), ("leaky_relu:0.1", 1.2, 0.4, 0.8, ()),
    ("abs", 0.9, 1.5, 1.0, ()), ("identity", 1.0, 0.7, 1.0, ()), ("erf", 2.0, 0.0, 1.0, ()),
    ("erf", 0.8, 2.5, 1.3, ()), ("tanh", 1.2, 0.3, 1.0, ()), ("gelu", 1.0, 1.5, 1.0, ()),
    ("silu", 1.5, 0.5, 0.7, ()), ("softplus", 1.0, 2.0, 1.0, ()), ("sin:3", 1.0, 0.2, 1.0, ()),
    ("cos:2", 0.7, 1.0, 1.0, ()), ("sin(3*u) + u", 1.5, 0.5, 1.0, ()), ("u*erf(u)", 1.0, 1.0, 1.0, ()),
    ("1 + 0.05*(u**4 - 6*u**2 + 3)", 1.2077, 0.0, 1.3081, ()), ("cos(u) + 0.1*u**3", 1.0, 3.0, 1.0, ()),
    ("relu", 1.0, 0.5, 1.0, (("tanh", 1.2, 0.1), ("relu", 1.0, 0.5))),
    ("erf", 1.0, 2.0, 1.0, (("erf", 1.5, 1.0),)),
]


@pytest.mark.parametrize("act,sw,sb,sa,hidden", TOOLKIT, ids=[f"{t[0]}-{i}" for i, t in enumerate(TOOLKIT)])
def test_toolkit_lambda_bar_is_an_endpoint_and_the_dense_grid_sup(act, sw, sb, sa, hidden):
    kf = kernel(act, sw, sb, sa, hidden=hidden)
    us = np.concatenate([np.geomspace(1e-3, 1e-1, 200), np.linspace(0.1, 2.0, 3000)])
    rho = 1 - us
    K = kf.k0 - kf.gap(us)
    rng = np.random.default_rng(abs(hash((act, sw, sb))) % 2**32)
    d = np.concatenate([[2, 3, 4], rng.integers(2, 65, size=9)])
    beta = np.concatenate([[0.0, 1.0, 8.0], rng.choice([0.0, 0.3, 1.0, 2.0, 4.0, 10.0, 20.0], size=9)])
    value, arg = lambda_bar_rows(kf, d, beta)
    assert set(np.unique(arg)) <= {1.0, -1.0}
    for dd, be, v, ar in zip(d, beta, value, arg):
        b = -(dd - 1) * kf.k0 * rho + (dd - 2 + rho**2) * K
        a2 = 2 * (1 - rho**2) * (kf.k0 - rho * K)
        R = -b / us if be == 0 else (-be * b - be**2 * a2 / 2) / np.expm1(be * us)
        scale = abs(v) + kf.k0 * (dd + be)
        edge = (dd - 1) * kf.k1 - (dd - 3) * kf.k0
        assert R.max() <= v + 1e-9 * scale, (dd, be, R.max(), v)
        expected = edge if ar == 1.0 else R[-1]                                # rho -> 1 or rho = -1 (u = 2)
        assert v == pytest.approx(expected, rel=1e-9, abs=1e-12 * scale)
        assert max(edge, R[-1]) == pytest.approx(v, rel=1e-9, abs=1e-12 * scale)


def test_polynomial_activation_regression_exact_edge():
    """phi = 1 + (He_4(u))/20: K is a polynomial in rho (exact moments here); the old grid sup found a
    near-edge maximum (rho = 1 - 2e-9) 1.4e-3 above the edge value, from the gap's lost digits."""
    sw, sa, d, beta = 1.2077, 1.3081, 55, 1.1066
    x, y, r = sp.symbols("x y r", real=True)
    phi = lambda t: 1 + sp.Rational(1, 20) * (t**4 - 6 * t**2 + 3)          # noqa: E731
    S = sp.Rational(str(sw))**2
    C = S * r
    a_, b_ = sp.symbols("a b")
    mgf = sp.exp((S * a_**2 + 2 * C * a_ * b_ + S * b_**2) / 2)
    px, py = sp.Poly(sp.expand(phi(x)), x), sp.Poly(sp.expand(phi(y)), y)
    E = sum(ci * cj * sp.diff(mgf, a_, i, b_, j).subs({a_: 0, b_: 0})
            for (i,), ci in px.terms() for (j,), cj in py.terms())
    K = sp.expand(sp.Rational(str(sa))**2 * E)
    k0, k1 = float(K.subs(r, 1)), float(sp.diff(K, r).subs(r, 1))
    exact = (d - 1) * k1 - (d - 3) * k0
    value, arg = lambda_bar("1 + 0.05*(u**4 - 6*u**2 + 3)", d, sw, 0.0, sa, beta)
    assert arg == 1.0 and value == pytest.approx(exact, rel=1e-12)
