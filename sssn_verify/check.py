"""Check a user's own formula for a claim against numerical evidence.

``check_candidate(claim, candidate, ...)`` works for every claim that declares a
:class:`~sssn_verify.claims.base.CandidateCheck` (its variables, the parameter axes, the
derived formula, independent evidence and an error scale: see the claim modules).  It
parses the candidate with the one safe expression language (:mod:`sssn_verify.expr`),
evaluates it and the derived formula at the parameters (the user's, or, when some are
not given, the point of a grid where the two differ most relative to the evidence's
error), computes the claim's evidence there and answers ``consistent`` or ``rejected``:
a deterministic comparison within the evidence's stated tolerance, or a z-test at the
given level with the evidence's bias allowance.

Older names are aliases declared by the claims (``lambda1`` for ``lyapunov``,
``lambda_bar`` for ``dissipation``).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import sympy as sp

from .errors import CandidateError, ClaimError
from .params import ModelParams, check_int, check_real
from .stats import _jsonable, agreement_test, deterministic_check

SHORT_NAMES = {"sw": "sigma_w", "sb": "sigma_b", "sa": "sigma_a", "r": "rho"}
SIGMAS = ("sigma_w", "sigma_b", "sigma_a")

# the grid a point is chosen from, per axis (the sigmas as triples)
GRID = {
    "d": (2, 3, 4, 6, 9),
    "beta": (0.0, 1.0, 3.0),
    "rho": (-0.95, -0.5, 0.0, 0.5, 0.9, 0.99),
    "sigmas": ((1.0, 0.0, 1.0), (1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (0.6, 1.0, 1.2), (1.3, 0.4, 0.8)),
}


def checkable() -> dict[str, str]:
    """Every name `check` accepts (claim names and their aliases) -> the claim's name."""
    from .claims import CLAIMS
    out = {}
    for name, claim in CLAIMS.items():
        if claim.candidate is not None:
            out[name] = name
            out.update({alias: name for alias in claim.candidate.aliases})
    return out


def _claim(name: str):
    from .claims import CLAIMS
    names = checkable()
    if name not in names:
        raise ClaimError(f"cannot check claim {name!r}; checkable: {', '.join(sorted(names))}")
    return CLAIMS[names[name]]


@dataclass(frozen=True)
class Candidate:
    """A parsed candidate: its text, sympy expression and the claim it is for."""

    claim: str
    text: str
    expr: sp.Expr

    def value(self, values: dict[str, float]) -> float:
        subs = {s: values[s.name] for s in self.expr.free_symbols}
        val = complex(sp.N(self.expr.subs(subs), 17))
        if abs(val.imag) > 1e-12 * max(1.0, abs(val.real)) or not math.isfinite(val.real):
            raise CandidateError(f"candidate {self.text!r} is not a finite real number at {values}")
        return float(val.real)


def parse_candidate(claim: str, text: str) -> Candidate:
    """Parse `text` in the safe expression language, allowing only the claim's variables."""
    from .expr import parse_expression
    cc = _claim(claim).candidate
    if not isinstance(text, str) or not text.strip():
        raise CandidateError("empty candidate expression")
    symbols = {n: sp.Symbol(n, real=True) for n in cc.variables}
    symbols.update({short: symbols[full] for short, full in SHORT_NAMES.items() if full in symbols})
    expr = parse_expression(text, symbols, error=CandidateError)
    if not isinstance(expr, sp.Expr):
        raise CandidateError(f"candidate {text!r} is not a scalar expression")
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
def values_at(point: dict[str, Any]) -> dict[str, float]:
    """Every variable a candidate may use at `point`: its parameters and k0, k1 (kernel numerics)."""
    from .numeric.kernels import kernel
    out = {k: float(v) for k, v in point.items() if k != "activation"}
    if all(s in point for s in SIGMAS):
        kf = kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"])
        out["k0"], out["k1"] = float(kf.k0), float(kf.k1)
    return out


def grid(axes, activation: str, given: dict[str, Any]):
    """Points over `axes`: the user's values where given, the grid elsewhere (sigmas outermost)."""
    if all(given.get(s) is not None for s in SIGMAS):
        sig = ((given["sigma_w"], given["sigma_b"], given["sigma_a"]),)
    else:
        sig = tuple(dict.fromkeys(tuple(given[s] if given.get(s) is not None else x for s, x in zip(SIGMAS, t))
                                  for t in GRID["sigmas"]))
    others = [a for a in axes if a not in SIGMAS]
    values = [(given[a],) if given.get(a) is not None else GRID[a] for a in others]
    for sw, sb, sa in sig:
        for combo in itertools.product(*values):
            yield dict(activation=activation, sigma_w=sw, sigma_b=sb, sigma_a=sa, **dict(zip(others, combo)))


def choose_parameters(claim: str, cand: Candidate, activation: str, given: dict[str, Any]):
    """The grid point (completing the user's parameters) where candidate and derivation differ most
    relative to the error scale; ties (e.g. a correct candidate) keep the first point."""
    cc = _claim(claim).candidate
    points = [pt for pt in grid(cc.axes, activation, given) if cc.admissible is None or cc.admissible(pt)]
    if cc.domain is not None and len(points) > 1:
        points = cc.domain(points) or points
    if not points:
        raise CandidateError(f"no admissible parameters for {claim} with activation {activation!r}")
    best, best_score = None, -1.0
    for point in points:
        v = values_at(point)
        try:
            c = cand.value(v)
        except CandidateError:
            c = math.nan
        der = cc.derived(v | {"activation": point["activation"]})
        score = math.inf if not math.isfinite(c) else abs(c - der) / cc.error_scale(v, der)
        if best is None or score > best_score * (1 + 1e-9) + 1e-12:
            best, best_score = point, score
    return points[0] if best_score < 1e-3 else best   # agrees everywhere (rounding): the first point


# ----------------------------------------------------------------------------- the check
def check_candidate(claim: str, candidate: str, *, activation: str = "relu", d: int | None = None,
                    sigma_w: float | None = None, sigma_b: float | None = None,
                    sigma_a: float | None = None, beta: float | None = None, rho: float | None = None,
                    seed: int = 0, level: float = 0.999) -> CheckOutcome:
    """Test `candidate` for `claim` against the claim's own evidence (see the module docstring)."""
    from .activations import get_activation
    the_claim = _claim(claim)
    cc = the_claim.candidate
    cand = parse_candidate(claim, candidate)
    act = get_activation(activation).name
    if cc.activation is not None and act != cc.activation:
        if activation != "relu":      # the API default: the claim's own activation applies
            raise CandidateError(f"claim {the_claim.name} is about {cc.activation} only (got {act})")
        act = cc.activation
    seed = check_int("seed", seed, 0)
    level = check_real("level", level, 0.5, maximum=1.0 - 1e-12)
    given = {"d": None if d is None else check_int("d", d, 2),
             "sigma_w": None if sigma_w is None else check_real("sigma_w", sigma_w, 0.0),
             "sigma_b": None if sigma_b is None else check_real("sigma_b", sigma_b, 0.0),
             "sigma_a": None if sigma_a is None else check_real("sigma_a", sigma_a, 0.0),
             "beta": None if beta is None else check_real("beta", beta, 0.0),
             "rho": None if rho is None else check_real("rho", rho, -1.0, maximum=1.0)}
    if given["sigma_w"] is not None and given["sigma_b"] is not None:
        ModelParams(sigma_w=given["sigma_w"], sigma_b=given["sigma_b"])   # not both 0
    user_all = all(given[k] is not None for k in cc.axes)
    point = choose_parameters(claim, cand, act, given)
    if cc.admissible is not None and not cc.admissible(point):
        raise CandidateError(f"{the_claim.name} is not finite for {act} at {point} (k1 = +inf for a jump)")
    v = values_at(point)
    try:
        cand_value, undefined = cand.value(v), None
    except CandidateError as exc:     # not a finite real number where the quantity exists: wrong
        cand_value, undefined = math.nan, str(exc)
    derived = cc.derived(v | {"activation": act})
    ev = cc.evidence(point, seed, level)
    info = dict(ev.details)
    if undefined is not None:
        r = deterministic_check(the_claim.name, ev.estimate, math.nan, tol=0.0, error=ev.stderr, method=ev.method)
        r.passed, pvalue = False, None
        info["reason"] = undefined
    elif ev.tolerance is not None:
        r = deterministic_check(the_claim.name, ev.estimate, cand_value, tol=ev.tolerance, error=ev.stderr,
                                method=ev.method)
        pvalue = None
    else:
        r = agreement_test(the_claim.name, ev.estimate, ev.stderr, cand_value, level=level, n=ev.n, seed=seed,
                           abs_tol=ev.rel_tol * abs(ev.estimate), method=ev.method)
        pvalue = r.pvalue
    if claim != the_claim.name:
        info["asked_as"] = claim
    return CheckOutcome(claim=the_claim.name, candidate=candidate,
                        verdict="consistent" if r.passed else "rejected", estimate=ev.estimate,
                        stderr=ev.stderr, candidate_value=cand_value, derived_value=derived,
                        parameters={**point, **{k: v[k] for k in ("k0", "k1") if k in v}},
                        level=level, pvalue=pvalue, tolerance=r.tolerance, n=ev.n,
                        seed=seed if pvalue is not None else None, method=ev.method,
                        chosen="user" if user_all else "grid (max discrepancy)",
                        details={"ci": list(r.ci) if r.ci else None, "candidate_sympy": sp.sstr(cand.expr),
                                 **info})


__all__ = ["check_candidate", "parse_candidate", "choose_parameters", "checkable", "values_at", "grid",
           "Candidate", "CheckOutcome", "GRID"]
