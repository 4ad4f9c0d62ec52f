# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The claims, one by one
#
# Every claim of the verification suite (`sssn-verify verify --quick`), in the suite's order:
#
# 1. its **statement** and what is measured (statistic, confidence level, tolerance);
# 2. its **derivation** by sympy, step by step, rendered as LaTeX (the same `Derivation`
#    object that feeds `sssn-verify derive` and the document in `derivations/`);
# 3. its **numerical check** at the quick budget: every sub-check with its estimate,
#    confidence interval, the derived value, the p-value, sample size and seed;
# 4. its **figure**: the check's own figure when it declares one (convergence ladder,
#    energy decay against its bound, Monte Carlo estimates against the formula), and for
#    every claim the discrepancy of each sub-check with its confidence interval.
#
# Each claim is judged here at its own confidence level.  The suite
# (`sssn_verify.verify.verify`) additionally controls the family-wise false-alarm
# probability over all the statistical checks with Holm's procedure.
#
# `SSSN_NOTEBOOK_SMALL=1` (CI) divides the Monte Carlo sample sizes of each quick budget by
# ten and shortens the ladders of the claims whose cost lies elsewhere (`SMALL_OVERRIDES`):
# the checks stay honest tests (their intervals just widen), but they are then weaker at
# rejecting a wrong formula than at the real quick budget.

# %%
import os
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Image, Markdown, Math, display

from sssn_verify import derive
from sssn_verify.claims import CLAIMS, UNAVAILABLE
from sssn_verify.report import estimate_text, write_report
from sssn_verify.stats import holm
from sssn_verify.verify import DEFAULT_ALPHA, SuiteResult

SMALL = os.environ.get("SSSN_NOTEBOOK_SMALL") == "1"
MODE = "quick"
SEED = 0
SHRINK = 10        # SMALL: Monte Carlo sample sizes divided by this
MIN_SAMPLES = 1000  # ... but never below this
# claims whose cost is not in a sample count: smaller ladders in SMALL mode
SMALL_OVERRIDES = {
    "propagation_of_chaos": {"ns": (8, 16, 32), "n_ref": 256},
}
FIGURE_DIR = tempfile.mkdtemp(prefix="sssn_claims_")

print(f"{len(CLAIMS)} claims: {', '.join(CLAIMS)}")
for name, why in UNAVAILABLE.items():
    print(f"not available yet: {name} ({why})")


# %% [markdown]
# ## How each claim is shown

# %%
def small_budget(name, budget):
    """SMALL mode: sample/path counts >= MIN_SAMPLES divided by SHRINK, plus SMALL_OVERRIDES[name]."""
    out = {}
    for key, value in budget.items():
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= MIN_SAMPLES:
            out[key] = max(MIN_SAMPLES, int(value) // SHRINK)
    extra = SMALL_OVERRIDES.get(name, {})
    unknown = set(extra) - set(budget)
    if unknown:
        raise KeyError(f"SMALL_OVERRIDES[{name!r}] names budget entries the claim does not have: {unknown}")
    out.update(extra)
    return out


def _fmt(x):
    return "-" if x is None else f"{x:.4g}"


def _cell(text):
    """Text for a Markdown table cell (a '|' in a check's name would split the cell)."""
    return str(text).replace("|", "\\|")


def show_derivation(name):
    """The sympy derivation: assumptions, each step (text + LaTeX), the result."""
    der = derive(name)
    display(Markdown(f"### Derivation: {der.title} (`sssn-verify derive {name}`)"))
    if der.assumptions:
        display(Markdown("**Assumptions.**\n\n" + "\n".join(f"- {a}" for a in der.assumptions)))
    for i, step in enumerate(der.steps, 1):
        display(Markdown(f"{i}. {step.text}"))
        if step.expr is not None:
            display(Math(sp.latex(step.expr)))
    display(Markdown("**Result.**"))
    display(Math(der.result_latex))


def checks_table(result):
    rows = ["| check | estimate [CI] | derived | tol | p-value | n | seed | method | verdict |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in result.checks:
        rows.append(f"| {_cell(c.name)} | {estimate_text(c)} | {_fmt(c.expected)} | {_fmt(c.tolerance)} | "
                    f"{_fmt(c.pvalue)} | {c.n} | {'-' if c.seed is None else c.seed} | {_cell(c.method)} | "
                    f"{'PASS' if c.passed else '**FAIL**'} |")
    return "\n".join(rows)


MARKERS = {"two-sided": "o", "greater": "v", "less": "^"}
MARKER_TEXT = {"two-sided": "two-sided test", "greater": "one-sided: fails only if significantly above",
               "less": "one-sided: fails only if significantly below"}


def discrepancy_figure(result):
    """(estimate - derived) / |derived| per sub-check with its CI; grey bars: the tolerance."""
    checks = [c for c in result.checks if c.expected is not None and c.estimate is not None
              and np.isfinite(c.expected) and np.isfinite(c.estimate)]
    if not checks:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.4))
    seen = set()
    for k, c in enumerate(checks):
        scale = abs(c.expected) if c.expected != 0 else 1.0
        y = (c.estimate - c.expected) / scale
        alt = c.alternative if c.alternative in MARKERS else "two-sided"
        label = MARKER_TEXT[alt] if alt not in seen else None
        seen.add(alt)
        yerr = None
        if c.ci is not None:
            lo, hi = (c.ci[0] - c.expected) / scale, (c.ci[1] - c.expected) / scale
            yerr = [[max(y - lo, 0.0)], [max(hi - y, 0.0)]]
        ax.errorbar([k], [y], yerr=yerr, fmt=MARKERS[alt], color="C0" if c.passed else "C3", capsize=3,
                    label=label)
        tol = (c.tolerance or 0.0) / scale
        if tol > 0:
            lo_t = -tol if alt in ("two-sided", "less") else 0.0
            hi_t = tol if alt in ("two-sided", "greater") else 0.0
            ax.plot([k - 0.3, k + 0.3], [lo_t, lo_t], color="0.6", lw=2)
            ax.plot([k - 0.3, k + 0.3], [hi_t, hi_t], color="0.6", lw=2,
                    label="tolerance" if "tol" not in seen else None)
            seen.add("tol")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(range(len(checks)), [c.name[:40] for c in checks], rotation=25, ha="right", fontsize=7)
    ax.set_ylabel("(estimate - derived) / |derived|")
    ax.set_title(f"{result.name}: relative discrepancy per check, {100 * result.level:g}% CI "
                 "(blue pass, red fail)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def show_claim(name):
    claim = CLAIMS[name]
    display(Markdown(f"## `{name}`: {claim.title}\n\n**Statement.** {claim.statement}\n\n"
                     f"**Statistic.** {claim.statistic}; confidence level {claim.level}; "
                     f"tolerance: {claim.tolerance}."))
    if claim.derivation:
        show_derivation(claim.derivation)
    else:
        display(Markdown("*(no sympy derivation: this claim checks a numerical statement)*"))
    override = small_budget(name, claim.budgets[MODE]) if SMALL else {}
    t0 = time.perf_counter()
    result = claim.run(MODE, SEED, budget=override)
    seconds = time.perf_counter() - t0
    display(Markdown(f"### Numerical check ({MODE} budget{', shrunk for CI' if override else ''}, "
                     f"seed {SEED}, {seconds:.1f} s): **{'PASS' if result.passed else 'FAIL'}**\n\n"
                     f"Budget: `{result.budget}`\n\n" + checks_table(result)))
    display(Markdown("### Figures"))
    single = SuiteResult([result], MODE, SEED, DEFAULT_ALPHA, seconds,
                         sum(c.pvalue is not None for c in result.checks))
    paths = write_report(single, os.path.join(FIGURE_DIR, name))
    for path in paths.get("figures", []):
        display(Image(filename=path))
    fig = discrepancy_figure(result)
    if fig is not None:
        display(fig)  # shown here, next to its claim (the report switched matplotlib to Agg)
        plt.close(fig)
    return result


# %% [markdown]
# ## The claims
#
# One section per claim (this cell loops over the registry, so claims added to the suite
# appear here without editing the notebook).

# %%
results = {}
for name in CLAIMS:
    results[name] = show_claim(name)

# %% [markdown]
# ## Summary

# %%
rows = ["| claim | headline check | estimate [CI] | derived | verdict | time |", "| --- | --- | --- | --- | --- | --- |"]
for name, r in results.items():
    h = r.headline
    rows.append(f"| `{name}` | {_cell(h.name)} | {estimate_text(h)} | {_fmt(h.expected)} | "
                f"{'PASS' if r.passed else '**FAIL**'} | {r.seconds:.1f} s |")
display(Markdown("\n".join(rows)))
print(f"{sum(r.passed for r in results.values())}/{len(results)} claims passed at their own level "
      f"({'SMALL budgets' if SMALL else MODE + ' budgets'}, seed {SEED}).")

# The suite's family-wise view: Holm's step-down over every statistical check run above.
stochastic = [(name, c) for name, r in results.items() for c in r.checks if c.pvalue is not None]
rejected = holm([c.pvalue for _, c in stochastic], DEFAULT_ALPHA)
print(f"Holm at family-wise level {DEFAULT_ALPHA:g} over {len(stochastic)} statistical checks: "
      f"{sum(rejected)} rejected" + "".join(f"\n  rejected: {n}: {c.name}"
                                           for (n, c), rej in zip(stochastic, rejected) if rej))
