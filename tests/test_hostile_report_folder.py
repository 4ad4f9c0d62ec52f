"""A report folder is always one run's whole report (issue 22, item 7): written into a fresh
folder beside --report and swapped in at the end; the previous report is moved aside to
DIR.previous, never mixed with the new one; an interrupted run leaves the previous report as
it was and no staging folder behind."""
import json

import pytest

from sssn_verify.cli import main

ARGS = ["verify", "--quick", "--claim", "kernel", "--explore", "0", "--no-progress"]


def _verify(report, capsys):
    code = main(ARGS + ["--report", str(report)])
    capsys.readouterr()
    return code


def test_rerun_replaces_the_folder_whole(tmp_path, capsys):
    report = tmp_path / "rep"
    assert _verify(report, capsys) in (0, 1)
    first = json.loads((report / "report.json").read_text())
    (report / "stale-figure.png").write_bytes(b"from an older run")
    assert _verify(report, capsys) in (0, 1)
    assert not (report / "stale-figure.png").exists()                 # never mixed
    assert (tmp_path / "rep.previous" / "stale-figure.png").exists()  # moved aside, whole
    assert json.loads((report / "report.json").read_text())["claims"][0]["name"] == first["claims"][0]["name"]
    assert not list(tmp_path.glob(".rep.partial-*"))


def test_interrupted_run_keeps_the_previous_report(tmp_path, capsys, monkeypatch):
    report = tmp_path / "rep"
    assert _verify(report, capsys) in (0, 1)
    before = {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()}
    import sssn_verify.report as report_mod

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(report_mod, "write_report", interrupted)
    assert _verify(report, capsys) == 130
    assert {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()} == before
    assert not list(tmp_path.glob(".rep.partial-*"))
    assert not (tmp_path / "rep.previous").exists()


def test_report_target_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(ARGS + ["--report", str(tmp_path / "f")]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert not list(tmp_path.glob(".f.partial-*"))


def test_report_target_that_is_a_symbolic_link_is_refused_before_work(tmp_path):
    """Second audit of issue 22: --report LINK (a link to a folder) ran the suite, then the swap moved
    the link aside to LINK.previous and put a real folder in its place: the folder the link names got
    nothing.  Refused before any work, as a symbolic link given as a file output is."""
    from sssn_verify.errors import OutputError
    from sssn_verify.outputs import staging_folder
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OutputError, match="is a symbolic link; refusing to replace it"):
        staging_folder(tmp_path / "link")
    assert (tmp_path / "link").is_symlink() and not list(tmp_path.glob(".link.partial-*"))
