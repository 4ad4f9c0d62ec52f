"""Claim `metastability`: noise helps the tokens leave metastable multi-cluster states (docs/mathematics.md, section 6).

At large beta the attention-only dynamics (Q = K = V = I) quickly forms several clusters that
then merge only on time scales ~ e^{beta (1 - rho_c)}: the tokens stay in a multi-cluster state.
With MLP noise that synchronizes (lambda_1 < 0 and an edge value (d-1) k1 - (d-3) k0 < 0), the time
to one cluster is finite and short.

Checker: the Gaussian transformer (engine, ``simulate_gaussian``) from the same uniform initial
tokens (one seed: the two arms are paired), with the MLP noise (sigma_a) and without it
(sigma_a = 0: attention only).  "One cluster" at a layer: ``E_0 < eps`` (``eps = 1e-3``;
``E_0 = (1/(2N^2)) sum_{i,j} (1 - rho_ij)`` is at least ``k (N - k)/N^2 (1 - rho)`` for two
clusters of k and N - k tokens at overlap rho).  tau = the first such time.

More (moved from this docstring): docs/modules.md, ``sssn_verify.claims.metastability``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm as _normal

from ..engine import simulate_gaussian
from ..numeric.kernels import kernel as numeric_kernel
from ..numeric.rng import as_key
from ..params import ModelParams
from ..stats import agreement_test
from ..strategies import claim_configs
from ._util import combine, configs
from .base import Claim

# (activation, d, N, beta, sigma_w, sigma_b, sigma_a): lambda_1 < 0 and a negative edge value
CONFIGS = (
    ("relu", 5, 8, 12.0, 1.0, 1.5, 1.0),
    ("relu", 6, 6, 16.0, 1.0, 1.2, 1.0),
)
DOMAIN = claim_configs(activation=("relu",), d=(5, 7), N=(4, 10), beta=(8.0, 20.0), sigma_w=(0.8, 1.2),
                       sigma_b=(1.3, 2.0), sigma_a=(0.8, 1.5))
EPS = 1e-3
CLUSTER_GAP = 0.05


def derived_formula():
    """(s, margin): the claim s (p_noise - p_att) >= margin (noise helps, by at least one half)."""
    return (1, 0.5)


def n_clusters(X: np.ndarray, gap: float = CLUSTER_GAP) -> int:
    """Connected components of the graph 1 - <x_i, x_j> < gap (single linkage)."""
    N = X.shape[0]
    close = (1 - X @ X.T) < gap
    seen, count = np.zeros(N, bool), 0
    for i in range(N):
        if seen[i]:
            continue
        count += 1
        stack = [i]
        seen[i] = True
        while stack:
            j = stack.pop()
            for k in np.nonzero(close[j] & ~seen)[0]:
                seen[k] = True
                stack.append(int(k))
    return count


def _first_hit(energy: np.ndarray, times: np.ndarray) -> np.ndarray:
    hit = energy < EPS
    return np.where(hit.any(axis=1), times[hit.argmax(axis=1)], np.inf)


def check(formula, budget: dict, seed: int, level: float):
    sign, margin = formula
    parts, law, cl = [], [], []
    cfgs = configs(budget, CONFIGS)
    k = 2 * len(cfgs)
    z_power = _normal.ppf(1 - (1 - level) / k) + _normal.ppf(0.8)
    for ci, (act, d, N, beta, sw, sb, sa) in enumerate(cfgs):
        T, L, n = float(budget["horizon"]), int(budget["depth"]), int(budget["paths"])
        p = ModelParams(d=int(d), n_tokens=int(N), horizon=T, beta=float(beta), activation=act, sigma_w=sw,
                        sigma_b=sb, sigma_a=sa)
        s = as_key(seed, "config", ci)
        noisy = simulate_gaussian(p, depth=L, n_paths=n, seed=s, progress=False)
        quiet = simulate_gaussian(p.with_(sigma_a=0.0), depth=L, n_paths=n, seed=s, progress=False)
        if not np.array_equal(noisy.init, quiet.init):
            raise AssertionError("the two arms must start from the same tokens")
        tau_n = _first_hit(noisy.energy, noisy.times)
        tau_a = _first_hit(quiet.energy, quiet.times)
        x_n, x_a = int(np.sum(tau_n <= T)), int(np.sum(tau_a <= T))
        # Agresti-Caffo: one success and one failure added to each arm
        pn, pa = (x_n + 1) / (n + 2), (x_a + 1) / (n + 2)
        diff = sign * (pn - pa)
        se = math.sqrt(pn * (1 - pn) / (n + 2) + pa * (1 - pa) / (n + 2))
        label = f"{act} d={d} N={N} beta={beta:g} sigma_a={sa:g}"
        long = simulate_gaussian(p.with_(sigma_a=0.0, horizon=10 * T), depth=10 * L, n_paths=min(n, 32), seed=s,
                                 progress=False)
        clusters_T = [n_clusters(X) for X in quiet.tokens]
        clusters_10T = [n_clusters(X) for X in long.tokens]
        kf = numeric_kernel(act, sw, sb, sa)
        parts.append(agreement_test(
            f"{label}: {'+' if sign > 0 else '-'}(P(tau <= T | noise) - P(tau <= T | attention only)) >= {margin:g}",
            diff, se, float(margin), level=level, n=2 * n, seed=s, alternative="less",
            method="Agresti-Caffo difference of proportions, one-sided z-test (null: the claimed effect)",
            details={"noise_reached": x_n, "attention_reached": x_a, "paths": n,
                     "min_detectable_shortfall": float(z_power * se),
                     "k0": kf.k0, "k1": kf.k1}))
        qn = (x_n + 2) / (n + 4)                       # Agresti-Coull
        parts.append(agreement_test(f"{label}: P(tau <= T | noise) >= 1/2 (time to one cluster finite)",
                                    qn, math.sqrt(qn * (1 - qn) / (n + 4)), 0.5, level=level, n=n, seed=s,
                                    alternative="less", method="Agresti-Coull proportion, one-sided z-test"))
        grid = [T / 4, T / 2, 3 * T / 4, T]
        finite = tau_n[np.isfinite(tau_n)]
        law.append({"config": label, "times": grid,
                    "noise_cdf": [float(np.mean(tau_n <= t)) for t in grid],
                    "attention_cdf": [float(np.mean(tau_a <= t)) for t in grid],
                    "noise_tau_quantiles": ([float(q) for q in np.quantile(finite, [0.1, 0.5, 0.9])]
                                            if finite.size else None),
                    "attention_only_reached_by_10T": float(np.mean(long.energy.min(axis=1) < EPS))})
        cl.append({"config": label, "attention_only_clusters_at_T": float(np.mean(clusters_T)),
                   "attention_only_clusters_at_10T": float(np.mean(clusters_10T)),
                   "noise_clusters_at_T": float(np.mean([n_clusters(X) for X in noisy.tokens]))})
    return [combine(r"noise helps leave multi-cluster states: $P(\text{one cluster by } T)$, with and without MLP "
                    r"noise",
                    parts, level, method=f"one-sided z-tests, Bonferroni over {len(parts)}",
                    details={"laws": law, "clusters": cl, "eps": EPS})]


CLAIM = Claim(
    name="metastability",
    title=r"Noise helps escape metastable multi-cluster states (large $\beta$)",
    statement=r"At large $\beta$, attention alone ($Q = K = V = I$) leaves the tokens in several clusters for "
              r"very long; with synchronizing noise from the perceptron layers the time to one cluster is "
              r"finite: the probability of one cluster by time $T$ exceeds that of attention alone by at least "
              r"$\frac{1}{2}$, and is at least $\frac{1}{2}$.",
    derivation=None,
    formula=derived_formula,
    checker=check,
    statistic=r"fraction of paths with $E_0 < 10^{-3}$ by time $T$, with noise against attention only (same "
              r"initial tokens)",
    level=0.999,
    tolerance=r"none (one-sided $z$-tests, Agresti-Caffo and Agresti-Coull; the claimed margin $1/2$ is the "
              r"statement)",
    budgets={"quick": {"n_configs": 1, "paths": 100, "depth": 100, "horizon": 2.0},
             "full": {"n_configs": len(CONFIGS), "paths": 2000, "depth": 200, "horizon": 2.0}},
    derived_text=lambda: (r"$P(\tau \le T \mid \text{noise}) - P(\tau \le T \mid \text{attention only}) \ge "
                           r"\frac{1}{2}$ and $P(\tau \le T \mid \text{noise}) \ge \frac{1}{2}$"),
    derived_kind="stated",
    domain=DOMAIN, anchors=CONFIGS,
)
