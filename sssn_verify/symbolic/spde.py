"""Weak form of the McKean-Vlasov SPDE with common noise (docs/mathematics.md, section 4).

Itô's formula for ``phi(X)`` along ``dX = [P_X A[mu](X) + c(X)] dt + P_X W(dt, X)``, with
``c(x) = gamma x`` from ``two_point`` (gamma = -(d-1) k0/2), gives the one-point generator

    L phi = grad phi . P_x A + (k0/2) Delta_S phi,
    Delta_S phi = tr(P_x Hess(phi) P_x) - (d-1) <x, grad phi>.

``Delta_S`` is checked to be the Laplace-Beltrami operator: for polynomial test functions it
equals the Euclidean Laplacian of the 0-homogeneous extension ``phi(x/|x|)`` on the sphere
(d = 2..5).  Averaging over the N tokens (mu_t = (1/N) sum delta_{X_i}) gives the weak form

    d<mu_t, phi> = <mu_t, grad phi . P_x A[mu_t] + (k0/2) Delta_S phi> dt
                   + <mu_t, grad phi(x) . P_x W(dt, x)>,

whose martingale term does not average out as N -> infinity (the noise is common).
"""
from __future__ import annotations

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from .symbols import d as d_sym, k0
from .two_point import two_point_coefficients


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
    dv.result = weak
    dv.extras.update(one_point_generator="grad phi . P_x A + (k0/2) Delta_S phi",
                     laplace_beltrami="tr(P_x Hess(phi) P_x) - (d-1) <x, grad phi>",
                     latex=sp.latex(weak))
    return dv


__all__ = ["spde", "noise_generator", "laplace_beltrami_by_extension"]
