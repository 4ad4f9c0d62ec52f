"""Hypothesis as a search engine over the parameter domain (issue 13); data only, no rendering.

``find(statement, assume=...)`` looks for a counterexample to a statement about the regime
quantities of one parameter set (``lambda1``, ``lambda_bar``, ``k0``, ``k1``, ``c_att``,
``lambda_bar_proj``, ``lambda_proj`` (odd fields only), ``d``, ``sigma_w``, ``sigma_b``, ``sigma_a``, ``beta``), e.g. ``"lambda_bar < 0"`` under
``"d > 3"``, parsed by :mod:`sssn_verify.expr`; every quantity carries its stated error and a
comparison is judged three-valued, so numerical error is never a counterexample.
``explore_suite`` screens, confirms and shrinks each claim over its declared domain
(``verify --explore``); ``report.write_report(..., exploration=...)`` renders the result.
The search, the error model and the judging are in docs/numerics.md, section "Search".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import sympy as sp

from .errors import ExpressionError, ParameterError, SSSNError
from .numeric.rng import Key, as_key
from .params import check_int

#: the default search domain of ``find`` (closed intervals; d is an integer)
DEFAULT_DOMAIN: dict[str, tuple[float, float]] = {
    "d": (2, 64), "sigma_w": (0.05, 3.0), "sigma_b": (0.0, 3.0), "sigma_a": (0.05, 3.0),
    "beta": (0.0, 20.0),
}
PARAMETERS = tuple(DEFAULT_DOMAIN)
#: the search domain of ``find --field rqf`` (the random quadratic form: its rates involve sigma_q alone;
#: beta enters C_att only)
RQF_DOMAIN: dict[str, tuple[float, float]] = {"d": (2, 64), "sigma_q": (0.05, 3.0), "beta": (0.0, 20.0)}
RQF_PARAMETERS = tuple(RQF_DOMAIN)
#: the names a statement may use
#: the regime quantities a statement may use; lambda_bar_proj and lambda_proj (symbolic/projective) are
#: defined for odd fields only (phi odd, sigma_b = 0) and undefined elsewhere, so a statement about them
#: is undetermined, never false, at a field that is not odd
RATES = ("lambda1", "lambda_bar", "k0", "k1", "c_att", "lambda_bar_proj", "lambda_proj")
QUANTITIES = RATES + PARAMETERS + ("sigma_q",)
#: the quantities of the rqf field (symbolic.general_field; k0 is a(1)); the others are not defined for it
RQF_QUANTITIES = ("lambda1", "lambda_bar", "k0", "c_att", "lambda_bar_proj", "lambda_proj") + RQF_PARAMETERS
#: why a quantity is not defined for the rqf field (a statement using it is refused)
RQF_UNDEFINED = {
    "k1": "the rqf field has no kernel K(rho) (its covariance is a(rho) I + c(rho) y x^T)",
    **{k: "it describes the MLP block, which the rqf field does not have" for k in ("sigma_w", "sigma_b", "sigma_a")}}

#: stated error of the numerical supremum lambda_bar (grid plus bounded refinement)
LAMBDA_BAR_ABS_ERR = 1e-6
LAMBDA_BAR_REL_ERR = 1e-4
_ROUNDING = 1e-13


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Statement:
    """A parsed statement: a sympy Boolean over :data:`QUANTITIES`."""

    text: str
    expr: sp.Basic

    @property
    def names(self) -> frozenset[str]:
        return frozenset(s.name for s in self.expr.free_symbols)


_SYMBOLS = {name: sp.Symbol(name, real=True) for name in QUANTITIES}


def parse_statement(text: str, what: str = "statement") -> Statement:
    """Parse a condition (comparisons joined by and/or/not) with the safe parser; its text is
    the canonical text of the parsed tree (no comment or raw user character is kept)."""
    from .expr import canonical, parse_with_tree
    tree, expr = parse_with_tree(text, _SYMBOLS, allow_logic=True)
    text = canonical(tree)
    if expr is sp.true or expr is sp.false:
        raise ExpressionError(f"the {what} {text!r} is always {bool(expr)}: nothing to search")
    if not isinstance(expr, sp.logic.boolalg.Boolean):
        raise ExpressionError(f"the {what} {text!r} is not a condition (use a comparison such as "
                              "'lambda_bar < 0', joined by and/or/not)")
    return Statement(text, expr)


@lru_cache(maxsize=256)
def _atom_functions(atom: sp.Basic):
    """g = lhs - rhs of a relation, and its gradient, as numpy functions of QUANTITIES."""
    g = atom.lhs - atom.rhs
    args = [_SYMBOLS[n] for n in QUANTITIES]
    grad = [sp.diff(g, s) for s in args]
    from .bridge import compile_expression
    return compile_expression(args, g, "numpy"), compile_expression(args, grad, "numpy")


def _atom(atom, values, errors):
    """(truth in {True, False, None}, signed relative margin by which the relation holds)."""
    g_fn, grad_fn = _atom_functions(atom)
    # numpy scalars: k0/0 is inf, not ZeroDivisionError; a quantity not given (a caller's table of the
    # original quantities) is undefined, which only matters to a statement that uses it
    args = [np.float64(values.get(n, math.nan)) for n in QUANTITIES]
    with np.errstate(all="ignore"):
        g = float(g_fn(*args))
        grad = np.asarray(grad_fn(*args), dtype=float).ravel()
    if math.isnan(g):
        return None, math.nan
    if math.isinf(g):
        err = 0.0
    else:
        err_q = np.array([errors.get(n, 0.0) for n in QUANTITIES])
        terms = np.abs(grad) * err_q
        terms[err_q == 0] = 0.0
        err = 2.0 * float(np.sum(terms)) if np.all(np.isfinite(terms)) else math.inf
        err += _ROUNDING * abs(g)
    lo, hi = g - err, g + err
    exact = err == 0.0
    scale = abs(g) + err + 1e-300
    kind = type(atom)
    if kind in (sp.StrictLessThan, sp.LessThan, sp.StrictGreaterThan, sp.GreaterThan):
        if kind in (sp.StrictGreaterThan, sp.GreaterThan):      # a > b  <=>  b - a < 0
            lo, hi, g = -hi, -lo, -g
        strict = kind in (sp.StrictLessThan, sp.StrictGreaterThan)
        if strict:
            truth = True if hi < 0 else (False if lo > 0 or (exact and g >= 0) else None)
        else:
            truth = True if hi < 0 or (exact and g <= 0) else (False if lo > 0 else None)
        return truth, -g / scale if math.isfinite(g) else math.copysign(1.0, -g)
    if kind in (sp.Equality, sp.Unequality):
        eq = True if exact and g == 0 else (False if lo > 0 or hi < 0 else None)
        margin = -abs(g) / scale if math.isfinite(g) else -1.0
        if kind is sp.Unequality:
            return (None if eq is None else not eq), -margin
        return eq, margin
    raise ExpressionError(f"cannot judge {atom} (a comparison is expected)")


def judge(expr: sp.Basic, values: dict[str, float], errors: dict[str, float]):
    """Three-valued truth of a statement at `values` given `errors`, and its margin.

    Returns ``(truth, margin)``: truth is True/False when it holds/fails beyond the stated
    errors, None when undetermined; margin > 0 is how much (relatively) it holds.
    """
    if expr is sp.true:
        return True, 1.0
    if expr is sp.false:
        return False, -1.0
    if isinstance(expr, sp.Not):
        t, m = judge(expr.args[0], values, errors)
        return (None if t is None else not t), -m
    if isinstance(expr, (sp.And, sp.Or)):
        parts = [judge(a, values, errors) for a in expr.args]
        truths = [t for t, _ in parts]
        margins = [m for _, m in parts if not math.isnan(m)]
        if isinstance(expr, sp.And):
            truth = False if False in truths else (True if all(t is True for t in truths) else None)
            return truth, min(margins) if margins else math.nan
        truth = True if True in truths else (False if all(t is False for t in truths) else None)
        return truth, max(margins) if margins else math.nan
    if isinstance(expr, sp.core.relational.Relational):
        return _atom(expr, values, errors)
    raise ExpressionError(f"cannot judge {expr} (comparisons joined by and/or/not are expected)")


# ----------------------------------------------------------------------------- quantities
#: the quantities that need only k0 = K(1) and k1 = K'(1), not the kernel table (K at rho < 1):
#: a statement over these alone is judged from two 1-D quadratures per point (``kernels.kernel_point``)
POINT_QUANTITIES = frozenset({"lambda1", "k0", "k1", "c_att", "lambda_proj"} | set(PARAMETERS))


def quantities(point: dict[str, Any], names=None) -> tuple[dict[str, float], dict[str, float]]:
    """The regime quantities at `point` (activation, d, sigmas, beta) and their stated errors.

    When every name in `names` is one of :data:`POINT_QUANTITIES`, only those are computed (from
    k0 and k1 alone, with their own errors); the others are nan."""
    from .numeric.rates import c_att, lambda1, lambda_proj
    from .params import ModelParams
    from .regime import _check_finite, field_is_odd, regime
    p = ModelParams(d=point["d"], activation=point["activation"], sigma_w=point["sigma_w"],
                    sigma_b=point["sigma_b"], sigma_a=point["sigma_a"], beta=point["beta"])
    d = p.d
    if names is not None and set(names) <= POINT_QUANTITIES:
        from .numeric.kernels import kernel_point
        kp = kernel_point(p.activation, p.sigma_w, p.sigma_b, p.sigma_a)
        k0, k1, e0, e1 = kp.k0, kp.k1, kp.k0_error, kp.k1_error
        rates = {"lambda1": lambda1(d, k0, k1), "lambda_bar": math.nan, "c_att": c_att(p.beta, p.Q, p.K, p.V),
                 "lambda_bar_proj": math.nan,
                 "lambda_proj": lambda_proj(d, k0, k1) if field_is_odd(p) else math.nan}
        _check_finite(k0=k0, C_att=rates["c_att"], **({} if math.isinf(k1) else dict(k1=k1, lambda_1=rates["lambda1"])))
    else:
        from .numeric.kernels import kernel
        r = regime(p)
        k0, k1 = r.k0, r.k1
        e0 = e1 = float(kernel(p.activation, p.sigma_w, p.sigma_b, p.sigma_a).error_bound)
        rates = {"lambda1": r.lambda1, "lambda_bar": r.lambda_bar, "c_att": r.c_att,
                 "lambda_bar_proj": r.lambda_bar_proj, "lambda_proj": r.lambda_proj}
    values = {"k0": k0, "k1": k1, **rates, "d": float(d), "sigma_w": p.sigma_w, "sigma_b": p.sigma_b,
              "sigma_a": p.sigma_a, "beta": p.beta, "sigma_q": math.nan}
    e1 = 0.0 if math.isinf(k1) else e1
    errors = {"k0": e0, "k1": e1,
              "lambda1": 0.5 * (abs(d - 3) * e1 + (d - 1) * e0) + _ROUNDING * _fabs(values["lambda1"]),
              "lambda_bar": (LAMBDA_BAR_ABS_ERR + LAMBDA_BAR_REL_ERR * _fabs(values["lambda_bar"])
                             + (d - 1) * e1 + abs(d - 3) * e0),
              "c_att": _ROUNDING * abs(values["c_att"])}
    # the projective rates have the error model of lambda_1 and lambda_bar (the same k0, k1 and grid)
    errors["lambda_proj"] = 0.5 * (abs(d - 3) * e1 + (d - 1) * e0) + _ROUNDING * _fabs(values["lambda_proj"])
    errors["lambda_bar_proj"] = (LAMBDA_BAR_ABS_ERR + LAMBDA_BAR_REL_ERR * _fabs(values["lambda_bar_proj"])
                                 + (d - 1) * e1 + abs(d - 3) * e0)
    errors.update({k: 0.0 for k in PARAMETERS})
    return {k: values[k] for k in QUANTITIES}, errors


def rqf_quantities(point: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """The rqf field's quantities at `point` (d, sigma_q, beta): ``regime``'s (symbolic.general_field through the
    bridge: closed forms, so their stated error is rounding only); the quantities of :data:`RQF_UNDEFINED` nan."""
    from .params import ModelParams
    from .regime import regime
    r = regime(ModelParams(field="rqf", d=int(point["d"]), sigma_q=point["sigma_q"], beta=point["beta"]))
    values = {k: math.nan for k in QUANTITIES}
    values.update({"lambda1": r.lambda1, "lambda_bar": r.lambda_bar, "k0": r.k0, "c_att": r.c_att, "lambda_bar_proj": r.lambda_bar_proj,
                   "lambda_proj": r.lambda_proj, "d": float(r.d), "sigma_q": r.sigma_q, "beta": r.beta})
    errors = {k: (_ROUNDING * _fabs(values[k]) if k in RQF_QUANTITIES else 0.0) for k in QUANTITIES}
    errors.update({k: 0.0 for k in RQF_PARAMETERS})
    return values, errors


def _refuse_names(names, field: str) -> None:
    """ParameterError when a statement or assumption uses a quantity that `field` does not define."""
    if field == "rqf":
        bad = sorted(set(names) & set(RQF_UNDEFINED))
        if bad:
            raise ParameterError("statement", ", ".join(bad), "is not defined for the rqf field: "
                                 + "; ".join(f"{k}: {RQF_UNDEFINED[k]}" for k in bad)
                                 + f" (rqf quantities: {', '.join(RQF_QUANTITIES)})")
    elif "sigma_q" in names:
        raise ParameterError("statement", "sigma_q", "enters only the rqf field (find --field rqf)")


def _fabs(x: float) -> float:
    return abs(x) if math.isfinite(x) else 0.0


# ----------------------------------------------------------------------------- domain
def _narrow(domain: dict[str, list], assumption: Statement | None) -> dict[str, list]:
    """Tighten `domain` by the assumption's top-level conjuncts `param OP number`.

    Each entry is ``[low, high, low_open, high_open]``; the assumption is still checked on
    every example, this only keeps hypothesis from drawing where it cannot hold (so that
    ``d > 3`` shrinks to d = 4).
    """
    if assumption is None:
        return domain
    conj = assumption.expr.args if isinstance(assumption.expr, sp.And) else (assumption.expr,)
    for atom in conj:
        if not isinstance(atom, sp.core.relational.Relational) or isinstance(atom, sp.Unequality):
            continue
        lhs, rhs, kind = atom.lhs, atom.rhs, type(atom)
        if isinstance(rhs, sp.Symbol) and lhs.is_number:        # 3 < d  ->  d > 3
            lhs, rhs = rhs, lhs
            kind = {sp.StrictLessThan: sp.StrictGreaterThan, sp.LessThan: sp.GreaterThan,
                    sp.StrictGreaterThan: sp.StrictLessThan, sp.GreaterThan: sp.LessThan}.get(kind, kind)
        if not (isinstance(lhs, sp.Symbol) and lhs.name in domain and rhs.is_number and rhs.is_real):
            continue
        b = domain[lhs.name]
        c = float(rhs)
        if kind in (sp.StrictGreaterThan, sp.GreaterThan, sp.Equality) and (c > b[0] or (c == b[0] and kind is sp.StrictGreaterThan)):
            b[0], b[2] = c, kind is sp.StrictGreaterThan
        if kind in (sp.StrictLessThan, sp.LessThan, sp.Equality) and (c < b[1] or (c == b[1] and kind is sp.StrictLessThan)):
            b[1], b[3] = c, kind is sp.StrictLessThan
    for name, (lo, hi, lo_open, hi_open) in domain.items():
        if name == "d":
            lo_i = math.floor(lo) + 1 if (lo_open and float(lo).is_integer()) else math.ceil(lo)
            hi_i = math.ceil(hi) - 1 if (hi_open and float(hi).is_integer()) else math.floor(hi)
            domain[name] = [lo_i, hi_i, False, False]
            lo, hi, lo_open, hi_open = lo_i, hi_i, False, False
        if lo > hi or (lo == hi and (lo_open or hi_open)):
            raise ParameterError("assume", assumption.text, f"leaves no value of {name} in the search domain")
    return domain


def needs_quadrature(activation: str) -> bool:
    """True when the activation's kernel is built by quadrature (one table per (sigma_w, sigma_b))."""
    from .errors import SSSNError
    from .numeric.kernels import has_closed_form
    try:
        return not has_closed_form(activation)
    except SSSNError:           # not computable at this reference point: the search says where
        return True


def _grid(lo: float, hi: float, lo_open: bool, hi_open: bool, n: int) -> list[float]:
    """n evenly spaced values over [lo, hi]; an open end is replaced by the point half a step inside."""
    step = (hi - lo) / (n - 1)
    vals = [lo + i * step for i in range(n)]
    if lo_open:
        vals[0] = lo + step / 2
    if hi_open:
        vals[-1] = hi - step / 2
    return vals


def _rqf_strategy(domain: dict[str, list]):
    """The rqf search's points: d an integer, sigma_q and beta uniform over their ranges (no activation)."""
    from hypothesis import strategies as st
    parts = {}
    for name, (lo, hi, lo_open, hi_open) in domain.items():
        if name == "d":
            parts[name] = st.integers(int(lo), int(hi))
        elif lo == hi:
            parts[name] = st.just(float(lo))
        else:
            parts[name] = st.floats(float(lo), float(hi), exclude_min=lo_open, exclude_max=hi_open,
                                    allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return st.fixed_dictionaries(parts)


def _strategy(domain: dict[str, list], activations: Sequence[str], tables: bool = True):
    """The search's points: the activation (shrinking towards the first), d an integer, the other
    parameters uniform over their ranges; when kernel `tables` are needed, for an activation whose
    kernel needs quadrature sigma_w and sigma_b take SIGMA_GRID_QUADRATURE evenly spaced values each
    (as in ``check``), so that at most that many squared kernel tables are built."""
    from hypothesis import strategies as st

    from .strategies import SIGMA_GRID_QUADRATURE

    def axis(name, lo, hi, lo_open, hi_open, grid):
        if name == "d":
            return st.integers(int(lo), int(hi))
        if lo == hi:
            return st.just(float(lo))
        if grid and name in ("sigma_w", "sigma_b"):
            return st.sampled_from(_grid(float(lo), float(hi), lo_open, hi_open, SIGMA_GRID_QUADRATURE))
        return st.floats(float(lo), float(hi), exclude_min=lo_open, exclude_max=hi_open,
                         allow_nan=False, allow_infinity=False, allow_subnormal=False)

    per = {a: st.fixed_dictionaries({"activation": st.just(a),
                                     **{n: axis(n, *r, tables and needs_quadrature(a))
                                        for n, r in domain.items()}})
           for a in activations}
    if len(per) == 1:
        return next(iter(per.values()))
    return st.sampled_from(list(per)).flatmap(per.__getitem__)


def all_activations() -> tuple[str, ...]:
    """The activations searched by ``--activations all`` (closed-form kernels first)."""
    from .strategies import CLOSED_FORM_ACTIVATIONS, QUADRATURE_ACTIVATIONS
    return tuple(CLOSED_FORM_ACTIVATIONS) + tuple(QUADRATURE_ACTIVATIONS)


# ----------------------------------------------------------------------------- search
@dataclass
class FindResult:
    """The outcome of :func:`find`."""

    statement: str
    assumption: str | None
    found: bool
    counterexample: dict[str, Any] | None
    values: dict[str, float] | None
    errors: dict[str, float] | None
    examples: int
    undetermined: int
    domain: dict[str, Any]
    seed: int
    max_examples: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from .stats import _jsonable
        return _jsonable({
            "statement": self.statement, "assumption": self.assumption, "found": self.found,
            "counterexample": self.counterexample,
            "values": None if self.values is None else {k: _num(v) for k, v in self.values.items()},
            "errors": None if self.errors is None else {k: _num(v) for k, v in self.errors.items()},
            "examples": self.examples, "undetermined": self.undetermined, "domain": self.domain,
            "seed": self.seed, "max_examples": self.max_examples, "notes": self.notes})

    def text(self) -> str:
        cond = f" assuming {self.assumption}" if self.assumption else ""
        if not self.found:
            lines = [f"no counterexample to {self.statement}{cond} in {self.examples} examples "
                     f"(seed {self.seed}; {self.undetermined} undetermined within numerical error)"]
        else:
            c = self.counterexample
            where = (f"  field rqf, d = {c['d']}, sigma_q = {c['sigma_q']:.10g}, beta = {c['beta']:.10g}"
                     if c.get("field") == "rqf" else
                     f"  activation {c['activation']}, d = {c['d']}, sigma_w = {c['sigma_w']:.10g}, "
                     f"sigma_b = {c['sigma_b']:.10g}, sigma_a = {c['sigma_a']:.10g}, beta = {c['beta']:.10g}")
            lines = [f"counterexample to {self.statement}{cond} (shrunk; {self.examples} examples, "
                     f"seed {self.seed}):", where,
                     "  " + "   ".join(f"{k} = {self.values[k]:.10g} (+- {self.errors[k]:.2g})"
                                      for k in RATES if not math.isnan(self.values[k]))]
        dom = ", ".join(f"{k} in {v}" for k, v in self.domain.items())
        lines.append(f"domain: {dom}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _num(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class _Counterexample(Exception):
    """Raised inside the hypothesis test to mark a counterexample (hypothesis then shrinks)."""


def search_settings(max_examples: int, phases, database=None):
    """The hypothesis settings of every search of the package (``find``, ``verify --explore``,
    ``check --candidate``): `max_examples` drawn, the given phases, no deadline, no health checks,
    quiet; reproducible from ``@seed`` (``derandomize`` off: the seed decides), `database` (a
    hypothesis example database) replayed first when given."""
    from hypothesis import HealthCheck, Verbosity, settings
    return settings(max_examples=max_examples, derandomize=False, database=database, deadline=None,
                    phases=tuple(phases), verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck),
                    report_multiple_bugs=False, print_blob=False)


def find(statement: str, assume: str | None = None, *, activation: str | None = "relu",
         activations: Sequence[str] | None = None, max_examples: int = 100, seed: int = 0,
         max_shrinks: int = 300, field: str = "mlp", sigma_q: float | None = None) -> FindResult:
    """Search the domain for a counterexample to `statement` (under `assume`), shrunk.

    `activations` (a list, e.g. :func:`all_activations`) overrides `activation`.  At most
    `max_examples` parameter sets are drawn; once a counterexample is found at most
    `max_shrinks` further evaluations are spent shrinking it (deterministic, so the result
    depends only on `seed`).  ``field="rqf"`` searches the random quadratic form over
    :data:`RQF_DOMAIN` (`sigma_q` pins its scale; the statement may use :data:`RQF_QUANTITIES`, a quantity
    it does not define is refused with the reason: :data:`RQF_UNDEFINED`).
    """
    from hypothesis import Phase, assume as h_assume, given
    from hypothesis import seed as h_seed, target
    from hypothesis.errors import Unsatisfiable

    from .activations import get_activation

    from .params import MODEL_DEFAULTS, ModelParams, check_field
    field = check_field(field)
    stmt = parse_statement(statement)
    cond = parse_statement(assume, "assumption") if assume else None
    max_examples = check_int("max_examples", max_examples, 1)
    seed = check_int("seed", seed, 0)
    max_shrinks = check_int("max_shrinks", max_shrinks, 0)
    names = stmt.names | (cond.names if cond else frozenset())
    _refuse_names(names, field)
    rqf = field == "rqf"
    if rqf:
        if activations or (activation or "relu") != MODEL_DEFAULTS["activation"]:
            raise ParameterError("activation", ",".join(activations) if activations else activation,
                                 "describes the MLP block and does not enter field='rqf' (its noise is "
                                 "sigma_q (B + B^T)/2 y): leave it at its default")
        start = dict(RQF_DOMAIN)
        if sigma_q is not None:
            S = ModelParams(field="rqf", sigma_q=sigma_q).sigma_q        # ModelParams' range
            start["sigma_q"] = (S, S)
        acts = ["rqf"]
        domain = _narrow({k: [lo, hi, False, False] for k, (lo, hi) in start.items()}, cond)
    else:
        if sigma_q is not None and sigma_q != MODEL_DEFAULTS["sigma_q"]:
            raise ParameterError("sigma_q", sigma_q, "enters only the rqf field (field='rqf'; find --field rqf)")
        acts = list(activations) if activations else [activation or "relu"]
        acts = list(dict.fromkeys(get_activation(a).name for a in acts))
        domain = _narrow({k: [lo, hi, False, False] for k, (lo, hi) in DEFAULT_DOMAIN.items()}, cond)
    params_names = RQF_PARAMETERS if rqf else PARAMETERS
    tables = not rqf and not names <= POINT_QUANTITIES       # else k0 and k1 alone: 1-D quadratures, no table

    cache: dict[tuple, tuple[bool | None, float, Any]] = {}
    state = {"evals": 0, "first": None, "undetermined": 0, "last": None}

    def evaluate(point):
        key = tuple(point.get(k) for k in ("activation",) + params_names)
        if key in cache:
            return cache[key]
        if state["first"] is not None and state["evals"] - state["first"] >= max_shrinks:
            return None, math.nan, None          # shrinking budget spent: not a counterexample
        state["evals"] += 1
        try:
            values, errors = rqf_quantities(point) if rqf else quantities(point, names)
        except ParameterError:
            out = (None, math.nan, None)         # outside the model's domain (e.g. sw = sb = 0)
        except SSSNError as exc:                 # a quantity is not computable there: undetermined
            state["undetermined"] += 1
            state.setdefault("not_computable", f"{type(exc).__name__}: {exc}")
            out = (None, math.nan, None)
        else:
            ok_assume = True if cond is None else judge(cond.expr, values, errors)[0]
            if ok_assume is not True:
                out = ("skip", math.nan, None)
            else:
                truth, margin = judge(stmt.expr, values, errors)
                if truth is None:
                    state["undetermined"] += 1
                out = (truth, margin, (values, errors))
        cache[key] = out
        return out

    @search_settings(max_examples, (Phase.generate, Phase.target, Phase.shrink))
    @h_seed(seed)
    @given(_rqf_strategy(domain) if rqf else _strategy(domain, acts, tables))
    def search(point):
        truth, margin, data = evaluate(point)
        h_assume(truth != "skip")
        if not math.isnan(margin):
            target(-max(-1e6, min(1e6, margin)), label="closeness to failing")
        if truth is False:
            if state["first"] is None:
                state["first"] = state["evals"]
            state["last"] = (dict(point), data)
            raise _Counterexample()

    notes = []
    quad = [a for a in acts if tables and needs_quadrature(a)]
    if quad:
        from .strategies import SIGMA_GRID_QUADRATURE as G
        notes.append(f"{', '.join(quad)}: kernel by quadrature, so sigma_w and sigma_b were searched on a {G} x {G} "
                     "grid over their ranges (at most that many kernel tables)")
    proj = sorted(stmt.names & {"lambda_bar_proj", "lambda_proj"})
    if proj and not rqf:                         # the rqf field is odd: they are defined everywhere
        notes.append(f"{', '.join(proj)}: defined for odd fields only (phi odd, sigma_b = 0) and undetermined "
                     "elsewhere; --assume 'sigma_b == 0' searches only there")
    try:
        search()
    except _Counterexample:
        pass
    except Unsatisfiable:
        notes.append("the assumption held at no drawn parameter set")
    if "not_computable" in state:
        notes.append(f"some parameter sets were not computable (counted undetermined), e.g. {state['not_computable']}")
    dom: dict[str, Any] = {k: [v[0], v[1]] for k, v in domain.items()}
    if rqf:
        dom["field"] = ["rqf"]
    else:
        dom["activation"] = acts
    strict = [f"{k} > {v[0]:g}" for k, v in domain.items() if v[2]]
    strict += [f"{k} < {v[1]:g}" for k, v in domain.items() if v[3]]
    if strict:
        dom["strict"] = strict
    if state["first"] is not None and state["evals"] - state["first"] >= max_shrinks:
        notes.append(f"shrinking stopped after {max_shrinks} evaluations (max_shrinks)")
    if state["last"] is None:
        return FindResult(stmt.text, cond and cond.text, False, None, None, None, state["evals"],
                          state["undetermined"], dom, seed, max_examples, notes)
    point, (values, errors) = state["last"]
    point = ({"field": "rqf"} if rqf else {"activation": point["activation"]})
    point.update({"d": int(state["last"][0]["d"]),
                  **{k: float(state["last"][0][k]) for k in params_names if k != "d"}})
    return FindResult(stmt.text, cond and cond.text, True, point, values, errors, state["evals"],
                      state["undetermined"], dom, seed, max_examples, notes)


__all__ = ["find", "FindResult", "parse_statement", "judge", "quantities", "rqf_quantities", "all_activations",
           "DEFAULT_DOMAIN", "RQF_DOMAIN", "QUANTITIES", "RQF_QUANTITIES", "RQF_UNDEFINED", "RATES",
           "LAMBDA_BAR_ABS_ERR", "LAMBDA_BAR_REL_ERR"]


# ----------------------------------------------------------------------------- claim exploration
#: budget entries that are sample sizes (multiplied by the confirmation factor)
SAMPLE_KEYS = ("paths", "paths_transformer", "paths_energy", "samples", "general_samples")
#: the confirmation stage runs with this many times the samples of the screening
SAMPLE_FACTOR = 4
#: examples explored per claim when ``verify`` is not given ``--explore``
DEFAULT_EXPLORE = {"quick": 2, "full": 10}
#: the budget each explored example is screened at, per ``verify`` mode: the quick one in both.  A full
#: run's exploration gains breadth (5x the points), not depth per point: one example at the full budget
#: cost ~10x one at the quick budget, so 10 full-budget examples per claim made the exploration of a full
#: run several hours long (stopped after 50 min at seed 0); the confirmation stage still multiplies the
#: samples by SAMPLE_FACTOR, and each example records the power its screen achieved
EXPLORE_BUDGET = {"quick": "quick", "full": "quick"}


def example_key(seed, name: str, config: tuple, stage: str) -> Key:
    """The key of one example: it depends on the configuration, not on when it was drawn (so
    shrinking and replays see the same numbers for the same parameters)."""
    return as_key(seed, "explore", name, stage, repr(tuple(config)))


def domain_text(strategy) -> str:
    """A claim's domain in words (``d in [2, 6]; activation in {relu, tanh}; hidden in {none, (relu 1.0 0.5)}``)
    from the ranges ``strategies.claim_configs`` records, else the strategy's repr."""
    spec = getattr(strategy, "spec", None)
    if not spec:
        return repr(strategy)
    parts = []
    for name, v in spec.items():
        if name == "hidden":      # the deep block's stacks (strategies.HIDDEN_STACKS): "; " is inside a stack
            v = [x if x == "none" else f"({x})" for x in v]
        if all(isinstance(x, str) for x in v):
            parts.append(f"{name} in {{{', '.join(v)}}}" if len(v) > 1 else f"{name} = {v[0]}")
        else:
            parts.append(f"{name} = {v[0]:g}" if v[0] == v[1] else f"{name} in [{v[0]:g}, {v[1]:g}]")
    excluded = getattr(strategy, "excluded", None)
    return "; ".join(parts) + (f"; excluding where {excluded}" if excluded else "")


def example_pvalue(result) -> float:
    """One p-value per example: Bonferroni over its statistical checks; 0 if a deterministic
    check failed (exact algebra or quadrature beyond its stated tolerance)."""
    if any(c.pvalue is None and not c.passed for c in result.checks):
        return 0.0
    ps = [c.pvalue for c in result.checks if c.pvalue is not None]
    return 1.0 if not ps else min(1.0, len(ps) * min(ps))


def error_record(config: tuple, stage: str, key, level: float, exc: BaseException, *,
                 failed_in: str = "screen") -> dict[str, Any]:
    """An explored example whose run raised: verdict "error", the reason (the exception's type and
    one-line message), ``error_kind`` "numerical" (:class:`~sssn_verify.errors.NumericalError`: the
    toolkit's own numbers failed at valid parameters) or "internal" (anything else: a bug)."""
    from .errors import NumericalError
    reason = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
    return {"config": list(config), "stage": stage, "key": repr(key), "pvalue": None, "screen_level": level,
            "rejected": False, "confirm_pvalue": None, "confirmed": False, "seconds": None,
            "verdict": "error", "error": reason, "error_stage": failed_in,
            "error_kind": "numerical" if isinstance(exc, NumericalError) else "internal"}


def _headline(result) -> dict[str, Any]:
    """The check a claim result shows (its estimate, derived value and standard error), for the report."""
    h = result.headline
    return {"estimate": h.estimate, "expected": h.expected, "stderr": h.stderr, "check": h.name}


def run_example(name: str, mode: str, seed, config: tuple, budget: dict | None = None,
                formula: Any = None):
    """The exploration's unit of work: claim `name` checked at one configuration (pure)."""
    from .claims import get_claim
    b = dict(budget or {})
    b["configs"] = [tuple(config)]
    return get_claim(name).run(mode, seed, budget=b, formula=formula)


@dataclass
class Exploration:
    """What exploring one claim gave: every example with its verdicts, and the minimal failure."""

    claim: str
    domain: str
    n_requested: int
    screen_level: float
    confirm_level: float
    examples: list[dict[str, Any]]
    counterexample: dict[str, Any] | None
    seconds: float
    notes: list[str] = field(default_factory=list)
    fields: tuple = ()

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The examples whose run raised (verdict "error"), with their parameters and reasons."""
        return [x for x in self.examples if x.get("verdict") == "error"]

    @property
    def failed(self) -> bool:
        """A confirmed counterexample was found."""
        return self.counterexample is not None

    @property
    def passed(self) -> bool:
        """No counterexample and no point that failed to run."""
        return self.counterexample is None and not self.errors

    @property
    def verdict(self) -> str:
        return "FAIL" if self.failed else ("ERROR" if self.errors else "PASS")

    def to_dict(self) -> dict[str, Any]:
        from .stats import _jsonable
        return _jsonable({"claim": self.claim, "passed": self.passed, "verdict": self.verdict,
                          "n_errors": len(self.errors), "domain": self.domain,
                          "fields": list(self.fields),
                          "examples": self.examples, "n_examples": len(self.examples),
                          "screen_level": self.screen_level, "confirm_level": self.confirm_level,
                          "counterexample": self.counterexample, "seconds": round(self.seconds, 3),
                          "notes": self.notes})


def explore_claim(name: str, n_examples: int, *, mode: str = "quick", seed: int = 0,
                  screen_level: float = 1e-3, confirm_level: float = 0.01, shrink_level: float = 1e-3,
                  database: str | None = None, formula: Any = None, budget: dict | None = None,
                  confirm_factor: int | None = None, max_shrinks: int = 40) -> Exploration:
    """Explore claim `name` over its domain: screen, confirm, shrink.

    Hypothesis draws `n_examples` configurations from the claim's ``domain`` (seeded by
    `seed`; examples stored in `database`, a directory, are replayed first).  Each is checked
    at the `mode` budget with a seed derived from (seed, configuration) and *screened*: its
    p-value (Bonferroni over its checks) is compared with `screen_level` (the caller's
    Bonferroni share of the family level).  A rejected example is re-run with a fresh seed and
    `confirm_factor` times the sample sizes; only when that *confirmation* also rejects at
    `confirm_level` does it count.  Hypothesis then shrinks it with screen + confirmation inside
    its predicate (screens during shrinking at ``shrink_level / max_shrinks``; at most
    `max_shrinks` new configurations) and stores the minimal one in `database`.
    """
    import time

    from hypothesis import Phase, given
    from hypothesis import seed as h_seed
    from hypothesis.database import DirectoryBasedExampleDatabase

    from .claims import get_claim

    claim = get_claim(name)
    if claim.domain is None:
        raise ParameterError("claim", name, "declares no domain to explore")
    n_examples = check_int("n_examples", n_examples, 1)
    base = dict(claim.budgets[mode])
    base.update(budget or {})
    confirm_factor = SAMPLE_FACTOR if confirm_factor is None else check_int("confirm_factor", confirm_factor, 1)
    bigger = {k: int(v) * confirm_factor for k, v in base.items() if k in SAMPLE_KEYS}
    t0 = time.perf_counter()
    cache: dict[tuple, dict[str, Any]] = {}
    state = {"failed": None, "shrinks": 0, "screens": 0}

    def evaluate(config: tuple) -> dict[str, Any]:
        key = tuple(config)
        if key in cache:
            return cache[key]
        shrinking = state["failed"] is not None
        if shrinking and state["shrinks"] >= max_shrinks:
            return {"confirmed": False}          # shrinking budget spent: treated as passing
        level = shrink_level / max_shrinks if shrinking else screen_level
        state["shrinks" if shrinking else "screens"] += 1
        s1 = example_key(seed, name, key, "screen")
        try:
            r1 = run_example(name, mode, s1, key, budget, formula)
        except Exception as exc:  # noqa: BLE001 - one point never abandons the run: it is reported
            rec = error_record(key, "shrink" if shrinking else "screen", s1, level, exc)
            cache[key] = rec
            return rec
        p1 = example_pvalue(r1)
        rec = {"config": list(key), "stage": "shrink" if shrinking else "screen", "key": repr(s1),
               "pvalue": p1, "screen_level": level, "rejected": p1 < level, "confirm_pvalue": None,
               "confirmed": False, "seconds": round(r1.seconds, 3), "screen_headline": _headline(r1)}
        if rec["rejected"]:
            s2 = example_key(seed, name, key, "confirm")
            try:
                r2 = run_example(name, mode, s2, key, {**(budget or {}), **bigger}, formula)
            except Exception as exc:  # noqa: BLE001 - reported with the point, as in the screen
                rec.update(error_record(key, rec["stage"], s1, level, exc, failed_in="confirmation"),
                           pvalue=p1, rejected=True, confirm_key=repr(s2))
                cache[key] = rec
                return rec
            p2 = example_pvalue(r2)
            rec.update(confirm_key=repr(s2), confirm_pvalue=p2, confirmed=p2 < confirm_level,
                       seconds=round(r1.seconds + r2.seconds, 3),
                       headline=_headline(r2))
        rec["verdict"] = "failed" if rec["confirmed"] else ("not confirmed" if rec["rejected"] else "passed")
        cache[key] = rec
        return rec

    db = DirectoryBasedExampleDatabase(database) if database else None

    @search_settings(n_examples, (Phase.reuse, Phase.generate, Phase.shrink), database=db)
    @h_seed(seed)
    @given(claim.domain)
    def search(config):
        rec = evaluate(config)
        if rec["confirmed"]:
            if state["failed"] is None:
                state["failed"] = tuple(config)
            state["last"] = tuple(config)
            raise _Counterexample()

    try:
        search()
    except _Counterexample:
        pass
    examples = list(cache.values())
    counter = None
    notes = []
    if state["failed"] is not None:
        counter = {"first": list(state["failed"]), "shrunk": list(state["last"]),
                   **{k: cache[state["last"]].get(k) for k in ("pvalue", "confirm_pvalue", "headline")}}
        if state["shrinks"] >= max_shrinks:
            notes.append(f"shrinking stopped after {max_shrinks} new configurations")
    return Exploration(name, domain_text(claim.domain), n_examples, screen_level, confirm_level, examples,
                       counter, time.perf_counter() - t0, notes, tuple(getattr(claim.domain, "fields", ())))


@dataclass
class SuiteExploration:
    """Exploration of several claims, with the family-wise bookkeeping."""

    explorations: list[Exploration]
    skipped: dict[str, str]
    n_per_claim: int
    alpha: float
    confirm_level: float
    seed: int
    database: str | None
    figures: list[str] = field(default_factory=list)
    #: the claims' budget every example was screened at (EXPLORE_BUDGET)
    budget: str = "quick"
    #: claim -> {"png": name, "pdf": name} of its figure in the report folder, and the PNG bytes
    figure_files: dict[str, dict[str, str]] = field(default_factory=dict)
    images: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.explorations)

    @property
    def failed(self) -> bool:
        """Some claim's exploration confirmed a counterexample."""
        return any(e.failed for e in self.explorations)

    @property
    def errors(self) -> list[tuple[str, dict[str, Any]]]:
        """(claim, example) of every explored point whose run raised."""
        return [(e.claim, x) for e in self.explorations for x in e.errors]

    def exit_code(self) -> int:
        """The exploration's part of ``verify``'s exit code: 1 a counterexample, else 3 if a point raised a
        non-numerical (internal) error, else 4 if a point failed numerically, else 0."""
        if self.failed:
            return 1
        kinds = {x.get("error_kind") for _, x in self.errors}
        return 3 if "internal" in kinds else (4 if kinds else 0)

    @property
    def familywise_text(self) -> str:
        m = sum(e.n_requested for e in self.explorations)
        return (f"exploration: {m} planned examples, each at the {self.budget} budget, screened at alpha/M = {self.alpha:g}/M each (Bonferroni; "
                f"stored examples replayed first are included in M); a rejection counts only if a fresh-seed "
                f"run with {SAMPLE_FACTOR}x the samples confirms it at level {self.confirm_level:g}, so the "
                f"family-wise false-alarm probability is <= {self.alpha:g} x {self.confirm_level:g} = "
                f"{self.alpha * self.confirm_level:.2g}")

    def to_dict(self) -> dict[str, Any]:
        from .stats import _jsonable
        return _jsonable({"passed": self.passed, "n_per_claim": self.n_per_claim, "alpha": self.alpha,
                          "confirm_level": self.confirm_level, "seed": self.seed, "budget": self.budget,
                          "familywise": self.alpha * self.confirm_level, "text": self.familywise_text,
                          "database": self.database, "figures": self.figures,
                          "claims": [e.to_dict() for e in self.explorations], "skipped": self.skipped})

    def table(self) -> str:
        """One line per claim, then one per example."""
        w = max([18, *(len(e.claim) for e in self.explorations), *(len(n) for n in self.skipped)])
        lines = [f"{'claim':{w}s} {'examples':>8s} {'verdict':>8s}  minimal counterexample"]
        for e in self.explorations:
            c = e.counterexample
            lines.append(f"{e.claim:{w}s} {len(e.examples):8d} {e.verdict:>8s}  "
                         f"{'-' if c is None else tuple(c['shrunk'])}")
            for x in e.errors:
                names = e.fields if len(e.fields) == len(x["config"]) else range(len(x["config"]))
                where = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in zip(names, x["config"]))
                from .escape import terminal
                lines.append(f"{'':{w}s} {'':8s} {'error':>8s}  ({terminal(where)}) [{x['error_kind']}, "
                             f"{x['error_stage']}] {terminal(x['error'])}")
        lines += [f"{name:{w}s} {'-':>8s} {'skipped':>8s}  ({why})" for name, why in self.skipped.items()]
        lines.append(self.familywise_text)
        return "\n".join(lines)



def _replayable(directory: str | None) -> int:
    """How many examples a hypothesis directory database holds (each may be replayed once)."""
    import os
    if not directory or not os.path.isdir(directory):
        return 0
    return sum(len(files) for _, _, files in os.walk(directory))


def explore_task(name: str, n: int, mode: str, seed: int, screen_level: float, confirm_level: float,
                 shrink_level: float, database: str | None) -> Exploration:
    """The executor's task unit: one claim's exploration (pure but for its example database)."""
    return explore_claim(name, n, mode=mode, seed=seed, screen_level=screen_level,
                         confirm_level=confirm_level, shrink_level=shrink_level, database=database)


def explore_suite(claims: Sequence[str] | None, n_per_claim: int, *, mode: str = "quick", seed: int = 0,
                  alpha: float = 0.01, confirm_level: float = 0.01, report_dir: str | None = None,
                  progress: bool = False, executor: Any = None, budget: str | None = None) -> SuiteExploration:
    """Explore every named claim that declares a domain (all by default); see :func:`explore_claim`.

    `mode` is the ``verify`` mode; each example runs at the claims' `budget` (default
    ``EXPLORE_BUDGET[mode]``, the quick budget: a full run explores more points, not dearer ones).

    The screening level of each example is alpha / M, M = the number of planned examples over
    all claims plus the stored examples that will be replayed; with the confirmation stage the
    family-wise false-alarm probability is at most alpha x confirm_level.  Each claim's exploration
    is one task of ``sssn_verify.executor`` (in-process, or on a dask cluster).  Examples are stored
    (hypothesis directory database) under ``report_dir/hypothesis-examples/<claim>``.  Nothing
    is rendered here: ``report.write_report(..., exploration=res)`` draws its figures and section.
    """
    import os

    from .claims import CLAIMS, get_claim
    n_per_claim = check_int("explore", n_per_claim, 0)
    if mode not in EXPLORE_BUDGET:
        raise ParameterError("mode", mode, f"is not one of {', '.join(EXPLORE_BUDGET)}")
    budget = EXPLORE_BUDGET[mode] if budget is None else budget
    if budget not in EXPLORE_BUDGET:
        raise ParameterError("budget", budget, f"is not one of {', '.join(EXPLORE_BUDGET)}")
    names = list(CLAIMS) if not claims else list(dict.fromkeys(claims))
    chosen = [n for n in names if get_claim(n).domain is not None]
    skipped = {n: "checked at fixed parameters only (no domain declared)" for n in names if n not in chosen}
    dbs = {n: os.path.join(report_dir, "hypothesis-examples", n) if report_dir else None for n in chosen}
    m = sum(n_per_claim + _replayable(dbs[n]) for n in chosen) or 1
    from .executor import Task, using
    tasks = [Task(f"explore:{n}", explore_task, (n, n_per_claim, budget, seed, alpha / m, confirm_level, alpha,
                                                 dbs[n])) for n in (chosen if n_per_claim else [])]
    with using(executor) as ex:
        out = [o.value for o in ex.run(tasks, desc="explore", progress=progress)]
    res = SuiteExploration(out, skipped, n_per_claim, alpha, confirm_level, seed,
                           os.path.join(report_dir, "hypothesis-examples") if report_dir else None, budget=budget)
    return res


def write_json(res: SuiteExploration, directory: str) -> str:
    """``exploration.json`` in `directory`, written atomically (``outputs.write_atomic``)."""
    import json
    import os

    from .outputs import write_atomic
    path = os.path.join(directory, "exploration.json")
    write_atomic(path, json.dumps(res.to_dict(), indent=2, allow_nan=False, default=str))
    return path

