"""Exploration never abandons a run (issue 27, deliverable 7).

* a point whose evidence fails numerically is an example with verdict "error", its parameters and the
  reason; the other points are still explored, and ``verify`` still writes every finished result (JSON,
  report) and exits 4 (an internal numerical failure), never 2 (bad input);
* a NumericalError outside the exploration: one line, exit 4;
* every claim's domain corners (largest d, sigmas and beta; sigma_b = 0, beta at its low end), at the
  smallest budgets, run without a numerical failure.
"""
import json
import math
from dataclasses import replace

import pytest

from sssn_verify.claims import CLAIMS
from sssn_verify.errors import NumericalError
from sssn_verify.explore import error_record, example_key, explore_claim, run_example
from sssn_verify.stats import mean_ci

CHEAP = "attention_bound"          # ~0.3 s a configuration


def _failing_at_even_d(monkeypatch, kind="numerical"):
    """The cheap claim's checker, failing at drawn configurations with an even d (its real statistics
    are handed non-finite values, as a diverging simulation would)."""
    claim = CLAIMS[CHEAP]
    checker = claim.checker
    d_index = claim.domain.fields.index("d")

    def wrapped(formula, budget, key, level):
        if "configs" in budget and int(budget["configs"][0][d_index]) % 2 == 0:
            if kind == "numerical":
                mean_ci([1.0, math.nan])            # NonFiniteError from stats
            raise TypeError("a bug")
        return checker(formula, budget, key, level)

    wrapped.__module__ = checker.__module__       # the report reads the checker's module's constants
    monkeypatch.setitem(CLAIMS, CHEAP, replace(claim, checker=wrapped))
    return d_index


def test_a_failing_point_is_reported_with_its_parameters_and_the_exploration_goes_on(monkeypatch):
    d_index = _failing_at_even_d(monkeypatch)
    e = explore_claim(CHEAP, 12, seed=0)
    errors, others = e.errors, [x for x in e.examples if x["verdict"] != "error"]
    assert errors and others                          # both kinds of points were drawn and kept
    assert all(int(x["config"][d_index]) % 2 == 0 for x in errors)
    assert all(int(x["config"][d_index]) % 2 == 1 and x["verdict"] == "passed" for x in others)
    x = errors[0]
    assert x["error_kind"] == "numerical" and "NonFiniteError" in x["error"] and "non-finite" in x["error"]
    assert x["pvalue"] is None and not x["confirmed"]
    assert not e.passed and not e.failed and e.verdict == "ERROR" and e.counterexample is None
    d = e.to_dict()
    assert d["verdict"] == "ERROR" and d["n_errors"] == len(errors)
    json.dumps(d, allow_nan=False)


def test_an_internal_error_at_a_point_is_not_called_numerical(monkeypatch):
    _failing_at_even_d(monkeypatch, kind="bug")
    e = explore_claim(CHEAP, 8, seed=0)
    assert e.errors and all(x["error_kind"] == "internal" and "TypeError" in x["error"] for x in e.errors)


def test_verify_writes_everything_and_exits_4_when_an_explored_point_fails(monkeypatch, tmp_path, capsys):
    from sssn_verify.cli import main
    _failing_at_even_d(monkeypatch)
    out = tmp_path / "report"
    rc = main(["verify", "--quick", "--claim", CHEAP, "--explore", "8", "--no-progress", "--report", str(out),
               "--json"])
    captured = capsys.readouterr()
    assert rc == 4, captured.err
    data = json.loads(captured.out)
    assert data["passed"] and data["claims"][0]["name"] == CHEAP          # the suite's result is there
    (ex,) = data["exploration"]["claims"]
    assert ex["verdict"] == "ERROR" and ex["n_errors"] >= 1
    errs = [x for x in ex["examples"] if x["verdict"] == "error"]
    assert errs and all(x["config"] and x["error"] for x in errs)
    for name in ("report.json", "report.md", "report.html", "exploration.json"):
        assert (out / name).is_file(), name
    md = (out / "report.md").read_text()
    assert "error \\(numerical\\, screen\\)" in md and "NonFiniteError" in md and f"### {CHEAP}: ERROR" in md
    assert "NonFiniteError" in (out / "report.html").read_text()
    assert json.loads((out / "report.json").read_text())["exploration"]["claims"][0]["n_errors"] == ex["n_errors"]
    # the text table lists the point with its parameters and the reason
    rc = main(["verify", "--quick", "--claim", CHEAP, "--explore", "8", "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 4
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("error"))
    assert "d=" in line and "[numerical, screen]" in line and "NonFiniteError" in line


def test_a_numerical_failure_of_a_claim_is_exit_4_not_bad_input(monkeypatch, capsys):
    from sssn_verify.cli import main
    claim = CLAIMS[CHEAP]

    def broken(formula, budget, key, level):
        mean_ci([math.inf, 1.0])

    monkeypatch.setitem(CLAIMS, CHEAP, replace(claim, checker=broken))
    with pytest.raises(NumericalError, match="numerical failure: NonFiniteError"):
        CLAIMS[CHEAP].run("quick", 0)
    rc = main(["verify", "--quick", "--claim", CHEAP, "--explore", "0", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 4 and "numerical failure (not an input error" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- the domains' corners
SAMPLE_ENTRIES = ("paths", "paths_transformer", "paths_energy", "samples", "general_samples", "one_step_paths",
                  "paths_bound", "engine_paths")


def smallest_budget(claim) -> dict:
    """The quick budget with its sample sizes cut tenfold (at least 50, never more than quick's)."""
    return {k: min(int(v), max(50, int(v) // 10)) for k, v in claim.budgets["quick"].items()
            if k in SAMPLE_ENTRIES and isinstance(v, int)}


def corners(domain) -> list[tuple]:
    """The box's high corner (largest d, sigmas, beta, N) and low corner (sigma_b = 0, beta at its low end,
    smallest d and sigmas), each with the first choice of every named field; the high corner again with
    the last choice (a smooth activation, where the first is relu).  Corners the domain excludes
    (``where=``) are left out: they are never drawn."""
    spec = domain.spec
    hi = [v[0] if isinstance(v[0], str) else v[1] for v in spec.values()]
    lo = [v[0] for v in spec.values()]
    last = [v[-1] if isinstance(v[0], str) else v[1] for v in spec.values()]
    out = list(dict.fromkeys(tuple(c) for c in (hi, lo, last)))
    keep = getattr(domain, "predicate", None)
    return [c for c in out if keep is None or keep(c)]


EXPLORABLE = [n for n, c in CLAIMS.items() if c.domain is not None]


def test_every_explorable_domain_declares_its_ranges():
    for name in EXPLORABLE:
        spec = getattr(CLAIMS[name].domain, "spec", None)
        assert spec and len(CLAIMS[name].domain.fields) == len(spec), name


def test_every_claims_domain_corners_run_without_a_numerical_failure():
    failures = []
    for name in EXPLORABLE:
        claim = CLAIMS[name]
        budget = smallest_budget(claim)
        for config in corners(claim.domain):
            key = example_key(0, name, config, "screen")
            try:
                res = run_example(name, "quick", key, config, budget)
            except Exception as exc:  # noqa: BLE001 - collected and reported below, as the exploration does
                failures.append((name, error_record(config, "screen", key, 1e-3, exc)))
                continue
            assert res.checks, (name, config)
    assert not failures, failures
