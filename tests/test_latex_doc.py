"""The LaTeX appendix: the committed derivations/ equals what the code generates; real LaTeX
everywhere (no ASCII pseudo-maths in the prose, checked without TeX); cross-references; and,
where a TeX engine is installed, a compiled PDF with no overfull boxes whose text shows no
pseudo-maths (pdftotext)."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sssn_verify.cli import main
from sssn_verify.latex_doc import (FILENAME, build_document, checked_by, compile_tex, ordered_names,
                                   prose_outside_math, pseudo_maths, standalone_document, tex_engine)
from sssn_verify.symbolic import DERIVATIONS, MODULES

COMMITTED = Path(__file__).resolve().parents[1] / "derivations" / FILENAME
NO_TEX = "no TeX engine (pdflatex or lualatex) on PATH: .ci/run installs one (Debian's texlive); locally, install it"


def needs_tex(test):
    """The PDF tests run wherever TeX is installed, and always in CI (where a missing engine fails)."""
    import os
    if os.environ.get("CI"):
        return test
    return pytest.mark.skipif(tex_engine() is None, reason=NO_TEX)(test)


def _report():
    """A whole report.json (valid against the full schema, as `latex --with-report` demands), made
    by the report's own code from two hand-made claim results: two_point passed, kernel failed."""
    from sssn_verify.claims.base import ClaimResult
    from sssn_verify.report import report_data
    from sssn_verify.stats import CheckResult
    from sssn_verify.verify import suite_of
    tp = [CheckResult(f"two_point {i}", True, 0.5658, 0.0037, (0.5562, 0.5753), 0.5681, 0.999, 1000, pvalue=0.5)
          for i in range(3)]
    kern = [CheckResult("kernel", False, float("inf"), None, None, -1.5e-7, 0.999, 1)]
    results = [ClaimResult("two_point", "Two-point motion", "s", "d", tp, "quick", 0, 0.999, 1.0),
               ClaimResult("kernel", "Kernel", "s", "d", kern, "quick", 0, 0.999, 1.0)]
    data = report_data(suite_of(results, "quick", 0))
    data["provenance"].update(version="0.1.0", date="2026-12-02T18:00:00+00:00",
                              git={"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False})
    return data


REPORT = _report()


@pytest.fixture(scope="module")
def document():
    return build_document()


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    (out / "report.json").write_text(json.dumps(REPORT))
    return out


def test_committed_document_matches_the_code(document):
    assert COMMITTED.exists(), "run: sssn-verify latex --out derivations"
    assert COMMITTED.read_text() == document, "derivations/ is stale: run sssn-verify latex --out derivations"


def test_document_structure(document):
    assert document.startswith("\\documentclass")
    for pkg in ("fontenc", "amsmath", "amssymb", "amsthm", "breqn", "hyperref"):
        assert re.search(rf"\\usepackage(\[[^\]]*\])?\{{{pkg}\}}", document), pkg
    assert "\\usepackage[T1]{fontenc}" in document
    assert document.index("{amsthm}") < document.index("{hyperref}")
    assert document.rstrip().endswith("\\end{document}")
    for env in ("dmath*", "itemize", "enumerate", "document", "assumption", "result", "claimenv"):
        assert document.count(f"\\begin{{{env}}}") == document.count(f"\\end{{{env}}}") > 0, env
    assert document.count("{") == document.count("}")
    # one section per derivation, plus the claims section
    assert len(re.findall(r"\\section\{", document)) == len(ordered_names()) + 1


def test_sections_follow_module_order():
    modules = [DERIVATIONS[n].__module__.rsplit(".", 1)[-1] for n in ordered_names()]
    idx = [MODULES.index(m) for m in modules]
    assert idx == sorted(idx) and ordered_names()[:2] == ["kernel", "ito_drift"]


def test_every_reference_has_its_label_and_results_point_to_steps_and_claims(document):
    labels = set(re.findall(r"\\label\{([^}]+)\}", document))
    refs = set(re.findall(r"\\ref\{([^}]+)\}", document))
    assert refs and refs <= labels, sorted(refs - labels)
    assert len(labels) == len(re.findall(r"\\label\{", document))          # unique
    results = re.findall(r"\\begin\{result\}\\label\{res:([^}]+)\}(.*?)\\end\{result\}", document, re.S)
    assert len(results) == len(ordered_names()) - 1 + 9                     # kernel: one per activation
    for key, body in results:
        assert f"\\ref{{asm:{key}}}" in body and f"\\ref{{step:{key}:1}}" in body, key
    for name in ordered_names():
        for claim in checked_by(name):
            assert f"\\ref{{claim:{claim.replace('_', '-')}}}" in document, (name, claim)
    assert "claim:two-point" in labels and "claim:lyapunov" in labels


def test_no_ascii_pseudo_maths_in_the_prose(document):
    """CI has no TeX: this scan of the .tex prose (outside math) is what guards the typesetting."""
    assert pseudo_maths(document) == []


def test_the_scan_finds_pseudo_maths_and_accepts_real_latex():
    bad = ("\\begin{document} Coercivity condition lambda_bar < 0 with <x,y> and ||V||, e^{beta rho}, "
           "k0 = K(rho), d = 2..7, sqrt(2) \\end{document}")
    kinds = {k for k, _ in pseudo_maths(bad)}
    assert {"comparison or angle bracket", "caret", "underscore outside \\texttt", "Greek letter spelt out",
            "indexed name such as k0", "function call such as K(rho)", "range such as 2..7",
            "norm or absolute-value bar", "equals sign outside math", "sqrt/log/exp spelt out"} <= kinds
    good = ("\\begin{document} Coercivity condition $\\bar\\lambda < 0$ with $\\langle x, y\\rangle$ "
            "(see \\texttt{sssn\\_verify.report}, Claim~\\ref{claim:two-point})\n\\begin{dmath*}\nk_0 = K(1)\n"
            "\\end{dmath*}\\end{document}")
    assert pseudo_maths(good) == []


@pytest.mark.parametrize("activation", ["gelu", "sin(3*u)", "u*erf(u)", "leaky_relu:0.3"])
def test_standalone_kernel_documents_are_real_latex(activation):
    doc = standalone_document(["kernel"], activation=activation)
    assert doc.startswith("\\documentclass") and doc.rstrip().endswith("\\end{document}")
    assert "\\ref{claim:" not in doc and "\\texttt{kernel}" in doc          # names the claim, no dangling ref
    assert pseudo_maths(doc) == []


def test_text_format_spells_the_prose_maths_in_ascii(document):
    from sssn_verify.symbolic import derive
    from sssn_verify.symbolic.derivation import plain_text
    for name in ordered_names():
        der = derive(name)
        for prose_line in [der.title, *der.assumptions, *(s.text for s in der.steps)]:
            shown = plain_text(prose_line)
            assert shown in der.text() and not re.search(r"[$`\\]", shown), (name, shown)
    assert plain_text(r"$e^{\beta\rho}$, $\langle x, A_i\rangle$, $\|V\|$, `code`, $\frac{k_0}{2}$") == \
        "e^(beta rho), <x, A_i>, ||V||, code, k_0/2"


def test_derive_standalone_cli(capsys):
    assert main(["derive", "lyapunov", "--format", "latex", "--standalone"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("\\documentclass") and "\\begin{result}" in out and out.rstrip().endswith("\\end{document}")
    assert main(["derive", "lyapunov", "--standalone"]) == 2                  # only with --format latex
    assert "standalone" in capsys.readouterr().err


def test_with_report_adds_the_latest_verdicts(report_dir, document):
    doc = build_document(report_dir)
    assert doc.replace(doc[doc.index("\\section{Numerical checks"):], "") == \
        document.replace(document[document.index("\\section{Numerical checks"):], "")
    claims = doc[doc.index("\\section{Numerical checks"):]
    assert "\\texttt{0123456789ab}" in claims and "Latest verdict: \\textbf{pass}" in claims
    assert "Latest verdict: \\textbf{FAIL}" in claims and "$+\\infty$" in claims and "$-1.5 \\times 10^{-7}$" in claims
    assert "Not run in the given report." in claims
    assert pseudo_maths(doc) == []


def test_with_report_needs_a_report(tmp_path, capsys):
    assert main(["latex", "--out", str(tmp_path / "o"), "--no-pdf", "--with-report", str(tmp_path)]) == 2
    assert "report.json" in capsys.readouterr().err


def test_latex_command_writes_the_file(tmp_path, capsys, document):
    assert main(["latex", "--out", str(tmp_path), "--no-pdf"]) == 0
    assert (tmp_path / FILENAME).read_text() == document
    assert str(tmp_path / FILENAME) in capsys.readouterr().out
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]     # atomic write left no temp file


def _math_stripped(tex: str) -> str:
    """The document with every math span and display removed (it still compiles)."""
    head, body = tex.split("\\begin{document}", 1)
    body = re.sub(r"\\begin\{(dmath|equation)\*\}.*?\\end\{\1\*\}", "", body, flags=re.S)
    body = re.sub(r"\$[^$]*\$", "", body)
    return head + "\\begin{document}" + body


def _pdf_text(pdf) -> str:
    assert shutil.which("pdftotext"), "a TeX engine is installed but pdftotext is not: install poppler-utils"
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


@needs_tex
def test_the_appendix_compiles_cleanly_and_its_pdf_text_has_no_pseudo_maths(tmp_path, report_dir):
    assert tex_engine() is not None, NO_TEX
    tex = tmp_path / FILENAME
    tex.write_text(build_document(report_dir))
    res = compile_tex(tex)
    assert res["pdf"], res.get("error")
    assert res["overfull"] == 0 and res["undefined_references"] == 0 and not res["rerun_needed"], res
    assert res["pages"] >= 10
    text = _pdf_text(res["pdf"])
    assert "Latest verdict" in text and "Two-point motion of the overlap" in text
    for bad in ("^{", "lambda_", "\u00a1", "\u00bf", "\\", "$"):                 # ¡ ¿: T1 missing
        assert bad not in text, bad
    for bad in ("acos", "asin", "True", "sympy", "scipy", "symbolic.", "numeric.", "invgauss", "\u2228"):
        assert bad not in text, bad                                          # artefacts (issue 23)
    assert all(re.fullmatch(r"[\d.]\s*\u2227\s*[V.]", m) for m in re.findall(r"\S\s*\u2227\s*\S", text)), \
        "a logical wedge (only exterior products of the V^j may use it)"
    # the prose alone (math removed before compiling): no <, >, ^{, lambda_ at all
    stripped = tmp_path / "stripped" / FILENAME
    stripped.parent.mkdir()
    stripped.write_text(_math_stripped(build_document(report_dir)))
    res2 = compile_tex(stripped, runs=1)
    assert res2["pdf"], res2.get("error")
    prose = _pdf_text(res2["pdf"])
    assert len(prose) > 5000
    for bad in ("<", ">", "^{", "lambda_"):
        assert bad not in prose, (bad, prose[max(0, prose.find(bad) - 80): prose.find(bad) + 80])


@needs_tex
def test_derive_standalone_compiles(tmp_path, capsys):
    assert tex_engine() is not None, NO_TEX
    assert main(["derive", "all", "--format", "latex", "--standalone"]) == 0
    tex = tmp_path / "all.tex"
    tex.write_text(capsys.readouterr().out)
    res = compile_tex(tex)
    assert res["pdf"] and res["overfull"] == 0 and res["undefined_references"] == 0, res


# ---------------------------------------------------------------- typeset like a paper (issue 23)
def _results(document):
    return re.findall(r"\\begin\{result\}\\label\{res:([^}]+)\}(.*?)\\end\{result\}", document, re.S)


def test_every_result_is_an_equation_with_its_left_hand_side(document):
    for key, body in _results(document):
        displays = re.findall(r"\\begin\{(dmath\*|equation\*)\}\n(.*?)\n\\end\{\1\}", body, re.S)
        assert displays, key
        for _, formula in displays:
            head = formula.split("\\begin{cases}")[0]
            assert re.search(r"(?<![<>\\])=|\\iff", head), (key, formula[:80])
    assert "K(\\rho) = \\frac{\\sigma_{a}^{2}}{2 \\pi}" in document           # ReLU kernel, with its lhs
    assert "\\bar\\lambda(\\beta) \\ge \\lambda_{\\mathrm{edge}} =" in document
    assert "C_{\\mathrm{att}} = \\begin{cases}" in document
    assert "b(\\rho) = " in document and "a(\\rho) = " in document and "c(x) = " in document


def _displays(document):
    return "\n".join(m.group(2) for m in re.finditer(r"\\begin\{(dmath\*|equation\*)\}\n(.*?)\n\\end\{\1\}",
                                                     document, re.S))


def test_no_computer_algebra_artefacts_in_the_formulas(document):
    shown = _displays(document)
    for bad in ("\\operatorname{acos}", "\\operatorname{asin}", "\\wedge", "\\vee", "\\text{True}", "\\text{for}",
                "\\sqrt{\\sigma^{2}}", "mn", "norm_", "scipy", "\\epsilon", "v_{11 1}", "^{T}",
                "\\left(e^{\\beta} - 1\\right) \\left(e^{\\beta} + 1\\right)", "d \\sigma_{b}^{2} - 3 \\sigma_{b}^{2}",
                "- d t^{2} + 3 t^{2}"):
        assert bad not in shown, bad
    assert "\\arccos" in shown and "\\quad\\text{and}\\quad" in shown and "\\quad\\text{or}\\quad" in shown
    # a step whose object is a verdict or a residual is a sentence
    for body in re.findall(r"\\item\\label\{step:[^}]+\}(.*?)(?=\\item|\\end\{enumerate\})", document, re.S):
        for formula in re.findall(r"\\begin\{(?:dmath\*|equation\*)\}\n(.*?)\n\\end", body, re.S):
            assert formula.strip() not in ("0", "\\text{true}") and not re.fullmatch(
                r"\\left\( 0(, \\  0)*\\right\)", formula.strip()), body[:80]
    assert ": it is $0$." in document and ": each is $0$." in document and ": it holds." in document


def test_no_module_library_or_function_names_in_the_prose(document):
    prose_text = prose_outside_math(document.split("\\tableofcontents", 1)[1])
    for bad in ("sympy", "scipy", "numpy", "mpmath", "symbolic.", "numeric.", "sssn_verify", "invgauss",
                "cauchy schwarz", "Lemma (", "Lemma:", "True"):
        assert bad not in prose_text, bad
    # the implementation map is a separate, optional table at the end
    with_map = build_document(implementation_map=True)
    assert with_map.startswith(document[:-len("\\end{document}\n")])
    assert "\\section{Implementation map}" in with_map and "sssn\\_verify.symbolic.kernel" in with_map


def test_display_rules_keep_the_value():
    """Every displayed expression equals the derived one at random points (rationals in (0.3, 2),
    d in {4, 7}); the rules are exact rewritings, so the check is to 1e-9 relative."""
    import random

    import sympy as sp
    from sssn_verify.symbolic import derive
    from sssn_verify.symbolic.derivation import display_form
    from sympy.core.function import AppliedUndef
    rng = random.Random(23)
    checked = 0
    for name in ordered_names():
        der = derive(name)
        for expr in [der.result, *(s.expr for s in der.steps)]:
            if not isinstance(expr, sp.Expr) or expr.atoms(sp.MatrixSymbol, sp.Integral, sp.Indexed, AppliedUndef):
                continue
            shown = display_form(expr)
            free = sorted(expr.free_symbols | shown.free_symbols, key=str)
            for _ in range(3):
                # display rule 3 renames a positive 'x^2' symbol to x**2: the same value for x = sqrt(v)
                point = {s: (rng.choice([4, 7]) if s.name == "d" else sp.Rational(rng.randint(3, 20), 10))
                         for s in free}
                point.update({s: sp.sqrt(point[t]) for s in free for t in free
                              if t.name == s.name + "^2" and s is not t})
                a, b = complex(expr.subs(point).evalf(30)), complex(shown.subs(point).evalf(30))
                assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), (name, expr, shown)
            checked += 1
    assert checked > 40


def test_derive_latex_fragment_is_the_appendix_section(capsys, document):
    assert main(["derive", "kernel", "--activation", "relu", "--format", "latex"]) == 0
    out = capsys.readouterr().out
    section = out.split("\\paragraph{Numbers.}")[0]
    appendix = document[document.index("\\subsection{Covariance kernel for the activation \\texttt{relu}}"):]
    appendix = appendix[:appendix.index("\\end{result}") + len("\\end{result}")]
    body = section.replace("\\section{", "\\subsection{")
    body = body[:body.index("\\end{result}") + len("\\end{result}")]
    assert body.replace("Checked numerically by the claim \\texttt{kernel} of the verification suite.",
                        "Checked numerically by Claim~\\ref{claim:kernel} (\\texttt{kernel}).") == appendix
    numbers = out.split("\\paragraph{Numbers.}")[1]
    assert "$\\sigma_w = 1$" in numbers and "$k_0 = " in numbers and "error at most $" in numbers
    assert "No claim" not in out and "sigma w" not in out and pseudo_maths("\\begin{document}" + out) == []


def test_standalone_reads_as_a_short_note(capsys):
    assert main(["derive", "lyapunov", "--format", "latex", "--standalone"]) == 0
    out = capsys.readouterr().out
    assert "\\maketitle" in out and out.count("of the verification suite") == 1
    assert "sssn-verify verify" not in out


HOSTILE = ["sin(u) # $\\immediate\\write18{touch PWNED}$", "u # `$\\input{/etc/hostname}$`",
           "u # \\immediate\\write18{touch PWNED} } { $ % & ~ ^ _ #"]


def test_prose_never_copies_math_from_names():
    from sssn_verify.escape import latex_text
    from sssn_verify.symbolic.derivation import heading, prose
    for name in HOSTILE:
        out = prose(f"Kernel for `{name}`") + heading("section", f"Kernel for `{name}`")
        assert "\\immediate" not in out.replace("\\textbackslash{}immediate", "")
        assert "\\input" not in out.replace("\\textbackslash{}input", "")
    assert prose("$\\immediate\\write18{x}$") == latex_text("$\\immediate\\write18{x}$")   # unsafe: literal
    assert prose("$k_0 = K(1)$") == "$k_0 = K(1)$"


@needs_tex
def test_shell_escape_runs_nothing_from_names_or_reports(tmp_path):
    """pdflatex -shell-escape on what derive and latex write with hostile activation names and
    report.json strings: nothing runs, nothing is read, and the names print literally."""
    from sssn_verify.latex_doc import claims_section
    from sssn_verify.symbolic.derivation import Derivation
    assert tex_engine() is not None, NO_TEX
    der = Derivation("kernel", f"Covariance kernel for the activation `{HOSTILE[0]}`", [f"name `{HOSTILE[1]}`"],
                     [], 0, lhs="K(\\rho)")
    der.add(f"Activation `{HOSTILE[2]}`")
    report = dict(REPORT, mode="\\immediate\\write18{touch PWNED}$", provenance={
        "version": "$\\input{/etc/hostname}$", "date": "x", "git": {"commit": "\\write18{touch PWNED}"}})
    report["claims"] = [dict(REPORT["claims"][0], name="two_point"), {"name": "kernel", "estimate": "\\input{/etc/passwd}",
                                                                       "expected": float("nan"), "checks": "x"}]
    body = der.latex(checked_by=[("kernel", False)]) + claims_section(report)
    tex = tmp_path / "hostile.tex"
    from sssn_verify.latex_doc import PACKAGES
    tex.write_text("\\documentclass{article}\n" + PACKAGES + "\\begin{document}\n" + body + "\\end{document}\n")
    proc = subprocess.run([tex_engine(), "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert not (tmp_path / "PWNED").exists()
    text = _pdf_text(tmp_path / "hostile.pdf")
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else "\x00"
    assert hostname not in text.replace("/etc/hostname", "")
    assert "\\immediate\\write18{touch PWNED}" in text and "not a number" in text


@needs_tex
def test_latex_out_leaves_only_tex_and_pdf_and_reports_the_first_error(tmp_path, capsys):
    from sssn_verify import latex_doc
    assert tex_engine() is not None, NO_TEX
    small = latex_doc.standalone_document(["lyapunov"])
    out = tmp_path / "o"
    out.mkdir()
    (out / "note.tex").write_text(small)
    res = compile_tex(out / "note.tex")
    assert res["pdf"] and not res["rerun_needed"] and res["passes"] >= 1, res
    assert sorted(p.name for p in out.iterdir()) == ["note.pdf", "note.tex"]
    (out / "bad.tex").write_text(small.replace("\\begin{document}", "\\begin{document}\\undefinedthing"))
    res = compile_tex(out / "bad.tex")
    assert res["pdf"] is None and res["error"].startswith("! Undefined control sequence"), res
    assert sorted(p.name for p in out.iterdir()) == ["bad.tex", "note.pdf", "note.tex"]
