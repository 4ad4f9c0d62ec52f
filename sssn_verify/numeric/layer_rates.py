"""Rates of the energy read off one exact layer of the Gaussian transformer, without the derivation.

The *independent evidence* for ``lambda_bar`` (docs/mathematics.md, section 5): nothing here uses
the sympy results; only the definition of one noise layer ``x_i' = Pi(y_i + s G(y_i))`` and the
kernel K (by quadrature, ``quadrature_kernel``, one-layer or a deep block's composed by quadrature
stage by stage, or the models' own, ``numeric.kernels.kernel``).

* deterministic: the generator of one exact layer (``generator_ratio``, second differences in the
  noise's eigen-directions with Richardson) and its sup over u = 1 - rho (``sup_ratio``);
* Monte Carlo: the initial rate of ``E[E_beta]`` under exact layers of a registered field model on
  shared, antithetic noise with a three-level Richardson (``initial_rate_paths``, ``rate_estimate``
  with control variates), a use of ``experiments.pair_layer``.

The constructions, their error terms and measured variance reductions are in docs/numerics.md,
section "Layer rates".
"""
from __future__ import annotations

import math

import numpy as np

from .experiments import energy, pair_layer, richardson_weights, with_controls

EDGE_U = 1e-14
_H = 0.02                     # the largest step of the second differences (standard-normal units)
_EDGE_GRID = np.geomspace(1e-12, 1e-2, 41)
_BULK_GRID = np.linspace(1e-2, 2.0, 400)
GRID_U = np.concatenate([_EDGE_GRID[:-1], _BULK_GRID])
DELTA_SCALE = 1e-3             # the Monte Carlo's largest step times the rate scale (Richardson over /1, /2, /4)


def default_delta(k0: float, d: int, beta: float, v: float = 0.0) -> float:
    """The largest layer step of the Monte Carlo: DELTA_SCALE over the scale of the one-step
    expansion, (k0 (d + 1) + |V|)(1 + beta) (the first Richardson-removed term is measured to be
    up to ~100 delta times the rate at k0 d beta ~ 80).  The per-path statistic's variance does not
    grow as delta shrinks (antithetic, Richardson), so a small step costs nothing."""
    return DELTA_SCALE / ((k0 * (d + 1) + abs(v)) * (1.0 + beta))


def f_tilde(u, beta: float):
    """(1 - e^{-beta u}) / beta (u at beta = 0): f = e^beta - e^{beta rho} divided by e^beta beta.

    Written as u h(beta u), h(x) = -expm1(-x)/x (h(0) = 1), so that a subnormal beta (beta u = 0
    in floating point) gives u, not 0/0."""
    u = np.asarray(u, dtype=float)
    x = beta * u
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(x > 0, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0)
    return u * h


class _HomogeneousKernel:
    """K for a positively 1-homogeneous activation (ReLU, leaky ReLU) from ONE quadrature table J (sigma_w = 1,
    sigma_b = 0, sigma_a = 1): with S = sw^2 + sb^2, K(rho) = sa^2 S J(r), 1 - r = sw^2 (1 - rho) / S, so
    k0 = sa^2 S J(1), k1 = sa^2 sw^2 J'(1), gap(u) = sa^2 S J_gap(sw^2 u / S) (a property of the
    activation, not a derived formula; a new (sw, sb) then costs nothing instead of a quadrature table)."""

    def __init__(self, unit, sw: float, sb: float, sa: float):
        self.unit, self.sw2, self.S, self.sa2 = unit, sw * sw, sw * sw + sb * sb, sa * sa
        self.k0 = self.sa2 * self.S * unit.k0
        self.k1 = self.sa2 * self.sw2 * unit.k1

    def gap(self, u):
        return self.sa2 * self.S * np.asarray(self.unit.gap(np.minimum(self.sw2 * np.asarray(u, dtype=float) / self.S,
                                                                       2.0)), dtype=float)


def quadrature_kernel(activation, sigma_w: float, sigma_b: float, sigma_a: float, hidden=()):
    """k0, k1 and the stable gap of K by quadrature, never from a derived closed form (the deterministic
    evidence): the package's kernel where it is a quadrature already, one homogeneity-scaled table for
    ReLU-like activations (sigma_w > 0), else ``force_quadrature``.  With a deep block's `hidden` stack
    (``ModelParams.hidden``): its kernel composed layer by layer (``deep_kernel``, the NNGP recursion) with
    every stage by quadrature (``force_quadrature``: no stage's closed form; homogeneity does not carry
    through a later layer's bias)."""
    from ..activations import get_activation
    from ..params import check_hidden
    from .kernels import kernel
    name = get_activation(activation).name
    hidden = check_hidden(hidden)
    if hidden:
        return kernel(name, sigma_w, sigma_b, sigma_a, hidden=hidden, force_quadrature=True)
    kf = kernel(name, sigma_w, sigma_b, sigma_a)
    if kf.method == "quadrature":
        return kf
    if (name == "relu" or name.startswith("leaky_relu")) and sigma_w > 0:
        return _HomogeneousKernel(kernel(name, 1.0, 0.0, 1.0, force_quadrature=True), sigma_w, sigma_b, sigma_a)
    return kernel(name, sigma_w, sigma_b, sigma_a, force_quadrature=True)


def _u_after(c, s, beta, coord, sign, lam, tau):
    """f~(u') after the noise step g_x = sqrt(lam/2) tau e_coord, g_y = sign g_x (vectorized)."""
    return f_tilde(_u_prime(c, s, coord, sign, lam, tau), beta)


def _u_prime(c, s, coord, sign, lam, tau):
    """u' = |x' - y'|^2 / 2 after the noise step g_x = sqrt(lam/2) tau e_coord, g_y = sign g_x."""
    amp = np.sqrt(np.maximum(lam, 0.0) / 2.0) * tau     # a mode of variance 0 (rounded below 0) moves nothing
    ax = [c, s, np.zeros_like(c)]
    ay = [c, -s, np.zeros_like(c)]
    ax[coord] = ax[coord] + amp
    ay[coord] = ay[coord] + sign * amp
    diff = [np.zeros_like(c), 2.0 * s, np.zeros_like(c)]       # a - b, formed without cancellation
    if sign < 0:
        diff[coord] = diff[coord] + 2.0 * amp
    na = np.sqrt(sum(v * v for v in ax))
    nb = np.sqrt(sum(v * v for v in ay))
    dn = -sum(di * (p + q) for di, p, q in zip(diff, ax, ay)) / (na + nb)      # nb - na
    dx = [di / na + q * dn / (na * nb) for di, q in zip(diff, ay)]           # x' - y'
    return 0.5 * sum(v * v for v in dx)


def _layer_generator(kf, d: int, us, h: float, second):
    """The generator of one exact Gaussian layer applied to a functional F of the pair at
    rho = 1 - u, with its numerical error: (1/2) sum over the noise modes of the second
    differences ``second(c, s, coord, sign, lam, tau) -> (F(+tau) - 2 F + F(-tau), floor)``
    divided by tau^2, Richardson over h, h/2, h/4; the error is the last Richardson step plus
    the largest rounding ``floor / tau^2`` (each caller states its own) and 1e-14 relative."""
    us = np.atleast_1d(np.asarray(us, dtype=float))
    s = np.sqrt(us / 2.0)
    c = np.sqrt(np.maximum(1.0 - us / 2.0, 0.0))
    gap = np.asarray(kf.gap(us), dtype=float)
    total = {0: np.zeros_like(us), 1: np.zeros_like(us), 2: np.zeros_like(us)}
    scale = np.zeros_like(us)
    for coord, mult in ((0, 1.0), (1, 1.0), (2, float(d - 2))):
        if mult == 0.0:
            continue
        for sign, lam in ((1.0, 2.0 * kf.k0 - gap), (-1.0, gap)):
            for k in range(3):
                hk = h / 2 ** k
                num, floor = second(c, s, coord, sign, lam, hk)
                total[k] = total[k] + 0.5 * mult * num / (hk * hk)
                scale = np.maximum(scale, mult * floor / (hk * hk))
    r1 = [(4.0 * total[k + 1] - total[k]) / 3.0 for k in range(2)]
    r2 = (16.0 * r1[1] - r1[0]) / 15.0
    return r2, np.abs(r2 - r1[1]) + scale + 1e-14 * np.abs(r2)


def generator_ratio(kf, d: int, beta: float, us, h: float = _H):
    """(Lf/f at rho = 1 - u, its numerical error) for one exact Gaussian layer (see module doc).

    ``kf`` a numeric kernel (k0 and the stable gap); ``us`` in (0, 2]."""
    us = np.atleast_1d(np.asarray(us, dtype=float))
    f0 = f_tilde(us, beta)

    def second(c, s, coord, sign, lam, hk):
        fp = _u_after(c, s, beta, coord, sign, lam, hk)
        fm = _u_after(c, s, beta, coord, sign, lam, -hk)
        return fp - 2.0 * f0 + fm, 1e-12 * np.maximum(np.abs(fp), np.abs(fm))

    r, err = _layer_generator(kf, d, us, h, second)
    return r / f0, err / f0


def log_distance_drift(kf, d: int, us, h: float = _H):
    """(drift of log|x - y| at rho = 1 - u, its numerical error) for one exact Gaussian layer: the
    generator of F = (1/2) log u' by the same second differences (differences formed as log(u'/u)).
    As u -> 0 it is the top Lyapunov exponent lambda_1 (docs/mathematics.md, section 8)."""
    us = np.atleast_1d(np.asarray(us, dtype=float))

    def second(c, s, coord, sign, lam, hk):
        fp = 0.5 * np.log(_u_prime(c, s, coord, sign, lam, hk) / us)
        fm = 0.5 * np.log(_u_prime(c, s, coord, sign, lam, -hk) / us)
        return fp + fm, 1e-14 * (np.abs(fp) + np.abs(fm) + 1.0)

    return _layer_generator(kf, d, us, h, second)


def edge_log_drift(kf, d: int) -> tuple[float, float]:
    """lim_{u -> 0} of the layer's log-distance drift (lambda_1): at u = 1e-14, error including |r(4u) - r(u)|."""
    r, e = log_distance_drift(kf, d, np.array([EDGE_U, 4.0 * EDGE_U]))
    return float(r[0]), float(e[0] + e[1] + abs(r[1] - r[0]))


def edge_ratio(kf, d: int, beta: float) -> tuple[float, float]:
    """lim_{rho -> 1} Lf/f: the ratio at u = 1e-14, error including the bias |r(4u) - r(u)|."""
    r, e = generator_ratio(kf, d, beta, np.array([EDGE_U, 4.0 * EDGE_U]))
    return float(r[0]), float(e[0] + e[1] + abs(r[1] - r[0]))


def sup_ratio(kf, d: int, beta: float, hint_rho: float | None = None) -> tuple[float, float, float]:
    """(sup_{rho in [-1, 1)} Lf/f, argmax rho (1.0: the edge limit), numerical error).

    ``hint_rho`` (e.g. a derived argmax) is only one more place to look: the value there is the
    layer's own ratio, so it can only raise the sup to a value the dynamics attains."""
    if kf.k0 == 0.0:
        return 0.0, 1.0, 0.0
    grid = GRID_U if hint_rho is None or hint_rho >= 1.0 else np.append(GRID_U, min(2.0, 1.0 - hint_rho))
    vals, errs = generator_ratio(kf, d, beta, grid)
    edge, edge_err = edge_ratio(kf, d, beta)
    i = int(np.argmax(vals))
    if edge >= vals[i] - (edge_err + errs[i]) and (i == 0 or grid[i] < 1e-6):
        return edge, 1.0, edge_err
    order = np.argsort(grid)
    grid, vals, errs = grid[order], vals[order], errs[order]
    i = int(np.argmax(vals))
    lo = grid[i - 1] if i > 0 else 0.5 * grid[0]
    hi = grid[i + 1] if i + 1 < grid.size else grid[i]
    best_u, best, best_err = grid[i], float(vals[i]), float(errs[i])
    while hi - lo > 1e-10 + 1e-8 * lo:
        us = np.linspace(lo, hi, 17)
        v, e = generator_ratio(kf, d, beta, us)
        j = int(np.argmax(v))
        if v[j] > best:
            best_u, best, best_err = float(us[j]), float(v[j]), float(e[j])
        step = (hi - lo) / 16
        lo, hi = max(lo, us[j] - step), min(hi, us[j] + step)
    if edge > best:
        return edge, 1.0, edge_err
    return best, float(1.0 - best_u), best_err


# ---------------------------------------------------------------- Monte Carlo of one exact layer
RICHARDSON = richardson_weights(3)       # weights of A_0, A_1, A_2 (delta, delta/2, delta/4): (1, -6, 8)/3


def _run(X0, kf, beta, n_paths, seed, delta, attention, kind, avec, model):
    """(per-path A_0, A_1, A_2, per-path control variates) of functional `kind` from X0 (experiments.pair_layer)."""
    from .rng import as_key
    if delta is None:
        v = 0.0 if attention is None or not attention.on else float(np.abs(attention.Vt).sum(axis=0).max(initial=0.0))
        delta = default_delta(float(kf.k0), X0.shape[1], float(beta), v)
    return pair_layer(model, kf, X0, kind, n_paths, as_key(seed, "layer-rate"), delta, levels=3,
                      beta=beta, a=avec, attention=attention)


def initial_rate_paths(X0, kf, beta: float, n_paths: int, seed, *,
                       delta: float | None = None, attention=None, model: str = "gaussian"):
    """(per-path Richardson estimates of d/dt log E[E_beta] at t = 0 from X0, per-path A_0, A_1, A_2,
    per-path control variates (two tokens; an empty array otherwise)).

    ``kf``: the kernel (its ``table`` and ``k0``; a field model's constants); ``attention``: an
    ``attention.Attention`` (None: attention off); ``model``: the registered field model whose layer runs."""
    A, cv = _run(np.ascontiguousarray(X0, dtype=float), kf, beta, n_paths, seed, delta, attention,
                 "energy", None, model)
    return A @ RICHARDSON, A, cv


def rate_estimate(X0, kf, beta: float, n_paths: int, seed, *, delta: float | None = None,
                  attention=None, log_distance: bool = False, model: str = "gaussian",
                  kind: str | None = None) -> tuple[float, float, int]:
    """(estimate, standard error, paths) of the initial rate d/dt log E[E_beta] from X0, or with
    ``log_distance`` (two tokens) of d/dt E log |x_0 - x_1| (lambda_1 as the tokens' distance -> 0).
    ``kind`` names another functional of ``experiments.FUNCTIONALS``: "projective_energy" (the log-rate of
    E sum_{i<j} (1 - rho_ij^2)) or "projective_log_distance" (d/dt E (1/2) log(1 - rho^2), two tokens).

    Two tokens: the per-path Richardson values minus the control variates (``experiments.pair_controls``,
    mean 0) cross-fitted (``experiments.cross_fit``); the standard error is that of the corrected
    values.  Other N: the plain mean."""
    kind = kind or ("log_distance" if log_distance else "energy")
    A, cv = _run(np.ascontiguousarray(X0, dtype=float), kf, beta, n_paths, seed, delta, attention, kind, None, model)
    R = with_controls(A @ RICHARDSON, cv)
    return float(R.mean()), float(R.std(ddof=1) / math.sqrt(R.size)), int(R.size)


FUNCTIONALS = {"energy": 0, "linear": 1, "quadratic": 2}


def initial_functional_rate_paths(X0, kf, functional: str, n_paths: int, seed, *, a=None, beta: float = 0.0,
                                  delta: float | None = None, attention=None,
                                  model: str = "gaussian"):
    """Per-path Richardson estimates of d/dt E F(X_t) at t = 0 (not normalised), the same exact layers,
    shared and antithetic noise as :func:`initial_rate_paths`, for F = "energy" (sum_{i<j} f~(u_ij)),
    "linear" ((1/N) sum_i <a, x_i>) or "quadratic" ((1/N) sum_i <a, x_i>^2): the evidence of the
    ``spde_weak_form`` claim.  Returns (estimates, per-path A_0, A_1, A_2)."""
    X0 = np.ascontiguousarray(X0, dtype=float)
    if functional not in FUNCTIONALS:
        raise KeyError(functional)
    A, _ = _run(X0, kf, beta, n_paths, seed, delta, attention, functional, a, model)
    if functional == "energy":     # the experiment returns the energy's log-rate: undo the normalisation
        A = A * energy(X0, float(beta))
    return A @ RICHARDSON, A


def antipodal_tokens(d: int, w: float) -> np.ndarray:
    """Two unit vectors with 1 + <x, y> = w, x = (c, s), y = (-c, s): |x + y| = sqrt(2 w) exactly."""
    s = math.sqrt(w / 2.0)
    c = math.sqrt(max(1.0 - w / 2.0, 0.0))
    X = np.zeros((2, d))
    X[0, 0], X[1, 0] = c, -c
    X[0, 1] = X[1, 1] = s
    return X


def two_tokens(d: int, u: float) -> np.ndarray:
    """Two unit vectors with 1 - <x, y> = u, formed symmetrically (|x - y| = sqrt(2u) exactly)."""
    s = math.sqrt(u / 2.0)
    c = math.sqrt(max(1.0 - u / 2.0, 0.0))
    X = np.zeros((2, d))
    X[0, 0] = X[1, 0] = c
    X[0, 1], X[1, 1] = s, -s
    return X


__all__ = ["f_tilde", "generator_ratio", "edge_ratio", "sup_ratio", "initial_rate_paths", "rate_estimate",
           "two_tokens", "antipodal_tokens", "log_distance_drift", "edge_log_drift", "quadrature_kernel",
           "initial_functional_rate_paths", "FUNCTIONALS",
           "RICHARDSON", "GRID_U", "EDGE_U", "default_delta"]
