"""Beyond the paper (docs/mathematics.md, section 8): the Lyapunov spectrum, the log-distance fluctuations and
the law of the synchronization time, derived by sympy.

Noise-only flow ``dX = c(X) dt + P_X W(dt, X)``; tangent flow ``dV = Dc V dt + D(P_x W)[V]``
(Itô, as in ``symbolic.lyapunov``).  Frame x = e1, k orthonormal tangent vectors
V_j = e_{j+1}.  The noise acting on (V_1..V_k) is linear in W(x) (covariance k0 I) and in
the k vectors DW(x)[V_j]; their covariances ``Cov(DW[U], DW[V]) = k1 <U, V> I`` and
``Cov(W(x), DW[V]) = 0`` are derived from K (mixed derivatives of K(<x+sU, x+tV>)).
Writing the noise as ``sum_m L_m xi_m`` (independent standard xi_m), the Itô drift of a
function g(V) is ``Dg[mu] + (1/2) sum_m D^2 g[L_m, L_m]`` and its squared diffusion
``sum_m Dg[L_m]^2``: one-variable derivatives of ``g(V0 + e L)`` at e = 0.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.spectrum``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from .lyapunov import kernel_constants, lambda1_tangent
from .two_point import (affine_in_d, d, k0, k1, noise_coefficients, projection_drift_gamma, rho, u,
                        unit)

i_idx = sp.Symbol("i", positive=True, integer=True)        # index of an exponent
k_idx = sp.Symbol("k", positive=True, integer=True)        # number of tangent vectors
sigma2 = sp.Symbol("sigma^2", positive=True)               # variance rate of log|V_t|
lam1 = sp.Symbol("lambda_1", real=True)
drift_m = sp.Symbol("m", real=True)                        # drift of X = log eps0 - log dist
a_lvl = sp.Symbol("a", positive=True)                      # a = log(eps0 / eps)
eps0, eps = sp.symbols("epsilon_0 epsilon", positive=True)
s_lap = sp.Symbol("s", positive=True)                      # Laplace variable
t = sp.Symbol("t", positive=True)
x_pos = sp.Symbol("x", real=True)
alpha_q = sp.Symbol("alpha", positive=True)                # 1 - alpha: wanted probability
delta = sp.Symbol("delta", positive=True)                  # step T/L
t_alpha = sp.Symbol("t_alpha", positive=True)              # the (1-alpha)-quantile of tau
c_rem = sp.Symbol("c", real=True)
p_rem = sp.Symbol("p", positive=True)                      # remainder exponent 1 + p
MAX_DIM = 6


# ---------------------------------------------------------------- field derivative covariances
@lru_cache(maxsize=None)
def derivative_cross_covariance() -> tuple[sp.Expr, sp.Expr]:
    """(Cov(DW[U]_a, DW[V]_a), Cov(W_a, DW[V]_a)) for tangent U, V with <U, V> = c, from K."""
    Kf = sp.Function("K")
    ss, tt = sp.symbols("s t", real=True)
    xx, xu, xv, uv, uu_, vv = sp.symbols("xx xu xv uv uu vv", real=True)
    overlap = xx + ss * xu + tt * xv + ss * tt * uv           # <x + sU, x + tV>
    point = {xx: 1, xu: 0, xv: 0, uv: c_rem, uu_: 1, vv: 1, ss: 0, tt: 0}
    cov = sp.diff(Kf(overlap), ss, tt).subs(point).doit()
    cross = sp.diff(Kf(xx + tt * xv), tt).subs(point).doit()
    k2 = sp.Symbol("k2")

    def name(expr):
        for sub in expr.atoms(sp.Subs):
            order = sum(n for _, n in sub.expr.variable_count)
            expr = expr.subs(sub, {1: k1, 2: k2}[order])
        return sp.simplify(expr)
    cov, cross = name(cov), name(cross)
    if cov.has(k2) or cov.has(sp.Subs) or cross.has(sp.Subs):
        raise DerivationError(f"field derivative covariance: unexpected form {cov}, {cross}")
    return cov, cross


def _noise_loadings(n: int, k: int) -> tuple[sp.Matrix, list[sp.Matrix], sp.Matrix]:
    """(mu, [L_m], V0): Itô drift and independent noise loadings of (V_1..V_k) at x = e1.

    dV_j = Dc V_j dt + d/dx[P_x w](V_j) + P_x DW[V_j]; w ~ N(0, k0 I) enters through the
    first term, the DW[V_j] ~ N(0, k1 I) (independent: derived covariances) through the second.
    """
    cov, cross = derivative_cross_covariance()
    if cross != 0 or sp.simplify(cov - k1 * c_rem) != 0:
        raise DerivationError(f"unexpected derivative covariances {cov}, {cross}")
    xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    ws = sp.Matrix(sp.symbols(f"w1:{n + 1}", real=True))
    x = unit(n, 0)
    V0 = sp.Matrix.hstack(*[unit(n, j + 1) for j in range(k)])
    field = (sp.eye(n) - xs * xs.T) * ws
    Jx = field.jacobian(xs).subs(dict(zip(xs, x)))
    gam = projection_drift_gamma(n)
    Dc = (gam * xs).jacobian(xs)
    mu = Dc * V0
    P = sp.eye(n) - x * x.T
    loads = []
    for c in range(n):                                          # w_c = sqrt(k0) xi_c
        cols = [(Jx * V0[:, j]).jacobian(ws)[:, c] * sp.sqrt(k0) for j in range(k)]
        loads.append(sp.Matrix.hstack(*cols))
    for j in range(k):                                          # DW[V_j]_c = sqrt(k1) xi_{jc}
        for c in range(n):
            Lm = sp.zeros(n, k)
            Lm[:, j] = sp.sqrt(k1) * P[:, c]
            loads.append(Lm)
    return mu, loads, V0


def _directional(g_of, V0: sp.Matrix, direction: sp.Matrix, order: int) -> sp.Expr:
    e = sp.Symbol("e", real=True)
    return sp.diff(g_of(V0 + e * direction), e, order).subs(e, 0)


def _log_volume(V: sp.Matrix) -> sp.Expr:
    """log |V^1 ^ ... ^ V^k| = (1/2) log det(V^T V)."""
    return sp.log((V.T * V).det()) / 2


@lru_cache(maxsize=None)
def log_volume_moments(n: int, k: int) -> tuple[sp.Expr, sp.Expr]:
    """(Itô drift, squared diffusion) of log|V^1 ^ ... ^ V^k| in dimension n."""
    return volume_moments(*_noise_loadings(n, k))


def volume_moments(mu: sp.Matrix, loads: list[sp.Matrix], V0: sp.Matrix) -> tuple[sp.Expr, sp.Expr]:
    """(Itô drift, squared diffusion) of log|V^1 ^ ... ^ V^k| at V0 for the tangent dynamics dV = mu dt +
    sum_m L_m dB_m (any field: the loadings say which)."""
    drift = _directional(_log_volume, V0, mu, 1)
    diff2 = 0
    for Lm in loads:
        if not any(Lm):
            continue
        drift += _directional(_log_volume, V0, Lm, 2) / 2
        diff2 += _directional(_log_volume, V0, Lm, 1) ** 2
    return sp.expand(sp.simplify(drift)), sp.expand(sp.simplify(diff2))


@lru_cache(maxsize=None)
def volume_growth() -> sp.Expr:
    """S(d, k) = lambda_1 + ... + lambda_k, fitted as k A(d) + k(k-1)/2 B(d), verified."""
    return fit_volume_growth({(n, kk): log_volume_moments(n, kk)[0] for n in range(2, MAX_DIM + 1)
                              for kk in range(1, n)})


def fit_volume_growth(vals: dict) -> sp.Expr:
    """S(d, k) = k A(d) + k(k-1)/2 B(d) fitted to explicit drifts {(n, k): drift of log k-volume} and verified at
    every one of them (DerivationError otherwise)."""
    top = max(n for n, _ in vals)
    A = affine_in_d({n: vals[(n, 1)] for n in range(2, top + 1)}, "one-vector growth")
    B = affine_in_d({n: vals[(n, 2)] - 2 * A.subs(d, n) for n in range(3, top + 1)},
                    "pair term of the 2-volume growth")
    S = sp.expand(k_idx * A + k_idx * (k_idx - 1) / 2 * B)
    for (n, kk), v in vals.items():
        if sp.simplify(S.subs({d: n, k_idx: kk}) - v) != 0:
            raise DerivationError(f"k-volume growth: explicit (d={n}, k={kk}) does not fit {S}")
    return S


@lru_cache(maxsize=None)
def spectrum() -> sp.Expr:
    """lambda_i(d, k0, k1) = S(d, i) - S(d, i-1)."""
    S = volume_growth()
    lam = sp.expand(S.subs(k_idx, i_idx) - S.subs(k_idx, i_idx - 1))
    return sp.collect(lam, [k0, k1], sp.factor)


@lru_cache(maxsize=None)
def spectrum_relu() -> sp.Expr:
    c0, c1, _ = kernel_constants("relu")
    return sp.factor(spectrum().subs({k0: c0, k1: c1}))


# ---------------------------------------------------------------- fluctuations
@lru_cache(maxsize=None)
def variance_rate_tangent() -> sp.Expr:
    """sigma^2: squared diffusion of log|V| (explicit d = 2..6, affine in d)."""
    return sp.factor(affine_in_d({n: log_volume_moments(n, 1)[1] for n in range(2, MAX_DIM + 1)},
                                 "squared diffusion of log|V|"))


@lru_cache(maxsize=None)
def log_distance_coefficients() -> tuple[sp.Expr, sp.Expr]:
    """Small-distance limits of the Itô drift and squared diffusion of log|x_1 - x_2| = (1/2) log(2u)."""
    b, a = noise_coefficients(k0 - k1 * u + c_rem * u ** (1 + p_rem))
    b, a = b.subs(rho, 1 - u), a.subs(rho, 1 - u)
    g = sp.log(2 * u) / 2
    gu, guu = sp.diff(g, u), sp.diff(g, u, 2)
    drift = gu * (-b) + guu * a / 2               # u = 1 - rho: drift_u = -b, same diffusion
    diff2 = gu ** 2 * a
    out = []
    for e in (drift, diff2):
        lim = sp.limit(sp.expand(e), u, 0, "+")
        if lim.has(sp.oo, -sp.oo, sp.nan, sp.zoo, u, c_rem, p_rem):
            raise DerivationError(f"log-distance small-distance limit failed: {lim}")
        out.append(sp.collect(sp.expand(lim), [k0, k1], sp.factor))
    return out[0], out[1]


# ---------------------------------------------------------------- first passage
@lru_cache(maxsize=None)
def laplace_transform() -> sp.Expr:
    """E e^{-s tau} for a Brownian motion with drift m, variance sigma^2, started a below the level."""
    f = sp.Function("f")
    ode = sp.Eq(drift_m * f(x_pos).diff(x_pos) + sigma2 / 2 * f(x_pos).diff(x_pos, 2), s_lap * f(x_pos))
    r = sp.Symbol("r")
    roots = sp.solve(drift_m * r + sigma2 / 2 * r ** 2 - s_lap, r)
    # bounded as x -> -oo needs the positive root
    pos = [q for q in roots if sp.simplify(q.subs({drift_m: 0})).is_positive]
    if len(pos) != 1:
        raise DerivationError(f"Laplace transform: no unique positive root among {roots}")
    sol = sp.exp(pos[0] * (x_pos - a_lvl))
    if sp.simplify(ode.lhs.subs(f(x_pos), sol).doit() - ode.rhs.subs(f(x_pos), sol)) != 0:
        raise DerivationError("Laplace transform does not solve the generator equation")
    return sp.simplify(sol.subs(x_pos, 0))


@lru_cache(maxsize=None)
def passage_moments() -> dict[str, sp.Expr]:
    """mean, variance, IG shape, p_reach (two signs of m), from the Laplace transform."""
    phi = laplace_transform()
    mp = sp.Symbol("m", positive=True)
    mn = sp.Symbol("m", negative=True)
    phip = phi.subs(drift_m, mp)
    m1 = sp.simplify(-sp.diff(phip, s_lap).subs(s_lap, 0))
    m2 = sp.simplify(sp.diff(phip, s_lap, 2).subs(s_lap, 0))
    var = sp.simplify(m2 - m1 ** 2)
    shape = sp.simplify(m1 ** 3 / var)
    reach_pos = sp.simplify(sp.limit(phip, s_lap, 0, "+"))
    reach_neg = sp.simplify(sp.limit(phi.subs(drift_m, mn), s_lap, 0, "+"))
    back = {mp: drift_m, mn: drift_m}
    return {"mean": m1.subs(back), "variance": var.subs(back), "shape": shape.subs(back),
            "p_reach_toward": reach_pos.subs(back), "p_reach_away": reach_neg.subs(back)}


@lru_cache(maxsize=None)
def image_density() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(killed density p(t, x), CDF P(tau <= t), density of tau) by the method of images."""
    def gauss(z):
        return sp.exp(-z ** 2 / (2 * sigma2 * t)) / sp.sqrt(2 * sp.pi * sigma2 * t)
    cimg = sp.Symbol("C")
    p = gauss(x_pos - drift_m * t) - cimg * gauss(x_pos - 2 * a_lvl - drift_m * t)
    sol = sp.solve(sp.simplify(p.subs(x_pos, a_lvl) * sp.exp((a_lvl - drift_m * t) ** 2 / (2 * sigma2 * t))),
                   cimg)
    if len(sol) != 1:
        raise DerivationError(f"image coefficient: {sol}")
    p = p.subs(cimg, sol[0])
    fp = sp.simplify((sp.diff(p, t) + drift_m * sp.diff(p, x_pos) - sigma2 / 2 * sp.diff(p, x_pos, 2))
                     / gauss(x_pos - drift_m * t))
    if fp != 0:
        raise DerivationError(f"image density violates the Fokker-Planck equation: {fp}")
    survival = sp.integrate(p, (x_pos, -sp.oo, a_lvl), conds="none")
    cdf = sp.simplify(1 - survival)
    dens = sp.simplify(sp.diff(cdf, t))
    return p, cdf, dens


@lru_cache(maxsize=None)
def scipy_invgauss_parameters() -> tuple[sp.Expr, sp.Expr]:
    """(mu, scale) of scipy.stats.invgauss for the law of tau (m > 0): mean = mu scale, shape = scale."""
    mom = passage_moments()
    mu_s, scale = sp.symbols("mu_scipy scale", positive=True)
    sol = sp.solve([sp.Eq(mu_s * scale, mom["mean"]), sp.Eq(scale, mom["shape"])], [mu_s, scale], dict=True)
    if len(sol) != 1:
        raise DerivationError(f"invgauss parameters: {sol}")
    return sp.simplify(sol[0][mu_s]), sp.simplify(sol[0][scale])


def law_substitution() -> dict:
    """m = -lambda_1, a = log(eps0/eps) in terms of the model's symbols."""
    return {drift_m: -lam1, a_lvl: sp.log(eps0 / eps)}


def depth_formula() -> sp.Expr:
    """L(eps0, eps, alpha) = ceil(t_alpha / delta): layers of step delta reaching time t_alpha."""
    return sp.ceiling(t_alpha / delta)


# ---------------------------------------------------------------- derivations
@register("lyapunov_spectrum")
def lyapunov_spectrum() -> Derivation:
    """lambda_i = ((d - 1 - 2i) k1 - (d-1) k0)/2, i = 1..d-1, from the k-volume growth."""
    dv = Derivation(
        "lyapunov_spectrum", "Lyapunov spectrum of the noise-only flow",
        ["noise-only SDE $dX = c(X)\\,dt + P_X W(dt, X)$, tangent flow $dV = Dc\\, V\\,dt + D(P_x W)[V]$ (Itô)",
         "$k_0 = K(1)$ and $k_1 = K'(1)$ finite; frame $x = e_1$, orthonormal tangent vectors $V^j = e_{j+1}$",
         "isotropy: the drift of $\\log |V^1 \\wedge \\dots \\wedge V^k|$ is a constant, its almost-sure growth rate",
         "General $d$ and $k$: in this frame every matrix in Itô's formula maps $\\operatorname{span}(e_1, \\dots, "
         "e_{k+1})$ to itself and is a multiple of the identity, with a factor free of $d$, on its orthogonal "
         "complement, so for fixed $k$ the drift is a trace, affine in $d$. The second-order expansion of "
         "$\\log\\det$ involves the columns one and two at a time, so $S(d, k) = k A(d) + \\binom{k}{2} B(d)$ "
         "with $A$, $B$ affine in $d$: the smallest cases determine them, and every $2 \\le d \\le 6$, "
         "$1 \\le k \\le d - 1$ is computed and agrees"],
        [], None)
    cov, cross = derivative_cross_covariance()
    dv.add("Covariances of the field derivatives for tangent vectors $U$, $V$ with $\\langle U, V\\rangle = c$: "
           "$\\operatorname{Cov}(DW[U], DW[V])$ and $\\operatorname{Cov}(W(x), DW[V])$ per component", sp.Tuple(cov, cross))
    g = sp.Symbol("S")
    dv.add("Itô drift of $\\log |V^1 \\wedge V^2|$ in $d = 4$ (directional derivatives of "
           "$\\frac12 \\log\\det V^{\\top} V$ along the noise loadings)", sp.Eq(g, log_volume_moments(4, 2)[0]))
    S = volume_growth()
    dv.add("Growth rate of the $k$-volume, $\\lambda_1 + \\dots + \\lambda_k$", sp.Eq(sp.Symbol("S_k"), sp.factor(S)))
    lam = spectrum()
    lam_i = sp.Symbol("lambda_i")
    dv.add("$\\lambda_i = S_i - S_{i-1}$", sp.Eq(lam_i, lam))
    gap = sp.simplify(lam - lam.subs(i_idx, i_idx + 1))
    dv.add("Gap between consecutive exponents (it is $\\ge 0$: the spectrum is descending and equally spaced)", gap)
    agree = sp.simplify(lam.subs(i_idx, 1) - lambda1_tangent())
    if agree != 0:
        raise DerivationError(f"lambda_1 of the spectrum differs from symbolic.lyapunov: {agree}")
    dv.add("$\\lambda_1$ from the spectrum minus $\\lambda_1$ of the Lyapunov derivation", agree)
    total = sp.factor(S.subs(k_idx, d - 1))
    dv.add("Sum of all $d - 1$ exponents (volume growth on the sphere)", total)
    relu = spectrum_relu()
    dv.add("ReLU: $\\lambda_i$ in terms of $d$, $i$, $\\sigma_w$, $\\sigma_b$, $\\sigma_a$", sp.Eq(lam_i, relu))
    dv.result = sp.Eq(lam_i, lam)
    dv.extras.update(lambda_i=sp.sstr(lam), volume_growth=sp.sstr(S), gap=sp.sstr(gap),
                     lambda_i_relu=sp.sstr(relu), sum=sp.sstr(total))
    return dv


@register("log_distance_variance")
def log_distance_variance() -> Derivation:
    """sigma^2 = k0 + k1: log|V_t| (and log|x_1 - x_2| at small distance) is BM(lambda_1, sigma^2)."""
    dv = Derivation(
        "log_distance_variance", "Fluctuations of the log-distance and their variance rate",
        ["tangent flow as for the Lyapunov spectrum; two-point coefficients $b$, $a$ of the two-point motion",
         "small distance: $u = 1 - \\rho \\to 0$, $K(1-u) = k_0 - k_1 u + c\\, u^{1+p}$ with $p > 0$"],
        [], None)
    s2 = variance_rate_tangent()
    dv.add("Squared diffusion of $\\log |V|$ (constant by isotropy), any $d$: as for $\\lambda_1$, every matrix "
           "involved is a $d$-independent multiple of the identity off $\\operatorname{span}(x, V)$, so it is affine "
           "in $d$; $d = 2, 3$ determine it and $d = 4, 5, 6$ agree", sp.Eq(sigma2, s2))
    dv.add("Hence $\\log |V_t| - \\lambda_1 t$ is a continuous martingale with quadratic variation $\\sigma^2 t$: "
           "a Brownian motion (Lévy), and $\\operatorname{Var}(\\log |V_t|) = \\sigma^2 t$ for every $t$")
    dr, df = log_distance_coefficients()
    dv.add("Two tokens, $g = \\log |x_1 - x_2| = \\frac12 \\log(2u)$: the Itô drift as $u \\to 0$", dr)
    dv.add("and the squared diffusion as $u \\to 0$", df)
    if sp.simplify(dr - lambda1_tangent()) != 0 or sp.simplify(df - s2) != 0:
        raise DerivationError(f"two-point small-distance limits {dr}, {df} disagree with the tangent flow")
    dv.add("In the small-distance limit $\\log |x_1 - x_2|$ is a Brownian motion with drift $\\lambda_1$ and "
           "variance rate $\\sigma^2$ (the two routes agree; their differences)",
           sp.Tuple(sp.simplify(dr - lambda1_tangent()), sp.simplify(df - s2)))
    c0, c1, _ = kernel_constants("relu")
    relu = sp.factor(s2.subs({k0: c0, k1: c1}))
    dv.add("ReLU", sp.Eq(sigma2, relu))
    dv.result = sp.Eq(sigma2, s2)
    dv.extras.update(sigma2=sp.sstr(s2), sigma2_relu=sp.sstr(relu))
    return dv


@register("synchronization_time")
def synchronization_time() -> Derivation:
    """First passage of log|x_1 - x_2| from log eps0 to log eps: inverse Gaussian when lambda_1 < 0."""
    dv = Derivation(
        "synchronization_time", "Law of the synchronization time",
        ["small-distance limit: $\\log |x_1 - x_2|$ is a Brownian motion with drift $\\lambda_1$ and variance "
         "rate $\\sigma^2$ (fluctuations of the log-distance)",
         "$X_t = \\log \\varepsilon_0 - \\log |x_1 - x_2|_t$ has drift $m = -\\lambda_1$ and starts at $0$; "
         "$\\tau = \\inf\\{t : X_t = a\\}$ with $a = \\log(\\varepsilon_0 / \\varepsilon) > 0$"],
        [], None)
    phi = laplace_transform()
    dv.add("Laplace transform $E e^{-s\\tau}$, from $m f' + \\frac{\\sigma^2}{2} f'' = s f$, $f(a) = 1$, $f$ bounded "
           "at $-\\infty$",
           phi)
    mom = passage_moments()
    dv.add("$\\lambda_1 < 0$ ($m > 0$): the mean, $-\\frac{d}{ds}$ at $s = 0$", sp.Eq(sp.Symbol("E tau"), mom["mean"]))
    dv.add("the variance", sp.Eq(sp.Symbol("Var tau"), mom["variance"]))
    dv.add("the inverse-Gaussian shape $(\\text{mean})^3 / \\text{variance}$", mom["shape"])
    dv.add("$p_{\\mathrm{reach}} = \\lim_{s \\to 0} E e^{-s\\tau}$ for $m > 0$", mom["p_reach_toward"])
    dv.add("$p_{\\mathrm{reach}}$ for $\\lambda_1 > 0$ ($m < 0$)", mom["p_reach_away"])
    p, cdf, dens = image_density()
    dv.add("Method of images: the killed density (it satisfies the Fokker-Planck equation and vanishes at "
           "$x = a$)", p)
    F = sp.Symbol("F")
    dv.add("$F(t) = P(\\tau \\le t) = 1 - \\int_{-\\infty}^a p\\,dx$", sp.Eq(F, cdf))
    dv.add("the density of $\\tau$ (inverse Gaussian for $m > 0$, defective for $m < 0$)", dens)
    lim = sp.simplify(sp.limit(cdf.subs(drift_m, sp.Symbol("m", negative=True)), t, sp.oo))
    dv.add("$\\lim_{t \\to \\infty} P(\\tau \\le t)$ for $m < 0$ (it equals $p_{\\mathrm{reach}}$)", lim)
    mu_s, scale = scipy_invgauss_parameters()
    dv.add("The law of $\\tau$ as an inverse Gaussian with parameters $(\\mu, s)$, mean $\\mu s$ and shape $s$: "
           "$\\mu$ and $s$",
           sp.Tuple(mu_s, scale))
    sub = law_substitution()
    law = {k: v.subs(sub) for k, v in mom.items()}
    dv.add("In the model's terms ($m = -\\lambda_1$, $a = \\log(\\varepsilon_0 / \\varepsilon)$): the mean, the "
           "variance and $p_{\\mathrm{reach}}$ (for $\\lambda_1 > 0$)",
           sp.Tuple(law["mean"], law["variance"], law["p_reach_away"]))
    dv.add("Depth $L$ for $P(\\tau \\le L\\delta) \\ge 1 - \\alpha$, with $t_\\alpha$ the $(1-\\alpha)$-quantile",
           sp.Eq(sp.Symbol("L"), depth_formula()))
    dv.result = sp.Tuple(sp.Eq(sp.Symbol("E tau"), law["mean"]), sp.Eq(sp.Symbol("Var tau"), law["variance"]),
                         sp.Eq(sp.Symbol("p_reach"), law["p_reach_away"]))
    dv.extras.update(laplace=sp.sstr(phi), mean=sp.sstr(mom["mean"]), variance=sp.sstr(mom["variance"]),
                     cdf=sp.sstr(cdf), invgauss_mu=sp.sstr(mu_s), invgauss_scale=sp.sstr(scale))
    return dv


__all__ = ["lyapunov_spectrum", "log_distance_variance", "synchronization_time", "spectrum",
           "spectrum_relu", "volume_growth", "variance_rate_tangent", "log_distance_coefficients",
           "laplace_transform", "passage_moments", "image_density", "scipy_invgauss_parameters",
           "depth_formula", "law_substitution", "i_idx", "k_idx", "sigma2", "lam1", "drift_m", "a_lvl",
           "eps0", "eps", "t", "s_lap", "alpha_q", "delta", "t_alpha"]
