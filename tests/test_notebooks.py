"""The notebooks run top to bottom (small sizes), draw readable figures, and no outputs are committed.

Each ``notebooks/*.py`` (jupytext "percent" script, the source of truth) is converted to a
notebook and executed by nbclient in a fresh kernel with ``SSSN_NOTEBOOK_SMALL=1`` (every
simulation shrunk) and a time limit.  The kernel is this interpreter: a kernelspec pointing
at ``sys.executable`` is written to a temporary ``JUPYTER_PATH``, so the test needs no
``python -m ipykernel install`` on a fresh machine and never runs another Python.

Two cells are wrapped around each notebook: the first records every matplotlib Figure
created (a hook on ``Figure.__init__``), the last reports, for every axes that shows data,
whether it has an x label (or categorical tick labels), a y label, a title (own or the
figure's suptitle) and a legend when it carries several labelled artists.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = tuple(sorted(p.stem for p in NOTEBOOK_DIR.glob("*.py")))
KERNEL_NAME = "sssn-notebook-test"
CELL_TIMEOUT = 300  # seconds for one cell (the slowest compiles numba kernels on a cold cache)
TOTAL_BUDGET = 240  # seconds for one notebook, generous against the ~2 min target for all three

HOOK = """\
import matplotlib
import matplotlib.figure as _sssn_mf
_SSSN_FIGURES = []
_sssn_init = _sssn_mf.Figure.__init__
def _sssn_record(self, *args, **kwargs):
    _sssn_init(self, *args, **kwargs)
    _SSSN_FIGURES.append(self)
_sssn_mf.Figure.__init__ = _sssn_record
"""

AUDIT = """\
import json as _sssn_json
def _sssn_audit():
    problems, n_axes = [], 0
    for k, fig in enumerate(_SSSN_FIGURES):
        sup = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
        for ax in fig.axes:
            if getattr(ax, "_colorbar", None) is not None or not ax.get_visible() or not ax.axison:
                continue
            if not (ax.lines or ax.collections or ax.images or ax.patches or ax.containers):
                continue
            n_axes += 1
            name = f"figure {k} axes {ax.get_title() or '?'!r}"
            ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
            categorical = bool(ticks) and any(not t.replace('.', '').replace('-', '').replace('\\u2212', '').isdigit() for t in ticks)
            if not ax.get_xlabel() and not categorical:
                problems.append(f"{name}: no x label")
            if not ax.get_ylabel():
                problems.append(f"{name}: no y label")
            if hasattr(ax, "get_zlabel") and not ax.get_zlabel():
                problems.append(f"{name}: no z label")
            if not ax.get_title() and not sup:
                problems.append(f"{name}: no title")
            labelled = [a for a in ax.get_legend_handles_labels()[1] if not a.startswith("_")]
            if len(labelled) > 1 and ax.get_legend() is None and fig.legends == []:
                problems.append(f"{name}: {len(labelled)} labelled artists but no legend")
    return {"figures": len(_SSSN_FIGURES), "axes": n_axes, "problems": problems}
print("SSSN_AUDIT " + _sssn_json.dumps(_sssn_audit()))
"""


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """A kernelspec for this interpreter in a private JUPYTER_PATH, and the notebook env."""
    from ipykernel.kernelspec import write_kernel_spec
    share = tmp_path_factory.mktemp("jupyter")
    write_kernel_spec(share / "kernels" / KERNEL_NAME,
                      overrides={"display_name": "sssn notebook test", "language": "python"})
    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "SSSN_NOTEBOOK_SMALL", "MPLBACKEND")}
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(share), saved["JUPYTER_PATH"]]))
    os.environ["SSSN_NOTEBOOK_SMALL"] = "1"
    os.environ["MPLBACKEND"] = "Agg"
    yield share
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _load(name: str):
    import jupytext
    return jupytext.read(NOTEBOOK_DIR / f"{name}.py")


def _outputs_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            elif "data" in out and "text/plain" in out["data"]:
                parts.append(out["data"]["text/plain"])
    return "\n".join(parts)


def _execute(nb, tmp_path):
    """Run `nb` (with the figure hook and the audit cell) in a fresh kernel; (seconds, audit)."""
    import nbformat
    from nbclient import NotebookClient

    nb.cells.insert(0, nbformat.v4.new_code_cell(HOOK))
    nb.cells.append(nbformat.v4.new_code_cell(AUDIT))
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()  # CellExecutionError names the failing cell
    seconds = time.perf_counter() - t0
    line = [ln for ln in _outputs_text(nb).splitlines() if ln.startswith("SSSN_AUDIT ")]
    assert line, "the audit cell printed nothing"
    return seconds, json.loads(line[-1][len("SSSN_AUDIT "):])


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_with_readable_figures(name, kernel_env, tmp_path):
    nb = _load(name)
    assert nb.cells and nb.cells[0].cell_type == "markdown", "a notebook opens with its title and purpose"
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "SSSN_NOTEBOOK_SMALL" in source, "every notebook shrinks its simulations for CI"
    seconds, audit = _execute(nb, tmp_path)
    print(f"{name}: executed in {seconds:.1f} s, {audit['figures']} figures, {audit['axes']} axes")
    assert seconds < TOTAL_BUDGET, f"{name} took {seconds:.0f} s in small mode"
    assert audit["figures"] >= 1 and audit["axes"] >= 1, f"{name} drew no figure"
    assert not audit["problems"], "unreadable figures:\n" + "\n".join(audit["problems"])
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_figure_audit_rejects_unlabelled_axes(kernel_env, tmp_path):
    """The audit is not vacuous: a plot without labels, title or legend is reported."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\n"
        "ax.plot([1, 2], label='a'); ax.plot([2, 1], label='b')\n"
        "fig2, ax2 = plt.subplots(); ax2.plot([1, 2]); ax2.set_xlabel('t'); ax2.set_ylabel('y');"
        " ax2.set_title('ok')"))
    _, audit = _execute(nb, tmp_path)
    assert audit["figures"] == 2 and audit["axes"] == 2
    assert sorted(p.split(": ")[1] for p in audit["problems"]) == [
        "2 labelled artists but no legend", "no title", "no x label", "no y label"]


def test_notebook_scripts_are_percent_format_and_pair_as_notebooks():
    import jupytext
    for name in NOTEBOOKS:
        path = NOTEBOOK_DIR / f"{name}.py"
        text = path.read_text()
        assert "# %%" in text, f"{path} is not a jupytext percent script"
        nb = jupytext.read(path)
        assert sum(c.cell_type == "markdown" for c in nb.cells) >= 2
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
        # round trip: percent script -> notebook -> percent script keeps every cell
        again = jupytext.reads(jupytext.writes(nb, fmt="py:percent"), fmt="py:percent")
        assert [c.source for c in again.cells] == [c.source for c in nb.cells]


def test_no_notebook_with_outputs_is_committed():
    try:
        listed = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): nothing committed
        listed = []
    import nbformat
    for rel in listed:
        nb = nbformat.read(ROOT / rel, as_version=4)
        with_outputs = [i for i, c in enumerate(nb.cells)
                        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
        assert not with_outputs, f"{rel} is committed with outputs in cells {with_outputs}; strip them"


def test_notebooks_only_use_the_public_api():
    """Notebooks import sssn_verify and its documented modules, never private names."""
    import re
    for name in NOTEBOOKS:
        text = (NOTEBOOK_DIR / f"{name}.py").read_text()
        for m in re.finditer(r"(?:from|import)\s+(sssn_verify[\w.]*)(?:\s+import\s+\(?([\w ,\n]+)\)?)?", text):
            module, names = m.group(1), m.group(2) or ""
            assert not any(part.startswith("_") for part in module.split(".")), module
            assert not any(n.strip().startswith("_") for n in names.split(",") if n.strip()), \
                f"{name}: private import {names} from {module}"
