"""Monte Carlo confirmations of issue 4 with the engine (docs/mathematics.md, sections 5-7).

1. lambda_1 from the tangent flow of the *finite-width* transformer (m = 64, V = 0) for ReLU
   without and with bias, tanh and sin(3u) (lambda_1 > 0): per-path rates
   log|v_T|/T, two depths L and 2L (independent seeds) Richardson-extrapolated to remove
   the O(delta) bias; two-sided z-test at level 1e-4 (|z| < 3.89) per case, 4 cases
   (Bonferroni family level 4e-4).  Perturbed formulas (d-2 for d-1, a flipped sign of the
   k1 term, a missing factor 1/2) must give |z| > 3.89.  Each activation compiles its own
   finite-width tangent kernel (~9 CPU-s, used by no other test), so GELU is not a case here:
   the tangent step is the same code for every activation (tanh and sin(3u) run it smooth), and
   what is GELU's own is checked where it is cheap: its numba derivative against finite
   differences (test_params_activations), its k0, k1 against quadrature (test_regime, test_kernel).
2. The energy bound E[E_beta(mu_t)] <= exp((lambda_bar + C_att) t) E[E_beta(mu_0)] on the SDE
   (projected Euler, 30000 paths (8000 with attention) of two tokens started at rho = 1 - 1e-4, where the
   noise-only bound is nearly attained), Richardson-extrapolated means; one-sided z-tests
   at level 1e-4 at 4 checkpoint times.  The fitted decay rate log(E_T/E_0)/T (delta method
   SE) is compared with lambda_bar + C_att: equal to lambda_bar (= the edge value) for the
   noise-only flow (two-sided), below it with energy-lowering attention (Q = K = V = I) and
   with repulsive attention (V = -I), where it equals the derived near-synchronization rate
   lambda_edge - 2 <V x, x> (two-sided).  Rejected: the edge value with d-2 for d-1, C_att = 0
   for repulsive attention, and -4 <V x, x> for -2 <V x, x>.
"""
import math

import numpy as np
import pytest

from sssn_verify.engine import lyapunov_tangent, simulate_sde
from sssn_verify.params import ModelParams
from sssn_verify.regime import regime

Z_CRIT = 3.89          # two-sided 1e-4
Z_ONE = 3.72           # one-sided 1e-4

LYAP_CASES = [  # (label, activation, d, sigma_w, sigma_b, paths)
    ("relu", "relu", 4, 1.0, 0.0, 2000),
    ("relu-bias", "relu", 6, 1.0, 1.0, 2000),
    ("tanh", "tanh", 4, 1.0, 0.5, 2000),
    ("sin3", "sin(3*u)", 5, 0.6, 0.0, 4000),
]


def _rate(params, depth, paths, seed):
    r = lyapunov_tangent(params, model="transformer", depth=depth, width=64, n_paths=paths, seed=seed,
                         progress=False)
    return r.rate, r.stderr


@pytest.mark.parametrize("case", LYAP_CASES, ids=[c[0] for c in LYAP_CASES])
def test_lambda1_from_finite_width_tangent_flow(case):
    label, act, d, sw, sb, paths = case
    p = ModelParams(d=d, n_tokens=1, horizon=1.0, activation=act, sigma_w=sw, sigma_b=sb, sigma_a=1.0, V=0.0)
    reg = regime(p)
    k0, k1, lam = reg.k0, reg.k1, reg.lambda1
    if label == "sin3":
        assert lam > 0 and reg.synchronizes is False
    else:
        assert lam < 0 and reg.synchronizes is True
    m1, s1 = _rate(p, 100, paths, 101)
    m2, s2 = _rate(p, 200, paths, 202)
    est, se = 2 * m2 - m1, math.sqrt(4 * s2**2 + s1**2)
    assert abs(est - lam) / se < Z_CRIT, (label, est, lam, se)
    wrong = {"d-2 for d-1": ((d - 3) * k1 - (d - 2) * k0) / 2,
             "flipped k1 sign": (-(d - 3) * k1 - (d - 1) * k0) / 2,
             "missing 1/2": (d - 3) * k1 - (d - 1) * k0}
    if d == 3:
        wrong.pop("flipped k1 sign")
    for name, w in wrong.items():
        assert abs(est - w) / se > Z_CRIT, (label, name, est, w, se)


# ----------------------------------------------------------------------------- energy bound
D, U0, T = 8, 1e-4, 0.25
CHECK = (0.25, 0.5, 0.75, 1.0)      # checkpoints as fractions of T


def _near_pair():
    x = np.zeros((2, D))
    x[0, 0] = 1.0
    x[1, 0], x[1, 1] = 1.0 - U0, math.sqrt(U0 * (2.0 - U0))
    return x


def _energy_curve(params, depth, paths, seed):
    beta = params.beta
    r = simulate_sde(params, depth, n_paths=paths, seed=seed, init=_near_pair(),
                     betas=(beta,) if beta > 0 else (), progress=False)
    E = r.energy if beta == 0 else r.energies[:, :, 0]
    idx = [int(round(c * depth)) for c in CHECK]
    e0 = float(E[0, 0])                              # deterministic start
    rel = E[:, idx] / e0
    return rel.mean(axis=0), rel.std(axis=0, ddof=1) / math.sqrt(paths)


def _extrapolated_curve(params, paths=30000):
    m1, s1 = _energy_curve(params, 64, paths, 7)
    m2, s2 = _energy_curve(params, 128, paths, 8)
    return 2 * m2 - m1, np.sqrt(4 * s2**2 + s1**2)


@pytest.fixture(scope="module")
def noise_only():
    p = ModelParams(d=D, n_tokens=2, horizon=T, activation="relu", sigma_w=1.0, sigma_b=1.0, V=0.0, beta=0.0)
    return p, regime(p), _extrapolated_curve(p)


def test_energy_bound_noise_only_is_sharp_and_has_teeth(noise_only):
    p, reg, (mean, se) = noise_only
    times = T * np.array(CHECK)
    bound = np.exp((reg.lambda_bar + reg.c_att) * times)
    assert reg.sup_at_edge and reg.c_att == 0.0
    assert np.all((mean - bound) / se < Z_ONE), (mean, bound, se)
    # fitted rate equals lambda_bar (the edge value) within its CI (delta method)
    fit, fit_se = math.log(mean[-1]) / T, se[-1] / mean[-1] / T
    assert abs(fit - reg.lambda_bar) / fit_se < Z_CRIT, (fit, reg.lambda_bar, fit_se)
    assert reg.rate_lower_bound == reg.lambda_bar          # V = 0: the bound is attained
    # a perturbed edge value (d-2 for d-1) gives a bound that the simulation violates
    wrong_rate = (D - 2) * reg.k1 - (D - 3) * reg.k0
    wrong = math.exp(wrong_rate * T)
    assert (mean[-1] - wrong) / se[-1] > Z_ONE, (mean[-1], wrong, se[-1])


@pytest.mark.parametrize("v,energy_lowering", [(1.0, True), (-1.0, False)])
def test_energy_bound_with_attention(v, energy_lowering):
    p = ModelParams(d=D, n_tokens=2, horizon=T, activation="relu", sigma_w=1.0, sigma_b=1.0, V=v, beta=1.0)
    reg = regime(p)
    assert (reg.c_att == 0.0) == energy_lowering
    mean, se = _extrapolated_curve(p, paths=8000)
    times = T * np.array(CHECK)
    bound = np.exp((reg.lambda_bar + reg.c_att) * times)
    assert np.all((mean - bound) / se < Z_ONE), (mean, bound, se)
    fit, fit_se = math.log(mean[-1]) / T, se[-1] / mean[-1] / T
    assert fit <= reg.lambda_bar + reg.c_att + Z_ONE * fit_se
    # near synchronization the rate is lambda_edge - 2 <V x, x> (= rate_lower_bound for V = v I)
    assert abs(fit - reg.rate_lower_bound) / fit_se < Z_CRIT, (fit, reg.rate_lower_bound, fit_se)
    assert abs(fit - (reg.lambda_bar_edge - 4 * v)) / fit_se > Z_CRIT          # factor 2 in -2<Vx,x> matters
    if not energy_lowering:
        # treating repulsive attention as energy-lowering (C_att = 0) is refuted
        wrong = math.exp(reg.lambda_bar * T)
        assert (mean[-1] - wrong) / se[-1] > Z_ONE, (mean[-1], wrong, se[-1])
