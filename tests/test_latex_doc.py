"""The LaTeX document: the committed derivations/ must equal what the code generates."""
import re
from pathlib import Path

import pytest

from sssn_verify.cli import main
from sssn_verify.latex_doc import FILENAME, build_document, ordered_names
from sssn_verify.symbolic import MODULES, DERIVATIONS

COMMITTED = Path(__file__).resolve().parents[1] / "derivations" / FILENAME


@pytest.fixture(scope="module")
def document():
    return build_document()


def test_committed_document_matches_the_code(document):
    assert COMMITTED.exists(), "run: sssn-verify latex --out derivations"
    assert COMMITTED.read_text() == document, "derivations/ is stale: run sssn-verify latex --out derivations"


def test_document_structure(document):
    assert document.startswith("\\documentclass")
    for pkg in ("amsmath", "amssymb", "breqn"):
        assert f"\\usepackage{{{pkg}}}" in document
    assert document.rstrip().endswith("\\end{document}")
    for env in ("dmath*", "itemize", "enumerate", "document"):
        assert document.count(f"\\begin{{{env}}}") == document.count(f"\\end{{{env}}}") > 0
    assert document.count("{") == document.count("}")
    assert len(re.findall(r"\\section\{", document)) == len(ordered_names())


def test_sections_follow_module_order():
    modules = [DERIVATIONS[n].__module__.rsplit(".", 1)[-1] for n in ordered_names()]
    idx = [MODULES.index(m) for m in modules]
    assert idx == sorted(idx) and ordered_names()[:2] == ["kernel", "ito_drift"]


def test_pdf_is_built_when_a_tex_engine_is_installed(tmp_path, document):
    import shutil

    from sssn_verify.latex_doc import write_document
    result = write_document(tmp_path, compile_pdf=True)
    assert Path(result["tex"]).read_text() == document
    if shutil.which("pdflatex") or shutil.which("lualatex"):
        assert result["pdf"] and Path(result["pdf"]).stat().st_size > 10_000, result.get("error")
    else:
        assert result["pdf"] is None and result["engine"] is None


def test_latex_command_writes_the_file(tmp_path, capsys, document):
    assert main(["latex", "--out", str(tmp_path), "--no-pdf"]) == 0
    assert (tmp_path / FILENAME).read_text() == document
    assert str(tmp_path / FILENAME) in capsys.readouterr().out
