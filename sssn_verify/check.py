"""Check a user's own formula for a claim against numerical evidence.

``check_candidate(claim, candidate, ...)`` works for every claim that declares a
:class:`~sssn_verify.claims.base.CandidateCheck` (its variables, the parameter axes, the
derived formula, independent evidence and an error scale: see the claim modules).  It
parses the candidate with the one safe expression language (:mod:`sssn_verify.expr`) and
answers ``consistent`` or ``rejected``.

When the user fixes every parameter, the claim's evidence at that point decides: a
deterministic comparison within the evidence's stated tolerance, or a z-test at `level`
with the evidence's bias allowance.

Otherwise the parameters are *searched* with hypothesis (issue 13) over the claim's domain
(the ranges its ``domain`` strategy declares, or the candidate check's own ``domain``; the
user's values pin their axes):

1. *steer* (cheap, no evidence): ``explore`` examples (default :data:`DEFAULT_EXAMPLES`),
   ``target()`` on the discrepancy ``|candidate - derived| / error_scale``;
2. *screen*: the evidence where that discrepancy is largest, at level ``1 - a``; a rejection
   is *shrunk* by hypothesis with the evidence's rejection inside the predicate (for Monte
   Carlo evidence only where the discrepancy stays above half its maximum), at most
   :data:`MAX_SCREENS` evidence runs in all (:data:`MAX_SCREENS_DETERMINISTIC` when the
   evidence is deterministic);
3. *confirm*: the shrunk point (else the first rejected one) again with a fresh seed, level
   ``1 - a``; only a confirmed rejection rejects.

With ``a = sqrt((1 - level) / MAX_SCREENS)`` the probability that a right formula is
rejected is at most ``MAX_SCREENS a^2 = 1 - level`` (union bound over the screened points;
screen and confirmation use independent seeds derived from the point, so the result depends
only on `seed`).  A deterministic evidence (quadrature, a numerical supremum) needs no
confirmation.  The points, seeds and levels are in the outcome's ``search``; the shrunk
failing parameters in ``counterexample``.

Older names are aliases declared by the claims (``lambda1`` for ``lyapunov``,
``lambda_bar`` for ``dissipation``).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import sympy as sp

from .errors import CandidateError, ClaimError
from .numeric.rng import as_key
from .params import ModelParams, check_int, check_real
from .stats import _jsonable, agreement_test, deterministic_check

SHORT_NAMES = {"sw": "sigma_w", "sb": "sigma_b", "sa": "sigma_a", "r": "rho"}
SIGMAS = ("sigma_w", "sigma_b", "sigma_a")

#: cheap examples (candidate vs derivation) of the search, by default (``check --explore N``)
DEFAULT_EXAMPLES = 60
#: ... for an activation whose kernel goes through quadrature (each new (sigma_w, sigma_b) builds
#: a kernel table, ~0.3-1 s): sigma_w and sigma_b on a SIGMA_GRID_QUADRATURE^2 grid (at most that
#: many tables), fewer examples and shrinking evaluations keep a check near a minute
DEFAULT_EXAMPLES_QUADRATURE = 40
SIGMA_GRID_QUADRATURE = 4
MAX_SHRINK_EVALS_QUADRATURE = 24
#: at most this many evidence runs screen points per check (Monte Carlo evidence)
MAX_SCREENS = 5
#: ... when the evidence is deterministic (no false alarm to control: a longer shrink)
MAX_SCREENS_DETERMINISTIC = 40
#: at most this many cheap evaluations while shrinking (then shrinking stops)
MAX_SHRINK_EVALS = 150
#: a discrepancy |candidate - derived| / error_scale below this is rounding: the formulas agree
AGREE = 1e-3
#: a shrunk counterexample keeps at least this fraction of the largest discrepancy found
SHRINK_FRACTION = 0.5
#: the search range of an axis that neither the claim's domain nor its candidate check declares
FALLBACK_RANGES = {"d": (2, 9), "sigma_w": (0.5, 1.5), "sigma_b": (0.0, 2.0), "sigma_a": (0.5, 1.5),
                   "beta": (0.0, 3.0), "rho": (-0.99, 0.99)}


def checkable() -> dict[str, str]:
    """Every name `check` accepts (claim names and their aliases) -> the claim's name."""
    from .claims import CLAIMS
    out = {}
    for name, claim in CLAIMS.items():
        if claim.candidate is not None:
            out[name] = name
            out.update({alias: name for alias in claim.candidate.aliases})
    return out


def evidence_descriptions() -> dict[str, str]:
    """Claim (with its aliases) -> what its `check` evidence is: the CandidateCheck's ``description``,
    else the docstring of its ``evidence`` function."""
    from .claims import CLAIMS
    out = {}
    for name, claim in CLAIMS.items():
        cc = claim.candidate
        if cc is not None:
            label = name + "".join(f" (alias {a})" for a in cc.aliases)
            # the declared description, else the evidence function's own docstring
            out[label] = cc.description or " ".join((cc.evidence.__doc__ or "").split()) or "(not described)"
    return out


def _claim(name: str):
    from .claims import CLAIMS
    names = checkable()
    if name not in names:
        raise ClaimError(f"cannot check claim {name!r}; checkable: {', '.join(sorted(names))}")
    return CLAIMS[names[name]]


#: sympy evaluates a candidate (17 digits) only if no subexpression exceeds e^this in size
_EXACT_MAGNITUDE = 1e4


@dataclass(frozen=True)
class Candidate:
    """A parsed candidate: its canonical text (rebuilt from the parsed tree), sympy expression
    and the claim it is for."""

    claim: str
    text: str
    expr: sp.Expr

    def value(self, values: dict[str, float]) -> float:
        """The candidate at `values`: magnitudes are bounded first (log-magnitude analysis, no
        evaluation), so a tower such as exp(exp(exp(exp(3)))) answers at once; an infinite or
        undefined candidate is bad input naming the point, never a nan."""
        from .magnitude import LOG_MAX, log_magnitude, max_log_magnitude
        names = {s.name for s in self.expr.free_symbols}
        point = {k: float(values[k]) for k in names}
        shown = ", ".join(f"{k} = {point[k]:.6g}" for k in sorted(point)) or "every point"
        sign, L = (float(x) for x in log_magnitude(self.expr, point))
        if math.isnan(sign):
            raise CandidateError(f"candidate {self.text!r} is undefined (not a real number) at {shown}")
        if sign != 0 and L > LOG_MAX:
            raise CandidateError(f"candidate {self.text!r} is infinite (beyond 1e308 in absolute value) "
                                 f"at {shown}")
        if max_log_magnitude(self.expr, point) > _EXACT_MAGNITUDE:   # sympy's N would not end
            return 0.0 if sign == 0 else math.copysign(math.exp(L), sign)
        subs = {s: values[s.name] for s in self.expr.free_symbols}
        val = complex(sp.N(self.expr.subs(subs), 17))
        if not (math.isfinite(val.real) and math.isfinite(val.imag)):
            raise CandidateError(f"candidate {self.text!r} is infinite or undefined at {shown}")
        if abs(val.imag) > 1e-12 * max(1.0, abs(val.real)):
            raise CandidateError(f"candidate {self.text!r} is not a real number at {shown}")
        return float(val.real)


def parse_candidate(claim: str, text: str) -> Candidate:
    """Parse `text` in the safe expression language, allowing only the claim's variables."""
    from .expr import canonical, parse_with_tree
    cc = _claim(claim).candidate
    if not isinstance(text, str) or not text.strip():
        raise CandidateError("empty candidate expression")
    symbols = {n: sp.Symbol(n, real=True) for n in cc.variables}
    symbols.update({short: symbols[full] for short, full in SHORT_NAMES.items() if full in symbols})
    tree, expr = parse_with_tree(text, symbols, error=CandidateError)
    if not isinstance(expr, sp.Expr):
        raise CandidateError(f"candidate {canonical(tree)!r} is not a scalar expression")
    return Candidate(claim, canonical(tree), expr)


@dataclass
class CheckOutcome:
    """The answer of `check`: verdict and the evidence behind it."""

    claim: str
    candidate: str
    verdict: str                      # "consistent" or "rejected"
    estimate: float                   # the numerical evidence
    stderr: float
    candidate_value: float | None   # None where the candidate is undefined (details["reason"])
    derived_value: float
    parameters: dict[str, Any]
    level: float
    pvalue: float | None
    tolerance: float
    n: int
    seed: int | None
    method: str
    chosen: str                       # "user", "search (max discrepancy)" or "search (shrunk counterexample)"
    counterexample: dict[str, Any] | None = None   # the shrunk parameters where the candidate fails
    search: dict[str, Any] | None = None            # the hypothesis search (None: the user fixed every axis)
    details: dict[str, Any] = field(default_factory=dict)
    min_detectable: float | None = None   # power: smallest relative error rejected w.p. `power`
    power: float = 0.9

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    def to_frame(self):
        """One row (pandas DataFrame): the scalar fields, the parameters as columns of their own
        (``param_d``, ``param_sigma_b``, ...); counterexample, search and details stay in to_dict()."""
        import pandas as pd
        row = {k: v for k, v in asdict(self).items() if k not in ("parameters", "counterexample", "search", "details")}
        row.update({f"param_{k}": v for k, v in self.parameters.items()})
        return pd.DataFrame([row])


# ----------------------------------------------------------------------------- parameters
def values_at(point: dict[str, Any]) -> dict[str, float]:
    """Every variable a candidate may use at `point`: its parameters and k0, k1 (kernel numerics)."""
    from .numeric.kernels import kernel
    out = {k: float(v) for k, v in point.items() if k != "activation"}
    if all(s in point for s in SIGMAS):
        kf = kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"])
        out["k0"], out["k1"] = float(kf.k0), float(kf.k1)
    return out


def search_ranges(claim, given: dict[str, Any]) -> dict[str, Any]:
    """Per axis of the claim's candidate check: the user's value (pinned) or a (low, high) range
    from the candidate check's ``domain``, else the claim's domain, else :data:`FALLBACK_RANGES`."""
    cc = claim.candidate
    spec = dict(FALLBACK_RANGES)
    spec.update({k: v for k, v in getattr(claim.domain, "spec", {}).items() if k in FALLBACK_RANGES})
    spec.update({k: v for k, v in (cc.domain or {}).items() if k in FALLBACK_RANGES})
    return {a: given[a] if given.get(a) is not None else tuple(spec[a]) for a in cc.axes}


def _strategy(ranges: dict[str, Any], activation: str, *, sigma_grid: int | None = None):
    """Points of the search: each axis uniform over its range (integers for d), pinned ones fixed;
    with ``sigma_grid = n``, sigma_w and sigma_b take n values each, evenly spaced over their ranges
    (an activation whose kernel needs quadrature builds one table per (sigma_w, sigma_b) pair, so
    the search visits at most n^2 tables and can afford many examples; sigma_a only scales k)."""
    from hypothesis import strategies as st
    out: dict[str, Any] = {"activation": st.just(activation)}
    for axis, r in ranges.items():
        if sigma_grid and axis in ("sigma_w", "sigma_b") and isinstance(r, tuple) and r[0] != r[1]:
            lo, hi = map(float, r)
            out[axis] = st.sampled_from([lo + (hi - lo) * i / (sigma_grid - 1) for i in range(sigma_grid)])
        elif not isinstance(r, tuple):
            out[axis] = st.just(r)
        elif axis == "d":
            out[axis] = st.integers(int(r[0]), int(r[1]))
        else:
            lo, hi = map(float, r)
            out[axis] = st.just(lo) if lo == hi else st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                                                                allow_subnormal=False)
    return st.fixed_dictionaries(out)


def discrepancy(cc, cand: Candidate, point: dict[str, Any]) -> float | None:
    """|candidate - derived| / error_scale at `point`; None where the claim's quantity does not
    exist (not admissible, derived not finite).  A candidate that is not a finite real number at
    `point` raises CandidateError naming the point (the search counts it as infinitely far)."""
    from .errors import ParameterError
    try:
        if cc.admissible is not None and not cc.admissible(point):
            return None
        v = values_at(point)
    except ParameterError:                     # e.g. sigma_w = sigma_b = 0
        return None
    der = cc.derived(v | {"activation": point["activation"]})
    if not math.isfinite(der):
        return None
    return abs(cand.value(v) - der) / cc.error_scale(v, der)


@dataclass
class _PointTest:
    point: dict[str, Any]
    result: Any                  # stats.CheckResult
    evidence: Any                # claims.base.Evidence
    candidate_value: float | None
    derived_value: float
    seed: Any                # the evidence's int seed or Key
    reason: str | None = None

    @property
    def rejected(self) -> bool:
        return not self.result.passed

    @property
    def deterministic(self) -> bool:
        return self.result.pvalue is None

    def summary(self) -> dict[str, Any]:
        return {"parameters": self.point, "seed": as_key(self.seed).seed, "key": repr(as_key(self.seed)), "estimate": self.result.estimate,
                "stderr": self.result.stderr, "candidate_value": self.candidate_value,
                "pvalue": self.result.pvalue, "level": self.result.level, "rejected": self.rejected}


def judge_point(claim, cand: Candidate, point: dict[str, Any], seed, level: float, *,
                undefined_rejects: bool = False) -> _PointTest:
    """The claim's evidence at `point` against the candidate: a deterministic comparison within
    the evidence's tolerance, or a z-test at `level` with its bias allowance.  A candidate that is
    not a finite real number at `point` is bad input naming the point (CandidateError: the user
    chose the point), or, with `undefined_rejects` (a point the search found), rejected there
    with the reason (its value None, never a nan)."""
    cc = claim.candidate
    v = values_at(point)
    try:
        cand_value, undefined = cand.value(v), None
    except CandidateError as exc:
        if not undefined_rejects:
            raise
        cand_value, undefined = None, str(exc)
    derived = cc.derived(v | {"activation": point["activation"]})
    ev = cc.evidence(point, as_key(seed, claim.name), level)
    if undefined is not None:
        r = deterministic_check(claim.name, ev.estimate, math.nan, tol=0.0, error=ev.stderr, method=ev.method)
        r.passed = False
    elif ev.tolerance is not None:
        r = deterministic_check(claim.name, ev.estimate, cand_value, tol=ev.tolerance, error=ev.stderr,
                                method=ev.method)
    else:
        r = agreement_test(claim.name, ev.estimate, ev.stderr, cand_value, level=level, n=ev.n, seed=seed,
                           abs_tol=ev.rel_tol * abs(ev.estimate), method=ev.method)
    return _PointTest(dict(point), r, ev, cand_value, derived, seed, undefined)


def _closed_form(activation: str) -> bool:
    from .numeric.kernels import kernel
    return kernel(activation, 1.0, 0.5, 1.0).method == "closed form"


def _key(point: dict[str, Any]) -> tuple:
    return tuple(sorted(point.items()))


def search(claim, cand: Candidate, activation: str, given: dict[str, Any], *, seed: int = 0,
           level: float = 0.999, n_examples: int = DEFAULT_EXAMPLES):
    """Steer, screen, shrink and confirm (module docstring): (the deciding point test, the search
    record, the shrunk counterexample or None)."""
    from hypothesis import Phase, given as h_given, seed as h_seed, target

    from .explore import _Counterexample, example_key, search_settings

    cc = claim.candidate
    ranges = search_ranges(claim, given)
    closed = _closed_form(activation)
    strategy = _strategy(ranges, activation, sigma_grid=None if closed else SIGMA_GRID_QUADRATURE)
    alpha = 1.0 - level
    a = math.sqrt(alpha / MAX_SCREENS)
    scores: dict[tuple, float | None] = {}
    order: list[tuple] = []
    points: dict[tuple, dict] = {}
    state = {"failed": [], "screens": 0, "cap": MAX_SCREENS, "shrink_evals": 0, "notes": []}
    max_shrink_evals = MAX_SHRINK_EVALS if closed else MAX_SHRINK_EVALS_QUADRATURE
    screens: dict[tuple, _PointTest] = {}

    def score(point) -> float | None:
        key = _key(point)
        if key not in scores:
            if state["failed"]:
                if state["shrink_evals"] >= max_shrink_evals:
                    return None                  # shrinking budget spent: treated as passing
                state["shrink_evals"] += 1
            try:
                scores[key] = discrepancy(cc, cand, point)
            except CandidateError:               # undefined or infinite here: the largest discrepancy
                scores[key] = math.inf
            order.append(key)
            points[key] = {"activation": point["activation"], **{a: point[a] for a in cc.axes}}
        return scores[key]

    def steer_target(s):
        if s is not None:
            target(min(s, 1e12), label="discrepancy |candidate - derived| / error scale")

    @search_settings(n_examples, (Phase.generate, Phase.target))
    @h_seed(seed)
    @h_given(strategy)
    def steer(point):
        steer_target(score(point))

    steer()
    admissible = [k for k in order if scores[k] is not None]
    if not admissible:
        raise CandidateError(f"no admissible parameters for {claim.name} with activation {activation!r} "
                             f"in {ranges}")
    best_key = admissible[0]
    for k in admissible:
        if scores[k] > scores[best_key]:
            best_key = k
    best = scores[best_key]

    def screen(key) -> bool:
        if key in screens:
            return screens[key].rejected
        if state["screens"] >= state["cap"]:
            return False                         # evidence budget spent: treated as passing
        state["screens"] += 1
        t = judge_point(claim, cand, points[key], example_key(seed, claim.name, key, "screen"), 1.0 - a,
                        undefined_rejects=True)
        if t.deterministic:
            state["cap"] = max(state["cap"], MAX_SCREENS_DETERMINISTIC)
        screens[key] = t
        return t.rejected

    if best >= AGREE:
        @search_settings(n_examples, (Phase.generate, Phase.target, Phase.shrink))
        @h_seed(seed)
        @h_given(strategy)
        def hunt(point):
            s = score(point)
            steer_target(s)
            if s is None:
                return
            key = _key(point)
            if not state["failed"]:
                floor = best * (1 - 1e-9)              # generation: the evidence where they differ most
            elif state["cap"] > MAX_SCREENS:
                floor = AGREE                          # deterministic evidence: any disagreement
            else:
                floor = SHRINK_FRACTION * best         # Monte Carlo: where a rejection stays likely
            if s < floor:
                return
            if screen(key):
                state["failed"].append(key)
                raise _Counterexample()

        try:
            hunt()
        except _Counterexample:
            pass
    if not state["failed"] and screen(best_key if best >= AGREE else admissible[0]):
        state["failed"].append(best_key if best >= AGREE else admissible[0])
        state["notes"].append("rejected at the chosen point; not shrunk")
    if state["failed"] and state["shrink_evals"] >= max_shrink_evals:
        state["notes"].append(f"shrinking stopped after {max_shrink_evals} evaluations")
    confirmations = []
    decided = None
    for key in dict.fromkeys([state["failed"][-1], state["failed"][0]] if state["failed"] else []):
        t = screens[key]
        if t.deterministic:
            decided = t
            break
        c = judge_point(claim, cand, points[key], example_key(seed, claim.name, key, "confirm"), 1.0 - a,
                        undefined_rejects=True)
        confirmations.append(c.summary())
        if c.rejected:
            decided = c
            break
    if decided is None:
        chosen = best_key if best >= AGREE else admissible[0]
        if chosen not in screens:        # the budget went to other points: test the chosen one too
            state["cap"] += 1
            screen(chosen)
        decided = screens[chosen]
    record = {"examples": len(admissible), "evaluations": len(order), "seed": seed, "max_examples": n_examples,
              "ranges": {k: list(v) if isinstance(v, tuple) else v for k, v in ranges.items()},
              "max_discrepancy": best, "max_discrepancy_at": points[best_key],
              "screen_level": 1.0 - a, "confirm_level": 1.0 - a, "max_screens": state["cap"],
              "familywise": alpha, "screens": [t.summary() for t in screens.values()],
              "confirmations": confirmations, "first_failure": points[state["failed"][0]] if state["failed"] else None,
              "notes": state["notes"]}
    counter = decided.point if decided.rejected else None
    return decided, record, counter


# ----------------------------------------------------------------------------- the check
def check_candidate(claim: str, candidate: str, *, activation: str = "relu", d: int | None = None,
                    sigma_w: float | None = None, sigma_b: float | None = None,
                    sigma_a: float | None = None, beta: float | None = None, rho: float | None = None,
                    seed: int = 0, level: float = 0.999, explore: int | None = None) -> CheckOutcome:
    """Test `candidate` for `claim` against the claim's own evidence (see the module docstring);
    `explore` is the number of examples of the search (default :data:`DEFAULT_EXAMPLES`, or
    :data:`DEFAULT_EXAMPLES_QUADRATURE` for an activation without a closed-form kernel)."""
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
    if explore is None:
        n_examples = DEFAULT_EXAMPLES if _closed_form(act) else DEFAULT_EXAMPLES_QUADRATURE
    else:
        n_examples = check_int("explore", explore, 1)
    given = {"d": None if d is None else check_int("d", d, 2),
             "sigma_w": None if sigma_w is None else check_real("sigma_w", sigma_w, 0.0),
             "sigma_b": None if sigma_b is None else check_real("sigma_b", sigma_b, 0.0),
             "sigma_a": None if sigma_a is None else check_real("sigma_a", sigma_a, 0.0),
             "beta": None if beta is None else check_real("beta", beta, 0.0),
             "rho": None if rho is None else check_real("rho", rho, -1.0, maximum=1.0)}
    if given["sigma_w"] is not None and given["sigma_b"] is not None:
        ModelParams(sigma_w=given["sigma_w"], sigma_b=given["sigma_b"])   # not both 0
    if all(given[k] is not None for k in cc.axes):
        point = {"activation": act, **{k: given[k] for k in cc.axes}}
        if cc.admissible is not None and not cc.admissible(point):
            raise CandidateError(f"{the_claim.name} is not finite for {act} at {point} (k1 = +inf for a jump)")
        t, record, counter, chosen = judge_point(the_claim, cand, point, seed, level), None, None, "user"
    else:
        t, record, counter = search(the_claim, cand, act, given, seed=seed, level=level, n_examples=n_examples)
        chosen = "search (shrunk counterexample)" if counter is not None else "search (max discrepancy)"
    r = t.result
    info = dict(t.evidence.details)
    if t.reason is not None:
        info["reason"] = t.reason
    if claim != the_claim.name:
        info["asked_as"] = claim
    v = values_at(t.point)
    return CheckOutcome(claim=the_claim.name, candidate=cand.text,
                        verdict="consistent" if r.passed else "rejected", estimate=t.evidence.estimate,
                        stderr=t.evidence.stderr, candidate_value=t.candidate_value, derived_value=t.derived_value,
                        parameters={**t.point, **{k: v[k] for k in ("k0", "k1") if k in v}},
                        level=level, pvalue=r.pvalue, tolerance=r.tolerance, n=t.evidence.n,
                        seed=t.seed if r.pvalue is not None else None, method=t.evidence.method,
                        chosen=chosen, counterexample=counter, search=record,
                        min_detectable=r.min_detectable, power=r.power,
                        details={"ci": list(r.ci) if r.ci else None, "candidate_sympy": sp.sstr(cand.expr),
                                 "test_level": r.level, **info})


__all__ = ["check_candidate", "parse_candidate", "evidence_descriptions", "search", "search_ranges", "discrepancy", "judge_point",
           "checkable", "values_at", "Candidate", "CheckOutcome", "DEFAULT_EXAMPLES", "MAX_SCREENS"]
