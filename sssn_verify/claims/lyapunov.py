"""Claim `lyapunov`: the top Lyapunov exponent of the noise-only flow (docs/mathematics.md, section 5),

    lambda_1 = ((d-3) k1 - (d-1) k0) / 2        (sympy: tangent flow and two-point routes agree).

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.lyapunov``.
"""
from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Callable

import sympy as sp

from ..bridge import function
from ..engine import lyapunov_tangent
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.experiments import model_constants
from ..numeric.one_step import one_step_moments
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import POWER, agreement_test
from ..symbolic.lyapunov import lambda1_tangent
from ..strategies import HIDDEN_STACKS, NO_HIDDEN, claim_configs, hidden_stack
from ._util import combine, configs, estimates_figure, paths_for, resolution, steering
from .base import CandidateCheck, Claim, Evidence

# (model, activation, d, sigma_w, sigma_b, sigma_a); quick mode runs the first `n_configs`
CONFIGS = (
    ("transformer", "relu", 3, 1.0, 0.0, 1.0),
    ("transformer", "relu", 5, 1.0, 1.0, 1.0),
    ("gaussian", "relu", 8, 1.0, 0.5, 1.0),
    ("gaussian", "tanh", 4, 1.2, 0.3, 1.0),
    ("gaussian", "gelu", 6, 1.0, 0.5, 1.0),
    ("gaussian", "sin:3", 4, 1.0, 0.0, 1.0),      # lambda_1 > 0
    ("gaussian", "sin:3", 3, 1.0, 0.0, 1.0),      # lambda_1 < 0 for the same activation
    ("transformer", "tanh", 4, 1.2, 0.3, 1.0),
    ("transformer", "sin:3", 4, 1.0, 0.0, 1.0),
)

# where the claim is explored (verify --explore): the Gaussian transformer, moderate noise per layer (the
# time-step bias stays inside the stated allowance), lambda_1 of either sign; `check` searches CHECK_DOMAIN
# over closed-form kernels (relu, leaky_relu, erf, sin) and quadrature ones (tanh, gelu)
ACTIVATIONS = ("relu", "leaky_relu:0.1", "erf", "sin:3", "tanh", "gelu")
# a deep block is one more kernel K of the Gaussian transformer (the checks read the block only through k0, k1)
DOMAIN = claim_configs(model=("gaussian",), activation=("relu", "tanh", "gelu", "erf", "sin:3"),
                       d=(2, 6), sigma_w=(0.5, 1.25), sigma_b=(0.0, 1.0), sigma_a=(0.5, 1.25), hidden=HIDDEN_STACKS)
# `check` (one exactly sampled layer per point, no time-step allowance) searches a wider domain: the
# tangent-flow check over a horizon that verify --explore also runs keeps its O(T/L) allowance only for
# small d (relu d = 14, sb = 1 at the quick depth: -3.536 +- 0.011 against -3.75, 5.7 % off)
CHECK_DOMAIN = {"activation": ACTIVATIONS, "d": (2, 16), "sigma_w": (0.3, 1.5), "sigma_b": (0.0, 1.5),
                "sigma_a": (0.3, 1.5), "hidden": HIDDEN_STACKS}


@lru_cache(maxsize=None)
def derived_formula() -> Callable[[float, float, float], float]:
    """lambda_1(d, k0, k1) from the sympy derivation (through the bridge)."""
    return function("lyapunov.lambda1", "math")


def estimate(model: str, act: str, d: int, sw: float, sb: float, sa: float, budget: dict, seed: int,
             hidden: str = NO_HIDDEN):
    """(rate, stderr, n_paths) of the tangent flow, noise only (V = 0).

    The depth grows with the noise per layer, (k0 + k1) T / L <= budget["step_noise"]: the
    O(T/L) time-step bias of the rate scales with it (sin(3u), d = 2 at L = 100: -2.70 vs -2.50).
    """
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1,
                    horizon=float(budget["horizon"]), hidden=hidden_stack(hidden))
    kf = numeric_kernel(p)
    depth = max(int(budget["depth"]), math.ceil(p.horizon * (kf.k0 + kf.k1) / budget["step_noise"]))
    r = lyapunov_tangent(p, model=model, depth=depth,
                         width=int(budget["width"]) if model == "transformer" else None,
                         n_paths=int(budget["paths"] if model == "gaussian" else budget["paths_transformer"]),
                         seed=seed, progress=False)
    return r.rate, r.stderr, r.n_paths


# ---------------------------------------------------------------- one exactly sampled layer
# the models the statement applies to (budget["models"] picks among them): those whose noise is the
# Gaussian field of a kernel K, layers or the SDE's Euler steps
MODELS_APPLY = {"field": True}
# (activation, d, sigma_w, sigma_b, sigma_a): the one-step check; quick mode runs the first
# `n_one_step`.  Large d first: there the per-path spread relative to |lambda_1| is smallest.
ONE_STEP_CONFIGS = (
    ("relu", 9, 1.0, 2.0, 1.0),
    ("erf", 8, 0.6, 1.0, 1.2),
    ("sin:3", 4, 1.0, 0.0, 1.0),       # lambda_1 > 0
    ("tanh", 6, 1.2, 0.3, 1.0),
    ("relu", 3, 1.0, 0.0, 1.0),
    ("gelu", 6, 1.0, 0.5, 1.0),
    ("sin:3", 3, 1.0, 0.0, 1.0),       # lambda_1 < 0 for the same activation
)
STEP_NOISE = 0.01          # d (k0 + k1) h: the noise of one layer (Richardson leaves O(h^2))


def one_step_vectors(d: int, k0: float, k1: float) -> int:
    """Tangent vectors averaged per path: more when k1 (their own noise) dominates k0 (shared)."""
    return int(min(d - 1, 4, max(1, round(2 * k1 / k0))))


def one_step_rate(act, d: int, sw: float, sb: float, sa: float, n_paths: int, seed,
                  step_noise: float = STEP_NOISE, model: str = "gaussian", hidden: str = NO_HIDDEN):
    """Richardson one-step estimate of `model`'s exponent (a field model, the Gaussian transformer by
    default): OneStepMoments (stat "lam"), with the model's k0, k1 as ``.k0``, ``.k1`` of its constants;
    `hidden` a configuration's hidden stack (``strategies.hidden_stack``)."""
    p = ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa, V=0.0, n_tokens=1,
                    hidden=hidden_stack(hidden))
    c = model_constants(model, p)
    h = step_noise / (d * (c.k0 + c.k1))
    return one_step_moments(p, h, n_paths, seed, n_vectors=one_step_vectors(d, c.k0, c.k1), model=model)


def one_step_check(formula, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp = [], [], [], [], []
    # explored configurations come as the tangent check's (model, activation, d, sigmas, hidden); the anchors and
    # a configuration without the hidden stack (an older one replayed) are one-layer blocks
    cfgs = [tuple(c[1:]) if len(c) == 7 else (*c[-5:], NO_HIDDEN)
            for c in configs(budget, ONE_STEP_CONFIGS, "n_one_step")]
    models = tuple(budget.get("models", ("gaussian",)))
    for i, (act, d, sw, sb, sa, hidden) in enumerate(cfgs):
        for model in models:
            c = model_constants(model, ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa,
                                                   hidden=hidden_stack(hidden)))
            lam = formula(d, c.k0, c.k1)
            r = one_step_rate(act, d, sw, sb, sa, int(budget["one_step_paths"]),
                              as_key(seed, "one-step", i, model), model=model, hidden=hidden)
            label = (f"{act} d={d} sw={sw} sb={sb} sa={sa}" + ("" if hidden == NO_HIDDEN else f" then {hidden}")
                     + ("" if models == ("gaussian",) else f" ({model})"))
            parts.append(agreement_test(label, r.mean["lam"], r.stderr["lam"], lam, level=level, n=r.n, seed=seed,
                                        details={"k0": c.k0, "k1": c.k1, "h": r.h, "raw_h": r.mean["lam_h"],
                                                 "raw_2h": r.mean["lam_2h"]}))
            labels.append(label)
            est.append(r.mean["lam"])
            se.append(r.stderr["lam"])
            exp.append(lam)
    return combine(f"$\\lambda_1$: one exactly sampled layer (model {', '.join(f'`{m}`' for m in models)}; "
                   r"Richardson in $h$) against $\frac{(d-3)\,k_1 - (d-1)\,k_0}{2}$", parts, level,
                   method=f"one-step log-growth with control variate, Richardson on shared normals, z-tests "
                          f"(no bias allowance), Bonferroni over {len(parts)} configurations",
                   details={"figure": estimates_figure(labels, est, se, exp, r"$\lambda_1$ (one step)")})


def check(formula, budget: dict, seed: int, level: float):
    checks = [one_step_check(formula, budget, seed, level)]
    if int(budget.get("n_configs", 1)) > 0 or "configs" in budget:
        checks += tangent_check(formula, budget, seed, level)
    return checks


def tangent_check(formula, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp = [], [], [], [], []
    for i, (model, act, d, sw, sb, sa, *deep) in enumerate(configs(budget, CONFIGS)):
        hidden = deep[0] if deep else NO_HIDDEN
        kf = numeric_kernel(act, sw, sb, sa, hidden=hidden_stack(hidden))
        lam = formula(d, kf.k0, kf.k1)
        rate, s, n = estimate(model, act, d, sw, sb, sa, budget, as_key(seed, "tangent", i), hidden=hidden)
        tol = budget["rel_tol"] * abs(lam) + budget["abs_tol"] * (kf.k0 + kf.k1)
        label = f"{model} {act} d={d} sb={sb}" + ("" if hidden == NO_HIDDEN else f" then {hidden}")
        parts.append(agreement_test(label, rate, s, lam, level=level, n=n, seed=seed, abs_tol=tol,
                                    details={"k0": kf.k0, "k1": kf.k1}))
        labels.append(label)
        est.append(rate)
        se.append(s)
        exp.append(lam)
    return [combine(r"$\lambda_1$: tangent-flow rate over a horizon against $\frac{(d-3)\,k_1 - (d-1)\,k_0}{2}$",
                    parts, level,
                    method=f"z-tests with an $O(T/L)$ allowance, Bonferroni over {len(parts)} configurations",
                    details={"figure": estimates_figure(labels, est, se, exp, r"$\lambda_1$")})]


# ---------------------------------------------------------------- check (a user's formula for lambda_1)
# designed power: an error of TARGET resolution(|value|, k0) (claims._util.resolution) is
# rejected with probability POWER at the test's level; the paths are sized by a pilot run (own stream)
CANDIDATE_BUDGET = {"target": 0.006, "pilot": 32768, "min_paths": 65536, "max_paths": 8_000_000,
                    "step_noise": STEP_NOISE}
# at the points of check's space-filling design: the same evidence at a fixed, smaller cost (at most
# 400k paths; the achieved min_detectable is stated per point, a rejection is confirmed at CANDIDATE_BUDGET)
DESIGN_BUDGET = {**CANDIDATE_BUDGET, "max_paths": 400_000}
EVIDENCE = (r"one exactly sampled noise-only layer of the Gaussian transformer: the mean log-growth of tangent "
            r"vectors per unit time with a control variate, Richardson-extrapolated over the steps $h$ and $2h$ on "
            r"shared normals (no allowance for a time-step bias); the paths sized by a pilot run so that an error of "
            r"0.6 % of $\min(\max(|\lambda_1|, k_0/5), \max(k_0, |\lambda_1|/5))$ is rejected with probability 0.9: "
            r"errors of 1 % and of $0.01\,k_0$ are rejected wherever $|\lambda_1|/k_0$ lies in $[1/5, 5]$, an error "
            r"of 1 % everywhere else")


def candidate_evidence(point: dict, seed: int, level: float, budget: dict = CANDIDATE_BUDGET) -> Evidence:
    """lambda_1 of the Gaussian transformer from one exactly sampled layer (see `one_step_check`), with
    as many paths as the designed power needs at `level` (from a pilot run on its own stream)."""
    act, d, hidden = point["activation"], int(point["d"]), point.get("hidden", NO_HIDDEN)
    sig = (point["sigma_w"], point["sigma_b"], point["sigma_a"])
    kf = numeric_kernel(act, *sig, hidden=hidden_stack(hidden))
    pilot = one_step_rate(act, d, *sig, int(budget["pilot"]), as_key(seed, "pilot"), step_noise=budget["step_noise"],
                          hidden=hidden)
    target = budget["target"] * resolution(abs(pilot.mean["lam"]), kf.k0)
    n = paths_for(pilot.sd["lam"], target, level, POWER, int(budget["min_paths"]), int(budget["max_paths"]))
    r = one_step_rate(act, d, *sig, n, as_key(seed, "evidence"), step_noise=budget["step_noise"], hidden=hidden)
    return Evidence(r.mean["lam"], r.stderr["lam"], r.n,
                    f"one exactly sampled layer of the Gaussian transformer, {r.n} paths, Richardson h = {r.h:.3g}, 2h",
                    details={"h": r.h, "raw_h": r.mean["lam_h"], "raw_2h": r.mean["lam_2h"], "pilot_sd": pilot.sd["lam"],
                             "target_error": target})


def candidate_error_scale(values: dict, derived: float, budget: dict = CANDIDATE_BUDGET) -> float:
    """A scale of the evidence's error, used only to steer `check`'s search (target steering(|value|, k0)
    / (z + z_power), see `_util.steering`): a relative error goes to large |value|/k0, an
    additive one (a multiple of k0) to |value| ~ k0, where the evidence detects each cheaply;
    unless the path cap binds; the per-path spread is a rough fit,
    0.6 k0 + 0.55 sqrt(d) (k0 + k1/sqrt(k)), of pilot runs."""
    d, k0, k1 = values["d"], values["k0"], values["k1"]
    if not math.isfinite(k1):
        return math.inf
    sd = 0.6 * k0 + 0.55 * math.sqrt(d) * (k0 + k1 / math.sqrt(one_step_vectors(int(d), k0, k1)))
    z = 3.29 + 1.28
    return max(budget["target"] * steering(abs(derived), k0) / z, sd / math.sqrt(budget["max_paths"]))


CANDIDATE = CandidateCheck(
    variables=("d", "k0", "k1", "sigma_w", "sigma_b", "sigma_a"), axes=("d", "sigma_w", "sigma_b", "sigma_a"),
    derived=lambda v: derived_formula()(v["d"], v["k0"], v["k1"]), evidence=candidate_evidence,
    error_scale=candidate_error_scale, description=EVIDENCE,
    admissible=lambda pt: math.isfinite(numeric_kernel(pt["activation"], pt["sigma_w"], pt["sigma_b"], pt["sigma_a"],
                                                       hidden=hidden_stack(pt.get("hidden"))).k1),
    aliases=("lambda1",), domain=CHECK_DOMAIN, design_evidence=partial(candidate_evidence, budget=DESIGN_BUDGET))


CLAIM = Claim(
    name="lyapunov",
    title=r"Top Lyapunov exponent $\lambda_1$ of the noise-only flow",
    statement=r"$\lambda_1 = \lim_{t \to \infty} \frac{1}{t} \log|V_t| = \frac{(d-3)\,k_1 - (d-1)\,k_0}{2}$ for "
              r"the linearized noise-only flow (finite-width transformer, Gaussian transformer and stochastic "
              r"differential equation alike as the depth grows).",
    derivation="lyapunov",
    formula=derived_formula,
    checker=check,
    statistic=r"one exactly sampled layer: mean of $(\log|v'| - \text{linear term})/h$, Richardson over $h$ and"
              r" $2h$ on shared normals, independent across paths; and the mean over paths of $\log|v_T|/T$ "
              r"from the tangent flow (Benettin's method)",
    level=0.999,
    tolerance=r"one step: none (statistical only; Richardson leaves $O(h^2)$, about $10^{-5}$ relative); "
              r"tangent flow over a horizon: $|E[\text{rate}] - \lambda_1| \le 0.03\,|\lambda_1| + 0.005\,(k_0 "
              r"+ k_1)$ (time-step bias $O(T/L)$)",
    power=r"one step: a relative error of $\lambda_1$ of 0.6 % (`relu`, $d = 9$) to 3 % (`tanh`, $d = 6$) per "
          r"configuration in quick mode (10 times the paths in full mode: about 3 times smaller), rejected with"
          r" probability 0.9 at the claim's level (Bonferroni over the configurations)",
    budgets={"quick": {"n_one_step": 5, "one_step_paths": 400_000,
                       "n_configs": 2, "paths": 20_000, "paths_transformer": 8_000, "depth": 100,
                       "width": 64, "horizon": 1.0, "rel_tol": 0.03, "abs_tol": 0.005, "step_noise": 0.01},
             "full": {"n_one_step": len(ONE_STEP_CONFIGS), "one_step_paths": 4_000_000,
                      "n_configs": len(CONFIGS), "paths": 200_000, "paths_transformer": 50_000,
                      "depth": 200, "width": 128, "horizon": 1.0, "rel_tol": 0.02, "abs_tol": 0.003,
                      "step_noise": 0.005}},
    derived_text=lambda: f"lambda_1 = {sp.sstr(lambda1_tangent())}",
    domain=DOMAIN, anchors=tuple((*c, NO_HIDDEN) for c in CONFIGS),
    candidate=CANDIDATE,
)
