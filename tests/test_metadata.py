"""Project metadata: --version, python -m sssn_verify, LICENSE, CITATION.cff, CHANGELOG, README docs, package data."""
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from sssn_verify import __version__
from sssn_verify.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_version_flag_and_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "sssn_verify", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"sssn-verify {__version__}"
    proc = subprocess.run([sys.executable, "-m", "sssn_verify", "derive"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "lyapunov" in proc.stdout


def test_version_has_one_source():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sssn_verify.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_license_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"]["text"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_citation_cites_the_paper_and_the_toolkit_without_invented_authors():
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", cff, re.M) and re.search(r"^type: software$", cff, re.M)
    assert re.search(rf"^version: {re.escape(__version__)}$", cff, re.M)
    assert re.search(r"^license: MIT$", cff, re.M)
    paper = cff[cff.index("references:"):]
    assert 'title: "Stochastic scaling limits and synchronization by noise"' in paper and "year: 2026" in paper
    names = re.findall(r"- name: \"([^\"]+)\"", paper)
    assert names and all("unknown" in n.lower() for n in names)     # honest: no invented names
    assert "\t" not in cff


def test_changelog_and_readme_document_environment_and_cache():
    log = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in log and f"## [{__version__}]" in log
    readme = (ROOT / "README.md").read_text()
    for word in ("SSSN_VERIFY_CACHE", "NUMBA_NUM_THREADS", "NUMBA_CACHE_DIR", "HYPOTHESIS_PROFILE",
                 "~/.cache/sssn_verify", "--version", "python -m sssn_verify", "CITATION.cff",
                 "docs/report.schema.json", "report.html"):
        assert word in readme, word
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = " ".join(project["project"]["dependencies"])
    assert "hypothesis" in runtime and "find" in readme and "--explore" in readme    # stays runtime: explore ships
    assert any(d.startswith("jsonschema>=") for d in project["project"]["optional-dependencies"]["test"])


def test_version_flag_in_process(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert capsys.readouterr().out.strip() == f"sssn-verify {__version__}"


def test_report_schema_is_package_data_found_by_an_installed_copy(tmp_path):
    """Issue 22: report.json's schema ships inside the package (a non-editable install has no docs/):
    one copy, sssn_verify/report.schema.json, which docs/report.schema.json links to; setuptools' build_py
    (the step that fills a wheel) copies it, and that copy alone validates a report's type errors."""
    doc, pkg = ROOT / "docs" / "report.schema.json", ROOT / "sssn_verify" / "report.schema.json"
    assert pkg.is_file() and not pkg.is_symlink() and doc.resolve() == pkg.resolve()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "report.schema.json" in project["tool"]["setuptools"]["package-data"]["sssn_verify"]
    assert any(d.startswith("jsonschema>=") for d in project["project"]["dependencies"])   # used at run time
    res = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "egg_info", "-e",
                          str(tmp_path), "build_py", "-d", str(tmp_path / "lib")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    built = tmp_path / "lib" / "sssn_verify" / "report.schema.json"
    assert built.is_file() and built.read_bytes() == pkg.read_bytes()
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.json").write_text('{"seed": [1, 2], "claims": []}')
    probe = ("import sssn_verify.inputs as i, sssn_verify.latex_doc as L, sys\n"
             "assert i.__file__.startswith(sys.argv[1]), i.__file__\n"
             "try:\n    L.load_report(sys.argv[2])\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    res = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "lib"), str(tmp_path / "rep")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(tmp_path / "lib")})
    assert res.returncode == 0 and res.stdout.startswith("ParameterError") and "schema" in res.stdout, res
