"""The Itô drift created by the radial projection (docs/mathematics.md, section 3), derived by sympy.

For |x| = 1 and h = delta a + sqrt(delta) g with E g = 0, E g g^T = Sigma,

    Pi(x + h) = (x + h) (1 + 2<x,h> + |h|^2)^{-1/2}.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.ito``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from . import register
from .derivation import Derivation
from .symbols import d, eps, k0          # eps = sqrt(delta)

# scalar invariants
xa, xg, gg, ag, aa = sp.symbols("xa xg gg ag aa", real=True)
xSx, trS = sp.symbols("xSx trSigma", real=True)       # x^T Sigma x, tr Sigma
# vector atoms (non-commutative so sympy never merges them with scalars)
X, A, G, SX, SA = sp.symbols("x a g Sigma_x Sigma_a", commutative=False)

_INVARIANT_NAMES = {xa: r"\langle x,a\rangle", xg: r"\langle x,g\rangle", gg: "|g|^2",
                    ag: r"\langle a,g\rangle", aa: "|a|^2", xSx: r"x^T \Sigma x", trS: r"\mathrm{tr}\,\Sigma"}


def _gaussian_expectation(term: sp.Expr) -> sp.Expr:
    """E over g of one monomial (scalar coefficient x at most one vector atom), up to degree 2 in g."""
    coeff, atoms = term.args_cnc()
    coeff = sp.Mul(*coeff)
    atom = sp.Mul(*atoms) if atoms else sp.S.One
    # g-degree of a monomial: xg -> 1, gg -> 2, ag -> 1, plus 1 for the atom g itself
    poly = sp.Poly(coeff, xg, gg, ag)
    out = sp.S.Zero
    for (p_xg, p_gg, p_ag), c in poly.terms():
        g_degree = p_xg + 2 * p_gg + p_ag + (1 if atom == G else 0)
        if g_degree == 0:
            out += c * atom
        elif g_degree % 2 == 1:
            continue                                   # odd moments of a centered Gaussian vanish
        elif g_degree == 2:
            if atom == G and p_xg == 1:
                out += c * SX                          # E <x,g> g = Sigma x
            elif atom == G and p_ag == 1:
                out += c * SA                          # E <a,g> g = Sigma a
            elif p_xg == 2:
                out += c * xSx * atom                  # E <x,g>^2 = x^T Sigma x
            elif p_gg == 1:
                out += c * trS * atom                  # E |g|^2 = tr Sigma
            else:
                out += c * sp.Symbol("aSx", real=True) * atom   # E <x,g><a,g> = a^T Sigma x
        else:
            raise ValueError(f"moment of degree {g_degree} should have been truncated")
    return out


@lru_cache(maxsize=None)
def _derive():
    steps = []
    inner = sp.expand(2 * (eps**2 * xa + eps * xg) + eps**4 * aa + 2 * eps**3 * ag + eps**2 * gg)
    steps.append(("$2\\langle x,h\\rangle + |h|^2$ with $h = \\varepsilon^2 a + \\varepsilon g$, "
                  "$\\varepsilon = \\sqrt{\\delta}$, $|x| = 1$", inner))
    norm = sp.series((1 + inner) ** sp.Rational(-1, 2), eps, 0, 3).removeO()
    norm = sp.expand(norm)
    steps.append(("$(1 + 2\\langle x,h\\rangle + |h|^2)^{-1/2}$ to order $\\varepsilon^2$", norm))
    step = sp.expand((norm - 1) * X + eps**2 * norm * A + eps * norm * G)
    # keep orders eps^1 and eps^2
    step = sum((step.coeff(eps, k) * eps**k for k in (1, 2)), sp.S.Zero)
    step = sp.expand(step)
    steps.append(("$\\Pi(x+h) - x = (N - 1)x + \\varepsilon^2 N a + \\varepsilon N g$ to order "
                  "$\\varepsilon^2$", step))
    order1 = sp.expand(step.coeff(eps, 1))
    order2 = sp.expand(step.coeff(eps, 2))
    e1 = sp.expand(sum((_gaussian_expectation(t) for t in sp.Add.make_args(order1)), sp.S.Zero))
    e2 = sp.expand(sum((_gaussian_expectation(t) for t in sp.Add.make_args(order2)), sp.S.Zero))
    steps.append(("Gaussian expectation of the order-$\\sqrt{\\delta}$ term (martingale part)", e1))
    steps.append(("Gaussian expectation of the order-$\\delta$ term: "
                  "$E g = 0$, $E\\langle x,g\\rangle g = \\Sigma x$, "
                  "$E\\langle x,g\\rangle^2 = x^T\\Sigma x$, $E|g|^2 = \\mathrm{tr}\\,\\Sigma$", e2))
    tangent = sp.expand(A - xa * X)                    # P_x a
    general = sp.expand(e2 - tangent)
    steps.append(("Subtract the tangential drift $P_x a = a - \\langle x,a\\rangle x$: the Itô drift "
                  "$c(x)$ for general $\\Sigma$", general))
    iso = sp.expand(general.subs({SX: k0 * X, xSx: k0, trS: d * k0}))
    coefficient = sp.factor(iso.coeff(X))
    if sp.expand(iso - coefficient * X) != 0:
        raise ValueError("isotropic drift is not a multiple of x")
    steps.append(("Isotropic noise $\\Sigma = k_0 I_d$: $\\Sigma x = k_0 x$, $x^T\\Sigma x = k_0$, "
                  "$\\mathrm{tr}\\,\\Sigma = d k_0$", iso))
    return tuple(steps), e1, e2, general, coefficient


def general_drift() -> sp.Expr:
    """c(x) for general Sigma, in the atoms x, Sigma_x and the scalars xSx, trSigma."""
    return _derive()[3]


def isotropic_drift_coefficient() -> sp.Expr:
    """gamma(d, k0) with c(x) = gamma x for Sigma = k0 I_d."""
    return _derive()[4]


@register("ito_drift")
def ito_drift_derivation() -> Derivation:
    """c(x) from expanding Pi(x + delta a + sqrt(delta) g) to order delta."""
    steps, e1, e2, general, coefficient = _derive()
    der = Derivation(
        "ito_drift", "Itô drift of the radial projection",
        ["$|x| = 1$, $\\Pi(z) = z/|z|$, $h = \\delta a + \\sqrt{\\delta} g$",
         "$E g = 0$, $E g g^T = \\Sigma(x)$ (general), then $\\Sigma = k_0 I_d$",
         "Terms of order higher than $\\delta$ are dropped (they vanish in the limit $L \\to \\infty$)",
         "Vectors are the atoms $x$, $a$, $g$, $\\Sigma x$; scalars are the invariants "
         + ", ".join(f"${v}$" for v in _INVARIANT_NAMES.values())],
        [], None)
    for text, expr in steps:
        der.add(text, expr)
    xvec = sp.MatrixSymbol("x", d, 1)
    der.result = sp.Eq(sp.MatrixSymbol("c", d, 1), coefficient * xvec, evaluate=False)
    der.lhs = "c(x)"
    der.extras.update(coefficient=coefficient, general=general)
    return der


@lru_cache(maxsize=None)
def explicit_coordinate_drift(dim: int, isotropic: bool = True):
    """The same expansion in explicit coordinates for dimension `dim` (x = e_1 by rotation invariance).

    Returns (drift vector as a sympy Matrix, Sigma) where the order-delta mean of
    Pi(x + delta a + sqrt(delta) g) - x minus P_x a is computed with g = (g_1..g_d),
    E g_i g_j = Sigma_ij (Sigma = k0 I if isotropic else a symmetric symbol matrix).
    """
    if dim < 2:
        raise ValueError("dim must be >= 2")
    gs = sp.symbols(f"g1:{dim + 1}", real=True)
    av = sp.symbols(f"a1:{dim + 1}", real=True)
    if isotropic:
        Sigma = k0 * sp.eye(dim)
    else:
        Sigma = sp.Matrix(dim, dim, lambda i, j: sp.Symbol(f"s{min(i, j) + 1}{max(i, j) + 1}", real=True))
    x = sp.Matrix([1] + [0] * (dim - 1))
    g = sp.Matrix(gs)
    a = sp.Matrix(av)
    h = eps**2 * a + eps * g
    q = sp.expand(2 * (x.T * h)[0] + (h.T * h)[0])
    t = sp.Symbol("t")
    norm = sp.series((1 + t) ** sp.Rational(-1, 2), t, 0, 3).removeO().subs(t, q)
    out = []
    for i in range(dim):
        comp = sp.expand((x[i] + h[i]) * norm)
        comp = comp.coeff(eps, 2)                      # the order-delta part
        poly = sp.Poly(comp, *gs)
        mean = sp.S.Zero
        for powers, cf in poly.terms():
            deg = sum(powers)
            if deg == 0:
                mean += cf
            elif deg == 2:
                idx = [k for k, p in enumerate(powers) for _ in range(p)]
                mean += cf * Sigma[idx[0], idx[1]]
            elif deg % 2 == 1:
                continue
            else:
                raise ValueError("unexpected moment degree")
        out.append(sp.expand(mean))
    drift = sp.Matrix(out) - (a - x * (x.T * a)[0])
    return sp.simplify(drift), Sigma


__all__ = ["ito_drift_derivation", "general_drift", "isotropic_drift_coefficient", "explicit_coordinate_drift",
           "d", "k0"]
