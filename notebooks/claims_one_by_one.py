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
# 3. its **numerical check** at the quick budget, with the package's own report
#    (`sssn_verify.report`): every sub-check with its estimate, confidence interval, the
#    derived value, the p-value, sample size and seed, and the check's figures;
# 4. at the end, the suite's view (`sssn_verify.verify.suite_of`): the family-wise
#    false-alarm probability controlled over all the statistical checks by Holm's procedure,
#    and the report's summary table and figure.
#
# Nothing is re-implemented here: tables, figures and Holm come from the package.
#
# `SSSN_NOTEBOOK_SMALL=1` (CI) divides the Monte Carlo sample sizes of each quick budget by
# ten and shortens the ladders of the claims whose cost lies elsewhere (`SMALL_OVERRIDES`):
# the checks stay honest tests (their intervals just widen), but they are then weaker at
# rejecting a wrong formula than at the real quick budget.

# %%
import json
import os
import tempfile
import time

import numpy as np
import sympy as sp
from IPython.display import Image, Markdown, Math, display

from sssn_verify import derive
from sssn_verify.claims import CLAIMS, UNAVAILABLE
from sssn_verify.report import markdown, table, write_report
from sssn_verify.verify import DEFAULT_ALPHA, suite_of

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


def run_claim(name):
    """The claim's numerical check at the notebook's budget: (result, seconds, shrunk)."""
    override = small_budget(name, CLAIMS[name].budgets[MODE]) if SMALL else {}
    t0 = time.perf_counter()
    result = CLAIMS[name].run(MODE, SEED, budget=override)
    return result, time.perf_counter() - t0, bool(override)


def show_claim(name, result, seconds, shrunk, figures):
    """Statement, derivation, verdict, the claim's section of the report and its figures (PNG
    files of the suite's report, `figures`: the report's figure list of this claim)."""
    claim = CLAIMS[name]
    display(Markdown(f"## `{name}`: {claim.title}\n\n**Statement.** {claim.statement}\n\n"
                     f"**Statistic.** {claim.statistic}; confidence level {claim.level}; "
                     f"tolerance: {claim.tolerance}."))
    if claim.derivation:
        show_derivation(claim.derivation)
    else:
        display(Markdown("*(no sympy derivation: this claim checks a numerical statement)*"))
    display(Markdown(f"### Numerical check ({MODE} budget{', shrunk for CI' if shrunk else ''}, "
                     f"seed {SEED}, {seconds:.1f} s): **{'PASS' if result.passed else 'FAIL'}** "
                     "at the claim's own level"))
    # the report's section of this claim alone (its checks table), as the package writes it
    single = suite_of([result], MODE, SEED, level=result.level, seconds=seconds)
    section = markdown(single).split(f"## {name}: ", 1)[1]
    display(Markdown("#### " + "\n".join(line for line in section.splitlines() if not line.startswith("!["))))
    for fig in figures:
        display(Image(filename=os.path.join(SUITE_DIR, fig["png"])))


# %% [markdown]
# ## The claims
#
# One section per claim (this cell loops over the registry, so claims added to the suite
# appear here without editing the notebook).  The claims run first; the suite's report
# (`write_report`) then draws every check's figure once, and each section shows its own.

# %%
runs = {name: run_claim(name) for name in CLAIMS}
results = {name: run[0] for name, run in runs.items()}
suite = suite_of(list(results.values()), MODE, SEED, alpha=DEFAULT_ALPHA)
SUITE_DIR = os.path.join(FIGURE_DIR, "suite")
paths = write_report(suite, SUITE_DIR)
with open(paths["json"]) as f:
    figures = json.load(f)["figures"]          # claim -> its figures (PNG and PDF names, titles)
for name in CLAIMS:
    show_claim(name, *runs[name], figures.get(name, []))

# %% [markdown]
# ## Summary: the suite's view
#
# The claims above were judged at their own levels; the suite judges all the statistical
# checks together by Holm's procedure at the family-wise level `DEFAULT_ALPHA`.

# %%
print(table(suite))
if paths.get("summary"):
    display(Image(filename=paths["summary"][0]))      # every check, standardized
print(f"({'SMALL budgets' if SMALL else MODE + ' budgets'}, seed {SEED})")
