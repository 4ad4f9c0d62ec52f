"""Check a user's own formula for a claim against numerical evidence.

``check_candidate(claim, candidate, ...)`` works for every claim that declares a
:class:`~sssn_verify.claims.base.CandidateCheck` (its variables, the parameter axes, the
derived formula, independent evidence and an error scale: see the claim modules).  It
parses the candidate with the one safe expression language (:mod:`sssn_verify.expr`) and
answers ``consistent`` or ``rejected``.

When the user fixes every parameter, the claim's evidence at that point decides: a
deterministic comparison within the evidence's stated tolerance, or a z-test at `level`
with the evidence's bias allowance.

More (moved from this docstring): docs/modules.md, ``sssn_verify.check``.
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

#: why each checkable claim's formula or evidence does not apply to the rqf field (``check --field rqf``
#: refuses it with this reason); a claim not listed applies to every field (attention_bound: C_att bounds
#: attention's share of the energy rate, whatever the noise)
RQF_REFUSALS = {
    "kernel": "the rqf field has no kernel K(rho): its covariance is a(rho) I + c(rho) y x^T (a = sigma_q^2 rho/2, "
              "c = sigma_q^2/2), not K(rho) I",
    "ito_drift": "its evidence samples the MLP field's Gaussian layer; the rqf layer's drift -(d-1) a(1)/2 x is "
                 "checked by the claim rqf (verify --claim rqf)",
    "lyapunov": "its variables k0, k1 are those of a kernel K(rho) I, which the rqf field does not have (its "
                "lambda_1 = -sigma_q^2 comes from the general-field derivation and is checked by verify --claim rqf)",
    "relu_rates": "it is about the ReLU MLP block, which the rqf field does not have",
    "dissipation": "its variables k0, k1 and its evidence (the generator of one exact Gaussian layer of the MLP "
                   "field, kernel K(rho) by quadrature) are the MLP field's (the rqf lambda_bar = 2 sigma_q^2 comes "
                   "from the general-field derivation: regime --field rqf)",
    "lyapunov_spectrum": "its variables k0, k1 and its evidence are the MLP field's (the rqf spectrum "
                         "lambda_i = -i sigma_q^2 comes from the general-field derivation: regime --field rqf; "
                         "claim rqf checks it)",
    "log_distance_variance": "its formula sigma^2 = k0 + k1 and its evidence are the MLP field's (the rqf value "
                             "comes from the general-field derivation: sync-time --field rqf)",
    "synchronization_time": "its variables k0, k1 and its two-token evidence are the MLP field's (the rqf law: "
                            "sync-time --field rqf --simulate)",
}

#: why each checkable claim refuses a deep MLP block (``check --hidden``): its formula or evidence is not the
#: Gaussian field of the block's kernel K.  The claims whose evidence runs on that field (the Gaussian
#: transformer, the SDE) declare the hidden stacks they search (``"hidden"`` in the candidate check's or the
#: claim's domain); a claim no noise field enters (attention_bound) runs, with a note
HIDDEN_REFUSALS = {
    "kernel": "its evidence is a Monte Carlo of one layer's E[phi(U) phi(V)] against the one-layer formula; a deep "
              "block's composed kernel is checked against an independent composed quadrature and neural-tangents' "
              "values (tests/test_deep_blocks.py)",
    "relu_rates": "it is about the one-layer ReLU block's closed-form rates in the sigmas",
}
#: claims that no noise field enters: a hidden stack is accepted and changes nothing (said in a note)
NOISE_FREE = ("attention_bound",)

#: cheap examples (candidate vs derivation) of the search, by default (``check --explore N``)
DEFAULT_EXAMPLES = 60
#: ... for an activation whose kernel goes through quadrature (each new (sigma_w, sigma_b) builds
#: a kernel table, ~0.3-1 s): sigma_w and sigma_b on a SIGMA_GRID_QUADRATURE^2 grid (at most that
#: many tables), fewer examples and shrinking evaluations keep a check near a minute
DEFAULT_EXAMPLES_QUADRATURE = 40
from .strategies import SIGMA_GRID_QUADRATURE  # noqa: E402  (the one grid of check and find)
MAX_SHRINK_EVALS_QUADRATURE = 24
#: at most this many evidence runs screen points per check (Monte Carlo evidence)
MAX_SCREENS = 5
#: ... when the evidence is deterministic (no false alarm to control: a longer shrink)
MAX_SCREENS_DETERMINISTIC = 40
#: at most this many cheap evaluations while shrinking (then shrinking stops)
MAX_SHRINK_EVALS = 150
#: points of the space-filling design (the two opposite corners plus a Latin hypercube)
DESIGN_POINTS = 8
#: the design draws d as lo + (hi - lo) u^DESIGN_D_POWER: fewer points at large (expensive) d
DESIGN_D_POWER = 1.5
#: weight of an activation whose kernel needs quadrature in the design (closed form: 1)
QUADRATURE_WEIGHT = 0.5
#: a screen or confirmation where the discrepancy is at least this many error scales (far beyond the full
#: evidence's resolution) runs the cheaper ``design_evidence``, as do the shrinking screens; other
#: confirmations run the full evidence
CHEAP_SCREEN = 20.0
#: a discrepancy |candidate - derived| / error_scale below this is rounding: the formulas agree
AGREE = 1e-3
#: a shrunk counterexample keeps at least this fraction of the largest discrepancy found
SHRINK_FRACTION = 0.5
#: the search range of an axis that neither the claim's domain nor its candidate check declares
FALLBACK_RANGES = {"d": (2, 9), "sigma_w": (0.5, 1.5), "sigma_b": (0.0, 2.0), "sigma_a": (0.5, 1.5),
                   "beta": (0.0, 3.0), "rho": (-0.99, 0.99), "i": (1, 8)}
#: axes that take integer values (the rest are real)
INTEGER_AXES = ("d", "i", "H", "N", "draw")


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
    """Claim (with its aliases) -> what its `check` evidence is: the CandidateCheck's ``description``
    (LaTeX prose), else the docstring of its ``evidence`` function."""
    from .claims import CLAIMS
    out = {}
    for name, claim in CLAIMS.items():
        cc = claim.candidate
        if cc is not None:
            label = name + "".join(f" (alias {a})" for a in cc.aliases)
            # the declared description, else the evidence function's own docstring
            out[label] = cc.description or " ".join((cc.evidence.__doc__ or "").split()) or "(not described)"
    return out


def _claim(name: str, quantity: str | None = None):
    """The claim `name` (or an alias); with `quantity`, a copy whose candidate check is that quantity's."""
    from dataclasses import replace

    from .claims import CLAIMS
    names = checkable()
    if name not in names:
        raise ClaimError(f"cannot check claim {name!r}; checkable: {', '.join(sorted(names))}")
    claim = CLAIMS[names[name]]
    if quantity is None:
        return claim
    known = claim.candidate.quantities or {}
    if quantity not in known:
        raise CandidateError(f"claim {claim.name} has no quantity {quantity!r}"
                             + (f"; quantities: {', '.join(known)}" if known else " (it has one quantity)"))
    return replace(claim, candidate=known[quantity])


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
        # xreplace: the symbols by their Floats in one rebuild of the tree (subs, which also matches
        # subexpressions, took ~10 ms per point on the ReLU kernel's closed form, this ~1 ms)
        val = complex(sp.N(self.expr.xreplace({s: sp.Float(values[s.name]) for s in self.expr.free_symbols}), 17))
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
    design: dict[str, Any] | None = None            # the space-filling design (None: the user fixed every axis)
    details: dict[str, Any] = field(default_factory=dict)
    min_detectable: float | None = None   # power: smallest relative error rejected w.p. `power`
    power: float = 0.9
    quantity: str | None = None          # which quantity of the claim (synchronization_time: mean, variance)
    sharp: bool | None = None            # a bound: attained where the claim attains it (None: not a bound)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    def to_frame(self):
        """One row (pandas DataFrame): the scalar fields, the parameters as columns of their own
        (``param_d``, ``param_sigma_b``, ...); counterexample, search and details stay in to_dict()."""
        import pandas as pd
        row = {k: v for k, v in asdict(self).items()
               if k not in ("parameters", "counterexample", "search", "design", "details")}
        row.update({f"param_{k}": v for k, v in self.parameters.items()})
        return pd.DataFrame([row])


# ----------------------------------------------------------------------------- parameters
def values_at(point: dict[str, Any], cc=None) -> dict[str, float]:
    """Every variable a candidate may use at `point`: its parameters, k0, k1 (kernel numerics) and the
    candidate check's own ``values`` (e.g. eps from eps0 and a, the norms of the attention matrices)."""
    from .numeric.kernels import kernel
    from .strategies import hidden_stack
    out = {k: float(v) for k, v in point.items() if k not in ("activation", "hidden")}
    if all(s in point for s in SIGMAS) and point.get("activation") is not None:
        kf = kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"],
                    hidden=hidden_stack(point.get("hidden")))
        out["k0"], out["k1"] = float(kf.k0), float(kf.k1)
    if cc is not None and cc.values is not None:
        out.update({k: float(v) for k, v in cc.values(point).items()})
    return out


def search_ranges(claim, given: dict[str, Any]) -> dict[str, Any]:
    """Per axis of the claim's candidate check: the user's value (pinned) or a (low, high) range
    from the candidate check's ``domain``, else the claim's domain, else :data:`FALLBACK_RANGES`."""
    cc = claim.candidate
    spec = dict(FALLBACK_RANGES)
    spec.update({k: v for k, v in getattr(claim.domain, "spec", {}).items() if k in FALLBACK_RANGES or k in cc.axes})
    spec.update({k: v for k, v in (cc.domain or {}).items() if k in FALLBACK_RANGES or k in cc.axes})
    return {a: given[a] if given.get(a) is not None else tuple(spec[a]) for a in cc.axes}


def _reference_point(ranges: dict[str, Any], activation: str, hidden: str | None = None) -> dict[str, Any]:
    """The middle of the ranges (d rounded), for asking whether an activation is admissible at all (with a
    deep `hidden` stack: as the first layer of that block)."""
    out: dict[str, Any] = {"activation": activation, **_hidden_entry(hidden)}
    for a, r in ranges.items():
        v = (r[0] + r[1]) / 2 if isinstance(r, tuple) else r
        out[a] = int(round(v)) if a == "d" else float(v)
    return out


def _hidden_entry(hidden: str | None) -> dict[str, str]:
    """A point's "hidden" entry: none for a one-layer block (its points, keys and seeds as before deep blocks),
    else {"hidden": the stack's text}."""
    from .strategies import NO_HIDDEN
    return {} if hidden in (None, NO_HIDDEN) else {"hidden": hidden}


def _block_entry(point: dict[str, Any]) -> dict[str, Any]:
    """What a candidate check's ``derived`` gets beside the point's numbers: its activation and, for a deep
    block, its hidden stack's text (a derived value that needs more of K than k0, k1: dissipation's
    lambda_bar, its value at rho = -1)."""
    return {"activation": point["activation"], **_hidden_entry(point.get("hidden"))}


def _check_block(point: dict[str, Any]) -> None:
    """ParameterError when the point's deep block has no kernel table (``deep_kernel.check_block``: a kink or
    jump after a jump); nothing to check for a one-layer block."""
    if "hidden" in point:
        from .numeric.deep_kernel import check_block
        from .strategies import hidden_stack
        check_block(point["activation"], hidden_stack(point["hidden"]))


def search_hidden(claim, hidden) -> list[str]:
    """The hidden stacks (``strategies.HIDDEN_STACKS`` texts) `check` uses for `claim`: the given one (pinned;
    ``check --hidden``), else the stacks its candidate check's domain declares (one-layer first: the design
    draws them), else one-layer blocks only.  A deep stack may be pinned where the candidate check's or the
    claim's own domain declares stacks (its evidence runs on the Gaussian field of K; the claim's domain alone:
    its evidence's budget was sized on one-layer blocks, so the design does not draw them unasked); elsewhere
    it is a ClaimError naming the claim and why (:data:`HIDDEN_REFUSALS`)."""
    from .strategies import NO_HIDDEN, hidden_text
    cc = claim.candidate
    drawn = (cc.domain or {}).get("hidden")
    declared = drawn or (getattr(claim.domain, "spec", None) or {}).get("hidden")
    if hidden is None:
        return list(drawn or (NO_HIDDEN,))
    text = hidden_text(hidden)
    if text != NO_HIDDEN and claim.name not in NOISE_FREE and not declared:
        why = HIDDEN_REFUSALS.get(claim.name, "its domain declares no hidden stack (its evidence does not run on the "
                                              "Gaussian field of the block's kernel)")
        raise ClaimError(f"claim {claim.name} does not apply to deep blocks (--hidden): {why}")
    return [text]


def search_activations(claim, ranges: dict[str, Any], activation: str | None, hidden: str | None = None) -> list[str]:
    """The activations `check` searches: the given one (pinned), else the claim's own (a closed form
    about one activation), else the claim's declared domain's, else the registry's closed-form and
    quadrature activations; those where the quantity does not exist (``admissible`` False at the
    middle of the domain, e.g. k1 = +inf for a jump; with a deep `hidden` stack, also a first layer that stack
    cannot follow) are left out.  Closed-form kernels first (the search shrinks towards the first), quadrature
    ones last."""
    from .activations import get_activation
    cc = claim.candidate
    if not cc.activation_axis:
        return [None]
    if activation is not None:
        return [get_activation(activation).name]
    if cc.activation is not None:
        return [cc.activation]
    spec = getattr(claim.domain, "spec", {}) or {}
    names = (cc.domain or {}).get("activation") or spec.get("activation")
    if not names:
        from .strategies import CLOSED_FORM_ACTIVATIONS, QUADRATURE_ACTIVATIONS
        names = CLOSED_FORM_ACTIVATIONS + QUADRATURE_ACTIVATIONS
    names = list(dict.fromkeys(get_activation(a).name for a in names))
    from .errors import ParameterError

    def admissible(a) -> bool:
        try:
            _check_block(_reference_point(ranges, a, hidden))
            return cc.admissible is None or bool(cc.admissible(_reference_point(ranges, a, hidden)))
        except ParameterError:
            return False
    if cc.admissible is not None or _hidden_entry(hidden):
        names = [a for a in names if admissible(a)]
    return sorted(names, key=lambda a: not _closed_form(a))


def _axis_strategy(axis: str, r: Any, sigma_grid: int | None):
    from hypothesis import strategies as st
    if sigma_grid and axis in ("sigma_w", "sigma_b") and isinstance(r, tuple) and r[0] != r[1]:
        lo, hi = map(float, r)
        return st.sampled_from([lo + (hi - lo) * i / (sigma_grid - 1) for i in range(sigma_grid)])
    if not isinstance(r, tuple):
        return st.just(r)
    if axis in INTEGER_AXES:
        return st.integers(int(r[0]), int(r[1]))
    lo, hi = map(float, r)
    return st.just(lo) if lo == hi else st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                                                  allow_subnormal=False)


def _strategy(ranges: dict[str, Any], activations, *, sigma_grid: int | None = None, hidden: str | None = None):
    """Points of the search: the activation drawn from `activations` (shrinking towards the first),
    each axis uniform over its range (integers for d), pinned ones fixed; a deep `hidden` stack (pinned) in
    every point, its kernel table as dear as a quadrature one.  For an activation whose
    kernel needs quadrature (one table per (sigma_w, sigma_b) pair) sigma_w and sigma_b take
    `sigma_grid` values each, evenly spaced over their ranges, so the search builds at most
    sigma_grid^2 tables per such activation (sigma_a only scales k); the space-filling design
    covers the sigmas between the grid's values."""
    from hypothesis import strategies as st
    if isinstance(activations, str):
        activations = [activations]
    per = {}
    deep = {k: st.just(v) for k, v in _hidden_entry(hidden).items()}
    for act in activations:
        grid = None if _closed_form(act) and not deep else sigma_grid
        per[act] = st.fixed_dictionaries({"activation": st.just(act), **deep,
                                          **{a: _axis_strategy(a, r, grid) for a, r in ranges.items()}})
    if len(per) == 1:
        return next(iter(per.values()))
    return st.sampled_from(list(per)).flatmap(per.__getitem__)


def design_points(claim, ranges: dict[str, Any], activations: list[str], key, n: int = DESIGN_POINTS,
                  hiddens=None):
    """A space-filling design over the check's domain, chosen without the derived formula or the
    candidate: the all-low corner (first activation) and the all-high corner (last, the most
    expensive activation), then a Latin hypercube (``scipy.stats.qmc.LatinHypercube``, from `key`)
    of n - 2 points over every free axis and the activation (cost-aware: d = lo + (hi - lo) u^1.5
    rounded, quadrature activations at weight :data:`QUADRATURE_WEIGHT`).  `hiddens`: the hidden stacks
    (:func:`search_hidden`; default one-layer blocks): one is in every point; several (the first one-layer)
    are one more axis of the hypercube, the deep stacks together at weight :data:`QUADRATURE_WEIGHT` (a deep
    kernel table is as dear as a quadrature one), the corners one-layer.  Points where the
    quantity does not exist (``admissible`` False) are replaced by further Latin-hypercube points;
    duplicates (few free axes) are dropped.  Returns (points, notes)."""
    from scipy.stats import qmc

    from .strategies import NO_HIDDEN
    cc = claim.candidate
    hiddens = list(hiddens or (NO_HIDDEN,))
    free = [a for a in cc.axes if isinstance(ranges[a], tuple) and ranges[a][0] != ranges[a][1]]
    fixed = {a: (ranges[a][0] if isinstance(ranges[a], tuple) else ranges[a]) for a in cc.axes if a not in free}
    weights = [1.0 if _closed_form(a) else QUADRATURE_WEIGHT for a in activations]
    cum = [sum(weights[: i + 1]) / sum(weights) for i in range(len(weights))]
    n_deep = sum(h != NO_HIDDEN for h in hiddens)
    h_weights = [1.0 if h == NO_HIDDEN else QUADRATURE_WEIGHT / n_deep for h in hiddens]
    h_cum = [sum(h_weights[: i + 1]) / sum(h_weights) for i in range(len(h_weights))]
    h_axis = len(hiddens) > 1

    def make(u, act=None) -> dict[str, Any]:
        pt: dict[str, Any] = {"activation": act}
        for x, a in zip(u, free):
            lo, hi = map(float, ranges[a])
            if a == "d":
                pt[a] = int(min(hi, math.floor(lo + (hi - lo + 1) * x ** DESIGN_D_POWER)))
            elif a == "i":                 # an index 1..d-1 (lyapunov_spectrum): spread over that point's range
                pt[a] = x
            elif a in INTEGER_AXES:
                pt[a] = int(min(hi, math.floor(lo + (hi - lo + 1) * x)))
            else:
                pt[a] = lo + (hi - lo) * float(x)
        if act is None:
            x = u[len(free)] if len(activations) > 1 else 0.0
            pt["activation"] = activations[next(i for i, c in enumerate(cum) if x <= c or i == len(cum) - 1)]
            x = u[-1] if h_axis else 0.0
            hidden = hiddens[next(i for i, c in enumerate(h_cum) if x <= c or i == len(h_cum) - 1)]
        else:                                     # a corner: one-layer when the stack is an axis
            hidden = hiddens[0]
        for a, v in fixed.items():
            pt[a] = int(v) if a in INTEGER_AXES else float(v)
        if "i" in free:
            top = max(1, min(int(ranges["i"][1]), int(pt.get("d", ranges["i"][1] + 1)) - 1))
            pt["i"] = int(min(top, max(int(ranges["i"][0]), 1 + math.floor(pt["i"] * top))))
        return {"activation": pt["activation"], **_hidden_entry(hidden), **{a: pt[a] for a in cc.axes}}

    def ok(pt) -> bool:
        from .errors import ParameterError
        try:
            _check_block(pt)
            return cc.admissible is None or bool(cc.admissible(pt))
        except ParameterError:
            return False

    dims = len(free) + (1 if len(activations) > 1 else 0) + (1 if h_axis else 0)
    lo_corner = make([0.0] * len(free), activations[0])
    hi_corner = make([1.0] * len(free), activations[-1])
    points, notes = [], []
    for pt in (lo_corner, hi_corner):
        if ok(pt) and pt not in points:
            points.append(pt)
        elif not ok(pt):
            notes.append(f"corner {pt} left out: the quantity does not exist there")
    if dims == 0:
        return points, notes
    sampler = qmc.LatinHypercube(d=dims, seed=as_key(key).generator())
    need = n - len(points)
    for _ in range(4):                      # a few rounds: replace inadmissible points
        if need <= 0:
            break
        for u in sampler.random(need):
            pt = make([float(x) for x in u])
            if ok(pt) and pt not in points:
                points.append(pt)
        need = n - len(points)
    if len(points) < n:
        notes.append(f"only {len(points)} distinct admissible design points (of {n} asked)")
    if cc.sharp_points is not None:          # a bound: where the claim says it is attained (sharpness)
        sharp = [pt for pt in cc.sharp_points(ranges) if ok(pt) and pt not in points]
        points.extend(sharp)
        if sharp:
            notes.append(f"{len(sharp)} points where the claim attains its bound (sharpness)")
    return points, notes


def discrepancy(cc, cand: Candidate, point: dict[str, Any]) -> float | None:
    """|candidate - derived| / error_scale at `point`; None where the claim's quantity does not
    exist (not admissible, derived not finite).  A candidate that is not a finite real number at
    `point` raises CandidateError naming the point (the search counts it as infinitely far)."""
    from .errors import ParameterError
    try:
        if cc.admissible is not None and not cc.admissible(point):
            return None
        v = values_at(point, cc)
    except ParameterError:                     # e.g. sigma_w = sigma_b = 0
        return None
    der = cc.derived(v | _block_entry(point))
    if not math.isfinite(der):
        return None
    gap = der - cand.value(v) if cc.bound == "upper" else abs(cand.value(v) - der)   # a bound: only below
    return max(gap, 0.0) / cc.error_scale(v, der)


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
                undefined_rejects: bool = False, evidence=None) -> _PointTest:
    """The claim's evidence at `point` against the candidate: a deterministic comparison within
    the evidence's tolerance, or a z-test at `level` with its bias allowance.  A candidate that is
    not a finite real number at `point` is bad input naming the point (CandidateError: the user
    chose the point), or, with `undefined_rejects` (a point the search found), rejected there
    with the reason (its value None, never a nan).  `evidence` replaces the claim's evidence
    function (the design's cheaper ``design_evidence``)."""
    cc = claim.candidate
    v = values_at(point, cc)
    try:
        cand_value, undefined = cand.value(v), None
    except CandidateError as exc:
        if not undefined_rejects:
            raise
        cand_value, undefined = None, str(exc)
    derived = cc.derived(v | _block_entry(point))
    ev = (evidence or cc.evidence)(point, as_key(seed, claim.name), level)
    if undefined is not None:
        r = deterministic_check(claim.name, ev.estimate, math.nan, tol=0.0, error=ev.stderr, method=ev.method)
        r.passed = False
    elif cc.bound == "upper":                # one-sided: rejected where a rate found exceeds the candidate
        r = deterministic_check(claim.name, ev.estimate, cand_value, tol=ev.tolerance, error=ev.stderr,
                                method=ev.method)
        r.passed = bool(ev.estimate <= cand_value + ev.tolerance)
        r.alternative = "less"
        # a candidate below the derived bound by more than this relative amount is rejected here (surely)
        r.min_detectable = ((derived - ev.estimate + ev.tolerance) / derived
                            if derived > 0 and math.isfinite(derived) else None)
    elif ev.tolerance is not None:
        r = deterministic_check(claim.name, ev.estimate, cand_value, tol=ev.tolerance, error=ev.stderr,
                                method=ev.method)
    else:
        r = agreement_test(claim.name, ev.estimate, ev.stderr, cand_value, level=level, n=ev.n, seed=seed,
                           abs_tol=ev.rel_tol * abs(ev.estimate), method=ev.method)
    return _PointTest(dict(point), r, ev, cand_value, derived, seed, undefined)


def _closed_form(activation: str | None) -> bool:
    """True for a closed-form kernel, and where the quantity has no activation (None)."""
    from .numeric.kernels import has_closed_form
    return activation is None or has_closed_form(activation)


def _key(point: dict[str, Any]) -> tuple:
    return tuple(sorted(point.items()))


def search(claim, cand: Candidate, activations, given: dict[str, Any], *, seed: int = 0,
           level: float = 0.999, n_examples: int = DEFAULT_EXAMPLES, screen_level: float | None = None,
           design: bool = False, hidden: str | None = None):
    """Steer, screen, shrink and confirm (module docstring): (the deciding point test, the search
    record, the shrunk counterexample or None).  `activations`: one name or a list (an axis of
    the search); `screen_level`: the level 1 - a of screens and confirmations (default
    ``a = sqrt((1 - level) / MAX_SCREENS)``).  With `design` (a space-filling design follows), a
    candidate that agrees with the derived formula at every example is not screened at one
    arbitrary point: the deciding test is None unless a point was rejected.  `hidden`: a deep stack pinned in
    every point (a one-layer block when None)."""
    from hypothesis import Phase, given as h_given, seed as h_seed, target

    from .explore import _Counterexample, example_key, search_settings

    cc = claim.candidate
    ranges = search_ranges(claim, given)
    activations = [activations] if isinstance(activations, str) else list(activations)
    closed = any(_closed_form(act) for act in activations) and not _hidden_entry(hidden)
    strategy = _strategy(ranges, activations, sigma_grid=SIGMA_GRID_QUADRATURE, hidden=hidden)
    alpha = 1.0 - level
    a = math.sqrt(alpha / MAX_SCREENS) if screen_level is None else 1.0 - screen_level
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
            points[key] = {"activation": point["activation"], **_hidden_entry(point.get("hidden")),
                           **{a: point[a] for a in cc.axes}}
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
        raise CandidateError(f"no admissible parameters for {claim.name} with activation "
                             f"{', '.join(activations)} in {ranges}")
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
        # shrinking (a point already failed): the cheaper design evidence screens; a shrunk point it
        # misses is simply not taken, and the confirmation runs the full evidence
        cheap = state["failed"] or (scores.get(key) or 0.0) >= CHEAP_SCREEN
        t = judge_point(claim, cand, points[key], example_key(seed, claim.name, key, "screen"), 1.0 - a,
                        undefined_rejects=True, evidence=cc.design_evidence if cheap else None)
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
    if not state["failed"] and (best >= AGREE or not design) and screen(best_key if best >= AGREE
                                                                         else admissible[0]):
        state["failed"].append(best_key if best >= AGREE else admissible[0])
        state["notes"].append("rejected at the chosen point; not shrunk")
    if state["failed"] and state["shrink_evals"] >= max_shrink_evals:
        state["notes"].append(f"shrinking stopped after {max_shrink_evals} evaluations")
    confirmations, conf_tests = [], []
    decided = None
    for key in dict.fromkeys([state["failed"][-1], state["failed"][0]] if state["failed"] else []):
        t = screens[key]
        if t.deterministic:
            decided = t
            break
        c = judge_point(claim, cand, points[key], example_key(seed, claim.name, key, "confirm"), 1.0 - a,
                        undefined_rejects=True,
                        evidence=cc.design_evidence if (scores.get(key) or 0.0) >= CHEAP_SCREEN else None)
        confirmations.append(c.summary())
        conf_tests.append(c)
        if c.rejected:
            decided = c
            break
    if decided is None and (best >= AGREE or not design):
        chosen = best_key if best >= AGREE else admissible[0]
        if chosen not in screens:        # the budget went to other points: test the chosen one too
            state["cap"] += 1
            screen(chosen)
        decided = screens[chosen]
        if decided.rejected and conf_tests:     # a screen the confirmation overruled does not decide
            decided = conf_tests[0]
    record = {"examples": len(admissible), "evaluations": len(order), "seed": seed, "max_examples": n_examples,
              "ranges": {k: list(v) if isinstance(v, tuple) else v for k, v in ranges.items()},
              "activations": activations, **({"hidden": hidden} if _hidden_entry(hidden) else {}),
              "max_discrepancy": best, "max_discrepancy_at": points[best_key],
              "screen_level": 1.0 - a, "confirm_level": 1.0 - a, "max_screens": state["cap"],
              "familywise": alpha, "screens": [t.summary() for t in screens.values()],
              "confirmations": confirmations, "first_failure": points[state["failed"][0]] if state["failed"] else None,
              "notes": state["notes"]}
    counter = decided.point if decided is not None and decided.rejected else None
    return decided, record, counter


# ----------------------------------------------------------------------------- the design
def _badness(t: _PointTest) -> float:
    """How far a point test is from agreeing: -log10 p (Monte Carlo), |estimate - candidate| /
    tolerance (deterministic); infinite where the candidate is undefined."""
    r = t.result
    if t.candidate_value is None:
        return math.inf
    if r.pvalue is not None:
        return -math.log10(max(r.pvalue, 1e-300))
    if r.alternative == "less":                 # a bound: how close the rates come to the candidate
        return (r.estimate - t.candidate_value) / max(r.tolerance, 1e-300)
    return abs(r.estimate - t.candidate_value) / max(r.tolerance, 1e-300)


def run_design(claim, cand: Candidate, points: list[dict], seed, screen_level: float):
    """The claim's evidence at every design point (``design_evidence``, else ``evidence``) at
    `screen_level`; a Monte Carlo rejection is confirmed with the full ``evidence`` and a fresh key at
    the same level (a deterministic one decides at once).  Stops at the first confirmed rejection.
    Returns (the point tests, the confirmations, the deciding test or None, the final test at each
    point: its screen, or the confirmation that overruled the screen)."""
    from .explore import example_key
    cc = claim.candidate
    tests, confirmations = [], []
    shown = []                     # the final test at each point: its screen, or its confirmation
    for pt in points:
        t = judge_point(claim, cand, pt, example_key(seed, claim.name, _key(pt), "design"), screen_level,
                        undefined_rejects=True, evidence=cc.design_evidence)
        tests.append(t)
        if not t.rejected:
            shown.append(t)
            continue
        if t.deterministic:
            return tests, confirmations, t, shown
        try:
            far = (discrepancy(cc, cand, pt) or 0.0) >= CHEAP_SCREEN
        except CandidateError:
            far = True
        c = judge_point(claim, cand, pt, example_key(seed, claim.name, _key(pt), "design-confirm"), screen_level,
                        undefined_rejects=True, evidence=cc.design_evidence if far else None)
        confirmations.append(c.summary())
        shown.append(c)
        if c.rejected:
            return tests, confirmations, c, shown
    return tests, confirmations, None, shown


def _design_record(ranges, activations, points, tests, confirmations, screen_level, notes,
                   rejected: bool, hiddens=None) -> dict[str, Any]:
    rows = [{**t.summary(), "min_detectable": t.result.min_detectable, "deterministic": t.deterministic}
            for t in tests]
    # a min_detectable above 1 (100 %) means the quantity is ~0 there: no relative scale, counted unpowered
    mdes = [(r["min_detectable"], r["parameters"]) for r in rows
            if r["min_detectable"] is not None and r["min_detectable"] <= 1.0]
    weakest = max(mdes, key=lambda m: m[0]) if mdes else (None, None)
    best = min(mdes, key=lambda m: m[0]) if mdes else (None, None)
    return {"kind": f"space-filling: 2 opposite corners + Latin hypercube (scipy.stats.qmc), d ~ u^{DESIGN_D_POWER}, "
                    f"quadrature activations" + (" and deep blocks" if len(hiddens or ()) > 1 else "")
                    + f" at weight {QUADRATURE_WEIGHT}",
            "domain": _domain_record(ranges, activations, hiddens),
            "points": len(points), "tested": len(tests), "planned": [dict(p) for p in points],
            "level": screen_level, "rows": rows, "confirmations": confirmations,
            "rejected": rejected,
            "min_detectable_weakest": weakest[0], "weakest_at": weakest[1],
            "min_detectable_best": best[0], "best_at": best[1],
            "unpowered": len(rows) - len(mdes), "notes": notes}


def _domain_record(ranges, activations, hiddens=None) -> dict[str, Any]:
    """The design's domain as JSON: the ranges, the activations and (only when a deep stack is in it) the
    hidden stacks."""
    from .strategies import NO_HIDDEN
    out = {**{k: list(v) if isinstance(v, tuple) else v for k, v in ranges.items()}, "activation": list(activations)}
    if any(h != NO_HIDDEN for h in hiddens or ()):
        out["hidden"] = list(hiddens)
    return out


def domain_text(domain: dict[str, Any]) -> str:
    """'d in [2, 16], sigma_w in [0.3, 1.5], activation in {relu, tanh}' (pinned axes as 'd = 5'); hidden
    stacks as 'hidden in {none, (relu 1.0 0.5)}'."""
    parts = []
    for k, v in domain.items():
        if k == "activation" and list(v) == [None]:
            continue                                  # the quantity has no activation
        if k == "hidden":
            shown = [h if h == "none" else f"({h})" for h in v]
            parts.append(f"hidden in {{{', '.join(shown)}}}" if len(shown) > 1 else f"hidden = {shown[0]}")
        elif k == "activation":
            parts.append(f"activation in {{{', '.join(v)}}}" if len(v) > 1 else f"activation = {v[0]}")
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k} in [{v[0]:g}, {v[1]:g}]")
        else:
            parts.append(f"{k} = {v:g}")
    return ", ".join(parts)


def _sharpness(cc, ranges: dict[str, Any], tests) -> dict[str, Any] | None:
    """A bound's sharpness: at the points where the claim attains its bound (``cc.sharp_points``, tested with
    the design), the largest rate found over the candidate; sharp when every such ratio is at least
    1 - ``cc.sharp_tolerance`` (the claim's), i.e. the candidate is not above the attained value there."""
    tol = cc.sharp_tolerance
    sharp = {_key(p) for p in cc.sharp_points(ranges)}
    rows = [{"parameters": t.point, "rate": t.result.estimate, "candidate": t.candidate_value,
             "rate_over_candidate": (t.result.estimate / t.candidate_value if t.candidate_value else None)}
            for t in tests if _key(t.point) in sharp and t.candidate_value is not None]
    if not rows:
        return {"sharp": None, "tolerance": tol, "points": [],
                "note": "no point where the claim attains its bound lies in the searched domain"}
    worst = min(rows, key=lambda r: r["rate_over_candidate"] if r["rate_over_candidate"] is not None else -1.0)
    q = worst["rate_over_candidate"]
    return {"sharp": bool(q is not None and q >= 1.0 - tol), "tolerance": tol, "points": rows,
            "worst": worst, "factor": (1.0 / q) if q else None,
            "how": f"sharp iff at every point where the claim attains its bound ({len(rows)} tested with the design) "
                   f"the largest value found is within {tol:g} (relative) of the candidate"}


# ----------------------------------------------------------------------------- the check
def check_candidate(claim: str, candidate: str, *, activation: str | None = None, d: int | None = None,
                    sigma_w: float | None = None, sigma_b: float | None = None,
                    sigma_a: float | None = None, beta: float | None = None, rho: float | None = None,
                    index: int | None = None, eps0: float | None = None, eps: float | None = None,
                    heads: int | None = None, n_tokens: int | None = None, quantity: str | None = None,
                    seed: int = 0, level: float = 0.999, explore: int | None = None,
                    design: int = DESIGN_POINTS, field: str = "mlp", sigma_q: float | None = None,
                    hidden=None) -> CheckOutcome:
    """Test `candidate` for `claim` against the claim's own evidence (see the module docstring);
    `explore` is the number of examples of the search (default :data:`DEFAULT_EXAMPLES`, or
    :data:`DEFAULT_EXAMPLES_QUADRATURE` when every searched activation needs quadrature); `design`
    the number of points of the space-filling design (at least 8).  `activation` None: searched over
    the claim's declared activations; a name or the user's own expression pins it.  `quantity` picks one
    of the claim's quantities (synchronization_time: "mean", default, or "variance"); `eps0`, `eps` pin the
    distances (synchronization_time), `heads`, `n_tokens` the attention's H and N (attention_bound).
    `field` "rqf" (`sigma_q`): a claim whose formula or evidence is the MLP field's is refused with the
    reason (:data:`RQF_REFUSALS`); attention_bound, which no noise field enters, runs as for "mlp".
    `hidden` (``ModelParams.hidden``: triples, "ACT SW SB" texts or one "ACT SW SB; ..." text) pins the deep
    block's hidden stack, as `activation` pins its first layer; a claim whose formula or evidence is not the
    Gaussian field of K is refused with the reason (:data:`HIDDEN_REFUSALS`).  None: the search is over
    one-layer blocks and the design also draws the stacks the claim declares (:func:`search_hidden`), unless
    the candidate uses the sigmas (the first layer's: a formula about one-layer blocks)."""
    from .activations import get_activation
    from .params import MODEL_DEFAULTS, check_field
    the_claim = _claim(claim, quantity)
    field = check_field(field)
    if field == "rqf":
        if the_claim.name in RQF_REFUSALS:
            raise ClaimError(f"claim {the_claim.name} does not apply to the rqf field: "
                             f"{RQF_REFUSALS[the_claim.name]}")
        mlp_given = {k: v for k, v in dict(activation=activation, sigma_w=sigma_w, sigma_b=sigma_b,
                                           sigma_a=sigma_a).items() if v is not None}
        if mlp_given:
            ModelParams(field="rqf", **mlp_given)        # the one error naming an MLP option
    if sigma_q is not None:
        ModelParams(field=field, sigma_q=sigma_q)        # validated; with field "mlp" only its default
    from .strategies import hidden_stack, hidden_text
    if hidden is not None and hidden_stack(hidden_text(hidden)) and field == "rqf":
        ModelParams(field="rqf", hidden=hidden_stack(hidden_text(hidden)))     # the one error naming the option
    hiddens = search_hidden(the_claim, hidden)
    pinned = hiddens[0] if hidden is not None else None
    hidden_note = None
    if the_claim.name in NOISE_FREE and _hidden_entry(pinned):
        hidden_note = (f"hidden stack {pinned}: the MLP block does not enter {the_claim.name}; the verdict is the "
                       f"same for every block")
        hiddens, pinned = search_hidden(the_claim, None), None
    if activation is not None and _hidden_entry(pinned):
        _check_block({"activation": activation, "hidden": pinned})
    rqf_note = None
    if field == "rqf":
        rqf_note = (f"field rqf (sigma_q = {MODEL_DEFAULTS['sigma_q'] if sigma_q is None else sigma_q:g}): the "
                    f"noise field does not enter {the_claim.name}; the verdict is the same for every field")
    cc = the_claim.candidate
    cand = parse_candidate(claim, candidate)
    hidden_notes = []
    if hidden is None and len(hiddens) > 1 and {x.name for x in cand.expr.free_symbols} & set(SIGMAS):
        hiddens = hiddens[:1]                  # a formula in the first layer's sigmas is about one-layer blocks
        hidden_notes.append("deep blocks not drawn: the candidate uses the sigmas (the first layer's), so it is "
                            "about one-layer blocks (check --hidden tests it on a deep one)")
    if activation is not None:
        act = get_activation(activation).name
        if cc.activation is not None and act != cc.activation:
            raise CandidateError(f"claim {the_claim.name} is about {cc.activation} only (got {act})")
    seed = check_int("seed", seed, 0)
    level = check_real("level", level, 0.5, maximum=1.0 - 1e-12)
    n_design = check_int("design", design, DESIGN_POINTS)
    given = {"d": None if d is None else check_int("d", d, 2),
             "sigma_w": None if sigma_w is None else check_real("sigma_w", sigma_w, 0.0),
             "sigma_b": None if sigma_b is None else check_real("sigma_b", sigma_b, 0.0),
             "sigma_a": None if sigma_a is None else check_real("sigma_a", sigma_a, 0.0),
             "beta": None if beta is None else check_real("beta", beta, 0.0),
             "rho": None if rho is None else check_real("rho", rho, -1.0, maximum=1.0),
             "i": None if index is None else check_int("index", index, 1),
             "H": None if heads is None else check_int("heads", heads, 1),
             "N": None if n_tokens is None else check_int("n_tokens", n_tokens, 2),
             "eps0": None if eps0 is None else check_real("eps0", eps0, 0.0, strict=True, maximum=0.1)}
    if eps is not None:
        if eps0 is None:
            raise CandidateError("--eps needs --eps0 (the candidate depends on both distances)")
        eps = check_real("eps", eps, 0.0, strict=True)
        if not eps < given["eps0"]:
            raise CandidateError(f"eps = {eps:g} must be < eps0 = {given['eps0']:g}")
        given["a"] = math.log(given["eps0"] / eps)
    unused = [k for k, v in given.items() if v is not None and k not in cc.axes and k in ("H", "N", "eps0", "a")]
    if unused:
        raise CandidateError(f"claim {the_claim.name} does not depend on {', '.join(unused)}")
    given = {**{a: None for a in cc.axes}, **given}
    if given["sigma_w"] is not None and given["sigma_b"] is not None:
        ModelParams(sigma_w=given["sigma_w"], sigma_b=given["sigma_b"])   # not both 0
    ranges = search_ranges(the_claim, given)
    acts = search_activations(the_claim, ranges, activation, pinned)
    if not acts:
        raise CandidateError(f"{the_claim.name}: no activation of its domain where the quantity exists")
    if explore is None and cc.examples is not None:
        n_examples = cc.examples
    elif explore is None:
        n_examples = (DEFAULT_EXAMPLES if any(_closed_form(a) for a in acts) and not _hidden_entry(pinned)
                      else DEFAULT_EXAMPLES_QUADRATURE)
    else:
        n_examples = check_int("explore", explore, 1)
    design_rec, sharpness = None, None
    if all(given[k] is not None for k in cc.axes) and len(acts) == 1:
        point = {"activation": acts[0], **_hidden_entry(pinned), **{k: given[k] for k in cc.axes}}
        if cc.admissible is not None and not cc.admissible(point):
            raise CandidateError(f"{the_claim.name} is not finite for {acts[0]} at {point} (k1 = +inf for a jump)")
        t, record, counter, chosen = judge_point(the_claim, cand, point, seed, level), None, None, "user"
    else:
        points, notes = design_points(the_claim, ranges, acts, as_key(seed, "check", the_claim.name, "design"),
                                      n_design, hiddens=hiddens)
        notes = hidden_notes + notes
        # screens: at most MAX_SCREENS, plus the chosen point's when the budget went elsewhere, plus the design
        a = math.sqrt((1.0 - level) / (MAX_SCREENS + 1 + len(points)))
        t, record, counter = search(the_claim, cand, acts, given, seed=seed, level=level, n_examples=n_examples,
                                    screen_level=1.0 - a, design=True, hidden=pinned)
        chosen = "search (shrunk counterexample)" if counter is not None else "search (max discrepancy)"
        if counter is None:
            tests, confirmations, decided, shown = run_design(the_claim, cand, points, seed, 1.0 - a)
            design_rec = _design_record(ranges, acts, points, tests, confirmations, 1.0 - a, notes,
                                        decided is not None and decided.rejected, hiddens)
            if cc.sharp_points is not None:
                sharpness = _sharpness(cc, ranges, tests)
            if decided is not None:
                t, counter, chosen = decided, decided.point, "space-filling design"
            elif t is None:
                t, chosen = max(shown, key=_badness), "space-filling design (worst agreement)"
        else:
            design_rec = {"points": len(points), "tested": 0, "planned": [dict(p) for p in points],
                          "domain": _domain_record(ranges, acts, hiddens),
                          "notes": notes + ["not run: the search's rejection decided"]}
        record["familywise"] = 1.0 - level
        record["design_points"] = len(points)
    r = t.result
    info = dict(t.evidence.details)
    if t.reason is not None:
        info["reason"] = t.reason
    if claim != the_claim.name:
        info["asked_as"] = claim
    if rqf_note is not None:
        info["field"] = rqf_note
    if hidden_note is not None:
        info["hidden"] = hidden_note
    v = values_at(t.point, cc)
    if sharpness is not None:
        info["sharpness"] = sharpness
    shown_params = {k: x for k, x in t.point.items() if not (k == "activation" and x is None)}
    return CheckOutcome(claim=the_claim.name, candidate=cand.text,
                        verdict="consistent" if r.passed else "rejected", estimate=t.evidence.estimate,
                        stderr=t.evidence.stderr, candidate_value=t.candidate_value, derived_value=t.derived_value,
                        parameters={**shown_params, **{k: x for k, x in v.items() if k not in shown_params}},
                        quantity=cc.quantity,
                        sharp=None if sharpness is None or not r.passed else sharpness["sharp"],
                        level=level, pvalue=r.pvalue, tolerance=r.tolerance, n=t.evidence.n,
                        seed=t.seed if r.pvalue is not None else None, method=t.evidence.method,
                        chosen=chosen, counterexample=counter, search=record, design=design_rec,
                        min_detectable=r.min_detectable, power=r.power,
                        details={"ci": list(r.ci) if r.ci else None, "candidate_sympy": sp.sstr(cand.expr),
                                 "test_level": r.level, **info})


__all__ = ["check_candidate", "RQF_REFUSALS", "HIDDEN_REFUSALS", "search_hidden", "parse_candidate", "evidence_descriptions", "search", "search_ranges", "discrepancy", "judge_point",
           "checkable", "values_at", "Candidate", "CheckOutcome", "DEFAULT_EXAMPLES", "MAX_SCREENS",
           "design_points", "run_design", "search_activations", "DESIGN_POINTS"]
