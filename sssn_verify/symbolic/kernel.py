"""The covariance kernel K(rho) = sigma_a^2 E[phi(U) phi(V)] (docs/mathematics.md, section 2), derived by sympy.

(U, V) is centered Gaussian with Var U = Var V = S = sigma_w^2 + sigma_b^2 and
Cov(U, V) = c = sigma_w^2 rho + sigma_b^2, correlation r = c/S.  We write
U = sqrt(S) Z1, V = sqrt(S) (r Z1 + sqrt(1-r^2) Z2) with Z1, Z2 iid N(0, 1), and
H(r, S) = E[phi(U) phi(V)], so K(rho) = sigma_a^2 H(r(rho), S).

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.kernel``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..activations import Activation, get_activation, u
from . import register
from .derivation import Derivation
from .symbols import rho, sigma_a, sigma_b, sigma_w

c = sp.Symbol("c", real=True)          # Cov(U, V)
S = sp.Symbol("S", positive=True)      # Var U = Var V
r = sp.Symbol("r", real=True)          # correlation c/S
z1, z2 = sp.symbols("z1 z2", real=True)
_R = sp.Symbol("R", positive=True)
_t = sp.Symbol("t", real=True)
_alpha = sp.Symbol("alpha", positive=True)   # r = cos(alpha), alpha in (0, pi)
_q = sp.Symbol("q", positive=True)           # q = sqrt(1 - r^2)

SYMBOLS = {"rho": rho, "sigma_w": sigma_w, "sigma_b": sigma_b, "sigma_a": sigma_a}
_C_OF_RHO = sigma_w**2 * rho + sigma_b**2
_S_OF_SIGMAS = sigma_w**2 + sigma_b**2


def _gauss_density(z):
    return sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi)


# ---------------------------------------------------------------- Gaussian integrals by sympy
@lru_cache(maxsize=None)
def _moment(n: int) -> sp.Expr:
    """E Z^n for Z ~ N(0, 1), integrated by sympy."""
    z = sp.Symbol("z", real=True)
    return sp.integrate(z**n * _gauss_density(z), (z, -sp.oo, sp.oo))


@lru_cache(maxsize=None)
def _characteristic() -> tuple[sp.Symbol, sp.Expr]:
    """(w, E e^{i w Z}) integrated by sympy."""
    z, w = sp.Symbol("z", real=True), sp.Symbol("w", real=True)
    return w, sp.simplify(sp.integrate(sp.exp(sp.I * w * z) * _gauss_density(z), (z, -sp.oo, sp.oo),
                                       conds="none"))


@lru_cache(maxsize=None)
def _gaussian_exp_quadratic() -> tuple[sp.Symbol, sp.Symbol, sp.Expr]:
    """(p, b, E exp(-p Z^2 + b Z)) for p > 0, integrated by sympy."""
    z, p, b = sp.Symbol("z", real=True), sp.Symbol("p", positive=True), sp.Symbol("b", real=True)
    return p, b, sp.simplify(sp.integrate(sp.exp(-p * z**2 + b * z) * _gauss_density(z),
                                          (z, -sp.oo, sp.oo), conds="none"))


def _expect_exp_quadratic(expr: sp.Expr, z: sp.Symbol) -> sp.Expr:
    """E over z ~ N(0,1) of h * exp(-p z^2 + b z) where expr = h exp(...), h free of z."""
    p_sym, b_sym, formula = _gaussian_exp_quadratic()
    expr = sp.powsimp(sp.expand(expr), combine="exp")
    h, e = sp.S.One, sp.S.Zero
    for f in sp.Mul.make_args(expr):
        if isinstance(f, sp.exp):
            e += f.args[0]
        else:
            h *= f
    if h.has(z):
        raise ValueError("prefactor depends on the integration variable")
    poly = sp.Poly(sp.expand(e), z)
    if poly.degree() > 2:
        raise ValueError("exponent is not quadratic")
    p = -poly.coeff_monomial(z**2)
    b = poly.coeff_monomial(z)
    c0 = poly.coeff_monomial(1)
    return h * sp.exp(c0) * formula.subs({p_sym: p, b_sym: b}, simultaneous=True)


# ---------------------------------------------------------------- the routes
@lru_cache(maxsize=None)
def _relu_J() -> tuple[sp.Expr, list]:
    """J(r) = E[relu(Z1) relu(r Z1 + sqrt(1-r^2) Z2)] by polar integration."""
    steps = []
    radial = sp.integrate(_R**3 * sp.exp(-_R**2 / 2), (_R, 0, sp.oo))
    steps.append(("Radial integral $\\int_0^\\infty R^3 e^{-R^2/2} dR$", radial))
    angular = sp.integrate(sp.cos(_t) * sp.cos(_t - _alpha), (_t, _alpha - sp.pi / 2, sp.pi / 2))
    steps.append(("Angular integral of $\\cos t \\cos(t-\\alpha)$ over $t \\in (\\alpha-\\pi/2, \\pi/2)$ "
                  "(both factors positive)", sp.simplify(angular)))
    j_alpha = sp.simplify(radial * angular / (2 * sp.pi))
    steps.append(("$J(\\alpha) = (\\text{radial}) \\cdot (\\text{angular}) / (2\\pi)$", j_alpha))
    j_r = sp.simplify(j_alpha.subs(_alpha, sp.acos(r)))
    steps.append(("Substitute $\\alpha = \\arccos r$", j_r))
    return j_r, steps


@lru_cache(maxsize=None)
def _step_P() -> tuple[sp.Expr, list]:
    """P(Z1 > 0, r Z1 + sqrt(1-r^2) Z2 > 0) by the polar integral."""
    radial = sp.integrate(_R * sp.exp(-_R**2 / 2), (_R, 0, sp.oo))
    angular = sp.integrate(sp.S.One, (_t, _alpha - sp.pi / 2, sp.pi / 2))
    p_alpha = sp.simplify(radial * angular / (2 * sp.pi))
    p_r = sp.simplify(p_alpha.subs(_alpha, sp.acos(r)))
    steps = [("Orthant probability in polar coordinates: radial $\\int_0^\\infty R e^{-R^2/2} dR$ "
              "times the sector length, over $2\\pi$", p_alpha),
             ("Substitute $\\alpha = \\arccos r$", p_r)]
    return p_r, steps


def _leaky_slope(expr: sp.Expr):
    """Slope a if expr == relu(u) - a relu(-u) (checked at sample points and by sympy), else None."""
    a_val = sp.simplify(expr.subs(u, -1) * -1)
    if expr.has(sp.Heaviside, sp.DiracDelta) or not a_val.is_number:
        return None
    candidate = sp.Max(u, 0) - a_val * sp.Max(-u, 0)
    upos, uneg = sp.Symbol("up", positive=True), sp.Symbol("un", negative=True)
    ok = all(sp.simplify(expr.subs(u, v) - candidate.subs(u, v)) == 0 for v in (upos, uneg))
    ok = ok and sp.simplify(expr.subs(u, 0)) == 0
    return a_val if ok else None


def _is_step(expr: sp.Expr) -> bool:
    if not expr.has(sp.Heaviside):
        return False
    upos, uneg = sp.Symbol("up", positive=True), sp.Symbol("un", negative=True)
    return sp.simplify(expr.subs(u, upos) - 1) == 0 and sp.simplify(expr.subs(u, uneg)) == 0


def _trig_terms(expr: sp.Expr):
    """expr as a list of (coefficient, frequency) with expr = sum c e^{i w u}, or None."""
    if not expr.has(sp.sin, sp.cos) or expr.has(sp.Heaviside, sp.Abs, sp.Max, sp.Min, sp.Piecewise,
                                                  sp.sign, sp.erf):
        return None
    e = sp.expand(expr.rewrite(sp.exp))
    terms = {}
    for term in sp.Add.make_args(e):
        coeff, rest = term.as_independent(u, as_Add=False)
        if rest == 1:
            w = sp.S.Zero
        elif isinstance(rest, sp.exp):
            w = sp.simplify(rest.args[0] / (sp.I * u))
            if w.has(u) or not w.is_number or not w.is_real:
                return None
        else:
            return None
        terms[w] = terms.get(w, 0) + coeff
    return [(sp.simplify(cf), w) for w, cf in terms.items() if sp.simplify(cf) != 0]


def _erf_scale(expr: sp.Expr):
    a = sp.Wild("a", exclude=[u])
    m = expr.match(sp.erf(a * u))
    if m and m[a].is_number and m[a] != 0:
        return m[a]
    return None


def _closed_form_H(act: Activation):
    """(H(r, S), steps, route) or None when no closed form is derived."""
    expr = act.expr
    UZ = sp.sqrt(S) * z1
    VZ = sp.sqrt(S) * (r * z1 + _q * z2)
    if act.family == "relu" or (act.family == "expr" and _leaky_slope(expr) == 0):
        j_r, steps = _relu_J()
        h = sp.simplify(S * j_r)
        steps = steps + [("Scale: $U = \\sqrt{S} Z_1$, so $H = S J(r)$", h)]
        return h, steps, "relu polar integral"
    slope = _leaky_slope(expr) if act.family in ("leaky_relu", "abs", "expr") else None
    if slope is not None:
        j_r, steps = _relu_J()
        a = sp.Symbol("a", real=True)
        general = sp.expand((1 + a**2) * j_r - 2 * a * j_r.subs(r, -r))
        steps = steps + [("$\\phi(u) = \\mathrm{relu}(u) - a\\,\\mathrm{relu}(-u)$; $(-U,-V)$ has the law "
                          "of $(U,V)$ and $(U,-V)$ has correlation $-r$, so "
                          "$E[\\phi\\phi]/S = (1+a^2) J(r) - 2a J(-r)$", general)]
        h = sp.simplify(S * general.subs(a, slope))
        steps.append((f"Slope $a = {sp.latex(slope)}$", h))
        return h, steps, "leaky relu reflection"
    if act.family in ("heaviside", "step") or _is_step(expr):
        p_r, steps = _step_P()
        return p_r, steps, "orthant probability"
    if expr.is_polynomial(u):
        prod = sp.expand(expr.subs(u, UZ) * expr.subs(u, VZ))
        poly = sp.Poly(prod, z1, z2)
        h = sum(coef * _moment(i) * _moment(j) for (i, j), coef in poly.terms())
        h = sp.simplify(sp.expand(h).subs(_q, sp.sqrt(1 - r**2)))
        steps = [("Expand $\\phi(U)\\phi(V)$ with $U = \\sqrt{S} Z_1$, $V = \\sqrt{S}(r Z_1 + q Z_2)$, "
                  "$q = \\sqrt{1-r^2}$", prod),
                 ("Gaussian moments $E Z^n$ (exact Gaussian integrals), $q^2 = 1 - r^2$", h)]
        return h, steps, "gaussian moments"
    terms = _trig_terms(expr)
    if terms is not None:
        w_sym, cf = _characteristic()
        total = sp.S.Zero
        for cj, wj in terms:
            for ck, wk in terms:
                # w_j U + w_k V = sqrt(S) (w_j + w_k r) Z1 + sqrt(S) w_k q Z2, independent parts
                total += cj * ck * cf.subs(w_sym, sp.sqrt(S) * (wj + wk * r)) * cf.subs(w_sym, sp.sqrt(S) * wk * _q)
        h = sp.simplify(sp.expand(total.subs(_q, sp.sqrt(1 - r**2))))
        h = sp.simplify(h.rewrite(sp.cosh)) if h.has(sp.exp) else h
        steps = [("Write $\\phi$ as a sum of $c_k e^{i w_k u}$", sp.expand(expr.rewrite(sp.exp))),
                 ("Characteristic function $E e^{i w Z}$ (an exact Gaussian integral)", cf),
                 ("$E e^{i(w_j U + w_k V)}$ factorizes over $Z_1, Z_2$; sum over pairs", h)]
        return h, steps, "characteristic function"
    a_erf = _erf_scale(expr)
    if a_erf is not None:
        d = sp.diff(expr, u)
        integrand = d.subs(u, UZ) * d.subs(u, VZ)
        inner = _expect_exp_quadratic(integrand, z2)
        price = _expect_exp_quadratic(inner, z1).subs(_q, sp.sqrt(1 - r**2))
        # the expectation of a positive quantity: take the positive root of its (rational) square
        price_c = sp.sqrt(sp.factor(sp.simplify((price**2).subs(r, c / S))))
        cc = sp.Symbol("cc", real=True)
        mean = sp.simplify(sp.integrate(expr.subs(u, sp.sqrt(S) * z1) * _gauss_density(z1),
                                        (z1, -sp.oo, sp.oo)))
        # integrate in c with a positive symbol A for the constant under the root (A = 1 + 2 a^2 S)
        A = sp.Symbol("A", positive=True)
        price_a = sp.simplify(price_c.subs(S, sp.solve(sp.Eq(A, 1 + 2 * a_erf**2 * S), S)[0]))
        anti = sp.integrate(price_a.subs(c, cc), cc)
        # sympy's antiderivative is a Piecewise valid for |cc| < A/2, which holds as |c| <= S
        anti = anti.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[0].expr)
        check = sp.diff(anti, cc) - price_a.subs(c, cc)   # exact check at rational points
        if any(sp.N(check.subs({A: 3, cc: v}), 30) != 0 and abs(sp.N(check.subs({A: 3, cc: v}), 30)) > 1e-25
               for v in (sp.Rational(-1, 3), 0, sp.Rational(1, 2), sp.Rational(6, 5))):
            return None
        anti = anti.subs(A, 1 + 2 * a_erf**2 * S)
        h_c = sp.simplify(mean**2 + anti.subs(cc, c) - anti.subs(cc, 0))
        h = sp.simplify(h_c.subs(c, r * S))
        steps = [("Price's theorem: $\\partial_c E[\\phi(U)\\phi(V)] = E[\\phi'(U)\\phi'(V)]$; Gaussian "
                  "integrals over $Z_2$ then $Z_1$", price_c),
                 ("Value at $c = 0$: $(E \\phi(U))^2$", mean**2),
                 ("Integrate in $c$ from 0", h_c)]
        return h, steps, "price theorem"
    return None


@lru_cache(maxsize=None)
def _derive_cached(name: str):
    act = get_activation(name)
    found = _closed_form_H(act)
    if found is None:
        return None
    h, steps, route = found
    # k0 = H(1, S); k1 = (1/S) dH/dr at r -> 1^-  (times sigma_a^2 and sigma_w^2 below)
    h0 = sp.simplify(h.subs(r, 1))
    if h0.has(sp.nan) or not h0.is_finite and h0.is_finite is not None:
        h0 = sp.limit(h, r, 1, "-")
    dh = sp.simplify(sp.diff(h, r))
    dh1 = sp.limit(dh, r, 1, "-")
    if act.has_jump:
        dh1 = sp.oo
    subs = {r: _C_OF_RHO / _S_OF_SIGMAS, S: _S_OF_SIGMAS}
    K = sp.simplify(sigma_a**2 * h.subs(subs, simultaneous=True))
    k0 = sp.simplify(sigma_a**2 * h0.subs(S, _S_OF_SIGMAS))
    k1 = sp.oo if dh1 is sp.oo else sp.simplify(sigma_a**2 * sigma_w**2 * dh1.subs(S, _S_OF_SIGMAS) / _S_OF_SIGMAS)
    return K, k0, k1, tuple(steps), route, h, dh


def closed_form_kernel(activation) -> sp.Expr | None:
    """K(rho) in (rho, sigma_w, sigma_b, sigma_a), or None if sympy derives no closed form."""
    got = _derive_cached(get_activation(activation).name)
    return None if got is None else got[0]


def kernel_constants_symbolic(activation) -> tuple[sp.Expr, sp.Expr] | None:
    """(k0, k1) in (sigma_w, sigma_b, sigma_a), or None without a closed form (k1 may be oo)."""
    got = _derive_cached(get_activation(activation).name)
    return None if got is None else (got[1], got[2])


def defining_integral(activation) -> sp.Expr:
    """K(rho) = sigma_a^2 E[phi(U) phi(V)] as an unevaluated double integral over (z1, z2)."""
    act = get_activation(activation)
    s = sp.sqrt(_S_OF_SIGMAS)
    rr = _C_OF_RHO / _S_OF_SIGMAS
    integrand = (act.expr.subs(u, s * z1) * act.expr.subs(u, s * (rr * z1 + sp.sqrt(1 - rr**2) * z2))
                 * _gauss_density(z1) * _gauss_density(z2))
    return sigma_a**2 * sp.Integral(integrand, (z2, -sp.oo, sp.oo), (z1, -sp.oo, sp.oo))


def _one_d_integral(expr: sp.Expr) -> sp.Expr:
    s = sp.sqrt(_S_OF_SIGMAS)
    return sp.Integral(expr.subs(u, s * z1) * _gauss_density(z1), (z1, -sp.oo, sp.oo))


ASSUMPTIONS = [
    "$(U, V)$ centered Gaussian, $\\operatorname{Var} U = \\operatorname{Var} V = S = \\sigma_w^2 + \\sigma_b^2$, "
    "$\\operatorname{Cov}(U, V) = c = \\sigma_w^2 \\rho + \\sigma_b^2$, correlation $r = c/S$",
    "$K(\\rho) = \\sigma_a^2 E[\\phi(U)\\phi(V)]$, $k_0 = K(1)$, $k_1 = K'(1)$ (one-sided, $\\rho \\to 1^-$)",
    "$U = \\sqrt{S} Z_1$, $V = \\sqrt{S}(r Z_1 + \\sqrt{1-r^2} Z_2)$ with $Z_1, Z_2$ iid $N(0,1)$",
    "$\\rho \\in [-1, 1]$, $\\sigma_w, \\sigma_a > 0$, $\\sigma_b \\ge 0$ ($\\sigma_b = 0$ by substitution)",
]


@register("kernel")
def kernel_derivation(activation="relu") -> Derivation:
    """K(rho), k0 = K(1), k1 = K'(1) for `activation`: closed form when sympy derives one."""
    act = get_activation(activation)
    got = _derive_cached(act.name)
    der = Derivation("kernel", f"Covariance kernel for the activation `{act.name}`", list(ASSUMPTIONS), [], None,
                     lhs=r"K(\rho)")
    der.add(f"Activation $\\phi(u) = {sp.latex(act.expr)}$", act.expr)
    if got is None:
        der.add("No closed form is derived for this activation: $K$ is the defining Gaussian integral, "
                "evaluated by deterministic quadrature with a stated error bound")
        k0 = sigma_a**2 * _one_d_integral(act.expr**2)
        k1 = sp.oo if act.has_jump else sigma_a**2 * sigma_w**2 * _one_d_integral(act.derivative_ae**2)
        der.add("$k_0 = \\sigma_a^2 E[\\phi(U)^2]$", k0)
        der.add("$k_1 = \\sigma_a^2 \\sigma_w^2 E[\\phi'(U)^2]$ (Price's theorem)"
                + ("; $\\phi$ has a jump, so $k_1 = +\\infty$" if act.has_jump else ""), k1)
        der.result = defining_integral(act)
        # typeset with S and r of the assumptions (the expanded integrand does not fit a line)
        der.result_display = sigma_a**2 * sp.Integral(
            act.expr.subs(u, sp.sqrt(S) * z1) * act.expr.subs(u, sp.sqrt(S) * (r * z1 + sp.sqrt(1 - r**2) * z2))
            * _gauss_density(z1) * _gauss_density(z2), (z2, -sp.oo, sp.oo), (z1, -sp.oo, sp.oo))
        der.extras.update(k0=k0, k1=k1, method="quadrature", activation=act.name)
        return der
    K, k0, k1, steps, route, h, dh = got
    for text, expr in steps:
        der.add(text, expr)
    der.add("$H(r, S) = E[\\phi(U)\\phi(V)]$", h)
    der.add("$K(\\rho) = \\sigma_a^2 H(r, S)$ with $r = (\\sigma_w^2\\rho + \\sigma_b^2)/S$", K)
    der.add("$k_0 = K(1) = \\sigma_a^2 H(1, S)$", k0)
    der.add("$k_1 = K'(1) = \\sigma_a^2 (\\sigma_w^2/S) \\lim_{r \\to 1^-} \\partial_r H$"
            + (" ($\\phi$ has a jump: $+\\infty$)" if k1 is sp.oo else ""), k1)
    der.add("Special case $\\sigma_b = 0$", sp.simplify(K.subs(sigma_b, 0)))
    der.result = K
    der.extras.update(k0=k0, k1=k1, method="closed form", route=route, activation=act.name)
    return der


__all__ = ["kernel_derivation", "closed_form_kernel", "kernel_constants_symbolic", "defining_integral",
           "rho", "sigma_w", "sigma_b", "sigma_a", "SYMBOLS"]
