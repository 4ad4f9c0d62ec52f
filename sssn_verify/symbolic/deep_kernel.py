"""The kernel of a deep MLP block (docs/mathematics.md, "Deep MLP blocks"), derived by sympy.

The block has the first layer (phi_1, sigma_w, sigma_b) on the unit token and hidden layers
``h^{l+1} = m^{-1/2} W^{l+1} phi_l(h^l) + b^{l+1}``; at infinite width the pre-activation
covariance of two tokens obeys the NNGP recursion ``C_{l+1} = sigma_{w,l+1}^2 H_l(C_l, S_l) +
sigma_{b,l+1}^2`` with ``H_l(C, S) = E[phi_l(U) phi_l(V)]`` (Var S, Cov C) and ``S_l = C_l(1)``,
and ``K(rho) = sigma_a^2 H_L(C_L, S_L)``.  With the H_l as undetermined functions sympy
differentiates the composition (the chain rule) and Price's theorem
``dH/dC = E[phi'(U) phi'(V)]`` (at C = S: ``M1_l = E phi_l'(U)^2``) names the factors:
``k1 = sigma_a^2 prod_l sigma_{w,l}^2 M1_l`` and ``k0 = sigma_a^2 M0_L`` with ``M0_l = E phi_l(U)^2``.
The ReLU -> ReLU block is composed from the one-layer closed form (``symbolic.kernel``).
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from . import register
from .derivation import Derivation
from .symbols import rho, sigma_a, sigma_b, sigma_w

LAYERS = 3           # the chain rule is shown for three layers (the pattern of every depth)


def layer_symbols(n: int = LAYERS):
    """(sigma_w,l, sigma_b,l, M0_l, M1_l, S_l) for l = 1..n (layer 1: the shared sigma_w, sigma_b)."""
    sw = [sigma_w] + [sp.Symbol(f"sigma_w{l}", positive=True) for l in range(2, n + 1)]
    sb = [sigma_b] + [sp.Symbol(f"sigma_b{l}", nonnegative=True) for l in range(2, n + 1)]
    m0 = [sp.Symbol(f"M0_{l}", positive=True) for l in range(1, n + 1)]
    m1 = [sp.Symbol(f"M1_{l}", nonnegative=True) for l in range(1, n + 1)]
    s = [sp.Symbol(f"S_{l}", positive=True) for l in range(1, n + 1)]
    return sw, sb, m0, m1, s


@lru_cache(maxsize=None)
def composition(n: int = LAYERS):
    """(K(rho), [H_1 .. H_n]) with undetermined H_l(C, S): the NNGP recursion composed n times."""
    sw, sb, *_ = layer_symbols(n)
    H = [sp.Function(f"H{l}") for l in range(1, n + 1)]
    C = sw[0] ** 2 * rho + sb[0] ** 2
    for l in range(1, n):
        C = sw[l] ** 2 * H[l - 1](C, C.subs(rho, 1)) + sb[l] ** 2
    return sigma_a ** 2 * H[-1](C, C.subs(rho, 1)), H


def _name_moments(expr: sp.Expr, H, m0, m1) -> sp.Expr:
    """H_l(S, S) -> M0_l and (dH_l/dC)(S, S) -> M1_l (Price's theorem at coincidence)."""
    index = {h.__name__: l for l, h in enumerate(H)}

    def is_price(e):
        return (isinstance(e, sp.Subs) and isinstance(e.expr, sp.Derivative)
                and e.expr.expr.func.__name__ in index and e.expr.expr.args[0] == e.variables[0]
                and e.expr.expr.args[1] == e.point[0])
    expr = expr.replace(is_price, lambda e: m1[index[e.expr.expr.func.__name__]])
    return expr.replace(lambda e: isinstance(e, sp.core.function.AppliedUndef) and e.func.__name__ in index
                        and len(e.args) == 2 and e.args[0] == e.args[1], lambda e: m0[index[e.func.__name__]])


@lru_cache(maxsize=None)
def chain_rule(n: int = LAYERS) -> tuple[sp.Expr, sp.Expr, list]:
    """(k0, k1, [S_l recursion]) of the n-layer block in the moments M0_l, M1_l."""
    sw, sb, m0, m1, _ = layer_symbols(n)
    K, H = composition(n)
    k0 = _name_moments(K.subs(rho, 1), H, m0, m1)
    k1 = _name_moments(sp.diff(K, rho).subs(rho, 1).doit(), H, m0, m1)
    if k0.has(*H) or k1.has(*H):
        raise ValueError("the chain rule left an undetermined H")
    variances = [sw[0] ** 2 + sb[0] ** 2] + [sw[l] ** 2 * m0[l - 1] + sb[l] ** 2 for l in range(1, n)]
    return sp.factor(k0), sp.factor(k1), variances


@lru_cache(maxsize=None)
def relu_relu():
    """(K, k0, k1) of relu(sigma_w, sigma_b) -> relu(sigma_w2, sigma_b2) composed from the one-layer
    closed form H(r, S) (symbolic.kernel), k1 by the chain rule with M1 = lim_{r->1} H_r / S."""
    from .kernel import S, _derive_cached, r
    _, _, _, _, _, h, dh = _derive_cached("relu")
    sw, sb, *_ = layer_symbols(2)
    h1 = sp.simplify(h.subs(r, 1))                        # M0(S) = H(1, S)
    m1 = sp.simplify(sp.limit(dh, r, 1, "-") / S)         # M1(S) = E phi'(U)^2 = H_r(1^-, S)/S (Price)
    S1 = sw[0] ** 2 + sb[0] ** 2
    C2 = sw[1] ** 2 * h.subs({r: (sw[0] ** 2 * rho + sb[0] ** 2) / S1, S: S1}, simultaneous=True) + sb[1] ** 2
    S2 = sw[1] ** 2 * h1.subs(S, S1) + sb[1] ** 2
    K = sigma_a ** 2 * h.subs({r: C2 / S2, S: S2}, simultaneous=True)
    k0 = sp.simplify(sigma_a ** 2 * h1.subs(S, S2))
    k1 = sp.simplify(sigma_a ** 2 * sw[0] ** 2 * m1.subs(S, S1) * sw[1] ** 2 * m1.subs(S, S2))
    return K, k0, k1, h1, m1


ASSUMPTIONS = [
    "Layer $1$: $h^1 = W^1 x + b^1$ on the unit token, rows of $W^1 \\sim N(0, \\sigma_w^2 I_d)$, "
    "$b^1 \\sim N(0, \\sigma_b^2)$; layer $l+1$: $h^{l+1} = m^{-1/2} W^{l+1} \\phi_l(h^l) + b^{l+1}$, "
    "entries of $W^{l+1} \\sim N(0, \\sigma_{w,l+1}^2)$, $b^{l+1} \\sim N(0, \\sigma_{b,l+1}^2)$; "
    "readout $F = m^{-1/2} A \\phi_L(h^L)$, entries of $A \\sim N(0, \\sigma_a^2)$",
    "Width $m \\to \\infty$: the pre-activations of two tokens are centered Gaussian, variance $S_l$, "
    "covariance $C_l(\\rho)$, with $C_1 = \\sigma_w^2 \\rho + \\sigma_b^2$ and "
    "$C_{l+1} = \\sigma_{w,l+1}^2 H_l(C_l, S_l) + \\sigma_{b,l+1}^2$, $S_l = C_l(1)$, "
    "$H_l(C, S) = E[\\phi_l(U)\\phi_l(V)]$; $K(\\rho) = \\sigma_a^2 H_L(C_L, S_L)$",
    "Price's theorem: $\\partial_C H_l = E[\\phi_l'(U)\\phi_l'(V)]$; at $C = S_l$, with $U_l \\sim N(0, S_l)$: "
    "$\\partial_C H_l = E[\\phi_l'(U_l)^2]$ and $H_l(S_l, S_l) = E[\\phi_l(U_l)^2]$",
]


@register("deep_kernel")
def deep_kernel_derivation() -> Derivation:
    """k0 = K(1), k1 = K'(1) of a deep MLP block by the chain rule; the ReLU -> ReLU kernel in closed form."""
    der = Derivation("deep_kernel", "Deep MLP blocks: the composed kernel and its constants", list(ASSUMPTIONS),
                     [], None, lhs=("k_0", "k_1"))
    sw, sb, m0, m1, S_ = layer_symbols()
    C_ = [sp.Symbol(f"C_{l}", real=True) for l in range(1, LAYERS + 1)]
    _, H = composition()                     # sympy differentiates the whole composition below
    der.add("The recursion, layer by layer ($H_l$ undetermined; composed in full for the chain rule)",
            sp.Tuple(*([sp.Eq(C_[0], sw[0] ** 2 * rho + sb[0] ** 2)]
                       + [sp.Eq(C_[l], sw[l] ** 2 * H[l - 1](C_[l - 1], S_[l - 1]) + sb[l] ** 2) for l in range(1, LAYERS)]
                       + [sp.Eq(sp.Symbol("K_rho", real=True), sigma_a ** 2 * H[-1](C_[-1], S_[-1]))])))
    k0, k1, variances = chain_rule()
    der.add("Layer variances $S_l = C_l(1)$ ($S_{l+1} = \\sigma_{w,l+1}^2 E[\\phi_l(U_l)^2] + \\sigma_{b,l+1}^2$)",
            sp.Tuple(*[sp.Eq(S_[l], v) for l, v in enumerate(variances)]))
    der.add("$k_0 = K(1)$: every $C_l(1) = S_l$", sp.Eq(sp.Symbol("k0"), k0))
    der.add("$k_1 = K'(1)$: the chain rule, each factor $\\partial_C H_l$ at $C = S_l$ named by Price's theorem",
            sp.Eq(sp.Symbol("k1"), k1))
    from .kernel import S, _derive_cached, r
    h = _derive_cached("relu")[5]
    _, k0rr, k1rr, m0rr, m1rr = relu_relu()
    der.add("ReLU, one layer: $H(r, S)$ with $r = C/S$ (from the kernel derivation)", h)
    der.add("ReLU, $U \\sim N(0, S)$: $E[\\phi(U)^2] = H(1, S)$ and $E[\\phi'(U)^2] = \\lim_{r \\to 1^-} \\partial_r H / S$ "
            "are, in this order", sp.Tuple(m0rr, m1rr))
    der.add("ReLU $\\to$ ReLU: $C_2 = \\sigma_{w,2}^2 H(C_1/S_1, S_1) + \\sigma_{b,2}^2$ and "
            "$K(\\rho) = \\sigma_a^2 H(C_2/S_2, S_2)$ (the arc-cosine kernel composed; "
            "$S_2 = \\sigma_{w,2}^2 S_1/2 + \\sigma_{b,2}^2$)",
            sp.Tuple(sp.Eq(C_[1], sw[1] ** 2 * h.subs({r: C_[0] / S_[0], S: S_[0]}, simultaneous=True) + sb[1] ** 2),
                     sp.Eq(sp.Symbol("K_rho", real=True), sigma_a ** 2 * h.subs({r: C_[1] / S_[1], S: S_[1]},
                                                                                simultaneous=True))))
    der.add("ReLU $\\to$ ReLU: $k_0$ and $k_1$ (the chain rule with the ReLU moments)",
            sp.Tuple(sp.Eq(sp.Symbol("k0"), k0rr), sp.Eq(sp.Symbol("k1"), k1rr)))
    der.result = sp.Tuple(k0, k1)
    der.extras.update(k0=k0, k1=k1, layers=LAYERS)
    return der


__all__ = ["deep_kernel_derivation", "composition", "chain_rule", "relu_relu", "layer_symbols"]
