"""`sssn-verify verify`: JSON shape, table, report files, exit codes (0 pass, 1 fail, 2 bad input)."""
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from sssn_verify.claims import CLAIMS
from sssn_verify.cli import main
from sssn_verify.verify import verify

CHEAP = ["two_point"]
# the console script's entry point, run as a separate process
CLI = [sys.executable, "-c", "import sys; from sssn_verify.cli import main; sys.exit(main())"]


def test_json_shape_and_exit_zero_through_the_console_script(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([*CLI, "verify", "--quick", "--claim", "two_point",
                           "--seed", "3", "--json", "--report", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["passed"] is True and out["mode"] == "quick" and out["seed"] == 3
    assert out["familywise"]["alpha"] == 0.01 and out["familywise"]["n_checks"] >= 1
    (c,) = out["claims"]
    assert c["name"] == "two_point" and c["passed"] is True
    assert isinstance(c["estimate"], float) and isinstance(c["expected"], float)
    assert c["stderr"] > 0 and c["ci"][0] <= c["estimate"] <= c["ci"][1]
    for check in c["checks"]:
        assert {"level", "n", "seed", "pvalue", "tolerance", "method"} <= set(check)
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.md").exists()
    assert any(p.suffix == ".png" for p in tmp_path.iterdir())
    md = (tmp_path / "report.md").read_text()
    assert "two_point" in md and "family-wise" in md


def test_table_lists_claim_derived_estimate_verdict_time(capsys):
    rc = main(["verify", "--quick", "--claim", "two_point", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    header = out.splitlines()[0]
    for col in ("claim", "derived result", "estimate [CI]", "expected", "verdict", "time"):
        assert col in header
    assert "PASS" in out and "family-wise false-alarm probability <= 0.01" in out


def test_a_failing_claim_gives_exit_one(monkeypatch, capsys):
    from sssn_verify.claims.two_point import derived_formula
    good = derived_formula()
    wrong = replace(good, b=lambda d, r, k0, K: -(d - 2) * k0 * r + (d - 2 + r * r) * K)
    monkeypatch.setitem(CLAIMS, "two_point_wrong",
                        replace(CLAIMS["two_point"], name="two_point_wrong", formula=lambda: wrong))
    rc = main(["verify", "--claim", "two_point_wrong", "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["passed"] is False and out["claims"][0]["passed"] is False


@pytest.mark.parametrize("argv", [
    ["verify", "--claim", "no_such_claim"],
    ["verify", "--seed", "-1", "--claim", "two_point"],
    ["verify", "--alpha", "0", "--claim", "two_point"],
])
def test_bad_input_exits_two_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0]


def test_quick_and_full_are_exclusive():
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--quick", "--full"])
    assert exc.value.code == 2


def test_list_names_every_registered_claim(capsys):
    assert main(["verify", "--list"]) == 0
    out = capsys.readouterr().out
    for name in CLAIMS:
        assert name in out


def test_holm_bookkeeping_in_the_suite_result():
    suite = verify("quick", CHEAP, seed=1)
    assert suite.n_stochastic == sum(c.pvalue is not None for r in suite.results for c in r.checks)
    for r in suite.results:
        for c in r.checks:
            if c.pvalue is not None:
                assert "holm_adjusted_p" in c.details
    assert "Holm" in suite.familywise_text


def test_a_suite_of_deterministic_checks_only_prints_no_nan():
    from sssn_verify.verify import SuiteResult
    suite = SuiteResult(results=[], mode="quick", seed=0, alpha=0.01, seconds=0.0, n_stochastic=0)
    assert "nan" not in suite.familywise_text and "no statistical checks" in suite.familywise_text
    assert suite.to_dict()["familywise"]["bonferroni_per_check"] is None
