"""What users see of a suite run: a plain-text table, report.json, report.md, report.html, figures.

``write_report(suite, DIR)`` writes report.json (every claim and check, with provenance, in the
format of ``docs/report.schema.json``), report.md and a self-contained report.html with the same
content, every figure as PNG and PDF and the one-page summary; with ``exploration=`` the
exploration's section and figures too.  Every file is written atomically (``outputs``).

More (moved from this docstring): docs/modules.md, ``sssn_verify.report``.
"""
from __future__ import annotations

import base64
import functools
import datetime as _dt
import inspect
import io
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Sequence

from .escape import html as _escape_html
from .tex_mathml import prose_html, tex_mathml
from .escape import markdown as _escape_md
from .outputs import check_folder, write_atomic
from .errors import OutputError
from .stats import CheckResult, _jsonable

SCHEMA_VERSION = "1.3.0"

# distributions whose versions go into the provenance block (None when not installed)
LIBRARIES = ("numpy", "scipy", "sympy", "mpmath", "numba", "matplotlib", "POT", "tqdm", "hypothesis",
             "jsonschema", "dask", "distributed")
# environment variables that change what a run does or where it caches
ENVIRONMENT = ("SSSN_VERIFY_CACHE", "XDG_CACHE_HOME", "NUMBA_NUM_THREADS", "NUMBA_CACHE_DIR",
               "HYPOTHESIS_PROFILE", "MPLBACKEND", "CI")

DERIVED_LABEL = {"sympy": "Derived (sympy)", "stated": "Stated bound (hand-written, not a sympy result)"}


# ---------------------------------------------------------------- formatting helpers
def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _short(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _cell(text: str) -> str:
    """A markdown table cell (pipes escaped)."""
    return str(text).replace("|", "\\|")


def estimate_text(c: CheckResult) -> str:
    if c.ci is not None:
        return f"{_fmt(c.estimate)} [{_fmt(c.ci[0])}, {_fmt(c.ci[1])}]"
    return _fmt(c.estimate)


def power_cell(m) -> str:
    """A minimal detectable relative error as a percentage ('-' when unknown)."""
    return "-" if m is None else f"{100 * float(m):.2g} %"


#: what a claim row's 'detects' figure is (text table, markdown, HTML)
DETECTS_TEXT = ("detects: the power of the check whose estimate the row shows, i.e. the smallest relative error "
                "of the formula it rejects with probability 0.9 at its level (surely for a deterministic "
                "check); '(weakest check)' when the check shown states none and the weakest stated power is "
                "given instead; an absolute figure, marked so, when no check states a relative one (a sign test); "
                "degenerate points (zero variance, vanishing quantities) state none")


def claim_power(r) -> float | None:
    """A claim's headline minimal detectable relative error: that of the check whose estimate the row
    shows, else the weakest stated one (``claims.base.headline_power``; None if no check states one)."""
    from .claims.base import headline_power
    return headline_power(r)[0]


def claim_power_cell(r) -> str:
    """The 'detects' cell of a claim's row: its headline power, marked when it is the weakest check's
    (the check shown states none)."""
    from .claims.base import headline_power
    m, basis, _ = headline_power(r)
    if m is None:
        absolute = absolute_powers(r)
        if absolute:                      # a sign test's power in its own units, never a bare '-'
            return ", ".join(f"{k} {v:.2g}" for k, v in absolute.items()) + " (absolute)"
    return power_cell(m) + (" (weakest check)" if basis == "weakest check" else "")


def absolute_powers(r) -> dict[str, float]:
    """The absolute smallest detectable errors (``min_detectable_<what>`` in its details) of the check a
    claim shows, by what they are of (e.g. {"rate": 0.34}): the power of a sign test or of a quantity
    with no relative scale."""
    shown = [r.headline] if r.checks else []
    return {k[len("min_detectable_"):].replace("_", " "): v for c in shown for k, v in c.details.items()
            if k.startswith("min_detectable_") and isinstance(v, (int, float))}


#: what a claim recorded with ``error`` (``verify.numerical_failure``) means, in words
NUMERICAL_FAILURE_TEXT = ("an internal numerical failure of the toolkit at the claim's own configurations, "
                          "not a verdict on the formula")


def error_text(r) -> str:
    """What a claim recorded with ``error`` (its checker failed numerically) is, in one plain sentence."""
    return (f"not checked ({r.mode} mode, seed {r.seed}): {NUMERICAL_FAILURE_TEXT}; no check finished, the "
            f"claim does not count as passed and Holm judged the other claims' checks. The error: "
            + " ".join(str(r.error).split()))


#: the verdict cell of a claim whose checker failed numerically
ERROR_VERDICT = "NUMERICAL FAILURE"


def power_sentence(r, designed: str | None = None) -> str:
    """The report's 'Power.' paragraph of a claim, as LaTeX prose of ours (the check's name and the
    claim's design statement are): the achieved headline power, which check it is and why, then the
    design statement when the claim declares one (never '-')."""
    from .claims.base import headline_power
    if getattr(r, "error", None):
        return "none achieved: no check finished (an internal numerical failure)" + (
            f". Design: {designed}" if designed else "")
    m, basis, which = headline_power(r)
    if m is None:
        achieved = "no check states a relative power (every check is degenerate, a sign test or has no relative scale)"
        stated = absolute_powers(r)
        if stated:
            achieved += "; the check shown detects, with probability 0.9: " + ", ".join(
                f"{k} {v:.2g}" for k, v in stated.items())
    else:
        achieved = (f"detects a relative error of the formula of {power_cell(m)} (probability "
                    f"{next(c.power for c in r.checks if c.name == which):g} at its level), "
                    + ("the power of the check whose estimate is shown" if basis == "headline check"
                       else "the weakest of the checks that state a power (the check shown states none)")
                    + f": {which}")
    return achieved + (f". Design: {designed}" if designed else "")


def process_seconds() -> float | None:
    """Wall seconds since this process started (start-up included; from /proc, None elsewhere)."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        start = float(stat[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, float(Path("/proc/uptime").read_text().split()[0]) - start)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def timing_rows(suite, exploration=None, report_seconds: float | None = None) -> list[tuple[str, float | None]]:
    """(part, seconds) of the whole command: start-up and other, claims, exploration, report, and
    the total wall time (None where unknown)."""
    wall = process_seconds()
    explore = sum(e.seconds for e in exploration.explorations) if exploration is not None else 0.0
    known = suite.seconds + explore + (report_seconds or 0.0)
    rest = None if wall is None else max(0.0, wall - known)
    return [("start-up, imports, compilation and other", rest), ("claims", suite.seconds),
            ("exploration", explore if exploration is not None else None), ("report (figures, files)", report_seconds),
            ("total (wall time of the command)", wall)]


def _plain(text: str) -> str:
    """LaTeX prose of ours spelt in ASCII for the terminal."""
    from .symbolic.derivation import plain_text
    return plain_text(text)


def _kind(r) -> str:
    return getattr(r, "derived_kind", "sympy") or "sympy"


def table(suite) -> str:
    """Plain-text table: claim, derived result, estimate [CI], expected, verdict, power (the smallest
    relative error of the formula one of its checks rejects with probability 0.9), time."""
    rows = [("claim", "derived result", "estimate [CI]", "expected", "verdict", "detects", "time")]
    for r in suite.results:
        h = r.headline
        derived = r.derived if _kind(r) == "sympy" else f"(stated) {_plain(r.derived)}"
        if getattr(r, "error", None):
            rows.append((r.name, _short(derived, 42), "-", "-", "ERROR", "-", f"{r.seconds:.1f}s"))
            continue
        rows.append((r.name, _short(derived, 42), estimate_text(h), _fmt(h.expected),
                     "PASS" if r.passed else "FAIL", claim_power_cell(r), f"{r.seconds:.1f}s"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    n_pass = sum(r.passed for r in suite.results)
    lines.append("")
    wall = process_seconds()
    lines.append(f"{n_pass}/{len(suite.results)} claims passed in {suite.seconds:.1f}s of claims"
                 + ("" if wall is None else f", {wall:.1f}s wall time so far (start-up included)")
                 + f" (mode {suite.mode}, seed {suite.seed})")
    lines.append(suite.familywise_text)
    lines.append(DETECTS_TEXT)
    for name, why in getattr(suite, "unavailable", {}).items():
        lines.append(f"not run: {name} ({_short(why, 80)})")
    from .escape import terminal
    for r in suite.results:
        if getattr(r, "error", None):
            lines.append(f"ERROR {r.name}: {terminal(error_text(r))}")
    if getattr(suite, "interrupted", None) or any(getattr(r, "error", None) for r in suite.results):
        lines.append(suite.verdict_text)
    return "\n".join(lines)


# ---------------------------------------------------------------- output folder
def check_report_dir(directory) -> Path:
    """The report folder, created if needed; OutputError if it cannot hold the report (the CLI
    calls this before running the suite)."""
    if directory is None or not str(directory).strip():
        raise OutputError("report: empty folder name")
    return check_folder(directory, what="report", create=True)


# ---------------------------------------------------------------- provenance
def git_commit(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """{"commit", "dirty"} of the git work tree holding `path` (the package), None when unknown."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return {"commit": commit.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def _library_versions() -> dict[str, str | None]:
    from importlib import metadata
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _numba_threads() -> dict[str, int | None]:
    try:
        import numba
        return {"configured": int(numba.config.NUMBA_NUM_THREADS), "in_use": int(numba.get_num_threads())}
    except Exception:  # noqa: BLE001 - provenance must not fail the report
        return {"configured": None, "in_use": None}


def provenance(command: Sequence[str] | None = None) -> dict[str, Any]:
    """Who produced a report, with what, when: package version, git commit, libraries, threads,
    command line, date (UTC), platform and the environment variables that matter."""
    from . import __version__
    cmd = list(sys.argv if command is None else command)
    return {
        "package": "sssn_verify",
        "version": __version__,
        "git": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": _library_versions(),
        "numba_threads": _numba_threads(),
        "command_line": " ".join(shlex.quote(str(a)) for a in cmd),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": {k: os.environ.get(k) for k in ENVIRONMENT},
    }


def claim_configuration(name: str) -> dict[str, Any]:
    """The checker's fixed configuration: the upper-case constants of the claim's module
    (parameter grids such as CONFIGS, RHOS, PARAMS), as JSON-ready data."""
    try:
        from .claims import CLAIMS
        claim = CLAIMS[name]
    except (ImportError, KeyError):
        return {}
    module = sys.modules.get(getattr(claim.checker, "__module__", ""), None) or inspect.getmodule(claim.checker)
    out = {}
    for key, value in vars(module).items() if module else ():
        if key.isupper() and not key.startswith("_") and isinstance(value, (int, float, str, tuple, list, dict)):
            out[key] = _jsonable(value)
    return out


# ---------------------------------------------------------------- the JSON document
def report_data(suite, figures: dict[str, list[dict[str, str]]] | None = None,
                summary: dict[str, str] | None = None, command: Sequence[str] | None = None) -> dict[str, Any]:
    """The report.json document (see docs/report.schema.json)."""
    data = suite.to_dict()
    out = {"schema_version": SCHEMA_VERSION, "provenance": provenance(command)}
    out.update(data)
    for c in out["claims"]:
        c.setdefault("derived_kind", "sympy")
        c.setdefault("statistic", "")
        c.setdefault("tolerance", "")
        c.setdefault("power", None)
        c["configuration"] = claim_configuration(c["name"])
    out["figures"] = figures or {}
    out["summary_figure"] = summary
    return _jsonable(out)


def write_report(suite, directory: str | os.PathLike, *, figures: bool = True,
                 command: Sequence[str] | None = None, exploration=None) -> dict[str, Any]:
    """Write report.json, report.md, report.html and the figures (PNG and PDF) into `directory`.

    Returns the paths written (``figures``: the PNGs, ``figures_pdf``: the same as PDF).  `command` is the command line recorded in the provenance
    block (default ``sys.argv``).  `exploration` (``explore.SuiteExploration``) adds its figures
    (:func:`exploration_figures`, unless already drawn), its section to report.md and report.html
    and its data to report.json.
    """
    import time
    started = time.perf_counter()
    out = check_report_dir(directory)
    figs: dict[str, list[dict[str, str]]] = {}
    summary = None
    images: dict[str, bytes] = {}
    if figures:
        figs, summary, images = _figures(suite, out)
    if exploration is not None and figures and not exploration.figure_files:
        exploration.figures = exploration_figures(exploration, out)
    data = report_data(suite, figs, summary, command)
    if exploration is not None:
        data["exploration"] = exploration.to_dict()
    paths: dict[str, Any] = {"json": str(out / "report.json"), "md": str(out / "report.md"),
                             "html": str(out / "report.html")}
    write_atomic(out / "report.json", json.dumps(data, indent=2, allow_nan=False) + "\n")
    write_atomic(out / "report.md", markdown(suite, figs, data=data, exploration=exploration))
    timing = timing_rows(suite, exploration, time.perf_counter() - started)
    write_atomic(out / "report.html", html_report(suite, figs, images, data=data, exploration=exploration,
                                                  timing=timing))
    if figures:
        paths["figures"] = sorted(str(out / f["png"]) for v in figs.values() for f in v)
        paths["figures_pdf"] = sorted(str(out / f["pdf"]) for v in figs.values() for f in v)
        if summary:
            paths["summary"] = [str(out / summary["png"]), str(out / summary["pdf"])]
    return paths


# ---------------------------------------------------------------- markdown
def _derived_md(r) -> str:
    """The derived result in report.md: display maths ($$...$$, sympy's LaTeX with its left-hand
    side, as the appendix prints it) when the claim checks a derivation, else its text."""
    if not r.derived:
        return "**Derived.** (no sympy result)"
    der = _claim_derivation(r.name)
    if der is not None:
        return f"**{DERIVED_LABEL[_kind(r)]}.**\n\n" + "\n\n".join(f"$$\n{f}\n$$" for f in _result_tex(der))
    if _kind(r) == "stated":                  # a claim's stated bound: LaTeX prose of ours, $...$ kept
        return f"**{DERIVED_LABEL['stated']}.** {r.derived}"
    return f"**{DERIVED_LABEL[_kind(r)]}.** {_escape_md(r.derived)}"


def _md_result_cell(r) -> str:
    """The claims table's result cell in report.md: the left-hand sides of the derived result (the
    formulas are below), else the stated text, escaped."""
    der = _claim_derivation(r.name)
    if der is None and _kind(r) == "stated":
        return _cell(r.derived)
    if der is None:
        return _cell(_escape_md(_short(r.derived, 60))) if r.derived else "-"
    lhs = der.lhs if isinstance(der.lhs, tuple) else (der.lhs,)
    if all(x is not None for x in lhs):
        return ", ".join(f"${x.rstrip(' =')}$" for x in lhs) + " (below)"
    return "see below"


def _result_tex(der) -> list[str]:
    """LaTeX of each formula of a derivation's result (no environment)."""
    from .symbolic.derivation import tex
    return [f if isinstance(f, str) else tex(f) for f in der.result_formulas()]


def markdown(suite, figs: dict[str, list] | None = None, *, data: dict | None = None, exploration=None) -> str:
    figs = figs or {}
    data = data or report_data(suite, figs)
    prov = data["provenance"]
    git = prov["git"]
    commit = git["commit"] or "unknown (not a git work tree)"
    if git.get("dirty"):
        commit += " (with uncommitted changes)"
    lines = [f"# sssn_verify report ({suite.mode} mode, seed {suite.seed})", "",
             f"**Verdict: {_escape_md(suite.verdict_text)}** "
             f"in {suite.seconds:.1f} s of claims.", "", suite.familywise_text + ".", "",
             "## Provenance", "",
             f"sssn_verify {prov['version']}, git commit {commit}; Python {prov['python']} on "
             f"{prov['platform']}; numba threads {prov['numba_threads']['in_use']} "
             f"(configured {prov['numba_threads']['configured']}); {prov['date']}.", "",
             f"Command line: {_escape_md(prov['command_line'])}", "",          # user text: escaped, no code span
             "Libraries: " + ", ".join(f"{k} {v}" for k, v in prov["libraries"].items() if v) + ".", "",
             f"Report format: schema version {data['schema_version']} (`docs/report.schema.json`).", ""]
    if data.get("summary_figure"):
        lines += ["## Summary", "", f"![every check, standardized]({data['summary_figure']['png']})", ""]
    lines += ["## Claims", "",
              "| claim | result | estimate [CI] | expected | verdict | detects | time |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in suite.results:
        h = r.headline
        lab = "" if _kind(r) == "sympy" else "(stated) "
        if getattr(r, "error", None):
            lines.append(f"| {r.name} | {lab}{_md_result_cell(r)} | - | - | **{ERROR_VERDICT}** "
                         f"(internal, not a verdict; below) | - | {r.seconds:.1f}s |")
            continue
        lines.append(f"| {r.name} | {lab}{_md_result_cell(r)} | {estimate_text(h)} | "
                     f"{_fmt(h.expected)} | {'PASS' if r.passed else 'FAIL'} | {claim_power_cell(r)} | "
                     f"{r.seconds:.1f}s |")
    lines += ["", f"*detects*: {DETECTS_TEXT[len('detects: '):]}."]
    for name, why in getattr(suite, "unavailable", {}).items():
        lines.append(f"\nNot run: `{name}` ({why}).")
    by_name = {c["name"]: c for c in data["claims"]}
    for r in suite.results:
        c = by_name.get(r.name, {})
        lines += ["", f"## {r.name}: {r.title}", "", f"**Statement.** {r.statement}", "",
                  *([f"**{ERROR_VERDICT}: {_cell(_escape_md(error_text(r)))}**", ""]
                    if getattr(r, "error", None) else []),
                  _derived_md(r), "",
                  f"**Statistic.** {c.get('statistic') or '-'}", "",
                  f"**Tolerance policy.** {c.get('tolerance') or '-'}", "",
                  f"**Power.** {power_sentence(r, (c.get('power') or {}).get('designed'))}", "",
                  f"Confidence level of each check {r.level}; budget:", ""] + kv_table_md(r.budget or {}) + [""]
        if c.get("configuration"):
            lines += ["Checker configuration:", ""] + kv_table_md(c["configuration"]) + [""]
        if getattr(r, "error", None):
            lines += ["No check finished: the checker failed numerically (see above)."]
            continue
        lines += ["| check | estimate [CI] | expected | tol | p-value | Holm p | n | seed | method | verdict | detects |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for chk in r.checks:
            p = "-" if chk.pvalue is None else _fmt(chk.pvalue, 3)
            hp = chk.details.get("holm_adjusted_p")
            lines.append(f"| {_cell(chk.name)} | {estimate_text(chk)} | {_fmt(chk.expected)} | "
                         f"{_fmt(chk.tolerance, 3)} | {p} | {'-' if hp is None else _fmt(hp, 3)} | {chk.n} | "
                         f"{chk.seed if chk.seed is not None else '-'} | {_cell(chk.method)} | "
                         f"{'PASS' if chk.passed else 'FAIL'} | {power_cell(chk.min_detectable)} |")
        for caption, text in _tables(r):
            lines += ["", caption, "", text]
        for f in figs.get(r.name, []):
            lines += ["", f"![{_escape_md(_plain(f['title']))}]({f['png']}) ([PDF]({f['pdf']}))"]
    if exploration_worth_showing(exploration):
        lines.append(exploration_markdown(exploration))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- HTML (one self-contained file)
_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:72rem;
margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:0.8rem 0;font-size:0.88rem}
th,td{border:1px solid #ccc;padding:0.25rem 0.5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}code{font-size:0.9em;background:#f6f6f6;padding:0 0.2em;word-break:break-word}
.pass{color:#0a6b2d;font-weight:600}.fail{color:#b00020;font-weight:600}
.error{color:#8a4b00;font-weight:600}p.error{font-weight:normal;color:#222;background:#fff3e0;border-left:4px solid #e08a00;padding:0.4rem 0.6rem}
figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:0.85rem;color:#555}
dl{display:grid;grid-template-columns:max-content auto;gap:0.2rem 1rem}dt{font-weight:600}dd{margin:0}
math{font-size:1.05em}.result{margin:0.6rem 0;overflow-x:auto;overflow-y:hidden}table.kv caption{text-align:left;font-weight:600;
padding:0.2rem 0}.lhs{white-space:nowrap}"""


def _tables(r):
    """(caption, markdown table) of the checks that carry a ``details["table"]`` with a ``text``
    (e.g. commuting_limits' L x m error table and its fitted surface)."""
    for chk in r.checks:
        t = chk.details.get("table") if isinstance(chk.details, dict) else None
        if not isinstance(t, dict) or "text" not in t:
            continue
        sf = t.get("surface") or {}
        from .latex_doc import number_math as n
        fit = (f" Fitted {sf['form']}: $a = {n(sf['a'])} \\pm {n(sf['a_stderr'])}$, "
               f"$b = {n(sf['b'])} \\pm {n(sf['b_stderr'])}$, $\\chi^2/\\mathrm{{dof}} = {n(sf['chi2_per_dof'])}$, "
               f"relative RMS residual ${n(sf['relative_rms_residual'])}$." if sf else "")
        # LaTeX prose (the caption: MathML in report.html, $...$ in report.md)
        yield (f"Error table ({t.get('reference', '')}; entry {t.get('entry', '')}).{fit}", t["text"])


def _e(x) -> str:
    return _escape_html(x)


def _sentence_html(text: str) -> str:
    """A plain-text sentence of ours (the verdict, the family-wise line) as HTML: escaped, its ASCII
    comparisons set as the signs they stand for (the terminal keeps <=)."""
    return _e(text).replace("&lt;=", "≤").replace("&gt;=", "≥")


# ---------------------------------------------------------------- mathematics and tables in HTML
# an exploration is worth a section and a picture from this many examples of one claim on
MIN_EXPLORATION_POINTS = 8
_LONG_RESULT = 70          # characters of sympy text above which the claims table shows only the lhs


@functools.lru_cache(maxsize=None)
def _claim_derivation(name: str):
    """The derivation a claim checks (the ReLU kernel for ``kernel``), or None."""
    try:
        from .claims import CLAIMS
        from .symbolic import derive
        claim = CLAIMS[name]
        if claim.derivation is None or getattr(claim, "derived_kind", "sympy") != "sympy":
            return None
        return derive(claim.derivation)
    except Exception:  # noqa: BLE001 - a report must not fail on a derivation
        return None


def result_html(r, *, short: bool = False) -> str:
    """The derived result of claim result `r` as MathML (every formula with its left-hand side);
    `short`: for the claims table, only the left-hand sides when the result is long.  A stated
    bound (not derived) is its hand-written text, marked as such."""
    der = _claim_derivation(r.name)
    if der is None:
        text = r.derived or "no derived result"
        if _kind(r) == "sympy":
            return _e(text)
        if short and len(text) > _LONG_RESULT:
            return f'<em>stated bound</em> (<a href="#{_e(r.name)}">below</a>)'
        return f"<em>stated:</em> {prose_html(text)}"                 # a stated bound: LaTeX prose of ours
    from .symbolic.derivation import mathml, result_mathml
    import sympy as sp
    if short and len(sp.sstr(der.result)) > _LONG_RESULT:
        lhs = der.lhs if isinstance(der.lhs, tuple) else (der.lhs,)
        if all(x is not None for x in lhs):
            return ('<span class="lhs">' + ", ".join(mathml(None, lhs=x) for x in lhs)
                    + f' (<a href="#{_e(r.name)}">below</a>)</span>')
        return f'<a href="#{_e(r.name)}">see below</a>'
    return "".join(result_mathml(der, display=not short))


def _value_text(v) -> str:
    """A budget or configuration value in words: numbers formatted, lists comma-separated,
    tuples of a list in parentheses, mappings as 'key value'; no JSON."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return _fmt(v, 6)
    if isinstance(v, dict):
        return "; ".join(f"{_words(k)} {_value_text(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, (list, tuple)) for x in v):
            return "; ".join("(" + ", ".join(_value_text(y) for y in x) + ")" for x in v)
        return ", ".join(_value_text(x) for x in v)
    return str(v)


def _words(key) -> str:
    return str(key).replace("_", " ").lower()


def _range_html(k, v) -> str:
    """A declared range of parameter `k` in HTML: (0.5, 1.25) of sigma_w as the mathematics
    sigma_w in [0.5, 1.25] (a point as sigma_w = 0.5); names (activations) as words; a deep block's stacks
    (``hidden``, "; " inside a stack) in parentheses."""
    if k == "hidden":
        v = [x if x == "none" else f"({x})" for x in v]
    if all(isinstance(x, str) for x in v):
        return f"{_e(_words(k))} " + (f"one of {_e(', '.join(v))}" if len(v) > 1 else _e(v[0]))
    if k in _PARAM_TEX:
        return tex_mathml(f"{_PARAM_TEX[k]} = {v[0]:g}" if v[0] == v[1]
                          else f"{_PARAM_TEX[k]} \\in [{v[0]:g}, {v[1]:g}]")
    return _e(f"{_words(k)} = {v[0]:g}" if v[0] == v[1] else f"{_words(k)} in [{v[0]:g}, {v[1]:g}]")


def _value_html(v) -> str:
    """A budget or configuration value in HTML: :func:`_value_text`, with a mapping of parameter
    ranges (a checker's domain) as mathematics and a text (a check's evidence, LaTeX prose) as prose."""
    if isinstance(v, str):
        return prose_html(v)
    def declared(x):                   # names, or a (low, high) pair of numbers
        return isinstance(x, (list, tuple)) and x and (all(isinstance(y, str) for y in x) or len(x) == 2 and all(
            isinstance(y, (int, float)) and not isinstance(y, bool) for y in x))
    if isinstance(v, dict) and v and all(declared(x) for x in v.values()):
        return "; ".join(_range_html(k, x) for k, x in v.items())
    return _inner_html(v)


def _inner_html(v) -> str:
    """:func:`_value_text` in HTML, with numbers in exponent form (1e-09) as mathematics (1 x 10^-9) and
    known parameters of a mapping as their symbols (sigma_w = 1); other strings as words."""
    from .latex_doc import number_math
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    if number:
        text = _fmt(v, 6)
        return tex_mathml(number_math(v)) if ("e" in text or "inf" in text) else _e(text)
    if isinstance(v, dict):
        return "; ".join(tex_mathml(f"{_PARAM_TEX[k]} = {number_math(x)}")
                         if k in _PARAM_TEX and isinstance(x, (int, float)) and not isinstance(x, bool)
                         else f"{_e(_words(k))} {_inner_html(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, (list, tuple)) for x in v):
            return "; ".join("(" + ", ".join(_inner_html(y) for y in x) + ")" for x in v)
        return ", ".join(_inner_html(x) for x in v)
    return _e(_value_text(v))


def kv_table_html(data: dict, caption: str) -> str:
    """A mapping (a claim's budget or its checker configuration) as a two-column table."""
    rows = "".join(f"<tr><td>{_e(_words(k))}</td><td>{_value_html(v)}</td></tr>" for k, v in data.items())
    return (f'<table class="kv"><caption>{_e(caption)}</caption><tr><th>entry</th><th>value</th></tr>'
            f"{rows}</table>")


def kv_table_md(data: dict) -> list[str]:
    return ["| entry | value |", "| --- | --- |"] + [f"| {_cell(_words(k))} | {_cell(_value_text(v))} |"
                                                    for k, v in data.items()]


def exploration_worth_showing(res) -> bool:
    """An exploration gets its section when some claim was explored at MIN_EXPLORATION_POINTS or more, or
    some explored point failed to run (its parameters and reason are always shown)."""
    return res is not None and any(len(e.examples) >= MIN_EXPLORATION_POINTS or getattr(e, "errors", None)
                                   for e in res.explorations)


def _wall_text(timing) -> str:
    total = dict(timing or []).get("total (wall time of the command)")
    return "" if total is None else f" in {total:.1f} s (wall time of the whole command; split below)"


def _verdict_html(ok: bool) -> str:
    return '<span class="pass">PASS</span>' if ok else '<span class="fail">FAIL</span>'


def _img(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def html_report(suite, figs: dict[str, list] | None = None, images: dict[str, bytes] | None = None, *,
                data: dict | None = None, exploration=None, timing=None) -> str:
    """The report as one HTML file (inline CSS, figures embedded as base64 PNG)."""
    figs, images = figs or {}, images or {}
    data = data or report_data(suite, figs)
    prov = data["provenance"]
    h: list[str] = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                    f"<title>sssn_verify report ({_e(suite.mode)} mode, seed {_e(suite.seed)})</title>",
                    f"<style>{_CSS}</style></head><body>",
                    f"<h1>sssn_verify report ({_e(suite.mode)} mode, seed {_e(suite.seed)})</h1>",
                    f"<p><strong>Verdict: {_sentence_html(suite.verdict_text)}"
                    f"</strong>{_wall_text(timing)}. {_sentence_html(suite.familywise_text)}.</p>"]
    if timing:
        h.append('<table class="kv"><caption>Time</caption><tr><th>part</th><th>seconds</th></tr>'
                 + "".join(f"<tr><td>{_e(k)}</td><td>{'-' if v is None else f'{v:.1f}'}</td></tr>" for k, v in timing)
                 + "</table>")
    h.append("<h2>Provenance</h2><dl>")
    git = prov["git"]
    rows = [("package", f"sssn_verify {prov['version']}"),
            ("git commit", (git["commit"] or "unknown (not a git work tree)")
             + (" (with uncommitted changes)" if git.get("dirty") else "")),
            ("date (UTC)", prov["date"]), ("command line", prov["command_line"]),
            ("Python", f"{prov['python']} on {prov['platform']}"),
            ("numba threads", f"{prov['numba_threads']['in_use']} (configured "
                              f"{prov['numba_threads']['configured']})"),
            ("libraries", ", ".join(f"{k} {v}" for k, v in prov["libraries"].items() if v)),
            ("environment", ", ".join(f"{k}={v}" for k, v in prov["environment"].items() if v is not None)
             or "(none set)"),
            ("report format", f"schema version {data['schema_version']} (docs/report.schema.json)")]
    h += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows] + ["</dl>"]
    if data.get("summary_figure"):
        s = data["summary_figure"]
        h += ["<h2>Summary</h2><figure>", _img(images.get(s["png"]), "summary of every check"),
              f"<figcaption>{_e(s['title'])} (also as {_e(s['pdf'])})</figcaption></figure>"]
    h += ['<h2 id="claims">Claims</h2><table><tr><th>claim</th><th>result</th><th>estimate [CI]</th>'
          "<th>expected</th><th>verdict</th><th>detects</th><th>time</th></tr>"]
    for r in suite.results:
        hd = r.headline
        lab = "" if _kind(r) == "sympy" else "(stated) "
        if getattr(r, "error", None):
            h.append(f'<tr><td><a href="#{_e(r.name)}">{_e(r.name)}</a></td><td>{result_html(r, short=True)}</td>'
                     f'<td>-</td><td>-</td><td><span class="error">{ERROR_VERDICT}</span> '
                     f'(<a href="#{_e(r.name)}">internal, not a verdict</a>)</td><td>-</td>'
                     f"<td>{r.seconds:.1f} s</td></tr>")
            continue
        h.append(f'<tr><td><a href="#{_e(r.name)}">{_e(r.name)}</a></td><td>{result_html(r, short=True)}</td>'
                 f"<td>{_e(estimate_text(hd))}</td>"
                 f"<td>{_e(_fmt(hd.expected))}</td><td>{_verdict_html(r.passed)}</td>"
                 f"<td>{_e(claim_power_cell(r))}</td><td>{r.seconds:.1f} s</td></tr>")
    h.append("</table>")
    h.append(f"<p><em>detects</em>: {_e(DETECTS_TEXT[len('detects: '):])}.</p>")
    for name, why in getattr(suite, "unavailable", {}).items():
        h.append(f"<p>Not run: <code>{_e(name)}</code> ({_e(why)}).</p>")
    by_name = {c["name"]: c for c in data["claims"]}
    for r in suite.results:
        c = by_name.get(r.name, {})
        h += [f'<h2 id="{_e(r.name)}">{_e(r.name)}: {prose_html(r.title)}</h2>',
              *([f'<p class="error"><strong>{ERROR_VERDICT}:</strong> {_e(error_text(r))}</p>']
                if getattr(r, "error", None) else []),
              f"<p><strong>Statement.</strong> {prose_html(r.statement)}</p>",
              (f"<div class=\"result\"><strong>{'Derived result' if _kind(r) == 'sympy' else 'Stated bound'}."
               f"</strong> {result_html(r)}</div>"),
              f"<p><strong>Statistic.</strong> {prose_html(c.get('statistic') or '-')}</p>",
              f"<p><strong>Tolerance policy.</strong> {prose_html(c.get('tolerance') or '-')}</p>",
              f"<p><strong>Power.</strong> {prose_html(power_sentence(r, (c.get('power') or {}).get('designed')))}</p>",
              f"<p>Confidence level of each check {_e(r.level)}.</p>"]
        if r.budget:
            h.append(kv_table_html(r.budget, f"Budget ({suite.mode} mode): samples, paths and sizes of the checks"))
        if c.get("configuration"):
            h.append(kv_table_html(c["configuration"], "Checker configuration: the fixed parameter grids of the checks"))
        if getattr(r, "error", None):
            h.append('<p class="error">No check finished: the checker failed numerically (see above).</p>')
            continue
        h.append("<table><tr><th>check</th><th>estimate [CI]</th><th>expected</th><th>tol</th><th>p-value</th>"
                 "<th>Holm p</th><th>n</th><th>seed</th><th>method</th><th>verdict</th><th>detects</th></tr>")
        for chk in r.checks:
            hp = chk.details.get("holm_adjusted_p")
            h.append(f"<tr><td>{prose_html(chk.name)}</td><td>{_e(estimate_text(chk))}</td><td>{_e(_fmt(chk.expected))}</td>"
                     f"<td>{_e(_fmt(chk.tolerance, 3))}</td>"
                     f"<td>{'-' if chk.pvalue is None else _e(_fmt(chk.pvalue, 3))}</td>"
                     f"<td>{'-' if hp is None else _e(_fmt(hp, 3))}</td><td>{chk.n}</td>"
                     f"<td>{'-' if chk.seed is None else chk.seed}</td><td>{prose_html(chk.method)}</td>"
                     f"<td>{_verdict_html(chk.passed)}</td><td>{_e(power_cell(chk.min_detectable))}</td></tr>")
        h.append("</table>")
        for caption, text in _tables(r):
            h += [f"<p>{prose_html(caption)}</p>", f"<pre>{_e(text)}</pre>"]
        for f in figs.get(r.name, []):
            h += ["<figure>", _img(images.get(f["png"]), _plain(f["title"])),
                  f"<figcaption>{prose_html(f['title'])} (also as {_e(f['pdf'])})</figcaption></figure>"]
    if exploration_worth_showing(exploration):
        h.append(exploration_html(exploration))
    elif exploration is not None:
        h.append(f"<p>Exploration: at most {max((len(e.examples) for e in exploration.explorations), default=0)} "
                 f"examples per claim, fewer than {MIN_EXPLORATION_POINTS}: no section (data in report.json).</p>")
    h.append("</body></html>")
    return "\n".join(h) + "\n"


# ---------------------------------------------------------------- figures
def _text(s: str) -> str:
    """Plain text for a matplotlib title/label (a lone $ would start mathtext)."""
    return str(s).replace("$", r"\$")


@functools.lru_cache(maxsize=None)
def _mathtext_reads(src: str) -> bool:
    from matplotlib.mathtext import MathTextParser
    try:
        MathTextParser("agg").parse(f"${src}$", dpi=72)
        return True
    except ValueError:
        return False


def plot_prose(text: str, width: int | None = None) -> str:
    """LaTeX prose of ours for a matplotlib title or label: each $...$ span as mathtext when matplotlib
    reads it (else spelt in ASCII), the words as plain text; wrapped at `width` characters, never
    inside a formula."""
    from .tex_mathml import prose_spans
    out = []
    for kind, part in prose_spans(text):
        if kind == "math" and _mathtext_reads(part):
            out.append("$" + part.replace(" ", "\N{NO-BREAK SPACE}") + "$")   # one word for textwrap
        else:
            out.append(_text(_plain(f"${part}$") if kind == "math" else part))
    joined = "".join(out)
    lines = textwrap.wrap(joined, width, break_long_words=False, break_on_hyphens=False) if width else [joined]
    return "\n".join(line.replace("\N{NO-BREAK SPACE}", " ") for line in lines)


_PARAM_TEX = {"rho": r"\rho", "beta": r"\beta", "sb": r"\sigma_b", "sw": r"\sigma_w", "sa": r"\sigma_a",
              "sigma_b": r"\sigma_b", "sigma_w": r"\sigma_w", "sigma_a": r"\sigma_a",
              "d": "d", "N": "N", "L": "L", "m": "m", "T": "T", "t": "t", "n_tokens": "N", "horizon": "T"}


def tick_label(text: str) -> str:
    """A configuration label for a tick: 'b relu d=3 rho=-0.5' -> 'b relu $d=3$ $\\rho=-0.5$' (mathtext)."""
    def math(m):
        return f"${_PARAM_TEX[m.group(1)]}={m.group(2)}$"
    return re.sub(r"(?<![\w$])(" + "|".join(_PARAM_TEX) + r")=(-?[0-9][0-9.e+-]*)", math, _text(text))


def _save(fig, out: Path, stem: str, images: dict[str, bytes]) -> dict[str, str]:
    names = {"png": f"{stem}.png", "pdf": f"{stem}.pdf"}
    for fmt, name in names.items():
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=130 if fmt == "png" else None, bbox_inches="tight",
                    metadata={"CreationDate": None} if fmt == "pdf" else None)
        raw = buf.getvalue()
        write_atomic(out / name, raw)
        if fmt == "png":
            images[name] = raw
    return names


def _check_figure(plt, np, name: str, title: str, c: CheckResult, spec: dict):
    kind = spec.get("kind")
    if kind not in ("loglog", "decay", "estimates"):
        return None
    if kind == "estimates":
        fig, (ax, res_ax) = plt.subplots(1, 2, figsize=(10.0, 4.6))
    else:
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
    if kind == "loglog":
        x, y = np.asarray(spec["x"], float), np.asarray(spec["y"], float)
        err = np.asarray(spec.get("stderr", np.zeros_like(y)), float)
        ax.errorbar(x, y, yerr=2 * err, fmt="o", label=r"measured ($\pm 2$ s.e.)")
        xx = np.geomspace(x.min(), x.max(), 50)
        ci = "" if c.ci is None else f" [{c.ci[0]:.2f}, {c.ci[1]:.2f}]"
        ax.plot(xx, np.exp(spec["intercept"]) * xx ** spec["slope"], label=f"fit: slope {spec['slope']:.2f}{ci}")
        if spec.get("bound") is not None:
            b = np.asarray(spec["bound"], float)
            ax.plot(x, b * y[0] / b[0], "--", label=f"bound shape {spec.get('bound_label', '')}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(spec.get("xlabel", "$x$"))
        ax.set_ylabel(spec.get("ylabel", "error"))
    elif kind == "decay":
        t, m = np.asarray(spec["t"], float), np.asarray(spec["mean"], float)
        se = np.asarray(spec.get("stderr", np.zeros_like(m)), float)
        ax.plot(t, m, label=r"$\mathbb{E}[E_\beta(\mu_t)]$ (Monte Carlo)")
        ax.fill_between(t, m - 2 * se, m + 2 * se, alpha=0.3, label=r"$\pm 2$ s.e.")
        ax.plot(t, np.asarray(spec["bound"], float), "--",
                label=r"bound $e^{(\bar\lambda + C_{\mathrm{att}})t}\,\mathbb{E}[E_\beta(\mu_0)]$")
        ax.set_yscale("log")
        ax.set_xlabel("time $t$")
        ax.set_ylabel(spec.get("ylabel", "energy"))
    else:
        labels = list(spec["labels"])
        pos = np.arange(len(labels))
        ax.errorbar(pos, spec["estimate"], yerr=2 * np.asarray(spec["stderr"], float), fmt="o",
                    label=r"Monte Carlo ($\pm 2$ s.e.)")
        ax.plot(pos, spec["expected"], "x", markersize=10, label="derived formula")
        ax.axhline(0.0, color="grey", lw=0.5)
        ax.set_xticks(pos, [tick_label(s) for s in labels], rotation=30, ha="right", fontsize=7)
        ax.set_xlabel("configuration")
        ax.set_ylabel(spec.get("ylabel", "value"))
        # the test itself: residuals in standard errors against the acceptance band of the check's level
        from statistics import NormalDist
        se = np.asarray(spec["stderr"], float)
        z = (np.asarray(spec["estimate"], float) - np.asarray(spec["expected"], float)) / np.where(se > 0, se, np.nan)
        level = float(c.level) if c.level is not None else 0.999
        band = NormalDist().inv_cdf(0.5 + level / 2)
        res_ax.axhspan(-band, band, color="#cfe3f6", lw=0, label=f"acceptance band ($\\pm{band:.2f}$, level {level:g})")
        res_ax.axhline(0.0, color="k", lw=0.8)
        res_ax.plot(pos, z, "o", color="#0a6b2d" if c.passed else "#b00020", label="residual / s.e.")
        res_ax.set_xticks(pos, [tick_label(s) for s in labels], rotation=30, ha="right", fontsize=7)
        res_ax.set_ylabel(r"$(\hat\theta - \theta_{\mathrm{derived}})\,/\,\mathrm{s.e.}$")
        res_ax.set_xlabel("configuration")
        res_ax.set_title("the test: residuals in standard errors against the acceptance band", fontsize=8)
        res_ax.legend(fontsize=7)
    title = plot_prose(f"{name}: {title}", 90) + "\n" + plot_prose(f"check: {c.name}", 90)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def standardized_rows(suite) -> list[dict[str, Any]]:
    """Every check as (estimate - expected)/scale with its interval on the same scale.

    scale = the standard error for a statistical check, the tolerance for a deterministic one;
    the band ``+-tolerance/scale`` is the allowance the check grants.  Checks without a finite
    estimate and expected value (e.g. k1 = +inf exactly) are listed with ``z = None``.
    """
    rows = []
    for r in suite.results:
        for c in r.checks:
            row = {"claim": r.name, "check": c.name, "passed": bool(c.passed), "z": None, "lo": None, "hi": None,
                   "band": None, "scale": None, "alternative": getattr(c, "alternative", "two-sided")}
            try:
                est, exp = float(c.estimate), float(c.expected)
            except (TypeError, ValueError):
                rows.append(row)
                continue
            if not (math.isfinite(est) and math.isfinite(exp)):
                rows.append(row)
                continue
            se = float(c.stderr) if c.stderr is not None and math.isfinite(float(c.stderr)) else 0.0
            tol = float(c.tolerance or 0.0)
            if se > 0:
                scale, row["scale"] = se, "s.e."
            elif tol > 0:
                scale, row["scale"] = tol, "tolerance"
            else:   # exact comparison: on the axis when equal, off the scale otherwise
                scale, row["scale"] = 1.0, "exact"
            row["z"] = (est - exp) / scale if row["scale"] != "exact" or est == exp else math.copysign(math.inf, est - exp)
            if c.ci is not None and se > 0:
                row["lo"], row["hi"] = (float(c.ci[0]) - exp) / scale, (float(c.ci[1]) - exp) / scale
            row["band"] = tol / scale if tol > 0 else 0.0
            rows.append(row)
    return rows


def _summary_figure(plt, np, suite):
    rows = standardized_rows(suite)
    if not rows:
        return None
    labels = [plot_prose(f"{r['claim']}: {r['check']}", 84)      # whole, wrapped
              + ("" if r["scale"] in (None, "s.e.") else f" [per {r['scale']}]")
              + ("" if r["alternative"] == "two-sided" else " [one-sided]") for r in rows]
    # each row as tall as its label (its lines plus half a line of space), so no label reaches its neighbour's:
    # y in lines from the bottom, the font from the lines an A4 page holds; taller only below 4.5 pt, and
    # shorter than the page when the rows fill less of it at 8 pt (a report of one claim is not a page of space)
    blocks = np.array([label.count("\n") + 1.5 for label in labels])
    total = float(blocks.sum())
    ys = total - (np.cumsum(blocks) - blocks / 2)
    plot_pt = 0.86 * 11.69 * 72 - 90                       # the axes' height on an A4 page, in points
    fs = max(min(8.0, plot_pt / total / 1.2), 4.5)
    height = max(3.2, (total * 1.2 * fs + 90) / (0.86 * 72))   # 11.69 (A4) whenever 4.5 <= fs < 8
    fig, ax = plt.subplots(figsize=(8.27, height))
    lim = 8.0
    for y, row in zip(ys, rows):
        color = "#0a6b2d" if row["passed"] else "#b00020"
        if row["z"] is None:
            ax.text(0, y, "no finite deviation (exact or infinite value)", ha="center", va="center",
                    fontsize=fs, color=color)
            continue
        if row["band"]:
            b = min(row["band"], lim)
            ax.fill_between([-b, b], y - 0.35, y + 0.35, color="#cfe3f6", lw=0)
        if row["lo"] is not None:                       # the interval clipped to the axes at both ends
            lo, hi = (min(max(v, -lim), lim) for v in (row["lo"], row["hi"]))
            ax.plot([lo, hi], [y, y], color=color, lw=1.2)
            if row["alternative"] != "two-sided":       # a one-sided interval: its bound, and an arrow
                bound, end = (lo, hi) if row["hi"] > lim else (hi, lo)
                if abs(bound) < lim:                    # a bound beyond the axes: the clipped marker says it
                    ax.plot([bound, bound], [y - 0.3, y + 0.3], color=color, lw=1.6)
                if end != bound:
                    ax.annotate("", xy=(end, y), xytext=(bound, y),
                                arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2})
        z = max(-lim, min(lim, row["z"]))
        ax.plot([z], [y], marker="o" if abs(row["z"]) <= lim else (">" if row["z"] > 0 else "<"),
                color=color, ms=4)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_yticks(ys, labels, fontsize=fs)
    ax.set_ylabel("check (claim: check name)", fontsize=8)
    ax.set_ylim(0.0, total)
    ax.set_xlim(-lim - 0.5, lim + 0.5)
    ax.set_xlabel(r"standardized deviation $(\hat\theta - \theta_{\mathrm{derived}})\,/\,\mathrm{s.e.}$" "\n"
                  r"(deterministic checks: divided by the tolerance)" "\n"
                  "line: confidence interval; bar and arrow: one-sided bound;\nshaded: tolerance allowance",
                  fontsize=8)
    n_pass = sum(r.passed for r in suite.results)
    n_err = sum(bool(getattr(r, "error", None)) for r in suite.results)
    ax.set_title(f"sssn_verify {suite.mode} mode, seed {suite.seed}: {n_pass}/{len(suite.results)} claims "
                 f"passed, {len(rows)} checks"
                 + (f"; {n_err} claim{'s' if n_err > 1 else ''} not checked (internal numerical failure)"
                    if n_err else "") + f"\n(green: check passed, red: failed; markers clipped at $\\pm{lim:g}$)",
                 fontsize=9)
    ax.grid(axis="x", color="#eee")
    fig.tight_layout()
    return fig


def _figures(suite, out: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    made: dict[str, list[dict[str, str]]] = {}
    images: dict[str, bytes] = {}
    for r in suite.results:
        for i, c in enumerate(r.checks):
            spec = c.details.get("figure")
            if not isinstance(spec, dict):
                continue
            fig = _check_figure(plt, np, r.name, r.title, c, spec)
            if fig is None:
                continue
            try:
                names = _save(fig, out, f"{r.name}_{i}", images)
            finally:
                plt.close(fig)
            made.setdefault(r.name, []).append({**names, "title": f"{r.name}: {c.name}"})
    summary = None
    fig = _summary_figure(plt, np, suite)
    if fig is not None:
        try:
            summary = {**_save(fig, out, "summary", images),
                       "title": "Every check: standardized deviation from the derived value, with its interval"}
        finally:
            plt.close(fig)
    return made, summary, images


# ---------------------------------------------------------------- the exploration (explore.SuiteExploration)
def _domain_ranges(claim: str) -> dict[str, tuple[float, float]]:
    """{field: (low, high)} of the numeric ranges of a claim's declared domain (empty when unknown)."""
    try:
        from .claims import CLAIMS
        spec = getattr(CLAIMS[claim].domain, "spec", None) or {}
    except (ImportError, KeyError):
        return {}
    return {k: (float(v[0]), float(v[1])) for k, v in spec.items()
            if len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)}


def example_deviation(x: dict) -> float | None:
    """(estimate - derived) / standard error of the check an explored example shows (None without one)."""
    h = x.get("screen_headline") or {}
    try:
        est, exp, se = float(h["estimate"]), float(h["expected"]), float(h["stderr"])
    except (KeyError, TypeError, ValueError):
        return None
    return (est - exp) / se if se > 0 and math.isfinite(est - exp) else None


#: what the exploration's columns mean (report.md and report.html)
EXPLORATION_TEXT = (
    "Each example runs the claim's checks at one drawn point of its domain. Deviation: (estimate - derived value) "
    "/ standard error of the check the claim shows, the number to read first. p-value: the example's statistical "
    "checks combined by Bonferroni (their number times the smallest p-value, at most 1); a check whose estimate "
    "lies within its stated allowance for a known bias has p-value 1, so p-values of 1 say that these points give "
    "no evidence against the formula, not more. An example is rejected when its p-value is below the screen level, "
    "and a rejection counts only when a run with a fresh seed and more samples confirms it")


def exploration_figures(res, directory) -> list[str]:
    """One figure per explored claim with MIN_EXPLORATION_POINTS examples or more (PNG and PDF): its
    numeric parameters (pairs of axes) inside the declared domain (dashed box), each point coloured by
    its deviation in standard errors, its marker by verdict; fills ``res.figure_files`` and ``res.images``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.markers import MarkerStyle
    from matplotlib.patches import Rectangle

    markers = {"passed": ("o", "none"), "not confirmed": ("s", "tab:orange"), "failed": ("X", "tab:red"),
               "error": ("x", "black")}
    paths = []
    for e in res.explorations:
        rows = [x for x in e.examples if "verdict" in x]
        if len(rows) < MIN_EXPLORATION_POINTS:          # a picture of a handful of points shows nothing
            continue
        ranges = _domain_ranges(e.claim)
        names = list(e.fields) if len(e.fields) == len(rows[0]["config"]) else [f"field {i}" for i in
                                                                               range(len(rows[0]["config"]))]
        numeric = [i for i, v in enumerate(rows[0]["config"]) if isinstance(v, (int, float))
                   and not (names[i] in ranges and ranges[names[i]][0] == ranges[names[i]][1])]
        pairs = list(zip(numeric[::2], numeric[1::2]))
        if len(numeric) % 2:
            pairs.append((numeric[-1], numeric[0]) if len(numeric) > 1 else (numeric[-1], numeric[-1]))
        if not pairs:
            continue
        fig, axes = plt.subplots(1, len(pairs), figsize=(3.6 * len(pairs) + 1.2, 3.9), squeeze=False,
                                 layout="constrained")
        z = [example_deviation(x) for x in rows]
        scatter = None
        for ax, (i, j) in zip(axes[0], pairs):
            if names[i] in ranges and names[j] in ranges:
                (x0, x1), (y0, y1) = ranges[names[i]], ranges[names[j]]
                ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=True, facecolor="#f4f4f4",
                                       edgecolor="#555", ls="--", lw=1.0, zorder=0, label="domain"))
                pad_x, pad_y = 0.06 * (x1 - x0 or 1.0), 0.06 * (y1 - y0 or 1.0)
                ax.set_xlim(x0 - pad_x, x1 + pad_x)
                ax.set_ylim(y0 - pad_y, y1 + pad_y)
            for verdict, (marker, edge) in markers.items():
                idx = [k for k, x in enumerate(rows) if x["verdict"] == verdict]
                if not idx:
                    continue
                xs = [rows[k]["config"][i] for k in idx]
                ys = [rows[k]["config"][j] for k in idx]
                zs = [np.nan if z[k] is None else z[k] for k in idx]
                # an unfilled marker ("x") has no edge: its colour is the face's (else matplotlib warns)
                edges = {"edgecolors": edge if edge != "none" else "#333"} if MarkerStyle(marker).is_filled() else {}
                scatter = ax.scatter(xs, ys, c=zs, cmap="coolwarm", vmin=-4, vmax=4, marker=marker, s=36,
                                     linewidths=0.6, plotnonfinite=True, label=verdict, zorder=2, **edges)
            ax.set_xlabel(f"${_PARAM_TEX[names[i]]}$" if names[i] in _PARAM_TEX else _text(names[i]))
            ax.set_ylabel(f"${_PARAM_TEX[names[j]]}$" if names[j] in _PARAM_TEX else _text(names[j]))
        handles, labels = axes[0][0].get_legend_handles_labels()
        legend = fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=7, frameon=False)
        for h in legend.legend_handles:        # the markers say the verdict; their colour is the points'
            if h is not None and not isinstance(h, Rectangle):
                h.set_array(None)              # else the colour map paints the legend's marker too
                h.set_facecolor("#bbbbbb")
        if scatter is not None:
            bar = fig.colorbar(scatter, ax=list(axes[0]), shrink=0.9)
            bar.set_label("deviation / s.e. (grey: none)", fontsize=8)
        fig.suptitle(_text(f"{e.claim}: {len(rows)} explored points in the declared domain (dashed box)"),
                     fontsize=9)
        try:
            res.figure_files[e.claim] = _save(fig, Path(directory), f"explore_{e.claim}", res.images)
        finally:
            plt.close(fig)
        paths.append(os.path.join(directory, res.figure_files[e.claim]["png"]))
    return paths


def _explore_fields(e, config) -> str:
    names = e.fields if len(e.fields) == len(config) else [f"field {i}" for i in range(len(config))]
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in zip(names, config))


_EXPLORE_HEAD = ("stage", "parameters", "deviation / s.e.", "p-value", "screen level", "confirmation p", "verdict")


def _explore_rows(e) -> list[tuple[str, ...]]:
    def p(x):
        return "-" if x is None else f"{x:.3g}"
    def verdict(x):
        if x.get("verdict") != "error":
            return x["verdict"]
        return f"error ({x.get('error_kind', 'internal')}, {x.get('error_stage', 'screen')}): {x.get('error', '')}"
    def dev(x):
        z = example_deviation(x)
        return "-" if z is None else f"{z:+.2f}"
    return [(x["stage"], _explore_fields(e, x["config"]), dev(x), p(x["pvalue"]), p(x["screen_level"]),
             p(x.get("confirm_pvalue")), verdict(x)) for x in e.examples]


def exploration_markdown(res) -> str:
    """The report's exploration section (markdown): per claim the explored domain, the number of
    examples, a table of them and the figure of the explored parameters coloured by verdict."""
    lines = ["", "## Exploration (hypothesis-drawn parameters)", "", res.familywise_text + ".", "",
             EXPLORATION_TEXT + ".", ""]
    for e in res.explorations:
        c = e.counterexample
        lines += [f"### {e.claim}: {e.verdict}", "",
                  f"Domain: `{e.domain}`; {len(e.examples)} examples ({e.n_requested} requested), "
                  f"{e.seconds:.1f} s.", ""]
        if c is not None:
            lines += [f"**Minimal counterexample** (shrunk): `{_explore_fields(e, c['shrunk'])}` "
                      f"(first found: `{_explore_fields(e, c['first'])}`).", ""]
        lines += ["| " + " | ".join(_EXPLORE_HEAD) + " |", "|" + " --- |" * len(_EXPLORE_HEAD)]
        lines += ["| " + " | ".join(r[:-1] + (_cell(_escape_md(r[-1])) if r[-1].startswith("error") else r[-1],))
                  + " |" for r in _explore_rows(e)]
        f = res.figure_files.get(e.claim)
        if f:
            lines += ["", f"![{e.claim}: explored points in the declared domain, coloured by deviation]({f['png']}) "
                          f"([PDF]({f['pdf']}))"]
        lines += [f"", *[f"Note: {n}" for n in e.notes]]
    for name, why in res.skipped.items():
        lines.append(f"Not explored: `{name}` ({why}).")
    return "\n".join(lines) + "\n"


def _fields_html(e, config) -> str:
    """An explored point in HTML: its numeric parameters as mathematics (sigma_w = 0.5), the others as words."""
    names = e.fields if len(e.fields) == len(config) else [f"field {i}" for i in range(len(config))]
    out = []
    for k, v in zip(names, config):
        if k in _PARAM_TEX and isinstance(v, (int, float)) and math.isfinite(v):
            from .latex_doc import number_math
            out.append(tex_mathml(f"{_PARAM_TEX[k]} = {number_math(v)}"))
        else:
            out.append(f"{_e(k)} {_e(v)}")
    return ", ".join(out)


def _domain_html(e) -> str:
    """A claim's explored domain in HTML, its ranges as mathematics (from the claim's declaration; the
    exploration's own text when the claim declares none)."""
    try:
        from .claims import CLAIMS
        domain = CLAIMS[e.claim].domain
        spec = getattr(domain, "spec", None)
    except (ImportError, KeyError):
        spec = None
    if not spec:
        return f"<code>{_e(e.domain)}</code>"
    parts = [_range_html(k, v) for k, v in spec.items()]
    excluded = getattr(domain, "excluded", None)
    return "; ".join(parts) + (f"; excluding where {_e(excluded)}" if excluded else "")


def exploration_html(res) -> str:
    """The same section as :func:`exploration_markdown`, as HTML (figures embedded as base64 PNG)."""
    h = ["<h2>Exploration (hypothesis-drawn parameters)</h2>", f"<p>{_sentence_html(res.familywise_text)}.</p>",
         f"<p>{_e(EXPLORATION_TEXT)}.</p>"]
    for e in res.explorations:
        c = e.counterexample
        h += [f"<h3>{_e(e.claim)}: " + (_verdict_html(e.passed) if e.verdict != "ERROR" else
                                        '<span class="fail">ERROR</span>') + "</h3>",
              f"<p>Domain: {_domain_html(e)}; {len(e.examples)} examples ({e.n_requested} requested), "
              f"{e.seconds:.1f} s.</p>"]
        if c is not None:
            h.append(f"<p><strong>Minimal counterexample</strong> (shrunk): {_fields_html(e, c['shrunk'])} "
                     f"(first found: {_fields_html(e, c['first'])}).</p>")
        h.append("<table><tr>" + "".join(f"<th>{_e(x)}</th>" for x in _EXPLORE_HEAD) + "</tr>")
        h += ["<tr>" + "".join(f"<td>{_fields_html(e, x['config']) if i == 1 else _e(cell)}</td>"
                               for i, cell in enumerate(r)) + "</tr>" for r, x in zip(_explore_rows(e), e.examples)]
        h.append("</table>")
        f = res.figure_files.get(e.claim)
        if f:
            h += ["<figure>", _img(res.images.get(f["png"]), f"{e.claim}: explored parameters"),
                  f"<figcaption>{_e(e.claim)}: the explored points in the declared domain (dashed box), coloured "
                  f"by their deviation in standard errors, the marker saying the verdict (also as "
                  f"{_e(f['pdf'])})</figcaption></figure>"]
        h += [f"<p>Note: {_e(n)}</p>" for n in e.notes]
    h += [f"<p>Not explored: <code>{_e(n)}</code> ({_e(w)}).</p>" for n, w in res.skipped.items()]
    return "\n".join(h) + "\n"
