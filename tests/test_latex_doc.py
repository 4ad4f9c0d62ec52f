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
                                   pseudo_maths, standalone_document, tex_engine)
from sssn_verify.symbolic import DERIVATIONS, MODULES

COMMITTED = Path(__file__).resolve().parents[1] / "derivations" / FILENAME
NO_TEX = "no TeX engine (pdflatex or lualatex) on PATH: .ci/run installs one (Debian's texlive); locally, install it"


def needs_tex(test):
    """The PDF tests run wherever TeX is installed, and always in CI (where a missing engine fails)."""
    import os
    if os.environ.get("CI"):
        return test
    return pytest.mark.skipif(tex_engine() is None, reason=NO_TEX)(test)


REPORT = {"schema_version": "1.0.0", "mode": "quick", "seed": 0, "passed": True,
          "provenance": {"version": "0.1.0", "date": "2026-12-02T18:00:00+00:00",
                         "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False}},
          "familywise": {"alpha": 0.01, "n_checks": 3},
          "claims": [{"name": "two_point", "passed": True, "estimate": 0.5658, "ci": [0.5562, 0.5753],
                      "expected": 0.5681, "level": 0.999, "checks": [{}, {}, {}]},
                     {"name": "kernel", "passed": False, "estimate": "inf", "ci": None, "expected": -1.5e-7,
                      "level": 0.999, "checks": [{}]}]}


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
    body = re.sub(r"\\begin\{dmath\*\}.*?\\end\{dmath\*\}", "", body, flags=re.S)
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
