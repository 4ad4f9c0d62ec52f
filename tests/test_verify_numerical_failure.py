"""A claim whose checker fails numerically at the suite's own configurations does not end ``verify``
(issue 27, deliverable 7, the suite's part; the exploration's part is tests/test_explore_errors.py).

The claim is recorded as a result with ``error`` (its message names the claim, the mode and the seed),
no checks, never passed; the other claims run and Holm judges their statistical checks; the table,
``--json`` and ``--report`` (report.json valid against the schema, report.html and report.md marking
the claim as an internal numerical failure, not a verdict) are written whole; the exit code is 4, or 1
when another claim failed its checks; campaigns keep the other seeds' results; on dask workers too.

``attention_bound``'s checker is replaced by one that raises at once (nothing runs); ``kernel`` (about
2 s warm, statistical checks) is the claim that really runs.
"""
import json
import math
import pickle
import re
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from sssn_verify.claims import CLAIMS
from sssn_verify.cli import main
from sssn_verify.stats import CheckResult
from sssn_verify.verify import campaign, verify

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "sssn_verify" / "report.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

BROKEN, OTHER = "attention_bound", "kernel"
WHY = "overflow encountered in the test's checker"
NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def _raising(formula, budget, key, level):
    raise FloatingPointError(WHY)         # a floating-point trap: Claim.run makes it a NumericalError


def _break(monkeypatch, name=BROKEN, *, seeds=None):
    """`name`'s checker raises (at every seed, or at `seeds` only; elsewhere it runs as usual)."""
    claim = CLAIMS[name]
    checker = claim.checker

    def wrapped(formula, budget, key, level):
        if seeds is None or key.seed in seeds:
            _raising(formula, budget, key, level)
        return checker(formula, budget, key, level)

    wrapped.__module__ = checker.__module__       # the report reads the checker's module's constants
    monkeypatch.setitem(CLAIMS, name, replace(claim, checker=wrapped))


def _also_fail(monkeypatch, name=OTHER):
    """`name` really fails: its checks, plus one deterministic check beyond its tolerance."""
    claim = CLAIMS[name]
    checker = claim.checker

    def wrapped(formula, budget, key, level):
        bad = CheckResult("a deterministic check beyond its tolerance", False, 2.0, None, None, 1.0, level, 1,
                          tolerance=0.1, method="test")
        return list(checker(formula, budget, key, level)) + [bad]

    wrapped.__module__ = checker.__module__
    monkeypatch.setitem(CLAIMS, name, replace(claim, checker=wrapped))


def _assert_broken_claim(c, seed=3):
    """The failing claim as JSON: marked, never passed, no numbers."""
    assert c["name"] == BROKEN and c["passed"] is False and c["checks"] == []
    assert c["error"]["kind"] == "numerical"
    msg = c["error"]["message"]
    assert msg.startswith(f"claim {BROKEN} (quick, seed {seed})") and "FloatingPointError" in msg and WHY in msg
    assert c["estimate"] is None and c["ci"] is None and c["expected"] is None and "headline" not in c
    assert c["mode"] == "quick" and c["seed"] == seed and c["statement"] and c["budget"]


def test_the_suite_records_the_failing_claim_and_judges_the_others(monkeypatch):
    _break(monkeypatch)
    suite = verify("quick", [BROKEN, OTHER], seed=3)
    broken, other = suite.results
    assert [r.name for r in suite.results] == [BROKEN, OTHER]
    assert broken.error and not broken.passed and broken.checks == [] and broken.headline is None
    assert other.error is None and other.passed and other.checks
    # Holm over the statistical checks that exist: the other claim's
    stochastic = [c for c in other.checks if c.pvalue is not None]
    assert suite.n_stochastic == len(stochastic) > 0
    assert all("holm_adjusted_p" in c.details for c in stochastic)
    assert not suite.passed and suite.exit_code() == 4
    assert [r.name for r in suite.numerical_failures] == [BROKEN] and suite.failed_checks == []
    v = suite.verdict_text
    assert v.startswith("INCOMPLETE") and BROKEN in v and "not a verdict" in v and "the other 1 passed" in v
    d = suite.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert not NAN.search(text)
    _assert_broken_claim(d["claims"][0])
    assert d["passed"] is False and d["claims"][1]["passed"] is True and "error" not in d["claims"][1]
    frame = suite.to_frame()
    row = frame[frame.claim == BROKEN].iloc[0]
    assert row.check == "internal numerical failure" and not row.passed and WHY in row.method
    assert len(frame[frame.claim == OTHER]) == len(other.checks)
    assert pickle.loads(pickle.dumps(broken)).error == broken.error        # a worker can send it back


def test_verify_writes_the_table_json_and_report_then_exits_4(monkeypatch, tmp_path, capsys):
    _break(monkeypatch)
    out = tmp_path / "report"
    argv = ["verify", "--quick", "--claim", BROKEN, "--claim", OTHER, "--seed", "3", "--explore", "0",
            "--no-progress"]
    rc = main(argv + ["--json", "--report", str(out)])
    captured = capsys.readouterr()
    assert rc == 4, captured.err
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "numerical failure (not an input error" in err[0] and WHY in err[0]
    assert not NAN.search(captured.out)
    data = json.loads(captured.out)
    _assert_broken_claim(data["claims"][0])
    assert data["claims"][1]["name"] == OTHER and data["claims"][1]["passed"] is True
    assert data["passed"] is False and data["familywise"]["n_checks"] > 0
    assert data["report"]["html"].startswith(str(out))
    # the report, whole: report.json valid against the schema, the claim marked in HTML and Markdown
    report = json.loads((out / "report.json").read_text())
    VALIDATOR.validate(report)
    _assert_broken_claim(report["claims"][0])
    assert report["claims"][1]["checks"] and "interrupted" not in report
    html = (out / "report.html").read_text()
    assert html.count("NUMERICAL FAILURE") >= 2 and "not a verdict on the formula" in html
    assert f"claim {BROKEN} (quick, seed 3)" in html and WHY.replace("'", "&#x27;") in html
    assert "Verdict: INCOMPLETE" in html and '<p class="error">' in html
    md = (out / "report.md").read_text()
    assert "**NUMERICAL FAILURE**" in md and "not a verdict on the formula" in md and "Verdict: INCOMPLETE" in md
    for name in ("report.html", "report.md", "report.json", "exploration.json"):
        assert (out / name).is_file(), name
        assert not NAN.search((out / name).read_text()), name
    # the text table: the claim's row says ERROR, a line says why, the verdict line names it
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 4 and len(captured.err.strip().splitlines()) == 1
    lines = captured.out.splitlines()
    row = next(ln for ln in lines if ln.startswith(BROKEN + " "))
    assert " ERROR " in row and "PASS" not in row
    assert " PASS " in next(ln for ln in lines if ln.startswith(OTHER + " "))
    assert any(ln.startswith(f"ERROR {BROKEN}: not checked (quick mode, seed 3)") and WHY in ln for ln in lines)
    assert any(ln.startswith("INCOMPLETE: 1 of 2 claims not checked") for ln in lines)
    assert not NAN.search(captured.out)


def test_exit_1_when_another_claim_fails_its_checks(monkeypatch, capsys):
    """Here OTHER fails numerically (at once) and BROKEN (deterministic checks, 1 s) really fails."""
    _break(monkeypatch, OTHER)
    _also_fail(monkeypatch, BROKEN)
    rc = main(["verify", "--quick", "--claim", OTHER, "--claim", BROKEN, "--explore", "0", "--no-progress",
               "--json"])
    captured = capsys.readouterr()
    assert rc == 1, captured.err
    data = json.loads(captured.out)
    assert data["claims"][0]["error"]["kind"] == "numerical"
    assert data["claims"][1]["passed"] is False and "error" not in data["claims"][1]
    assert "numerical failure" in captured.err        # the internal failure is still said
    rc = main(["verify", "--quick", "--claim", OTHER, "--claim", BROKEN, "--explore", "0", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 1 and "SOME CLAIMS FAILED: 1 of 2 claims not checked" in out and "1 of the other 1 failed" in out


def test_a_campaign_keeps_the_other_seeds(monkeypatch, capsys):
    """OTHER fails numerically at seed 1 only, BROKEN at every seed: OTHER's seed 0 is pooled alone."""
    _break(monkeypatch)
    _break(monkeypatch, OTHER, seeds={1})
    res = campaign("quick", [BROKEN, OTHER], [0, 1])
    assert [(e["seed"], e["claim"]) for e in res.numerical_failures] == [(0, BROKEN), (1, BROKEN), (1, OTHER)]
    assert res.seed_test["failures"] == 0 and res.checks_passed and not res.passed and res.exit_code() == 4
    assert res.pooled and all(e["claim"] == OTHER and e["n_seeds"] == 1 and e["seeds_failed_numerically"] == [1]
                              for e in res.pooled)
    assert res.suites[0].results[1].passed and res.suites[0].results[1].checks
    d = res.to_dict()
    assert not NAN.search(json.dumps(d, allow_nan=False))
    rc = main(["verify", "--quick", "--claim", BROKEN, "--seeds", "0:2", "--no-progress"])   # nothing runs
    captured = capsys.readouterr()
    assert rc == 4, captured.err
    assert "CAMPAIGN INCOMPLETE" in captured.out and f"not checked: {BROKEN} at seed 1" in captured.out
    assert len(captured.err.strip().splitlines()) == 1 and "numerical failure" in captured.err
    rc = main(["verify", "--quick", "--claim", BROKEN, "--seeds", "0:2", "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert rc == 4 and [e["seed"] for e in json.loads(captured.out)["numerical_failures"]] == [0, 1]


def _break_on_worker(name):
    """Run on a dask worker: `name`'s checker raises there (the worker's own registry)."""
    from sssn_verify.claims import CLAIMS as registry
    registry[name] = replace(registry[name], checker=_raising)
    return name


def test_on_dask_workers_the_other_claims_are_kept():
    """The claims run as tasks on a worker process: the failing one comes back as a recorded result."""
    pytest.importorskip("distributed")
    import cloudpickle
    from sssn_verify.executor import Distributed
    cloudpickle.register_pickle_by_value(sys.modules[__name__])    # the worker cannot import this file
    try:
        with Distributed.local(1) as ex:
            ex.client.run(_break_on_worker, BROKEN)
            suite = verify("quick", [BROKEN, OTHER], seed=3, executor=ex)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    broken, other = suite.results
    assert broken.error and "FloatingPointError" in broken.error and not broken.passed
    assert other.passed and other.checks and suite.exit_code() == 4
    assert suite.executor["executor"] == "dask.distributed"
    assert all(t["worker"].startswith("worker") for t in suite.timings)
    assert math.isfinite(suite.seconds)


def test_ctrl_c_after_a_numerical_failure_still_writes_a_partial_report(monkeypatch, tmp_path, capsys):
    """Ctrl-C is unchanged (exit 130, a partial report); the failed claim among the finished ones is marked."""
    import importlib
    V = importlib.import_module("sssn_verify.verify")   # the module (sssn_verify.verify is the function)
    _break(monkeypatch)
    orig = V.run_claim

    def run_claim(name, mode, seed):
        if name == OTHER:
            raise KeyboardInterrupt                 # Ctrl-C as the second claim starts
        return orig(name, mode, seed)

    monkeypatch.setattr(V, "run_claim", run_claim)
    out = tmp_path / "rep"
    rc = main(["verify", "--quick", "--claim", BROKEN, "--claim", OTHER, "--no-progress", "--report", str(out)])
    captured = capsys.readouterr()
    assert rc == 130, captured.err
    assert captured.err.strip().splitlines()[-1] == (f"sssn-verify verify: interrupted after 1 of 2 claims; "
                                                     f"partial report in {out}")
    report = json.loads((out / "report.json").read_text())
    VALIDATOR.validate(report)
    assert report["interrupted"] == [OTHER] and report["passed"] is False
    _assert_broken_claim(report["claims"][0], seed=0)
    html = (out / "report.html").read_text()
    assert "PARTIAL: interrupted after 1 of 2 claims" in html and "NUMERICAL FAILURE" in html
    assert f"internal numerical failure of {BROKEN}" in captured.out


def test_the_appendix_says_a_numerically_failed_claim_was_not_checked():
    """latex --with-report: a claim recorded with a numerical failure is 'not checked', never 'FAIL ... 0 checks'."""
    from sssn_verify.latex_doc import claims_section
    report = {"mode": "quick", "seed": 0, "passed": False, "claims": [
        {"name": "attention_bound", "passed": False, "checks": [], "level": 0.999,
         "error": {"kind": "numerical", "message": "claim attention_bound (quick, seed 0): numerical failure"}}]}
    text = claims_section(report)
    block = text[text.index("\\label{claim:attention-bound}"):]
    block = block[:block.index("\\end{claimenv}")]
    assert "not checked" in block and "FAIL" not in block and "0 checks" not in block
