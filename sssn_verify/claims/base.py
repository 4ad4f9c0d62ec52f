"""The Claim: a statement, its derivation and its numeric checker, declared side by side.

A claim module builds one :class:`Claim` (name, statement, derivation, formula, checker,
statistic, level, tolerance, budgets).  ``Claim.run(mode, seed)`` evaluates the formula *from
the derivation*, runs the checker at the mode's budget with the key ``as_key(seed, name)`` and
returns a :class:`ClaimResult`; passing a different ``formula`` feeds that (possibly wrong)
formula through the very same checker, as the mutation tests do.

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.base``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import ClaimError, NonFiniteError, NumericalError, ParameterError, SimulationError
from ..numeric.rng import Key, as_key
from ..params import check_real
from ..stats import CheckResult, _jsonable

MODES = ("quick", "full")
#: what a checker may raise when its own numbers fail (non-finite samples handed to a statistic, an
#: exploding simulation, a singular fit, a floating-point trap): :meth:`Claim.run` re-raises them as
#: :class:`~sssn_verify.errors.NumericalError` (an internal failure, never "bad input")
NUMERICAL_FAILURES = (NonFiniteError, SimulationError, ArithmeticError, np.linalg.LinAlgError)

Checker = Callable[[Any, dict, Key, float], list[CheckResult]]


@dataclass
class ClaimResult:
    """What running one claim produced: its checks and the overall verdict."""

    name: str
    title: str
    statement: str
    derived: str
    checks: list[CheckResult]
    mode: str
    seed: int                      # the user's seed (the checker's key is as_key(seed, name))
    level: float
    seconds: float
    budget: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    statistic: str = ""
    tolerance: str = ""
    derived_kind: str = "sympy"
    power: str = ""
    #: set, with no checks, when the checker failed numerically at its own fixed configurations (the
    #: :class:`~sssn_verify.errors.NumericalError`'s one-line message): ``verify`` records the claim so
    #: instead of abandoning the suite; an internal failure, not a verdict on the formula (never passed)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def headline(self) -> CheckResult | None:
        """The check shown in one-line summaries: the first failing one, else the first
        statistical one (it has an interval), else the first (None: no check finished, see ``error``)."""
        if not self.checks:
            return None
        for c in self.checks:
            if not c.passed:
                return c
        for c in self.checks:
            if c.pvalue is not None:
                return c
        return self.checks[0]

    def to_dict(self) -> dict[str, Any]:
        h = self.headline
        return _jsonable({
            "name": self.name, "title": self.title, "statement": self.statement,
            "derived": self.derived, "derived_kind": self.derived_kind, "passed": self.passed,
            **({} if h is None else {"headline": h.name}),
            "estimate": None if h is None else h.estimate, "stderr": None if h is None else h.stderr,
            "ci": None if h is None or h.ci is None else list(h.ci), "expected": None if h is None else h.expected,
            "level": self.level, "mode": self.mode, "seed": self.seed,
            "seconds": round(self.seconds, 3), "budget": self.budget, "notes": self.notes,
            "statistic": self.statistic, "tolerance": self.tolerance,
            "power": self.power_summary(),
            "checks": [c.to_dict() for c in self.checks],
            **({} if self.error is None else {"error": {"kind": "numerical", "message": self.error}}),
        })

    def power_summary(self) -> dict[str, Any]:
        """The claim's power: its design statement, per check the smallest relative error of the
        formula it rejects (with probability ``power`` at its level; deterministic checks: surely),
        and the claim's headline ``min_detectable``: that of the check whose estimate the claim shows
        (:attr:`headline`; ``basis`` "headline check"), or, when that check states none, the weakest
        (largest) of the checks that do (``basis`` "weakest check"); ``check`` names it.  Never the
        smallest over the checks: a claim is no stronger than the test it shows."""
        per = {c.name: {"min_detectable": c.min_detectable, "power": c.power} for c in self.checks}
        mde, basis, which = headline_power(self)
        return {"designed": self.power, "min_detectable": mde, "basis": basis, "check": which,
                "checks": per}


def headline_power(result: "ClaimResult") -> tuple[float | None, str, str | None]:
    """(min_detectable, basis, check name) of a claim result: see :meth:`ClaimResult.power_summary`."""
    if not result.checks:
        return None, "no checks", None
    h = result.headline
    if h.min_detectable is not None:
        return h.min_detectable, "headline check", h.name
    powered = [c for c in result.checks if c.min_detectable is not None]
    if powered:
        weakest = max(powered, key=lambda c: c.min_detectable)
        return weakest.min_detectable, "weakest check", weakest.name
    return None, "no check states a power", None


@dataclass(frozen=True)
class Evidence:
    """Numbers about a claim's quantity at one parameter point that do not use its derivation.

    ``tolerance`` set: a deterministic value (quadrature, a numerical supremum) judged within
    it; ``tolerance`` None: a Monte Carlo mean with standard error ``stderr``, judged by a z-test
    with the bias allowance ``rel_tol * |estimate|``.
    """

    estimate: float
    stderr: float
    n: int
    method: str
    tolerance: float | None = None
    rel_tol: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CandidateCheck:
    """How ``sssn-verify check CLAIM --candidate EXPR`` tests a user's formula for this claim.

    * ``variables``: the names a candidate may use (``k0``, ``k1`` are the numeric kernel
      constants at the point; ``sw``, ``sb``, ``sa``, ``r`` are accepted as short names);
    * ``axes``: the parameters a point is made of (``d``, ``rho``, ``beta`` and the sigmas);
    * ``derived(point)``: the derived formula at a point (to choose where a candidate differs);
    * ``evidence(point, key, level)``: independent numbers (:class:`Evidence`) from the Key `key`;
    * ``error_scale(point, derived)``: a rough size of the evidence's error (for choosing points);
    * ``admissible(point)``: False where the quantity does not exist (e.g. k1 = +inf);
    * ``domain``: the search ranges of ``check`` per axis, ``{axis: (low, high)}`` (default: the
      claim's ``domain`` where it declares the axis, else ``check.FALLBACK_RANGES``);
    * ``aliases``: older names of the claim for ``check`` (e.g. ``lambda1`` for ``lyapunov``);
    * ``activation``: the one activation the closed form is about (e.g. ``relu``), else None;
    * ``description``: what the evidence is, LaTeX prose of ours (words; maths in ``$...$``; what is
      computed, never a module or function name): ``check --help`` spells it in ASCII (``plain_text``);
    * ``design_evidence``: the evidence at the points of ``check``'s space-filling design, at a
      fixed, cheaper budget (a rejection there is confirmed by ``evidence``); default ``evidence``;
    * ``values(point)``: variables computed from a point besides its axes (default: k0, k1 of the kernel);
    * ``quantity`` / ``quantities``: the quantity this check is about, and the checks of the claim's other
      quantities by name (``check CLAIM --quantity Q``; the claim's ``candidate`` is the default one);
    * ``activation_axis``: False when the quantity has no MLP activation (attention);
    * ``bound``: "upper" when the candidate is an upper bound of the evidence (judged one-sided), and
      ``sharp_points(ranges)``: points where the claim says the bound is attained (``check`` tests them
      too and says whether the candidate is sharp there: within ``sharp_tolerance``, relative);
    * ``examples``: the search's default number of examples when its steering is cheap enough for more
      than ``check.DEFAULT_EXAMPLES``.
    """

    variables: tuple[str, ...]
    axes: tuple[str, ...]
    derived: Callable[[dict], float]
    evidence: Callable[[dict, int, float], Evidence]
    error_scale: Callable[[dict, float], float]
    admissible: Callable[[dict], bool] | None = None
    domain: dict[str, tuple] | None = None
    aliases: tuple[str, ...] = ()
    activation: str | None = None
    description: str = ""
    design_evidence: Callable[[dict, int, float], Evidence] | None = None
    values: Callable[[dict], dict] | None = None
    quantity: str | None = None
    quantities: dict[str, "CandidateCheck"] | None = None
    activation_axis: bool = True
    bound: str | None = None
    sharp_points: Callable[[dict], list] | None = None
    sharp_tolerance: float = 0.0
    examples: int | None = None


@dataclass(frozen=True)
class Claim:
    """One verifiable claim of docs/mathematics.md: statement, derivation, checker, statistic, level, budgets."""

    name: str
    #: `title` and `statement` are LaTeX prose: words, mathematics inside $...$ (the appendix sets it,
    #: report.html shows it as MathML through ``tex_mathml``, the terminal through ``plain_text``)
    title: str
    statement: str
    derivation: str | None
    formula: Callable[[], Any]
    checker: Checker
    statistic: str
    level: float
    tolerance: str
    budgets: dict[str, dict[str, Any]]
    derived_text: Callable[[], str] | None = None
    #: the parameter domain where the claim is meant to hold: a hypothesis strategy of one
    #: configuration, which the checker accepts as ``budget["configs"] = [config]``
    #: (``sssn_verify.explore``); None when the claim is checked at fixed parameters only
    domain: Any = None
    #: the hand-picked configurations the checker runs by default (explicit anchors)
    anchors: tuple = ()
    # "sympy": derived_text/derivation is the output of a sympy computation; "stated": a
    # hand-written statement of the claimed bound (the report must not call it derived)
    derived_kind: str = "sympy"
    # how `check` tests a user's formula for this claim (None: no closed-form result to check)
    candidate: CandidateCheck | None = None
    # the smallest error the checks are designed to detect, in words (each check's achieved
    # minimal detectable error is in its CheckResult.min_detectable)
    power: str = ""

    def __post_init__(self):
        if self.derived_kind not in ("sympy", "stated"):
            raise ClaimError(f"claim {self.name!r}: derived_kind must be 'sympy' or 'stated'")
        for mode in MODES:
            if mode not in self.budgets:
                raise ClaimError(f"claim {self.name!r} declares no {mode!r} budget")
        check_real("level", self.level, 0.5, maximum=1.0 - 1e-15)

    def derived(self) -> str:
        """The derived result as printed to users (the sympy result string)."""
        if self.derived_text is not None:
            return self.derived_text()
        if self.derivation is None:
            return ""
        from ..symbolic import derive
        import sympy as sp
        return sp.sstr(derive(self.derivation).result)

    def run(self, mode: str = "quick", seed=0, *, level: float | None = None,
            formula: Any = None, budget: dict[str, Any] | None = None) -> ClaimResult:
        """Check the claim at the mode's budget.

        ``formula`` replaces the derived formula (mutation tests); ``level`` replaces
        the claim's confidence level (the suite passes a Bonferroni-corrected one);
        ``budget`` overrides entries of the mode's budget.
        """
        if mode not in MODES:
            raise ParameterError("mode", mode, f"one of {', '.join(MODES)}")
        key = as_key(seed, self.name)
        lvl = self.level if level is None else check_real("level", level, 0.0, strict=True,
                                                           maximum=1.0 - 1e-15)
        b = dict(self.budgets[mode])
        b.update(budget or {})
        t0 = time.perf_counter()
        predicted = self.formula() if formula is None else formula
        try:
            checks = self.checker(predicted, b, key, lvl)
        except NumericalError:
            raise
        except NUMERICAL_FAILURES as exc:   # the toolkit's own numbers at valid input: not bad input
            where = f" at {tuple(b['configs'])}" if "configs" in b else ""
            raise NumericalError(f"claim {self.name} ({mode}, seed {key.seed}){where}: numerical failure: "
                                 f"{type(exc).__name__}: {exc}") from exc
        try:
            derived = self.derived()
        except Exception as exc:  # the derivation itself is checked by its own tests
            derived = f"<derivation failed: {exc}>"
        return ClaimResult(self.name, self.title, self.statement, derived, list(checks), mode,
                           key.seed, lvl, time.perf_counter() - t0, budget=b, statistic=self.statistic,
                           tolerance=self.tolerance, derived_kind=self.derived_kind, power=self.power)

    def describe(self) -> dict[str, Any]:
        """The declaration (no computation): for `verify --list` and the report."""
        return {"name": self.name, "title": self.title, "statement": self.statement,
                "derivation": self.derivation, "statistic": self.statistic, "level": self.level,
                "tolerance": self.tolerance, "budgets": self.budgets, "derived_kind": self.derived_kind,
                "power": self.power}
