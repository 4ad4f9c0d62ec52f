"""Claims that depend on the MLP block only through its kernel K run on deep blocks (issue 25, deliverables 1
and 5): their domains draw hidden stacks (strategies.HIDDEN_STACKS), `check --hidden` pins one, the other
claims refuse it with the reason, and an explored configuration with its hidden stack is in report.json.

Every Monte Carlo check here is the claim's own statistical test at the claim's level (0.999), with a fixed
seed (so the outcome is reproducible; a right formula fails with probability <= 0.001 per claim), at the
sample sizes below; the smallest relative error each detects with probability 0.9 is asserted, so a test
that cannot see a 5 % error does not pass silently.
"""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import Phase, find, settings

from sssn_verify.check import HIDDEN_REFUSALS, check_candidate
from sssn_verify.claims import CLAIMS
from sssn_verify.cli import main
from sssn_verify.errors import ClaimError
from sssn_verify.explore import Exploration, SuiteExploration, domain_text, run_example
from sssn_verify.numeric.kernels import kernel
from sssn_verify.params import ModelParams
from sssn_verify.report import exploration_markdown, write_report
from sssn_verify.strategies import HIDDEN_STACKS, NO_HIDDEN, hidden_stack, hidden_text
from sssn_verify.verify import SuiteResult

SCHEMA = json.loads((Path(__file__).parents[1] / "docs" / "report.schema.json").read_text())
DEEP = "relu 1.0 0.5"                                   # a closed-form stack: relu -> relu
QUAD = "tanh 1.2 0.1; relu 1.0 0.5"                     # a quadrature stack
LAMBDA1 = "((d-3)*k1-(d-1)*k0)/2"
# lyapunov at a deep point: one-step 50k paths (min detectable 3.5 % of lambda_1), tangent flow 3000 paths x 40
# layers; two_point: 20k samples per rho
LYAPUNOV = (("gaussian", "relu", 4, 1.0, 0.5, 1.0, QUAD), {"one_step_paths": 50_000, "paths": 3000, "depth": 40})
TWO_POINT = (("tanh", 4, 1.2, 0.3, 1.0, DEEP), {"samples": 20_000})


@pytest.fixture(scope="module")
def deep_runs():
    return {name: run_example(name, "quick", 3, config, budget)
            for name, (config, budget) in (("lyapunov", LYAPUNOV), ("two_point", TWO_POINT))}


def test_k_only_claims_declare_the_hidden_axis_and_anchors_stay_one_layer():
    for name in ("lyapunov", "two_point", "log_distance_variance", "lyapunov_spectrum", "synchronization_time",
                 "synchronization"):
        c = CLAIMS[name]
        assert c.domain.fields[-1] == "hidden" and c.domain.spec["hidden"] == HIDDEN_STACKS, name
        assert all(a[-1] == NO_HIDDEN for a in c.anchors), name
    for text in HIDDEN_STACKS:                          # configuration values are canonical and read back
        assert hidden_text(hidden_stack(text)) == text
    assert ModelParams(hidden=hidden_stack(QUAD)).hidden == ModelParams(
        hidden=(("tanh", 1.2, 0.1), ("relu", 1.0, 0.5))).hidden
    drawn = find(CLAIMS["lyapunov"].domain, lambda c: c[-1] != NO_HIDDEN,
                 settings=settings(phases=[Phase.generate], database=None))
    assert drawn[-1] in HIDDEN_STACKS[1:]


@pytest.mark.parametrize("name", ["lyapunov", "two_point"])
def test_a_deep_point_passes_k_only_claims_at_a_tiny_budget(deep_runs, name):
    r = deep_runs[name]
    assert r.passed, [(c.name, c.estimate, c.expected, c.pvalue) for c in r.checks]
    config = (LYAPUNOV if name == "lyapunov" else TWO_POINT)[0]
    assert any(config[-1] in c.name or config[-1] in json.dumps(c.details, default=str) for c in r.checks)
    # the one-step (lyapunov) and one-step-moment (two_point) tests see a 5 % error of the derived value (lyapunov
    # one step: ~3.5 %); the tangent flow over a horizon, with its O(T/L) allowance, only ~20 % at this budget
    powered = r.checks[:1] if name == "lyapunov" else r.checks
    assert all(c.min_detectable is not None and c.min_detectable < 0.05 for c in powered)


def test_the_deep_point_is_judged_against_the_deep_kernel(deep_runs):
    """The expected lambda_1 is the one of the composed kernel, not the first layer's."""
    from sssn_verify.numeric.rates import lambda1
    deep = kernel("relu", 1.0, 0.5, 1.0, hidden=hidden_stack(QUAD))
    one = kernel("relu", 1.0, 0.5, 1.0)
    expected = lambda1(4, deep.k0, deep.k1)
    assert abs(expected - lambda1(4, one.k0, one.k1)) > 0.05 * abs(expected)
    assert deep_runs["lyapunov"].checks[0].expected == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("wrong, code", [("1", 0), ("1.05", 1)])
def test_check_hidden_accepts_the_right_lambda1_and_rejects_5_percent_off(capsys, wrong, code):
    """All parameters pinned: one exactly sampled layer of the deep block's Gaussian transformer, paths sized
    for a 0.6 % resolution (~3M paths), z-test at level 0.999: a 5 % error is far beyond its power."""
    rc = main(["check", "lambda1", "--candidate", f"{wrong}*{LAMBDA1}", "--d", "5", "--sigma-w", "1", "--sigma-b",
               "0.5", "--sigma-a", "1", "--activation", "relu", "--hidden", "relu 1 0.5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == code and out["verdict"] == ("consistent" if code == 0 else "rejected")
    assert out["parameters"]["hidden"] == DEEP and out["chosen"] == "user"
    assert out["parameters"]["k0"] == pytest.approx(kernel("relu", 1, 0.5, 1, hidden=hidden_stack(DEEP)).k0)
    assert out["min_detectable"] < 0.01


@pytest.mark.parametrize("claim, named", [("kernel", "kernel"), ("relu_rates", "relu_rates")])
def test_claims_off_the_gaussian_field_of_k_refuse_hidden(capsys, claim, named):
    rc = main(["check", claim, "--candidate", "k0" if claim != "kernel" else "rho", "--hidden", "relu 1 0.5"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"claim {named} does not apply to deep blocks" in err and HIDDEN_REFUSALS[named][:40] in err
    with pytest.raises(ClaimError, match=named):
        check_candidate(claim, "k0" if claim != "kernel" else "rho", hidden=(("relu", 1.0, 0.5),))


def test_hidden_with_the_rqf_field_is_the_one_parameter_error(capsys):
    rc = main(["check", "attention_bound", "--candidate", "2*(sum_V + beta*sum_VKQ)", "--field", "rqf",
               "--hidden", "relu 1 0.5"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "hidden" in err and "rqf" in err


def test_an_explored_deep_config_round_trips_through_report_json(deep_runs, tmp_path):
    config, _ = LYAPUNOV
    r = deep_runs["lyapunov"]
    example = {"config": list(config), "stage": "screen", "key": "k", "pvalue": 1.0, "screen_level": 1e-3,
               "rejected": False, "confirm_pvalue": None, "confirmed": False, "seconds": round(r.seconds, 3),
               "verdict": "passed", "screen_headline": {"estimate": r.headline.estimate,
                                                        "expected": r.headline.expected,
                                                        "stderr": r.headline.stderr, "check": r.headline.name}}
    e = Exploration("lyapunov", domain_text(CLAIMS["lyapunov"].domain), 1, 1e-3, 0.01, [example], None, r.seconds, [],
                    tuple(CLAIMS["lyapunov"].domain.fields))
    res = SuiteExploration([e], {}, 1, 0.01, 0.01, 3, None)
    write_report(SuiteResult([r], "quick", 3, 0.01, r.seconds, 1), tmp_path, figures=False, exploration=res)
    data = json.loads((tmp_path / "report.json").read_text())
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert sorted(validator.iter_errors(data), key=str) == []
    explored = data["exploration"]["claims"][0]
    assert explored["fields"][-1] == "hidden" and explored["examples"][0]["config"][-1] == QUAD
    assert hidden_stack(explored["examples"][0]["config"][-1]) == hidden_stack(QUAD)
    assert "hidden in {none, (relu 1.0 0.5), (tanh 1.2 0.1; relu 1.0 0.5)}" in explored["domain"]
    assert f"hidden={QUAD}" in exploration_markdown(res)            # the table's parameters


def test_which_checks_draw_or_accept_deep_stacks():
    """No evidence: ito_drift's candidate check opts in (its design draws deep stacks, corners one-layer, the deep
    stacks together at the quadrature weight); synchronization_time accepts a pinned stack but does not draw one
    (its passage-time budget was sized on one-layer blocks); kernel refuses; attention_bound ignores it."""
    from sssn_verify.check import _claim, design_points, search_activations, search_hidden, search_ranges
    from sssn_verify.numeric.rng import as_key
    c = _claim("ito_drift")
    hiddens = search_hidden(c, None)
    assert hiddens == list(HIDDEN_STACKS)
    ranges = search_ranges(c, {})
    acts = search_activations(c, ranges, None)
    drawn = []
    for seed in range(10):
        pts, _ = design_points(c, ranges, acts, as_key(seed, "test-deep-design"), hiddens=hiddens)
        assert "hidden" not in pts[0] and "hidden" not in pts[1]                 # the corners: one-layer
        drawn += [p.get("hidden", NO_HIDDEN) for p in pts[2:]]
    deep = sum(h != NO_HIDDEN for h in drawn)
    assert set(drawn) == set(HIDDEN_STACKS) and 0 < deep < len(drawn) / 2        # present, but fewer
    assert search_hidden(_claim("synchronization_time"), None) == [NO_HIDDEN]
    assert search_hidden(_claim("synchronization_time"), [DEEP]) == [DEEP]
    assert search_hidden(_claim("attention_bound"), [DEEP]) == [DEEP]
    assert search_hidden(_claim("kernel"), ()) == [NO_HIDDEN]                    # one-layer: every claim
    with pytest.raises(ClaimError, match="kernel does not apply to deep blocks"):
        search_hidden(_claim("kernel"), [DEEP])
