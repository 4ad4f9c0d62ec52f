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
# # Regime explorer
#
# Pick an activation (from the registry, or type an expression in `u` such as `sin(3*u)` or
# `tanh(u) + 0.1*u`), the dimension `d`, the MLP scales `sigma_w, sigma_b, sigma_a`, the
# inverse temperature `beta` and whether attention (`Q = K = V = I`) is on.  The explorer shows
#
# * the kernel constants `k0 = K(1)`, `k1 = K'(1)` and the rates of docs/mathematics.md, section 5:
#   `lambda_1 = ((d-3) k1 - (d-1) k0)/2` (two-point synchronization when `< 0`),
#   `lambda_bar(beta)` with the `rho` where its supremum sits, and the attention constant
#   `C_att` (energy dissipation when `lambda_bar + C_att < 0`), from `sssn_verify.regime`;
# * the phase diagram in `(d, sigma_b)`: the sign regions of `lambda_1` and `lambda_bar`,
#   with the derived ReLU boundary `sigma_b = sigma_w sqrt(2/(d-3))` and the current point;
# * a short simulation of the limiting SDE (`sssn_verify.engine.simulate_sde`): the tokens
#   started uniformly or in one tight cluster (on the sphere `S^2` when `d = 3`, else the
#   distribution of their overlaps `<x_i, x_j>`) and the mean
#   interaction energy `E[E_beta(mu_t)]` against the bound
#   `exp((lambda_bar + C_att) t) E[E_beta(mu_0)]`;
# * the law of synchronization (docs/mathematics.md, section 8, `sssn_verify.sync_time`): the Lyapunov spectrum,
#   the variance rate `sigma^2` of `log|x_1 - x_2|`, and the law of the time two tokens take to
#   come from distance `eps0` to `eps` (inverse Gaussian when `lambda_1 < 0`), with two-token
#   runs of the Gaussian transformer over the predicted CDF.
#
# With ipywidgets and a live Jupyter front-end the controls update everything; without them
# (a script, a static rendering, CI) the same function runs once on fixed points below.
# `SSSN_NOTEBOOK_SMALL=1` shrinks the simulations and the phase-diagram grid (CI).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from sssn_verify import ModelParams, SSSNError, get_activation, registry_names
from sssn_verify.engine import simulate_sde
from sssn_verify.phase_diagram import phase_diagram_figure
from sssn_verify.regime import regime

SMALL = os.environ.get("SSSN_NOTEBOOK_SMALL") == "1"

N_TOKENS = 8 if SMALL else 24
N_PATHS = 16 if SMALL else 200
HORIZON = 2.0
STEPS = 100 if SMALL else 400
SEED = 7
D_AXIS = np.arange(2, 13 if SMALL else 17)
SIGMA_B_AXIS = np.linspace(0.0, 2.5, 9 if SMALL else 26)

START_SPREAD = 0.1  # "tight cluster" start: tokens = Pi(e_1 + START_SPREAD * gaussian)
DEFAULTS = dict(activation="relu", expression="", d=3, sigma_w=1.0, sigma_b=1.0, sigma_a=1.0,
                beta=1.0, attention=True, start="uniform")


# %% [markdown]
# ## The pieces
#
# `make_params` validates the choice (a typed expression wins over the dropdown);
# `show_regime` prints the rates and verdicts; `phase_figure` draws the sign regions;
# `simulation_figure` runs the SDE and draws tokens and energy.

# %%
def make_params(activation, expression, d, sigma_w, sigma_b, sigma_a, beta, attention, n_tokens=N_TOKENS):
    act = get_activation(expression.strip() if expression and expression.strip() else activation)
    return ModelParams(d=d, n_tokens=n_tokens, horizon=HORIZON, beta=beta, activation=act,
                       sigma_w=sigma_w, sigma_b=sigma_b, sigma_a=sigma_a, V=None if attention else 0.0)


def show_regime(params):
    reg = regime(params)
    print(reg.text())
    return reg


def phase_figure(params, reg):
    """Sign regions of (lambda_1, lambda_bar(beta)) over (d, sigma_b), current point marked."""
    point = dict(d=params.d, sigma_b=params.sigma_b,
                 label=f"current point (lambda_bar + C_att = {reg.lambda_bar + reg.c_att:.3g})")
    fig, ax = plt.subplots(figsize=(11, 4.5))
    phase_diagram_figure(params, x="d", y="sigma_b", xs=D_AXIS, ys=SIGMA_B_AXIS, point=point, ax=ax)
    ax.get_legend().set_bbox_to_anchor((1.01, 1.0))  # beside the axes: the point stays visible
    fig.tight_layout()
    return fig


def start_tokens(params, start):
    """None (i.i.d. uniform tokens, drawn by the engine) or one tight cluster around e_1."""
    if start == "uniform":
        return None
    rng = np.random.default_rng(SEED)
    x = np.eye(params.d)[0] + START_SPREAD * rng.standard_normal((params.n_tokens, params.d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def simulation_figure(params, reg, start="uniform"):
    """Tokens (S^2 scatter for d = 3, overlap histogram otherwise) and mean energy vs its bound."""
    betas = (params.beta,) if params.beta > 0 else ()
    res = simulate_sde(params, STEPS, n_paths=N_PATHS, seed=SEED, betas=betas,
                       init=start_tokens(params, start))
    energy = res.energies[:, :, 0] if betas else res.energy
    mean = energy.mean(axis=0)
    se = energy.std(axis=0, ddof=1) / np.sqrt(energy.shape[0])
    rate = reg.lambda_bar + reg.c_att
    bound = np.exp(rate * res.times) * mean[0]

    fig = plt.figure(figsize=(12, 4.3))
    if params.d == 3:
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        u, v = np.mgrid[0:2 * np.pi:30j, 0:np.pi:15j]
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.4)
        ax.scatter(*res.init[0].T, color="0.5", s=12, label="t = 0")
        ax.scatter(*res.tokens[0].T, color="C3", s=25, label=f"t = {params.horizon:g}")
        ax.set_xlabel("$x_1$")
        ax.set_ylabel("$x_2$")
        ax.set_zlabel("$x_3$")
        ax.set_box_aspect((1, 1, 1))
        ax.set_title(f"{params.n_tokens} tokens on $S^2$ (one path)", fontsize=9)
    else:
        ax = fig.add_subplot(1, 2, 1)
        iu = np.triu_indices(params.n_tokens, 1)
        for X, lab, col in ((res.init, "t = 0", "0.5"), (res.tokens, f"t = {params.horizon:g}", "C3")):
            rho = np.einsum("pid,pjd->pij", X, X)[:, iu[0], iu[1]].ravel()
            ax.hist(rho, bins=40, range=(-1, 1), density=True, alpha=0.6, color=col, label=lab)
        ax.set_xlabel(r"overlap $\rho_{ij} = \langle x_i, x_j \rangle$")
        ax.set_ylabel("density (all pairs, all paths)")
        ax.set_title(f"pairwise overlaps, d = {params.d} (rho = 1: synchronized)", fontsize=9)
    ax.legend(fontsize=8)

    ax = fig.add_subplot(1, 2, 2)
    ax.plot(res.times, mean, color="C0", label=f"Monte Carlo mean ({N_PATHS} paths)")
    floor = 0.1 * mean.min()  # keep the log axis readable when the band reaches 0
    ax.fill_between(res.times, np.maximum(mean - 2 * se, floor), mean + 2 * se, color="C0", alpha=0.25,
                    label="+- 2 standard errors")
    ax.plot(res.times, bound, "k--", label=f"bound exp(({reg.lambda_bar:.3g} + {reg.c_att:.3g}) t) E_0")
    ax.set_yscale("log")
    top = (mean + 2 * se).max()
    ax.set_ylim(min(floor, 0.5 * bound.min()), max(10 * top, min(bound.max(), 1e4 * top)))
    ax.set_xlabel("time t (= layer x T / L)")
    ax.set_ylabel(rf"$E[\mathcal{{E}}_{{\beta}}(\mu_t)]$, beta = {params.beta:g}")
    verdict = {True: "dissipates", False: "does not dissipate", None: "dissipation undetermined"}[reg.dissipates]
    ax.set_title(f"mean interaction energy vs its bound ({verdict})", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle(f"SDE, {params.activation.name}, d={params.d}, sigma=({params.sigma_w:g}, {params.sigma_b:g}, "
                 f"{params.sigma_a:g}), beta={params.beta:g}, attention {'on' if params.attention_on else 'off'}",
                 fontsize=10)
    fig.tight_layout()
    return fig, res


def explore(activation=DEFAULTS["activation"], expression=DEFAULTS["expression"], d=DEFAULTS["d"],
            sigma_w=DEFAULTS["sigma_w"], sigma_b=DEFAULTS["sigma_b"], sigma_a=DEFAULTS["sigma_a"],
            beta=DEFAULTS["beta"], attention=DEFAULTS["attention"], start=DEFAULTS["start"], simulate=True):
    """Everything for one parameter point; bad input prints the library's one-line message."""
    try:
        params = make_params(activation, expression, d, sigma_w, sigma_b, sigma_a, beta, attention)
        reg = show_regime(params)
    except SSSNError as exc:
        print(f"invalid choice: {exc}")
        return None
    phase_figure(params, reg)
    plt.show()
    if simulate:
        try:
            simulation_figure(params, reg, start)
            plt.show()
        except SSSNError as exc:
            print(f"simulation failed: {exc}")
    return reg


# %% [markdown]
# ## Interactive controls
#
# Sliders act on release.  A typed expression (in `u`) overrides the dropdown; clear it to
# use the dropdown again.  Non-closed-form activations build their kernel by quadrature, so
# their first phase diagram takes a few seconds.

# %%
try:
    import ipywidgets as widgets
except ImportError:  # no widgets: the static cells below show the same output
    widgets = None

if widgets is None:
    print("ipywidgets is not installed: see the static output below "
          "(pip install -e '.[notebooks]' for the interactive controls).")
else:
    slider = dict(continuous_update=False, style={"description_width": "initial"})
    ui = widgets.interactive(
        explore,
        activation=widgets.Dropdown(options=registry_names(), value=DEFAULTS["activation"],
                                    description="activation"),
        expression=widgets.Text(value="", placeholder="e.g. sin(3*u)", description="or phi(u) =",
                                continuous_update=False),
        d=widgets.IntSlider(value=DEFAULTS["d"], min=2, max=16, description="d", **slider),
        sigma_w=widgets.FloatSlider(value=1.0, min=0.05, max=3.0, step=0.05, description="sigma_w", **slider),
        sigma_b=widgets.FloatSlider(value=1.0, min=0.0, max=2.5, step=0.05, description="sigma_b", **slider),
        sigma_a=widgets.FloatSlider(value=1.0, min=0.05, max=3.0, step=0.05, description="sigma_a", **slider),
        beta=widgets.FloatSlider(value=1.0, min=0.0, max=10.0, step=0.1, description="beta", **slider),
        attention=widgets.Checkbox(value=True, description="attention (Q = K = V = I)"),
        start=widgets.ToggleButtons(options=["uniform", "tight cluster"], value="uniform",
                                    description="tokens start"),
        simulate=widgets.fixed(True),
    )
    display(ui)

# %% [markdown]
# ## Static output
#
# The default point (ReLU on `S^2`): `lambda_1 < 0`, so pairs of tokens synchronize, but in
# `d = 3` the edge rate `(d-1) k1 - (d-3) k0 = 2 k1 > 0`, so the energy bound grows.

# %%
explore(**DEFAULTS)

# %% [markdown]
# A dissipative point: ReLU in `d = 8` with `sigma_b / sigma_w = 1 > sqrt(2/5)`; both rates are
# negative and the mean energy decays under its bound.

# %%
explore(**dict(DEFAULTS, d=8, sigma_b=1.0, beta=1.0))

# %% [markdown]
# And an activation with `lambda_1 > 0` (typed expression `sin(3*u)`, `d = 6`, attention off),
# started from one tight cluster: the tokens spread out instead of synchronizing (the
# overlaps leave `rho = 1`), while ReLU at the same point keeps them together.

# %%
for expression in ("sin(3*u)", ""):  # "" = the dropdown's activation (ReLU)
    explore(**dict(DEFAULTS, expression=expression, d=6, sigma_b=0.0, attention=False, start="tight cluster"))

# %% [markdown]
# ## How deep for two tokens to collapse? The law of synchronization
#
# At small distance `log|x_1 - x_2|` is a Brownian motion with drift `lambda_1` and variance
# rate `sigma^2 = k0 + k1` (derived), so the time to go from `eps0` to `eps` is inverse Gaussian
# (mean `log(eps0/eps)/|lambda_1|`) when `lambda_1 < 0`, and is reached only with probability
# `(eps0/eps)^(-2 lambda_1/sigma^2)` when `lambda_1 > 0`.  The depth needed at step `delta` for
# the collapse to have happened with probability `1 - alpha` is `ceil(t_(1-alpha)/delta)`.
# The empirical CDF comes from two-token runs of the Gaussian transformer (noise only).

# %%
from sssn_verify.sync_time import first_passage_times, sync_time_figure, sync_time_law

SYNC_PATHS = 300 if SMALL else 3000
SYNC_STEP = 0.01 if SMALL else 0.005


def sync_time_panel(params, eps0=1e-4, eps=1e-6, alpha=0.1, delta=0.01):
    """The derived law of the synchronization time and simulated first passages over it."""
    law = sync_time_law(params, eps0, eps)
    print(law.text(alpha, delta))
    T = law.ppf(0.995) if law.lambda1 < 0 else 2.0
    fp = first_passage_times(params, eps0, eps, step=SYNC_STEP, max_time=T, n_paths=SYNC_PATHS, seed=SEED)
    return sync_time_figure(law, fp)


# %%
sync_params = ModelParams(d=8, activation="relu", sigma_w=1.0, sigma_b=1.0, sigma_a=1.0)
print("Lyapunov spectrum:", np.round(regime(sync_params).lyapunov_spectrum, 4))
sync_time_panel(sync_params)
plt.show()
