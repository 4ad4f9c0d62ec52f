"""Weak form of the McKean-Vlasov SPDE with common noise (docs/mathematics.md, section 4).

Itô's formula for ``phi(X)`` along ``dX = [P_X A[mu](X) + c(X)] dt + P_X W(dt, X)``, with
``c(x) = gamma x`` from ``two_point`` (gamma = -(d-1) k0/2), gives the one-point generator

    L phi = grad phi . P_x A + (k0/2) Delta_S phi,
    Delta_S phi = tr(P_x Hess(phi) P_x) - (d-1) <x, grad phi>.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.spde``.
"""
from __future__ import annotations

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from functools import lru_cache

from .symbols import beta, d as d_sym, k0
from .two_point import ito_moments, projector, two_point_coefficients

#: the test functionals of the weak form checked numerically (claim ``spde_weak_form``)
KINDS = ("linear", "quadratic", "energy")


class TeX(sp.Symbol):
    """A symbol printed verbatim in LaTeX (for the named pieces of the weak form)."""

    def _latex(self, printer):
        return self.name


def noise_generator(phi: sp.Expr, xs: list, gam) -> sp.Expr:
    """Itô drift of phi(X) for dX = gamma X dt + P_X dW, E dW dW^T = k0 I dt (a function of x)."""
    x = sp.Matrix(xs)
    grad = sp.Matrix([sp.diff(phi, z) for z in xs])
    H = sp.hessian(phi, xs)
    P = sp.eye(len(xs)) - x * x.T
    return (grad.T * (gam * x))[0] + sp.Rational(1, 2) * k0 * (P * H * P.T).trace()


def laplace_beltrami_by_extension(phi: sp.Expr, xs: list) -> sp.Expr:
    """Delta_S phi = Euclidean Laplacian of phi(x/|x|), evaluated on the sphere (|x| = 1)."""
    r = sp.sqrt(sum(z**2 for z in xs))
    ext = phi.subs({z: z / r for z in xs}, simultaneous=True)
    lap = sum(sp.diff(ext, z, 2) for z in xs)
    return lap


def _check_dims(gam, dims=(2, 3, 4, 5)):
    for n in dims:
        xs = list(sp.symbols(f"x1:{n + 1}", real=True))
        tests = [xs[0], xs[0] * xs[1] + xs[-1]**2, xs[0]**3 - 2 * xs[0] * xs[-1] ** 2 + xs[1]]
        # evaluate on a rational point of the sphere
        pt = [sp.Rational(3, 5), sp.Rational(4, 5)] + [0] * (n - 2)
        pt = dict(zip(xs, pt))
        for phi in tests:
            ours = noise_generator(phi, xs, gam.subs(d_sym, n)).subs(pt)
            lb = (k0 / 2 * laplace_beltrami_by_extension(phi, xs)).subs(pt)
            if sp.simplify(ours - lb) != 0:
                raise DerivationError(f"Delta_S check failed in d={n} for {phi}: {ours} vs {lb}")


# ---------------------------------------------------------------- Itô on <mu_t, f> for N tokens
def system_symbols(n_tokens: int, dim: int):
    """Coordinates x[i][c], attention outputs A[i][c] (any values: A[mu] is a given field), the test
    vector a[c], and K[(i, j)] = K(<x_i, x_j>) for i < j (K(1) = k0 on the diagonal)."""
    x = [[sp.Symbol(f"x{i}_{c}", real=True) for c in range(dim)] for i in range(n_tokens)]
    A = [[sp.Symbol(f"A{i}_{c}", real=True) for c in range(dim)] for i in range(n_tokens)]
    a = [sp.Symbol(f"a_{c}", real=True) for c in range(dim)]
    K = {(i, j): sp.Symbol(f"K{i}{j}", real=True) for i in range(n_tokens) for j in range(i + 1, n_tokens)}
    return x, A, a, K


def test_functional(kind: str, x, a, b=beta):
    """<mu, f> for f = <a, x> ("linear"), <a, x>^2 ("quadratic"); "energy": the pair functional
    sum_{i<j} (1 - e^{-beta (1 - <x_i, x_j>)})/beta (= N^2 e^{-beta} E_beta(mu))."""
    n = len(x)
    dot = (lambda u, w: sum(p * q for p, q in zip(u, w)))
    if kind == "linear":
        return sum(dot(a, xi) for xi in x) / n
    if kind == "quadratic":
        return sum(dot(a, xi) ** 2 for xi in x) / n
    if kind == "energy":
        return sum((1 - sp.exp(-b * (1 - dot(x[i], x[j])))) / b for i in range(n) for j in range(i + 1, n))
    raise DerivationError(f"unknown test functional {kind!r}; known: {', '.join(KINDS)}")


@lru_cache(maxsize=None)
def ito_drift_parts(kind: str, n_tokens: int, dim: int):
    """Itô's formula for Phi(X) = <mu_t, f> along the N-token SDE (docs/mathematics.md, section 3),
    in explicit coordinates of R^{N d}: drift vector ``P_{x_i} A_i + gamma x_i`` (gamma from the
    two-point derivation, itself Itô on |X|^2), noise covariance ``K(<x_i, x_j>) P_{x_i} P_{x_j}``
    between tokens i and j.  ``two_point.ito_moments`` gives drift and quadratic variation; the
    drift is returned split as (transport grad Phi . P A, projection drift grad Phi . gamma x,
    second-order term tr(Hess Phi Sigma)/2) and the squared diffusion (quadratic variation rate)."""
    gam = two_point_coefficients()[0].subs(d_sym, dim)
    x, A, a, K = system_symbols(n_tokens, dim)
    coords = [z for xi in x for z in xi]
    Phi = test_functional(kind, x, a)
    X = [sp.Matrix(xi) for xi in x]
    P = [projector(Xi) for Xi in X]
    zero = sp.zeros(n_tokens * dim, 1)
    transport = sp.Matrix.vstack(*[P[i] * sp.Matrix(A[i]) for i in range(n_tokens)])
    radial = sp.Matrix.vstack(*[gam * X[i] for i in range(n_tokens)])
    Kij = (lambda i, j: k0 if i == j else K[(min(i, j), max(i, j))])
    cov = sp.Matrix(sp.BlockMatrix([[Kij(i, j) * P[i] * P[j].T for j in range(n_tokens)]
                                    for i in range(n_tokens)]).as_explicit())
    t_part, _ = ito_moments(Phi, coords, {}, transport, sp.zeros(n_tokens * dim))
    r_part, _ = ito_moments(Phi, coords, {}, radial, sp.zeros(n_tokens * dim))
    s_part, qv = ito_moments(Phi, coords, {}, zero, cov)
    return t_part, r_part, s_part, qv


def weak_form_prediction(kind: str, n_tokens: int, dim: int) -> sp.Expr:
    """The weak form's drift for the same functional, from the one-point generator
    ``L f = grad f . P_x A + (k0/2) Delta_S f`` (``noise_generator``, token by token) plus, for the pair
    functional, the common-noise cross term ``sum_{i != j} K_ij tr(P_i d_i d_j Phi P_j)/2``."""
    gam = two_point_coefficients()[0].subs(d_sym, dim)
    x, A, a, K = system_symbols(n_tokens, dim)
    Phi = test_functional(kind, x, a)
    out = sp.S.Zero
    for i in range(n_tokens):
        grad = sp.Matrix([sp.diff(Phi, z) for z in x[i]])
        Pi = projector(sp.Matrix(x[i]))
        out += (grad.T * Pi * sp.Matrix(A[i]))[0] + noise_generator(Phi, x[i], gam)
    for i in range(n_tokens):
        for j in range(n_tokens):
            if i != j:
                Hij = sp.Matrix([[sp.diff(Phi, u, w) for w in x[j]] for u in x[i]])
                Pi, Pj = projector(sp.Matrix(x[i])), projector(sp.Matrix(x[j]))
                out += K[(min(i, j), max(i, j))] * (Pi * Hij * Pj.T).trace() / 2
    return out


@lru_cache(maxsize=None)
def weak_form_residuals() -> dict:
    """Itô drift minus weak-form drift for the test functionals (all 0): (kind, N, d) -> residual."""
    out = {}
    for kind, n, dim in (("linear", 2, 2), ("linear", 3, 3), ("quadratic", 2, 2), ("quadratic", 3, 3),
                         ("energy", 2, 2)):
        t, r, s2, _ = ito_drift_parts(kind, n, dim)
        out[(kind, n, dim)] = sp.simplify(t + r + s2 - weak_form_prediction(kind, n, dim))
    return out


@register("spde")
def spde() -> Derivation:
    """The weak form of the SPDE for the empirical measure, with the derived Delta_S."""
    dv = Derivation(
        "spde", "McKean-Vlasov SPDE with common noise (weak form)",
        ["$\\mu_t = \\frac{1}{N} \\sum_i \\delta_{X_i(t)}$, $\\varphi$ smooth on $S^{d-1}$",
         "$dX_i = [P A[\\mu](X_i) + c(X_i)]\\,dt + P\\, W(dt, X_i)$ with $c(x) = \\gamma x$ from the two-point motion"],
        [], None)
    gam, _, _ = two_point_coefficients()
    x_grad, tr_php = TeX(r"\langle x, \nabla\varphi \rangle"), TeX(r"\operatorname{tr}(P_x \nabla^2\varphi P_x)")
    gen = gam * x_grad + k0 / 2 * tr_php
    dv.add("Itô drift of $\\varphi(X)$ for the noise part: $\\nabla\\varphi \\cdot c(x) + \\frac{k_0}{2} "
           "\\operatorname{tr}(P \\nabla^2\\varphi P)$ with $c(x) = \\gamma x$ (any $d$)",
           sp.collect(sp.expand(gen), k0))
    _check_dims(gam)
    dv.add("This is $\\frac{k_0}{2} \\Delta_S \\varphi$ with $\\Delta_S \\varphi = \\operatorname{tr}(P \\nabla^2\\varphi P) "
           "- (d-1)\\langle x, \\nabla\\varphi\\rangle$, the classical formula for the Laplace-Beltrami operator "
           "of $S^{d-1}$ in every $d$; the comparison with the Euclidean Laplacian of $\\varphi(x/|x|)$ for "
           "polynomial $\\varphi$ in $d = 2, \\dots, 5$ checks the computation and is not its proof")
    transport = TeX(r"\langle \mu_t, \nabla\varphi \cdot P_x A[\mu_t] \rangle")
    lap = TeX(r"\langle \mu_t, \Delta_{S}\varphi \rangle")
    noise = TeX(r"\langle \mu_t, \nabla\varphi(x) \cdot P_x W(dt, x) \rangle")
    dt = TeX(r"\,dt")
    dmu = TeX(r"d" + r"\langle \mu_t, \varphi \rangle")
    half_k0 = sp.simplify(-gam / (d_sym - 1))
    weak = sp.Eq(dmu, (transport + half_k0 * lap) * dt + noise)
    dv.add("Average over the tokens: the weak form (the noise is common, so the martingale term survives as "
           "$N \\to \\infty$)", weak)
    residuals = weak_form_residuals()
    if any(r != 0 for r in residuals.values()):
        raise DerivationError(f"weak form: Itô and the one-point generator disagree: {residuals}")
    t_lin, r_lin, s_lin, _ = ito_drift_parts("linear", 1, 3)
    dv.add("Itô's formula for $\\Phi(X) = \\langle \\mu_t, f\\rangle$ in the coordinates of $\\mathbb{R}^{N d}$ (drift "
           "$P_{x_i} A_i + \\gamma x_i$, noise covariance $K(\\langle x_i, x_j\\rangle) P_{x_i} P_{x_j}$ between tokens "
           "$i$ and $j$), e.g. $f = \\langle a, x\\rangle$, one token, $d = 3$: transport, projection drift and "
           "second-order term", sp.Tuple(t_lin, r_lin, s_lin))
    dv.add("The Itô drift minus the weak form's drift (one-point generator token by token; for the pair functional "
           "$\\sum_{i<j} (1 - e^{-\\beta(1 - \\langle x_i, x_j\\rangle)})/\\beta$ plus the common-noise cross term "
           "$\\frac12 \\sum_{i \\ne j} K_{ij} \\operatorname{tr}(P_{x_i} \\partial_{x_i} \\partial_{x_j} \\Phi P_{x_j})$, "
           "which does not vanish: the noise is common) for $f = \\langle a, x\\rangle$, $\\langle a, x\\rangle^2$ "
           "($N = 2, 3$) and the pair functional ($N = 2$): the residuals", sp.Tuple(*residuals.values()))
    dv.result = weak
    dv.extras.update(one_point_generator="grad phi . P_x A + (k0/2) Delta_S phi",
                     laplace_beltrami="tr(P_x Hess(phi) P_x) - (d-1) <x, grad phi>",
                     latex=sp.latex(weak))
    return dv


__all__ = ["spde", "noise_generator", "laplace_beltrami_by_extension", "ito_drift_parts", "weak_form_prediction",
           "weak_form_residuals", "test_functional", "system_symbols", "KINDS"]
