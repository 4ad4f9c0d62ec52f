"""`check` searches the claim's whole declared domain, activations included, and every unpinned
verdict rests on a space-filling design as well (issue 27, deliverables 1 and 2).

The wrong formulas are the audit's: errors visible only in a corner of the domain (large d, rho near 1)
and a closed form valid for one activation only; each must be rejected with the parameters unpinned.
The slow runs are made once, each by the test that asserts on it.
"""
import time

import pytest

from sssn_verify.check import (DESIGN_POINTS, _claim, _closed_form, check_candidate, design_points, search_activations,
                               search_ranges)
from sssn_verify.cli import main
from sssn_verify.numeric.rng import as_key

LAMBDA1 = "((d-3)*k1-(d-1)*k0)/2"
RELU_K = ("sa^2*(sw^2+sb^2)/(2*pi)*(sqrt(1-((sw^2*rho+sb^2)/(sw^2+sb^2))^2)"
          " + (pi-acos((sw^2*rho+sb^2)/(sw^2+sb^2)))*(sw^2*rho+sb^2)/(sw^2+sb^2))")

# name -> (claim, candidate, pinned parameters, where the counterexample must lie)
WRONG = {
    "lambda1 + 0.05 k0 for d >= 8": ("lambda1", f"{LAMBDA1} + 0.05*k0*Heaviside(d-7.5)", {},
                                     lambda c: c["d"] >= 8),
    "ReLU's closed form as the general lambda_1": ("lambda1", "-(sigma_a^2/4)*(2*sigma_w^2 + (d-1)*sigma_b^2)", {},
                                                   lambda c: c["activation"] != "relu"),
    "Ito drift + 0.05 k0 for d >= 12": ("ito_drift", "-(d-1)*k0/2 + 0.05*k0*Heaviside(d-11.5)", {},
                                        lambda c: c["d"] >= 12),
    # ReLU pinned (the formula is ReLU's): rho and the sigmas searched
    "ReLU kernel x 1.01 for rho > 0.995": ("kernel", f"({RELU_K})*(1+0.01*Heaviside(rho-0.995))",
                                           {"activation": "relu"}, lambda c: c["rho"] > 0.995),
}
# right formulas in other algebraic forms (no activation pinned but the kernel's, a ReLU closed form)
RIGHT = {
    "lambda1": ("lambda1", "(d*k1 - 3*k1 - d*k0 + k0)/2", {}),
    "ito_drift": ("ito_drift", "k0/2 - d*k0/2", {}),
    "kernel": ("kernel", RELU_K.replace("sa^2*", "sa*sa*"), {"activation": "relu"}),
}
SEEDS = (0, 1)


def _timed(claim, cand, seed=0, **kw):
    t0 = time.perf_counter()
    out = check_candidate(claim, cand, seed=seed, **kw)
    return out, time.perf_counter() - t0


# Each slow run is made by the one test that asserts on it (no module fixture computing all seven: under
# pytest-xdist a module fixture runs in every worker that runs one of the module's tests, so both workers paid for
# every run).


@pytest.mark.parametrize("claim", ["lambda1", "ito_drift", "kernel", "lambda_bar"])
def test_design_covers_every_axis_corners_included_and_is_cost_aware(claim):
    """No evidence here: the design's points over seeds 0-19 (0-5 where quadrature kernels are built
    for the admissibility of each point) (>= 8 each, both opposite corners, every
    axis reached in its lowest and highest fifth, quadrature activations present but fewer, large d
    present but fewer than small d)."""
    c = _claim(claim)
    ranges = search_ranges(c, {})
    acts = search_activations(c, ranges, None)
    assert len(acts) >= 4 and any(not _closed_form(a) for a in acts) and any(_closed_form(a) for a in acts)
    lows = {a: r[0] for a, r in ranges.items()}
    highs = {a: r[1] for a, r in ranges.items()}
    drawn_acts, large_d, small_d = [], 0, 0
    for seed in range(20 if c.candidate.admissible is None else 6):
        pts, _ = design_points(c, ranges, acts, as_key(seed, "test-design"))
        assert len(pts) >= DESIGN_POINTS
        assert {**lows, "activation": acts[0]} in [dict(p) for p in pts]          # all-low corner
        assert {**highs, "activation": acts[-1]} in [dict(p) for p in pts]        # all-high corner
        for a, (lo, hi) in ranges.items():
            vals = [p[a] for p in pts[2:]]                                        # the Latin hypercube alone
            assert min(vals) <= lo + 0.2 * (hi - lo) + 1 and max(vals) >= hi - 0.2 * (hi - lo) - 1, (a, vals)
        drawn_acts += [p["activation"] for p in pts[2:]]
        if "d" in ranges:
            mid = (ranges["d"][0] + ranges["d"][1]) / 2
            large_d += sum(p["d"] > mid for p in pts[2:])
            small_d += sum(p["d"] <= mid for p in pts[2:])
    quad = sum(not _closed_form(a) for a in drawn_acts)
    assert 0 < quad < len(drawn_acts) - quad
    assert set(drawn_acts) == set(acts)
    if "d" in ranges:
        assert 0 < large_d < small_d


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_formulas_are_rejected_with_the_parameters_unpinned(name):
    claim, cand, kw, where = WRONG[name]
    out, seconds = _timed(claim, cand, **kw)
    assert out.verdict == "rejected", (name, out.parameters, out.search)
    assert out.counterexample is not None and where(out.counterexample), out.counterexample
    print(f"{name}: rejected in {seconds:.1f} s at {out.counterexample} ({out.chosen})")


@pytest.mark.parametrize("name", list(RIGHT))
def test_right_formulas_in_other_forms_stay_consistent_and_say_their_design(name):
    claim, cand, kw = RIGHT[name]
    for seed in SEEDS:
        out, seconds = _timed(claim, cand, seed=seed, **kw)
        assert out.verdict == "consistent", (name, seed, out.parameters)
        g = out.design
        assert g["tested"] == g["points"] >= DESIGN_POINTS and not g["rejected"]
        assert set(g["domain"]) >= set(_claim(claim).candidate.axes) | {"activation"}
        if "activation" not in kw:                          # searched: every declared activation
            assert len(g["domain"]["activation"]) >= 4
        assert g["min_detectable_weakest"] is not None and g["min_detectable_best"] <= g["min_detectable_weakest"]
        assert all(r["min_detectable"] is None or r["min_detectable"] > 0 for r in g["rows"])
        assert out.to_dict()["design"]["points"] == g["points"]                   # in the JSON
        print(f"{name} seed {seed}: consistent in {seconds:.1f} s; design catches >= "
              f"{100 * g['min_detectable_weakest']:.2g} % at every powered point")


def test_a_step_near_rho_one_is_found_at_the_default_budget_over_seeds():
    """The rate of finding a step-type error (ReLU kernel x 1.01 for rho > 0.995, 1 % >> its
    1e-8 power) over seeds 0-9 at the default budget: >= 0.9 (deterministic evidence: cheap)."""
    cand = WRONG["ReLU kernel x 1.01 for rho > 0.995"][1]
    found = sum(check_candidate("kernel", cand, activation="relu", seed=s).verdict == "rejected" for s in range(10))
    assert found / 10 >= 0.9, found


def test_text_verdict_says_the_domain_and_the_design(capsys):
    rc = main(["check", "kernel", "--candidate", RELU_K, "--activation", "relu"])
    out = capsys.readouterr().out
    assert rc == 0
    domain = next(line for line in out.splitlines() if line.startswith("domain:"))
    assert "rho in [-1, 1]" in domain and "activation = relu" in domain
    design = next(line for line in out.splitlines() if line.startswith("design:"))
    assert f"{DESIGN_POINTS} of {DESIGN_POINTS} points" in design and "Latin hypercube" in design
    assert "caught at every powered point" in design
