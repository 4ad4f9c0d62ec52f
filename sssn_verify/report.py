"""What users see of a suite run: a plain-text table, report.json, report.md and figures.

Figures are drawn from the ``details["figure"]`` entry a check may carry:

* ``{"kind": "loglog", "x", "y", "stderr", "slope", "intercept", "bound_slope", "xlabel", "ylabel"}``
  (convergence ladders with the fitted slope and the bound's slope);
* ``{"kind": "decay", "t", "mean", "stderr", "bound", "ylabel"}`` (energy against its bound);
* ``{"kind": "estimates", "labels", "estimate", "stderr", "expected", "ylabel"}``
  (e.g. lambda_1 Monte Carlo estimates against the formula).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .stats import CheckResult


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


def table(suite) -> str:
    """Plain-text table: claim, derived result, estimate [CI], expected, verdict, time."""
    rows = [("claim", "derived result", "estimate [CI]", "expected", "verdict", "time")]
    for r in suite.results:
        h = r.headline
        rows.append((r.name, _short(r.derived, 42), estimate_text(h), _fmt(h.expected),
                     "PASS" if r.passed else "FAIL", f"{r.seconds:.1f}s"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    n_pass = sum(r.passed for r in suite.results)
    lines.append("")
    lines.append(f"{n_pass}/{len(suite.results)} claims passed in {suite.seconds:.1f}s "
                 f"(mode {suite.mode}, seed {suite.seed})")
    lines.append(suite.familywise_text)
    for name, why in getattr(suite, "unavailable", {}).items():
        lines.append(f"not run: {name} ({_short(why, 80)})")
    return "\n".join(lines)


def write_report(suite, directory: str | os.PathLike, *, figures: bool = True) -> dict[str, str]:
    """Write report.json, report.md and the figures into `directory`; returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    data = suite.to_dict()
    paths = {"json": str(out / "report.json"), "md": str(out / "report.md")}
    figs: dict[str, list[str]] = {}
    if figures:
        figs = _figures(suite, out)
        paths["figures"] = sorted(f for v in figs.values() for f in v)
    data["figures"] = {k: [os.path.basename(f) for f in v] for k, v in figs.items()}
    with open(paths["json"], "w") as fh:
        json.dump(data, fh, indent=2, allow_nan=False, default=str)
    with open(paths["md"], "w") as fh:
        fh.write(markdown(suite, figs))
    return paths


def markdown(suite, figs: dict[str, list[str]] | None = None) -> str:
    figs = figs or {}
    lines = [f"# sssn_verify report ({suite.mode} mode, seed {suite.seed})", "",
             f"**Verdict: {'all claims passed' if suite.passed else 'SOME CLAIMS FAILED'}** "
             f"in {suite.seconds:.1f} s.", "", suite.familywise_text + ".", "",
             "| claim | derived result | estimate [CI] | expected | verdict | time |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in suite.results:
        h = r.headline
        lines.append(f"| {r.name} | `{_cell(_short(r.derived, 60))}` | {estimate_text(h)} | "
                     f"{_fmt(h.expected)} | {'PASS' if r.passed else 'FAIL'} | {r.seconds:.1f}s |")
    for name, why in getattr(suite, "unavailable", {}).items():
        lines.append(f"\nNot run: `{name}` ({why}).")
    for r in suite.results:
        lines += ["", f"## {r.name}: {r.title}", "", f"**Statement.** {r.statement}", "",
                  f"**Derived (sympy).** `{r.derived}`" if r.derived else "**Derived.** (no sympy result)",
                  "", f"Confidence level of each check {r.level}; budget {json.dumps(r.budget, default=str)}.",
                  "", "| check | estimate [CI] | expected | tol | p-value | n | seed | method | verdict |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in r.checks:
            p = "-" if c.pvalue is None else _fmt(c.pvalue, 3)
            lines.append(f"| {_cell(c.name)} | {estimate_text(c)} | {_fmt(c.expected)} | {_fmt(c.tolerance, 3)} | "
                         f"{p} | {c.n} | {c.seed if c.seed is not None else '-'} | {c.method} | "
                         f"{'PASS' if c.passed else 'FAIL'} |")
        for f in figs.get(r.name, []):
            lines += ["", f"![{r.name}]({os.path.basename(f)})"]
    return "\n".join(lines) + "\n"


def _figures(suite, out: Path) -> dict[str, list[str]]:
    made: dict[str, list[str]] = {}
    specs = [(r.name, i, c) for r in suite.results for i, c in enumerate(r.checks)
             if isinstance(c.details.get("figure"), dict)]
    if not specs:
        return made
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    for name, i, c in specs:
        spec = c.details["figure"]
        fig, ax = plt.subplots(figsize=(5.5, 4))
        kind = spec.get("kind")
        if kind == "loglog":
            x, y = np.asarray(spec["x"], float), np.asarray(spec["y"], float)
            err = np.asarray(spec.get("stderr", np.zeros_like(y)), float)
            ax.errorbar(x, y, yerr=2 * err, fmt="o", label="measured (+-2 se)")
            xx = np.geomspace(x.min(), x.max(), 50)
            ax.plot(xx, np.exp(spec["intercept"]) * xx ** spec["slope"],
                    label=f"fit: slope {spec['slope']:.2f} [{c.ci[0]:.2f}, {c.ci[1]:.2f}]")
            if spec.get("bound") is not None:
                b = np.asarray(spec["bound"], float)
                ax.plot(x, b * y[0] / b[0], "--", label=f"bound shape ({spec.get('bound_label', '')})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(spec.get("xlabel", "x"))
            ax.set_ylabel(spec.get("ylabel", "error"))
        elif kind == "decay":
            t, m = np.asarray(spec["t"], float), np.asarray(spec["mean"], float)
            se = np.asarray(spec.get("stderr", np.zeros_like(m)), float)
            ax.plot(t, m, label="E[E_beta(mu_t)] (Monte Carlo)")
            ax.fill_between(t, m - 2 * se, m + 2 * se, alpha=0.3)
            ax.plot(t, np.asarray(spec["bound"], float), "--", label="bound e^{(lambda_bar + C_att) t} E_0")
            ax.set_yscale("log")
            ax.set_xlabel("t")
            ax.set_ylabel(spec.get("ylabel", "energy"))
        elif kind == "estimates":
            labels = list(spec["labels"])
            pos = np.arange(len(labels))
            ax.errorbar(pos, spec["estimate"], yerr=2 * np.asarray(spec["stderr"], float), fmt="o",
                        label="Monte Carlo (+-2 se)")
            ax.plot(pos, spec["expected"], "x", markersize=10, label="derived formula")
            ax.axhline(0.0, color="grey", lw=0.5)
            ax.set_xticks(pos, labels, rotation=30, ha="right", fontsize=7)
            ax.set_ylabel(spec.get("ylabel", "value"))
        else:
            plt.close(fig)
            continue
        ax.set_title(_short(f"{name}: {c.name}", 70), fontsize=8)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"{name}_{i}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.setdefault(name, []).append(str(path))
    return made


def suite_json(suite) -> dict[str, Any]:
    return suite.to_dict()
