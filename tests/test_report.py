"""The report: JSON against docs/report.schema.json, provenance, HTML/markdown, figures, atomic writes.

Most tests use a hand-built suite (no Monte Carlo); one runs the real CLI on the cheap
``two_point`` claim, as a user would.
"""
import base64
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from sssn_verify import __version__
from sssn_verify.claims import CLAIMS
from sssn_verify.claims.base import ClaimResult
from sssn_verify.cli import main
from sssn_verify.errors import OutputError
from sssn_verify.report import (SCHEMA_VERSION, markdown, report_data, standardized_rows, table,
                                write_report)
from sssn_verify.stats import CheckResult
from sssn_verify.verify import SuiteResult

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _check(name, est, se, exp, *, passed=True, tol=0.0, p=0.5, figure=None):
    ci = None if se is None else (est - 3.29 * se, est + 3.29 * se)
    return CheckResult(name=name, passed=passed, estimate=est, stderr=se, ci=ci, expected=exp, level=0.999,
                       n=1000, seed=None if se is None else 7, pvalue=None if se is None else p, tolerance=tol,
                       method="test", details={} if figure is None else {"figure": figure})


def fake_suite():
    long_name = "a check whose name is much longer than seventy characters, so a cut title would lose its end: END"
    loglog = {"kind": "loglog", "x": [8, 16, 32, 64], "y": [0.4, 0.25, 0.17, 0.12], "stderr": [0.01] * 4,
              "slope": -0.58, "intercept": 0.3, "bound": [8 ** -0.5, 16 ** -0.5, 32 ** -0.5, 64 ** -0.5],
              "bound_label": "$N^{-1/2}$", "xlabel": "tokens $N$",
              "ylabel": r"$\mathbb{E}\,W_2^2(\mu^N_T, \mu^{\mathrm{ref}}_T)$"}
    decay = {"kind": "decay", "t": [0, 0.5, 1.0], "mean": [1.0, 0.7, 0.5], "stderr": [0.0, 0.02, 0.02],
             "bound": [1.0, 0.9, 0.8], "ylabel": r"$\mathbb{E}[E_\beta(\mu_t)]$"}
    est = {"kind": "estimates", "labels": ["relu d=3", "tanh d=4 $"], "estimate": [0.5, -0.2],
           "stderr": [0.01, 0.02], "expected": [0.51, -0.21], "ylabel": r"$\lambda_1$"}
    r1 = ClaimResult("alpha_claim", "A sympy claim", "x = 1", "x = 1",
                     [_check(long_name, 1.1, 0.05, 1.0, figure=loglog), _check("exact", 2.0, None, 2.0, tol=1e-9),
                      _check("infinite", float("inf"), None, float("inf"), figure=decay)],
                     "quick", 0, 0.999, 1.0, budget={"samples": 10}, statistic="a mean", tolerance="|d| <= 0.01")
    r2 = ClaimResult("stated_claim", "A stated bound", "error = O(1/N)", "E W_2^2 = O(N^{-1/2})",
                     [_check("slope", -0.6, 0.1, -0.5, p=0.2, figure=est)], "quick", 0, 0.999, 2.0,
                     statistic="log-log slope", tolerance="one-sided", derived_kind="stated")
    return SuiteResult([r1, r2], "quick", 0, 0.01, 3.0, 2)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    suite = fake_suite()
    paths = write_report(suite, out, command=["sssn-verify", "verify", "--report", str(out)])
    return suite, out, paths


def test_fake_report_validates_against_the_schema(written):
    _, out, _ = written
    data = json.loads((out / "report.json").read_text())
    assert sorted(VALIDATOR.iter_errors(data), key=str) == []
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["provenance"]["version"] == __version__
    assert data["provenance"]["command_line"].startswith("sssn-verify verify --report")


@pytest.mark.parametrize("break_it", [
    lambda d: d.pop("provenance"),
    lambda d: d.pop("schema_version"),
    lambda d: d["claims"][0].update(derived_kind="maybe"),
    lambda d: d["claims"][0]["checks"][0].update(pvalue=2.0),
    lambda d: d["claims"][0]["checks"][0].pop("seed"),
    lambda d: d["provenance"]["git"].update(commit="not-a-hash"),
    lambda d: d["claims"][0].pop("statistic"),
])
def test_the_schema_rejects_broken_reports(written, break_it):
    _, out, _ = written
    data = json.loads((out / "report.json").read_text())
    break_it(data)
    assert list(VALIDATOR.iter_errors(data)), "the schema accepted a broken report"


def test_schema_is_a_valid_documented_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["description"] and SCHEMA["properties"]["provenance"]["description"]
    for name, sub in SCHEMA["$defs"]["check"]["properties"].items():
        assert sub.get("description") or name in ("alternative",), name


def test_provenance_names_libraries_threads_and_the_git_commit(written):
    _, out, _ = written
    prov = json.loads((out / "report.json").read_text())["provenance"]
    assert {"numpy", "scipy", "sympy", "numba", "matplotlib"} <= {k for k, v in prov["libraries"].items() if v}
    assert prov["numba_threads"]["in_use"] >= 1
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", prov["date"])
    if (ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert prov["git"]["commit"] == head.stdout.strip()
    else:
        assert prov["git"]["commit"] is None


def test_html_is_one_self_contained_file_with_every_figure_embedded(written):
    _, out, paths = written
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)=["'](https?:|//|[^"'#]*\.(png|css|js)["'])""", page)
    assert "<link" not in page and "<script" not in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(paths["figures"]) + 1            # + the summary
    for blob in images:
        assert base64.b64decode(blob)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "alpha_claim" in page and "stated_claim" in page and "&lt;=" in page   # escaped, not raw HTML


def test_every_figure_exists_as_png_and_pdf_with_full_titles(written):
    _, out, paths = written
    data = json.loads((out / "report.json").read_text())
    assert len(paths["figures"]) == len(paths["figures_pdf"]) == 3
    for figs in data["figures"].values():
        for f in figs:
            assert (out / f["png"]).read_bytes()[:4] == b"\x89PNG"
            assert (out / f["pdf"]).read_bytes()[:5] == b"%PDF-"
    titles = [f["title"] for figs in data["figures"].values() for f in figs]
    assert any(t.endswith("END") for t in titles)            # not cut at 70 characters
    s = data["summary_figure"]
    assert (out / s["png"]).exists() and (out / s["pdf"]).read_bytes()[:5] == b"%PDF-"
    assert not [p for p in out.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]   # no temp files left


def test_stated_claims_are_not_labelled_derived(written):
    suite, out, _ = written
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    section = md[md.index("## stated_claim"):]
    assert "Derived (sympy)" not in section and "Stated bound" in section
    assert "Derived (sympy)" in md[md.index("## alpha_claim"):md.index("## stated_claim")]
    assert html.count("Derived result") == 1 and "<em>stated:</em> E W_2^2" in html
    assert "(stated) E W_2^2" in table(suite)
    for key in ("**Statistic.** a mean", "**Tolerance policy.** |d| <= 0.01"):
        assert key in md


def test_the_registry_marks_the_hand_typed_claims_as_stated():
    stated = {n for n, c in CLAIMS.items() if c.derived_kind == "stated"}
    assert stated == {"commuting_limits", "convergence_depth", "convergence_width", "propagation_of_chaos",
                      "metastability"} & set(CLAIMS)
    from sssn_verify.symbolic.lyapunov import lambda1_relu, lambda1_tangent
    import sympy as sp
    text = CLAIMS["synchronization"].derived()
    assert sp.sstr(lambda1_tangent()) in text and sp.sstr(lambda1_relu()) in text


def test_propagation_of_chaos_figure_is_labelled_w2_squared(monkeypatch):
    import numpy as np
    from sssn_verify.claims import propagation_of_chaos as poc
    rng = np.random.default_rng(0)
    ns = np.array([8, 16, 32])
    fake = np.abs(rng.normal(1.0, 0.05, size=(20, 3))) / np.sqrt(ns)
    monkeypatch.setattr(poc, "fixed_noise_distances", lambda *a, **k: fake)
    budget = dict(poc.CLAIM.budgets["quick"], ns=tuple(ns), n_boot=100)
    (res,) = poc.check(poc.derived_formula(), budget, 0, 0.999)
    spec = res.details["figure"]
    assert "W_2^2" in spec["ylabel"] and "error" not in spec["ylabel"]
    assert spec["ylabel"].startswith("$") and spec["ylabel"].endswith("$")     # mathtext


def test_tick_labels_are_mathtext():
    from sssn_verify.report import tick_label
    assert tick_label("b relu d=3 rho=-0.5") == r"b relu $d=3$ $\rho=-0.5$"
    assert tick_label("gaussian sin:3 d=4 sb=0.0") == r"gaussian sin:3 $d=4$ $\sigma_b=0.0$"
    assert tick_label("cost $5") == r"cost \$5"


def test_standardized_rows():
    rows = {(r["claim"], r["check"]): r for r in standardized_rows(fake_suite())}
    z = rows["stated_claim", "slope"]
    assert z["z"] == pytest.approx(-1.0) and z["lo"] == pytest.approx(-1 - 3.29) and z["scale"] == "s.e."
    assert rows["alpha_claim", "exact"]["scale"] == "tolerance" and rows["alpha_claim", "exact"]["z"] == 0
    assert rows["alpha_claim", "infinite"]["z"] is None


def test_target_is_checked_before_writing(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me")
    with pytest.raises(OutputError):
        write_report(fake_suite(), blocker, figures=False)
    assert blocker.read_text() == "keep me"
    with pytest.raises(OutputError):
        write_report(fake_suite(), "  ", figures=False)


def test_cli_report_into_a_file_exits_two_with_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    verify_module = importlib.import_module("sssn_verify.verify")   # the module (sv.verify is the function)

    def must_not_run(*a, **k):
        raise AssertionError("the suite ran before the report folder was checked")
    monkeypatch.setattr(verify_module, "verify", must_not_run)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert main(["verify", "--claim", "two_point", "--no-progress", "--report", str(blocker)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "report" in err[0]


def test_verify_quick_report_as_a_user_runs_it(tmp_path):
    """Acceptance: verify --quick --report DIR writes html, md, json (valid), PDF and PNG figures."""
    proc = subprocess.run([sys.executable, "-m", "sssn_verify", "verify", "--quick", "--claim", "two_point",
                           "--no-progress", "--report", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for name in ("report.html", "report.md", "report.json", "summary.pdf", "summary.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert any(p.suffix == ".pdf" and p.name != "summary.pdf" for p in tmp_path.iterdir())
    assert any(p.suffix == ".png" and p.name != "summary.png" for p in tmp_path.iterdir())
    data = json.loads((tmp_path / "report.json").read_text())
    assert sorted(VALIDATOR.iter_errors(data), key=str) == []
    assert data["provenance"]["version"] == __version__
    assert "--claim two_point" in data["provenance"]["command_line"]
    (claim,) = data["claims"]
    assert claim["configuration"]["RHOS"] and claim["budget"]["samples"] > 0
    assert claim["statistic"] == CLAIMS["two_point"].statistic
    assert "Derived (sympy)" in (tmp_path / "report.md").read_text()


def test_markdown_without_written_figures():
    text = markdown(fake_suite())
    assert "## Provenance" in text and "schema version" in text


def test_report_data_is_json_serializable_without_nan():
    json.dumps(report_data(fake_suite()), allow_nan=False)


# ---------------------------------------------------------------- the report shows mathematics (issue 23)
class _Visible:
    """The visible text of an HTML page (style and script content dropped) and its element names;
    ``prose``: the visible text outside MathML (what the reader sees as words, not as mathematics)."""

    def __init__(self, page):
        from html.parser import HTMLParser
        self.text, self.tags, self.prose = [], [], []
        outer = self

        class P(HTMLParser):
            skip = 0
            math = 0

            def handle_starttag(self, tag, attrs):
                outer.tags.append(tag)
                self.skip += tag in ("style", "script")
                self.math += tag == "math"

            def handle_endtag(self, tag):
                self.skip -= tag in ("style", "script")
                self.math -= tag == "math"

            def handle_data(self, data):
                if not self.skip:
                    outer.text.append(data)
                    if not self.math:
                        outer.prose.append(data)
        P(convert_charrefs=True).feed(page)
        self.text = " ".join(self.text)
        self.prose = " ".join(self.prose)


#: ASCII mathematics a reader must not see as words (outside MathML): powers, Python operators and
#: calls, angle brackets used as an inner product, spelt comparisons, subscripts spelt with "_" (rho_ij,
#: lambda_1, V_h), calls such as min(max(, absolute values |v|, function names of a module
#: (attention.pair_rates; not a file such as docs/report.schema.json)
ASCII_MATHS = {"caret": r"\^", "Python power": r"\*\*", "sqrt call": r"\bsqrt\(", "inner product <w,x>": r"<\s*\w+\s*,\s*\w+\s*>",
               "comparison <= or >=": r"<=|>=", "TeX source": r"\\[A-Za-z]+|\$",
               "subscript spelt with _": r"\b(?:[A-Za-z]|rho|lambda|sigma|gamma|delta|theta|beta|eps|tau|phi|mu)_\w",
               "function call": r"\b(?:min|max|log|exp|abs|cos|sin|tanh)\(",
               "absolute value |x|": r"\|[^|\s][^|]{0,40}\|",
               "module.function name": r"\b[a-z]+\.[a-z]+_[a-z_]+\b"}
#: Greek letters and constants spelt as words (rho, lambda_1, k0): in a text that is ours alone (an evidence
#: description), never in a table whose entries are parameter names
SPELT_MATHS = r"\b(?:rho|lambda|sigma|gamma|delta|theta|beta|eps\w*|varepsilon|tau|phi|k0|k1|cos|sin)\b"


def ascii_maths(text: str) -> list[tuple[str, str]]:
    """(kind, context) of each piece of ASCII mathematics in `text`."""
    return [(kind, text[max(0, m.start() - 50): m.end() + 50]) for kind, pattern in ASCII_MATHS.items()
            for m in re.finditer(pattern, text)]


def real_claims_suite():
    """A suite of real claim names (their derivations are rendered) with hand-built checks."""
    budget = {"samples": 2000, "configs": [["relu", 3, 1.0], ["tanh", 4, 0.5]], "rho_grid": (0.1, 0.5)}
    # check names as the checkers write them: LaTeX prose (maths in $...$, names in backticks)
    names = ["a check whose name is long and must be shown whole: END",
             r"$\lambda_1$: tangent-flow rate over a horizon against $\frac{(d-3)\,k_1 - (d-1)\,k_0}{2}$",
             r"`relu`, $d=3$, $\sigma_w=1.0$: bound, slope of $\log E \max_l |X^{l,m} - X^{l,\infty}|^2$ at most $-1$"]
    rs = [ClaimResult(name, CLAIMS[name].title, CLAIMS[name].statement, CLAIMS[name].derived(),
                      [_check(n, 1.0, 0.1, 1.0) for n in names], "quick", 0, 0.999, 1.0, budget=budget,
                      statistic=CLAIMS[name].statistic, tolerance=CLAIMS[name].tolerance,
                      derived_kind=CLAIMS[name].derived_kind, power=CLAIMS[name].power)
          for name in ("lyapunov", "kernel", "coercivity", "attention_bound", "convergence_width")]
    return SuiteResult(rs, "quick", 0, 0.01, 3.0, 5)


@pytest.fixture(scope="module")
def real_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("real")
    write_report(real_claims_suite(), out, figures=False)
    return (out / "report.html").read_text(), (out / "report.md").read_text()


def test_html_renders_derived_results_as_mathml_with_no_python_or_json(real_page):
    page, _ = real_page
    seen = _Visible(page)
    results = seen
    # the claims' titles and statements (LaTeX prose) as MathML: no ASCII or TeX mathematics left
    prose = _Visible("".join(re.findall(r"<h2 id=.*?</h2>|<p><strong>Statement\.</strong>.*?</p>", page, re.S)))
    assert prose.tags.count("math") >= 10, prose.tags
    for bad in ("rho", "sigma", "lambda", "<=", "$", "\\frac", "||", "^"):
        assert bad not in prose.text, (bad, prose.text)
    assert "**" not in seen.text
    assert seen.tags.count("math") >= 8 and {"mfrac", "msub", "msup", "msqrt"} <= set(seen.tags)
    for bad in ("**", "sqrt(", "acos", '{"', '["', "[[", "K_rho", "sigma_w", "lambda_1 =", "$", "\\frac"):
        assert bad not in results.text, (bad, results.text[max(0, results.text.find(bad) - 80):
                                                             results.text.find(bad) + 80])
    assert "λ" in seen.text and "arccos" in seen.text and "ReLU:" in seen.text       # lambda_1, K(rho), region
    assert "a check whose name is long and must be shown whole: END" in seen.text
    # statistic, tolerance, power and check names are LaTeX prose shown as MathML: no ASCII maths in the words
    assert ascii_maths(seen.prose) == [], ascii_maths(seen.prose)[:5]
    for label, with_maths in (("Statistic", 5), ("Tolerance policy", 5), ("Power", 3)):
        paragraphs = re.findall(rf"<p><strong>{label}\.</strong>(.*?)</p>", page, re.S)
        assert len(paragraphs) == 5 and sum("<math" in x for x in paragraphs) == with_maths, (label, paragraphs)
    assert "<td><math" in page                          # a check name that begins with mathematics
    # budgets and configurations as tables of words
    assert "Budget (quick mode)" in seen.text and "rho grid" in seen.text and "(relu, 3, 1)" in seen.text
    # a checker's declared domain (lyapunov's CHECK_DOMAIN) as ranges in mathematics, not 'sigma w 0.3, 1.5'
    assert "sigma w" not in seen.text and "activation one of relu" in seen.text and "<mo>∈</mo>" in page


def test_claim_titles_and_statements_are_latex_prose_that_renders_as_mathml():
    """Every claim's title, statement, statistic, tolerance policy and stated power: each $...$ span is read by tex_mathml (no span falls back to
    its source), the words around it hold no ASCII mathematics (the appendix's pseudo-maths scan), and
    the terminal form spells the mathematics in ASCII."""
    from sssn_verify.latex_doc import pseudo_maths
    from sssn_verify.symbolic.derivation import plain_text, prose
    from sssn_verify.tex_mathml import prose_html, tex_mathml
    for c in CLAIMS.values():
        for text in (c.title, c.statement, c.statistic, c.tolerance, c.power):
            assert prose_html(text).count("<code>") == text.count("`") // 2, (c.name, text)   # names only
            assert text.count("$") % 2 == 0 and "$" in c.statement, c.name
            assert "ot.emd2" not in text and "POT" not in text, c.name     # what is computed, not which function
            assert not pseudo_maths("\\begin{document}" + prose(text)), (c.name, pseudo_maths(prose(text)))
            assert "\\" not in plain_text(text) and "$" not in plain_text(text), c.name
    with pytest.raises(ValueError):
        tex_mathml("\\input{x}")                       # outside the subset: refused, never passed through
    shown = prose_html("$<script>$ and <b>")
    assert "<script" not in shown and "<b>" not in shown and "&lt;b&gt;" in shown
    assert "<msub><mi>λ</mi><mn>1</mn></msub>" in tex_mathml("\\lambda_1")


def test_checker_configurations_and_evidence_texts_hold_no_ascii_maths():
    """Every claim's checker configuration as report.html shows it (its evidence text among the entries)
    holds no ASCII mathematics in its words; every check evidence text (``check --help``) is LaTeX prose:
    each $...$ span read by tex_mathml, no Greek letter or module name spelt in the words, and its
    terminal form ASCII."""
    from sssn_verify.report import claim_configuration, kv_table_html
    from sssn_verify.symbolic.derivation import plain_text
    from sssn_verify.tex_mathml import prose_html, prose_spans
    for name in CLAIMS:
        seen = _Visible(kv_table_html(claim_configuration(name), "Checker configuration"))
        assert ascii_maths(seen.prose) == [], (name, ascii_maths(seen.prose)[:5])
    texts = {}
    for name, c in CLAIMS.items():
        for q, cc in {None: c.candidate, **((c.candidate and c.candidate.quantities) or {})}.items():
            if cc is not None and cc.description:
                texts[(name, q)] = cc.description
    assert {"kernel", "attention_bound", "synchronization_time"} <= {n for n, _ in texts}
    for key, text in texts.items():
        assert prose_html(text).count("<code>") == text.count("`") // 2, key        # every formula read
        words = " ".join(part for kind, part in prose_spans(text) if kind == "text")
        assert ascii_maths(words) == [] and not re.search(SPELT_MATHS, words), (key, words)
        assert "\\" not in plain_text(text) and "$" not in plain_text(text), key


def test_the_old_ascii_evidence_texts_would_have_been_caught():
    """The scan is not blind to what it replaced: the evidence texts as they were before LaTeX prose."""
    old = ["an error of 0.6 % of min(max(|v|, k0/5), max(k0, |v|/5)), v = lambda_1, is rejected",
           "the exact attention rate |d(1 - rho_ij)/dt| / (1 - rho_ij) (numeric/attention.pair_rates), max",
           "pooled variance of the block increments of log|V| per unit time",
           "(log R_ii - linear term)/h with Richardson over h, 2h"]
    for text in old:
        assert ascii_maths(_Visible(f"<td>{text}</td>").prose), text


def test_markdown_budget_is_a_table(real_page):
    _, md = real_page
    assert "| samples | 2000 |" in md and '{"samples"' not in md


def test_markdown_derived_results_are_display_maths_not_python(real_page):
    _, md = real_page
    assert md.count("$$") >= 8 and "\\arccos" in md and "\\lambda_1 =" in md
    assert "**2" not in md and "sqrt(" not in md and "acos" not in md.replace("\\arccos", "")


def test_exploration_section_only_with_enough_points():
    from types import SimpleNamespace
    from sssn_verify.report import MIN_EXPLORATION_POINTS, exploration_worth_showing
    few = SimpleNamespace(explorations=[SimpleNamespace(examples=[{}] * 2)])
    many = SimpleNamespace(explorations=[SimpleNamespace(examples=[{}] * MIN_EXPLORATION_POINTS)])
    assert not exploration_worth_showing(few) and exploration_worth_showing(many)
    assert not exploration_worth_showing(None) and MIN_EXPLORATION_POINTS == 8


def test_reported_time_is_the_wall_time_of_the_command_with_its_split(real_page):
    from sssn_verify.report import process_seconds, timing_rows
    page, _ = real_page
    assert "wall time of the whole command; split below" in page and "<caption>Time</caption>" in page
    rows = dict(timing_rows(real_claims_suite()))
    wall = process_seconds()
    assert wall is not None and rows["total (wall time of the command)"] >= rows["claims"]
    assert rows["start-up, imports, compilation and other"] >= 0 and rows["exploration"] is None
    assert "s wall time so far" in table(real_claims_suite())


def test_user_text_in_report_md_and_html_is_escaped():
    from sssn_verify.report import html_report
    suite = fake_suite()
    hostile = ["sssn-verify", "verify", "--report", "d`<script>alert(1)</script>`|x $\\input{/etc/passwd}$"]
    data = report_data(suite, command=hostile)
    md = markdown(suite, data=data)
    line = next(x for x in md.splitlines() if x.startswith("Command line:"))
    assert "<script>" not in line and "`" not in line.replace("\\`", "") and "\\<script\\>" in line
    page = html_report(suite, data=data)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_exploration_section_draws_the_domain_and_each_points_deviation(tmp_path):
    """8 explored points of lyapunov's domain: the figure is drawn (domain box from the claim's declared
    ranges), the table gives each point's deviation in standard errors, the text says what p = 1 means."""
    from sssn_verify.explore import Exploration, SuiteExploration
    from sssn_verify.report import _domain_ranges, example_deviation, exploration_figures, exploration_html
    fields = tuple(CLAIMS["lyapunov"].domain.fields)
    examples = [{"config": ["gaussian", "relu", 2 + k % 5, 0.5 + 0.1 * k, 0.1 * k, 0.75], "stage": "screen",
                 "pvalue": 1.0 if k % 2 else 0.3, "screen_level": 6e-4, "confirm_pvalue": None,
                 "verdict": "passed",
                 "screen_headline": {"estimate": -1.0 + 0.001 * k, "expected": -1.0, "stderr": 0.001, "check": "c"}}
                for k in range(8)]
    e = Exploration("lyapunov", "d in [2, 6]", 8, 6e-4, 0.01, examples, None, 1.0, [], fields)
    res = SuiteExploration([e], {}, 8, 0.01, 0.01, 0, None)
    assert _domain_ranges("lyapunov")["d"] == (2.0, 6.0)
    assert example_deviation(examples[3]) == pytest.approx(3.0)
    assert len(exploration_figures(res, tmp_path)) == 1 and (tmp_path / "explore_lyapunov.png").exists()
    page = exploration_html(res)
    assert "deviation / s.e." in page and "+3.00" in page and "p-values of 1 say" in page
    assert "declared domain (dashed box)" in page and "hypothesis-examples" not in page
    # parameters and domain as mathematics, not sigma_w=0.5 or sigma_w in [0.5, 1.25]
    assert "sigma_w" not in _Visible(page).text and "<mo>∈</mo>" in page and "<mi>σ</mi><mi>w</mi>" in page


def test_drawn_parameters_read_as_numbers():
    """A claim's domain draws floats on a grid of 10^4 steps of each range: never hypothesis' 8.4e-288 for 0."""
    from hypothesis import given, settings
    drawn = []

    @settings(max_examples=60, database=None, deadline=None)
    @given(CLAIMS["kernel"].domain)
    def draw(config):
        drawn.append(config)
    draw()
    spec = CLAIMS["kernel"].domain.spec
    for config in drawn:
        for name, v in zip(CLAIMS["kernel"].domain.fields, config):
            if isinstance(v, float):
                lo, hi = spec[name]
                k = (v - lo) / (hi - lo) * 10_000
                assert lo <= v <= hi and abs(k - round(k)) < 1e-6, (name, v)


def test_tex_mathml_reads_its_subset_exactly():
    """Brackets group (and never stretch), primes sit beside their base, \\text keeps its outer spaces,
    an interval [0, 1) closes, \\left...\\right stretches; a command outside the subset is refused."""
    from sssn_verify.tex_mathml import prose_html, tex_mathml
    fixed = '<mo stretchy="false" lspace="0" rspace="0">'
    assert f"<mrow>{fixed}(</mo><mi>ρ</mi>{fixed})</mo></mrow>" in tex_mathml(r"K(\rho)")
    assert "<mi>′</mi>" in tex_mathml("K'(1)") and "<mtext>&nbsp;and&nbsp;</mtext>" in tex_mathml(r"x \text{ and } y")
    assert tex_mathml("[0, 1)").count("<mrow>") == 2
    assert 'stretchy="true"' in tex_mathml(r"\left|\frac{a}{b}\right|")
    for bad in (r"\def\x{1}", r"\left( x", "x^", r"\href{u}{v}"):
        with pytest.raises(ValueError):
            tex_mathml(bad)
    assert prose_html("a~b") == "a&nbsp;b" and "<U+" not in prose_html(r"$x \text{ if } y$")


def test_figure_text_is_mathtext_or_ascii_and_wraps_between_formulas():
    """Check names and titles in figures: each $...$ span as mathtext when matplotlib reads it, else in
    ASCII; lines wrapped between formulas, never inside one; names without their backticks."""
    from sssn_verify.report import plot_prose
    text = plot_prose(r"$\lambda_1$: one layer against $\frac{(d-3)\,k_1 - (d-1)\,k_0}{2}$ at `leaky_relu:0.1`", 20)
    assert all(line.count("$") % 2 == 0 for line in text.split("\n")) and len(text.split("\n")) > 2
    assert r"$\lambda_1$" in text and r"$\frac{(d-3)\,k_1 - (d-1)\,k_0}{2}$" in text and "`" not in text
    assert plot_prose(r"$x \le y$ and `a$b`") == r"x <= y and a\$b"      # mathtext reads no \le; a name's $ stays text


def test_summary_labels_never_overlap_and_nothing_is_drawn_outside_the_axes():
    """44 checks with one- to three-line names (the quick suite's count): every tick label keeps to its own
    row, the page stays A4, and a one-sided interval lying wholly beyond the axis draws no bar or arrow out
    there (seen in the quick suite's summary: metastability's bound at z ~ 12)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sssn_verify.report import _summary_figure
    words = "drift and diffusion of $\\rho$ against the exact layer's generator at the edge".split()
    checks = [_check(" ".join(words[: 3 + (i * 7) % len(words)] * (1 + i % 3)), 1.0 + 0.01 * i, 0.01, 1.0)
              for i in range(43)]
    far = _check("beyond the axis, one-sided", 1.12, 0.01, 1.0)
    far = CheckResult(**{**far.__dict__, "ci": (1.12 - 1.645 * 0.01, float("inf")), "alternative": "greater"})
    suite = SuiteResult([ClaimResult("claim", "T", "s", "s", checks + [far], "quick", 0, 0.999, 1.0)],
                        "quick", 0, 0.01, 1.0, 2)
    rows = standardized_rows(suite)
    assert rows[-1]["alternative"] != "two-sided" and rows[-1]["lo"] > 8
    fig = _summary_figure(plt, np, suite)
    try:
        assert tuple(fig.get_size_inches()) == (8.27, 11.69)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        boxes = sorted((t.get_window_extent(renderer) for t in ax.get_yticklabels()), key=lambda b: b.y0)
        assert len(boxes) == 44
        for low, high in zip(boxes, boxes[1:]):
            assert low.y1 <= high.y0 + 0.5, (low, high)
        frame = ax.get_window_extent(renderer)
        for artist in ax.lines + ax.texts:
            box = artist.get_window_extent(renderer)
            assert frame.x0 - 6 <= box.x0 and box.x1 <= frame.x1 + 6, artist
    finally:
        plt.close(fig)
