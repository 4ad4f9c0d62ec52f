"""Benchmark: the stated power is the power achieved (issue 27, deliverable 4).

For every claim with a formula to inject into: run the claim once (seed 0) at a small budget whose
headline check is one sub-test (or, where a check is inherently several sub-tests, the sub-test it shows),
read that check's stated ``min_detectable`` m, then feed the claim's own checker the formula with an error
of exactly m at that point -- a factor 1 + m and 1 - m -- at seeds 1..n, and count how often the check
rejects.  A check whose stated power is the power achieved rejects about 0.9 of the time (``stats.POWER``).

One-sided checks (a bound) are designed to detect one direction only; their other direction is shown in
brackets and not judged.  Claims without an injectable formula are listed in ``NOT_INJECTABLE`` with the
reason.

    python benchmarks/injected_power.py                       # every case, 100 seeds per sign
    python benchmarks/injected_power.py --seeds 30 --claims kernel two_point
    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/injected_power.py    # on a shared machine

Seeds: the stated power is read at seed 0, the injected errors are judged at seeds 1..n (each a distinct user
seed, so every run draws its own streams ``Key(seed).child(claim, ...)``); both signs use the same seeds (the
claims that cache their Monte Carlo estimates judge both formulas on the same runs, which halves their cost;
each sign's rate is still a binomial proportion over n independent seeds).  Printed per row: claim, check,
budget, stated m, rejection rate at 1 + m and at 1 - m, runs, CPU seconds of this process (user + system,
numba's threads included).
"""
from __future__ import annotations

import argparse
import math
import re
import resource
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

#: claims whose formula cannot carry a relative error of the stated size, and why
NOT_INJECTABLE = {
    "coercivity": "its formula is a truth value (the activation characterization: dissipates or not); its checks are "
                  "exact sign agreements and a one-sided sign test against 0, which state no relative power "
                  "(min_detectable None, the smallest detectable rate of the wrong sign in details)",
    "attention_bound": "deterministic checks (exact attention rates): the injected error is rejected surely above the "
                       "stated power and accepted below it, tested in tests/test_stated_power.py",
}
#: claims whose formula is a stated (not derived) one-sided bound that the truth does not attain: an error of the
#: stated size in the bound is not an error of the claim (the truth stays inside the injected bound), so the rate
#: is not expected to be 0.9; measured and printed all the same (see the report of issue 27).  Their stated power
#: is measured by ``violation``: the bound moved each seed's own m beyond the truth, rejected about 0.9 of the time
NOT_SHARP = ("convergence_depth", "metastability", "propagation_of_chaos")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _scaled(fn: Callable, factor: float) -> Callable:
    return lambda *a: factor * fn(*a)


def _when(fn: Callable, factor: float, at: Callable[..., bool]) -> Callable:
    """`fn` times `factor` where `at(*args)`, else `fn`: an error at one point of the formula."""
    return lambda *a: factor * fn(*a) if at(*a) else fn(*a)


def _number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    if m is None:
        raise ValueError(f"no {pattern!r} in {text!r}")
    return float(m.group(1))


# ----------------------------------------------------------------------------- injections, one per claim
# inject(formula, factor, shown) -> the formula with an error `factor` at the sub-test `shown` (its name)

def _inject_scale(f, k, shown):
    return _scaled(f, k)


def _inject_kernel(f, k, shown):
    """K at the shown overlap (and parameters), or k0 or k1 alone."""
    sw, sb, sa = (float(v) for v in re.search(r"\(([^)]*)\)$", shown).group(1).split(";")[-1].split(","))
    if shown.startswith("K("):
        r = _number(r"K\(([-0-9.e]+);", shown)
        return replace(f, K=_when(f.K, k, lambda n, rr, *p: rr == r and p == (sw, sb, sa)))
    i = 0 if shown.startswith("k0") else 1

    def k0k1(n, *p):
        v = list(f.k0k1(n, *p))
        if p == (sw, sb, sa):
            v[i] *= k
        return tuple(v)
    return replace(f, k0k1=k0k1)


def _inject_two_point(f, k, shown):
    r = _number(r"^[ab]\(([-0-9.e]+)\)", shown)
    field = shown[0]
    return replace(f, **{field: _when(getattr(f, field), k, lambda d, rr, k0, K: rr == r)})


def _inject_ito(f, k, shown):
    return replace(f, coefficient=_scaled(f.coefficient, k))


def _inject_relu_rates(f, k, shown):
    d = int(_number(r" d=(\d+) ", shown))
    field = "lambda1" if shown.startswith("lambda_1") else "edge"
    return replace(f, **{field: _when(getattr(f, field), k, lambda dd, *s: dd == d)})


def _inject_dissipation(f, k, shown):
    return replace(f, lambda_bar=_scaled(f.lambda_bar, k))


def _inject_limit(f, k, shown):
    return lambda p, depth, n, seed: k * f(p, depth, n, seed)


def _inject_spectrum(f, k, shown):
    i = int(_number(r"lambda_(\d+)$", shown))

    def g(d, k0, k1):
        lam = np.array(f(d, k0, k1), dtype=float)
        lam[i - 1] *= k
        return lam
    return g


def _inject_sync_time(f, k, shown):
    """(lambda_1, sigma^2) with lambda_1 rescaled so that the shown prediction (the censored mean or standard
    deviation of the passage time) is off by exactly the factor k (the claim's formula gives the law's
    parameters, the checker derives the prediction from them)."""
    from scipy.optimize import brentq
    from sssn_verify.claims.synchronization_time import CONFIGS, censored_moments
    from sssn_verify.numeric.kernels import kernel
    from sssn_verify.sync_time import SyncTimeLaw
    which = 0 if "mean of" in shown else 1
    act, d, sw, sb, sa, eps0, a, T = next(c for c in CONFIGS if f"`{c[0]}`, $d={c[1]}$" in shown)
    kf = kernel(act, sw, sb, sa)
    lam, s2 = f(d, kf.k0, kf.k1)

    def pred(c):
        return censored_moments(SyncTimeLaw(c * lam, s2, eps0, eps0 * math.exp(-a)), T)[which]
    want = k * pred(1.0)
    c = brentq(lambda c: pred(c) - want, 0.5, 2.0, xtol=1e-12)
    return lambda dd, k0, k1: (c * f(dd, k0, k1)[0], f(dd, k0, k1)[1])


def _inject_spde(f, k, shown):
    kind = re.search(r": (linear|quadratic|energy): ", shown).group(1)

    def parts(kd, d, N):
        fn = f.parts(kd, d, N)
        return (lambda *a: tuple(k * v for v in fn(*a))) if kd == kind else fn
    return replace(f, parts=parts)


def _inject_projective_bar(f, k, shown):
    return replace(f, lambda_bar_proj=lambda *a: (k * f.lambda_bar_proj(*a)[0], f.lambda_bar_proj(*a)[1]))


def _inject_projective_exponent(f, k, shown):
    return replace(f, lambda_proj=_scaled(f.lambda_proj, k))


def _inject_rqf_one_point(f, k, shown):
    field = "one_point_quadratic" if "e>^2" in shown else "one_point_linear"
    return replace(f, **{field: _scaled(getattr(f, field), k)})


def _inject_rqf_log_sin(f, k, shown):
    r0 = _number(r"from rho0 = ([-0-9.e]+)$", shown)
    return replace(f, log_sin_rate=_when(f.log_sin_rate, k, lambda d, r, S: abs(r - r0) < 1e-9))


def _inject_rqf_lambda1(f, k, shown):
    return replace(f, lambda1=_scaled(f.lambda1, k))


def _inject_exponent(f, k, shown):
    return k * f


def _inject_already(f, k, shown):
    """A check that reads the same formula as the case's previous target (same stated m): injected there once."""
    return f


def _inject_slope(f, k, shown, *, expected: float):
    """A bound shape whose log-log slope over the ladder is k times the stated one: shape(x) x^((k-1) slope)."""
    return lambda x: f(x) * np.asarray(x, dtype=float) ** ((k - 1.0) * expected)


def _inject_margin(f, k, shown):
    sign, margin = f
    return (sign, k * margin)


@dataclass(frozen=True)
class Target:
    """One check of a case: how it is found among the claim's checks, and how an error is injected there."""

    check: str                                  # the start of the check's name
    inject: Callable[[Any, float, str], Any]    # (formula, factor, shown sub-test's name) -> formula
    sides: tuple[int, ...] = (+1, -1)           # the directions the check is designed to detect
    label: str = ""


@dataclass(frozen=True)
class Case:
    """A claim at a one-sub-test budget (a budget override of its quick mode) and the checks measured."""

    claim: str
    budget: dict
    targets: tuple[Target, ...]
    note: str = ""
    #: the checked point depends on the seed (drawn tokens, matrices): each seed's own stated m is injected there
    per_seed: bool = False


CASES: dict[str, Case] = {c.claim: c for c in (
    Case("kernel", {"activations": ("relu",), "quadrature_check": (), "n_configs": 1, "samples": 20_000},
         (Target("`relu`", _inject_kernel, label="K Monte Carlo (7 points)"),),
         "the error at the shown point only"),
    Case("ito_drift", {"n_one_step": 1, "one_step_paths": 20_000, "n_configs": 0, "general_d": 2,
                       "general_samples": 2000},
         (Target("isotropic coefficient", _inject_ito, label="gamma one layer"),)),
    Case("two_point", {"n_configs": 1, "samples": 20_000},
         (Target("`relu`", _inject_two_point, label="b, a one step (6 points)"),),
         "the error at the shown point only"),
    Case("lyapunov", {"n_configs": 0, "n_one_step": 1, "one_step_paths": 20_000},
         (Target(r"$\lambda_1$: one exactly", _inject_scale, label="lambda_1 one layer"),)),
    Case("relu_rates", {"n_t": 0, "paths": 20_000, "paths_energy": 40_000},
         (Target("Monte Carlo", _inject_relu_rates, label="lambda_1, edge MC (4 points)"),),
         "the error at the shown point only"),
    # relu d = 6, beta = 0: the supremum at the edge (the first anchor's antipodal start has zero variance up to
    # the estimator's accuracy and states no power: stats.ZERO_VARIANCE_REL)
    Case("dissipation", {"configs": [("gaussian", "relu", 6, 1.0, 1.5, 1.0, 0.0, 0.0)], "paths": 40_000,
                         "paths_bound": 2000},
         (Target("the initial rate", _inject_dissipation, label="lambda_bar sharp MC (edge)"),)),
    Case("synchronization", {"n_configs": 1, "paths": 2000},
         (Target("two nearby tokens", _inject_scale, label="separation rate"),)),
    Case("commuting_limits", {"widths": (), "table": None, "paths": 2000},
         (Target("$E[E_0", _inject_limit, label="E E_0 vs SDE (m = inf)"),)),
    Case("lyapunov_spectrum", {"n_configs": 1, "models": ("gaussian",), "n_engine_configs": 0, "paths": 50_000},
         (Target("Lyapunov spectrum", _inject_spectrum, label="lambda_i one layer (4 + chi2)"),),
         "the error at the shown exponent only"),
    Case("log_distance_variance", {"n_configs": 1, "paths": 5000},
         (Target(r"$\sigma^2$", _inject_scale, label="sigma^2 block variance"),)),
    Case("synchronization_time", {"n_configs": 1, "paths": 2000},
         (Target("synchronization time", _inject_sync_time, label="passage-time law (KS, mean, sd)"),),
         "lambda_1 rescaled so that the shown moment is off by m"),
    Case("spde_weak_form", {"n_configs": 1, "paths": 5000},
         (Target(r"$\frac{d}{dt} E", _inject_spde, label="Ito drift (3 functionals)"),),
         "the error in the shown functional only; tokens and attention drawn per seed: m per seed", per_seed=True),
    Case("projective", {"n_configs": 1, "paths": 50_000},
         (Target(r"$\bar\lambda_{\mathrm{proj}}$", _inject_projective_bar, label="lambda_bar_proj"),
          Target(r"$\lambda_{\mathrm{proj}}$", _inject_projective_exponent, label="lambda_proj"))),
    Case("rqf", {"paths": 15_000, "fraction_paths": 300},
         (Target("(a) one-point", _inject_rqf_one_point, label="(a) one-point rates"),
          Target(r"(b) the rate of $E \log", _inject_rqf_log_sin, label="(b) log sin rate (5 starts)"),
          Target(r"(c) $\lambda_1$", _inject_rqf_lambda1, label="(c) lambda_1")),
         "the error at the shown point only"),
    Case("convergence_width", {"paths": 300},
         (Target("`relu`, $d=3$, $\\sigma_w=1.0$, $\\sigma_b=0.0$, $\\sigma_a=0.5$: bound", _inject_exponent,
                 sides=(+1,), label="slope bound (<= -1)"),
          Target("`relu`, $d=3$, $\\sigma_w=1.0$, $\\sigma_b=0.0$, $\\sigma_a=0.5$: order", _inject_already,
                 sides=(-1,), label="slope order (>= -1)")),
         "one exponent feeds both one-sided checks: 1 + m tests the bound, 1 - m the order; m per seed (seed 0's "
         "stderr is 1.3 sd below the mean over seeds: with its m at every seed the rates were 0.75 over 12 seeds)",
         per_seed=True),
    Case("convergence_depth", {"paths": 120, "n_boot": 500},
         (Target("depth ladder", None, sides=(+1,), label="slope bound (log L / L)"),),
         "a stated bound the truth does not attain"),
    Case("propagation_of_chaos", {"ns": (8, 16, 32), "n_ref": 256, "paths": 16, "depth": 16, "n_boot": 500},
         (Target("$E\\, W_2^2", None, sides=(+1,), label="slope bound (N^-1/2)"),),
         "a stated bound the truth does not attain"),
    Case("metastability", {},
         (Target("noise helps", _inject_margin, sides=(+1,), label="margin 1/2"),),
         "a stated bound the truth does not attain"),
)}


def _check(result, target: Target):
    found = [c for c in result.checks if c.name.startswith(target.check)]
    if len(found) != 1:
        raise LookupError(f"{result.name}: {len(found)} checks named {target.check!r}...: "
                          f"{[c.name for c in result.checks]}")
    return found[0]


def stated(case: Case, seed=0) -> list[tuple[float, str, Any]]:
    """(stated min_detectable, shown sub-test's name, the check) per target, at `seed`."""
    from sssn_verify.claims import CLAIMS
    res = CLAIMS[case.claim].run("quick", seed, budget=case.budget)
    if not res.passed and seed == 0:
        raise AssertionError(f"{case.claim}: the derived formula fails at seed 0: "
                             f"{[c.name for c in res.checks if not c.passed]}")
    out = []
    for t in case.targets:
        c = _check(res, t)
        if c.min_detectable is None:
            raise AssertionError(f"{case.claim}: check {c.name!r} states no power")
        out.append((float(c.min_detectable), c.details.get("shown", c.name), c))
    return out


def _injector(case: Case, t: Target, check) -> Callable:
    if t.inject is None:            # the bound shape of a ladder: its slope scaled
        from functools import partial
        return partial(_inject_slope, expected=float(check.expected))
    return t.inject


def wrong_formula(case: Case, states, sign: int):
    """The claim's formula with an error of exactly each target's stated m (direction `sign`) at its shown point."""
    from sssn_verify.claims import CLAIMS
    f = CLAIMS[case.claim].formula()
    for t, (m, shown, check) in zip(case.targets, states):
        f = _injector(case, t, check)(f, 1.0 + sign * m, shown)
    return f


def rejections(case: Case, states, seeds, signs=(+1, -1)) -> dict:
    """sign -> (len(seeds), targets) booleans: did each target's check reject the injected error (1 + sign m) at
    each seed; the signs judged one after the other at each seed: a claim that caches
    its Monte Carlo estimates (a bounded LRU cache, a few seeds deep) then judges both formulas on the same runs."""
    from sssn_verify.claims import CLAIMS
    claim = CLAIMS[case.claim]
    fs = {sign: wrong_formula(case, states, sign) for sign in signs}
    out = {sign: np.zeros((len(seeds), len(case.targets)), dtype=bool) for sign in signs}
    for j, s in enumerate(seeds):
        for sign in signs:
            res = claim.run("quick", s, budget=case.budget, formula=fs[sign])
            out[sign][j] = [not _check(res, t).passed for t in case.targets]
    return out


def _point_m(check, name: str) -> float:
    """The stated min_detectable of the sub-test `name` of a combined check (the check's own if it has none)."""
    for p in check.details.get("points", []):
        if p["name"] == name:
            return float(p["min_detectable"])
    return float(check.min_detectable)


def measure(case: Case, seeds) -> list[dict]:
    """One row per target: the stated m and the rejection rates at 1 + m and 1 - m over `seeds`.  A case whose
    point depends on the seed (``per_seed``) states its m at each seed: that seed's own run, then its injections."""
    c0 = cpu_seconds()
    states = stated(case)
    if case.per_seed:
        rej, ms = {+1: [], -1: []}, []
        for s in seeds:
            # the sub-test is seed 0's (chosen without looking at this seed's data: the shown sub-test of a seed is
            # its worst-agreeing one, and an error injected there would add to or cancel its own deviation), its m
            # this seed's own
            st = [(_point_m(c, shown), shown, c) for (_, shown, _), (_, _, c) in zip(states, stated(case, s))]
            ms.append([m for m, _, _ in st])
            r = rejections(case, st, [s])
            for sign in (+1, -1):
                rej[sign].append(r[sign][0])
        rej = {k: np.array(v) for k, v in rej.items()}
        states = [(float(np.median(col)), f"{shown} (m per seed, median shown)", c)
                  for col, (_, shown, c) in zip(np.array(ms).T, states)]
    else:
        rej = rejections(case, states, seeds)
    cpu = cpu_seconds() - c0
    return [{"claim": case.claim, "check": t.label or t.check, "budget": case.budget, "m": m, "shown": shown,
             "plus": float(rej[+1][:, i].mean()), "minus": float(rej[-1][:, i].mean()), "sides": t.sides,
             "runs": (3 if case.per_seed else 2) * len(seeds) + 1, "cpu": cpu, "note": case.note}
            for i, (t, (m, shown, _)) in enumerate(zip(case.targets, states))]


def _pvalue(estimate, stderr, expected, alternative, level) -> float:
    from sssn_verify.stats import agreement_test
    return agreement_test("violation", estimate, stderr, expected, level=level, n=1, alternative=alternative).pvalue


def violation(case: Case, seeds) -> list[dict]:
    """For a stated bound that the truth does not attain (``NOT_SHARP``): the power against a *violation* of the
    stated size.  The truth is the mean of the check's estimates over `seeds` (the estimate does not depend on the
    bound); each seed's bound is placed Delta = m_s |stated bound| on the far side of it, m_s that seed's own stated
    min_detectable of the shown sub-test (an absolute shift: the check's standard error does not depend on the
    bound, so m at the moved bound is the same Delta), and the seed's check is judged again against it by its own
    test (Bonferroni over its parts as ``_util.combine`` does).

    Each seed's own m, not seed 0's: a check states its power from its own standard error, and a bound's violation
    is judged at the seed that stated it.  With seed 0's m at every seed the rate measured seed 0's luck: its
    bootstrap stderr was 1.36 times the slope's sd over seeds for convergence_depth (0.99 where each seed's own m
    gives 0.90), 1.10 for propagation_of_chaos (0.97 / 0.86); metastability's Agresti-Caffo stderr is a function
    of its estimate (correlation -0.99 over seeds: a proportion near 1), so ``estimate + z stderr`` is nearly the
    same at every seed and the rate against one fixed bound is a step in Delta (0.03 at Delta = 0.06, 1.00 from
    0.085; seed 0's Delta 0.0885): 1.00 with seed 0's m, 0.88 with each seed's own.  The rate with seed 0's m is
    still printed (``seed0``)."""
    from sssn_verify.claims import CLAIMS
    c0 = cpu_seconds()
    states = stated(case)
    claim = CLAIMS[case.claim]
    runs = [[_check(claim.run("quick", s, budget=case.budget), t) for t in case.targets] for s in seeds]
    rows = []
    for i, (t, (m, shown, c0_check)) in enumerate(zip(case.targets, states)):
        def parts(c):
            return c.details.get("points") or [{"name": c.name, "estimate": c.estimate, "stderr": c.stderr,
                                                "expected": c.expected, "alternative": c.alternative,
                                                "pvalue": c.pvalue, "min_detectable": c.min_detectable}]
        shown_parts = [next(p for p in parts(r[i]) if p["name"] == shown) for r in runs]
        truth = float(np.mean([p["estimate"] for p in shown_parts]))
        alternative = shown_parts[0]["alternative"]

        def rejects(c, m_s):
            delta = m_s * abs(c0_check.expected)
            bound = truth - delta if alternative == "greater" else truth + delta
            ps = [p["pvalue"] if p["name"] != shown else _pvalue(p["estimate"], p["stderr"], bound, alternative,
                                                                   c.level)
                  for p in parts(c)]
            return min(1.0, len(ps) * min(ps)) < 1.0 - c.level
        own = [(r[i], sp["min_detectable"]) for r, sp in zip(runs, shown_parts)]
        judged = [(c, float(m_s)) for c, m_s in own if m_s is not None]     # a degenerate point states no power
        rate = float(np.mean([rejects(c, m_s) for c, m_s in judged]))
        rate0 = float(np.mean([rejects(r[i], m) for r in runs]))
        m_med = float(np.median([m_s for _, m_s in judged]))
        rows.append({"claim": case.claim, "check": f"{t.label or t.check}: violation by each seed's m from the truth "
                                                   f"({truth:.4g}); seed 0's m {100 * m:.3g} %: {rate0:.2f}"
                                                   + (f"; {len(own) - len(judged)} seeds state no power"
                                                      if len(judged) < len(own) else ""),
                     "budget": case.budget, "m": m_med, "shown": f"{shown} (m per seed, median shown)",
                     "plus": rate if t.sides == (+1,) else math.nan, "minus": rate if t.sides == (-1,) else math.nan,
                     "seed0": rate0, "sides": t.sides, "runs": len(seeds) + 1, "cpu": cpu_seconds() - c0,
                     "note": case.note})
    return rows


def _rate(row, sign) -> str:
    r = row["plus" if sign > 0 else "minus"]
    return f"{r:.2f}" if sign in row["sides"] else f"({r:.2f})"


def _budget(b: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in b.items() if k not in ("table",)) or "quick"


def table(rows: list[dict]) -> str:
    head = "| claim | check | budget (over quick) | stated m | rate at 1+m | rate at 1-m | runs | CPU s |"
    lines = [head, "|" + " --- |" * 8]
    for r in rows:
        lines.append(f"| {r['claim']} | {r['check']} | {_budget(r['budget'])} | {100 * r['m']:.3g} % | "
                     f"{_rate(r, +1)} | {_rate(r, -1)} | {r['runs']} | {r['cpu']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100, help="seeds per sign (1..n)")
    ap.add_argument("--claims", nargs="*", default=list(CASES), choices=list(CASES))
    args = ap.parse_args(argv)
    rows = []
    for name in args.claims:
        new = measure(CASES[name], range(1, args.seeds + 1))
        if name in NOT_SHARP:
            new += violation(CASES[name], range(1, args.seeds + 1))
        rows += new
        for r in new:
            print(f"{r['claim']} / {r['check']}: m = {r['m']:.4g} at {r['shown']!r}: rate +{_rate(r, 1)} "
                  f"-{_rate(r, -1)} over {args.seeds} seeds, {r['cpu']:.0f} CPU s", file=sys.stderr, flush=True)
    print(table(rows))
    for name, why in NOT_INJECTABLE.items():
        print(f"- {name}: not injected: {why}")
    for name in NOT_SHARP:
        print(f"- {name}: a stated bound not attained by the truth (the injected error's rate is not expected to be "
              f"0.9; the violation row's is)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
