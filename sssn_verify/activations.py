"""Activation registry and parser.

One syntax everywhere (API and every CLI ``--activation``):

* a registry name, optionally with its parameter: ``relu``, ``leaky_relu:0.1``,
  ``sin:3`` (meaning sin(3u));
* otherwise an expression in ``u`` in the safe language of :mod:`sssn_verify.expr`:
  ``sin(3*u)``, ``u*erf(u)``, ``sign(u)`` (never handed to ``eval``/``sympify``).

Each :class:`Activation` carries its sympy expression and derivative, vectorised
numpy callables, and numba-compiled scalar callables (``numba_phi``,
``numba_dphi``) that the Monte Carlo engine passes into its kernels; all of them
are printed from the sympy tree by :mod:`sssn_verify.bridge` (the numba ones into
a generated module in the private cache, so that ``@njit(cache=True)`` works for
user expressions too).
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np

from . import bridge
from .errors import ActivationError


class _LazySympy:
    """sympy, imported on first use: a registry activation whose numba module and kernel table
    are cached needs none of it (``sssn-verify regime`` starts without importing sympy)."""

    def __getattr__(self, name):
        import sympy
        return getattr(sympy, name)


sp = _LazySympy()


def quote(text) -> str:
    from .expr import quote as _quote     # expr imports sympy
    return _quote(text)


@lru_cache(maxsize=1)
def _u():
    """The activations' variable u (real), made on first use."""
    return sp.Symbol("u", real=True)


def __getattr__(name):             # ``activations.u`` and ``from .activations import u``
    if name == "u":
        return _u()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _leaky(a):
    return sp.Piecewise((_u(), _u() >= 0), (a * _u(), True))


# name -> (builder(param) -> expr, default parameter or None, description)
REGISTRY: dict[str, tuple[Callable, float | None, str]] = {
    "relu": (lambda p: sp.Max(_u(), 0), None, "max(u, 0)"),
    "leaky_relu": (lambda p: _leaky(p), 0.01, "u if u >= 0 else slope*u  (leaky_relu:slope)"),
    "abs": (lambda p: sp.Abs(_u()), None, "|u|"),
    "heaviside": (lambda p: sp.Heaviside(_u(), sp.Rational(1, 2)), None, "step 1{u > 0}"),
    "step": (lambda p: sp.Heaviside(_u(), sp.Rational(1, 2)), None, "alias of heaviside"),
    "identity": (lambda p: _u(), None, "u"),
    "linear": (lambda p: _u(), None, "alias of identity"),
    "erf": (lambda p: sp.erf(_u()), None, "erf(u)"),
    "tanh": (lambda p: sp.tanh(_u()), None, "tanh(u)"),
    "gelu": (lambda p: _u() * (1 + sp.erf(_u() / sp.sqrt(2))) / 2, None, "u Phi(u) (exact erf form)"),
    "silu": (lambda p: _u() / (1 + sp.exp(-_u())), None, "u / (1 + e^{-u})"),
    "swish": (lambda p: _u() / (1 + sp.exp(-_u())), None, "alias of silu"),
    "softplus": (lambda p: sp.log(1 + sp.exp(_u())), None, "log(1 + e^u)"),
    "sin": (lambda p: sp.sin(p * _u()), 1.0, "sin(w u)  (sin:w)"),
    "cos": (lambda p: sp.cos(p * _u()), 1.0, "cos(w u)  (cos:w)"),
}

#: the registry activations that jump (phi' has a Dirac mass): ``has_jump`` without building the sympy
#: tree, so a warm deep block (``--hidden``) needs no sympy; tests/test_startup.py checks it against sympy
_JUMPS = frozenset({"heaviside", "step"})


def _number(text: str) -> tuple[sp.Expr, str]:
    """A registry parameter (``leaky_relu:0.1``): a finite constant in the safe language,
    and its canonical text (rebuilt from the parsed tree)."""
    from .expr import parse_with_tree
    try:
        tree, value = parse_with_tree(text, {}, error=ActivationError)
    except ActivationError:
        tree = value = None
    if value is None or not value.is_number or not value.is_finite:
        raise ActivationError(f"activation parameter {quote(text)} is not a finite number")
    from .expr import canonical
    value = sp.nsimplify(value, rational=True) if isinstance(value, sp.Float) else value
    return value, canonical(tree)


@dataclass(frozen=True)
class Activation:
    """One activation: its sympy expression in ``u`` and everything derived from it."""

    name: str                 # canonical spec ("relu", "leaky_relu:0.1", "sin(3*u)"): rebuilt from
    #                           the parsed tree (expr.canonical), never the user's raw text
    family: str               # registry key, or "expr" for a user expression
    parsed: sp.Expr | None = field(default=None, compare=False)   # a user expression's sympy tree
    param: sp.Expr | None = field(default=None, compare=False)    # None: the registry's default
    tree: Node | None = field(default=None, compare=False)   # validated tree of a user expression

    def __repr__(self) -> str:
        return f"Activation({self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        # pickled as its specification: a dask worker re-parses it and compiles its own module
        return (get_activation, (self.name,))

    @cached_property
    def expr(self) -> sp.Expr:
        """phi(u) in sympy (a registry activation builds it, and imports sympy, on first use)."""
        if self.family == "expr":
            return self.parsed
        builder, default, _ = REGISTRY[self.family]
        return builder(self.param if self.param is not None or default is None else sp.nsimplify(default))

    @cached_property
    def derivative(self) -> sp.Expr:
        """phi'(u), with kinks giving Heaviside/sign terms and jumps DiracDelta terms."""
        return sp.diff(self.expr, _u())

    @cached_property
    def derivative_ae(self) -> sp.Expr:
        """The almost-everywhere derivative (DiracDelta terms dropped)."""
        return self.derivative.replace(sp.DiracDelta, lambda *args: sp.S.Zero)

    @property
    def has_jump(self) -> bool:
        """True if phi is discontinuous (phi' has a Dirac mass): then k1 = K'(1) is infinite."""
        if self.family in REGISTRY:
            return self.family in _JUMPS
        return self.derivative.has(sp.DiracDelta)

    @cached_property
    def kinks(self) -> tuple[float, ...]:
        """Points where phi is not smooth (quadrature splits there)."""
        points = set()
        for node in sp.preorder_traversal(self.expr):
            if isinstance(node, (sp.Heaviside, sp.Abs, sp.sign)):
                points.update(_real_roots(node.args[0]))
            elif isinstance(node, (sp.Max, sp.Min)):
                a, *rest = node.args
                for b in rest:
                    points.update(_real_roots(a - b))
            elif isinstance(node, sp.Piecewise):
                for _, cond in node.args:
                    if cond not in (sp.true, sp.false):
                        lhs = cond.lhs - cond.rhs if hasattr(cond, "lhs") else None
                        if lhs is not None:
                            points.update(_real_roots(lhs))
        out = []
        for p in points:
            try:
                v = float(p)
            except TypeError:
                continue
            out.append(v)
        return tuple(sorted(out))

    @cached_property
    def singularity_problem(self) -> str | None:
        """Why the kernel of phi cannot be computed whatever the sigmas, or None.

        phi must be real on the whole line, and phi^2 and phi'^2 locally integrable: near
        each point where phi or phi' blows up (zeros of a denominator or of a log argument,
        poles of tan) the local power p of f^2 ~ |u - u0|^-p is measured; p >= 0.95 means
        E f(U)^2 is infinite (or too singular for quadrature).  For phi that is k0 = K(1);
        for phi' it is k1 = K'(1), which only jumps (handled exactly) may make infinite.
        """
        grid = np.linspace(-_ROOT_WINDOW, _ROOT_WINDOW, 8001)
        for f_expr, what, const in ((self.expr, "phi(u)", "K and k0 = K(1) are"),
                                    (self.derivative_ae, "phi'(u)", "k1 = K'(1) is")):
            f = _vectorised(f_expr)
            with np.errstate(all="ignore"):
                vals = f(grid)
            bad = np.isnan(vals)
            isolated = []
            for x in grid[bad]:
                with np.errstate(all="ignore"):
                    near = f(np.array([x - 1e-9, x + 1e-9]))
                if not np.all(np.isfinite(near)):
                    from .magnitude import log_magnitude
                    if not np.isnan(log_magnitude(f_expr, {"u": x})[0]):   # real, its value lost in doubles
                        return (f"{what} cannot be evaluated in double precision at u = {x:.4g} (its value is "
                                "lost: a phase beyond 2^53), so the kernel cannot be computed")
                    return f"{what} is not a real number at u = {x:.4g} (phi must be real on the whole line)"
                isolated.append(float(x))
            poles = _singular_points(f_expr) + isolated       # where a blow-up is expected
            raw = _vectorised(f_expr, repair=False)          # local powers: finite or not is enough
            for u0 in poles + [float(x) for x in grid[np.isinf(vals)]]:
                p = _local_power(raw, u0, pole=u0 in poles)
                if p == math.inf:
                    return (f"{what} exceeds the double range (1e308) near u = {u0:.4g}, so {const} "
                            "infinite or beyond the double range")
                if p >= 0.95:
                    extra = "" if what == "phi(u)" else " (among activations with infinite k1 only jumps are supported)"
                    return (f"{what}^2 behaves like |u - u0|^-{p:.2g} near u0 = {u0:.4g}, "
                            f"so {const} infinite{extra}")
            if what == "phi(u)" and not self.has_jump:
                for u0 in set(self.kinks) | set(isolated) | set(_singular_points(f_expr)):
                    with np.errstate(all="ignore"):
                        lo, hi = f(np.array([u0 - 1e-9, u0 + 1e-9]))
                    if abs(hi - lo) > 1e-6 * (1 + abs(hi) + abs(lo)):
                        return (f"phi jumps at u = {u0:.4g} in a form whose derivative sympy does not "
                                "see (k1 would be wrong); write the jump with Heaviside(...) or sign(...)")
        return None

    @lru_cache(maxsize=1024)
    def moment_problem(self, s: float) -> str | None:
        """Why E phi(sZ)^2 or E phi'(sZ)^2 (Z standard normal) cannot be computed, or None:
        infinite (phi grows like exp(c u^2) with c >= 1/(2 s^2)), or with non-negligible
        Gaussian mass beyond |z| = Z_WINDOW, where the quadrature stops (e.g. exp(u), s = 30)."""
        from .magnitude import LOG_MAX, log_magnitude
        if not s > 0:
            return None

        def h(f_expr, z, undefined=np.inf):
            """log(f(s z)^2) - z^2/2 by log-magnitude analysis (bounded: no value is formed, so
            exp(exp(u)) at z = 1e8 costs what exp(u) does); `undefined` where the analysis finds no
            value (f undefined, or 0 * inf: sech(e^(e^u))^2 e^(e^u) at u = 1e8)."""
            sign, L = log_magnitude(f_expr, {"u": s * np.asarray(z, dtype=float)})
            with np.errstate(all="ignore"):
                out = np.where(sign == 0, -np.inf, 2.0 * L - np.asarray(z, dtype=float) ** 2 / 2)
            return np.where(np.isnan(sign), undefined, out)

        for f_expr, what in ((self.expr, "phi"), (self.derivative_ae, "phi'")):
            if not f_expr.has(_u()):
                continue
            inside = float(np.max(h(f_expr, np.linspace(-Z_WINDOW, Z_WINDOW, 201))))
            if inside == -np.inf:
                continue
            # growth like exp(c u^2) shows at |u| = 1e8; no value there (0 * inf) is left to the edge test
            far = float(np.max(h(f_expr, [-1e8, 1e8], undefined=-np.inf)))
            overflow = inside > LOG_MAX - 1.0   # f^2 exp(-z^2/2) beyond the double range in the window
            edge = float(np.max(h(f_expr, [-2 * Z_WINDOW, -1.5 * Z_WINDOW, 1.5 * Z_WINDOW, 2 * Z_WINDOW])))
            if far > inside:
                return (f"E {what}(U)^2 is infinite for U ~ N(0, {s:.4g}^2): {what} grows too fast "
                        f"(like exp(c u^2) with c >= 1/(2 sigma^2)); lower sigma_w, sigma_b")
            if overflow:
                return (f"E {what}(U)^2 for U ~ N(0, {s:.4g}^2) cannot be computed: {what}(U)^2 e^(-U^2/(2 sigma^2)) "
                        f"exceeds 1e308 within |U| <= {Z_WINDOW:g} sigma; lower sigma_w, sigma_b")
            if edge > inside - 35:
                return (f"E {what}(U)^2 for U ~ N(0, {s:.4g}^2) has non-negligible Gaussian mass beyond "
                        f"|U| = {Z_WINDOW:g} sigma, outside the computable range; lower sigma_w, sigma_b")
        return None

    def check_moments(self, s: float) -> None:
        """Raise ActivationError when :meth:`moment_problem` finds one."""
        problem = self.moment_problem(s)
        if problem:
            raise ActivationError(f"activation {quote(self.name)}: {problem}")

    @cached_property
    def numpy(self) -> Callable[[np.ndarray], np.ndarray]:
        """Vectorised phi(u) for numpy arrays."""
        return _vectorised(self.expr)

    @cached_property
    def numpy_derivative(self) -> Callable[[np.ndarray], np.ndarray]:
        """Vectorised phi'(u) (almost everywhere)."""
        return _vectorised(self.derivative_ae)

    @cached_property
    def numba_pair(self):
        """(phi, dphi) as numba-compiled scalar functions, cached on disk."""
        # keyed by the validated tree's hash (user expressions) or the registry spec
        ident = self.tree.digest() if self.tree is not None else "registry:" + self.name
        key = hashlib.sha256(ident.encode()).hexdigest()[:20]
        return _compiled_pair(key, self)

    @property
    def numba_phi(self):
        return self.numba_pair[0]

    @property
    def numba_dphi(self):
        return self.numba_pair[1]


_ROOT_WINDOW = 40.0   # kinks are searched in [-40, 40]: beyond, Gaussian weights vanish


def _real_roots(expr: sp.Expr) -> list:
    """Real zeros of `expr` in u: exact for polynomials of degree <= 4, else numerically
    (sign changes on a fine grid of the window, refined by brentq), never sympy's general
    solver (which raises NotImplementedError for e.g. u - cos(u))."""
    expr = sp.sympify(expr) if not isinstance(expr, sp.Basic) else expr
    if not expr.has(_u()):
        return []
    if expr.is_polynomial(_u()) and sp.degree(expr, _u()) <= 4:
        return [r for r in sp.solve(expr, _u()) if r.is_real]
    from scipy.optimize import brentq
    f = _vectorised(expr)
    grid = np.linspace(-_ROOT_WINDOW, _ROOT_WINDOW, 16001)
    with np.errstate(all="ignore"):
        vals = f(grid)
    roots = list(grid[vals == 0])
    ok = np.isfinite(vals)
    for i in np.nonzero(ok[:-1] & ok[1:] & (np.sign(vals[:-1]) * np.sign(vals[1:]) < 0))[0]:
        roots.append(brentq(lambda x: float(f(x)), grid[i], grid[i + 1], xtol=1e-14))
    return roots


Z_WINDOW = 10.0   # the 1-D quadrature of numeric/kernels.py integrates over |z| <= 10


def _singular_points(expr: sp.Expr) -> list:
    """Real points where `expr` may blow up: zeros of bases with negative powers, of log
    arguments, and of cos(arg) under tan."""
    points = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Pow) and node.exp.is_number and node.exp.is_negative:
            points += _real_roots(node.base)
        elif isinstance(node, sp.log):
            points += _real_roots(node.args[0])
        elif isinstance(node, sp.tan):
            points += _real_roots(sp.cos(node.args[0]))
    out = []
    for p in points:
        try:
            out.append(float(p))
        except TypeError:
            continue
    return out


def _local_power(f, u0: float, pole: bool = False) -> float:
    """p with f(u)^2 ~ |u - u0|^-p as u -> u0 (the larger of the two sides; 0 if bounded); at an
    expected `pole` (a zero of a denominator, a log argument), inf if f^2 overflows 1e-4 away."""
    best = 0.0
    for side in (1.0, -1.0):
        with np.errstate(all="ignore"):
            a, b = (float(f(u0 + side * h)) for h in (1e-4, 1e-7))
            a, b = a * a, b * b            # (not **: a float power raises OverflowError)
        if a == math.inf and pole:     # beyond the double range 1e-4 from a pole: it blows up
            return math.inf
        if not (math.isfinite(a) and a > 0):
            continue
        if not math.isfinite(b):
            return math.inf
        if b > 0:
            best = max(best, math.log(b / a) / math.log(1e3))
    return best


def _vectorised(expr: sp.Expr, repair: bool = True):
    """expr(u) on arrays; where the float evaluation overflows in an intermediate (nan from 0 * inf in
    tanh(exp(exp(u)))' at u > 6.6) the entry is recomputed in log space (``magnitude.repair_overflow``),
    so a bounded activation is not mistaken for one that is undefined there."""
    from .magnitude import repair_overflow
    f = bridge.compile_expression((_u(),), expr, "scipy")

    def call(x):
        x = np.asarray(x, dtype=float)
        with np.errstate(all="ignore"):
            out = np.broadcast_to(np.asarray(f(x), dtype=float), x.shape).copy()
        if repair:
            out = repair_overflow(expr, "u", np.broadcast_to(x, out.shape), out)
        return out if x.ndim else float(out)
    return call


@lru_cache(maxsize=None)
def _compiled_pair(key: str, activation: Activation):
    """(phi, dphi) through the bridge's numba printer, one generated module per activation; its
    sympy trees are built only when the bridge prints the module (a warm cache needs none)."""
    module = bridge.numba_functions(
        "activations", f"act_{key}", ("phi", "dphi"),
        lambda: (("phi", (_u(),), activation.expr), ("dphi", (_u(),), activation.derivative_ae)))
    return module.phi, module.dphi


@lru_cache(maxsize=256)
def _parse(spec: str) -> Activation:
    text = spec.strip()
    if not text:
        raise ActivationError("empty activation: give a registry name (e.g. relu) or an expression in u")
    name, sep, value = text.partition(":")
    key = name.strip().lower()
    if key in REGISTRY and (sep or re.fullmatch(r"[A-Za-z_]+", text)):
        _, default, _ = REGISTRY[key]
        if sep and default is None:
            raise ActivationError(f"activation {key!r} takes no parameter (got {text!r})")
        if sep:
            param, shown = _number(value.strip())
            name = f"{key}:{shown}"
        else:
            param, name = None, key           # phi built on first use: no sympy on a warm cache
        return Activation(name, key, None, param)
    if sep and re.fullmatch(r"[A-Za-z_]\w*", key):      # 'relux:0.1'; '(x := u)' is judged as an expression
        raise ActivationError(
            f"unknown activation {quote(key)}; known: {', '.join(sorted(REGISTRY))}, or an expression in u")
    from .expr import parse_with_tree, canonical
    try:
        tree, expr = parse_with_tree(text, {"u": _u()}, error=ActivationError)
    except ActivationError as exc:
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            raise ActivationError(f"unknown activation {quote(text)}: not a registry name "
                                  f"({', '.join(sorted(REGISTRY))}) nor an expression in u") from None
        raise ActivationError(f"invalid activation: {exc}") from None
    if not isinstance(expr, sp.Expr):
        raise ActivationError(f"activation {quote(text)} is not a scalar expression in u")
    act = Activation(canonical(tree), "expr", expr, None, tree)
    problem = act.singularity_problem
    if problem:
        raise ActivationError(f"activation {quote(act.name)}: {problem}")
    return act


def get_activation(spec: "str | Activation") -> Activation:
    """Parse an activation spec (or pass an Activation through)."""
    if isinstance(spec, Activation):
        return spec
    if not isinstance(spec, str):
        raise ActivationError(f"activation must be a string, got {type(spec).__name__}")
    return _parse(spec)


def registry_names() -> list[str]:
    return sorted(REGISTRY)
