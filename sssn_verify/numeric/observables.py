"""Observables computed on the fly (numba): energies, deviations.

All use the stable form ``1 - <x_i, x_j> = |x_i - x_j|^2 / 2`` (tokens on the sphere), so
energies keep full relative accuracy as the tokens synchronize.

* ``E_0(mu) = (1/2) iint (1 - <x,y>) dmu dmu = (1/(2N)) sum_i |x_i - xbar|^2``  (O(N d)).
* ``E_beta(mu) = (1/(2 beta)) iint (e^beta - e^{beta <x,y>}) = (e^beta/(2 beta N^2))
  sum_ij -expm1(-beta |x_i - x_j|^2 / 2)``  (O(N^2 d); inf when e^beta overflows, beta > ~709;
  ``energy_beta_scaled`` returns ``e^{-beta} E_beta`` for those).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def half_sq_dist(x, y):
    """|x - y|^2 / 2 = 1 - <x, y> on the sphere (stable)."""
    s = 0.0
    for c in range(x.shape[0]):
        t = x[c] - y[c]
        s += t * t
    return 0.5 * s


@njit(cache=True)
def energy0(X):
    """E_0 = (1/(2N)) sum_i |x_i - xbar|^2."""
    n, d = X.shape
    e = 0.0
    for c in range(d):
        mean = 0.0
        for i in range(n):
            mean += X[i, c]
        mean /= n
        for i in range(n):
            t = X[i, c] - mean
            e += t * t
    return 0.5 * e / n


@njit(cache=True)
def expm1_ratio(x):
    """h(x) = -expm1(-x) / x for x >= 0, h(0) = 1: a Taylor series below 1e-5 (error < x^3/24), so a
    subnormal or underflowed x gives 1, not 0/0 or 0."""
    if x < 1e-5:
        return 1.0 - x * (0.5 - x / 6.0)
    return -math.expm1(-x) / x


@njit(cache=True)
def energy_beta_scaled(X, beta):
    """e^{-beta} E_beta (finite for every beta >= 0), as (1/(2N^2)) sum_ij u_ij h(beta u_ij) with
    u = |x_i - x_j|^2/2: never divided by beta, so it tends to E_0 (beta = 0) with full accuracy
    for tiny and subnormal beta."""
    if beta == 0.0:
        return energy0(X)
    n = X.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i):
            u = half_sq_dist(X[i], X[j])
            s += u * expm1_ratio(beta * u)
    return s / (n * n)  # 2 * sum_{i>j} / (2 N^2)


@njit(cache=True)
def energy_beta(X, beta):
    """E_beta of docs/mathematics.md, section 5 (E_0 for beta = 0)."""
    if beta == 0.0:
        return energy0(X)
    scaled = energy_beta_scaled(X, beta)
    if scaled == 0.0:  # synchronized: exactly 0, also where e^beta overflows
        return 0.0
    return math.exp(beta) * scaled


@njit(cache=True)
def max_token_deviation(X, Y):
    """max_i |x_i - y_i| (Euclidean)."""
    best = 0.0
    for i in range(X.shape[0]):
        s = 0.0
        for c in range(X.shape[1]):
            t = X[i, c] - Y[i, c]
            s += t * t
        if s > best:
            best = s
    return math.sqrt(best)


@njit(cache=True)
def config_deviation(X, Y):
    """|X - Y| as a point of (R^d)^N: sqrt(sum_i |x_i - y_i|^2)."""
    s = 0.0
    for i in range(X.shape[0]):
        for c in range(X.shape[1]):
            t = X[i, c] - Y[i, c]
            s += t * t
    return math.sqrt(s)


def energies_numpy(X: np.ndarray, beta: float = 0.0) -> np.ndarray:
    """Vectorised E_beta over leading axes of X (..., N, d); the reference for tests/plots."""
    X = np.asarray(X, dtype=float)
    n = X.shape[-2]
    diff = X[..., :, None, :] - X[..., None, :, :]
    u = 0.5 * np.sum(diff * diff, axis=-1)
    x = beta * u
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(x < 1e-5, 1.0 - x * (0.5 - x / 6.0), -np.expm1(-x) / np.where(x > 0, x, 1.0))
    return np.exp(beta) * (u * h).sum(axis=(-1, -2)) / (2 * n * n)
