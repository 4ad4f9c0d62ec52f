"""The top Lyapunov exponent lambda_1 of the noise-only flow, by two independent routes.

Route 1 (tangent flow): linearize ``dX = c(X) dt + P_X W(dt, X)`` along a unit tangent
vector V at x.  Sympy differentiates ``x -> P_x w`` (giving ``-(V x^T + x V^T) w``), and
``P_x DW(x)[V]`` is a Gaussian vector whose covariance ``k1 |V|^2 I`` and independence
from ``W(x)`` are derived from ``K`` (mixed derivatives of ``K(<x+sV, x+tV>)``).  Itô on
``log |V|`` in explicit coordinates (d = 2..7; affine in d, as in ``two_point``) gives

    lambda_1 = ((d-3) k1 - (d-1) k0) / 2.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.lyapunov``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from ..activations import get_activation
from .kernel import kernel_constants_symbolic, kernel_derivation
from .symbols import alpha, c_rem, k0, k1, rho, sigma_a, sigma_b, sigma_w, u
from .two_point import (EXPLICIT_DIMS, affine_in_d, ito_moments, noise_coefficients, projection_drift_gamma,
                        projector, unit)


def field_derivative_covariances():
    """(Var of DW(x)[V] per component, Cov(W(x), DW(x)[V])) for unit tangent V, from K.

    Cov(W(p), W(q)) = K(<p,q>) I, so Cov(DW[V], DW[V]) = d^2/ds dt K(<x+sV, x+tV>) at 0
    and Cov(W(x), DW[V]) = d/dt K(<x, x+tV>) at 0, with <x,x> = <V,V> = 1, <x,V> = 0.
    """
    Kf = sp.Function("K")
    s, t = sp.symbols("s t", real=True)
    xx, xv, vv = sp.symbols("xx xv vv", real=True)
    overlap = xx + (s + t) * xv + s * t * vv        # <x + sV, x + tV>
    point = {xx: 1, xv: 0, vv: 1, s: 0, t: 0}
    var = sp.diff(Kf(overlap), s, t).subs(point).doit()
    cross = sp.diff(Kf(xx + t * xv), t).subs(point).doit()
    # name the derivatives at 1: K'(1) = k1, K''(1) = k2 (k2 must drop out)
    k2 = sp.Symbol("k2")

    def name(expr):
        for sub in expr.atoms(sp.Subs):
            order = sum(c for _, c in sub.expr.variable_count)
            expr = expr.subs(sub, {1: k1, 2: k2}[order])
        return expr
    var, cross = sp.simplify(name(var)), sp.simplify(name(cross))
    if var.has(k2) or var.has(sp.Subs):
        raise DerivationError(f"field derivative covariance: unexpected form {var}")
    return var, cross


def tangent_noise_loading(n: int) -> sp.Matrix:
    """d/dx [P_x w] applied to V at x = e1, V = e2 (w symbolic), as a matrix acting on w."""
    xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    ws = sp.Matrix(sp.symbols(f"w1:{n + 1}", real=True))
    field = (sp.eye(n) - xs * xs.T) * ws
    x, V = unit(n, 0), unit(n, 1)
    dfield = (field.jacobian(xs) * V).subs(dict(zip(xs, x)))
    return dfield.jacobian(ws)        # linear in w


def tangent_log_growth(n: int) -> sp.Expr:
    """Itô drift of log|V| in dimension n (noise-only tangent flow)."""
    vs = list(sp.symbols(f"v1:{n + 1}", real=True))
    x, V = unit(n, 0), unit(n, 1)
    gam = projection_drift_gamma(n)
    xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    Dc = (gam * xs).jacobian(xs)
    B = tangent_noise_loading(n)
    var_dw, cross = field_derivative_covariances()
    if cross != 0:
        raise DerivationError(f"W(x) and DW(x)[V] are correlated: {cross}")
    P = projector(x)
    cov = k0 * B * B.T + var_dw * P * P.T
    g = sp.log(sum(z**2 for z in vs)) / 2
    drift, _ = ito_moments(g, vs, dict(zip(vs, V)), Dc * V, cov)
    return sp.simplify(drift)


@lru_cache(maxsize=None)
def lambda1_tangent() -> sp.Expr:
    """Route 1: lambda_1(d, k0, k1) from Itô on log|V|."""
    return sp.collect(affine_in_d({n: tangent_log_growth(n) for n in EXPLICIT_DIMS}, "lambda_1"),
                      [k0, k1], sp.factor)


@lru_cache(maxsize=None)
def lambda1_two_point() -> sp.Expr:
    """Route 2: lambda_1 from the small-distance limit of the two-point motion."""
    b, a = noise_coefficients(k0 - k1 * u + c_rem * u**(1 + alpha))
    b, a = b.subs(rho, 1 - u), a.subs(rho, 1 - u)
    drift_u = -b                                   # u = 1 - rho
    rate = sp.Rational(1, 2) * (drift_u / u - a / (2 * u**2))
    lim = sp.limit(sp.expand(rate), u, 0, "+")
    if lim.has(sp.oo, -sp.oo, sp.nan, sp.zoo, u, c_rem, alpha):
        raise DerivationError(f"small-distance limit failed: {lim}")
    return sp.collect(sp.expand(lim), [k0, k1], sp.factor)


def gaussian_moment_constants(activation) -> tuple[sp.Expr, sp.Expr]:
    """k0 = sa^2 E[phi(U)^2], k1 = sa^2 sw^2 E[phi'(U)^2], U ~ N(0, sw^2 + sb^2), by sympy."""
    from ..activations import u as uu
    act = get_activation(activation)
    if act.has_jump:
        raise DerivationError(f"{act.name}: phi has a jump, k1 = +inf")
    s = sp.sqrt(sigma_w**2 + sigma_b**2)
    z = sp.Symbol("z", real=True)
    dens = sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi)
    m0 = sp.integrate(sp.piecewise_fold(act.expr.subs(uu, s * z)**2) * dens, (z, -sp.oo, sp.oo))
    m1 = sp.integrate(sp.piecewise_fold(act.derivative_ae.subs(uu, s * z)**2) * dens, (z, -sp.oo, sp.oo))
    if m0.has(sp.Integral) or m1.has(sp.Integral):
        raise DerivationError(f"{act.name}: sympy cannot integrate the Gaussian moments")
    return sp.simplify(sigma_a**2 * m0), sp.simplify(sigma_a**2 * sigma_w**2 * m1)


@lru_cache(maxsize=None)
def kernel_constants(activation: str = "relu") -> tuple[sp.Expr, sp.Expr, str]:
    """(k0, k1, source) in sigma_w, sigma_b, sigma_a for a closed-form activation.

    From ``symbolic.kernel.kernel_constants_symbolic`` when it derives a closed form (same
    symbols: ``symbolic.symbols``), else :func:`gaussian_moment_constants`.
    """
    closed = kernel_constants_symbolic(activation)
    if closed is not None:
        return closed[0], closed[1], "symbolic.kernel"
    a0, a1 = gaussian_moment_constants(activation)
    return a0, a1, "gaussian moments (sympy)"


@lru_cache(maxsize=None)
def lambda1_relu() -> sp.Expr:
    """lambda_1 for ReLU in (d, sigma_w, sigma_b, sigma_a)."""
    c0, c1, _ = kernel_constants("relu")
    return sp.factor(lambda1_tangent().subs({k0: c0, k1: c1}))


@register("lyapunov")
def lyapunov(activation: str = "relu") -> Derivation:
    """lambda_1 = ((d-3) k1 - (d-1) k0)/2, by the tangent flow and by the two-point motion; k0, k1 of `activation`."""
    dv = Derivation(
        "lyapunov", "Top Lyapunov exponent of the noise-only flow",
        ["noise-only SDE $dX = c(X)\\,dt + P_X W(dt, X)$ with $c(x) = -(d-1) k_0 x/2$ (derived for the two-point "
         "motion)",
         "$k_0 = K(1)$ and $k_1 = K'(1)$ finite ($\\phi$ without jumps)",
         "tangent vector $V$ of unit length orthogonal to $x$ (by isotropy the rate depends on neither $x$ nor $V$)"],
        [], None)
    var_dw, cross = field_derivative_covariances()
    dv.add("Covariance of the field derivative $DW(x)[V]$ per component ($k_1 = K'(1)$) and its "
           "cross-covariance with $W(x)$", sp.Tuple(var_dw, cross))
    B = tangent_noise_loading(3)
    dv.add("Derivative of $x \\mapsto P_x w$ along $V$ at $x = e_1$, $V = e_2$ ($d = 3$ shown), i.e. "
           "$-(V x^{\\top} + x V^{\\top})$", B)
    g = sp.Symbol("Lambda")
    dv.add("Itô drift $\\Lambda$ of $\\log |V|$ in $d = 3$", sp.Eq(g, tangent_log_growth(3)))
    lam = lambda1_tangent()
    lam_sym = sp.Symbol("lambda_1")
    dv.add("Route 1 (tangent flow), any $d$: at $x = e_1$, $V = e_2$ every matrix in Itô's formula for "
           "$\\log |V|$ (the noise loading $-(V x^{\\top} + x V^{\\top})$, the projector $P_x$, the Hessian of "
           "$\\log |V|$, the drift's Jacobian $\\gamma I$, the covariances) maps $\\operatorname{span}(e_1, e_2)$ to "
           "itself and is a multiple of the identity, with a factor free of $d$, on its orthogonal complement of "
           "dimension $d - 2$. The drift is a trace, hence affine in $d$: the explicit computations in $d = 2$ and "
           "$d = 3$ determine it, and those in $d = 4, \\dots, 7$ agree with it", sp.Eq(lam_sym, lam))
    lam2 = lambda1_two_point()
    dv.add("Route 2 (two-point motion at small distance, any $d$): $u = 1 - \\rho$, "
           "$K(1-u) = k_0 - k_1 u + c\\, u^{1+\\alpha}$ with $\\alpha > 0$, and "
           "$\\lambda_1 = \\tfrac12 \\lim_{u \\to 0} \\bigl(\\mathrm{drift}_u / u - a/(2u^2)\\bigr)$", sp.Eq(lam_sym, lam2))
    agree = sp.simplify(lam - lam2)
    if agree != 0:
        raise DerivationError(f"the two routes to lambda_1 disagree: {agree}")
    dv.add("Difference of the two routes", agree)
    act = get_activation(activation)
    dv.result = sp.Eq(lam_sym, lam)
    dv.extras.update(lambda1=sp.sstr(lam), routes_agree=True, activation=act.name)
    if act.name == "relu":
        c0, c1, source = kernel_constants("relu")
        how = ("from the kernel derivation" if source == "symbolic.kernel"
               else "from the Gaussian moments of Price's theorem")
        dv.add(f"ReLU constants $k_0$, $k_1$ ({how})", sp.Tuple(c0, c1))
        relu = lambda1_relu()
        dv.add("ReLU: $\\lambda_1$ in terms of $d$, $\\sigma_w$, $\\sigma_b$, $\\sigma_a$; negative for every $d \\ge 2$", relu)
        dv.extras.update(lambda1_relu=sp.sstr(relu), relu_constants_source=source)
        return dv
    # another activation: its k0, k1 from the kernel derivation (closed form, or the defining
    # Gaussian integrals that numeric.kernels evaluates by quadrature)
    kd = kernel_derivation(act)
    c0, c1 = kd.extras["k0"], kd.extras["k1"]
    dv.add(f"$k_0$, $k_1$ for $\\phi(u) = {sp.latex(act.expr)}$ ({kd.extras['method']}, from the kernel derivation)",
           sp.Tuple(c0, c1))
    if c1 is sp.oo:
        dv.add("$\\phi$ has a jump: $k_1 = +\\infty$, so $\\lambda_1 = +\\infty$ for $d > 3$, $-\\infty$ for $d = 2$, "
               "undetermined for $d = 3$")
        dv.extras.update(lambda1_activation="oo (d > 3), -oo (d = 2), undetermined (d = 3)")
        return dv
    value = lam.subs({k0: c0, k1: c1})
    dv.add(f"$\\lambda_1$ for $\\phi(u) = {sp.latex(act.expr)}$ in terms of $d$, $\\sigma_w$, $\\sigma_b$, $\\sigma_a$",
           value if value.has(sp.Integral) else sp.factor(value))
    dv.extras.update(lambda1_activation=sp.sstr(value), constants_method=kd.extras["method"])
    return dv


__all__ = ["lyapunov", "lambda1_tangent", "lambda1_two_point", "lambda1_relu", "kernel_constants",
           "gaussian_moment_constants", "field_derivative_covariances", "sigma_w", "sigma_b", "sigma_a"]
