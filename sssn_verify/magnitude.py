"""Bounded evaluation of an expression's magnitude: sign and log|value|, never the value itself.

``log_magnitude(expr, values)`` evaluates a sympy expression of the safe language (and the
derivatives sympy takes of it) on numpy arrays in *log space*: every intermediate is a pair
(sign, L) with value = sign * e^L, so ``exp(exp(exp(exp(u))))`` at u = 1e8, ``2**exp(exp(3))``
or ``cosh(cosh(u))`` cost a few float operations per node and per point, whatever their
size (L itself may overflow to +inf: "beyond e^1.8e308").  Nothing here calls sympy's or
mpmath's evaluation, so nothing here can hang.  This is the magnitude analysis behind
:mod:`sssn_verify.expr` (constant exponents), the activation moment check and candidate
values: each first bounds magnitudes, then evaluates only what is finite and moderate.

More (moved from this docstring): docs/modules.md, ``sssn_verify.magnitude``.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import sympy as sp

#: log of the largest double (values with L above it are not representable)
LOG_MAX = math.log(np.finfo(float).max)
_LN2 = math.log(2.0)
_BIG_PHASE = 2.0 ** 53        # beyond this |x|, sin(x) and cos(x) keep only the bound 1

Pair = tuple[np.ndarray, np.ndarray]   # (sign in {-1, 0, 1} or nan = undefined, L = log|value|)


def _from_values(v) -> Pair:
    v = np.asarray(v, dtype=float)
    with np.errstate(all="ignore"):
        s = np.sign(v)
        L = np.log(np.abs(v))
    return s, L


def values(p: Pair) -> np.ndarray:
    """The float values of a pair (+-inf beyond the double range, nan where undefined)."""
    s, L = p
    with np.errstate(all="ignore"):
        out = s * np.exp(np.minimum(L, LOG_MAX + 1.0))
    out = np.where(s == 0, 0.0, out)
    return np.where(np.isnan(s), np.nan, out)


def _undefined_where(p: Pair, bad) -> Pair:
    s, L = p
    return np.where(bad, np.nan, s), L


def _add(parts: list[Pair]) -> Pair:
    s = np.stack([p[0] for p in parts])
    L = np.stack([p[1] for p in parts])
    with np.errstate(all="ignore"):
        live = (s != 0) & ~np.isnan(s)
        Lm = np.where(live, L, -np.inf)
        m = np.max(Lm, axis=0)
        undefined = np.any(np.isnan(s), axis=0)
        at_inf = live & (Lm == np.inf)
        pos_inf = np.any(at_inf & (s > 0), axis=0)
        neg_inf = np.any(at_inf & (s < 0), axis=0)
        finite_m = np.isfinite(m)
        shift = np.where(finite_m, m, 0.0)
        total = np.sum(np.where(live, s * np.exp(Lm - shift), 0.0), axis=0)
        out_s = np.sign(total)
        out_L = shift + np.log(np.abs(total))
    out_s = np.where(pos_inf | neg_inf, np.where(pos_inf, 1.0, -1.0), out_s)
    out_L = np.where(pos_inf | neg_inf, np.inf, out_L)
    out_s = np.where(m == -np.inf, 0.0, out_s)
    out_s = np.where(undefined | (pos_inf & neg_inf), np.nan, out_s)
    return out_s, np.where(out_s == 0, -np.inf, out_L)


def _mul(parts: list[Pair]) -> Pair:
    s = np.prod(np.stack([p[0] for p in parts]), axis=0)
    Ls = np.stack([p[1] for p in parts])
    zero = np.any(np.stack([p[0] == 0 for p in parts]), axis=0)
    with np.errstate(all="ignore"):
        inf = np.any(Ls == np.inf, axis=0)
        L = np.sum(np.where(Ls == -np.inf, 0.0, Ls), axis=0)
    s = np.where(zero & inf, np.nan, np.where(zero, 0.0, s))         # 0 * inf is undefined
    return s, np.where(zero, -np.inf, L)


def _pow(b: Pair, ev: np.ndarray) -> Pair:
    sb, Lb = b
    with np.errstate(all="ignore"):
        L = ev * Lb
        L = np.where((Lb == 0) | (ev == 0), 0.0, L)
        integer = np.isfinite(ev) & (np.floor(ev) == ev)
        odd = integer & (np.abs(ev) < _BIG_PHASE) & (np.mod(ev, 2.0) == 1.0)
        s = np.where(sb > 0, 1.0, np.where(sb < 0, np.where(integer, np.where(odd, -1.0, 1.0), np.nan), 0.0))
        # 0 ** e: 0 for e > 0, 1 for e = 0, infinite for e < 0
        s = np.where(sb == 0, np.where(ev > 0, 0.0, 1.0), s)
        L = np.where(sb == 0, np.where(ev > 0, -np.inf, np.where(ev == 0, 0.0, np.inf)), L)
        s = np.where(np.isnan(sb) | np.isnan(ev) | np.isnan(L) & (sb != 0), np.nan, s)
    return s, np.where(s == 0, -np.inf, L)


def _exp(a: Pair) -> Pair:
    v = values(a)
    return np.where(np.isnan(v), np.nan, np.where(v == -np.inf, 0.0, 1.0)), v


def _cosh_sinh(a: Pair, odd: bool) -> Pair:
    v = values(a)
    with np.errstate(all="ignore"):
        big = np.abs(v) > 20.0
        small = _from_values(np.sinh(v) if odd else np.cosh(v))
        L = np.where(big, np.abs(v) - _LN2, small[1])
        s = np.where(big, np.sign(v) if odd else 1.0, small[0])
    return np.where(np.isnan(v), np.nan, s), L


def _bounded(fn, a: Pair, *, phase: bool = False, lost: float = 1.0) -> Pair:
    """A function of the value with a bounded or moderate result (sin, erf, atan, ...); a phase beyond
    2^53 keeps only its bound (sign `lost` = 1: |value| <= 1), or is undefined (`lost` = nan)."""
    v = values(a)
    with np.errstate(all="ignore"):
        if phase:
            gone = ~np.isfinite(v) | (np.abs(v) > _BIG_PHASE)
            out = fn(np.where(gone, 0.0, v))
            s, L = _from_values(out)
            return np.where(np.isnan(v), np.nan, np.where(gone, lost, s)), np.where(gone, 0.0, L)
        return _from_values(fn(v))


def _log(a: Pair) -> Pair:
    s, L = a
    out = _from_values(L)              # log|x| = L
    bad = (s < 0) | np.isnan(s)
    zero = s == 0                      # log 0 = -inf
    return np.where(bad, np.nan, np.where(zero, -1.0, out[0])), np.where(zero, np.inf, out[1])


def _erfc(a: Pair) -> Pair:
    from scipy.special import erfc
    v = values(a)
    with np.errstate(all="ignore"):
        direct = _from_values(erfc(np.where(v > 25.0, 0.0, v)))
        tail = -v * v - np.log(v * math.sqrt(math.pi))         # erfc(v) ~ e^{-v^2}/(v sqrt(pi))
    s = np.where(v > 25.0, np.where(tail == -np.inf, 0.0, 1.0), direct[0])
    return np.where(np.isnan(v), np.nan, s), np.where(v > 25.0, tail, direct[1])


def _asinh(a: Pair) -> Pair:
    s, L = a
    v = values(a)
    with np.errstate(all="ignore"):
        small = _from_values(np.arcsinh(np.where(L > 300.0, 0.0, v)))
        big_L = np.log(L + _LN2)                               # asinh(x) ~ sign(x) log(2|x|)
    big = L > 300.0
    return np.where(big, s, small[0]), np.where(big, big_L, small[1])


def _key(p: Pair) -> np.ndarray:
    """An order-preserving float key of a pair's value (for Max/Min and comparisons)."""
    s, L = p
    with np.errstate(all="ignore"):
        return np.where(s == 0, 0.0, np.where(np.isnan(s), np.nan, s * np.where(L == np.inf, np.inf,
                                                                             np.exp(np.minimum(L, 700.0)) + np.maximum(L - 700.0, 0.0))))


def _extremum(parts: list[Pair], largest: bool) -> Pair:
    keys = np.stack([_key(p) for p in parts])
    idx = (np.argmax if largest else np.argmin)(np.where(np.isnan(keys), -np.inf if largest else np.inf, keys), axis=0)
    s = np.choose(idx, [p[0] for p in parts])
    L = np.choose(idx, [p[1] for p in parts])
    return np.where(np.any(np.isnan(keys), axis=0), np.nan, s), L


def _truth(cond, env) -> np.ndarray:
    """1.0 / 0.0 / nan (undetermined) of a sympy condition at every point."""
    if cond is sp.true:
        return np.ones_like(env["__shape__"])
    if cond is sp.false:
        return np.zeros_like(env["__shape__"])
    if isinstance(cond, sp.And):
        parts = [_truth(c, env) for c in cond.args]
        return np.min(np.stack(parts), axis=0) if not any(np.isnan(p).any() for p in parts) else \
            np.where(np.any(np.isnan(np.stack(parts)), axis=0), np.nan, np.min(np.stack(parts), axis=0))
    if isinstance(cond, sp.Or):
        parts = np.stack([_truth(c, env) for c in cond.args])
        return np.where(np.any(np.isnan(parts), axis=0), np.nan, np.max(parts, axis=0))
    if isinstance(cond, sp.Not):
        return 1.0 - _truth(cond.args[0], env)
    if isinstance(cond, sp.core.relational.Relational):
        d = _key(_eval(cond.lhs - cond.rhs, env))
        op = {sp.StrictLessThan: np.less, sp.LessThan: np.less_equal, sp.StrictGreaterThan: np.greater,
              sp.GreaterThan: np.greater_equal, sp.Equality: np.equal, sp.Unequality: np.not_equal}[type(cond)]
        with np.errstate(all="ignore"):
            return np.where(np.isnan(d), np.nan, op(d, 0.0).astype(float))
    raise TypeError(f"cannot bound the condition {type(cond).__name__}")


def _number(x: sp.Expr, shape) -> Pair:
    if x.is_Rational:
        p, q = int(x.p), int(x.q)
        s = float(np.sign(p))
        L = (math.log(abs(p)) - math.log(q)) if p else -math.inf
    else:
        v = float(x)
        s, L = float(np.sign(v)), (math.log(abs(v)) if v else -math.inf)
    return np.full(shape, s), np.full(shape, L)


def _eval(e: sp.Basic, env) -> Pair:
    """The pair of `e` at the points of `env`; with ``env["__memo__"]`` (a dict) each distinct
    subexpression is evaluated once (a pair depends on the subexpression and the points only)."""
    memo = env.get("__memo__")
    if memo is None:
        return _eval_node(e, env)
    out = memo.get(e)
    if out is None:
        out = memo[e] = _eval_node(e, env)
    return out


def _eval_node(e: sp.Basic, env) -> Pair:
    shape = env["__shape__"].shape
    if e.is_Number or e in (sp.pi, sp.E, sp.EulerGamma):
        if e in (sp.nan, sp.zoo):
            return np.full(shape, np.nan), np.full(shape, np.inf)
        if e in (sp.oo, -sp.oo):
            return np.full(shape, 1.0 if e is sp.oo else -1.0), np.full(shape, np.inf)
        return _number(e, shape)
    if e.is_Symbol:
        return _from_values(np.broadcast_to(env[e.name], shape))
    args = e.args
    if isinstance(e, sp.Add):
        return _add([_eval(a, env) for a in args])
    if isinstance(e, sp.Mul):
        return _mul([_eval(a, env) for a in args])
    if isinstance(e, sp.Pow):
        try:       # a number exponent exactly (an integer stays an integer: the sign of (-2)**3)
            ev = np.full(shape, float(args[1])) if args[1].is_Number else values(_eval(args[1], env))
        except (OverflowError, TypeError):
            ev = values(_eval(args[1], env))
        return _pow(_eval(args[0], env), ev)
    if isinstance(e, sp.exp):
        return _exp(_eval(args[0], env))
    if isinstance(e, sp.log):
        return _log(_eval(args[0], env))
    if isinstance(e, (sp.cosh, sp.sinh)):
        return _cosh_sinh(_eval(args[0], env), odd=isinstance(e, sp.sinh))
    if isinstance(e, sp.Abs):
        s, L = _eval(args[0], env)
        return np.abs(s), L
    if isinstance(e, sp.sign):
        s, _ = _eval(args[0], env)
        return s, np.where(s == 0, -np.inf, 0.0)
    if isinstance(e, sp.Heaviside):
        s, _ = _eval(args[0], env)
        h0 = values(_eval(args[1], env)) if len(args) > 1 else np.full(shape, 0.5)
        return _from_values(np.where(s > 0, 1.0, np.where(s < 0, 0.0, np.where(np.isnan(s), np.nan, h0))))
    if isinstance(e, sp.DiracDelta):
        s, _ = _eval(args[0], env)
        return np.where(s == 0, np.nan, 0.0), np.full(shape, -np.inf)
    if isinstance(e, (sp.Max, sp.Min)):
        return _extremum([_eval(a, env) for a in args], isinstance(e, sp.Max))
    if isinstance(e, sp.Piecewise):
        out_s, out_L = np.full(shape, np.nan), np.full(shape, np.inf)
        done = np.zeros(shape, bool)
        for value, cond in args:
            t = _truth(cond, env)
            take = ~done & (t == 1.0)
            if take.any():
                s, L = _eval(value, env)
                out_s, out_L = np.where(take, s, out_s), np.where(take, L, out_L)
            done |= (t == 1.0) | np.isnan(t)
        return out_s, out_L
    if isinstance(e, (sp.re,)):
        return _eval(args[0], env)
    if isinstance(e, (sp.im,)):
        return np.zeros(shape), np.full(shape, -np.inf)
    if isinstance(e, sp.asinh):
        return _asinh(_eval(args[0], env))
    if isinstance(e, sp.erfc):
        return _erfc(_eval(args[0], env))
    from scipy.special import erf
    simple = {sp.sin: (np.sin, True), sp.cos: (np.cos, True), sp.tanh: (np.tanh, False),
              sp.atan: (np.arctan, False), sp.erf: (erf, False),
              sp.tan: (lambda v: np.where(np.isfinite(v) & (np.abs(v) < _BIG_PHASE), np.tan(v), np.nan), False),
              sp.asin: (lambda v: np.where(np.abs(v) <= 1, np.arcsin(np.clip(v, -1, 1)), np.nan), False),
              sp.acos: (lambda v: np.where(np.abs(v) <= 1, np.arccos(np.clip(v, -1, 1)), np.nan), False)}
    for kind, (fn, phase) in simple.items():
        if isinstance(e, kind):
            return _bounded(fn, _eval(args[0], env), phase=phase, lost=env["__lost__"])
    raise TypeError(f"cannot bound the magnitude of {type(e).__name__}")


#: the sympy functions :func:`log_magnitude` knows (those of the language and their derivatives)
KNOWN = ("Add", "Mul", "Pow", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "tanh", "asinh", "erf", "erfc", "Abs", "sign", "Heaviside", "DiracDelta", "Max", "Min", "Piecewise",
         "re", "im")


def log_magnitude(expr: sp.Basic, point: Mapping[str, "float | np.ndarray"] | None = None, *,
                  bounds: bool = True) -> Pair:
    """(sign, log|value|) of `expr` at `point` (symbol name -> float or array; broadcast).  With
    `bounds` False a value known only by its bound (sin or cos of a phase beyond 2^53) is nan."""
    env = _env(point, bounds)
    with np.errstate(all="ignore"):
        return _eval(sp.sympify(expr) if not isinstance(expr, sp.Basic) else expr, env)


def _env(point, bounds: bool = True, memo: dict | None = None) -> dict:
    """The evaluation environment of `point`: its arrays, their broadcast shape, the sign given to a
    lost phase, and an optional memo of the pairs already evaluated at these points."""
    point = dict(point or {})
    arrays = [np.asarray(v, dtype=float) for v in point.values()]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    env = {k: np.asarray(v, dtype=float) for k, v in point.items()}
    env["__shape__"] = np.zeros(shape)
    env["__lost__"] = 1.0 if bounds else np.nan
    if memo is not None:
        env["__memo__"] = memo
    return env


def repair_overflow(expr: sp.Basic, name: str, x: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """`vals`, a float evaluation of `expr` at the points `x` of its one symbol `name`, with each nan or
    +-inf entry recomputed in log space: an intermediate overflow (sech(e^(e^u))^2 e^(e^u) = 0 * inf,
    exp(2u) / exp(u)) is a value, not an undefined point.  nan stays where `expr` is undefined or its
    value is lost in double precision (sin of a phase beyond 2^53); +-inf where it is beyond 1e308."""
    bad = ~np.isfinite(vals) & np.isfinite(x)
    if not np.any(bad):
        return vals
    out = np.array(vals, dtype=float, copy=True)
    try:
        out[bad] = values(log_magnitude(expr, {name: x[bad]}, bounds=False))
    except TypeError:           # a function the log-space evaluation does not know: the float values
        return vals
    return out


def max_log_magnitude(expr: sp.Basic, point: Mapping[str, float] | None = None) -> float:
    """The largest |log| magnitude of any subexpression of `expr` at `point` (+inf if one is
    beyond the double range or undefined): below ~700, sympy/mpmath evaluate it quickly."""
    worst = 0.0
    env = _env(point, memo={})          # one pass: a subexpression's pair is its parent's operand
    for node in sp.preorder_traversal(expr):
        if not isinstance(node, sp.Expr) or node.is_Atom:
            continue
        with np.errstate(all="ignore"):
            s, L = _eval(node, env)
        s, L = np.asarray(s), np.asarray(L)
        if np.any(np.isnan(s)):
            return math.inf
        live = s != 0
        if np.any(live):
            worst = max(worst, float(np.max(np.abs(L[live]))))
    return worst


__all__ = ["log_magnitude", "max_log_magnitude", "repair_overflow", "values", "LOG_MAX", "KNOWN"]
