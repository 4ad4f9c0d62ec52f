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
def energy_beta_scaled(X, beta):
    """e^{-beta} E_beta (finite for every beta >= 0); beta = 0 gives E_0."""
    if beta == 0.0:
        return energy0(X)
    n = X.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i):
            s += -math.expm1(-beta * half_sq_dist(X[i], X[j]))
    return s / (beta * n * n)  # 2 * sum_{i>j} / (2 beta N^2)


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
    if beta == 0.0:
        return u.sum(axis=(-1, -2)) / (2 * n * n)
    return np.exp(beta) * (-np.expm1(-beta * u)).sum(axis=(-1, -2)) / (2 * beta * n * n)
