"""Two-point motion: drift and squared diffusion of rho = <X_i, X_j> (docs/mathematics.md, section 5).

SDE (docs/mathematics.md, section 3): ``dX = [P_X A + c(X)] dt + P_X W(dt, X)`` with
``E[W(x) W(y)^T] = K(<x,y>) I dt``, ``k0 = K(1)``.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.two_point``.
"""
from __future__ import annotations

from functools import lru_cache
from itertools import combinations_with_replacement

import sympy as sp

from ..errors import DerivationError
from . import register
from .derivation import Derivation
from .symbols import Krho, d, gamma, k0, k1, rho, u   # the shared symbols (K_rho stands for K(rho))

EXPLICIT_DIMS = (2, 3, 4, 5, 6, 7)


# ---------------------------------------------------------------- explicit coordinates
def ito_moments(g: sp.Expr, coords: list, point: dict, mu: sp.Matrix, cov: sp.Matrix):
    """Itô drift ``grad g . mu + tr(H cov)/2`` and squared diffusion ``grad g^T cov grad g`` at `point`."""
    grad = sp.Matrix([sp.diff(g, z) for z in coords])
    hess = sp.hessian(g, coords)
    gp, hp = grad.subs(point), hess.subs(point)
    drift = (gp.T * mu)[0] + sp.Rational(1, 2) * (hp * cov).trace()
    diffusion = (gp.T * cov * gp)[0]
    return sp.expand(drift), sp.expand(diffusion)


def unit(n: int, i: int) -> sp.Matrix:
    v = sp.zeros(n, 1)
    v[i] = 1
    return v


def projector(x: sp.Matrix) -> sp.Matrix:
    """P_x = I - x x^T."""
    return sp.eye(x.shape[0]) - x * x.T


def two_point_frame(n: int):
    """x = e1, y = rho e1 + sqrt(1-rho^2) e2 in R^n."""
    x = unit(n, 0)
    y = rho * unit(n, 0) + sp.sqrt(1 - rho**2) * unit(n, 1)
    return x, y


def projection_drift_gamma(n: int) -> sp.Expr:
    """gamma in c(x) = gamma x, from d|X|^2 = 0 (Itô) in dimension n."""
    xs = list(sp.symbols(f"x1:{n + 1}", real=True))
    x = unit(n, 0)
    point = dict(zip(xs, x))
    P = projector(x)
    drift, _ = ito_moments(sum(z**2 for z in xs), xs, point, gamma * x, k0 * P * P.T)
    sol = sp.solve(sp.Eq(drift, 0), gamma)
    if len(sol) != 1:
        raise DerivationError(f"projection drift: no unique gamma in d={n}: {sol}")
    return sol[0]


def two_point_noise_explicit(n: int, K=Krho) -> tuple[sp.Expr, sp.Expr]:
    """(drift, squared diffusion) of rho in dimension n, noise part only."""
    xs = list(sp.symbols(f"x1:{n + 1}", real=True))
    ys = list(sp.symbols(f"y1:{n + 1}", real=True))
    x, y = two_point_frame(n)
    point = dict(zip(xs + ys, list(x) + list(y)))
    g = sum(a * b for a, b in zip(xs, ys))
    gam = projection_drift_gamma(n)
    mu = (gam * x).col_join(gam * y)
    Px, Py = projector(x), projector(y)
    eye = sp.eye(n)
    C = sp.BlockMatrix([[k0 * eye, K * eye], [K * eye, k0 * eye]]).as_explicit()
    B = sp.diag(Px, Py)
    drift, diffusion = ito_moments(g, xs + ys, point, mu, B * C * B.T)
    return sp.simplify(drift), sp.factor(sp.simplify(diffusion))


def affine_in_d(values: dict[int, sp.Expr], name: str) -> sp.Expr:
    """The affine law in d through the first two values, checked on every other value."""
    dims = sorted(values)
    d0, d1 = dims[:2]
    slope = sp.simplify((values[d1] - values[d0]) / (d1 - d0))
    law = sp.expand(values[d0] + slope * (d - d0))
    for n in dims[2:]:
        if sp.simplify(law.subs(d, n) - values[n]) != 0:
            raise DerivationError(f"{name}: explicit d={n} result is not affine in d")
    return law


# ---------------------------------------------------------------- block algebra, symbolic d
class BlockOp:
    """A linear map of R^d = R^k (+) R^(d-k): matrix M on the span, c * identity on the complement."""

    def __init__(self, M, c):
        self.M, self.c = sp.Matrix(M), sp.sympify(c)

    def __add__(self, o):
        return BlockOp(self.M + o.M, self.c + o.c)

    def __sub__(self, o):
        return BlockOp(self.M - o.M, self.c - o.c)

    def __matmul__(self, o):
        return BlockOp(self.M * o.M, self.c * o.c)

    def scale(self, s):
        return BlockOp(self.M * s, self.c * s)

    @property
    def T(self):
        return BlockOp(self.M.T, self.c)

    def trace(self, dim=d):
        """tr = tr(M) + (dim - k) c."""
        return sp.simplify(self.M.trace() + (dim - self.M.shape[0]) * self.c)

    @staticmethod
    def identity(k):
        return BlockOp(sp.eye(k), 1)

    @staticmethod
    def outer(a: sp.Matrix, b: sp.Matrix):
        return BlockOp(a * b.T, 0)


def block_projector(x: sp.Matrix) -> BlockOp:
    return BlockOp.identity(x.shape[0]) - BlockOp.outer(x, x)


# ---------------------------------------------------------------- Gram formalism (any d)
class Gram:
    """Vectors as linear combinations of named generators; inner products via a Gram table.

    ``table[(a, b)]`` is the sympy value of <a, b>; missing pairs become symbols
    ``<a,b>``.  Identities proved here hold in every dimension d.
    """

    def __init__(self, names, known: dict | None = None):
        self.names = list(names)
        self.table = {}
        for a, b in combinations_with_replacement(self.names, 2):
            key = tuple(sorted((a, b)))
            self.table[key] = (known or {}).get(key, (known or {}).get(key[::-1],
                                                                      sp.Symbol(f"<{a},{b}>", real=True)))

    def vec(self, name):
        return {name: sp.S.One}

    @staticmethod
    def lin(*terms):
        """lin((coef, vec), ...) -> vec."""
        out: dict = {}
        for coef, v in terms:
            for k, c in v.items():
                out[k] = out.get(k, 0) + coef * c
        return out

    def dot(self, v, w):
        return sp.expand(sum(cv * cw * self.table[tuple(sorted((a, b)))]
                             for a, cv in v.items() for b, cw in w.items()))


def attention_rho_identity():
    """(d rho/dt from attention, the S/D form of d(1-rho)/dt, their difference) in inner products."""
    G = Gram(["x", "y", "Ai", "Aj"], {("x", "x"): 1, ("y", "y"): 1, ("x", "y"): rho})
    x, y, Ai, Aj = (G.vec(n) for n in ("x", "y", "Ai", "Aj"))
    # tangent velocities P_x A_i = A_i - <x, A_i> x
    vx = G.lin((1, Ai), (-G.dot(x, Ai), x))
    vy = G.lin((1, Aj), (-G.dot(y, Aj), y))
    drho = sp.expand(G.dot(vx, y) + G.dot(x, vy))
    S = G.lin((sp.Rational(1, 2), Ai), (sp.Rational(1, 2), Aj))
    D = G.lin((1, Ai), (-1, Aj))
    claim = (-(1 - rho) * G.dot(S, G.lin((1, x), (1, y)))
             + sp.Rational(1, 2) * (1 + rho) * G.dot(D, G.lin((1, x), (-1, y))))
    return drho, sp.expand(claim), sp.simplify(-drho - claim)


@lru_cache(maxsize=None)
def two_point_coefficients() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(gamma, b, a): c(x) = gamma x and the noise drift/squared diffusion of rho, general d.

    Expressions in d, rho, k0 and the symbol ``K_rho`` standing for K(rho).
    """
    gammas = {n: projection_drift_gamma(n) for n in EXPLICIT_DIMS}
    gam = affine_in_d(gammas, "gamma")
    drifts, diffs = {}, {}
    for n in EXPLICIT_DIMS:
        drifts[n], diffs[n] = two_point_noise_explicit(n)
    b = sp.collect(affine_in_d(drifts, "drift of rho"), [Krho, k0])
    a = sp.factor(affine_in_d(diffs, "diffusion of rho"))
    # symbolic-d proof of the only d-dependent ingredient, tr(P_x P_y)
    x2, y2 = two_point_frame(2)
    tr = sp.expand(sp.simplify((block_projector(x2) @ block_projector(y2)).trace()))
    if sp.simplify(b - (2 * gam * rho + Krho * tr)) != 0:
        raise DerivationError("two-point drift: block-algebra check failed")
    return gam, b, a


def noise_coefficients(K_expr=None):
    """(b, a) with K(rho) replaced by `K_expr` (default: the symbol K_rho)."""
    _, b, a = two_point_coefficients()
    if K_expr is None:
        return b, a
    return b.subs(Krho, K_expr), a.subs(Krho, K_expr)


@register("two_point")
def two_point() -> Derivation:
    """Drift b(rho) and squared diffusion a(rho) of rho = <X_i, X_j>; attention part."""
    dv = Derivation(
        "two_point", "Two-point motion of the overlap $\\rho$",
        ["$dX = [P_X A + c(X)]\\,dt + P_X W(dt, X)$ (Itô), $E[W(x) W(y)^{\\top}] = K(\\langle x, y\\rangle)\\, I\\,dt$",
         "$k_0 = K(1)$; tokens on the unit sphere $S^{d-1}$",
         "General $d$: by rotation invariance $x = e_1$ and $y \\in \\operatorname{span}(e_1, e_2)$. Every matrix "
         "in Itô's formula (the projectors $P_x$, $P_y$, the Hessian of $\\langle x, y\\rangle$, the noise "
         "covariance) maps $\\operatorname{span}(e_1, e_2)$ to itself and acts on its orthogonal complement, of "
         "dimension $d - 2$, as a multiple of the identity whose factor does not depend on $d$. Each coefficient is "
         "a trace, hence of the form $\\alpha + (d-2)\\beta$ with $\\alpha$, $\\beta$ free of $d$: affine in "
         "$d$. The explicit computations in $d = 2$ and $d = 3$ determine it; those in $d = 4, \\dots, 7$ agree "
         "with it (a check of the block structure)"],
        [], None)
    gam, b, a = two_point_coefficients()
    dv.add("Projection drift $c(x) = \\gamma x$: Itô's formula for $|X|^2$, which stays equal to $1$, in "
           "$d = 2, \\dots, 7$ (affine in $d$) gives $\\gamma$",
           sp.Eq(gamma, gam))
    dv.add("Block algebra with $d$ symbolic: $\\operatorname{tr}(P_x P_y)$ for $\\langle x, y\\rangle = \\rho$",
           sp.expand((block_projector(two_point_frame(2)[0]) @ block_projector(two_point_frame(2)[1])).trace()))
    b_sym, a_sym = sp.Symbol("b"), sp.Symbol("a")
    dv.add("Itô's formula for $\\rho = \\langle x, y\\rangle$ at $x = e_1$, "
           "$y = \\rho e_1 + \\sqrt{1-\\rho^2}\\, e_2$, noise part: the drift", sp.Eq(b_sym, b))
    dv.add("The squared diffusion coefficient (rate of the quadratic variation of $\\rho$)", sp.Eq(a_sym, a))
    drho, claim, diff = attention_rho_identity()
    if diff != 0:
        raise DerivationError(f"attention identity failed: residual {diff}")
    dv.add("Attention part (any $d$, inner products only): "
           "$d\\rho/dt = \\langle P_x A_i, y\\rangle + \\langle x, P_y A_j\\rangle$", drho)
    S, D = sp.symbols("S D")
    dv.add("With $S = (A_i + A_j)/2$ and $D = A_i - A_j$: $d(1-\\rho)/dt = -(1-\\rho)\\langle S, x_i + x_j\\rangle "
           "+ \\tfrac12 (1+\\rho)\\langle D, x_i - x_j\\rangle$; the residual of this identity", diff)
    dv.result = sp.Tuple(sp.Eq(b_sym, b), sp.Eq(a_sym, a))
    dv.lhs = (r"b(\rho)", r"a(\rho)")
    dv.extras.update(gamma=sp.sstr(gam), drift=sp.sstr(b), diffusion=sp.sstr(a),
                     attention_drift=sp.sstr(drho))
    return dv


__all__ = ["two_point", "two_point_coefficients", "noise_coefficients", "attention_rho_identity",
           "ito_moments", "BlockOp", "Gram", "affine_in_d", "d", "rho", "k0", "k1", "Krho", "u"]
