"""Stated power = achieved power, measured (issue 27, deliverable 4): an error of exactly a check's stated
``min_detectable`` injected into the claim's formula is rejected about 9 times in 10.

The cases are ``benchmarks/injected_power.py``'s (one budget per claim whose headline check is one sub-test, or
the error placed at the sub-test the check shows); the benchmark runs every claim at 100 seeds per sign, CI the
cheapest here, within about 60 CPU seconds in all.  The stated m is read at seed 0, the injected errors judged at
seeds 1..n (distinct user seeds: every run draws its own streams ``Key(seed).child(claim, ...)``).

Acceptance: with n seeds per sign, each sign's rejection count must lie in the issue's window [0.8 n, 0.97 n],
each end widened where fewer seeds make its binomial tail under Bin(n, POWER) exceed ``TAIL`` = 0.002 (at 100 seeds
the window stands: [80, 97], a false-alarm probability of 0.0027 per sign at a true rate of exactly 0.9).  The seeds are fixed, so the test is deterministic; the probability states how likely a correct power
statement would be refused by the choice of seeds.
"""
import importlib.util
import math
import sys
from pathlib import Path

import pytest
from scipy import stats

from sssn_verify.stats import POWER

_spec = importlib.util.spec_from_file_location(
    "injected_power", Path(__file__).resolve().parents[1] / "benchmarks" / "injected_power.py")
bench = sys.modules.setdefault("injected_power", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench)

#: the largest probability, per tail, that a check rejecting with probability exactly POWER falls outside the region
TAIL = 0.002


def acceptance(n: int, p: float = POWER, tail: float = TAIL) -> tuple[int, int, float]:
    """(lo, hi, false-alarm probability): rejection counts out of n accepted as "about 0.9".  The issue's window
    [0.8 n, 0.97 n], each end widened until its tail under Bin(n, p) is at most `tail` (at n = 100 it is [80, 97]
    as it stands: tails 0.0008 and 0.0019); the false-alarm probability is the two tails' sum."""
    b = stats.binom(n, p)
    lo = math.ceil(0.8 * n - 1e-9)
    while lo > 0 and b.cdf(lo - 1) > tail:
        lo -= 1
    hi = math.floor(0.97 * n + 1e-9)
    while hi < n and b.sf(hi) > tail:
        hi += 1
    return lo, hi, float(b.cdf(lo - 1) + b.sf(hi))


def test_acceptance_region_is_the_issues_window_at_100_seeds():
    lo, hi, fa = acceptance(100)
    assert (lo, hi) == (80, 97) and fa < 0.003
    for n in (30, 60):                       # fewer seeds: wider, the same tails
        lo, hi, fa = acceptance(n)
        assert lo <= 0.8 * n and hi >= 0.97 * n and fa <= 2 * TAIL
    # a check whose real power is 0.7 or 0.995 is refused most of the time at 100 seeds
    assert stats.binom(100, 0.7).cdf(79) > 0.98 and stats.binom(100, 0.995).sf(97) > 0.98


#: (claim, seeds per sign): the cheapest cases, about 70 CPU seconds in all (benchmark, 100 seeds per sign: kernel 4 s,
#: ito_drift 5 s, two_point 20 s, lyapunov_spectrum 21 s, spde_weak_form 28 s; lyapunov is tests/test_stated_power.py's)
CI_CASES = [("kernel", 100), ("ito_drift", 100), ("two_point", 100), ("lyapunov_spectrum", 100),
            ("spde_weak_form", 60)]


@pytest.mark.parametrize("name, n", CI_CASES, ids=[c for c, _ in CI_CASES])
def test_an_injected_error_of_the_stated_power_is_rejected_about_nine_times_in_ten(name, n):
    lo, hi, _ = acceptance(n)
    rows = bench.measure(bench.CASES[name], range(1, n + 1))
    for row in rows:
        assert 0 < row["m"] < 0.5, row
        for sign in row["sides"]:
            rate = row["plus" if sign > 0 else "minus"]
            assert lo <= round(rate * n) <= hi, (name, row["check"], sign, rate, (lo, hi), row["m"], row["shown"])


def test_a_bound_violated_by_its_stated_power_is_rejected_about_nine_times_in_ten():
    """A stated bound the truth does not attain (metastability's margin, the cheapest, about 8 CPU seconds): each
    seed's bound moved its own stated m beyond the truth is rejected about 9 times in 10 (27 of 30; 88 of 100 in the
    benchmark).  With seed 0's m at every seed the rate was 1.00: the Agresti-Caffo stderr of a proportion near 1
    falls as the estimate rises, so the rate against one fixed bound is a step, and seed 0's m lay past it."""
    n = 30
    lo, hi, _ = acceptance(n)
    (row,) = bench.violation(bench.CASES["metastability"], range(1, n + 1))
    assert 0 < row["m"] < 0.5, row
    assert lo <= round(row["plus"] * n) <= hi, (row["plus"], (lo, hi), row["m"], row["check"])
