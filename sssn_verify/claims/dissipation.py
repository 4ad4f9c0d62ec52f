"""Claim `dissipation`: lambda_bar(beta) and the energy bound (Theorem 1.4 analogue, docs/mathematics.md, section 5)

    lambda_bar = sup_rho L2 f / f   (attained: at rho = -1 for some beta > 0, else the edge limit),
    E[E_beta(mu_t)] <= exp((lambda_bar + C_att) t) E[E_beta(mu_0)].

Every check compares the formula with the *dynamics* (``numeric.layer_rates``), never with the
derivation: one exact layer of a field model (the Gaussian transformer, or the models of ``budget["models"]``
among ``MODELS_APPLY``'s), the formula read off the model's kernel (by quadrature for the Gaussian
transformer's deterministic evidence, the model's own field for the Monte Carlo).  A deep MLP block is
one more K (its kernel composed layer by layer): explored configurations end with its hidden stack.

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.dissipation``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp

from ..bridge import function
from ..numeric.attention import Attention
from ..numeric.experiments import model_kernel
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.layer_rates import edge_ratio, quadrature_kernel, rate_estimate, sup_ratio, two_tokens
from ..numeric.rates import c_att, lambda_bar, lambda_bar_from_kernel
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import agreement_test, deterministic_check
from ..symbolic.dissipation import edge_rate
from ..strategies import HIDDEN_STACKS, NO_HIDDEN, claim_configs, hidden_stack
from ._util import EDGE_START, all_deterministic, combine, configs
from .base import CandidateCheck, Claim, Evidence

# (model, activation, d, sigma_w, sigma_b, sigma_a, beta, attention V = v I): the sup sits at rho = -1 for
# the first, fourth and fifth (beta > 0: the edge value is NOT lambda_bar there), at the edge otherwise
CONFIGS = (
    ("gaussian", "relu", 8, 1.0, 1.0, 1.0, 1.0, 1.0),
    ("gaussian", "relu", 6, 1.0, 1.5, 1.0, 0.0, 0.0),
    ("gaussian", "tanh", 5, 1.2, 0.3, 1.0, 2.0, 0.0),
    ("gaussian", "gelu", 10, 1.0, 1.5, 1.0, 1.0, 1.0),
    ("gaussian", "relu", 9, 1.0, 1.0, 1.0, 3.0, 0.5),
    ("gaussian", "erf", 7, 0.8, 0.5, 1.0, 0.5, 0.0),
)
BOUND_TOKENS = 8
ANTIPODAL_SPREAD = 0.05
POWER = 0.9                 # the power at which the minimal detectable error is stated
# where it is explored: Gaussian transformer, V = v I with v in [0, 1] (energy-lowering: C_att = 0); lambda_bar
# is a function of the kernel K alone, and a deep block is one more K (its hidden stack, the last field; the
# anchors are one-layer blocks)
DOMAIN = claim_configs(model=("gaussian",), activation=("relu", "tanh", "gelu", "erf"), d=(2, 10),
                       sigma_w=(0.5, 1.5), sigma_b=(0.0, 1.5), sigma_a=(0.5, 1.5), beta=(0.0, 3.0), V=(0.0, 1.0),
                       hidden=HIDDEN_STACKS)


# the models the statement applies to (budget["models"] picks among them; by default each configuration's own):
# layers whose noise is the Gaussian field of a kernel K (lambda_bar is a function of K, d and beta alone)
MODELS_APPLY = {"field": True, "unit": "layer"}


@dataclass(frozen=True)
class DissipationFormula:
    # lambda_bar(kernel, d, beta): `kernel` the model's K (k0, k1 and the stable gap k0 - K(1 - u);
    # ``experiments.model_kernel``: a deep block's is its composed kernel)
    lambda_bar: Callable[..., float]
    c_att: Callable[[float, np.ndarray, np.ndarray, np.ndarray], float]
    edge: Callable[[float, float, float], float]


@lru_cache(maxsize=None)
def _edge_fn():
    return function("dissipation.edge_rate", "math")


def derived_formula() -> DissipationFormula:
    return DissipationFormula(lambda kernel, d, beta: lambda_bar_from_kernel(kernel, d, beta)[0],
                              c_att, lambda d, k0, k1: _edge_fn()(d, k0, k1))


def independent_kernel(act, sw, sb, sa, hidden=()):
    """K by quadrature (not a derived closed form) for the deterministic evidence (``quadrature_kernel``; a
    deep block's `hidden` stack: composed with every stage by quadrature)."""
    return quadrature_kernel(act, sw, sb, sa, hidden=hidden)


def starts(n: int, d: int, seed) -> dict:
    """Spread-out (uniform on the sphere) and nearly antipodal (half the tokens near e_1, half near -e_1)."""
    rng = as_key(seed, "starts").generator()
    z = rng.standard_normal((n, d))
    x = np.zeros((n, d))
    x[: n // 2, 0], x[n // 2:, 0] = 1.0, -1.0
    x += ANTIPODAL_SPREAD * rng.standard_normal((n, d))
    return {"spread-out": z / np.linalg.norm(z, axis=1, keepdims=True),
            "nearly antipodal": x / np.linalg.norm(x, axis=1, keepdims=True)}


def _attention(d: int, beta: float, v: float):
    """Q = K = I, V = v I as the engine's attention operands (off when v = 0)."""
    eye = np.eye(d)[None]
    return None if v == 0 else Attention(True, float(beta), eye.copy(), eye.copy(), v * eye)


def check(formula: DissipationFormula, budget: dict, seed: int, level: float):
    cfgs = configs(budget, CONFIGS)
    det, sharp, bound = [], [], []
    # explored configurations end with their hidden stack; the anchors and older configurations are one-layer
    for i, (own, act, d, sw, sb, sa, beta, V, *deep) in enumerate(cfgs):
        text = deep[0] if deep else NO_HIDDEN
        stack = hidden_stack(text)
        for model in tuple(budget.get("models", (own,))):
            # a model other than the configuration's own runs on its own streams
            other = () if model == own else (model,)
            tag = (f"{act} d={d} sw={sw:g} sb={sb:g} sa={sa:g}" + (f" then {text}" if stack else "") + f" beta={beta:g}"
                   + (f" ({model})" if other else ""))
            # the model's own kernel: what its layers sample, what the formula reads
            mkf = model_kernel(model, ModelParams(d=d, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa,
                                                  hidden=stack))
            kf = independent_kernel(act, sw, sb, sa, stack) if model == "gaussian" else mkf
            if not math.isfinite(kf.k1):
                continue
            sup, arg, err = sup_ratio(kf, d, beta)
            lam = float(formula.lambda_bar(mkf, d, beta))
            det.append(deterministic_check(f"{tag}: lambda_bar = sup of the layer's Lf/f (argmax rho {arg:.6g})",
                                           lam, sup, tol=2 * err + 1e-12 * (1 + abs(sup)), error=err,
                                           method="generator of one exact Gaussian layer (second differences)",
                                           details={"argmax_rho": arg}))
            edge, eerr = edge_ratio(kf, d, beta)
            det.append(deterministic_check(f"{tag}: edge value = lim_(rho->1) of the layer's Lf/f",
                                           float(formula.edge(d, kf.k0, kf.k1)), edge,
                                           tol=2 * eerr + 1e-12 * (1 + abs(edge)), error=eerr,
                                           method="generator of one exact Gaussian layer at u = 1e-14"))
            u0 = EDGE_START if arg >= 1.0 else 1.0 - arg
            m, se, n = rate_estimate(two_tokens(d, u0), mkf, beta, int(budget["paths"]),
                                     as_key(seed, "sharp", i, *other), model=model)
            sharp.append(agreement_test(f"{tag}: initial rate of E f(rho_t) from rho0 = {1 - u0:.10g}", m, se,
                                        lam, level=level, n=n, seed=seed,
                                        method="exact layers, antithetic, Richardson over delta/1,2,4, "
                                               "cross-fitted control variates"))
            ca = float(formula.c_att(beta, np.eye(d), np.eye(d), V * np.eye(d)))
            att = _attention(d, beta, V)
            for name, X0 in starts(BOUND_TOKENS, d, as_key(seed, "bound", i)).items():
                mb, seb, nb = rate_estimate(X0, mkf, beta, int(budget["paths_bound"]),
                                            as_key(seed, "bound", i, name, *other), attention=att, model=model)
                bound.append(agreement_test(f"{tag} V={V:g} I: {name} start, rate of E E_beta <= lambda_bar + "
                                            f"C_att", mb, seb, lam + ca, level=level, n=nb, seed=seed,
                                            alternative="greater",
                                            method="exact layers, antithetic, Richardson over delta/1,2,4",
                                            details={"c_att": ca}))
    checks = [all_deterministic(r"$\bar\lambda$ and the edge value against the generator of one exact Gaussian "
                                r"layer", det,
                                method="deterministic (layer map second differences, quadrature kernel)")]
    if sharp:
        checks.append(combine(r"the initial rate of $E f(\rho_t)$ from the maximizing $\rho^*$ equals "
                              r"$\bar\lambda$", sharp,
                              level, method=f"two-sided z-tests, Bonferroni over {len(sharp)}"))
    if bound:
        checks.append(combine(r"$E[E_\beta]$ grows at most at rate $\bar\lambda + C_{\mathrm{att}}$ (spread-out and "
                              r"nearly antipodal tokens)",
                              bound, level, method=f"one-sided z-tests, Bonferroni over {len(bound)}"))
    return checks


# ---------------------------------------------------------------- check (a user's formula for lambda_bar)
def candidate_evidence(point: dict, seed: int, level: float) -> Evidence:
    """sup over rho of the generator of one exact Gaussian layer applied to f (numeric.layer_rates):
    the dynamics, not the derivation; deterministic with its stated numerical error."""
    kf = independent_kernel(point["activation"], point["sigma_w"], point["sigma_b"], point["sigma_a"],
                            hidden_stack(point.get("hidden")))
    value, argmax, err = sup_ratio(kf, int(point["d"]), point["beta"])
    tol = 4 * err + 1e-12 * (1 + abs(value))
    return Evidence(float(value), float(err), 1,
                    "sup over rho of the generator of one exact Gaussian layer (second differences of the layer "
                    "map, kernel by quadrature; independent of the derivation)", tolerance=tol,
                    details={"argmax_rho": float(argmax)})


def _derived_lambda_bar(v: dict) -> float:
    if not math.isfinite(v["k1"]):
        return math.inf
    return lambda_bar(v["activation"], int(v["d"]), v["sigma_w"], v["sigma_b"], v["sigma_a"], v["beta"],
                      hidden=hidden_stack(v.get("hidden")))[0]


CANDIDATE = CandidateCheck(
    variables=("d", "k0", "k1", "beta", "sigma_w", "sigma_b", "sigma_a"),
    axes=("d", "beta", "sigma_w", "sigma_b", "sigma_a"),
    derived=_derived_lambda_bar,
    evidence=candidate_evidence, error_scale=lambda v, derived: 1e-6 + 1e-4 * abs(derived),
    admissible=lambda pt: math.isfinite(numeric_kernel(pt["activation"], pt["sigma_w"], pt["sigma_b"], pt["sigma_a"],
                                                       hidden=hidden_stack(pt.get("hidden"))).k1),
    aliases=("lambda_bar",),
    # the design draws deep blocks too: the evidence is deterministic with its stated error, so its power does not
    # depend on the block (a deep point costs its two kernel tables, ~1-2 s each, once)
    domain={"hidden": HIDDEN_STACKS},
    description=r"$\sup_{\rho} \frac{L_2 f}{f}$ of the generator of one exact Gaussian layer (the dynamics, not the "
                r"derivation); deterministic, with its stated numerical error")


CLAIM = Claim(
    name="dissipation",
    title=r"Dissipation rate $\bar\lambda$ and the energy bound (Theorem 1.4 analogue)",
    statement=r"$\bar\lambda(\beta) = \sup_{\rho} \frac{L_2 f}{f}$ (edge value $(d-1)\,k_1 - (d-3)\,k_0$; "
              r"attained at $\rho = -1$ for some $\beta > 0$) and $E[E_\beta(\mu_t)] \le e^{(\bar\lambda + "
              r"C_{\mathrm{att}})\,t}\, E[E_\beta(\mu_0)]$, with $C_{\mathrm{att}} = 0$ for $Q = K = I$, $V = "
              r"vI$.",
    derivation="dissipation",
    formula=derived_formula,
    checker=check,
    statistic=r"$\sup_\rho$ of the exact layer's generator ratio (deterministic); initial rate of $E f(\rho_t)$"
              r" from $\rho^*$ (two-sided) and of $E[E_\beta]$ from spread-out or nearly antipodal tokens "
              r"(one-sided), exact Gaussian layers with Richardson over the step",
    level=0.999,
    tolerance=r"deterministic: twice the stated error of the layer's second differences (about $10^{-7}$ "
              r"relative); Monte Carlo: none (time-step bias removed by Richardson, $O(\delta^3)$ with $\delta "
              r"= 0.01$)",
    budgets={"quick": {"n_configs": 3, "paths": 400_000, "paths_bound": 20_000},
             "full": {"n_configs": len(CONFIGS), "paths": 4_000_000, "paths_bound": 200_000}},
    derived_text=lambda: f"lambda_edge = {sp.sstr(edge_rate())}; lambda_bar = sup_rho L2 f/f (numeric)",
    domain=DOMAIN, anchors=tuple((*c, NO_HIDDEN) for c in CONFIGS),
    candidate=CANDIDATE,
)
