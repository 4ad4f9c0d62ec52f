"""The one safe expression language (activations, candidate formulas, statements).

User text is parsed with ``ast.parse(text, mode="eval")`` and walked into a small
allow-listed tree (:class:`Node`); the sympy object is then built from that tree by
this module.  User text never reaches ``eval``, ``exec`` or ``sympify``, and no name
of the user's ever becomes a sympy symbol name: variables are looked up in the
caller's table of symbols.

More (moved from this docstring): docs/modules.md, ``sssn_verify.expr``.
"""
from __future__ import annotations

import ast
import hashlib
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import sympy as sp

from .errors import ExpressionError

MAX_LENGTH = 2000
MAX_DEPTH = 40
MAX_NODES = 500
MAX_INT_DIGITS = 100
MAX_EXPONENT = 256
MAX_BITS = 4096


@dataclass(frozen=True)
class Function:
    """An allowed function: how to build it and how many arguments it takes."""

    build: Callable[..., sp.Basic]
    min_args: int
    max_args: int


def _fixed(f, n=1):
    return Function(f, n, n)


#: every function the language knows (callers may pass a subset)
FUNCTIONS: dict[str, Function] = {
    **{name: _fixed(getattr(sp, name)) for name in (
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
        "exp", "sqrt", "erf", "erfc", "sign")},
    "arcsin": _fixed(sp.asin), "arccos": _fixed(sp.acos), "arctan": _fixed(sp.atan),
    "log": _fixed(sp.log), "Abs": _fixed(sp.Abs), "abs": _fixed(sp.Abs),
    "Max": Function(sp.Max, 2, 16), "Min": Function(sp.Min, 2, 16),
    "max": Function(sp.Max, 2, 16), "min": Function(sp.Min, 2, 16),
    "Heaviside": Function(sp.Heaviside, 1, 2),
    "Piecewise": Function(sp.Piecewise, 1, 16),   # arguments are (expr, cond) pairs
}

#: named constants
CONSTANTS: dict[str, sp.Expr] = {"pi": sp.pi, "E": sp.E}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.BitXor: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_SYMPY_CMP = {"<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge, "==": sp.Eq, "!=": sp.Ne}


@dataclass(frozen=True)
class Node:
    """One node of a validated expression tree.

    ``kind`` is one of ``num`` (``value``: the literal's text), ``var``/``const``
    (``value``: the name), ``op`` (``value``: + - * / **; two children), ``neg``,
    ``call`` (``value``: function name), ``pair`` (Piecewise (expr, cond)), ``true``,
    ``cmp`` (``value``: the operators joined by spaces; operands as children),
    ``and``, ``or``, ``not``.
    """

    kind: str
    value: str = ""
    children: tuple["Node", ...] = ()

    def digest(self) -> str:
        """A stable hash of the tree (sha256 hex), e.g. to key generated code."""
        return hashlib.sha256(repr(self).encode()).hexdigest()

    def __str__(self) -> str:
        return canonical(self)


_PREC = {"+": 10, "-": 10, "*": 20, "/": 20, "**": 40}
_NEG_PREC = 30
_ATOM = 100


def _prec(n: Node) -> int:
    if n.kind == "op":
        return _PREC[n.value]
    return _NEG_PREC if n.kind == "neg" else _ATOM


def canonical(tree: Node) -> str:
    """The canonical text of a validated tree: what a name shows everywhere (derive, latex,
    report, terminal, plot titles).  Built from the tree alone, so no comment or other raw
    user character survives; ``parse_tree(canonical(t), ...)`` gives `t` back (tested).
    Operators as in Python (``**`` for powers), spaces around ``+``/``-`` and comparisons,
    parentheses only where the grammar needs them."""
    def group(n: Node, ok: bool) -> str:
        text = canonical(n)
        return text if ok else f"({text})"

    k, c = tree.kind, tree.children
    if k in ("num", "var", "const"):
        return tree.value
    if k == "true":
        return "True"
    if k == "op":
        p = _PREC[tree.value]
        if tree.value == "**":     # right-associative; -x**2 is -(x**2), so a negative base needs ( )
            left, right = group(c[0], _prec(c[0]) > p), group(c[1], _prec(c[1]) >= p)
        else:
            left, right = group(c[0], _prec(c[0]) >= p), group(c[1], _prec(c[1]) > p)
        sep = f" {tree.value} " if p == 10 else tree.value
        return f"{left}{sep}{right}"
    if k == "neg":
        return "-" + group(c[0], _prec(c[0]) >= _NEG_PREC)
    if k == "call":
        return f"{tree.value}({', '.join(canonical(x) for x in c)})"
    if k == "pair":
        return f"({canonical(c[0])}, {canonical(c[1])})"
    if k == "cmp":
        ops = tree.value.split()
        return " ".join([canonical(c[0])] + [f"{o} {canonical(x)}" for o, x in zip(ops, c[1:])])
    if k == "not":
        return "not " + group(c[0], c[0].kind in ("cmp", "not"))
    # and / or: a nested and/or (or a not inside an and/or) is parenthesized
    return f" {k} ".join(group(x, x.kind == "cmp") for x in c)


def quote(text: str, limit: int = 60) -> str:
    """`text` quoted on one line, shortened to about `limit` characters."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


def _describe(node: ast.AST) -> str:
    names = {ast.Attribute: "attribute access", ast.Subscript: "subscript", ast.Lambda: "lambda",
             ast.IfExp: "if-expression", ast.Starred: "starred argument", ast.Dict: "dict",
             ast.List: "list", ast.Set: "set", ast.Tuple: "tuple", ast.JoinedStr: "f-string",
             ast.NamedExpr: "assignment", ast.Slice: "slice", ast.ListComp: "comprehension",
             ast.GeneratorExp: "generator", ast.Await: "await"}
    return names.get(type(node), type(node).__name__)


class _Walker:
    def __init__(self, text: str, variables: Iterable[str], functions: Mapping[str, Function],
                 allow_logic: bool):
        self.text = text
        self.variables = set(variables)
        self.functions = functions
        self.allow_logic = allow_logic
        self.count = 0

    def fail(self, why: str) -> ExpressionError:
        return ExpressionError(f"cannot use {quote(self.text)}: {why}")

    def enter(self, depth: int) -> None:
        self.count += 1
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        if self.count > MAX_NODES:
            raise self.fail(f"more than {MAX_NODES} terms")

    def expr(self, n: ast.AST, depth: int) -> Node:
        self.enter(depth)
        if isinstance(n, ast.Constant):
            return self.number(n)
        if isinstance(n, ast.Name):
            if n.id in self.variables:
                return Node("var", n.id)
            if n.id in CONSTANTS:
                return Node("const", n.id)
            if n.id in self.functions:
                raise self.fail(f"function {n.id!r} must be called with arguments, e.g. {n.id}(...)")
            known = ", ".join(sorted(self.variables | set(CONSTANTS)))
            raise self.fail(f"unknown name {n.id!r} (known: {known})")
        if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            return Node("op", _BINOPS[type(n.op)],
                        (self.expr(n.left, depth + 1), self.expr(n.right, depth + 1)))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            inner = self.expr(n.operand, depth + 1)
            return Node("neg", "", (inner,)) if isinstance(n.op, ast.USub) else inner
        if isinstance(n, ast.Call):
            return self.call(n, depth)
        if isinstance(n, (ast.Compare, ast.BoolOp)) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)):
            raise self.fail("a comparison or and/or/not is not allowed here (a number is expected)")
        if isinstance(n, ast.BinOp):
            raise self.fail(f"operator {type(n.op).__name__} is not allowed (use + - * / **)")
        raise self.fail(f"{_describe(n)} is not allowed")

    def number(self, n: ast.Constant) -> Node:
        v = n.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            kind = "string" if isinstance(v, (str, bytes)) else type(v).__name__
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:36] + "..."
            raise self.fail(f"{kind} literal {shown} is not allowed (numbers only)")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.fail("number literal is not finite")
        if isinstance(v, int) and v.bit_length() > MAX_INT_DIGITS * 3.33:
            raise self.fail(f"integer literal longer than {MAX_INT_DIGITS} digits")
        return Node("num", repr(v))

    def call(self, n: ast.Call, depth: int) -> Node:
        if not isinstance(n.func, ast.Name):
            raise self.fail(f"only named functions may be called ({_describe(n.func)} is not allowed)")
        name = n.func.id
        fn = self.functions.get(name)
        if fn is None:
            raise self.fail(f"unknown function {name!r} (known: {', '.join(sorted(self.functions))})")
        if n.keywords:
            raise self.fail(f"{name}() takes no keyword arguments")
        k = len(n.args)
        if not fn.min_args <= k <= fn.max_args:
            want = str(fn.min_args) if fn.min_args == fn.max_args else f"{fn.min_args} to {fn.max_args}"
            raise self.fail(f"{name}() takes {want} argument(s), got {k}")
        if name == "Piecewise":
            return Node("call", name, tuple(self.piece(a, depth + 1, last=(i == k - 1))
                                            for i, a in enumerate(n.args)))
        args = tuple(self.expr(a, depth + 1) for a in n.args)
        if name == "Heaviside" and k == 2 and args[1].kind != "num":
            raise self.fail("the second argument of Heaviside (its value at 0) must be a number")
        return Node("call", name, args)

    def piece(self, n: ast.AST, depth: int, last: bool) -> Node:
        self.enter(depth)
        if not (isinstance(n, ast.Tuple) and len(n.elts) == 2):
            raise self.fail("each Piecewise argument must be a pair (value, condition)")
        value, cond = n.elts
        if isinstance(cond, ast.Constant) and cond.value is True:
            if not last:
                raise self.fail("only the last Piecewise pair may have the condition True")
            c = Node("true")
        else:
            c = self.cond(cond, depth + 1)
        return Node("pair", "", (self.expr(value, depth + 1), c))

    def cond(self, n: ast.AST, depth: int) -> Node:
        self.enter(depth)
        if isinstance(n, ast.Compare):
            ops = []
            for op in n.ops:
                if type(op) not in _CMPOPS:
                    raise self.fail(f"comparison {type(op).__name__} is not allowed (use < <= > >= == !=)")
                ops.append(_CMPOPS[type(op)])
            operands = (self.expr(n.left, depth + 1),) + tuple(self.expr(c, depth + 1) for c in n.comparators)
            return Node("cmp", " ".join(ops), operands)
        if isinstance(n, ast.BoolOp):
            kind = "and" if isinstance(n.op, ast.And) else "or"
            return Node(kind, "", tuple(self.cond(v, depth + 1) for v in n.values))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return Node("not", "", (self.cond(n.operand, depth + 1),))
        raise self.fail(f"a condition (comparison, and, or, not) is expected, got {_describe(n)}")

    def top(self, n: ast.AST) -> Node:
        if self.allow_logic and (isinstance(n, (ast.Compare, ast.BoolOp))
                                 or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))):
            return self.cond(n, 0)
        return self.expr(n, 0)


def parse_tree(text: str, variables: Iterable[str], *, functions: Mapping[str, Function] | None = None,
               allow_logic: bool = False) -> Node:
    """Validate `text` against the grammar and return its tree (no sympy involved)."""
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression is too long ({len(text)} characters, at most {MAX_LENGTH})")
    if not text.strip():
        raise ExpressionError("empty expression")
    if "\x00" in text:
        raise ExpressionError("expression contains a NUL character")
    try:
        # ``^`` is power, with the precedence of ``**`` (strings are refused, so this is exact); Python's own
        # parse-time warnings (``1if u``: "invalid decimal literal"; ``'\d'``: "invalid escape sequence") are
        # silenced: printed, they were a second stderr line, outside the one-line contract, under the CLI's error
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        why = getattr(exc, "msg", None) or type(exc).__name__
        raise ExpressionError(f"cannot parse {quote(text)}: {why}") from None
    walker = _Walker(text, variables, FUNCTIONS if functions is None else functions, allow_logic)
    return walker.top(tree.body)


def _size(number: sp.Expr) -> float:
    """|number| bounded without evaluating it (log-magnitude analysis: never sympy's N, which
    hangs on 2**exp(exp(exp(exp(3))))); +inf beyond the double range or if undefined."""
    from .magnitude import LOG_MAX, log_magnitude
    try:
        s, L = (float(x) for x in log_magnitude(number))
    except TypeError:
        return math.inf
    if math.isnan(s) or L > LOG_MAX:
        return math.inf
    return 0.0 if s == 0 else math.exp(L)


def _check_constant(unevaluated: sp.Expr, fail) -> None:
    """Refuse a constant beyond the double range *before* sympy evaluates it (sympy evaluates
    exp(exp(30.0)) on construction, with an exponent of 10^13 bits)."""
    if unevaluated.is_number and not unevaluated.is_Atom and _size(unevaluated) == math.inf:
        raise fail(f"the constant {sp.sstr(unevaluated)[:40]} is infinite, undefined or larger than "
                   f"1e308 in absolute value")


def _pow(base: sp.Expr, exp: sp.Expr, fail) -> sp.Expr:
    if exp.is_number:
        size = _size(exp)
        if not size <= MAX_EXPONENT:
            raise fail(f"exponent {sp.sstr(exp)[:40]} is larger than {MAX_EXPONENT} in absolute value")
        if base.is_Rational and exp.is_Rational:
            bits = max(abs(base.p).bit_length(), base.q.bit_length()) * abs(exp)
            if bits > MAX_BITS:
                raise fail(f"the exact number {sp.sstr(base)[:20]}**{sp.sstr(exp)} has more than "
                           f"{MAX_BITS} bits")
        _check_constant(sp.Pow(base, exp, evaluate=False), fail)
    return base ** exp


def to_sympy(tree: Node, symbols: Mapping[str, sp.Symbol], *, text: str | None = None) -> sp.Basic:
    """Build the sympy object of a validated tree, variables taken from `symbols`."""
    label = text if text is not None else str(tree)

    def fail(why):
        return ExpressionError(f"cannot use {quote(label)}: {why}")

    def build(n: Node):
        k, c = n.kind, n.children
        if k == "num":
            return sp.Float(n.value) if any(ch in n.value for ch in ".eE") else sp.Integer(int(n.value))
        if k == "var":
            return symbols[n.value]
        if k == "const":
            return CONSTANTS[n.value]
        if k == "true":
            return sp.true
        args = [build(x) for x in c]
        if k == "op":
            a, b = args
            if n.value == "**":
                return _pow(a, b, fail)
            if n.value == "/" and b == 0:
                raise fail("division by zero")
            return {"+": a + b, "-": a - b, "*": a * b}[n.value] if n.value != "/" else a / b
        if k == "neg":
            return -args[0]
        if k == "call":
            if n.value == "Piecewise":
                return sp.Piecewise(*args)
            if n.value in ("exp", "sinh", "cosh"):      # the functions that grow beyond any float
                _check_constant(FUNCTIONS[n.value].build(*args, evaluate=False), fail)
            return FUNCTIONS[n.value].build(*args)
        if k == "pair":
            return tuple(args)
        if k == "cmp":
            ops = n.value.split()
            parts = [_SYMPY_CMP[o](args[i], args[i + 1]) for i, o in enumerate(ops)]
            return parts[0] if len(parts) == 1 else sp.And(*parts)
        if k == "and":
            return sp.And(*args)
        if k == "or":
            return sp.Or(*args)
        if k == "not":
            return sp.Not(args[0])
        raise fail(f"internal: unknown node kind {k!r}")  # pragma: no cover

    try:
        out = build(tree)
    except ExpressionError:
        raise
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, RecursionError) as exc:
        raise fail(f"{type(exc).__name__}: {str(exc)[:120]}") from None
    if isinstance(out, sp.Basic) and out.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise fail("it is infinite or undefined (e.g. a division by zero or log(0))")
    if isinstance(out, sp.Basic) and out.has(sp.I):
        raise fail("it is not real (e.g. sqrt of a negative number)")
    return out


def _symbol_table(variables) -> dict[str, sp.Symbol]:
    if isinstance(variables, Mapping):
        return dict(variables)
    return {name: sp.Symbol(name) for name in variables}


def parse_expression(text: str, variables: "Mapping[str, sp.Symbol] | Iterable[str]", *,
                     allow_logic: bool = False, functions: Mapping[str, Function] | None = None,
                     error: type[ExpressionError] = ExpressionError) -> sp.Basic:
    """Parse `text` in the safe language into a sympy expression.

    `variables` maps each allowed name to its sympy symbol (or lists names, given plain
    symbols).  With ``allow_logic`` the top level may also be a condition such as
    ``lambda_bar < 0 and d > 3`` (a sympy Boolean is returned).  Raises `error` (a
    subclass of :class:`ExpressionError`) for anything outside the language.
    """
    return parse_with_tree(text, variables, allow_logic=allow_logic, functions=functions, error=error)[1]


def parse_with_tree(text: str, variables, *, allow_logic: bool = False,
                    functions: Mapping[str, Function] | None = None,
                    error: type[ExpressionError] = ExpressionError) -> tuple[Node, sp.Basic]:
    """As :func:`parse_expression`, also returning the validated tree."""
    table = _symbol_table(variables)
    try:
        tree = parse_tree(text, table, functions=functions, allow_logic=allow_logic)
        return tree, to_sympy(tree, table, text=text)
    except ExpressionError as exc:
        if error is ExpressionError or isinstance(exc, error):
            raise
        raise error(str(exc)) from None
