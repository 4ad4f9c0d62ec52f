"""Claim `commuting_limits`: the limits L -> infinity and m -> infinity commute (Theorem 1.1 analogue).

Both iterated limits are the SDE of docs/mathematics.md, section 3: the finite-width transformer at *fixed*
small width m converges, as L -> infinity, to the same SDE (its per-layer noise has the exact
covariance K for every m, non-Gaussian corrections vanish over many layers), and the
Gaussian transformer (m = infinity first) converges to it as L -> infinity.

Checker: the observable E[E_0(mu_T)] (the beta = 0 energy at the horizon) for m = 2, 16, inf, each
extrapolated in depth (Richardson 2 Y(2L) - Y(L)), against the limit SDE extrapolated in its step (two
levels of the refinement ladder, 4L and 2L steps); all runs share the initial tokens (same seed), so each
comparison is a paired z-test of per-path differences.  The O(1/L) biases are removed, not allowed for.

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.commuting_limits``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..engine import sde_refinement_ladder, simulate_coupled, simulate_gaussian, simulate_transformer
from ..numeric.observables import energies_numpy
from ..params import ModelParams
from ..numeric.rng import as_key
from ..stats import agreement_test, mean_ci
from ._util import combine, estimates_figure
from ..strategies import claim_configs
from ._util import explored_params
from .base import Claim

PARAMS = dict(d=3, n_tokens=4, horizon=1.0, beta=1.0, activation="relu", sigma_w=1.0, sigma_b=0.0,
              sigma_a=0.7)
# where it is explored (both sides extrapolated in L, so no allowance is calibrated to PARAMS)
DOMAIN = claim_configs(d=(2, 4), n_tokens=(2, 4), beta=(0.0, 1.0), activation=("relu", "tanh"),
                       sigma_w=(0.5, 1.0), sigma_b=(0.0, 0.5), sigma_a=(0.3, 0.7))


def sde_limit(params: ModelParams, depth: int, n_paths: int, seed) -> np.ndarray:
    """Per-path E_0(mu_T) of the limit SDE: projected Euler with `depth` and `depth`/2 steps on one Brownian
    field (the refinement ladder), Richardson 2 E(depth) - E(depth/2): its O(1/depth) step bias removed
    (measured at the anchor: 0.058 / depth)."""
    lad = sde_refinement_ladder(params, depth=depth, factors=(1, 2), kind="sde", n_paths=n_paths, seed=seed,
                                progress=False)
    E = energies_numpy(lad.tokens, 0.0)                                  # (P, 2): depth, depth / 2 steps
    return 2.0 * E[:, 0] - E[:, 1]


def extrapolated(run: Callable[[int], np.ndarray], L: int) -> np.ndarray:
    """Per-path Richardson 2 Y(2L) - Y(L) of a run at depth L and 2L (same initial tokens): its O(1/L) bias
    removed."""
    return 2.0 * run(2 * L) - run(L)


def derived_formula() -> Callable[..., np.ndarray]:
    return sde_limit


def error_table(p: ModelParams, table: dict, seed: int) -> dict:
    """The L x m table of the Theorem-1.1 error against the SDE and the fitted a log L/L + b/m
    surface (module doc)."""
    depths = [int(L) for L in table["depths"]]
    widths = [int(m) for m in table["widths"]]
    n_fine, P = int(table["n_fine"]), int(table["paths"])
    lad = sde_refinement_ladder(p, depth=n_fine, factors=(1, *[n_fine // L for L in depths]), kind="gaussian",
                                n_paths=P, seed=as_key(seed, "table", "ladder"), progress=False)
    dep = lad.max_dev[:, 1:] ** 2                                     # (P, len(depths))
    rows, ses, width_err = [], [], []
    for j, L in enumerate(depths):
        w = simulate_coupled(p, L, (*widths, math.inf), n_paths=P, seed=as_key(seed, "table", "coupled", j),
                             progress=False).max_dev ** 2            # (P, len(widths))
        d_mean, d_var = dep[:, j].mean(), dep[:, j].var(ddof=1) / P
        w_mean, w_var = w.mean(axis=0), w.var(axis=0, ddof=1) / P
        width_err.append(w_mean.tolist())
        rows.append([*(d_mean + w_mean), d_mean])
        ses.append([*np.sqrt(d_var + w_var), math.sqrt(d_var)])
    e, se = np.array(rows), np.array(ses)
    Ls = np.array(depths, float)[:, None] * np.ones((1, len(widths) + 1))
    inv_m = np.array([1.0 / m for m in widths] + [0.0])[None, :] * np.ones((len(depths), 1))
    X = np.column_stack([(np.log(Ls) / Ls).ravel(), inv_m.ravel()]) / se.ravel()[:, None]
    y = e.ravel() / se.ravel()
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    cov = np.linalg.inv(X.T @ X)
    fitted = coef[0] * np.log(Ls) / Ls + coef[1] * inv_m
    dof = max(e.size - 2, 1)
    chi2 = float(np.sum(((e - fitted) / se) ** 2))
    header = "| L \\ m | " + " | ".join(str(m) for m in widths) + " | inf |"
    lines = [header, "|" + " --- |" * (len(widths) + 2)]
    for L, row, srow in zip(depths, e, se):
        lines.append(f"| {L} | " + " | ".join(f"{v:.4g} ± {s:.2g}" for v, s in zip(row, srow)) + " |")
    return {"reference": f"the SDE, {n_fine} Euler steps (refinement ladder), $T = {p.horizon:g}$",
            "depths": depths, "widths": [*widths, "inf"], "paths": P,
            "depth_error": dep.mean(axis=0).tolist(), "width_error": width_err,
            "error": e.tolist(), "stderr": se.tolist(),
            "entry": r"$\mathrm{dep}(L) + w(L, m)$, each under its own coupling (glued: at most twice this)",
            "surface": {"form": r"$a \log L / L + b / m$", "a": float(coef[0]), "b": float(coef[1]),
                        "a_stderr": float(math.sqrt(cov[0, 0])), "b_stderr": float(math.sqrt(cov[1, 1])),
                        "chi2_per_dof": chi2 / dof,
                        "relative_rms_residual": float(np.sqrt(np.mean(((e - fitted) / e) ** 2)))},
            "text": "\n".join(lines)}


def check(limit, budget: dict, seed: int, level: float):
    p = ModelParams(**explored_params(budget, PARAMS, DOMAIN))
    L, P = int(budget["depth"]), int(budget["paths"])
    ref = limit(p, 4 * L, P, seed)
    runs = {"m = inf (Gaussian transformer)": extrapolated(
        lambda n: simulate_gaussian(p, depth=n, n_paths=P, seed=seed, progress=False).energy[:, -1], L)}
    for m in budget["widths"]:
        runs[f"m = {m}"] = extrapolated(lambda n: simulate_transformer(p, depth=n, width=int(m), n_paths=P, seed=seed,
                                                                       progress=False).energy[:, -1], L)
    parts, labels, est, se, exp = [], [], [], [], []
    for name, vals in runs.items():
        diff = mean_ci(vals - ref)
        parts.append(agreement_test(f"L = {L} and {2 * L}, {name} vs SDE limit", vals.mean(), diff.stderr,
                                    ref.mean(), level=level, n=P, seed=seed,
                                    method="paired z-test (shared initial tokens), both sides extrapolated",
                                    details={"difference": diff.mean}))
        labels.append(name)
        est.append(float(vals.mean()))
        se.append(diff.stderr)
        exp.append(float(ref.mean()))
    details = {"figure": estimates_figure(labels, est, se, exp, r"$\mathbb{E}[E_0(\mu_T)]$"),
               "params": {k: str(v) for k, v in explored_params(budget, PARAMS, DOMAIN).items()}}
    if budget.get("table") and "configs" not in budget:      # the report's table: at the anchor only
        details["table"] = error_table(p, budget["table"], seed)
    return [combine(r"$E[E_0(\mu_T)]$ at large $L$ for $m = 2, 16, \infty$ against the SDE limit", parts, level,
                    method=f"paired z-tests, Bonferroni over {len(parts)}", details=details)]


CLAIM = Claim(
    name="commuting_limits",
    title=r"The limits $L \to \infty$ and $m \to \infty$ commute",
    statement=r"$\lim_{m} \lim_{L} = \lim_{L} \lim_{m}$, both equal to the stochastic differential equation of "
              r"`docs/mathematics.md` (section 3): at large $L$ the finite-width transformer at fixed small $m$,"
              r" and the Gaussian transformer ($m = \infty$), both match that equation in law.",
    derivation=None,
    formula=derived_formula,
    checker=check,
    statistic=r"paired per-path differences of $E_0(\mu_T)$, Richardson-extrapolated over $L$ and $2L$ layers, "
              r"against the SDE's, extrapolated over $2L$ and $4L$ steps (one Brownian field)",
    level=0.999,
    tolerance=r"none: the $O(1/L)$ weak errors (measured $0.058/L$ for the Gaussian transformer and for the SDE's "
              r"Euler steps at the anchor) are removed by the extrapolations; the $O(1/L^2)$ left measured "
              r"$0.0000 \pm 0.0005$ at $L = 32$ (three arms pooled, 64,000 paths each)",
    budgets={"quick": {"depth": 32, "paths": 8_000, "widths": (2, 16),
                       "table": {"depths": (8, 16, 32), "widths": (16, 64, 256), "n_fine": 256, "paths": 150}},
             "full": {"depth": 128, "paths": 40_000, "widths": (2, 16, 128),
                      "table": {"depths": (8, 16, 32, 64), "widths": (16, 64, 256, 1024), "n_fine": 512,
                                "paths": 1000}}},
    derived_text=lambda: (r"$\lim_{m} \lim_{L} X^{L,m} = \lim_{L} \lim_{m} X^{L,m} = X$, the solution of the"
                           r" stochastic differential equation"),
    derived_kind="stated",
    domain=DOMAIN, anchors=(tuple(PARAMS[k] for k in DOMAIN.fields),),
)
