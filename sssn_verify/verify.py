"""The verification suite: run the claims, control the family-wise false alarms.

``verify(mode, claims, seed, progress)`` runs each claim of the registry at the
mode's budget, then applies Holm's step-down procedure at level ``alpha`` to the
p-values of all the statistical checks run (the deterministic ones, quadrature
and exact algebra, pass or fail on their stated tolerance).  If every derived
formula is right (within the stated tolerances), the probability that the suite
reports any failure is at most ``alpha``.

``campaign(mode, claims, seeds)`` runs the suite at many seeds (``verify --seeds
0:100``): per-seed suites, and pooled results (see :class:`CampaignResult`).

More (moved from this docstring): docs/modules.md, ``sssn_verify.verify``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .claims import CLAIMS, UNAVAILABLE, ClaimResult, get_claim
from .claims.base import MODES
from .errors import NumericalError, ParameterError
from .limits import parse_seeds  # (seeds of a campaign: checked against MAX_SEEDS)
from .executor import Interrupted, Outcome, Task, using
from .numeric.rng import Key, recording
from .params import check_int, check_real
from .stats import _jsonable, bonferroni, holm, holm_adjusted

DEFAULT_ALPHA = 0.01


@dataclass
class SuiteResult:
    """All claim results of one suite run, with the multiple-testing bookkeeping."""

    results: list[ClaimResult]
    mode: str
    seed: int
    alpha: float
    seconds: float
    n_stochastic: int
    unavailable: dict[str, str] = field(default_factory=dict)
    timings: list[dict[str, Any]] = field(default_factory=list)
    executor: dict[str, Any] = field(default_factory=dict)
    interrupted: list[str] = field(default_factory=list)   # claims not run: Ctrl-C stopped the suite
    #: every claim ran but Ctrl-C stopped the exploration of their domains that followed
    exploration_interrupted: bool = False

    @property
    def passed(self) -> bool:
        return (bool(self.results) and not self.interrupted and not self.exploration_interrupted
                and all(r.passed for r in self.results))

    @property
    def numerical_failures(self) -> list[ClaimResult]:
        """The claims whose checker failed numerically (``error`` set, no checks): not verdicts."""
        return [r for r in self.results if getattr(r, "error", None)]

    @property
    def failed_checks(self) -> list[ClaimResult]:
        """The claims that ran and failed their checks (a verdict against the formula)."""
        return [r for r in self.results if not getattr(r, "error", None) and not r.passed]

    def exit_code(self) -> int:
        """The suite's part of ``verify``'s exit code: 1 if a claim failed its checks, else 4 if a claim's
        checker failed numerically (an internal failure, not a verdict), else 0."""
        return 1 if self.failed_checks else (4 if self.numerical_failures else 0)

    def _failed_words(self) -> str:
        failed, errs = len(self.failed_checks), self.numerical_failures
        if not errs:
            return f"{failed} of them failed"
        return (f"{failed} of them failed their checks, {len(errs)} could not be checked: internal numerical "
                f"failure of {', '.join(r.name for r in errs)}")

    @property
    def verdict_text(self) -> str:
        """The suite's verdict in words (a partial suite says so and never 'passed'; a claim whose checker
        failed numerically is named, as an internal failure, not a verdict on its formula)."""
        if self.interrupted:
            n = len(self.results) + len(self.interrupted)
            return (f"PARTIAL: interrupted after {len(self.results)} of {n} claims "
                    f"({self._failed_words()}; not run: {', '.join(self.interrupted)})")
        if self.exploration_interrupted:
            return (f"PARTIAL: all {len(self.results)} claims ran ({self._failed_words()}); the exploration "
                    "of their domains was interrupted")
        errs = self.numerical_failures
        if errs:
            names = ", ".join(r.name for r in errs)
            n, failed = len(self.results), len(self.failed_checks)
            rest = (f"{failed} of the other {n - len(errs)} failed their checks" if failed else
                    f"the other {n - len(errs)} passed" if n > len(errs) else "no other claim ran")
            head = "SOME CLAIMS FAILED" if failed else "INCOMPLETE"
            return (f"{head}: {len(errs)} of {n} claims not checked, an internal numerical failure "
                    f"(not a verdict on the formula): {names}; {rest}")
        return "all claims passed" if self.passed else "SOME CLAIMS FAILED"

    @property
    def familywise_text(self) -> str:
        k = self.n_stochastic
        if not k:
            return "no statistical checks (deterministic checks judged on their stated tolerance)"
        per = self.alpha / k
        return (f"family-wise false-alarm probability <= {self.alpha:g} "
                f"(Holm over {k} statistical checks; Bonferroni per-check level {per:.2g}; "
                f"deterministic checks judged on their stated tolerance)")

    def to_frame(self):
        """One row per check (pandas DataFrame): claim, check, passed, estimate, stderr, ci_low, ci_high,
        expected, level, n, seed, pvalue, holm_adjusted_p, tolerance, method, min_detectable, power; a claim
        whose checker failed numerically is one row, check "internal numerical failure", passed False, its
        message as the method and no numbers)."""
        return check_frame(_frame_rows(self.results))

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({
            "passed": self.passed, "mode": self.mode, "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "familywise": {"alpha": self.alpha, "method": "holm", "n_checks": self.n_stochastic,
                           "bonferroni_per_check": self.alpha / self.n_stochastic
                           if self.n_stochastic else None, "text": self.familywise_text},
            "claims": [r.to_dict() for r in self.results],
            "unavailable": self.unavailable,
            "executor": self.executor, "timings": self.timings,
            **({"interrupted": list(self.interrupted)} if self.interrupted else {}),
            **({"interrupted": ["exploration"]} if self.exploration_interrupted else {}),
        })


CHECK_COLUMNS = ("claim", "check", "passed", "estimate", "stderr", "ci_low", "ci_high", "expected", "level", "n",
                 "seed", "pvalue", "holm_adjusted_p", "tolerance", "method", "min_detectable", "power")


def _frame_rows(results):
    """(claim name, check) of every check, a claim that failed numerically as one failed stand-in row."""
    from .stats import CheckResult
    for r in results:
        if getattr(r, "error", None):
            yield r.name, CheckResult("internal numerical failure", False, None, None, None, None, r.level, 0,
                                      seed=r.seed, method=r.error)
        for c in r.checks:
            yield r.name, c


def check_frame(rows):
    """A DataFrame of (claim name, CheckResult) pairs, one row each, columns :data:`CHECK_COLUMNS`."""
    import pandas as pd
    out = []
    for claim, c in rows:
        lo, hi = c.ci if c.ci is not None else (None, None)
        out.append(dict(claim=claim, check=c.name, passed=bool(c.passed), estimate=c.estimate, stderr=c.stderr,
                        ci_low=lo, ci_high=hi, expected=c.expected, level=c.level, n=c.n, seed=c.seed,
                        pvalue=c.pvalue, holm_adjusted_p=c.details.get("holm_adjusted_p"), tolerance=c.tolerance,
                        method=c.method, min_detectable=c.min_detectable, power=c.power))
    return pd.DataFrame(out, columns=list(CHECK_COLUMNS))


def _apply_holm(results: list[ClaimResult], alpha: float) -> int:
    """Judge every statistical check by Holm at family level alpha; returns their number."""
    checks = [c for r in results for c in r.checks if c.pvalue is not None]
    if not checks:
        return 0
    pvals = [c.pvalue for c in checks]
    rejected = holm(pvals, alpha)
    adjusted = holm_adjusted(pvals)
    bonf = bonferroni(pvals, alpha)
    for c, rej, adj, b in zip(checks, rejected, adjusted, bonf):
        c.details["holm_adjusted_p"] = adj
        c.details["bonferroni_rejects"] = b
        c.details["own_level_passed"] = c.passed
        c.passed = not rej
    return len(checks)


def run_claim(name: str, mode: str, seed: int) -> ClaimResult:
    """The suite's task: claim `name` checked at the `mode` budget with `seed` (pure, re-runnable).

    A :class:`~sssn_verify.errors.NumericalError` of the checker (the toolkit's own numbers failed at the
    claim's fixed configurations) does not end the suite: the claim comes back as a result with no checks
    and ``error`` set (:func:`numerical_failure`), on a worker as in this process."""
    t0 = time.perf_counter()
    try:
        return get_claim(name).run(mode, seed)
    except NumericalError as exc:
        return numerical_failure(name, mode, seed, exc, time.perf_counter() - t0)


def numerical_failure(name: str, mode: str, seed: int, exc: BaseException, seconds: float = 0.0) -> ClaimResult:
    """Claim `name`'s result when its checker failed numerically: its declaration (title, statement,
    derived result, budget, level), no checks, ``error`` the exception's message on one line; never passed."""
    claim = get_claim(name)
    try:
        derived = claim.derived()
    except Exception as err:  # noqa: BLE001 - the derivation is checked by its own tests
        derived = f"<derivation failed: {err}>"
    message = " ".join(str(exc).split()) or type(exc).__name__
    if not message.startswith(f"claim {claim.name} ("):     # Claim.run's own wrapping names them already
        message = f"claim {claim.name} ({mode}, seed {seed}): numerical failure: {message}"
    return ClaimResult(claim.name, claim.title, claim.statement, derived, [], mode, int(seed), claim.level,
                       float(seconds), budget=dict(claim.budgets[mode]), statistic=claim.statistic,
                       tolerance=claim.tolerance, derived_kind=claim.derived_kind, power=claim.power,
                       error=message[:2000])


def _selected(mode: str, claims: Iterable[str] | None) -> list[str]:
    if mode not in MODES:
        raise ParameterError("mode", mode, f"one of {', '.join(MODES)}")
    # ClaimError before any work; an alias (lambda1) names its claim (lyapunov)
    return list(CLAIMS) if not claims else list(dict.fromkeys(get_claim(n).name for n in claims))


class VerifyInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`verify`: a KeyboardInterrupt whose ``suite`` holds the claims that had
    finished (Holm over their checks) and, in ``suite.interrupted``, the names of the others."""

    def __init__(self, suite: "SuiteResult"):
        super().__init__(suite.verdict_text)
        self.suite = suite


def _suite(mode, claims, seed, alpha, outcomes: list[Outcome], seconds, executor) -> SuiteResult:
    results = [o.value for o in outcomes]
    k = _apply_holm(results, alpha)
    return SuiteResult(results, mode, seed, alpha, seconds, k,
                       dict(UNAVAILABLE) if not claims else {},
                       [o.timing() for o in outcomes], executor)


def suite_of(results: list[ClaimResult], mode: str, seed: int, *, alpha: float = DEFAULT_ALPHA,
             level: float | None = None, seconds: float | None = None) -> SuiteResult:
    """A SuiteResult of claim results run elsewhere (e.g. one by one in a notebook).

    With `level` (one claim, judged at its own level) the checks keep their own verdicts;
    otherwise Holm at family level `alpha` judges every statistical check, as :func:`verify` does.
    """
    results = list(results)
    k = sum(c.pvalue is not None for r in results for c in r.checks) if level is not None \
        else _apply_holm(results, alpha)
    return SuiteResult(results, mode, seed, alpha if level is None else 1.0 - level,
                       sum(r.seconds for r in results) if seconds is None else seconds, k)


def verify(mode: str = "quick", claims: Iterable[str] | None = None, seed: int = 0,
           progress: bool | Callable[[str], None] = False, *, alpha: float = DEFAULT_ALPHA,
           executor: Any = None) -> SuiteResult:
    """Run the named claims (all by default) and judge them with Holm at family level alpha.

    ``progress=True`` shows a progress bar on stderr (dask's on a cluster); a callable gets
    each claim's name before it is submitted.  ``executor``: see the module docstring.
    A claim whose checker fails numerically (:class:`~sssn_verify.errors.NumericalError`) does not end
    the suite: it is a result with ``error`` set and no checks (never passed; ``SuiteResult.numerical_failures``,
    ``exit_code()`` 4 unless another claim failed its checks), Holm judges the checks of the others.
    """
    seed = check_int("seed", seed, 0)
    alpha = check_real("alpha", alpha, 0.0, strict=True, maximum=0.5)
    names = _selected(mode, claims)
    t0 = time.perf_counter()
    with using(executor) as ex:
        for n in names:
            if callable(progress):
                progress(n)
        weights = expected_seconds(names, mode)
        tasks = [Task(n, run_claim, (n, mode, seed), weight=weights[n]) for n in names]
        try:
            outcomes = ex.run(tasks, desc=f"verify --{mode}", progress=progress is True)
        except Interrupted as exc:        # Ctrl-C: the finished claims, judged among themselves
            suite = _suite(mode, claims, seed, alpha, exc.done, time.perf_counter() - t0, ex.describe())
            suite.interrupted = list(exc.pending)
            raise VerifyInterrupted(suite) from None
        info = ex.describe()
    # (a claim that failed numerically stopped early: its time says nothing of its cost)
    record_seconds(mode, {o.key: o.seconds for o in outcomes if not getattr(o.value, "error", None)})
    return _suite(mode, claims, seed, alpha, outcomes, time.perf_counter() - t0, info)


# ----------------------------------------------------------------------------- ETA from budgets
def _timings_path(mode: str):
    from .outputs import cache_folder
    return cache_folder("timings") / f"verify-{mode}.json"


def recorded_seconds(mode: str) -> dict[str, float]:
    """Per claim, the seconds its last run at `mode` took here (recorded by every :func:`verify`)."""
    import json

    from .outputs import read_cache_file
    try:
        raw = read_cache_file(_timings_path(mode), max_bytes=1 << 20)   # a FIFO or a huge file: no record
        data = json.loads(raw) if raw is not None else {}
        return {str(k): float(v) for k, v in data.items() if float(v) > 0}
    except (OSError, ValueError, TypeError, AttributeError, RecursionError):
        return {}


def record_seconds(mode: str, seconds: dict[str, float]) -> None:
    """Add this run's per-claim seconds to the record (a failure to write is not an error of the suite)."""
    import json
    from .outputs import write_atomic
    try:
        data = {**recorded_seconds(mode), **{k: round(float(v), 3) for k, v in seconds.items()}}
        write_atomic(_timings_path(mode), json.dumps(data, indent=1, sort_keys=True), mode=0o600, what="cache")
    except Exception:  # noqa: BLE001 - the timing record is a convenience
        pass


def _size(value) -> float | None:
    """A budget entry as a size: an int (paths, depth, configs) or a tuple's length; floats are tolerances."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value)
    if isinstance(value, (tuple, list)):
        return float(len(value))
    return None


def budget_ratio(claim, mode: str, other: str) -> float:
    """How much more work `mode`'s budget asks than `other`'s: the largest ratio among the size entries both
    declare (ints, tuple lengths; nested tables included), i.e. the dominant growth.  (Their product
    overestimates by orders of magnitude: a budget's sizes are mostly separate parts of the work, e.g.
    ``paths`` and ``paths_bound``, not nested loops.)"""
    def sizes(b, prefix=""):
        out = {}
        for k, v in b.items():
            if isinstance(v, dict):
                out.update(sizes(v, f"{prefix}{k}."))
            elif _size(v):
                out[prefix + k] = _size(v)
        return out
    a, b = sizes(claim.budgets.get(mode, {})), sizes(claim.budgets.get(other, {}))
    return max((a[k] / b[k] for k in a.keys() & b.keys()), default=1.0)


def expected_seconds(names: list[str], mode: str) -> dict[str, float]:
    """The progress bar's weight of each claim: its recorded seconds at `mode`; else its recorded seconds at
    the other mode scaled by the budgets' ratio (:func:`budget_ratio`); else the median of the others (1
    when nothing is recorded, i.e. every claim counts the same)."""
    same = recorded_seconds(mode)
    out = {}
    for n in names:
        if n in same:
            out[n] = same[n]
            continue
        for other in MODES:
            rec = recorded_seconds(other) if other != mode else {}
            if n in rec:
                out[n] = rec[n] * budget_ratio(CLAIMS[n], mode, other)
                break
    known = sorted(out.values())
    fill = known[len(known) // 2] if known else 1.0
    return {n: max(out.get(n, fill), 1e-3) for n in names}


@dataclass
class CampaignResult:
    """The suite at many seeds: one :class:`SuiteResult` per seed, and pooled results.

    Pooled, two kinds of tests, judged together by Holm at family level ``alpha``:

    * the number of seeds whose suite failed: each seed's suite fails with probability at
      most ``alpha`` when every formula is right (Holm inside the seed), and seeds are
      independent, so ``p = P(Binomial(S, alpha) >= failures)``;
    * per statistical check, the estimate pooled over seeds (mean of the per-seed
      estimates, stderr ``sqrt(sum se_s^2) / S``), re-tested against the mean of the per-seed
      expected values (a claim may draw its test function or tokens per seed) with the check's own
      tolerance and one- or two-sidedness (per configuration, then Bonferroni over configurations, as the
      claim does at one seed).  S seeds shrink the stderr by sqrt(S): the pooled test sees
      errors a single seed cannot.  Checks without an estimate and a stderr are not pooled.

    Deterministic checks (quadrature, algebra) must pass at every seed.  If every formula is
    right, the campaign reports a failure with probability at most ``alpha``.
    """

    suites: list[SuiteResult]
    mode: str
    seeds: list[int]
    alpha: float
    seconds: float
    pooled: list[dict[str, Any]]
    seed_test: dict[str, Any]
    deterministic_passed: bool
    timings: list[dict[str, Any]] = field(default_factory=list)
    executor: dict[str, Any] = field(default_factory=dict)

    @property
    def checks_passed(self) -> bool:
        """No formula was rejected: deterministic checks, the seed-failure count and the pooled tests."""
        return self.deterministic_passed and self.seed_test["passed"] and all(p["passed"] for p in self.pooled)

    @property
    def passed(self) -> bool:
        return self.checks_passed and not self.numerical_failures

    @property
    def numerical_failures(self) -> list[dict[str, Any]]:
        """(seed, claim, message) of every claim whose checker failed numerically at a seed: not pooled,
        not counted as a failed seed (not a verdict on the formula), but the campaign is not passed."""
        return [{"seed": s.seed, "claim": r.name, "message": r.error}
                for s in self.suites for r in s.numerical_failures]

    def exit_code(self) -> int:
        """1 if a formula was rejected, else 4 if a claim failed numerically at some seed, else 0."""
        return 1 if not self.checks_passed else (4 if self.numerical_failures else 0)

    @property
    def text(self) -> str:
        return (f"campaign over {len(self.seeds)} seeds: family-wise false-alarm probability <= {self.alpha:g} "
                f"(Holm over the seed-failure count and {len(self.pooled)} pooled checks)")

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({
            "passed": self.passed, "mode": self.mode, "seeds": self.seeds, "alpha": self.alpha,
            "seconds": round(self.seconds, 3), "familywise": self.text,
            "seed_failures": self.seed_test, "deterministic_passed": self.deterministic_passed,
            **({"numerical_failures": self.numerical_failures} if self.numerical_failures else {}),
            "pooled": self.pooled,
            "per_seed": [{k: v for k, v in s.to_dict().items() if k not in ("timings", "executor")}
                         for s in self.suites],
            "executor": self.executor, "timings": self.timings,
        })


def _pool_points(points_by_seed: list[list[dict]], alternative: str, level: float):
    """Per configuration: pooled estimate and its agreement test; None if not poolable.

    A configuration is the same sub-test at every seed (same name, same one- or two-sidedness); its
    expected value may differ between seeds (a claim may draw its test function or its starting tokens
    from the seed's key), so the pooled test compares the mean estimate with the mean expected value,
    i.e. tests the mean of the per-seed differences."""
    from .stats import agreement_test
    S = len(points_by_seed)
    if len({len(pp) for pp in points_by_seed}) != 1:
        return None
    out = []
    for j, first in enumerate(points_by_seed[0]):
        pts = [pp[j] for pp in points_by_seed]
        try:
            est = [float(p["estimate"]) for p in pts]
            se = [float(p["stderr"]) for p in pts]
            exp = [float(p["expected"]) for p in pts]
            tol = max(float(p.get("tolerance") or 0.0) for p in pts)
        except (TypeError, ValueError, KeyError):
            return None
        if not all(math.isfinite(x) for x in est + se + exp):
            return None
        if len({p.get("name") for p in pts}) != 1 or len({p.get("alternative") for p in pts}) != 1:
            return None                        # not the same sub-test at every seed (e.g. explored points)
        pooled = agreement_test(first.get("name", f"point {j}"), sum(est) / S,
                                math.sqrt(sum(x * x for x in se)) / S, sum(exp) / S, level=level, n=S,
                                abs_tol=tol, alternative=first.get("alternative") or alternative,
                                method="mean over seeds, z-test")
        out.append(pooled)
    return out


def _pool(suites: list[SuiteResult]) -> tuple[list[dict[str, Any]], bool]:
    """Per check, its results pooled over the seeds where its claim ran (a seed where the claim's checker
    failed numerically has no checks: left out, and named in the entry's ``seeds_failed_numerically``)."""
    pooled, det_ok = [], True
    for ci in range(len(suites[0].results)):
        ran = [s for s in suites if not getattr(s.results[ci], "error", None)]
        broken = [s.seed for s in suites if getattr(s.results[ci], "error", None)]
        if not ran:
            continue
        r = ran[0].results[ci]
        for k, c in enumerate(r.checks):
            same = [s.results[ci].checks[k] for s in ran]
            if c.pvalue is None:
                det_ok = det_ok and all(x.passed for x in same)
                continue
            entry = {"claim": r.name, "check": c.name, "seeds_passed": sum(x.passed for x in same),
                     "n_seeds": len(same), "level": c.level,
                     **({"seeds_failed_numerically": broken} if broken else {})}
            if all("points" in x.details for x in same):
                parts = _pool_points([x.details["points"] for x in same], c.alternative, c.level)
            else:
                parts = _pool_points([[{"name": c.name, "estimate": x.estimate, "stderr": x.stderr,
                                        "expected": x.expected, "tolerance": x.tolerance,
                                        "alternative": x.alternative}] for x in same], c.alternative, c.level)
            if parts is None:
                entry.update(pvalue=None, passed=True, note="not poolable (no estimate with a stderr)")
            else:
                worst = min(parts, key=lambda t: t.pvalue)
                entry.update(pvalue=min(1.0, len(parts) * worst.pvalue), estimate=worst.estimate,
                             stderr=worst.stderr, ci=list(worst.ci), expected=worst.expected,
                             tolerance=worst.tolerance, worst=worst.name,
                             points=[{"name": t.name, "estimate": t.estimate, "stderr": t.stderr,
                                      "ci": list(t.ci), "expected": t.expected, "pvalue": t.pvalue}
                                     for t in parts])
            pooled.append(entry)
    return pooled, det_ok


def _judge_campaign(suites: list[SuiteResult], alpha: float):
    from scipy.stats import binom
    S = len(suites)
    failures = sum(bool(s.failed_checks) for s in suites)   # a numerical failure is no verdict: not counted
    p_seed = float(binom.sf(failures - 1, S, alpha)) if failures else 1.0
    pooled, det_ok = _pool(suites)
    tested = [e for e in pooled if e["pvalue"] is not None]
    pvals = [p_seed] + [e["pvalue"] for e in tested]
    rejected = holm(pvals, alpha)
    adjusted = holm_adjusted(pvals)
    for e, rej, adj in zip(tested, rejected[1:], adjusted[1:]):
        e["passed"] = not rej
        e["holm_adjusted_p"] = adj
    seed_test = {"failures": failures, "n_seeds": S, "pvalue": p_seed, "holm_adjusted_p": adjusted[0],
                 "passed": not rejected[0],
                 "method": f"P(Binomial({S}, {alpha:g}) >= failures): each seed's suite fails with "
                           f"probability <= {alpha:g} if every formula is right"}
    return pooled, seed_test, det_ok


def campaign(mode: str = "quick", claims: Iterable[str] | None = None, seeds: Iterable[int] = (0,),
             progress: bool = False, *, alpha: float = DEFAULT_ALPHA, executor: Any = None) -> CampaignResult:
    """The suite at every seed of `seeds` (claims x seeds as independent tasks): per-seed
    suites and pooled results (:class:`CampaignResult`).  A claim whose checker fails numerically at a
    seed is recorded there (``error``) and left out of the pooling; the other results are kept."""
    alpha = check_real("alpha", alpha, 0.0, strict=True, maximum=0.5)
    seeds = [check_int("seed", s, 0) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ParameterError("seeds", seeds, "must name at least one seed, all distinct")
    names = _selected(mode, claims)
    t0 = time.perf_counter()
    with using(executor) as ex:
        tasks = [Task(f"{n}@{s}", run_claim, (n, mode, s)) for s in seeds for n in names]
        outcomes = ex.run(tasks, desc=f"verify --{mode} x{len(seeds)} seeds", progress=progress)
        info = ex.describe()
    seconds = time.perf_counter() - t0
    suites = []
    for i, s in enumerate(seeds):
        mine = outcomes[i * len(names):(i + 1) * len(names)]
        suites.append(_suite(mode, claims, s, alpha, mine, sum(o.seconds for o in mine), info))
    pooled, seed_test, det_ok = _judge_campaign(suites, alpha)
    return CampaignResult(suites, mode, seeds, alpha, seconds, pooled, seed_test, det_ok,
                          [o.timing() for o in outcomes], info)


def campaign_plan(mode: str = "quick", claims: Iterable[str] | None = None, seeds: Iterable[int] = (0,), *,
                  budgets: dict[str, dict] | None = None) -> list[tuple[int, str, Key, int | None]]:
    """The random streams a campaign draws from: (seed, claim, key, paths) for every stream each claim
    draws at each seed (paths None: a set-up Generator), once per key and size, in order of first use.

    The claims run in this thread under ``numeric.rng.recording`` (their verdicts are discarded);
    ``budgets`` overrides entries of a claim's `mode` budget (``{claim: {entry: value}}``: fewer paths
    give the same keys as long as the configurations stay the same)."""
    seeds = [check_int("seed", s, 0) for s in seeds]
    plan = []
    for s in seeds:
        for n in _selected(mode, claims):
            with recording() as log:
                get_claim(n).run(mode, s, budget=(budgets or {}).get(n))
            plan += [(s, n, k, p) for k, p in dict.fromkeys(log)]
    return plan


__all__ = ["verify", "suite_of", "campaign", "campaign_plan", "run_claim", "numerical_failure", "parse_seeds", "SuiteResult", "CampaignResult", "DEFAULT_ALPHA"]

