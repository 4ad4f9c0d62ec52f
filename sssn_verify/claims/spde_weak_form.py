"""Claim `spde_weak_form`: the weak form of the SPDE, derived by Itô on <mu_t, f> (docs/mathematics.md, section 4).

    d<mu_t, f> = <mu_t, grad f . P_x A[mu_t] + (k0/2) Delta_S f> dt + martingale

(for a pair functional, plus the common-noise cross term).  The derivation
(``symbolic/spde.ito_drift_parts``) applies Itô's formula to ``Phi(X) = <mu_t, f>`` for the N-token
SDE in the coordinates of R^{N d}; the bridge turns its three parts (transport, projection drift
``gamma x``, second-order term ``tr(Hess Phi Sigma)/2``) into numbers.

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.spde_weak_form``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import norm as _normal

from ..bridge import function
from ..numeric import rng as _rng
from ..numeric.attention import attend, operands, work
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.experiments import model_kernel
from ..numeric.layer_rates import initial_functional_rate_paths
from ..params import ModelParams
from ..stats import agreement_test, mean_ci
from ..strategies import claim_configs
from ._util import combine, configs, estimates_figure
from .base import Claim

# (activation, d, N, beta, sigma_w, sigma_b, sigma_a)
CONFIGS = (
    ("relu", 3, 3, 1.0, 1.0, 0.5, 1.0),
    ("tanh", 2, 3, 2.0, 1.2, 0.3, 1.0),
    ("relu", 3, 2, 0.5, 1.0, 1.0, 0.8),
)
DOMAIN = claim_configs(activation=("relu", "tanh", "erf"), d=(2, 3), N=(2, 3), beta=(0.25, 3.0),
                       sigma_w=(0.5, 1.5), sigma_b=(0.0, 1.0), sigma_a=(0.5, 1.25))
KINDS = ("linear", "quadratic", "energy")
# the models the statement applies to (budget["models"] picks among them): layers whose noise is the
# Gaussian field of a kernel K
MODELS_APPLY = {"field": True, "unit": "layer"}


@dataclass(frozen=True)
class WeakFormDrift:
    """The claim's formula: ``parts(kind, d, N)`` -> callable(*args) returning (transport, projection
    drift, second-order term); ``combine(parts)`` -> the drift (mutation tests drop a part)."""

    parts: Callable[[str, int, int], Callable]
    combine: Callable[[tuple], float]


def _parts(kind: str, d: int, N: int):
    return function("spde.drift_parts", "math", f"{kind}:{d}:{N}")


def derived_formula() -> WeakFormDrift:
    return WeakFormDrift(_parts, lambda p: p[0] + p[1] + p[2])


def _setup(config, seed, index: int):
    act, d, N, beta, sw, sb, sa = config
    d, N = int(d), int(N)
    rng = _rng.as_key(seed, "setup", index).generator()
    X = rng.standard_normal((N, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    a = rng.standard_normal(d)
    a /= np.linalg.norm(a)
    Q, K, V = rng.standard_normal((3, d, d)) / np.sqrt(d)
    p = ModelParams(d=d, n_tokens=N, beta=float(beta), activation=act, sigma_w=sw, sigma_b=sb, sigma_a=sa,
                    Q=Q, K=K, V=V)
    return p, X, a


def drift_arguments(p: ModelParams, X: np.ndarray, a: np.ndarray, kf) -> tuple:
    """The bridge's arguments at tokens X: coordinates, attention outputs (engine's attention unit),
    a, K(<x_i, x_j>) for i < j (the kernel), k0, beta."""
    att = operands(p)
    N, d = X.shape
    A = np.array(attend(np.ascontiguousarray(X), att, work(N, d, att))) if att.on else np.zeros((N, d))
    G = X @ X.T
    Ks = [float(kf.value(G[i, j])) for i in range(N) for j in range(i + 1, N)]
    return (*X.ravel(), *A.ravel(), *a, *Ks, float(kf.k0), float(p.beta))


def check(formula: WeakFormDrift, budget: dict, seed: int, level: float):
    parts, labels, est, se, exp, power = [], [], [], [], [], []
    cfgs = configs(budget, CONFIGS)
    models = tuple(budget.get("models", ("gaussian",)))
    runs = [(ci, config, model) for ci, config in enumerate(cfgs) for model in models]
    k_tests = len(runs) * len(KINDS)
    z = _normal.ppf(1 - (1 - level) / (2 * k_tests)) + _normal.ppf(0.8)
    for ci, config, model in runs:
        p, X, a = _setup(config, seed, ci)
        kf = (numeric_kernel(p.activation, p.sigma_w, p.sigma_b, p.sigma_a, force_quadrature=True)
              if model == "gaussian" else model_kernel(model, p))
        args = drift_arguments(p, X, a, kf)
        for kind in KINDS:
            derived_parts = formula.parts(kind, p.d, p.n_tokens)(*args)
            drift = float(formula.combine(tuple(derived_parts)))
            rates, _ = initial_functional_rate_paths(X, kf, kind, int(budget["paths"]),
                                                     _rng.as_key(seed, "rates", ci, kind, model), a=a, beta=p.beta,
                                                     delta=budget.get("delta"), attention=operands(p), model=model)
            m = mean_ci(rates)
            label = f"{config[0]} d={p.d} N={p.n_tokens} beta={p.beta:g}: {kind}" + (
                "" if models == ("gaussian",) else f" ({model})")
            ito = float(derived_parts[1] + derived_parts[2])
            parts.append(agreement_test(f"{label}: d/dt E<mu_t, f> = Ito drift", m.mean, m.stderr, drift,
                                        level=level, n=m.n, seed=seed,
                                        details={"transport": float(derived_parts[0]),
                                                 "projection_drift": float(derived_parts[1]),
                                                 "second_order": float(derived_parts[2]),
                                                 "min_detectable_error": float(z * m.stderr),
                                                 "ito_correction": ito}))
            labels.append(label)
            est.append(m.mean)
            se.append(m.stderr)
            exp.append(drift)
            power.append({"label": label, "min_detectable_error": float(z * m.stderr), "ito_correction": ito})
    return [combine(r"$\frac{d}{dt} E\langle \mu_t, f\rangle$ at $t = 0$ (exact layers, Richardson, antithetic) "
                    r"against the Ito drift", parts, level,
                    method=f"two-sided z-tests (no allowance), Bonferroni over {len(parts)}",
                    details={"power": power,
                             "figure": estimates_figure(labels, est, se, exp, r"$\frac{d}{dt} E\langle\mu_t, f\rangle$")})]


def _derived_text() -> str:
    return ("d<mu_t, f> = <mu_t, grad f . P_x A[mu_t] + (k0/2) Delta_S f> dt + <mu_t, grad f . P_x W(dt, x)> "
            "(Ito on <mu_t, f> for N tokens; pair functionals add the common-noise term "
            "(1/2) sum_{i != j} K(rho_ij) tr(P_i d_i d_j Phi P_j))")


CLAIM = Claim(
    name="spde_weak_form",
    title=r"Weak form of the stochastic PDE: $\frac{d}{dt} E\langle \mu_t, f\rangle$ is the Itô drift",
    statement=r"For the $N$-token system, $d\langle \mu_t, f\rangle = \langle \mu_t, \nabla f \cdot P_x A + "
              r"\frac{k_0}{2} \Delta_S f\rangle\, dt + dM_t$ with $M_t$ a martingale and $\Delta_S f = "
              r"\operatorname{tr}(P_x \nabla^2 f\, P_x) - (d-1)\langle x, \nabla f\rangle$ (and the common-noise"
              r" cross term for pair functionals): checked for $f = \langle a, x\rangle$, $\langle a, "
              r"x\rangle^2$ and the pair functional of $E_\beta$.",
    derivation="spde",
    formula=derived_formula,
    checker=check,
    statistic=r"per-path Richardson (steps $\delta$, $\delta/2$, $\delta/4$) of antithetic one-layer increments"
              r" of $\langle \mu, f\rangle$, mean over paths",
    level=0.999,
    tolerance=r"none (time-step bias $O(\delta^3)$ removed, two-sided $z$-test)",
    budgets={"quick": {"n_configs": 2, "paths": 20_000},
             "full": {"n_configs": len(CONFIGS), "paths": 240_000}},
    derived_text=_derived_text,
    domain=DOMAIN, anchors=CONFIGS,
)
