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
# # Synchronization by noise
#
# Self-attention with a large inverse temperature `beta` has **metastable multi-cluster
# states**: tokens collapse inside each cluster quickly, but well-separated clusters barely
# see each other (their softmax weights are of order `exp(-beta (1 - <x, y>))`), so they stay
# apart for times of order `exp(beta)`.  The random MLP blocks add a noise that is *common* to
# all tokens (docs/mathematics.md, section 3).  When the top Lyapunov exponent of the noise-only flow is
# negative, `lambda_1 < 0`, that noise pushes nearby tokens together at exponential rate
# `lambda_1`, and the clusters merge (docs/mathematics.md, section 6).  When `lambda_1 > 0` it does not.
#
# This notebook simulates the limiting SDE (projected Euler scheme of `sssn_verify.engine`)
#
# $$dX_i = [P_{X_i} A_i(X) + c(X_i)]\,dt + P_{X_i} W(dt, X_i),$$
#
# started from the same multi-cluster configuration, with and without the MLP noise, and
# compares the **synchronization time**: the first time `t` at which the largest pairwise
# distance `max_{i,j} |x_i - x_j|` drops below a threshold (paths that never get there are
# censored at the horizon `T`).  Time `t` is depth times the step: layer `l` sits at
# `t = l T / L`.
#
# Set `SSSN_NOTEBOOK_SMALL=1` to shrink every simulation (this is what CI does).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from sssn_verify import ModelParams
from sssn_verify.engine import simulate_sde, simulate_transformer
from sssn_verify.regime import regime

SMALL = os.environ.get("SSSN_NOTEBOOK_SMALL") == "1"

N_CLUSTERS = 3          # cluster centres: the first N_CLUSTERS coordinate axes (pairwise orthogonal)
PER_CLUSTER = 2 if SMALL else 4
SPREAD = 0.05           # standard deviation of the jitter around each centre, before projection
BETA = 9.0              # large inverse temperature: metastable clusters
HORIZON = 8.0 if SMALL else 15.0
STEPS = 400 if SMALL else 1500
STORE_EVERY = 5 if SMALL else 10
N_PATHS = 8 if SMALL else 64
SEEDS = (2026, 2027) if SMALL else (2026, 2027, 2028)
THRESHOLD = 0.05        # synchronized: max pairwise distance below this
WIDTHS = (16, 64)       # MLP widths m of the finite transformer (depth L = STEPS layers)
COLORS = {"attention only": "C0", "attention + noise": "C1", "noise only": "C2"}
RELU = dict(activation="relu", sigma_w=1.0, sigma_b=0.0, sigma_a=1.5)

print(f"SMALL={SMALL}: {N_CLUSTERS * PER_CLUSTER} tokens, T={HORIZON}, {STEPS} steps "
      f"(dt={HORIZON / STEPS:.3g}), {N_PATHS} paths per seed, seeds {SEEDS}")


# %% [markdown]
# ## Helpers (plain numpy on the stored trajectories)
#
# * `cluster_configuration`: `N_CLUSTERS` tight clusters around orthogonal unit vectors, so
#   every inter-cluster distance starts at about `sqrt(2)`;
# * `max_pairwise_distance`: `max_{i,j} |x_i - x_j| = sqrt(2 - 2 min_{i,j} <x_i, x_j>)` at
#   every stored time;
# * `synchronization_times`: the first stored time below `THRESHOLD` (`inf` if never).

# %%
def cluster_configuration(d, n_clusters, per_cluster, spread, seed):
    """(n_clusters * per_cluster, d) unit vectors jittered around the first coordinate axes."""
    rng = np.random.default_rng(seed)
    centres = np.eye(d)[:n_clusters]
    x = np.repeat(centres, per_cluster, axis=0) + spread * rng.standard_normal((n_clusters * per_cluster, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def max_pairwise_distance(trajectory):
    """(P, S, N, d) stored tokens -> (P, S) largest chordal distance between two tokens."""
    gram = np.einsum("psid,psjd->psij", trajectory, trajectory)
    return np.sqrt(np.clip(2.0 - 2.0 * gram.min(axis=(-1, -2)), 0.0, None))


def synchronization_times(times, distance, threshold):
    """First time with distance < threshold, per path (inf when censored at the horizon)."""
    below = distance < threshold
    return np.where(below.any(axis=1), times[below.argmax(axis=1)], np.inf)


def run(params, seed, init):
    """Simulate the SDE from `init` and return (stored times, max distances, result)."""
    res = simulate_sde(params, STEPS, n_paths=N_PATHS, seed=seed, init=init, store_every=STORE_EVERY)
    times = res.times[::STORE_EVERY]
    return times, max_pairwise_distance(res.trajectory), res


def summary(sync):
    """Fraction synchronized and median time (censored values count as > T)."""
    frac = np.isfinite(sync).mean()
    med = np.median(sync)
    return frac, med


# %% [markdown]
# ## Three dynamics on S^2 from the same clusters
#
# `d = 3`, attention with `Q = K = V = I` at `beta = 9`, and ReLU noise
# (`sigma_w = 1, sigma_b = 0, sigma_a = 1.5`).  The three runs share the seed, hence the
# same initial tokens and (for the two noisy ones) the same Brownian field:
#
# * **attention only**: `sigma_a = 0` (no MLP noise);
# * **attention + noise**: the full model;
# * **noise only**: `V = 0` (attention switched off).

# %%
D = 3
X0 = cluster_configuration(D, N_CLUSTERS, PER_CLUSTER, SPREAD, seed=0)
base = ModelParams(d=D, n_tokens=len(X0), horizon=HORIZON, beta=BETA, **RELU)
reg3 = regime(base.with_(V=0.0))
print(f"noise (ReLU, d = 3): k0 = {reg3.k0:.4g}, k1 = {reg3.k1:.4g}, lambda_1 = {reg3.lambda1:.4g} "
      f"(two-point synchronization: {reg3.synchronizes}); inter-cluster attention weight "
      f"~ exp(-beta) = {np.exp(-BETA):.1e}")
SCENARIOS = {
    "attention only": base.with_(sigma_a=0.0),
    "attention + noise": base,
    "noise only": base.with_(V=0.0),
}
runs = {}
for label, params in SCENARIOS.items():
    per_seed = [run(params, seed, X0) for seed in SEEDS]
    times = per_seed[0][0]
    dist = np.concatenate([r[1] for r in per_seed])
    sync = np.concatenate([synchronization_times(times, r[1], THRESHOLD) for r in per_seed])
    runs[label] = dict(times=times, dist=dist, sync=sync, per_seed=per_seed)
    frac, med = summary(sync)
    print(f"{label:18s} synchronized by T={HORIZON:g}: {frac:5.0%} of {sync.size} paths; "
          f"median synchronization time {med:.3g}")

# %% [markdown]
# ### The tokens on the sphere
#
# One path of each dynamics: the initial clusters (grey) and the tokens at the horizon.

# %%
def sphere_axes(ax, title):
    u, v = np.mgrid[0:2 * np.pi:30j, 0:np.pi:15j]
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v),
                      color="0.85", linewidth=0.4)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_zlabel("$x_3$")
    ax.set_title(title, fontsize=9)
    ax.set_box_aspect((1, 1, 1))


fig = plt.figure(figsize=(12, 4))
for k, (label, r) in enumerate(runs.items()):
    ax = fig.add_subplot(1, 3, k + 1, projection="3d")
    sphere_axes(ax, f"{label}: tokens at t = 0 and t = {HORIZON:g}")
    res = r["per_seed"][0][2]
    ax.scatter(*X0.T, color="0.5", s=15, label="t = 0")
    ax.scatter(*res.tokens[0].T, color="C3", s=30, label=f"t = {HORIZON:g}")
    ax.legend(loc="upper left", fontsize=7)
fig.suptitle(f"Tokens on $S^2$ (d = 3, beta = {BETA:g}, ReLU noise, one path)")
fig.tight_layout()
plt.show()

# %% [markdown]
# ### Largest pairwise distance against time
#
# Median over all paths and seeds, with the 10%-90% band; the dotted line is the
# synchronization threshold.  Log scale: once synchronized, distances shrink exponentially.

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for label, r in runs.items():
    dist = np.maximum(r["dist"], 1e-12)
    lo, med, hi = np.quantile(dist, [0.1, 0.5, 0.9], axis=0)
    ax.plot(r["times"], med, color=COLORS[label], label=f"{label} (median)")
    ax.fill_between(r["times"], lo, hi, color=COLORS[label], alpha=0.2)
ax.axhline(THRESHOLD, color="k", ls=":", label=f"threshold {THRESHOLD:g}")
ax.set_yscale("log")
ax.set_xlabel("time t (= layer x T / L)")
ax.set_ylabel(r"$\max_{i,j} |x_i - x_j|$")
ax.set_title(f"Escape from {N_CLUSTERS} metastable clusters (d = 3, beta = {BETA:g})")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ### Synchronization times across seeds
#
# Empirical distribution of the synchronization time (paths not synchronized by `T` never
# reach the curve's top), and a per-seed table.  The Mann-Whitney test compares the two
# noisy dynamics (censored paths rank last, which is what "slower than T" means).

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for label, r in runs.items():
    s = np.sort(r["sync"])
    ax.step(np.concatenate([[0.0], s[np.isfinite(s)], [HORIZON]]),
            np.concatenate([[0.0], np.arange(1, np.isfinite(s).sum() + 1) / s.size,
                            [np.isfinite(s).mean()]]),
            where="post", color=COLORS[label], label=label)
ax.set_xlim(0, HORIZON)
ax.set_ylim(-0.02, 1.02)
ax.set_xlabel("synchronization time t")
ax.set_ylabel("fraction of paths synchronized")
ax.set_title(f"When max distance first drops below {THRESHOLD:g} ({len(SEEDS)} seeds x {N_PATHS} paths)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

print(f"{'dynamics':18s} " + " ".join(f"{'seed ' + str(s):>22s}" for s in SEEDS))
for label, r in runs.items():
    cells = []
    for times, dist, _ in r["per_seed"]:
        frac, med = summary(synchronization_times(times, dist, THRESHOLD))
        cells.append(f"{frac:4.0%} sync, median {med:5.3g}")
    print(f"{label:18s} " + " ".join(f"{c:>22s}" for c in cells))

a, b = runs["attention + noise"]["sync"], runs["noise only"]["sync"]
test = stats.mannwhitneyu(np.where(np.isfinite(a), a, 2 * HORIZON), np.where(np.isfinite(b), b, 2 * HORIZON))
print(f"Mann-Whitney (attention + noise vs noise only): U = {test.statistic:.0f}, p = {test.pvalue:.3g}")

# %% [markdown]
# ### The network itself: a finite-width transformer
#
# The SDE is the limit `L, m -> infinity`.  The same experiment (attention + ReLU noise) through
# the transformer of docs/mathematics.md, section 1, `L = STEPS` layers (`delta = T / L`) and MLP width `m`,
# from the same clusters.  The Mann-Whitney p-values compare each width's synchronization
# times with the SDE's (at the default sizes, m = 64 is indistinguishable from the limit).

# %%
net = {}
for m in WIDTHS:
    sync = []
    for seed in SEEDS:
        res = simulate_transformer(base, STEPS, m, n_paths=N_PATHS, seed=seed, init=X0, store_every=STORE_EVERY)
        times = res.times[::STORE_EVERY]
        sync.append(synchronization_times(times, max_pairwise_distance(res.trajectory), THRESHOLD))
    net[m] = np.concatenate(sync)
    frac, med = summary(net[m])
    print(f"transformer m = {m:3d}, L = {STEPS}: synchronized {frac:4.0%}, median time {med:.3g}")

fig, ax = plt.subplots(figsize=(7, 4))
curves = {"SDE (L, m = inf), attention + noise": runs["attention + noise"]["sync"]}
curves.update({f"transformer m = {m}, L = {STEPS}": net[m] for m in WIDTHS})
for k, (label, sync) in enumerate(curves.items()):
    s = np.sort(sync[np.isfinite(sync)])
    ax.step(np.concatenate([[0.0], s, [HORIZON]]),
            np.concatenate([[0.0], np.arange(1, s.size + 1) / sync.size, [s.size / sync.size]]),
            where="post", color=f"C{k + 3}", label=label)
ax.set_xlim(0, HORIZON)
ax.set_ylim(-0.02, 1.02)
ax.set_xlabel("synchronization time t")
ax.set_ylabel("fraction of paths synchronized")
ax.set_title("Finite transformer vs its SDE limit (d = 3, attention + ReLU noise)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
for m in WIDTHS:
    test = stats.mannwhitneyu(np.where(np.isfinite(net[m]), net[m], 2 * HORIZON),
                              np.where(np.isfinite(a), a, 2 * HORIZON))
    print(f"Mann-Whitney (transformer m = {m} vs SDE): p = {test.pvalue:.3g}")

# %% [markdown]
# ## An activation with `lambda_1 > 0` does not synchronize
#
# For the noise-only flow, `lambda_1 = ((d-3) k1 - (d-1) k0)/2` (docs/mathematics.md, section 5), so in
# `d = 3` it is negative for every activation; `phi(u) = sin(3u)` makes it positive as soon
# as `d >= 4` (its `k1 = K'(1)` is large).  We compare ReLU and `sin(3u)` in `d = 4` (the same
# three clusters, now on `S^3`), noise only and with attention.

# %%
D4 = 4
X4 = cluster_configuration(D4, N_CLUSTERS, PER_CLUSTER, SPREAD, seed=0)
ACTS = {"relu": dict(RELU, sigma_a=1.0), "sin(3*u)": dict(activation="sin(3*u)", sigma_w=1.0,
                                                          sigma_b=0.0, sigma_a=1.0)}
runs4, lambda1 = {}, {}
for act, kw in ACTS.items():
    p4 = ModelParams(d=D4, n_tokens=len(X4), horizon=HORIZON, beta=BETA, **kw)
    reg = regime(p4.with_(V=0.0))
    lambda1[act] = reg.lambda1
    print(f"{act:9s} d = {D4}: k0 = {reg.k0:.4g}, k1 = {reg.k1:.4g}, lambda_1 = {reg.lambda1:+.4g} "
          f"(two-point synchronization: {reg.synchronizes})")
    for label, params in (("noise only", p4.with_(V=0.0)), ("attention + noise", p4)):
        times, dist, _ = run(params, SEEDS[0], X4)
        sync = synchronization_times(times, dist, THRESHOLD)
        runs4[(act, label)] = dict(times=times, dist=dist, sync=sync)
        frac, med = summary(sync)
        print(f"{act:9s} {label:18s}: synchronized {frac:4.0%}, median time {med:.3g}, "
              f"median final distance {np.median(dist[:, -1]):.3g}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, act in zip(axes, ACTS):
    for label in ("noise only", "attention + noise"):
        r = runs4[(act, label)]
        lo, med, hi = np.quantile(np.maximum(r["dist"], 1e-12), [0.1, 0.5, 0.9], axis=0)
        ax.plot(r["times"], med, color=COLORS[label], label=f"{label} (median)")
        ax.fill_between(r["times"], lo, hi, color=COLORS[label], alpha=0.2)
    ax.axhline(THRESHOLD, color="k", ls=":", label=f"threshold {THRESHOLD:g}")
    ax.set_yscale("log")
    ax.set_xlabel("time t")
    ax.set_ylabel(r"$\max_{i,j} |x_i - x_j|$")
    ax.set_title(f"phi = {act}, d = {D4}: lambda_1 = {lambda1[act]:+.3g}")
    ax.legend(fontsize=8)
fig.suptitle("lambda_1 < 0 (ReLU) synchronizes, lambda_1 > 0 (sin 3u) does not")
fig.tight_layout()
plt.show()
