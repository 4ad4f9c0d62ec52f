"""Synchronization up to sign: the projective two-point motion of odd fields (issue 25.3).

A field is *odd* when F(-x) = -F(x) in law, jointly with F(x): for the MLP field this holds when
phi is odd (phi(-u) + phi(u) simplifies to 0) and the bias vanishes (sigma_b = 0); then
``K(-rho) = -K(rho)``.  The flow commutes with x -> -x token by token, so it descends to the
projective space, and the right energy is the projective one,
``E_proj = mean_{i,j} (1 - <x_i, x_j>^2)``.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.projective``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from .symbols import Krho, alpha, c_rem, d, k0, k1, q, rho, u
from .two_point import ito_moments, noise_coefficients

#: r = rho^2 and G = rho K(rho) (a function of r for an odd kernel)
r_sym = sp.Symbol("r", nonnegative=True)
G_sym = sp.Symbol("G_r", real=True)


@lru_cache(maxsize=None)
def projective_coefficients() -> tuple[sp.Expr, sp.Expr]:
    """(B_r, A_r): Itô drift and squared diffusion of r = rho^2 (in rho, d, k0, K_rho)."""
    b, a = noise_coefficients()
    drift, diffusion = ito_moments(rho**2, [rho], {}, sp.Matrix([b]), sp.Matrix([[a]]))
    return sp.expand(drift), sp.factor(diffusion)


@lru_cache(maxsize=None)
def odd_invariance() -> tuple[sp.Expr, sp.Expr]:
    """Residuals of (B_r, A_r) under rho -> -rho, K(rho) -> -K(rho) (zero: the law of r is Markov)."""
    B, A = projective_coefficients()
    flip = {rho: -rho, Krho: -Krho}
    res = tuple(sp.simplify(E.subs(flip, simultaneous=True) - E) for E in (B, A))
    if any(x != 0 for x in res):
        raise DerivationError(f"projective coefficients are not even for an odd field: {res}")
    return res


@lru_cache(maxsize=None)
def generator_in_r() -> tuple[sp.Expr, sp.Expr]:
    """(B_r, A_r) as functions of r and G = rho K(rho): K_rho = G/rho, then rho^2 = r (no rho left)."""
    odd_invariance()
    out = []
    for E in projective_coefficients():
        e = sp.expand(E.subs(Krho, G_sym / rho))
        e = sp.expand(e.subs(rho**2, r_sym).subs(rho**4, r_sym**2))
        e = sp.expand(sp.expand(e).subs(rho, sp.sqrt(r_sym)))
        if e.has(rho) or any(p.exp.q != 1 for p in e.atoms(sp.Pow) if p.base == r_sym):
            raise DerivationError(f"projective generator is not a function of r: {e}")
        out.append(sp.factor(e) if E is projective_coefficients()[1] else sp.collect(e, [G_sym, k0]))
    return out[0], out[1]


@lru_cache(maxsize=None)
def rate_ratio() -> sp.Expr:
    """L f / f for f = 1 - r = 1 - rho^2 (in rho, d, k0, K_rho)."""
    B, A = projective_coefficients()
    f = 1 - rho**2
    g = 1 - r_sym
    Lf = (sp.diff(g, r_sym) * B + sp.diff(g, r_sym, 2) * A / 2)
    return sp.simplify(Lf / f)


@lru_cache(maxsize=None)
def stable_numerator() -> sp.Expr:
    """B_r / u as a polynomial in (u, q), rho = 1 - u, K = k0 - u q; L f/f = -(B_r/u)/(2 - u)."""
    B, _ = projective_coefficients()
    out = sp.expand(B.subs(Krho, k0 - u * q).subs(rho, 1 - u) / u)
    if any(e < 0 for m in sp.Poly(out, u).monoms() for e in m):
        raise DerivationError("B_r/u is not polynomial in u")
    ratio = rate_ratio().subs(Krho, k0 - u * q).subs(rho, 1 - u)
    if sp.simplify(ratio + out / (2 - u)) != 0:
        raise DerivationError("stable form of the projective rate does not match L f / f")
    return sp.collect(out, u)


@lru_cache(maxsize=None)
def edge_rate() -> sp.Expr:
    """lim_{rho -> 1} L f / f with K(1-u) = k0 - k1 u + c u^{1+alpha}."""
    remainder = k0 - k1 * u + c_rem * u**(1 + alpha)
    expr = rate_ratio().subs(Krho, remainder).subs(rho, 1 - u)
    lim = sp.limit(sp.expand(sp.simplify(expr)), u, 0, "+")
    if lim.has(sp.oo, -sp.oo, sp.nan, sp.zoo, u, c_rem, alpha):
        raise DerivationError(f"projective edge rate: limit failed: {lim}")
    return sp.collect(sp.expand(lim), [k0, k1], sp.factor)


@lru_cache(maxsize=None)
def centre_rate() -> sp.Expr:
    """L f / f at rho = 0 for an odd kernel (K(0) = 0)."""
    return sp.simplify(rate_ratio().subs(Krho, 0).subs(rho, 0))


@lru_cache(maxsize=None)
def projective_lyapunov() -> sp.Expr:
    """(1/2) lim_{v -> 0} (drift_v/v - A_v/(2 v^2)), v = 1 - r, from the projective generator."""
    B, A = projective_coefficients()
    remainder = k0 - k1 * u + c_rem * u**(1 + alpha)
    B, A = (E.subs(Krho, remainder).subs(rho, 1 - u) for E in (B, A))
    v = 1 - (1 - u)**2
    drift_v, diff_v = -B, A                  # v = 1 - r
    rate = sp.Rational(1, 2) * (drift_v / v - diff_v / (2 * v**2))
    lim = sp.limit(sp.expand(sp.simplify(rate)), u, 0, "+")
    if lim.has(sp.oo, -sp.oo, sp.nan, sp.zoo, u, c_rem, alpha):
        raise DerivationError(f"projective Lyapunov exponent: limit failed: {lim}")
    return sp.collect(sp.expand(lim), [k0, k1], sp.factor)


def phi_is_odd(expr: sp.Expr, var: sp.Symbol) -> bool:
    """phi(-u) + phi(u) simplifies to 0 (the oddness test of an activation's expression)."""
    return sp.simplify(sp.piecewise_fold(expr.subs(var, -var) + expr)) == 0


def activation_is_odd(activation) -> bool:
    """:func:`phi_is_odd` of an activation (a name, spec or Activation)."""
    from ..activations import get_activation, u as u_act
    return phi_is_odd(get_activation(activation).expr, u_act)


@register("projective")
def projective() -> Derivation:
    """The projective two-point generator, lambda_bar_proj for E_proj = mean (1 - rho^2), and the
    projective Lyapunov exponent, for odd fields."""
    from .dissipation import edge_rate as edge_1
    from .lyapunov import lambda1_tangent
    dv = Derivation(
        "projective", "Synchronization up to sign: the projective two-point motion",
        ["the field is odd: $F(-x) = -F(x)$ jointly in law, so $K(-\\rho) = -K(\\rho)$ (MLP field: $\\phi$ odd, "
         "i.e. $\\phi(-u) + \\phi(u) = 0$, and $\\sigma_b = 0$)",
         "$d\\rho = b\\,dt + \\sqrt{a}\\,dB$ with $b$, $a$ the noise coefficients of the two-point motion",
         "$E_{\\mathrm{proj}} = \\frac{1}{N^2}\\sum_{i,j} (1 - \\langle x_i, x_j\\rangle^2)$; "
         "$\\bar\\lambda_{\\mathrm{proj}} = \\sup_{r \\in [0, 1)} L f / f$ with $f = 1 - r$, $r = \\rho^2$",
         "near $\\rho = 1$: $K(1-u) = k_0 - k_1 u + c\\, u^{1+\\alpha}$ with $\\alpha > 0$"],
        [], None)
    B, A = projective_coefficients()
    Bs, As = sp.Symbol("B_r"), sp.Symbol("A_r")
    dv.add("Itô's formula for $r = \\rho^2$: the drift", sp.Eq(Bs, B))
    dv.add("and the squared diffusion coefficient", sp.Eq(As, A))
    res = odd_invariance()
    dv.add("Under $\\rho \\to -\\rho$, $K(\\rho) \\to -K(\\rho)$ (an odd field) both are unchanged: the residuals",
           sp.Tuple(*res))
    Br, Ar = generator_in_r()
    dv.add("Hence $r$ is a Markov diffusion, $L g = B_r g' + A_r g''/2$, with coefficients in $r$ and "
           "$G_r = \\rho K(\\rho)$ (even in $\\rho$, a function of $r$)", sp.Tuple(sp.Eq(Bs, Br), sp.Eq(As, Ar)))
    ratio = rate_ratio()
    dv.add("With $f = 1 - r$: $L f / f$", ratio)
    dv.add("Stable form: $\\rho = 1 - u$, $K = k_0 - u q$; $B_r / u$ is a polynomial in $u$ and $q$, and "
           "$L f / f = -(B_r/u)/(2 - u)$ with $B_r/u$ equal to", stable_numerator())
    edge = edge_rate()
    lp = sp.Symbol("lambda_edge_proj")
    dv.add("Edge value $\\lim_{\\rho \\to 1} L f / f$", sp.Eq(lp, edge))
    diff_edge = sp.simplify(edge - edge_1())
    if diff_edge != 0:
        raise DerivationError(f"projective edge rate differs from the edge rate of 1 - rho: {diff_edge}")
    dv.add("It equals the edge value of the energy $1 - \\rho$ (near the diagonal $1 - \\rho^2 \\approx 2(1-\\rho)$): "
           "the difference", diff_edge)
    centre = centre_rate()
    dv.add("At $r = 0$ (orthogonal tokens, $K(0) = 0$ for an odd kernel) $L f / f$ equals", centre)
    lam = projective_lyapunov()
    ls = sp.Symbol("lambda_proj")
    dv.add("Projective Lyapunov exponent: $v = 1 - r = \\sin^2\\theta$ with $\\theta$ the projective distance, "
           "$\\lambda_{\\mathrm{proj}} = \\tfrac12 \\lim_{v \\to 0} (\\mathrm{drift}_v / v - A_v / (2 v^2))$",
           sp.Eq(ls, lam))
    diff_lam = sp.simplify(lam - lambda1_tangent())
    if diff_lam != 0:
        raise DerivationError(f"projective exponent differs from lambda_1: {diff_lam}")
    dv.add("It equals $\\lambda_1$ of the tangent flow (the projective flow is locally the sphere flow): the "
           "difference", diff_lam)
    dv.result = sp.Tuple(sp.Eq(lp, edge), sp.Eq(ls, lam))
    dv.lhs = (r"\bar\lambda_{\mathrm{proj}} \ge \lambda_{\mathrm{edge,proj}} =", r"\lambda_{\mathrm{proj}} =")
    dv.extras.update(drift_r=sp.sstr(B), diffusion_r=sp.sstr(A), generator_r=(sp.sstr(Br), sp.sstr(Ar)),
                     stable_numerator=sp.sstr(stable_numerator()), edge_rate=sp.sstr(edge),
                     centre_rate=sp.sstr(centre), lambda_proj=sp.sstr(lam))
    return dv


__all__ = ["projective", "projective_coefficients", "odd_invariance", "generator_in_r", "rate_ratio",
           "stable_numerator", "edge_rate", "centre_rate", "projective_lyapunov", "phi_is_odd", "activation_is_odd", "q"]
