"""Activation registry and parser.

One syntax everywhere (API and every CLI ``--activation``):

* a registry name, optionally with its parameter: ``relu``, ``leaky_relu:0.1``,
  ``sin:3`` (meaning sin(3u));
* otherwise a sympy expression in ``u``: ``sin(3*u)``, ``u*erf(u)``, ``sign(u)``.

Each :class:`Activation` carries its sympy expression and derivative, vectorised
numpy callables, and numba-compiled scalar callables (``numba_phi``,
``numba_dphi``) that the Monte Carlo engine passes into its kernels.  The
numba callables are generated once per expression into a cache folder so that
``@njit(cache=True)`` works for user expressions too.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from .errors import ActivationError

u = sp.Symbol("u", real=True)


def _leaky(a):
    return sp.Piecewise((u, u >= 0), (a * u, True))


# name -> (builder(param) -> expr, default parameter or None, description)
REGISTRY: dict[str, tuple[Callable, float | None, str]] = {
    "relu": (lambda p: sp.Max(u, 0), None, "max(u, 0)"),
    "leaky_relu": (lambda p: _leaky(p), 0.01, "u if u >= 0 else slope*u  (leaky_relu:slope)"),
    "abs": (lambda p: sp.Abs(u), None, "|u|"),
    "heaviside": (lambda p: sp.Heaviside(u, sp.Rational(1, 2)), None, "step 1{u > 0}"),
    "step": (lambda p: sp.Heaviside(u, sp.Rational(1, 2)), None, "alias of heaviside"),
    "identity": (lambda p: u, None, "u"),
    "linear": (lambda p: u, None, "alias of identity"),
    "erf": (lambda p: sp.erf(u), None, "erf(u)"),
    "tanh": (lambda p: sp.tanh(u), None, "tanh(u)"),
    "gelu": (lambda p: u * (1 + sp.erf(u / sp.sqrt(2))) / 2, None, "u Phi(u) (exact erf form)"),
    "silu": (lambda p: u / (1 + sp.exp(-u)), None, "u / (1 + e^{-u})"),
    "swish": (lambda p: u / (1 + sp.exp(-u)), None, "alias of silu"),
    "softplus": (lambda p: sp.log(1 + sp.exp(u)), None, "log(1 + e^u)"),
    "sin": (lambda p: sp.sin(p * u), 1.0, "sin(w u)  (sin:w)"),
    "cos": (lambda p: sp.cos(p * u), 1.0, "cos(w u)  (cos:w)"),
}

_ALLOWED_FUNCTIONS = {
    name: getattr(sp, name)
    for name in ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "atan",
                 "erf", "erfc", "Abs", "sign", "Max", "Min", "Heaviside", "Piecewise", "pi", "E",
                 "asinh", "Rational")
}
_ALLOWED_FUNCTIONS.update(abs=sp.Abs, max=sp.Max, min=sp.Min, u=u)


def _number(text: str) -> sp.Expr:
    try:
        value = sp.nsimplify(float(text), rational=True) if re.fullmatch(r"[-+0-9.eE]+", text) else None
    except ValueError:
        value = None
    if value is None or not sp.Float(value).is_finite:
        raise ActivationError(f"activation parameter {text!r} is not a finite number")
    return value


@dataclass(frozen=True)
class Activation:
    """One activation: its sympy expression in ``u`` and everything derived from it."""

    name: str                 # canonical spec string ("relu", "leaky_relu:0.1", "sin(3*u)")
    family: str               # registry key, or "expr" for a user expression
    expr: sp.Expr = field(compare=False)
    param: sp.Expr | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return f"Activation({self.name!r})"

    def __str__(self) -> str:
        return self.name

    @cached_property
    def derivative(self) -> sp.Expr:
        """phi'(u), with kinks giving Heaviside/sign terms and jumps DiracDelta terms."""
        return sp.diff(self.expr, u)

    @cached_property
    def derivative_ae(self) -> sp.Expr:
        """The almost-everywhere derivative (DiracDelta terms dropped)."""
        return self.derivative.replace(sp.DiracDelta, lambda *args: sp.S.Zero)

    @property
    def has_jump(self) -> bool:
        """True if phi is discontinuous (phi' has a Dirac mass): then k1 = K'(1) is infinite."""
        return self.derivative.has(sp.DiracDelta)

    @cached_property
    def kinks(self) -> tuple[float, ...]:
        """Points where phi is not smooth (quadrature splits there)."""
        points = set()
        for node in sp.preorder_traversal(self.expr):
            if isinstance(node, (sp.Heaviside, sp.Abs, sp.sign)):
                points.update(sp.solve(node.args[0], u))
            elif isinstance(node, (sp.Max, sp.Min)):
                a, *rest = node.args
                for b in rest:
                    points.update(sp.solve(a - b, u))
            elif isinstance(node, sp.Piecewise):
                for _, cond in node.args:
                    if cond not in (sp.true, sp.false):
                        lhs = cond.lhs - cond.rhs if hasattr(cond, "lhs") else None
                        if lhs is not None:
                            points.update(sp.solve(lhs, u))
        out = []
        for p in points:
            try:
                v = float(p)
            except TypeError:
                continue
            out.append(v)
        return tuple(sorted(out))

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
        return _compiled_pair(sp.srepr(self.expr), sp.srepr(self.derivative_ae))

    @property
    def numba_phi(self):
        return self.numba_pair[0]

    @property
    def numba_dphi(self):
        return self.numba_pair[1]


def _vectorised(expr: sp.Expr):
    f = sp.lambdify(u, expr, modules=[{"Heaviside": lambda x, h=0.5: np.heaviside(x, h)}, "numpy", "scipy"])

    def call(x):
        x = np.asarray(x, dtype=float)
        return np.broadcast_to(np.asarray(f(x), dtype=float), x.shape).copy() if x.ndim else float(f(x))
    return call


class _NumbaPrinter(PythonCodePrinter):
    """Python code printer whose output numba compiles in nopython mode."""

    def _print_Heaviside(self, expr):
        arg = self._print(expr.args[0])
        h0 = self._print(expr.args[1]) if len(expr.args) > 1 else "0.5"
        return f"(0.0 if ({arg}) < 0 else (({h0}) if ({arg}) == 0 else 1.0))"

    def _print_sign(self, expr):
        arg = self._print(expr.args[0])
        return f"(0.0 if ({arg}) == 0 else math.copysign(1.0, {arg}))"


def _cache_dir() -> Path:
    root = os.environ.get("SSSN_VERIFY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "sssn_verify")
    path = Path(root) / "activations"
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=None)
def _compiled_pair(expr_srepr: str, deriv_srepr: str):
    printer = _NumbaPrinter({"fully_qualified_modules": True, "standard": "python3"})
    body_phi = printer.doprint(sp.sympify(expr_srepr, locals={"u": u}).subs(sp.Symbol("u", real=True), u))
    body_dphi = printer.doprint(sp.sympify(deriv_srepr, locals={"u": u}))
    source = (
        "# generated by sssn_verify.activations; do not edit\n"
        "import math\nfrom numba import njit\n\n"
        "@njit(cache=True)\ndef phi(u):\n    return float(" + body_phi + ")\n\n"
        "@njit(cache=True)\ndef dphi(u):\n    return float(" + body_dphi + ")\n"
    )
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = _cache_dir() / f"act_{key}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"sssn_verify_act_{key}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache locates functions through sys.modules
    spec.loader.exec_module(module)
    return module.phi, module.dphi


@lru_cache(maxsize=256)
def _parse(spec: str) -> Activation:
    text = spec.strip()
    if not text:
        raise ActivationError("empty activation: give a registry name (e.g. relu) or an expression in u")
    name, sep, value = text.partition(":")
    key = name.strip().lower()
    if key in REGISTRY and (sep or re.fullmatch(r"[A-Za-z_]+", text)):
        builder, default, _ = REGISTRY[key]
        if sep and default is None:
            raise ActivationError(f"activation {key!r} takes no parameter (got {text!r})")
        param = _number(value.strip()) if sep else (None if default is None else sp.nsimplify(default))
        canonical = key if param is None or not sep else f"{key}:{value.strip()}"
        return Activation(canonical, key, builder(param), param)
    if sep:
        raise ActivationError(
            f"unknown activation {key!r}; known: {', '.join(sorted(REGISTRY))}, or an expression in u")
    try:
        expr = sp.sympify(text, locals=_ALLOWED_FUNCTIONS, rational=False)
    except (sp.SympifyError, SyntaxError, TypeError, AttributeError) as exc:
        raise ActivationError(f"cannot parse activation {text!r}: not a registry name "
                              f"({', '.join(sorted(REGISTRY))}) nor an expression in u") from exc
    if not isinstance(expr, sp.Expr):
        raise ActivationError(f"activation {text!r} is not a scalar expression in u")
    extra = expr.free_symbols - {u}
    if extra:
        names = ", ".join(sorted(str(s) for s in extra))
        raise ActivationError(f"activation {text!r} must be a function of u alone (also uses {names}); "
                              f"known names: {', '.join(sorted(REGISTRY))}")
    if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan, sp.I):
        raise ActivationError(f"activation {text!r} is not a finite real function of u")
    bad = [f for f in expr.atoms(sp.Function) if isinstance(f, sp.core.function.AppliedUndef)]
    if bad:
        raise ActivationError(f"activation {text!r} uses unknown function(s): {', '.join(map(str, bad))}")
    return Activation(text, "expr", expr, None)


def get_activation(spec: "str | Activation") -> Activation:
    """Parse an activation spec (or pass an Activation through)."""
    if isinstance(spec, Activation):
        return spec
    if not isinstance(spec, str):
        raise ActivationError(f"activation must be a string, got {type(spec).__name__}")
    return _parse(spec)


def registry_names() -> list[str]:
    return sorted(REGISTRY)
