"""Check a user's own formula for a claim against numerical evidence.

``check_candidate(claim, candidate, ...)`` parses the candidate with sympy in a
restricted namespace, evaluates it and the derived formula at the parameters
(the user's, or, when none are given, the point of a candidate grid where the two
differ most relative to the numerical error), computes evidence that does not
use the derivation, and answers ``consistent`` or ``rejected``:

* ``kernel``   (expression in rho, sigma_w, sigma_b, sigma_a): deterministic quadrature of
  the defining Gaussian integral (``numeric.kernels``), tolerance 10x its stated error;
* ``lambda1``  (in d, k0, k1 or d, sigma_w, sigma_b, sigma_a): Monte Carlo tangent flow of the
  Gaussian transformer (engine), z-test at the stated level with a time-step bias allowance;
* ``ito_drift`` (the coefficient gamma of c(x) = gamma x, in d, k0): one-step Monte Carlo
  moments of the finite-width layer map (engine), Richardson-extrapolated in the step, z-test;
* ``lambda_bar`` (in d, k0, k1, beta, sigma_*): the supremum of L2 f / f over rho computed
  numerically (``numeric.rates``), tolerance from its stated grid/quadrature error.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from .errors import CandidateError, ClaimError
from .expr import FUNCTIONS, parse_expression
from .params import ModelParams, check_int, check_real
from .stats import _jsonable, agreement_test, deterministic_check

CHECKABLE = ("lambda1", "lambda_bar", "ito_drift", "kernel")

# symbols a candidate may use, per claim (aliases map to the canonical names)
_VARIABLES = {
    "lambda1": ("d", "k0", "k1", "sigma_w", "sigma_b", "sigma_a"),
    "lambda_bar": ("d", "k0", "k1", "beta", "sigma_w", "sigma_b", "sigma_a"),
    "ito_drift": ("d", "k0", "sigma_w", "sigma_b", "sigma_a"),
    "kernel": ("rho", "sigma_w", "sigma_b", "sigma_a"),
}
_ALIASES = {"sw": "sigma_w", "sb": "sigma_b", "sa": "sigma_a", "r": "rho"}
_FUNCTIONS = {
    "sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "arcsin": sp.asin, "arccos": sp.acos,
    "arctan": sp.atan, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh, "erf": sp.erf,
    "Abs": sp.Abs, "abs": sp.Abs, "Max": sp.Max, "Min": sp.Min, "max": sp.Max, "min": sp.Min,
    "pi": sp.pi, "E": sp.E,
}


@dataclass(frozen=True)
class Candidate:
    """A parsed candidate: its text, sympy expression and the claim it is for."""

    claim: str
    text: str
    expr: sp.Expr

    def value(self, values: dict[str, float]) -> float:
        subs = {sp.Symbol(k): v for k, v in values.items()}
        val = complex(sp.N(self.expr.subs(subs), 17))
        if abs(val.imag) > 1e-12 * max(1.0, abs(val.real)) or not math.isfinite(val.real):
            raise CandidateError(f"candidate {self.text!r} is not a finite real number at {values}")
        return float(val.real)


def parse_candidate(claim: str, text: str) -> Candidate:
    """Parse `text` with sympy, allowing only the claim's variables and elementary functions."""
    if claim not in CHECKABLE:
        raise ClaimError(f"cannot check claim {claim!r}; checkable: {', '.join(CHECKABLE)}")
    if not isinstance(text, str) or not text.strip():
        raise CandidateError("empty candidate expression")
    if len(text) > 2000:
        raise CandidateError("candidate expression is too long (max 2000 characters)")
    allowed = set(_VARIABLES[claim])
    names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))
    bad = sorted(n for n in names if n not in allowed and n not in _ALIASES and n not in _FUNCTIONS)
    if bad or "__" in text:
        raise CandidateError(
            f"candidate for {claim} may use only {', '.join(sorted(allowed))} and the functions "
            f"{', '.join(sorted(k for k in _FUNCTIONS if k not in ('E', 'pi')))} (got {', '.join(bad) or '__'})")
    local = {n: sp.Symbol(n) for n in allowed}
    local.update({a: sp.Symbol(c) for a, c in _ALIASES.items() if c in allowed})
    local.update(_FUNCTIONS)
    # the one safe language (sssn_verify.expr): parse_expr evaluated string arguments (issue 10)
    expr = parse_expression(text, {k: v for k, v in local.items() if isinstance(v, sp.Symbol)},
                            functions={k: FUNCTIONS[k] for k in _FUNCTIONS if k in FUNCTIONS},
                            error=CandidateError)
    if not isinstance(expr, sp.Expr):
        raise CandidateError(f"candidate {text!r} is not a scalar expression")
    extra = {s.name for s in expr.free_symbols} - allowed
    if extra:
        raise CandidateError(f"candidate {text!r} uses unknown symbols {', '.join(sorted(extra))}")
    return Candidate(claim, text, expr)


@dataclass
class CheckOutcome:
    """The answer of `check`: verdict and the evidence behind it."""

    claim: str
    candidate: str
    verdict: str                      # "consistent" or "rejected"
    estimate: float                   # the numerical evidence
    stderr: float
    candidate_value: float
    derived_value: float
    parameters: dict[str, Any]
    level: float
    pvalue: float | None
    tolerance: float
    n: int
    seed: int | None
    method: str
    chosen: str                       # "user" or "grid (max discrepancy)"
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


# ----------------------------------------------------------------------------- parameters

_GRID_D = (2, 3, 4, 6, 9)
_GRID_SIGMAS = ((1.0, 0.0, 1.0), (1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (0.6, 1.0, 1.2), (1.3, 0.4, 0.8))
_GRID_BETA = (0.0, 1.0, 3.0)
_GRID_RHO = (-0.95, -0.5, 0.0, 0.5, 0.9, 0.99)


def _kernel_obj(activation, sw, sb, sa):
    from .numeric.kernels import kernel
    return kernel(activation, sw, sb, sa)


def _values(claim: str, point: dict[str, Any]) -> dict[str, float]:
    """All variables a candidate may use at `point` (k0, k1 from the kernel numerics)."""
    out = {k: float(point[k]) for k in ("d", "sigma_w", "sigma_b", "sigma_a", "beta", "rho") if k in point}
    if claim in ("lambda1", "lambda_bar", "ito_drift"):
        k = _kernel_obj(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"])
        out["k0"], out["k1"] = float(k.k0), float(k.k1)
    return out


# ----------------------------------------------------------------------------- derived formulas

def _derived_lambda1(v):
    from .symbolic.lyapunov import lambda1_tangent
    from .symbolic.two_point import d, k0, k1
    return float(lambda1_tangent().subs({d: v["d"], k0: v["k0"], k1: v["k1"]}))


def _derived_ito(v):
    from .claims.ito_drift import derived_coefficient
    return float(derived_coefficient()(v["d"], v["k0"]))


def _derived_kernel(point):
    from .claims.kernel import derived_formula
    return derived_formula().K(point["activation"], point["rho"], point["sigma_w"], point["sigma_b"],
                               point["sigma_a"])


def _lambda_bar(point):
    from .numeric.rates import lambda_bar
    return lambda_bar(point["activation"], int(point["d"]), point["sigma_w"], point["sigma_b"],
                      point["sigma_a"], point["beta"])


def _params(point, **over) -> ModelParams:
    fields = dict(d=int(point.get("d", 3)), activation=point["activation"], sigma_w=point["sigma_w"],
                  sigma_b=point["sigma_b"], sigma_a=point["sigma_a"], beta=point.get("beta", 1.0))
    fields.update(over)
    return ModelParams(**fields)


def _derived_value(claim, point, v):
    if claim == "lambda1":
        return _derived_lambda1(v)
    if claim == "ito_drift":
        return _derived_ito(v)
    if claim == "kernel":
        return _derived_kernel(point)
    return float(_lambda_bar(point)[0])


def _error_scale(claim, point, v, derived) -> float:
    """A rough model of the evidence's error at `point` (for choosing parameters only)."""
    if claim == "kernel":
        return 1e-7 + 1e-9 * abs(derived)
    if claim == "lambda_bar":
        return 1e-6 + 1e-4 * abs(derived)
    # Monte Carlo: stderr and bias allowance both scale with the noise strength
    return 0.03 * (v["k0"] + (v.get("k1", 0.0) if math.isfinite(v.get("k1", 0.0)) else 0.0)) * math.sqrt(v["d"])


def _grid(claim, activation, given: dict[str, Any]):
    dims = (given["d"],) if given.get("d") is not None else _GRID_D
    if all(given.get(k) is not None for k in ("sigma_w", "sigma_b", "sigma_a")):
        sig = ((given["sigma_w"], given["sigma_b"], given["sigma_a"]),)
    else:
        sig = tuple((given.get("sigma_w") if given.get("sigma_w") is not None else a,
                     given.get("sigma_b") if given.get("sigma_b") is not None else b,
                     given.get("sigma_a") if given.get("sigma_a") is not None else c)
                    for a, b, c in _GRID_SIGMAS)
        sig = tuple(dict.fromkeys(sig))
    betas = (given["beta"],) if given.get("beta") is not None else _GRID_BETA
    rhos = (given["rho"],) if given.get("rho") is not None else _GRID_RHO
    for sw, sb, sa in sig:
        base = dict(activation=activation, sigma_w=sw, sigma_b=sb, sigma_a=sa)
        if claim == "kernel":
            for r in rhos:
                yield dict(base, rho=r)
        elif claim == "lambda_bar":
            for dd in dims:
                for b in betas:
                    yield dict(base, d=dd, beta=b)
        else:
            for dd in dims:
                yield dict(base, d=dd)


def choose_parameters(claim: str, cand: Candidate, activation: str, given: dict[str, Any]):
    """The grid point (completing the user's parameters) where candidate and derivation differ most
    relative to the error scale; ties (e.g. a correct candidate) keep the first point."""
    best, best_score = None, -1.0
    points = list(_grid(claim, activation, given))
    if claim == "lambda_bar" and len(points) > 1:
        # the closed form of lambda_bar is the edge value: choose among the points where the
        # supremum sits at rho -> 1 (all points if there is none)
        at_edge = [pt for pt in points if _lambda_bar(pt)[1] == 1.0]
        points = at_edge or points
    for point in points:
        if claim == "lambda1" and _kernel_obj(activation, point["sigma_w"], point["sigma_b"],
                                              point["sigma_a"]).k1 == math.inf:
            continue
        v = _values(claim, point)
        try:
            c = cand.value(v)
        except CandidateError:
            c = math.nan
        der = _derived_value(claim, point, v)
        if not math.isfinite(c):
            score = math.inf
        else:
            score = abs(c - der) / _error_scale(claim, point, v, der)
        if best is None or score > best_score * (1 + 1e-9) + 1e-12:
            best, best_score = point, score
    if best is not None and best_score < 1e-3:   # agrees everywhere (rounding): the first point
        best = points[0]
    if best is None:
        raise CandidateError(f"no admissible parameters for {claim} with activation {activation!r} "
                             "(k1 is infinite for activations with a jump)")
    return best


# ----------------------------------------------------------------------------- evidence

def _evidence_kernel(point, seed, level, budget):
    from .numeric.kernels import kernel
    k = kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"],
               force_quadrature=True)
    value = float(k.value(point["rho"]))
    err = float(k.error_bound)
    return value, err, max(1e-8, 10 * err), 1, "deterministic quadrature of sa^2 E[phi(U)phi(V)]", None, {}


def _evidence_lambda1(point, seed, level, budget):
    from .engine import lyapunov_tangent
    v = _values("lambda1", point)
    T = budget["horizon"]
    # keep the noise per layer, k0 d T / L, small: the time-step bias is O(k0 d T / L)
    depth = int(min(budget["max_depth"], max(budget["depth"], math.ceil(T * v["k0"] * v["d"] / budget["step_noise"]))))
    p = _params(point, V=0.0, n_tokens=1, horizon=T)
    res = lyapunov_tangent(p, model="gaussian", depth=depth, n_paths=budget["paths"], seed=seed, progress=False)
    return float(res.rate), float(res.stderr), None, int(res.n_paths), (
        f"tangent flow of the Gaussian transformer, {budget['paths']} paths, depth {depth}, "
        f"T = {T}"), res, {"depth": depth}


def _evidence_ito(point, seed, level, budget):
    from .claims.ito_drift import one_step_coefficient
    v = _values("ito_drift", point)
    # the O(delta^2) remainder grows with the noise per step k0 d delta: keep that small
    delta = min(budget["delta"], budget["delta_scale"] / (v["k0"] * v["d"]))
    est, se, n, info = one_step_coefficient(_params(point), seed=seed, n_paths=budget["paths"],
                                            delta=delta, width=budget["width"])
    return est, se, None, n, (f"one-step Monte Carlo moments of the width-{budget['width']} layer map, "
                              f"Richardson in delta = {delta:.3g}"), None, {**info, "delta": delta}


def _evidence_lambda_bar(point, seed, level, budget):
    value, argmax = _lambda_bar(point)[:2]
    err = 1e-6 + 1e-4 * abs(value)
    return float(value), err, err, 1, "supremum of L2 f / f over rho (kernel numerics)", None, {
        "argmax_rho": float(argmax)}


_EVIDENCE = {"kernel": _evidence_kernel, "lambda1": _evidence_lambda1, "ito_drift": _evidence_ito,
             "lambda_bar": _evidence_lambda_bar}

BUDGETS = {
    "lambda1": {"paths": 4000, "depth": 400, "max_depth": 8000, "step_noise": 0.005, "horizon": 2.0,
                "rel_tol": 0.03},
    "ito_drift": {"paths": 40000, "delta": 0.01, "delta_scale": 0.02, "width": 64, "rel_tol": 0.02},
    "kernel": {},
    "lambda_bar": {},
}


def check_candidate(claim: str, candidate: str, *, activation: str = "relu", d: int | None = None,
                    sigma_w: float | None = None, sigma_b: float | None = None,
                    sigma_a: float | None = None, beta: float | None = None, rho: float | None = None,
                    seed: int = 0, level: float = 0.999) -> CheckOutcome:
    """Test `candidate` for `claim`; see the module docstring for the evidence used."""
    cand = parse_candidate(claim, candidate)
    from .activations import get_activation
    act = get_activation(activation).name
    seed = check_int("seed", seed, 0)
    given = {"d": None if d is None else check_int("d", d, 2),
             "sigma_w": None if sigma_w is None else check_real("sigma_w", sigma_w, 0.0),
             "sigma_b": None if sigma_b is None else check_real("sigma_b", sigma_b, 0.0),
             "sigma_a": None if sigma_a is None else check_real("sigma_a", sigma_a, 0.0),
             "beta": None if beta is None else check_real("beta", beta, 0.0),
             "rho": None if rho is None else check_real("rho", rho, -1.0, maximum=1.0)}
    if claim == "lambda1" and get_activation(act).has_jump:
        raise CandidateError(f"lambda1 is not finite for {act} (phi has a jump, k1 = +inf)")
    relevant = {"kernel": ("rho", "sigma_w", "sigma_b", "sigma_a"),
                "lambda_bar": ("d", "beta", "sigma_w", "sigma_b", "sigma_a")}.get(
        claim, ("d", "sigma_w", "sigma_b", "sigma_a"))
    user_all = all(given[k] is not None for k in relevant)
    point = choose_parameters(claim, cand, act, given)
    _params(point)  # validates (e.g. sigma_w = sigma_b = 0)
    v = _values(claim, point)
    try:
        cand_value = cand.value(v)
    except CandidateError as exc:     # not a finite real number where the quantity exists: wrong
        cand_value, undefined = math.nan, str(exc)
    else:
        undefined = None
    derived = _derived_value(claim, point, v)
    budget = BUDGETS[claim]
    est, se, det_tol, n, method, _, info = _EVIDENCE[claim](point, seed, level, budget)
    if undefined is not None:
        r = deterministic_check(claim, est, math.nan, tol=0.0, error=se, method=method)
        r.passed, pvalue = False, None
        info = {**info, "reason": undefined}
    elif det_tol is not None:
        r = deterministic_check(claim, est, cand_value, tol=det_tol, error=se, method=method)
        pvalue = None
    else:
        # bias allowance: a fraction of the measured value (a property of the evidence alone)
        r = agreement_test(claim, est, se, cand_value, level=level, n=n, seed=seed,
                           abs_tol=budget["rel_tol"] * abs(est), method=method)
        pvalue = r.pvalue
    return CheckOutcome(claim=claim, candidate=candidate, verdict="consistent" if r.passed else "rejected",
                        estimate=est, stderr=se, candidate_value=cand_value, derived_value=derived,
                        parameters={**point, **{k: v[k] for k in ("k0", "k1") if k in v}},
                        level=level, pvalue=pvalue, tolerance=r.tolerance, n=n,
                        seed=seed if pvalue is not None else None, method=method,
                        chosen="user" if user_all else "grid (max discrepancy)",
                        details={"ci": list(r.ci) if r.ci else None,
                                 "candidate_sympy": sp.sstr(cand.expr), **info})


__all__ = ["check_candidate", "parse_candidate", "choose_parameters", "Candidate", "CheckOutcome",
           "CHECKABLE", "BUDGETS"]
