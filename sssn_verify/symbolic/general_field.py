"""Fields declared by their covariance tensor, and the random quadratic form `rqf` (issue 25.2, first part).

An O(d)-equivariant Gaussian field F on the sphere has

    E[F(x) F(y)^T] = a(rho) I + b(rho) x x^T + c(rho) y x^T + e(rho) x y^T + f(rho) y y^T,   rho = <x, y>

(today's MLP fields: a = K, b = c = e = f = 0).  At y = x the covariance is a(1) I + s1 x x^T with
s1 = (b + c + e + f)(1); the projected noise P_x F(x) has covariance a(1) P_x, so the one-point drift is
gamma x with gamma fixed by |X| = 1 (as in ``two_point``), with a(1) in place of k0.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.general_field``.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from .dissipation import K_minus, _exp_free, _psi, edge_rate, endpoint_certificate, energy_profile, generator_factor
from .symbols import alpha, beta, c_rem, d, k0, k1, Krho, rho, u
from .two_point import (EXPLICIT_DIMS, affine_in_d, ito_moments, projection_drift_gamma, projector, two_point_frame,
                        two_point_coefficients)

#: the tensor's coefficient functions at rho (a_rho, ..., f_rho) and a(1)
a_r, b_r, c_r, e_r, f_r = sp.symbols("a_rho b_rho c_rho e_rho f_rho", real=True)
a_1 = sp.Symbol("a_1", positive=True)
s_1 = sp.Symbol("s_1", real=True)              # (b + c + e + f)(1): drops out (P_x x = 0)
sigma_q = sp.Symbol("sigma_q", positive=True)


def cross_covariance(x: sp.Matrix, y: sp.Matrix) -> sp.Matrix:
    """E[W(x) W(y)^T] = a I + b x x^T + c y x^T + e x y^T + f y y^T (coefficients at rho)."""
    n = x.shape[0]
    return a_r * sp.eye(n) + b_r * x * x.T + c_r * y * x.T + e_r * x * y.T + f_r * y * y.T


def general_noise_explicit(n: int) -> tuple[sp.Expr, sp.Expr]:
    """(drift, squared diffusion) of rho in dimension n for the general tensor, noise part."""
    xs = list(sp.symbols(f"x1:{n + 1}", real=True))
    ys = list(sp.symbols(f"y1:{n + 1}", real=True))
    x, y = two_point_frame(n)
    point = dict(zip(xs + ys, list(x) + list(y)))
    g = sum(p * q for p, q in zip(xs, ys))
    gam = projection_drift_gamma(n).subs(k0, a_1)          # P_x Cov(W(x)) P_x = a(1) P_x
    mu = (gam * x).col_join(gam * y)
    Cxy = cross_covariance(x, y)
    C = sp.BlockMatrix([[a_1 * sp.eye(n) + s_1 * x * x.T, Cxy],
                        [Cxy.T, a_1 * sp.eye(n) + s_1 * y * y.T]]).as_explicit()
    B = sp.diag(projector(x), projector(y))
    drift, diffusion = ito_moments(g, xs + ys, point, mu, B * C * B.T)
    return sp.simplify(drift), sp.factor(sp.simplify(diffusion))


@lru_cache(maxsize=None)
def general_two_point_coefficients() -> tuple[sp.Expr, sp.Expr]:
    """(b, a): drift and squared diffusion of rho for the general tensor, any d."""
    drifts, diffs = {}, {}
    for n in EXPLICIT_DIMS:
        drifts[n], diffs[n] = general_noise_explicit(n)
    b = sp.collect(affine_in_d(drifts, "general drift of rho"), [a_r, a_1, c_r])
    a = sp.factor(affine_in_d(diffs, "general diffusion of rho"))
    return b, a


@lru_cache(maxsize=None)
def special_case_residual() -> tuple[sp.Expr, sp.Expr]:
    """General coefficients at b = c = e = f = 0, a(1) = k0, a(rho) = K(rho) minus ``two_point``'s."""
    b, a = general_two_point_coefficients()
    _, b0, a0 = two_point_coefficients()
    sub = {b_r: 0, c_r: 0, e_r: 0, f_r: 0, a_1: k0, a_r: Krho}
    res = (sp.expand(b.subs(sub) - b0), sp.expand(a.subs(sub) - a0))
    if res != (0, 0):
        raise DerivationError(f"general tensor does not reduce to the K(rho) I case: {res}")
    return res


def rqf_covariance_explicit(n: int) -> sp.Matrix:
    """E[(Q x)(Q y)^T] for Q = S (B + B^T)/2 in dimension n, x, y symbolic vectors (E[B_ik B_jl] = d_ij d_kl)."""
    xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    ys = sp.Matrix(sp.symbols(f"y1:{n + 1}", real=True))
    Bs = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"B{i}{j}", real=True))
    Q = sigma_q * (Bs + Bs.T) / 2
    prod = (Q * xs) * (Q * ys).T
    # the expectation of a quadratic form in independent standard normals: keep the squares, mean 1
    out = sp.zeros(n, n)
    entries = list(Bs)
    for i in range(n):
        for j in range(n):
            poly = sp.Poly(sp.expand(prod[i, j]), *entries)
            val = 0
            for mon, coef in poly.terms():
                if all(p in (0, 2) for p in mon):
                    val += coef                       # E[B^2] = 1; mixed and odd monomials have mean 0
            out[i, j] = sp.expand(val)
    return out


@lru_cache(maxsize=None)
def rqf_tensor() -> dict:
    """The covariance tensor of the rqf field: solve for (a, b, c, e, f) in d = 2, 3, 4."""
    sol = None
    for n in (2, 3, 4):
        xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
        ys = sp.Matrix(sp.symbols(f"y1:{n + 1}", real=True))
        r = (xs.T * ys)[0]
        A, Bc, Cc, E, Fc = sp.symbols("A Bc Cc E Fc")
        ansatz = A * r * sp.eye(n) + Bc * xs * xs.T + Cc * ys * xs.T + E * xs * ys.T + Fc * ys * ys.T
        # the coefficient functions of rqf are polynomial of degree <= 1 in rho: a = A rho, the others constants
        diff = sp.expand(rqf_covariance_explicit(n) - ansatz)
        eqs = []
        for entry in diff:
            eqs += sp.Poly(entry, *(list(xs) + list(ys))).coeffs()
        s = sp.solve(eqs, [A, Bc, Cc, E, Fc], dict=True)
        if len(s) != 1:
            raise DerivationError(f"rqf covariance is not of the tensor form in d={n}: {s}")
        s = s[0]
        if sol is not None and s != sol:
            raise DerivationError(f"rqf tensor depends on d: {s} vs {sol}")
        sol = s
    A, Bc, Cc, E, Fc = sp.symbols("A Bc Cc E Fc")
    return {a_r: sol[A] * rho, b_r: sol[Bc], c_r: sol[Cc], e_r: sol[E], f_r: sol[Fc], a_1: sol[A]}


@lru_cache(maxsize=None)
def rqf_two_point() -> tuple[sp.Expr, sp.Expr]:
    """(b, a) of rho for rqf."""
    b, a = general_two_point_coefficients()
    T = rqf_tensor()
    return sp.factor(b.subs(T)), sp.factor(a.subs(T))


@lru_cache(maxsize=None)
def rqf_lambda1() -> sp.Expr:
    """(1/2) lim_{u -> 0} (drift_u/u - a/(2 u^2)), u = 1 - rho (as lyapunov.lambda1_two_point)."""
    b, a = rqf_two_point()
    b, a = b.subs(rho, 1 - u), a.subs(rho, 1 - u)
    lim = sp.limit(sp.expand(sp.Rational(1, 2) * (-b / u - a / (2 * u**2))), u, 0, "+")
    return sp.simplify(lim)


@lru_cache(maxsize=None)
def rqf_projective() -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr, sp.Expr]:
    """(B_r, A_r, L f / f for f = 1 - rho^2, its sup over rho in [0, 1), projective exponent) for rqf."""
    b, a = rqf_two_point()
    B, A = ito_moments(rho**2, [rho], {}, sp.Matrix([b]), sp.Matrix([[a]]))
    B, A = sp.factor(B), sp.factor(A)
    if sp.simplify(B.subs(rho, -rho) - B) != 0 or sp.simplify(A.subs(rho, -rho) - A) != 0:
        raise DerivationError("rqf projective coefficients are not even in rho")
    ratio = sp.simplify(-B / (1 - rho**2))
    w = sp.Symbol("w", nonnegative=True)            # rho = sqrt(w), w in [0, 1)
    dr = sp.simplify(sp.diff(ratio, rho))
    # the ratio is nondecreasing on [0, 1) (its derivative is >= 0 there), so the sup is the limit rho -> 1
    if not sp.simplify(dr.subs(rho, sp.sqrt(w))).is_nonnegative:
        raise DerivationError(f"rqf projective ratio: monotonicity not shown: {dr}")
    sup = sp.limit(ratio, rho, 1, "-")
    v = 1 - (1 - u)**2
    Bu, Au = B.subs(rho, 1 - u), A.subs(rho, 1 - u)
    lam = sp.simplify(sp.limit(sp.expand(sp.simplify(sp.Rational(1, 2) * (-Bu / v - Au / (2 * v**2)))), u, 0, "+"))
    return B, A, ratio, sup, lam


# ---------------------------------------------------------------- the energy rate lambda_bar for the general tensor
#: a'(1) and c(1): the tensor's coefficients near the edge, a(1 - u) = a_1 - a'(1) u + o(u), c(1 - u) = c(1) + o(1)
a1_prime = sp.Symbol("a'_1", real=True)
c_1 = sp.Symbol("c_1", real=True)
#: R_0(-1), the beta = 0 ratio at antipodal tokens (a(-1), c(-1) are other values than a_rho, c_rho: a symbol)
R0_minus = sp.Symbol("R_0(-1)", real=True)
lambda_edge_sym = sp.Symbol("lambda_edge", real=True)


@lru_cache(maxsize=None)
def general_energy_generator() -> dict:
    """The noise part of the two-point generator for the general tensor acting on a function f of rho
    (Itô's formula with ``general_two_point_coefficients``), and its ratios on the pair energies of
    ``dissipation.energy_profile``: R = L2 f_beta / f_beta (beta > 0) and R0 = L2 f_0 / f_0 = -b/(1 - rho)
    (f_0 = 1 - rho).  As for the K(rho) I fields, R = psi(x) (R0 - beta T) with x = beta (1 - rho),
    psi(x) = x/(e^x - 1) and T = a/(2 (1 - rho)) (a has the factor 1 - rho^2, so T is polynomial in the
    coefficients and vanishes at rho = -1); the residual of that factorization is checked to be 0.
    Keys: generator, R, R0, T, beta (the positive symbol of R)."""
    b, a = general_two_point_coefficients()
    fn = sp.Function("f")
    gen, _ = ito_moments(fn(rho), [rho], {}, sp.Matrix([b]), sp.Matrix([[a]]))
    out = {"generator": sp.collect(sp.expand(gen), [sp.diff(fn(rho), rho), sp.diff(fn(rho), rho, 2)], sp.factor)}
    for positive, key in ((True, "R"), (False, "R0")):
        f, b_ = energy_profile(positive)
        out[key] = sp.simplify(gen.subs(fn(rho), f).doit() / f)
        if positive:
            out["beta"] = b_
    b_ = out["beta"]
    T = sp.factor(sp.cancel(a / (2 * (1 - rho))))
    if sp.denom(T) != 1 or sp.expand(T.subs(rho, -1)) != 0:
        raise DerivationError(f"general tensor: a/(2 (1 - rho)) is not a polynomial vanishing at rho = -1: {T}")
    out["T"] = T
    res = _exp_free(out["R"] - _psi(b_ * (1 - rho)) * (out["R0"] - b_ * T), b_)
    if res != 0:
        raise DerivationError(f"general tensor: L2 f / f != psi(x) (R0 - beta T): residual {res}")
    return out


@lru_cache(maxsize=None)
def general_edge_rate() -> sp.Expr:
    """lambda_edge = lim_{rho -> 1} L2 f / f for the general tensor (the same for beta > 0 and beta = 0), with
    a(1 - u) = a_1 - a'(1) u + c u^(1 + alpha) and c(1 - u) = c(1) + c' u^alpha' (alpha, alpha' > 0: non-analytic
    coefficients allowed, as in ``dissipation.edge_rate``)."""
    alpha_c, c_c = sp.Symbol("alpha_c", positive=True), sp.Symbol("c_c", real=True)
    g = general_energy_generator()
    b_ = g["beta"]
    near = {a_r: a_1 - a1_prime * u + c_rem * u**(1 + alpha), c_r: c_1 + c_c * u**alpha_c}
    r0 = sp.expand(g["R0"].subs(near).subs(rho, 1 - u))
    # beta > 0 through the checked factorization R = psi(beta u) (R0 - beta T): psi -> 1 and T(1) = 2 (a_1 - a(1)) = 0
    r = sp.expand(_psi(b_ * u) * (g["R0"] - b_ * g["T"]).subs(near).subs(rho, 1 - u))
    lims = [sp.expand(sp.limit(e, u, 0, "+")) for e in (r, r0)]
    if sp.simplify(lims[0] - lims[1]) != 0 or any(x.has(c_rem, alpha, c_c, alpha_c, sp.oo, b_) for x in lims):
        raise DerivationError(f"general edge rate: beta > 0 and beta = 0 disagree or depend on the remainder: {lims}")
    return sp.collect(lims[1], [a_1, a1_prime, c_1], sp.factor)


#: the K(rho) I fields inside the general tensor: b = c = e = f = 0, a = K, a(1) = k0 (a'(1) = k1, c(1) = 0)
def _mlp_substitution() -> dict:
    return {b_r: 0, c_r: 0, e_r: 0, f_r: 0, a_1: k0, a_r: Krho, a1_prime: k1, c_1: 0}


@lru_cache(maxsize=None)
def general_energy_mlp_residual() -> sp.Tuple:
    """The general tensor's energy results at b = c = e = f = 0, a = K, a(1) = k0, a'(1) = k1 minus today's
    (``symbolic.dissipation``): the ratios for beta > 0 and beta = 0, the factor T, the edge rate and the value
    of R0 at rho = -1 (in K(-1): -(d - 1)(k0 + K(-1))/2 = -(d - 1) E of ``endpoint_certificate``).  All 0."""
    g, sub = general_energy_generator(), _mlp_substitution()
    cert = endpoint_certificate()
    res = []
    for positive, key in ((True, "R"), (False, "R0")):
        f, b_ = energy_profile(positive)
        today = sp.diff(f, rho) * generator_factor(positive).subs(beta, b_) / f
        res.append(sp.simplify(g[key].subs(sub) - today))
    res.append(sp.simplify(g["T"].subs(sub) - cert["T"]))
    res.append(sp.expand(general_edge_rate().subs(sub) - edge_rate()))
    res.append(sp.simplify(g["R0"].subs(sub).subs(Krho, K_minus).subs(rho, -1) + (d - 1) * cert["E"]))
    out = sp.Tuple(*res)
    if any(r != 0 for r in out):
        raise DerivationError(f"general energy rate does not reduce to the K(rho) I case: {out}")
    return out


@lru_cache(maxsize=None)
def general_endpoint_certificate() -> dict:
    """``dissipation.endpoint_certificate`` for the general tensor.  With w = (1 + rho) psi(x)/2,
    B = psi(x) (1 - rho)/2 - (1 - w) psi(2 beta) (>= 0, shown there), the chord defect
    C0 = (1 + rho)/2 lambda_edge + (1 - rho)/2 R0(-1) - R0 and the value at rho = -1,
    L2 f / f|_{-1} = psi(2 beta) R0(-1) (T(-1) = 0), the identity

        w lambda_edge + (1 - w) L2 f / f|_{-1} - L2 f / f = psi C0 + beta psi T - R0(-1) B

    holds for every tensor (residual 0).  So sup_{[-1, 1)} L2 f / f = max(lambda_edge, L2 f / f|_{-1}) whenever
    C0 >= 0, T >= 0 and R0(-1) <= 0 on [-1, 1] (for the K(rho) I fields: Schoenberg's chords, |K| <= k0 and
    K(-1) >= -k0).  Keys: anti, weight, C0, B, residuals."""
    g = general_energy_generator()
    b_ = g["beta"]
    psi = _psi(b_ * (1 - rho))
    anti = _psi(2 * b_) * R0_minus
    res_anti = _exp_free(g["R"].subs(rho, -1) - _psi(2 * b_) * g["R0"].subs(rho, -1), b_)
    w = (1 + rho) * psi / 2
    C0 = (1 + rho) / 2 * lambda_edge_sym + (1 - rho) / 2 * R0_minus - g["R0"]
    B = psi * (1 - rho) / 2 - (1 - w) * _psi(2 * b_)
    gap = w * lambda_edge_sym + (1 - w) * anti - g["R"]
    res_gap = _exp_free(gap - (psi * C0 + b_ * psi * g["T"] - R0_minus * B), b_)
    residuals = sp.Tuple(res_anti, res_gap)
    if any(r != 0 for r in residuals):
        raise DerivationError(f"general endpoint certificate: nonzero residuals {residuals}")
    return dict(anti=anti, weight=w, C0=C0, B=B, residuals=residuals, beta=b_)


def _nonnegative_on_sphere_range(e: sp.Expr) -> bool:
    """True when sympy decides e(rho) >= 0 for rho in (-1, 1] (hence on [-1, 1] for a polynomial, by continuity):
    rho = (1 - t)/(1 + t) maps t >= 0 onto (-1, 1]; the factored rational function of t is then judged by sympy's
    assumptions (t >= 0, sigma_q > 0)."""
    t = sp.Symbol("t", nonnegative=True)
    return sp.factor(sp.cancel(e.subs(rho, (1 - t) / (1 + t)))).is_nonnegative is True


@lru_cache(maxsize=None)
def rqf_energy_rate() -> dict:
    """rqf: L2 f_beta / f_beta in closed form (beta > 0 and beta = 0), the certificate's three conditions proved for
    its tensor (rqf is not a positive-definite dot-product kernel, so ``dissipation.schoenberg_chord`` does not
    apply; its coefficients are polynomial in rho and the conditions are decided directly), hence
    lambda_bar(beta) = max(lambda_edge, value at rho = -1), and which one it is.  Keys: R, R0, T, edge, R0_minus,
    anti, C0, lambda_bar, at_edge (the supremum is the rho -> 1 limit), critical0 (the critical points of R0 in
    (-1, 1), a cross-check by solving R0' = 0)."""
    g, cert, T = general_energy_generator(), general_endpoint_certificate(), rqf_tensor()
    b_ = g["beta"]
    R = sp.factor(g["R"].subs(T))
    R0 = sp.factor(g["R0"].subs(T))
    Tr = sp.factor(g["T"].subs(T))
    edge = sp.factor(general_edge_rate().subs({a_1: T[a_1], a1_prime: sp.diff(T[a_r], rho).subs(rho, 1),
                                               c_1: T[c_r].subs(rho, 1)}))
    if sp.simplify(edge - sp.limit(R0, rho, 1, "-")) != 0 or sp.simplify(edge - sp.limit(R, rho, 1, "-")) != 0:
        raise DerivationError(f"rqf edge rate {edge} is not the limit of its ratio")
    r0m = sp.simplify(R0.subs(rho, -1))                  # the coefficients are polynomials: their value at -1
    anti = sp.simplify(cert["anti"].subs(R0_minus, r0m))
    if _exp_free(R.subs(rho, -1) - anti, b_) != 0:
        raise DerivationError(f"rqf: the value at rho = -1 is not {anti}")
    C0 = sp.factor(cert["C0"].subs(T).subs({lambda_edge_sym: edge, R0_minus: r0m}))
    conditions = {"C0 >= 0": _nonnegative_on_sphere_range(C0), "T >= 0": _nonnegative_on_sphere_range(Tr),
                  "R0(-1) <= 0": bool((-r0m).is_nonnegative)}
    if not all(conditions.values()):
        raise DerivationError(f"rqf: the endpoint certificate's conditions are not shown: {conditions}, "
                              f"C0 = {C0}, T = {Tr}, R0(-1) = {r0m}")
    lam = sp.simplify(sp.Max(edge, anti))
    at_edge = sp.simplify(edge - anti).is_positive
    if lam.has(sp.Max) or at_edge is not True:
        raise DerivationError(f"rqf: max(edge, antipodal) = {lam} not decided")
    crit = [c for c in sp.solve(sp.diff(R0, rho), rho) if c.is_real and -1 < c < 1]
    if any(sp.simplify(R0.subs(rho, c) - edge).is_negative is not True for c in crit):
        raise DerivationError(f"rqf: a critical point of R0 reaches the edge value: {crit}")
    return dict(R=R.subs(b_, beta), R0=R0, T=Tr, edge=edge, R0_minus=r0m, anti=anti.subs(b_, beta), C0=C0,
                lambda_bar=lam, at_edge=True, critical0=sp.Tuple(*crit), conditions=conditions)


def one_point_explicit(n: int) -> tuple[sp.Expr, sp.Expr]:
    """(drift, squared diffusion) of s = <X, e> (e a fixed unit vector at <x, e> = rho) in dimension n: the
    projected noise has covariance a(1) P_x and the drift is gamma x (the one-point motion)."""
    xs = list(sp.symbols(f"x1:{n + 1}", real=True))
    x, e = two_point_frame(n)
    point = dict(zip(xs, x))
    gam = projection_drift_gamma(n).subs(k0, a_1)
    drift, diffusion = ito_moments(sum(p * q for p, q in zip(xs, e)), xs, point, gam * x, a_1 * projector(x))
    return sp.simplify(drift), sp.factor(sp.simplify(diffusion))


@lru_cache(maxsize=None)
def one_point_coefficients() -> tuple[sp.Expr, sp.Expr]:
    """(drift, squared diffusion) of <X, e> at <X, e> = rho, any d: those of Brownian motion on the sphere at
    rate a(1)/2 (generator (a(1)/2) Laplace-Beltrami), for every tensor."""
    drifts, diffs = {}, {}
    for n in EXPLICIT_DIMS[:4]:
        drifts[n], diffs[n] = one_point_explicit(n)
    return sp.factor(affine_in_d(drifts, "one-point drift")), sp.factor(affine_in_d(diffs, "one-point diffusion"))


@lru_cache(maxsize=None)
def rqf_one_point() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """rqf: (d/dt E<X, e> at <X, e> = rho, d/dt E<X, e>^2 at rho, the second one's stationary value)."""
    b, a = one_point_coefficients()
    b, a = b.subs(a_1, rqf_tensor()[a_1]), a.subs(a_1, rqf_tensor()[a_1])
    second = sp.factor(sp.expand(2 * rho * b + a))
    stationary = sp.solve(second.subs(rho**2, sp.Symbol("m2")), sp.Symbol("m2"))
    if len(stationary) != 1:
        raise DerivationError(f"rqf one-point second moment: no unique fixed point: {stationary}")
    return sp.factor(b), second, stationary[0]


@lru_cache(maxsize=None)
def rqf_log_sin_rate() -> sp.Expr:
    """rqf: the generator of the two-point motion on log sin(theta) = (1/2) log(1 - rho^2), which must be free
    of rho (then E log sin(theta_t) = log sin(theta_0) + rate t exactly, from any start)."""
    b, a = rqf_two_point()
    drift, _ = ito_moments(sp.log(1 - rho**2) / 2, [rho], {}, sp.Matrix([b]), sp.Matrix([[a]]))
    rate = sp.simplify(drift)
    if rate.has(rho):
        raise DerivationError(f"rqf: the drift of log sin(theta) depends on rho: {rate}")
    return rate


@lru_cache(maxsize=None)
def rqf_atanh_coefficients() -> tuple[sp.Expr, sp.Expr]:
    """rqf in y = atanh(rho) (rho^2 -> 1 is |y| -> oo): (drift as a function of y, squared diffusion)."""
    b, a = rqf_two_point()
    y = sp.Symbol("y", real=True)
    drift, diffusion = ito_moments(sp.atanh(rho), [rho], {}, sp.Matrix([b]), sp.Matrix([[a]]))
    drift, diffusion = sp.simplify(drift), sp.simplify(diffusion)
    drift_y = sp.simplify(drift.subs(rho, sp.tanh(y)))
    if diffusion.has(rho) or drift_y.has(rho):
        raise DerivationError(f"rqf: y = atanh(rho) does not give a constant diffusion: {drift}, {diffusion}")
    return drift_y, diffusion


@lru_cache(maxsize=None)
def rqf_log_distance() -> tuple[sp.Expr, sp.Expr]:
    """rqf: small-distance limits (u = 1 - rho -> 0) of the Ito drift and squared diffusion of
    log|x_1 - x_2| = (1/2) log(2u) (as ``spectrum.log_distance_coefficients``); the drift must equal
    ``rqf_lambda1``, the squared diffusion is sigma^2 of the log-distance Brownian motion."""
    b, a = rqf_two_point()
    drift, diffusion = ito_moments(sp.log(2 * (1 - rho)) / 2, [rho], {}, sp.Matrix([b]), sp.Matrix([[a]]))
    out = []
    for e in (drift, diffusion):
        lim = sp.limit(sp.expand(sp.simplify(e.subs(rho, 1 - u))), u, 0, "+")
        if lim.has(sp.oo, -sp.oo, sp.nan, sp.zoo, u):
            raise DerivationError(f"rqf log-distance small-distance limit failed: {lim}")
        out.append(sp.factor(lim))
    if sp.simplify(out[0] - rqf_lambda1()) != 0:
        raise DerivationError(f"rqf: the log-distance drift {out[0]} differs from lambda_1 {rqf_lambda1()}")
    return out[0], out[1]


#: the rqf spectrum is fitted on explicit dimensions 2..RQF_SPECTRUM_DIM (every k < d) and verified there
RQF_SPECTRUM_DIM = 5


def rqf_tangent_loadings(n: int, k: int) -> tuple[sp.Matrix, list[sp.Matrix], sp.Matrix]:
    """(mu, [L_m], V0) of k orthonormal tangent vectors V_j = e_{j+1} at x = e_1 under the rqf flow
    dX = gamma X dt + P_X dQ X: the derivative of P_x Q x along V is linear in the d^2 independent entries
    B_ab of Q = S (B + B^T)/2, one loading per entry; the drift is gamma V (gamma at a(1))."""
    xs = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    x = sp.Matrix([1] + [0] * (n - 1))
    V0 = sp.Matrix.hstack(*[sp.Matrix([1 if i == j + 1 else 0 for i in range(n)]) for j in range(k)])
    mu = projection_drift_gamma(n).subs(k0, rqf_tensor()[a_1]) * V0
    loads = []
    for a in range(n):
        for b in range(n):
            E = sp.zeros(n, n)
            E[a, b] += 1
            E[b, a] += 1
            Q = sigma_q * E / 2
            field = Q * xs - (xs.T * Q * xs)[0] * xs
            loads.append(field.jacobian(xs).subs(dict(zip(xs, x))) * V0)
    return mu, loads, V0


@lru_cache(maxsize=None)
def rqf_spectrum() -> tuple[sp.Expr, sp.Expr]:
    """(S(d, k) = lambda_1 + ... + lambda_k, lambda_i) of the rqf flow: the Ito drift of log|V^1 ^ ... ^ V^k| in
    d = 2..RQF_SPECTRUM_DIM, fitted as k A(d) + k(k-1)/2 B(d) and verified at every (d, k) (as ``spectrum``)."""
    from .spectrum import fit_volume_growth, i_idx, k_idx, volume_moments
    vals = {(n, kk): volume_moments(*rqf_tangent_loadings(n, kk))[0]
            for n in range(2, RQF_SPECTRUM_DIM + 1) for kk in range(1, n)}
    S = sp.factor(fit_volume_growth(vals))
    lam = sp.factor(sp.expand(S.subs(k_idx, i_idx) - S.subs(k_idx, i_idx - 1)))
    if sp.simplify(lam.subs(i_idx, 1) - rqf_lambda1()) != 0:
        raise DerivationError(f"rqf: the top exponent of the spectrum {lam} is not lambda_1 {rqf_lambda1()}")
    return S, lam


def _gaussian_quadratic_mean(expr: sp.Expr, entries: list) -> sp.Expr:
    """E[expr] for a polynomial of degree <= 2 in independent standard normals `entries`."""
    poly = sp.Poly(sp.expand(expr), *entries)
    return sp.expand(sum(c for m, c in poly.terms() if all(p in (0, 2) for p in m)))


@lru_cache(maxsize=None)
def stratonovich_drift() -> sp.Expr:
    """gamma in the Ito drift gamma x of the Stratonovich SDE dX = -P_X o dQ_t X (Engel-Shalova), Q_t the
    symmetric matrix Brownian motion with increments S (B + B^T)/2 sqrt(dt): (1/2) E[DV(x)[V(x)]] with
    V(x) = -P_x Q x, at x = e_1 (the law of Q is conjugation invariant) in d = 2, 3, 4, affine in d."""
    vals = {}
    for n in (2, 3, 4):
        xs = list(sp.symbols(f"x1:{n + 1}", real=True))
        X = sp.Matrix(xs)
        Bs = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"B{i}{j}", real=True))
        Q = sigma_q * (Bs + Bs.T) / 2
        V = -(Q * X - (X.T * Q * X)[0] * X)
        corr = (V.jacobian(xs) * V).subs(dict(zip(xs, [1] + [0] * (n - 1))))
        mean = [_gaussian_quadratic_mean(c, list(Bs)) for c in corr]
        if any(m != 0 for m in mean[1:]):
            raise DerivationError(f"Stratonovich correction is not along x in d={n}: {mean}")
        vals[n] = mean[0] / 2
    return sp.factor(affine_in_d(vals, "Stratonovich correction"))


@register("general_field")
def general_field() -> Derivation:
    """The two-point motion of a field declared by its covariance tensor; the random quadratic form rqf."""
    dv = Derivation(
        "general_field", "Fields declared by their covariance tensor; the random quadratic form",
        ["$E[W(x) W(y)^{\\top}] = a(\\rho) I + b(\\rho) x x^{\\top} + c(\\rho) y x^{\\top} + e(\\rho) x y^{\\top} "
         "+ f(\\rho) y y^{\\top}$, $\\rho = \\langle x, y\\rangle$ ($O(d)$-equivariant); $a_1 = a(1)$",
         "$dX = \\gamma X\\,dt + P_X W(dt, X)$ with $\\gamma$ fixed by $|X| = 1$; the projected one-point noise has "
         "covariance $a_1 P_x$",
         "rqf: $W(x) = Q x$ per unit time with $Q = S (B + B^{\\top})/2$, $B$ with i.i.d. standard Gaussian entries, "
         "the same for all tokens; $S = \\sigma_q$"],
        [], None)
    b, a = general_two_point_coefficients()
    bs, as_ = sp.Symbol("b"), sp.Symbol("a")
    dv.add("Itô's formula for $\\rho$ in $d = 2, \\dots, 7$ (affine in $d$, as for the two-point motion): the drift",
           sp.Eq(bs, b))
    dv.add("and the squared diffusion coefficient", sp.Eq(as_, a))
    res = special_case_residual()
    dv.add("Special case $b = c = e = f = 0$, $a = K$, $a_1 = k_0$: minus the two-point coefficients of the "
           "$K(\\rho) I$ fields (symbol for symbol)", sp.Tuple(*res))
    T = rqf_tensor()
    dv.add("rqf: $E[(Qx)(Qy)^{\\top}]$ from $E[B_{ik} B_{jl}] = \\delta_{ij}\\delta_{kl}$ in $d = 2, 3, 4$, matched "
           "to the tensor form: $(a, b, c, e, f)$", sp.Tuple(T[a_r], T[b_r], T[c_r], T[e_r], T[f_r]))
    rb, ra = rqf_two_point()
    dv.add("rqf two-point motion: drift and squared diffusion of $\\rho$ (free of $d$)", sp.Tuple(rb, ra))
    ob, oa = one_point_coefficients()
    dv.add("One-point motion: $s = \\langle X, e\\rangle$ at $s = \\rho$ for a fixed unit $e$ (the projected noise "
           "$a_1 P_x$ and the drift $\\gamma x$): drift and squared diffusion, those of Brownian motion on the sphere "
           "(generator $\\tfrac{a_1}{2} \\Delta_{S^{d-1}}$)", sp.Tuple(ob, oa))
    dv.add("rqf: the rate $a_1/2$ of that Brownian motion", T[a_1] / 2)
    m1, m2, stat = rqf_one_point()
    dv.add("rqf: $\\tfrac{d}{dt} E\\langle X, e\\rangle$ and $\\tfrac{d}{dt} E\\langle X, e\\rangle^2$ at "
           "$\\langle X, e\\rangle = \\rho$; the second vanishes where $\\langle X, e\\rangle^2$ equals the second "
           "moment of the uniform law", sp.Tuple(m1, m2, stat))
    strat = stratonovich_drift()
    gam = sp.factor(affine_in_d({n: projection_drift_gamma(n).subs(k0, T[a_1]) for n in (2, 3, 4)},
                                "rqf projection drift"))
    if sp.simplify(strat - gam) != 0:
        raise DerivationError(f"the Stratonovich correction {strat} differs from the projection drift {gam}")
    dv.add("The Stratonovich SDE of Engel and Shalova, $dX = -P_X \\circ dQ_t X$: its Itô correction "
           "$\\tfrac12 E[DV(x)[V(x)]]$, $V(x) = -P_x Q x$, is $\\gamma x$ with $\\gamma$ equal to the "
           "projection drift of the layer ($\\gamma$ at $a_1$); both", sp.Tuple(strat, gam))
    l1 = rqf_lambda1()
    L1 = sp.Symbol("lambda_1")
    dv.add("rqf top Lyapunov exponent from the small-distance limit "
           "$\\tfrac12 \\lim_{u \\to 0} (\\mathrm{drift}_u / u - a/(2u^2))$", sp.Eq(L1, l1))
    ld, lv = rqf_log_distance()
    S2 = sp.Symbol("sigma^2")
    dv.add("Small-distance limits of the drift and squared diffusion of $\\log|x_1 - x_2| = \\tfrac12 \\log(2u)$ "
           "(the drift equals $\\lambda_1$): $\\log|x_1 - x_2|$ is a Brownian motion with drift $\\lambda_1$ and "
           "variance $\\sigma^2$ per unit time, as for the MLP fields", sp.Tuple(ld, sp.Eq(S2, lv)))
    Sk, lam_i = rqf_spectrum()
    dv.add("rqf tangent flow: the Itô drift of $\\log|V^1 \\wedge \\dots \\wedge V^k|$ (one noise loading per entry "
           "$B_{ab}$, the drift $\\gamma V$) in $d = 2, \\dots, %d$, fitted as $k A + \\binom{k}{2} B$ and verified at "
           "every $k < d$: the sum of the top $k$ exponents, and the exponents $\\lambda_i = S(i) - S(i-1)$ (free "
           "of $d$; $\\lambda_1$ as above)" % RQF_SPECTRUM_DIM,
           sp.Tuple(sp.Eq(sp.Symbol("S_k"), Sk), sp.Eq(sp.Symbol("lambda_i"), lam_i)))
    B, A, ratio, sup, lam = rqf_projective()
    dv.add("The field is odd ($Q(-x) = -Qx$): the law of $r = \\rho^2$, drift and squared diffusion", sp.Tuple(B, A))
    dv.add("$L f / f$ for $f = 1 - r$; its derivative is $\\ge 0$ on $[0, 1)$, so its supremum is the limit $\\rho \\to 1$", ratio)
    ls = rqf_log_sin_rate()
    dv.add("The generator on $\\log \\sin\\theta = \\tfrac12 \\log(1 - \\rho^2)$ is free of $\\rho$: "
           "$E \\log\\sin\\theta_t = \\log\\sin\\theta_0 + $ this rate $\\times t$ from any start", ls)
    yd, ya = rqf_atanh_coefficients()
    dv.add("In $y = \\operatorname{atanh}\\rho$ ($\\rho^2 \\to 1$ is $|y| \\to \\infty$): drift and constant "
           "squared diffusion", sp.Tuple(yd, ya))
    lbp, lp = sp.Symbol("lambdabar_proj"), sp.Symbol("lambda_proj")
    dv.add("Projective energy rate", sp.Eq(lbp, sup))
    dv.add("Projective Lyapunov exponent (as in the projective derivation)", sp.Eq(lp, lam))
    lb = _energy_rate_steps(dv)
    dv.result = sp.Tuple(sp.Eq(L1, l1), sp.Eq(sp.Symbol("lambda_bar"), lb), sp.Eq(lbp, sup), sp.Eq(lp, lam))
    dv.lhs = (r"\text{rqf:}\ \lambda_1 =", r"\bar\lambda(\beta) =", r"\bar\lambda_{\mathrm{proj}} =",
              r"\lambda_{\mathrm{proj}} =")
    dv.extras.update(drift=sp.sstr(b), diffusion=sp.sstr(a), rqf_tensor=sp.sstr(sp.Tuple(*T.values())),
                     rqf_drift=sp.sstr(rb), rqf_diffusion=sp.sstr(ra), rqf_lambda1=sp.sstr(l1),
                     rqf_lambda_bar_proj=sp.sstr(sup), rqf_log_distance_variance=sp.sstr(lv), rqf_spectrum=sp.sstr(lam_i), rqf_lambda_proj=sp.sstr(lam),
                     rqf_one_point_rate=sp.sstr(T[a_1] / 2), rqf_log_sin_rate=sp.sstr(ls),
                     rqf_atanh=(sp.sstr(yd), sp.sstr(ya)), one_point=(sp.sstr(ob), sp.sstr(oa)),
                     general_edge_rate=sp.sstr(general_edge_rate()), rqf_lambda_bar=sp.sstr(lb),
                     rqf_energy_ratio=sp.sstr(rqf_energy_rate()["R"]),
                     rqf_energy_ratio0=sp.sstr(rqf_energy_rate()["R0"]),
                     rqf_lambda_bar_sup_location="rho -> 1 (the edge limit, not attained) for every beta >= 0 and d")
    return dv


def _energy_rate_steps(dv: Derivation) -> sp.Expr:
    """The steps 'lambda_bar(beta) for the general tensor, and for rqf'; returns rqf's lambda_bar."""
    g, cert, rq = general_energy_generator(), general_endpoint_certificate(), rqf_energy_rate()
    b_ = g["beta"]
    dv.add("Energy rate. The noise part of the two-point generator on a function $f$ of $\\rho$ (Itô's formula with "
           "the drift and squared diffusion above; $L_2 f = b f' + a f''/2$)", g["generator"])
    dv.add("On $f_\\beta = e^{\\beta} - e^{\\beta\\rho}$ ($\\beta > 0$) and $f_0 = 1 - \\rho$: the ratios "
           "$L_2 f / f$", sp.Tuple(g["R"].subs(b_, beta), g["R0"]))
    dv.add("As for the $K(\\rho) I$ fields, $L_2 f_\\beta / f_\\beta = \\psi(x) (R_0 - \\beta T)$ with "
           "$x = \\beta(1 - \\rho)$, $\\psi(x) = x/(e^{x} - 1)$, $R_0 = L_2 f_0 / f_0$ and $T = a/(2(1 - \\rho))$, "
           "a polynomial in the coefficients vanishing at $\\rho = -1$ (the factorization's residual is 0)", g["T"])
    dv.add("Edge value $\\lim_{\\rho \\to 1} L_2 f / f$ (the same for $\\beta > 0$ and $\\beta = 0$), with "
           "$a(1 - u) = a_1 - a'_1 u + O(u^{1 + \\alpha})$ and $c(1 - u) = c_1 + O(u^{\\alpha'})$", 
           sp.Eq(lambda_edge_sym, general_edge_rate()))
    dv.add("Special case $b = c = e = f = 0$, $a = K$, $a_1 = k_0$, $a'_1 = k_1$: the ratios ($\\beta > 0$, "
           "$\\beta = 0$), $T$, the edge value and $R_0(-1) + (d - 1)(k_0 + K(-1))/2$ minus those of the dissipation "
           "derivation (symbol for symbol)", general_energy_mlp_residual())
    dv.add("Where the supremum sits, for every tensor. With $w = (1 + \\rho)\\psi(x)/2$, "
           "$B = \\psi(x)(1 - \\rho)/2 - (1 - w)\\psi(2\\beta) \\ge 0$ (the dissipation derivation), the chord "
           "defect $C_0 = \\frac{1 + \\rho}{2}\\lambda_{\\mathrm{edge}} + \\frac{1 - \\rho}{2} R_0(-1) - R_0$ and "
           "$L_2 f / f|_{\\rho = -1} = \\psi(2\\beta) R_0(-1)$, the identity $w\\,\\lambda_{\\mathrm{edge}} + "
           "(1 - w)\\, L_2 f / f|_{\\rho = -1} - L_2 f / f = \\psi C_0 + \\beta\\psi T - R_0(-1) B$: the residuals "
           "(the value at $\\rho = -1$, the identity). So the supremum over $[-1, 1)$ is the larger of "
           "$\\lambda_{\\mathrm{edge}}$ and the value at $\\rho = -1$ whenever $C_0 \\ge 0$, $T \\ge 0$ and "
           "$R_0(-1) \\le 0$; for the $K(\\rho) I$ fields these are Schoenberg's chords, $|K| \\le k_0$ and "
           "$K(-1) \\ge -k_0$, but rqf is no dot-product kernel, so they are shown for its tensor directly",
           cert["residuals"])
    dv.add("rqf: $L_2 f_\\beta / f_\\beta$ ($\\beta > 0$) and $L_2 f_0 / f_0$ (free of $d$)",
           sp.Tuple(rq["R"], rq["R0"]))
    dv.add("rqf: $C_0$, $T$ and $R_0(-1)$; the first two are $\\ge 0$ on $[-1, 1]$ (decided exactly after the "
           "substitution $\\rho = (1 - t)/(1 + t)$, $t \\ge 0$, onto $(-1, 1]$), the third is $0$",
           sp.Tuple(rq["C0"], rq["T"], rq["R0_minus"]))
    dv.add("rqf: the edge value and the value at $\\rho = -1$; the edge is the larger, and $\\beta\\psi T > 0$ "
           "($\\beta > 0$) or $\\psi C_0 > 0$ ($\\beta = 0$) inside, so the supremum is the limit "
           "$\\rho \\to 1$, not attained, for every $\\beta \\ge 0$ and $d$ (a cross-check: the only critical point "
           "of $R_0$ in $(-1, 1)$ is below, a minimum)", sp.Tuple(rq["edge"], rq["anti"], *rq["critical0"]))
    dv.add("rqf: the energy rate (noise only; $\\lambda_1 < 0$ while the mean of $1 - \\rho$ grows near the "
           "diagonal)", sp.Eq(sp.Symbol("lambdabar"), rq["lambda_bar"]))
    return rq["lambda_bar"]


__all__ = ["general_field", "general_two_point_coefficients", "special_case_residual", "rqf_tensor",
           "one_point_coefficients", "rqf_one_point", "stratonovich_drift", "rqf_log_sin_rate", "rqf_atanh_coefficients",
           "rqf_two_point", "rqf_lambda1", "rqf_log_distance", "rqf_spectrum",
           "rqf_tangent_loadings", "rqf_projective", "rqf_covariance_explicit", "sigma_q",
           "general_energy_generator", "general_edge_rate", "general_energy_mlp_residual",
           "general_endpoint_certificate", "rqf_energy_rate", "a1_prime", "c_1", "R0_minus", "lambda_edge_sym",
           "a_r", "b_r", "c_r", "e_r", "f_r", "a_1", "s_1"]
