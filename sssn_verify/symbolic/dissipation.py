"""Dissipation rate lambda_bar(beta), the coercivity condition and the attention bound C_att.

Noise part of the two-point generator (from ``two_point``): ``L2 f = b f' + a f''/2`` with
``f(rho) = e^beta - e^{beta rho}`` (``1 - rho`` for beta = 0) and
``lambda_bar(beta) = sup_{rho in [-1,1)} L2 f / f`` (docs/mathematics.md, section 5).

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.dissipation``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from .lyapunov import kernel_constants
from .symbols import (H, M0, M1, Krho, alpha, beta, c_rem, d, k0, k1, norm_KtQ, norm_V, q, rho, sigma_a,
                      sigma_b, sigma_w, sum_V, sum_VKQ, t_ratio, u)
from .two_point import Gram, attention_rho_identity, noise_coefficients


def energy_profile(positive_beta: bool = True):
    """f(rho) for beta > 0 (symbol beta) or beta = 0."""
    b_ = sp.Symbol("beta", positive=True)
    return (sp.exp(b_) - sp.exp(b_ * rho), b_) if positive_beta else (1 - rho, sp.S.Zero)


@lru_cache(maxsize=None)
def generator_factor(positive_beta: bool = True) -> sp.Expr:
    """N(rho) with L2 f = f' N (f'' = beta f'): N = b + beta a/2."""
    f, b_ = energy_profile(positive_beta)
    b, a = noise_coefficients()
    fp = sp.diff(f, rho)
    L2 = b * fp + a * sp.diff(f, rho, 2) / 2
    N = sp.simplify(L2 / fp)
    return N.subs(b_, beta)


@lru_cache(maxsize=None)
def stable_numerator() -> sp.Expr:
    """N/u as a polynomial in (u, q), where rho = 1 - u, K = k0 - u q (valid for beta >= 0)."""
    N = generator_factor(True)
    out = sp.expand(N.subs(Krho, k0 - u * q).subs(rho, 1 - u) / u)
    if any(p < 0 for p in sp.Poly(out, u).monoms() for p in p):
        raise DerivationError("N/u is not polynomial in u")
    if sp.simplify(out.subs(beta, 0) - sp.expand(generator_factor(False).subs(Krho, k0 - u * q)
                                               .subs(rho, 1 - u) / u)) != 0:
        raise DerivationError("beta = 0 factor is not the beta -> 0 limit")
    return sp.collect(out, u)


@lru_cache(maxsize=None)
def edge_rate() -> sp.Expr:
    """lambda_edge = lim_{rho -> 1} L2 f / f, the same for beta > 0 and beta = 0."""
    remainder = k0 - k1 * u + c_rem * u**(1 + alpha)
    results = []
    for positive in (True, False):
        f, b_ = energy_profile(positive)
        N = generator_factor(positive).subs(beta, b_)
        lim_N = sp.limit(sp.expand(N.subs(Krho, remainder).subs(rho, 1 - u) / u), u, 0, "+")
        lim_f = sp.limit((sp.diff(f, rho) * u / f).subs(rho, 1 - u), u, 0, "+")
        results.append(sp.expand(lim_N * lim_f))
    if sp.simplify(results[0] - results[1]) != 0 or any(r.has(c_rem, alpha, sp.oo) for r in results):
        raise DerivationError(f"edge rate: beta > 0 and beta = 0 disagree: {results}")
    return sp.collect(results[0], [k0, k1], sp.factor)


@lru_cache(maxsize=None)
def relu_edge_rate() -> sp.Expr:
    c0, c1, _ = kernel_constants("relu")
    return sp.factor(edge_rate().subs({k0: c0, k1: c1}))


@lru_cache(maxsize=None)
def relu_region():
    """The ReLU edge condition lambda_edge < 0 solved for t = sigma_b/sigma_w.

    Returns (F, A, B, threshold) with sign(lambda_edge) = sign(F), F = A + B t^2, and the
    region ``B < 0 and t^2 > -A/B``, i.e. ``d > 3 and t > threshold``.
    """
    lam = relu_edge_rate().subs(sigma_b, t_ratio * sigma_w)
    positive, rest = sp.S.One, sp.S.One
    for fac, mult in sp.factor_list(lam)[1]:
        if fac.is_positive:
            positive *= fac**mult
        else:
            rest *= fac**mult
    coeff = sp.factor_list(lam)[0]
    if coeff < 0:
        rest = -rest
    F = sp.expand(rest)
    poly = sp.Poly(F, t_ratio)
    if poly.degree() != 2 or poly.coeff_monomial(t_ratio) != 0:
        raise DerivationError(f"ReLU edge condition is not of the form A + B t^2: {F}")
    A, B = poly.coeff_monomial(1), poly.coeff_monomial(t_ratio**2)
    if not A.is_positive:
        raise DerivationError(f"ReLU edge condition: constant term {A} not positive")
    # B < 0 <=> d > 3 (solved over the integers d >= 2)
    dd = sp.Symbol("dd", real=True)
    d_set = sp.solve_univariate_inequality(B.subs(d, dd) < 0, dd, relational=False)
    threshold = sp.sqrt(sp.simplify(-A / B))
    return F, A, B, threshold, d_set


# ---------------------------------------------------------------- where the supremum sits
#: K(-1), the kernel at antipodal tokens (a symbol of its own: K(rho) and K(-1) appear together below)
K_minus = sp.Symbol("K(-1)", real=True)
#: the largest n for which the monomial identities are also checked one by one (K = rho^n)
MONOMIAL_CHECK_MAX = 16
# the elementary inequalities used (stated, like the attention lemmas)
ENDPOINT_LEMMAS = (
    "for $|\\rho| \\le 1$ and integers $k \\ge 0$: $\\rho^{2k} \\le 1$ and $|\\rho^{k}| \\le 1$",
    "a convex function on an interval lies below its chords",
    "$e^{x} - 1 \\ge x$ for $x \\ge 0$, so $0 < \\psi(x) = x/(e^{x} - 1) \\le 1$",
)


def _psi(x):
    """psi(x) = x/(e^x - 1) (psi(0) = 1 as a limit): the factor between f' / f and 1/(1 - rho)."""
    return x / (sp.exp(x) - 1)


def _chi(x):
    """chi(x) = 1/psi(x) = (e^x - 1)/x."""
    return (sp.exp(x) - 1) / x


def _exp_free(e: sp.Expr, b_: sp.Symbol) -> sp.Expr:
    """`e` with e^beta and e^(beta rho) named (positive symbols), as one rational function: an
    identity in exponentials of beta and beta rho is then decided by cancelling polynomials."""
    eb, y = sp.Symbol("E_b", positive=True), sp.Symbol("Y", positive=True)

    def name(arg):
        p = sp.Poly(sp.expand(arg / b_), rho)              # arg = beta (c0 + c1 rho), c0, c1 integers
        if p.degree() > 1 or any(not c.is_integer for c in p.all_coeffs()):
            raise DerivationError(f"exponent not of the form beta (c0 + c1 rho): {arg}")
        return eb**p.coeff_monomial(1) * y**p.coeff_monomial(rho)

    e = e.replace(lambda z: isinstance(z, sp.exp), lambda z: name(z.args[0]))
    if e.has(sp.exp):
        raise DerivationError(f"an exponential is left: {e}")
    return sp.cancel(sp.together(e))


@lru_cache(maxsize=None)
def endpoint_certificate() -> dict:
    """The identity behind 'the supremum of L2 f / f sits at rho -> 1 or at rho = -1'.

    With R = L2 f / f, x = beta (1 - rho), psi(x) = x/(e^x - 1) and the weight
    w = (1 + rho) psi(x) / 2 in [0, 1]:

        w R(1^-) + (1 - w) R(-1) - R(rho) = psi C0 + beta psi T + (d - 1) E B,

    C0 = the beta = 0 ratio's chord defect (>= 0 for positive-definite kernels, ``schoenberg_chord``),
    T = (1 + rho)(k0 - rho K(rho)) >= 0, E = (k0 + K(-1))/2 >= 0 and B >= 0 (convexity of 1/psi).
    Returns the pieces and the residuals (all 0).
    """
    b_ = sp.Symbol("beta", positive=True)
    f, _ = energy_profile(True)
    f = f.subs(sp.Symbol("beta", positive=True), b_)
    b, a = noise_coefficients()
    R = sp.diff(f, rho) * generator_factor(True).subs(beta, b_) / f              # L2 f / f
    R0 = -b / (1 - rho)                                                          # the beta = 0 ratio
    T = (1 + rho) * (k0 - rho * Krho)
    x = b_ * (1 - rho)
    psi = _psi(x)
    res_factor = _exp_free(R - psi * (R0 - b_ * T), b_)
    split = (d - 1) * (k0 * rho - Krho) / (1 - rho) + (1 + rho) * Krho
    res_split = sp.cancel(R0 - split)
    edge = edge_rate()
    R0_minus = sp.factor(R0.subs(rho, -1).subs(Krho, K_minus))
    anti = antipodal_rate().subs({Krho: K_minus, beta: b_})
    res_anti = _exp_free(anti - _psi(2 * b_) * R0_minus, b_)
    w = (1 + rho) * psi / 2
    C0 = (1 + rho) / 2 * edge + (1 - rho) / 2 * R0_minus - R0
    E = (k0 + K_minus) / 2
    B = psi * (1 - rho) / 2 - (1 - w) * _psi(2 * b_)
    gap = w * edge + (1 - w) * anti - R
    res_gap = _exp_free(gap - (psi * C0 + b_ * psi * T + (d - 1) * E * B), b_)
    # B >= 0: with s = (1 - rho)/2, B = psi(2 beta s) psi(2 beta) [s chi(2 beta) + (1 - s) chi(0) - chi(2 beta s)]
    s = sp.Symbol("s", positive=True)
    xx = sp.Symbol("x", positive=True)
    chi0 = sp.limit(_chi(xx), xx, 0)
    res_B = _exp_free((B.subs(rho, 1 - 2 * s)
                       - _psi(2 * b_ * s) * _psi(2 * b_) * (s * _chi(2 * b_) + (1 - s) * chi0 - _chi(2 * b_ * s)))
                      .subs(s, (1 - rho) / 2), b_)
    # chi convex on x > 0: chi'' = h/x^3 with h(0) = 0 and h' = x^2 e^x >= 0
    h = sp.exp(xx) * (xx**2 - 2 * xx + 2) - 2
    res_chi = sp.simplify(sp.diff(_chi(xx), xx, 2) * xx**3 - h)
    dh = sp.simplify(sp.diff(h, xx))
    # beta = 0: the edge beats rho = -1 by 2 k0 + (d-1)(k1 - (k0 - K(-1))/2) >= 2 k0 (k1 = sum n a_n >= odd mass)
    margin0 = 2 * k0 + (d - 1) * (k1 - (k0 - K_minus) / 2)
    res_margin0 = sp.expand(edge - R0_minus - margin0)
    residuals = (res_factor, res_split, res_anti, res_gap, res_B, res_chi, h.subs(xx, 0), sp.simplify(dh - xx**2 * sp.exp(xx)),
                 chi0 - 1)
    if any(r != 0 for r in residuals):
        raise DerivationError(f"endpoint certificate: nonzero residuals {residuals}")
    return dict(R=R, R0=R0, T=T, G=sp.expand(sp.cancel(R0) - b_ * T), split=split, R0_minus=R0_minus, anti=anti,
                weight=w, C0=C0, E=E, B=B, gap_terms=(psi * C0, b_ * psi * T, (d - 1) * E * B),
                chi_second=sp.factor(sp.diff(_chi(xx), xx, 2)), h=h, dh=dh, margin0=margin0,
                residuals=sp.Tuple(*residuals), beta=b_)


@lru_cache(maxsize=None)
def schoenberg_chord() -> dict:
    """The beta = 0 ratio R0 is below its chord for every monomial kernel K = rho^n (k0 = 1, k1 = n,
    K(-1) = (-1)^n), hence (a positive combination) for every positive-definite kernel.

    R0 = (d-1) s_n + (1 + rho) rho^n with s_n = (rho - rho^n)/(1 - rho) = rho + ... + rho^(n-1); the
    chord defect C[h] = (1+rho)/2 h(1) + (1-rho)/2 h(-1) - h(rho) is linear, and s_n splits into
    blocks with C >= 0: rho (C = 0), rho^(2j)(1 + rho) (C = (1+rho)(1-rho^(2j))) and, for odd n,
    rho^(n-1) (C = 1 - rho^(n-1)).  Returns the blocks, their defects, the geometric sums and the
    residuals of the splitting (symbolic n = 2m, 2m+1) and of the one-by-one check n <= MONOMIAL_CHECK_MAX.
    """
    n = sp.Symbol("n", integer=True, nonnegative=True)
    m = sp.Symbol("m", integer=True, positive=True)
    j = sp.Symbol("j", integer=True, positive=True)

    def chord(hh, power=None):
        """C[hh], written as (a factor) (1 - power) when `power` (rho^k) divides it out that way."""
        out = sp.simplify((1 + rho) / 2 * hh.subs(rho, 1) + (1 - rho) / 2 * hh.subs(rho, -1) - hh)
        if power is None:
            return sp.factor(out)
        t = sp.Symbol("t")
        rest = sp.cancel(sp.expand(out).subs(power, t) / (1 - t))
        if sp.denom(rest) != 1 or rest.has(t):
            raise DerivationError(f"chord defect {out} is not a multiple of 1 - {power}")
        rest = sp.factor(rest)
        return 1 - power if rest == 1 else sp.Mul(rest, 1 - power, evaluate=False)

    sfun = lambda nn: (rho - rho**nn) / (1 - rho)                      # noqa: E731
    R0n = (d - 1) * sfun(n) + (1 + rho) * rho**n
    res_mono = sp.simplify(endpoint_certificate()["R0"].subs({Krho: rho**n, k0: 1}) - R0n)
    pair = rho**(2 * j) * (1 + rho)
    geo = sp.piecewise_fold(sp.summation(pair, (j, 1, m - 1)))
    geo = sp.cancel(geo.args[-1][0] if isinstance(geo, sp.Piecewise) else geo)   # rho^2 != 1: rho in (-1, 1)
    res_even = sp.simplify(sfun(2 * m) - (rho + geo))
    res_odd = sp.simplify(sfun(2 * m + 1) - (rho + geo + rho**(2 * m)))
    blocks = {"rho": chord(rho), "pair": chord(pair, rho**(2 * j)), "last": chord(rho**(2 * m), rho**(2 * m)),
              "top": chord((1 + rho) * rho**n, rho**n), "constant": chord(sp.S(-1) + 0 * rho)}
    # C[R0_n] from the blocks, checked directly for n = 0..MONOMIAL_CHECK_MAX

    def defect(nn: int) -> sp.Expr:
        mm, odd = divmod(nn, 2)
        if nn == 0:
            cs = blocks["constant"]
        elif nn == 1:
            cs = sp.S.Zero
        else:
            cs = blocks["rho"] + sum((blocks["pair"].subs(j, k) for k in range(1, mm if not odd else mm + 1)
                                      if 2 * k + 1 <= nn - 1), sp.S.Zero)
            if odd:
                cs += blocks["last"].subs(m, mm)
        return (d - 1) * cs + blocks["top"].subs(n, nn)

    C0 = endpoint_certificate()["C0"]
    direct = [sp.expand(sp.cancel(C0.subs({Krho: rho**k, k0: 1, k1: k, K_minus: (-1)**k})) - defect(k))
              for k in range(MONOMIAL_CHECK_MAX + 1)]
    residuals = (res_mono, res_even, res_odd, *direct)
    if any(r != 0 for r in residuals):
        raise DerivationError(f"Schoenberg chord: nonzero residuals {residuals}")
    return dict(R0n=R0n, s=sfun(n), pair=pair, geo=geo, blocks=blocks, defects=[defect(k) for k in range(6)],
                residuals=sp.Tuple(*residuals), n=n, m=m, j=j)


@lru_cache(maxsize=None)
def lambda_bar_closed() -> sp.Expr:
    """lambda_bar(beta) = max(lambda_edge, lambda_anti) for positive-definite kernels (beta = 0: lambda_edge)."""
    cert = endpoint_certificate()
    anti = cert["anti"].subs(cert["beta"], beta)
    le = sp.Symbol("lambda_edge")
    return sp.Piecewise((le, sp.Eq(beta, 0)), (sp.Max(le, anti), True), evaluate=False)


@register("dissipation")
def dissipation() -> Derivation:
    """lambda_bar edge value (d-1) k1 - (d-3) k0, the stable ratio, and the ReLU formula."""
    dv = Derivation(
        "dissipation", "Dissipation rate $\\bar\\lambda(\\beta)$ of the interaction energy",
        ["$L_2 f = b f' + a f''/2$ with $b$, $a$ the noise coefficients of the two-point motion",
         "$f(\\rho) = e^{\\beta} - e^{\\beta\\rho}$ for $\\beta > 0$, $f(\\rho) = 1 - \\rho$ for $\\beta = 0$",
         "$\\bar\\lambda(\\beta) = \\sup_{\\rho \\in [-1, 1)} L_2 f / f$",
         "near $\\rho = 1$: $K(1-u) = k_0 - k_1 u + c\\, u^{1+\\alpha}$ with $\\alpha > 0$ (this covers non-analytic "
         "kernels)",
         "for where the supremum sits: $K$ positive definite on every sphere, i.e. (Schoenberg) $K(\\rho) = "
         "\\sum_{n \\ge 0} a_n \\rho^{n}$ with $a_n \\ge 0$, so $k_0 = \\sum_n a_n$ and "
         "$k_1 = \\sum_n n a_n < \\infty$. Every kernel of an MLP block with Gaussian weights is of this form: by "
         "Mehler's formula $E[\\phi(U)\\phi(V)]$ is a series in the correlation $r = (\\sigma_w^2 \\rho + "
         "\\sigma_b^2)/S$ with coefficients $\\ge 0$, $r^{k}$ is a polynomial in $\\rho$ with coefficients "
         "$\\ge 0$, and deep blocks compose such series",
         "standard inequalities used: " + "; ".join(ENDPOINT_LEMMAS)],
        [], None)
    Nb = generator_factor(True)
    dv.add("$f'' = \\beta f'$, hence $L_2 f = f' (b + \\beta a/2)$; the factor $N = b + \\beta a/2$", Nb)
    dv.add("$\\beta = 0$: $L_2 f = -b$", generator_factor(False))
    dv.add("Stable form: $\\rho = 1 - u$, $K = k_0 - u q$ (so $q \\to k_1$); $N/u$ is a polynomial in $u$ and $q$, "
           "and $L_2 f / f = -e^{-\\beta u} (N/u) / h(u)$ with $h(u) = (1 - e^{-\\beta u})/(\\beta u)$",
           stable_numerator())
    lam = edge_rate()
    le = sp.Symbol("lambda_edge")
    dv.add("Edge value $\\lim_{\\rho \\to 1} L_2 f / f$ (the same for $\\beta > 0$ and $\\beta = 0$)", sp.Eq(le, lam))
    relu = relu_edge_rate()
    dv.add("ReLU ($k_0$, $k_1$ from the kernel derivation)", sp.Eq(le, relu))
    closed = _endpoint_steps(dv)
    dv.result = sp.Tuple(sp.Eq(le, lam), sp.Eq(sp.Symbol("lambda_bar"), closed))
    dv.lhs = (r"\bar\lambda(\beta) \ge \lambda_{\mathrm{edge}} =",     # a supremum is at least its edge limit
              r"\text{positive-definite } K:\quad \bar\lambda(\beta) =")
    dv.extras.update(edge_rate=sp.sstr(lam), edge_rate_relu=sp.sstr(relu),
                     stable_numerator=sp.sstr(stable_numerator()), lambda_bar_closed=sp.sstr(closed),
                     antipodal_rate=sp.sstr(endpoint_certificate()["anti"].subs(endpoint_certificate()["beta"], beta)),
                     sup_location="rho -> 1 or rho = -1, never inside (-1, 1), for positive-definite kernels")
    return dv


def _endpoint_steps(dv: Derivation) -> sp.Expr:
    """The steps 'the supremum sits at rho -> 1 or at rho = -1' (positive-definite kernels); returns
    lambda_bar in closed form."""
    cert, sch = endpoint_certificate(), schoenberg_chord()
    b_ = cert["beta"]
    dv.add("Where the supremum sits (positive-definite $K$, Assumption). With $x = \\beta (1 - \\rho)$, "
           "$\\psi(x) = x/(e^{x} - 1)$, the $\\beta = 0$ ratio $R_0 = -b/(1 - \\rho)$ and "
           "$T = (1 + \\rho)(k_0 - \\rho K(\\rho))$: $L_2 f / f = \\psi(x)\\,(R_0 - \\beta T)$; the residual",
           cert["residuals"][0])
    dv.add("$R_0$ splits as", cert["split"])
    dv.add("For a monomial kernel $K = \\rho^{n}$ ($k_0 = 1$, $k_1 = n$, $K(-1) = (-1)^{n}$) this is "
           "$R_0 = (d - 1)\\, s_n + (1 + \\rho) \\rho^{n}$ with $s_n$ below, "
           "$s_n = \\rho + \\rho^{2} + \\dots + \\rho^{n-1}$", sch["s"])
    dv.add("For $n = 2m$: $s_n = \\rho + \\sum_{j=1}^{m-1} \\rho^{2j} (1 + \\rho)$, whose sum is (for "
           "$\\rho \\in (-1, 1)$) the expression below; for $n = 2m + 1$ add $\\rho^{2m}$", sch["geo"])
    dv.add("Both splittings of $s_n$ ($n = 2m$, $n = 2m + 1$): the residuals", sch["residuals"][1:3])
    bl = sch["blocks"]
    dv.add("The chord defect $C[h](\\rho) = \\frac{1 + \\rho}{2} h(1) + \\frac{1 - \\rho}{2} h(-1) - h(\\rho)$ "
           "is linear in $h$; of the blocks $\\rho$, $\\rho^{2j}(1 + \\rho)$, $\\rho^{2m}$ and "
           "$(1 + \\rho)\\rho^{n}$ it is, in this order, as below: each is $\\ge 0$ on $[-1, 1]$",
           sp.Tuple(bl["rho"], bl["pair"], bl["last"], bl["top"]))
    dv.add(f"Hence $C[R_0] = \\sum_n a_n C[R_{{0,n}}] \\ge 0$ for every positive-definite $K$ ($R_0$ lies below its "
           f"chord; its values at the ends are $R_0(1^-) = \\lambda_{{\\mathrm{{edge}}}}$ and $R_0(-1)$). "
           f"The blocks' sum against $C[R_{{0,n}}]$ computed directly, $n = 0, \\dots, {MONOMIAL_CHECK_MAX}$: the "
           f"residuals", sch["residuals"][3:])
    dv.add("$R_0(-1)$, in $K(-1)$", cert["R0_minus"])
    dv.add("$\\beta > 0$: with the weight $w = (1 + \\rho)\\psi(x)/2 \\in [0, 1]$, "
           "$E = (k_0 + K(-1))/2$ (the even coefficients' sum, $\\ge 0$) and "
           "$B = \\psi(x)(1 - \\rho)/2 - (1 - w)\\psi(2\\beta)$, the identity "
           "$w\\, \\lambda_{\\mathrm{edge}} + (1 - w)\\, L_2 f / f|_{\\rho = -1} - L_2 f / f = "
           "\\psi(x)\\, C[R_0] + \\beta \\psi(x)\\, T + (d - 1) E B$: the residual", cert["residuals"][3])
    dv.add("$B \\ge 0$: with $s = (1 - \\rho)/2$ and $\\chi = 1/\\psi$, "
           "$B = \\psi(2\\beta s)\\psi(2\\beta)\\,[s \\chi(2\\beta) + (1 - s)\\chi(0) - \\chi(2\\beta s)]$ "
           "with $\\chi(0) = 1$: the residuals", sp.Tuple(cert["residuals"][4], cert["residuals"][8]))
    dv.add("$\\chi(x) = (e^{x} - 1)/x$ is convex: its second derivative, below, is $h/x^{3}$ with "
           "$h = e^{x}(x^{2} - 2x + 2) - 2$, $h(0) = 0$ and $h' = x^{2} e^{x} \\ge 0$, so the bracket of $B$ (a chord "
           "of $\\chi$ minus $\\chi$) is $\\ge 0$", cert["chi_second"])
    dv.add("So every term is $\\ge 0$ ($T \\ge 0$ as $|K(\\rho)| \\le k_0$), and $\\beta\\psi(x) T > 0$ on "
           "$(-1, 1)$ when $\\beta > 0$: $L_2 f / f < \\max(\\lambda_{\\mathrm{edge}}, L_2 f / f|_{\\rho = -1})$ "
           "inside. At $\\beta = 0$ ($w = (1 + \\rho)/2$, $B = 0$) the edge beats $\\rho = -1$ by the margin below, "
           "$\\ge 2 k_0 > 0$ since $k_1 = \\sum_n n a_n \\ge \\sum_{n \\text{ odd}} a_n = (k_0 - K(-1))/2$",
           cert["margin0"])
    dv.add("The value at $\\rho = -1$ ($\\beta > 0$), in $K(-1)$: the supremum over $[-1, 1)$ is the larger of it and "
           "$\\lambda_{\\mathrm{edge}}$, never attained inside $(-1, 1)$", cert["anti"].subs(b_, beta))
    return lambda_bar_closed()


@lru_cache(maxsize=None)
def antipodal_rate() -> sp.Expr:
    """L2 f / f at rho = -1 for beta > 0: (f'/f)(-1) N(-1), with K_rho standing for K(-1)."""
    f, b_ = energy_profile(True)
    N = generator_factor(True).subs(beta, b_)
    val = sp.simplify((sp.diff(f, rho) / f * N).subs(rho, -1))
    if sp.limit(val, b_, sp.oo) != 0:
        raise DerivationError(f"antipodal rate does not vanish as beta -> oo: {val}")
    return sp.factor(val.subs(b_, beta))


@register("coercivity")
def coercivity() -> Derivation:
    """The coercivity condition lambda_bar < 0 as Gaussian moments; the exact ReLU region."""
    dv = Derivation(
        "coercivity", "Coercivity condition $\\bar\\lambda < 0$",
        ["Price's theorem: $k_0 = \\sigma_a^2 E[\\phi(U)^2] =: \\sigma_a^2 M_0$ and "
         "$k_1 = \\sigma_a^2 \\sigma_w^2 E[\\phi'(U)^2] =: \\sigma_a^2 \\sigma_w^2 M_1$, with "
         "$U \\sim N(0, \\sigma_w^2 + \\sigma_b^2)$",
         "$\\bar\\lambda < 0$ needs a negative edge value and $L_2 f < 0$ in the interior"],
        [], None)
    lam = edge_rate()
    moments = sp.factor(lam.subs({k0: sigma_a**2 * M0, k1: sigma_a**2 * sigma_w**2 * M1}))
    dv.add("Edge value in the Gaussian moments", moments)
    edge_cond = sp.simplify(moments / sigma_a**2) < 0
    dv.add("Edge condition (divide by $\\sigma_a^2 > 0$)", edge_cond)
    Nb = generator_factor(True)
    dv.add("Interior condition: $L_2 f / f < 0 \\iff N(\\rho) = b + \\beta a/2 > 0$ for $\\rho \\in [-1, 1)$ "
           "(as $f > 0$ and $f' < 0$), with a uniform margin for $\\bar\\lambda < 0$", Nb > 0)
    at_minus_one = sp.factor(Nb.subs(rho, -1))
    dv.add("At $\\rho = -1$ the interior condition reads as follows (so an odd $\\phi$ without bias, for which "
           "$K(-1) = -k_0$, gives $\\bar\\lambda \\ge 0$)", at_minus_one > 0)
    anti = antipodal_rate()
    dv.add("Value of $L_2 f / f$ at $\\rho = -1$ (in it $K(\\rho)$ stands for $K(-1)$). For $\\beta > 0$ it tends to "
           "$0$ as $\\beta \\to \\infty$, and $\\bar\\lambda(\\beta)$ is at least this value, so dissipation degrades "
           "exponentially in $\\beta$. For a positive-definite $K$ (every MLP kernel) $\\bar\\lambda(\\beta)$ is the "
           "larger of this value and $\\lambda_{\\mathrm{edge}}$ (the dissipation derivation), so the interior "
           "condition holds once the edge condition does and, for $\\beta > 0$, $K(-1) > -k_0$",
           anti)
    F, A, B, thr, d_set = relu_region()
    dv.add("ReLU: the sign of $\\lambda_{\\mathrm{edge}}$ is the sign of $F(d, t)$, where $t = \\sigma_b / \\sigma_w$", F)
    dv.add("$F < 0$ needs a negative coefficient of $t^2$, i.e. $d$ in", d_set)
    dv.add("and then $t$ above the threshold", thr)
    region = sp.And(d > 3, sigma_b / sigma_w > thr)        # t = sigma_b/sigma_w put back: no step's name in a result
    dv.result = region
    dv.lhs = r"\text{ReLU:}\quad \lambda_{\mathrm{edge}} < 0 \iff"
    dv.extras.update(antipodal_rate=sp.sstr(anti), edge_condition_moments=sp.sstr(edge_cond), relu_threshold=sp.sstr(thr),
                     relu_region=f"d > 3 and sigma_b/sigma_w > {sp.sstr(thr)}")
    return dv


# ---------------------------------------------------------------- attention
def energy_identity_residual(n_tokens: int, *, zero_beta: bool = False, factor=1, heads: int = 1) -> sp.Expr:
    """dE_beta/dt + (v/N^2) sum_i Z_i |P_{x_i} A_i/v|^2 for V = v I, Q^T K = I (should be 0).

    Computed in the Gram formalism (any d): tokens x_1..x_N with <x_i, x_j> = r_ij.  With
    ``heads`` = H > 1, head h has V_h = v_h I and Q_h^T K_h = I: every head then has the
    softmax weights e^{beta r_ij}, A_i = sum_h v_h m_i, and the identity holds with v = sum_h v_h.
    """
    n = n_tokens
    names = [f"x{i}" for i in range(n)]
    r = {(i, j): sp.Symbol(f"r{min(i, j)}{max(i, j)}", real=True) for i in range(n) for j in range(n) if i != j}
    known = {(names[i], names[i]): 1 for i in range(n)}
    known.update({(names[i], names[j]): r[i, j] for (i, j) in r})
    G = Gram(names, known)
    xs = [G.vec(nm) for nm in names]
    v = (sp.Symbol("v", nonnegative=True) if heads == 1 else
         sp.Add(*[sp.Symbol(f"v{h + 1}", nonnegative=True) for h in range(heads)]))
    # the weights e^{beta r_ij} enter only as positive numbers: name them (w_ij = w_ji, w_ii = e^beta)
    eb = sp.Symbol("e_beta", positive=True)
    w = {(i, j): (sp.S.One if zero_beta else
                  eb if i == j else sp.Symbol(f"w{min(i, j)}{max(i, j)}", positive=True))
         for i in range(n) for j in range(n)}
    # the normalizations Z_i = sum_j w_ij enter as free positive symbols: the identity holds for any
    # Z_i (hence for the softmax one), and stays polynomial after clearing denominators
    Z = [sp.Symbol(f"Z{i}", positive=True) for i in range(n)]
    m = [G.lin(*[(w[i, j] / Z[i], xs[j]) for j in range(n)]) for i in range(n)]   # A_i = v m_i
    pm = [G.lin((1, m[i]), (-G.dot(xs[i], m[i]), xs[i])) for i in range(n)]      # P_{x_i} m_i
    vel = [G.lin((v, pm[i])) for i in range(n)]                                   # dx_i/dt
    drho = {(i, j): G.dot(vel[i], xs[j]) + G.dot(xs[i], vel[j]) for (i, j) in r}
    if zero_beta:   # E_0 = (1/(2N^2)) sum (1 - r_ij)
        dE = sum(-sp.Rational(1, 2) * drho[k] for k in r) / n**2
    else:           # E_beta = (1/(2 beta N^2)) sum (e^beta - e^{beta r_ij}): dE/dr_ij = -e^{beta r_ij}/(2 N^2)
        dE = sum(-w[k] * drho[k] for k in r) / (2 * n**2)
    claim = -factor * v * sum(Z[i] * G.dot(pm[i], pm[i]) for i in range(n)) / n**2
    clear = sp.Mul(*Z)
    return sp.expand(sp.expand(dE - claim) * clear)


# The operator-norm steps of the attention bound, stated once and applied to derived expressions.
LEMMAS = {
    "cauchy_schwarz": "the Cauchy-Schwarz inequality $|\\langle u, w\\rangle| \\le |u|\\, |w|$",
    "operator_norm": "the triangle inequality for operator norms, $|\\sum_h M_h u_h| \\le \\sum_h \\|M_h\\|\\, "
                     "|u_h|$, and their submultiplicativity, $\\|A B\\| \\le \\|A\\|\\, \\|B\\|$",
    "mean_value": "the mean value inequality $|g(x) - g(y)| \\le \\sup_{z \\in [x, y]} \\|D g(z)\\|\\, |x - y|$ "
                  "for $g \\in C^1(\\mathbb{R}^d, \\mathbb{R}^d)$",
    "psd_trace": "the bound $\\|C\\| \\le \\operatorname{tr} C$ for a positive semi-definite matrix $C$",
}


def _keys_gram(n: int):
    """Gram table of n unit keys y_1..y_n (<y_j, y_k> symbols) and n softmax weights p_j (p_n = 1 - others)."""
    names = [f"y{j + 1}" for j in range(n)]
    known = {(a, a): 1 for a in names}
    G = Gram(names, known)
    p = [sp.Symbol(f"p{j + 1}", positive=True) for j in range(n - 1)]
    p.append(1 - sum(p))
    return G, [G.vec(a) for a in names], p


@lru_cache(maxsize=None)
def softmax_mean_jacobian_residual(n: int) -> sp.Expr:
    """Directional derivative of the softmax mean m(x) = sum_j p_j(x) y_j minus beta Cov_p M^T h.

    p_j(x) = e^{beta s_j(x)}/sum_k e^{beta s_k(x)} with s_j(x) = <Q x, K y_j> = <x, M y_j>, M = Q^T K;
    along a line s_j(x + t h) = s_j + t c_j with c_j = <h, M y_j>, and c_j - cbar = <M^T h, y_j - m>.  In the Gram
    formalism Cov_p M^T h = sum_j p_j (y_j - m) <y_j - m, M^T h> = sum_j p_j (c_j - cbar)(y_j - m),
    and the derivative of m along h is computed by sympy; the residual (a vector: its coefficients
    on y_1..y_n) is returned as a tuple, zero for every n (the formula is n-free).
    """
    t = sp.Symbol("t", real=True)
    s = [sp.Symbol(f"s{j + 1}", real=True) for j in range(n)]
    c = [sp.Symbol(f"c{j + 1}", real=True) for j in range(n)]
    e = [sp.exp(beta * (s[j] + t * c[j])) for j in range(n)]
    Z = sum(e)
    dm = [sp.diff(e[j] / Z, t).subs(t, 0) for j in range(n)]          # coefficient of y_j in Dm[h]
    p = [sp.exp(beta * s[j]) / sum(sp.exp(beta * sk) for sk in s) for j in range(n)]
    cbar = sum(p[k] * c[k] for k in range(n))
    # beta Cov_p M^T h = beta sum_j p_j (c_j - cbar) (y_j - m): coefficient of y_j, since sum_j p_j (c_j - cbar) = 0
    cov = [beta * p[j] * (c[j] - cbar) for j in range(n)]
    return sp.Tuple(*[sp.simplify(dm[j] - cov[j]) for j in range(n)])


@lru_cache(maxsize=None)
def covariance_trace_identities(n: int):
    """(tr Cov_p - (1 - |m|^2), (1 - |m|^2) - (1/2) sum_{j,k} p_j p_k |y_j - y_k|^2) for n unit keys (both 0)."""
    G, ys, p = _keys_gram(n)
    m = G.lin(*[(p[j], ys[j]) for j in range(n)])
    dev = [G.lin((1, ys[j]), (-1, m)) for j in range(n)]
    tr_cov = sp.expand(sum(p[j] * G.dot(dev[j], dev[j]) for j in range(n)))
    one_minus_m2 = sp.expand(1 - G.dot(m, m))
    spread = sp.expand(sum(p[j] * p[k] * G.dot(G.lin((1, ys[j]), (-1, ys[k])), G.lin((1, ys[j]), (-1, ys[k])))
                           for j in range(n) for k in range(n)) / 2)
    return sp.simplify(tr_cov - one_minus_m2), sp.simplify(one_minus_m2 - spread)


@lru_cache(maxsize=None)
def pair_chord_norms():
    """(|x_i + x_j|, |x_i - x_j|) for unit x_i, x_j with <x_i, x_j> = rho (Gram formalism)."""
    G = Gram(["x", "y"], {("x", "x"): 1, ("y", "y"): 1, ("x", "y"): rho})
    x, y = G.vec("x"), G.vec("y")
    plus, minus = G.lin((1, x), (1, y)), G.lin((1, x), (-1, y))
    return sp.sqrt(sp.factor(G.dot(plus, plus))), sp.sqrt(sp.factor(G.dot(minus, minus)))


def _bound_over_rho(ratio: sp.Expr) -> sp.Expr:
    """sup over rho in [-1, 1) of `ratio`, shown nondecreasing in rho (derivative >= 0), hence its value at 1."""
    w = sp.Symbol("w", positive=True)                         # rho = -1 + w, w in (0, 2]
    slope = sp.simplify(sp.diff(ratio, rho).subs(rho, w - 1))
    if not slope.is_nonnegative:
        raise DerivationError(f"attention bound: cannot show the ratio is nondecreasing in rho: {slope}")
    return sp.factor(sp.limit(ratio, rho, 1, "-"))


@lru_cache(maxsize=None)
def attention_ratio_bound(heads: int | None = None):
    """The bound on |d(1-rho_ij)/dt| / (1 - rho_ij), assembled from derived expressions and LEMMAS.

    heads = None: general H in the sums S_V = sum_h ||V_h||, S_VKQ = sum_h ||V_h|| ||K_h^T Q_h||;
    heads = H (an int): the per-head norms ||V_h||, ||K_h^T Q_h|| as symbols (H = 1: norm_V, norm_KtQ).
    Returns (ratio(rho), sup over rho, |S| bound, |D| bound / |x_i - x_j|, head-norm symbols).

    * d(1-rho)/dt = -(1-rho)<S, x_i + x_j> + (1/2)(1+rho)<D, x_i - x_j> (``attention_rho_identity``),
      S = (A_i + A_j)/2, D = A_i - A_j, A = sum_h V_h m_h;
    * |m_h| <= 1 and ||Cov_p|| <= 1: tr Cov_p = 1 - |m|^2 = (1/2) sum p_j p_k |y_j - y_k|^2 >= 0
      (``covariance_trace_identities``) and the psd_trace lemma;
    * D m_h = beta Cov_p (K_h^T Q_h) (``softmax_mean_jacobian_residual``), so by the mean value and
      operator-norm lemmas |m_h(x_i) - m_h(x_j)| <= beta ||Cov_p|| ||K_h^T Q_h|| |x_i - x_j|;
    * Cauchy-Schwarz on both inner products, with |x_i +- x_j| from ``pair_chord_norms``.
    """
    # from tr Cov_p = 1 - |m|^2 >= 0 (``covariance_trace_identities``, checked by the caller) and the psd_trace
    # lemma: ||Cov_p|| <= tr Cov_p = 1 - |m|^2 and |m| = sqrt(1 - tr Cov_p), over |m|^2 in [0, 1]
    m2 = sp.Symbol("m2", nonnegative=True)
    cov_norm = sp.maximum(1 - m2, m2, sp.Interval(0, 1))
    sup_m = sp.maximum(sp.sqrt(m2), m2, sp.Interval(0, 1))
    if heads is None:
        pairs = [(sum_V, None)]
        sS = sum_V * sup_m
        sD = beta * cov_norm * sum_VKQ
        syms = (sum_V, sum_VKQ)
    else:
        if heads == 1:
            pairs = [(norm_V, norm_KtQ)]
        else:
            pairs = [(sp.Symbol(f"norm_V{h + 1}", nonnegative=True), sp.Symbol(f"norm_KtQ{h + 1}", nonnegative=True))
                     for h in range(heads)]
        sS = sum(nv * (sup_m + sup_m) / 2 for nv, _ in pairs)                  # |S| <= sum_h ||V_h|| (|m_i|+|m_j|)/2
        sD = sum(nv * beta * cov_norm * nkq for nv, nkq in pairs)             # |D| / |x_i - x_j|
        syms = tuple(x for pr in pairs for x in pr)
    plus, minus = pair_chord_norms()
    total = (1 - rho) * sS * plus + sp.Rational(1, 2) * (1 + rho) * (sD * minus) * minus
    ratio = sp.simplify(total / (1 - rho))
    return ratio, _bound_over_rho(ratio), sS, sD, syms


@lru_cache(maxsize=None)
def attention_constant_heads():
    """((beta, S_V, S_VKQ), C_att, bound on the D-term, (sum_h ||V_h||, sum_h ||V_h|| ||K_h^T Q_h||)) for H heads.

    A_i = sum_h V_h m_h(x_i), m_h the softmax mean of head h: |S| <= S_V and
    |D| <= beta S_VKQ |x_i - x_j| (``attention_ratio_bound``); C_att is the sup over rho of the bound
    on |d(1-rho)/dt| / (1-rho).
    """
    h = sp.Idx("h")
    nV_h, nKQ_h = sp.IndexedBase("norm_V"), sp.IndexedBase("norm_KtQ")
    sums = (sp.Sum(nV_h[h], (h, 1, H)), sp.Sum(nV_h[h] * nKQ_h[h], (h, 1, H)))
    _, C, _, sD, _ = attention_ratio_bound(None)
    _, minus = pair_chord_norms()
    bound_D = sp.factor(sp.Rational(1, 2) * (1 + rho) * sD * minus**2)
    return (beta, sum_V, sum_VKQ), C, bound_D, sums


def attention_constant_one_head() -> sp.Expr:
    """C_att for H heads specialised to H = 1 (the sums over heads evaluated at H = 1)."""
    _, C, _, (sV, sVKQ) = attention_constant_heads()
    one = {sum_V: sV.subs(H, 1).doit(), sum_VKQ: sVKQ.subs(H, 1).doit()}
    return sp.factor(C.subs(one).subs({sp.IndexedBase("norm_V")[1]: norm_V,
                                       sp.IndexedBase("norm_KtQ")[1]: norm_KtQ}))


@lru_cache(maxsize=None)
def attention_constant():
    """((norm_V, norm_KtQ, beta), bound on the D-term, C_att) for one head (Q, K, V)."""
    _, C, _, sD, _ = attention_ratio_bound(1)
    _, minus = pair_chord_norms()
    bound_D = sp.factor(sp.Rational(1, 2) * (1 + rho) * sD * minus**2)
    return (norm_V, norm_KtQ, beta), bound_D, C


@lru_cache(maxsize=None)
def sharp_pair_ratio():
    """[d(1-rho)/dt] / (1-rho) for two tokens, beta = 0, V = -v I (one head): (ratio(rho), its limit at rho -> 1).

    At beta = 0 both softmax means are (x_i + x_j)/2, so A_i = A_j = -v (x_i + x_j)/2; the pair rate
    is computed in the Gram formalism.  The limit is 2 v = C_att(beta = 0, ||V|| = v): the bound is
    attained there (the factor 2 of C_att cannot be lowered).
    """
    v = sp.Symbol("v", positive=True)
    G = Gram(["x", "y"], {("x", "x"): 1, ("y", "y"): 1, ("x", "y"): rho})
    x, y = G.vec("x"), G.vec("y")
    A = G.lin((-v / 2, x), (-v / 2, y))
    vx = G.lin((1, A), (-G.dot(x, A), x))
    vy = G.lin((1, A), (-G.dot(y, A), y))
    rate = -(G.dot(vx, y) + G.dot(x, vy))                 # d(1-rho)/dt
    ratio = sp.factor(sp.simplify(rate / (1 - rho)))
    return v, ratio, sp.limit(ratio, rho, 1, "-")


def energy_lowering_condition():
    """The condition (per head h) under which the attention part of dE_beta/dt is <= 0: V_h = 0, or
    V_h = v_h I with v_h >= 0 and (Q_h^T K_h = I or beta = 0)."""
    Vh, Qh, Kh = (sp.MatrixSymbol(f"{n}_h", d, d) for n in "VQK")
    vh = sp.Symbol("v_h", nonnegative=True)
    return sp.Or(sp.Eq(Vh, sp.ZeroMatrix(d, d)),
                 sp.And(sp.Eq(Vh, vh * sp.Identity(d)), sp.Or(sp.Eq(Qh.T * Kh, sp.Identity(d)), sp.Eq(beta, 0))))


@lru_cache(maxsize=None)
def energy_lowering_derivative(n_tokens: int = 3):
    """dE_beta/dt under the condition: -(v/N^2) sum_i Z_i n_i with n_i = |P_{x_i} A_i / v|^2 >= 0 (symbols),
    and sympy's verdict that it is <= 0 (the identity itself is ``energy_identity_residual``)."""
    v = sp.Symbol("v", nonnegative=True)
    Z = [sp.Symbol(f"Z{i}", positive=True) for i in range(n_tokens)]
    nn = [sp.Symbol(f"n{i}", nonnegative=True) for i in range(n_tokens)]
    dE = -v * sum(Z[i] * nn[i] for i in range(n_tokens)) / n_tokens**2
    return dE, dE.is_nonpositive


@lru_cache(maxsize=None)
def near_sync_attention_rate(heads: int = 1) -> sp.Expr:
    """lim_{rho -> 1} [d(1-rho)/dt]_att / (1 - rho) for two tokens and general V.

    Two tokens span a plane and d(1-rho)/dt only involves inner products with them, so the
    plane (d = 2, x_1 = e1, x_2 = ((1-t^2), 2t)/(1+t^2)) is no restriction.  The attention
    weights are arbitrary smooth functions q_i(t) (token i puts weight q_i on x_2); the only
    property used is q_1(0) = q_2(0) (the two softmax rows coincide when the tokens do), so
    the result holds for every beta and Q, K.  It is -2 <V x, x> at x = e1, the rate
    attention adds to the energy near synchronization; for N tokens in a cap of radius eps
    the same holds up to O(eps) (every softmax mean is within eps of the cap's centre).
    With ``heads`` = H > 1 each head has its own V_h and weights q_{h,i}: the result is
    -2 sum_h <V_h x, x> (entries v11_h).
    """
    t = sp.Symbol("t", real=True)
    tag = [""] if heads == 1 else [f"_{h + 1}" for h in range(heads)]
    Vs = [sp.Matrix(2, 2, sp.symbols(" ".join(f"v{ij}{g}" for ij in ("11", "12", "21", "22")), real=True))
          for g in tag]
    xs = [sp.Matrix([1, 0]), sp.Matrix([(1 - t**2) / (1 + t**2), 2 * t / (1 + t**2)])]
    qs = [[sp.Function(f"q{i + 1}{g}")(t) for i in range(2)] for g in tag]

    def attn(i):
        return sum(((1 - q[i]) * V * xs[0] + q[i] * V * xs[1] for V, q in zip(Vs, qs)), sp.zeros(2, 1))

    vel = [attn(i) - (xs[i].T * attn(i))[0] * xs[i] for i in range(2)]
    num = -((vel[0].T * xs[1])[0] + (xs[0].T * vel[1])[0])
    den = 1 - (xs[0].T * xs[1])[0]
    equal_rows = {q[1].subs(t, 0): q[0].subs(t, 0) for q in qs}
    cn = [sp.factor(sp.expand(sp.diff(num, t, k).subs(t, 0).doit().subs(equal_rows))) for k in range(3)]
    cd = [sp.factor(sp.expand(sp.diff(den, t, k).subs(t, 0))) for k in range(3)]
    if cn[0] != 0 or cn[1] != 0 or cd[0] != 0 or cd[1] != 0 or cd[2] == 0:
        raise DerivationError(f"near-synchronization expansion failed: {cn}, {cd}")
    out = sp.simplify(cn[2] / cd[2])
    if out.has(sp.Function):
        raise DerivationError(f"near-synchronization rate depends on the weights: {out}")
    return out


@register("attention_bound")
def attention_bound() -> Derivation:
    """C_att(beta, Q, K, V) = 2 ||V|| (1 + beta ||K^T Q||), and 0 for energy-lowering attention."""
    dv = Derivation(
        "attention_bound", "Attention contribution to the energy: the attention constant",
        ["$A_i = \\sum_j \\operatorname{softmax}_j(\\beta \\langle Q x_i, K x_j\\rangle)\\, V x_j$, tokens on $S^{d-1}$",
         "$E_\\beta = \\frac{1}{2\\beta N^2} \\sum_{i,j} f(\\rho_{ij})$ with $f(\\rho) = e^{\\beta} - e^{\\beta\\rho}$ "
         "($E_0$: the same with $f(\\rho) = 1 - \\rho$)",
         "norms are operator 2-norms"],
        [], None)
    dv.assumptions.append("standard inequalities used: " + "; ".join(LEMMAS.values()))
    drho, claim, residual = attention_rho_identity()
    dv.add("Attention velocity $x_i' = P_{x_i} A_i$ with $A_i = V m(x_i)$, $m(x) = \\sum_j p_j(x) x_j$ the softmax "
           "mean; the attention part of $d\\rho_{ij}/dt = \\langle x_i', x_j\\rangle + \\langle x_i, x_j'\\rangle$ "
           "(inner products, any $d$)", drho)
    if residual != 0:
        raise DerivationError("attention identity failed")
    dv.add("Identity $d(1-\\rho)/dt = -(1-\\rho)\\langle S, x_i + x_j\\rangle + \\tfrac12 (1+\\rho)\\langle D, x_i - x_j\\rangle$ "
           "with $S = (A_i + A_j)/2$, $D = A_i - A_j$: the residual", residual)
    for n in (2, 3, 4):
        jac = softmax_mean_jacobian_residual(n)
        if any(r != 0 for r in jac):
            raise DerivationError(f"softmax-mean Jacobian failed for n={n}: {jac}")
    dv.add("Softmax Jacobian: along $x + t h$ the scores are $s_j + t c_j$ with "
           "$s_j = \\langle Q x, K x_j\\rangle$, $c_j = \\langle h, Q^{\\top} K x_j\\rangle$; differentiating $m = \\sum_j e^{\\beta s_j} x_j / \\sum_k e^{\\beta s_k}$ gives "
           "$D m[h] = \\beta \\operatorname{Cov}_p K^{\\top} Q\\, h$, "
           "$\\operatorname{Cov}_p = \\sum_j p_j (x_j - m)(x_j - m)^{\\top}$: the residual (coefficients of "
           "$x_1, \\dots, x_n$; $n = 2, 3, 4$ keys)", softmax_mean_jacobian_residual(3))
    ids = [covariance_trace_identities(n) for n in (2, 3, 4)]
    if any(r != 0 for pair in ids for r in pair):
        raise DerivationError(f"covariance trace identities failed: {ids}")
    dv.add("For unit keys $\\operatorname{tr} \\operatorname{Cov}_p = 1 - |m|^2 = \\tfrac12 \\sum_{j,k} p_j p_k "
           "|x_j - x_k|^2 \\ge 0$ (residuals below, $n = 2, 3, 4$); with the psd-trace lemma "
           "$\\|\\operatorname{Cov}_p\\| \\le 1$ and $|m| \\le 1$", sp.Tuple(*ids[1]))
    plus, minus = pair_chord_norms()
    dv.add("Chord lengths (Gram formalism): $(|x_i + x_j|, |x_i - x_j|)$", sp.Tuple(plus, minus))
    ratio1, C, sS1, sD1, _ = attention_ratio_bound(1)
    (nV, nKQ, b_), bound_D, _ = attention_constant()
    dv.add("Operator-norm lemma and $|m| \\le 1$: $|S| \\le \\|V\\| (|m(x_i)| + |m(x_j)|)/2$, at most", sS1)
    dv.add("Mean value lemma with the derived Jacobian and $\\|\\operatorname{Cov}_p\\| \\le 1$: "
           "$|D| \\le \\|V\\| \\sup \\|D m\\|\\, |x_i - x_j|$, i.e. $|D| / |x_i - x_j|$ is at most", sD1)
    dv.add("Cauchy-Schwarz on both terms: $|d(1-\\rho)/dt| / (1-\\rho)$ is at most", ratio1)
    w = sp.Symbol("w", positive=True)
    dv.add("Its derivative in $\\rho$ (at $\\rho = w - 1$) is $\\ge 0$ on $[-1, 1)$, so the supremum is the value "
           "at $\\rho \\to 1$: $|d(1-\\rho)/dt| \\le C_{\\mathrm{att}} (1 - \\rho)$ with $C_{\\mathrm{att}}$ equal to",
           C)
    dv.extras["c_att_slope"] = sp.sstr(sp.simplify(sp.diff(ratio1, rho).subs(rho, w - 1)))
    (_, S_V, S_VKQ), C_heads, _, (sum_v, sum_vkq) = attention_constant_heads()
    ratio2, C2, _, _, _ = attention_ratio_bound(2)
    dv.add("$H$ heads, $A_i = \\sum_h V_h m_h(x_i)$ with $m_h$ the softmax mean of head $h$: the same steps head by "
           "head (triangle inequality over heads) give $|S| \\le S_V$ and $|D| \\le \\beta S_{VKQ} |x_i - x_j|$ with",
           sp.Tuple(sp.Eq(S_V, sum_v), sp.Eq(S_VKQ, sum_vkq)))
    dv.add("Two heads, per-head norms: the supremum over $\\rho$ of the bound", C2)
    dv.add("The same supremum over $\\rho$ gives $C_{\\mathrm{att}}$ for $H$ heads", C_heads)
    diff_one = sp.simplify(attention_constant_one_head() - C)
    diff_two = sp.simplify(C2 - C_heads.subs({S_V: sum_v.subs(H, 2).doit(), S_VKQ: sum_vkq.subs(H, 2).doit()})
                           .subs({sp.IndexedBase("norm_V")[k]: sp.Symbol(f"norm_V{k}", nonnegative=True) for k in (1, 2)})
                           .subs({sp.IndexedBase("norm_KtQ")[k]: sp.Symbol(f"norm_KtQ{k}", nonnegative=True)
                                  for k in (1, 2)}))
    if diff_one != 0 or diff_two != 0:
        raise DerivationError(f"H = 1, 2 do not give the per-head C_att: {diff_one}, {diff_two}")
    dv.add("$H = 1$ and $H = 2$ of the general formula give back the per-head computations: the differences are",
           sp.Tuple(diff_one, diff_two))
    v, sharp, sharp_lim = sharp_pair_ratio()
    if sp.simplify(sharp_lim - C.subs({b_: 0, nV: v})) != 0:
        raise DerivationError(f"sharpness: {sharp_lim} is not C_att(beta = 0, ||V|| = v)")
    dv.add("Sharpness: two tokens, $\\beta = 0$, $V = -v I$ give $[d(1-\\rho)/dt]/(1-\\rho)$ below, whose limit as "
           "$\\rho \\to 1$ is $2 v = C_{\\mathrm{att}}(\\beta = 0)$: the constant cannot be lowered in general", sharp)
    bb = sp.Symbol("beta", positive=True)
    h = sp.exp(bb) - sp.exp(bb * rho) - bb * sp.exp(bb * rho) * (1 - rho)
    dh = sp.factor(sp.diff(h, rho))
    w = sp.Symbol("w", nonnegative=True)      # w = 1 - rho >= 0
    if h.subs(rho, 1) != 0 or not sp.simplify(dh.subs(rho, 1 - w)).is_nonpositive:
        raise DerivationError("convexity inequality failed")
    dv.add("$h = f - \\beta e^{\\beta\\rho}(1-\\rho)$ has $h(1) = 0$ and its derivative $h'$, below, is $\\le 0$ on "
           "$[-1, 1]$, so $f \\ge \\beta e^{\\beta\\rho} (1-\\rho)$", dh)
    dv.add("Hence $dE_\\beta/dt|_{\\mathrm{att}} = \\frac{1}{2N^2} \\sum_{i,j} e^{\\beta\\rho_{ij}}\\, d(1-\\rho_{ij})/dt "
           "\\le C_{\\mathrm{att}} E_\\beta$; with the noise part, "
           "$E[E_\\beta(\\mu_t)] \\le e^{(\\bar\\lambda + C_{\\mathrm{att}}) t}\\, E[E_\\beta(\\mu_0)]$")
    for n in (2, 3, 4):
        res = energy_identity_residual(n)
        if res != 0:
            raise DerivationError(f"energy identity failed for N={n}: {res}")
        res0 = energy_identity_residual(n, zero_beta=True)
        if res0 != 0:
            raise DerivationError(f"beta = 0 energy identity failed for N={n}: {res0}")
    for n in (2, 3):
        if energy_identity_residual(n, heads=2) != 0 or energy_identity_residual(n, heads=2, zero_beta=True) != 0:
            raise DerivationError(f"two-head energy identity failed for N={n}")
    cond = energy_lowering_condition()
    dv.add("Zero case. Under the condition below for every head, all such heads share the weights "
           "$e^{\\beta\\rho_{ij}}$ (at $\\beta = 0$ all weights are 1), so $A_i = v\\, m_i$ with $v = \\sum_h v_h$",
           cond)
    dv.add("Then $dE_\\beta/dt = -\\frac{v}{N^2} \\sum_i Z_i |P_{x_i} A_i / v|^2$ with $Z_i = \\sum_j e^{\\beta\\rho_{ij}}$: "
           "$dE_\\beta/dt$ computed from the pair rates minus this expression, for $N = 2, 3, 4$ "
           "(one head; and $\\beta = 0$; any normalizations $Z_i$) and for $H = 2$, $N = 2, 3$", sp.S.Zero)
    dE, nonpos = energy_lowering_derivative(3)
    if nonpos is not True:
        raise DerivationError(f"zero case: sympy cannot show {dE} <= 0")
    dv.add("With $n_i = |P_{x_i} A_i / v|^2 \\ge 0$, $Z_i > 0$, $v \\ge 0$ ($N = 3$ shown), the "
           "inequality $dE_\\beta/dt \\le 0$ is decided exactly (attention can only lower the energy, and "
           "$C_{\\mathrm{att}} = 0$)", sp.Le(dE, 0))
    ns = near_sync_attention_rate()
    dv.add("Near synchronization (two tokens at $x = e_1$, $\\rho \\to 1$; any attention weights whose rows are "
           "equal at coincidence, so any $\\beta$, $Q$, $K$) attention adds the rate "
           "$\\lim [d(1-\\rho)/dt]/(1-\\rho) = -2 \\langle V x, x\\rangle$. For tokens in a small cap the expected energy "
           "therefore changes at rate $\\lambda_{\\mathrm{edge}} - 2\\langle V x, x\\rangle + o(1)$, and no uniform decay "
           "rate lies below $\\lambda_{\\mathrm{edge}} - 2 \\lambda_{\\min}((V + V^{\\top})/2)$", ns)
    ns2 = near_sync_attention_rate(2)
    dv.add("Two heads, each with its own $V_h$ and weights: the near-synchronization rate is "
           "$-2 \\sum_h \\langle V_h x, x\\rangle$, so with $H$ heads $V$ is replaced by $\\sum_h V_h$ in the bound above",
           ns2)
    dv.result = sp.Piecewise((0, cond), (C_heads, True), evaluate=False)
    dv.lhs = r"C_{\mathrm{att}}"
    dv.extras.update(c_att=sp.sstr(C), c_att_heads=sp.sstr(C_heads), near_sync_attention_rate=sp.sstr(ns),
                     sharp_ratio=sp.sstr(sharp),
                     zero_when="every head has V_h = 0, or V_h = v_h I with v_h >= 0 and (Q_h^T K_h = I or "
                               "beta = 0)")
    return dv


__all__ = ["dissipation", "coercivity", "attention_bound", "edge_rate", "relu_edge_rate", "relu_region",
           "generator_factor", "stable_numerator", "antipodal_rate", "endpoint_certificate", "schoenberg_chord",
           "lambda_bar_closed", "K_minus", "near_sync_attention_rate", "energy_identity_residual", "beta", "q", "t_ratio"]
