"""Dissipation rate lambda_bar(beta), the coercivity condition and the attention bound C_att.

Noise part of the two-point generator (from ``two_point``): ``L2 f = b f' + a f''/2`` with
``f(rho) = e^beta - e^{beta rho}`` (``1 - rho`` for beta = 0) and
``lambda_bar(beta) = sup_{rho in [-1,1)} L2 f / f`` (docs/mathematics.md, section 5).

* ``f'' = beta f'``, so ``L2 f / f = (f'/f) N`` with ``N = b + beta a/2``.  With
  ``rho = 1 - u`` and ``K(rho) = k0 - u q`` (``q = (k0 - K)/u -> k1``), ``N/u`` is a
  polynomial in (u, q): the stable form used by ``numeric/rates.py``:
  ``L2 f/f = -e^{-beta u} (N/u) / h(u)``, ``h = (1 - e^{-beta u})/(beta u)`` (h = 1 at beta = 0).
* Edge value (rho -> 1), with ``K(1-u) = k0 - k1 u + c u^{1+alpha}`` (alpha > 0 admits
  ReLU's u^{3/2}): ``lambda_edge = (d-1) k1 - (d-3) k0`` for every beta >= 0.
* Coercivity (``lambda_bar < 0``) needs the edge condition
  ``(d-1) sw^2 E[phi'(U)^2] < (d-3) E[phi(U)^2]``, U ~ N(0, sw^2 + sb^2), and the interior
  condition ``b(rho) + beta a(rho)/2 > 0`` on ``[-1, 1)`` (with a uniform margin).
  At the antipodes ``L2 f/f(-1) = -beta (d-1)(k0 + K(-1))/(e^{2 beta} - 1)`` (derived), which
  tends to 0 as beta grows: lambda_bar(beta) -> 0^- (the bound degrades exponentially in beta).
  Numerically (tests/test_dissipation.py) the ReLU sup sits at the edge for beta = 0
  (d = 2..40, sigma_b/sigma_w in [0, 4]) and, for beta > 0, at the edge or at rho = -1.  For
  ReLU the edge condition is ``d > 3`` and ``sigma_b/sigma_w > sqrt(2/(d-3))``: without
  bias ReLU never dissipates, whatever d.  (Research decision: the seed's "d > 3 suffices"
  is refuted under our conventions; whether the sup sits at the edge is checked
  numerically in the tests and reported by ``regime``.)
* Attention: ``C_att = 2 ||V|| (1 + beta ||K^T Q||)`` in general (operator 2-norms), and
  ``C_att = 0`` when ``V = 0``, or ``V = v I`` with ``v >= 0`` and either ``Q^T K = I`` or
  ``beta = 0`` (then ``dE_beta/dt = -(v/N^2) sum_i Z_i |P_{x_i} A_i|^2 <= 0``).
  What is proved: ``|d(1-rho_ij)/dt| <= C_att (1 - rho_ij)`` for every pair (both signs),
  from the identity ``d(1-rho)/dt = -(1-rho)<S, x_i+x_j> + (1/2)(1+rho)<D, x_i-x_j>``,
  ``|S| <= ||V||``, ``|x_i + x_j| <= 2``, ``|D| <= beta ||V|| ||K^T Q|| |x_i - x_j|``
  (softmax-mean Jacobian ``beta V Cov_p K^T Q``, ``||Cov_p|| <= 1`` for unit vectors),
  ``|x_i - x_j|^2 = 2(1-rho)``, ``1 + rho <= 2``; then ``f >= beta e^{beta rho}(1-rho)``
  turns it into ``dE_beta/dt|_att <= C_att E_beta``.  The bound is attained at beta = 0
  (``V = -I``, two tokens, rho -> 1), so the factor 2 cannot be lowered in general.
* Near synchronization attention adds exactly ``-2 <V x, x>`` to the rate (derived for two
  tokens, any beta and Q^T K), so no uniform rate is below
  ``lambda_edge - 2 lambda_min((V + V^T)/2)``: when that is > 0 the energy cannot dissipate.
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


@register("dissipation")
def dissipation() -> Derivation:
    """lambda_bar edge value (d-1) k1 - (d-3) k0, the stable ratio, and the ReLU formula."""
    dv = Derivation(
        "dissipation", "Dissipation rate $\\bar\\lambda(\\beta)$ of the interaction energy",
        ["$L_2 f = b f' + a f''/2$ with $b$, $a$ the noise coefficients of the two-point motion",
         "$f(\\rho) = e^{\\beta} - e^{\\beta\\rho}$ for $\\beta > 0$, $f(\\rho) = 1 - \\rho$ for $\\beta = 0$",
         "$\\bar\\lambda(\\beta) = \\sup_{\\rho \\in [-1, 1)} L_2 f / f$",
         "near $\\rho = 1$: $K(1-u) = k_0 - k_1 u + c\\, u^{1+\\alpha}$ with $\\alpha > 0$ (this covers non-analytic "
         "kernels)"],
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
    dv.result = sp.Eq(le, lam)
    dv.extras.update(edge_rate=sp.sstr(lam), edge_rate_relu=sp.sstr(relu),
                     stable_numerator=sp.sstr(stable_numerator()))
    return dv


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
           "exponentially in $\\beta$ (numerically, for ReLU, the supremum sits at $\\rho \\to 1$ or at $\\rho = -1$)",
           anti)
    F, A, B, thr, d_set = relu_region()
    dv.add("ReLU: the sign of $\\lambda_{\\mathrm{edge}}$ is the sign of $F(d, t)$, where $t = \\sigma_b / \\sigma_w$", F)
    dv.add("$F < 0$ needs a negative coefficient of $t^2$, i.e. $d$ in", d_set)
    dv.add("and then $t$ above the threshold", thr)
    region = sp.And(d > 3, t_ratio > thr)
    dv.result = region
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


@lru_cache(maxsize=None)
def attention_constant_heads():
    """((beta, S_V, S_VKQ), C_att, bound on the D-term, (sum_h ||V_h||, sum_h ||V_h|| ||K_h^T Q_h||)) for H heads.

    A_i = sum_h V_h m_h(x_i), m_h the softmax mean of head h: |S| <= sum_h ||V_h|| = S_V and
    |D| <= beta sum_h ||V_h|| ||K_h^T Q_h|| |x_i - x_j| = beta S_VKQ |x_i - x_j|, so C_att is the
    max over rho in [-1,1] of [2 S_V (1-rho) + (1/2)(1+rho) beta S_VKQ |x_i-x_j|^2]/(1-rho).
    """
    h = sp.Idx("h")
    nV_h, nKQ_h = sp.IndexedBase("norm_V"), sp.IndexedBase("norm_KtQ")
    sums = (sp.Sum(nV_h[h], (h, 1, H)), sp.Sum(nV_h[h] * nKQ_h[h], (h, 1, H)))
    bound_S = 2 * sum_V * (1 - rho)               # |S| <= S_V, |x_i + x_j| <= 2
    dist2 = 2 * (1 - rho)                         # |x_i - x_j|^2
    bound_D = sp.Rational(1, 2) * (1 + rho) * beta * sum_VKQ * dist2
    worst = sp.maximum(sp.simplify((bound_S + bound_D) / (1 - rho)), rho, sp.Interval(-1, 1))
    return (beta, sum_V, sum_VKQ), sp.factor(worst), bound_D, sums


def attention_constant_one_head() -> sp.Expr:
    """C_att for H heads specialised to H = 1 (the sums over heads evaluated at H = 1)."""
    _, C, _, (sV, sVKQ) = attention_constant_heads()
    one = {sum_V: sV.subs(H, 1).doit(), sum_VKQ: sVKQ.subs(H, 1).doit()}
    return sp.factor(C.subs(one).subs({sp.IndexedBase("norm_V")[1]: norm_V,
                                       sp.IndexedBase("norm_KtQ")[1]: norm_KtQ}))


@lru_cache(maxsize=None)
def attention_constant():
    """((norm_V, norm_KtQ, beta), bound on the D-term, C_att) for one head (Q, K, V).

    C_att = max over rho in [-1,1] of [2 ||V|| (1-rho) + (1/2)(1+rho) beta ||V|| ||K^T Q|| |x_i-x_j|^2]/(1-rho).
    """
    nV, nKQ, b_ = norm_V, norm_KtQ, beta
    bound_S = 2 * nV * (1 - rho)                  # |S| <= ||V||, |x_i + x_j| <= 2
    dist2 = 2 * (1 - rho)                         # |x_i - x_j|^2
    bound_D = sp.Rational(1, 2) * (1 + rho) * b_ * nV * nKQ * dist2
    worst = sp.maximum(sp.simplify((bound_S + bound_D) / (1 - rho)), rho, sp.Interval(-1, 1))
    return (nV, nKQ, b_), bound_D, sp.factor(worst)


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
    drho, claim, residual = attention_rho_identity()
    dv.add("Attention part of $d\\rho_{ij}/dt$ (inner products, any $d$)", drho)
    if residual != 0:
        raise DerivationError("attention identity failed")
    dv.add("Identity $d(1-\\rho)/dt = -(1-\\rho)\\langle S, x_i + x_j\\rangle + \\tfrac12 (1+\\rho)\\langle D, x_i - x_j\\rangle$ "
           "with $S = (A_i + A_j)/2$, $D = A_i - A_j$: the residual", residual)
    (nV, nKQ, b_), bound_D, C = attention_constant()
    dv.add("$|\\text{first term}| \\le 2\\|V\\| (1-\\rho)$; $|D| \\le \\beta \\|V\\| \\|K^{\\top} Q\\| |x_i - x_j|$ (the "
           "Jacobian of the softmax mean is $\\beta V \\operatorname{Cov}_p K^{\\top} Q$ with "
           "$\\|\\operatorname{Cov}_p\\| \\le 1$) and $|x_i - x_j|^2 = 2(1-\\rho)$, so $|\\text{second term}|$ is at most",
           sp.factor(bound_D))
    dv.add("The maximum over $\\rho \\in [-1, 1]$ of the total bound divided by $1 - \\rho$: "
           "$|d(1-\\rho)/dt| \\le C_{\\mathrm{att}} (1 - \\rho)$ with $C_{\\mathrm{att}}$ equal to", C)
    (_, S_V, S_VKQ), C_heads, _, (sum_v, sum_vkq) = attention_constant_heads()
    dv.add("$H$ heads, $A_i = \\sum_h V_h m_h(x_i)$ with $m_h$ the softmax mean of head $h$: $|S| \\le S_V$ and "
           "$|D| \\le \\beta S_{VKQ} |x_i - x_j|$ with", sp.Tuple(sp.Eq(S_V, sum_v), sp.Eq(S_VKQ, sum_vkq)))
    dv.add("The same maximum over $\\rho$ gives $C_{\\mathrm{att}}$ for $H$ heads", C_heads)
    diff_one = sp.simplify(attention_constant_one_head() - C)
    if diff_one != 0:
        raise DerivationError(f"H = 1 does not give the single-head C_att: {diff_one}")
    dv.add("$H = 1$ gives back the one-head constant: the difference is", diff_one)
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
    dv.add("$H$ heads with $V_h = v_h I$, $v_h \\ge 0$ and $Q_h^{\\top} K_h = I$ (or $\\beta = 0$) share the weights "
           "$e^{\\beta\\rho_{ij}}$, so $A_i = (\\sum_h v_h) m_i$ and the identity below holds with $v = \\sum_h v_h$ "
           "(verified for $H = 2$, $N = 2, 3$); a head with $V_h = 0$ contributes nothing: the residual", sp.S.Zero)
    dv.add("$V = v I$, $Q^{\\top} K = I$: $dE_\\beta/dt = -\\frac{v}{N^2} \\sum_i Z_i |P_{x_i} A_i / v|^2$ with "
           "$Z_i = \\sum_j e^{\\beta\\rho_{ij}}$, verified symbolically for $N = 2, 3, 4$ (and $\\beta = 0$; any "
           "normalizations $Z_i$) after the symmetrization $\\sum_{i,j} e^{\\beta\\rho_{ij}} (\\langle x_i', x_j\\rangle + "
           "\\langle x_i, x_j'\\rangle) = 2 \\sum_i \\langle x_i', Z_i A_i / v\\rangle$: the residual", sp.S.Zero)
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
    dv.result = sp.Piecewise((0, sp.Symbol("energy_lowering")), (C_heads, True))
    dv.extras.update(c_att=sp.sstr(C), c_att_heads=sp.sstr(C_heads), near_sync_attention_rate=sp.sstr(ns),
                     zero_when="every head has V_h = 0, or V_h = v_h I with v_h >= 0 and (Q_h^T K_h = I or "
                               "beta = 0)")
    return dv


__all__ = ["dissipation", "coercivity", "attention_bound", "edge_rate", "relu_edge_rate", "relu_region",
           "generator_factor", "stable_numerator", "antipodal_rate", "near_sync_attention_rate", "energy_identity_residual", "beta", "q", "t_ratio"]
