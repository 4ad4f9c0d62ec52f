"""Exploration of a claim's domain: screening, confirmation, shrinking, replay (issue 13).

Small budgets keep this file fast; the statistics are the same as at full budget.
"""
import json
import os

import pytest
from hypothesis import Phase, find, settings

from sssn_verify.claims import CLAIMS
from sssn_verify.claims.lyapunov import derived_formula
from sssn_verify.explore import example_pvalue, explore_claim, explore_suite, run_example

SMALL = {"paths": 3000, "depth": 40}


def wrong_from_d5(d, k0, k1):
    """lambda_1 with an extra 0.3 k0 (d - 4) for d >= 5: right for d <= 4 only."""
    return derived_formula()(d, k0, k1) + 0.3 * k0 * max(0, d - 4)


def test_every_anchor_is_in_the_domain_shape():
    """A configuration drawn from each domain has the anchors' fields.  The first drawn one is enough for
    the shape: shrinking it (the default of `find`) drew ~100 more per domain, and synchronization's
    admissibility builds a quadrature kernel table per drawn (sigma_w, sigma_b), ~20 s CPU for nothing here."""
    explorable = [c for c in CLAIMS.values() if c.domain is not None]
    assert explorable, "no claim declares a domain"
    for c in explorable:
        drawn = find(c.domain, lambda _: True, settings=settings(phases=[Phase.generate]))
        assert len(drawn) == len(c.anchors[0]) == len(c.domain.fields)


def test_right_formula_passes_on_drawn_parameters():
    e = explore_claim("lyapunov", 3, seed=2, screen_level=0.01 / 3, budget=SMALL)
    assert e.passed and len(e.examples) >= 3
    assert all(x["verdict"] != "failed" for x in e.examples)


def test_mutation_is_rejected_and_shrunk_to_d5(tmp_path):
    db = str(tmp_path / "db")
    e = explore_claim("lyapunov", 6, seed=0, screen_level=0.01 / 6, budget=SMALL, formula=wrong_from_d5,
                      database=db, max_shrinks=25)
    assert not e.passed
    shrunk = e.counterexample["shrunk"]
    assert shrunk[2] == 5, shrunk                              # the smallest d where it is wrong
    assert e.counterexample["confirm_pvalue"] < 0.01
    # no false alarm where the mutant is right (d <= 4)
    assert all(x["verdict"] != "failed" for x in e.examples if x["config"][2] <= 4)
    # the failing example was stored, and is replayed first next time
    assert os.listdir(db)
    again = explore_claim("lyapunov", 1, seed=99, screen_level=0.01, budget=SMALL, formula=wrong_from_d5,
                          database=db, max_shrinks=0)
    assert not again.passed and again.counterexample["first"][2] >= 5


def test_example_pvalue_bonferroni_and_deterministic_failure():
    r = run_example("lyapunov", "quick", 1, ("gaussian", "relu", 3, 1.0, 0.0, 1.0), SMALL)
    p = example_pvalue(r)
    assert 0.0 <= p <= 1.0
    r.checks[0].pvalue, r.checks[0].passed = None, False
    assert example_pvalue(r) == 0.0


def test_suite_writes_json_figure_and_report_section(tmp_path, monkeypatch):
    import copy

    from test_report import SCHEMA, fake_suite

    import sssn_verify.report as report
    from sssn_verify.report import write_report
    res = explore_suite(["lyapunov", "kernel"], 1, seed=4, report_dir=str(tmp_path))
    d = res.to_dict()
    assert d["passed"] and d["familywise"] == pytest.approx(1e-4)
    assert [c["claim"] for c in d["claims"]] == ["lyapunov", "kernel"]
    json.dumps(d, allow_nan=False)
    assert not os.path.exists(tmp_path / "explore_lyapunov.png")     # explore returns data; report renders
    # below MIN_EXPLORATION_POINTS examples a claim gets no figure
    few = copy.deepcopy(res)
    assert report.exploration_figures(few, tmp_path) == [] and not few.figure_files
    # the report: per claim the domain, the number of examples, the table and the figure (the
    # threshold lowered to the one example drawn here, to exercise the drawing)
    monkeypatch.setattr(report, "MIN_EXPLORATION_POINTS", 1)
    write_report(fake_suite(), tmp_path, exploration=res)
    assert os.path.exists(tmp_path / "explore_lyapunov.png") and os.path.exists(tmp_path / "explore_lyapunov.pdf")
    assert [os.path.basename(f) for f in res.to_dict()["figures"]] == ["explore_lyapunov.png", "explore_kernel.png"]
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    for claim in ("lyapunov", "kernel"):
        assert f"### {claim}: PASS" in md and f"<h3>{claim}: " in html
    assert md.count("Domain: `") == 2 and "1 examples (1 requested)" in md and "sigma_w in [0.1, 2]" in md
    assert "| stage | parameters | deviation / s.e. | p-value |" in md and "model=gaussian" in md
    assert "](explore_lyapunov.png)" in md and html.count('src="data:image/png;base64,') >= 2
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["exploration"]["claims"][0]["claim"] == "lyapunov"
    import jsonschema
    jsonschema.validate(data, SCHEMA)


# claims that declared no domain before (issue 13 follow-up): small budgets, only the plumbing matters here
# (the statistics at the quick budget are exercised by verify --explore)
SMALL_BUDGETS = {
    "lyapunov_spectrum": {"paths": 400},
    "log_distance_variance": {"paths": 1000, "depth": 20, "blocks": 10},
    "synchronization_time": {"paths": 300},
    "convergence_depth": {"paths": 40, "n_fine": 128, "factors": (4, 8, 16), "n_boot": 200},
    "commuting_limits": {"paths": 500, "depth": 8},
    "propagation_of_chaos": {"paths": 4, "ns": (8, 16, 32), "n_ref": 64, "depth": 8, "n_boot": 200},
}


@pytest.mark.parametrize("name", SMALL_BUDGETS)
def test_newly_explorable_claims_check_the_drawn_configuration(name):
    claim = CLAIMS[name]
    assert claim.domain is not None and claim.anchors
    e = explore_claim(name, 1, seed=1, budget=SMALL_BUDGETS[name], screen_level=0.01 / 6, max_shrinks=0)
    assert e.examples and all("verdict" in x for x in e.examples)
    config = e.examples[0]["config"]
    d = config[list(claim.domain.fields).index("d")]
    r = run_example(name, "quick", 0, tuple(config), SMALL_BUDGETS[name])
    text = json.dumps([c.to_dict() for c in r.checks], default=str)
    assert f"d={d}" in text or f'"d": "{d}"' in text, text[:500]      # the drawn parameters were checked
    assert 0.0 <= example_pvalue(r) <= 1.0


def test_a_full_run_explores_at_the_quick_budget(monkeypatch):
    # a full run's exploration: more points, each at the quick budget (EXPLORE_BUDGET), recorded in the JSON
    import sssn_verify.explore as ex
    from sssn_verify.errors import ParameterError
    seen = []

    def fake(name, n, *, mode, **kw):
        seen.append((name, n, mode))
        return ex.Exploration(name, "d in [2, 6]", n, kw["screen_level"], kw["confirm_level"], [], None, 0.0)

    monkeypatch.setattr(ex, "explore_claim", fake)
    res = ex.explore_suite(["lyapunov"], ex.DEFAULT_EXPLORE["full"], mode="full")
    assert seen == [("lyapunov", 10, "quick")] and res.to_dict()["budget"] == "quick"
    assert "each at the quick budget" in res.familywise_text
    ex.explore_suite(["lyapunov"], 1, mode="full", budget="full")
    assert seen[-1] == ("lyapunov", 1, "full")
    for bad in ({"mode": "fast"}, {"mode": "full", "budget": "huge"}):
        with pytest.raises(ParameterError):
            ex.explore_suite(["lyapunov"], 1, **bad)
