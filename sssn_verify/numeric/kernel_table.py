"""The kernel table read inside numba code: K(rho) and the stable gap k0 - K(1 - u) in O(1).

``table`` is the float64 array built by :mod:`sssn_verify.numeric.kernels` (layout
``[k0, jump flag, n, k1, c_0 .. c_{n-1}]``: a Chebyshev interpolant in
``theta = arccos(rho)`` of ``(k0 - K(cos theta)) / w(u)``, see that module).  The engine's
kernels call these njit functions; Python-level callers use the numpy evaluation in
``numeric.kernels`` and do not import numba.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_HEADER = 4


@njit(cache=True)
def _clenshaw(table, x):
    n = int(table[2])
    b1 = 0.0
    b2 = 0.0
    for k in range(n - 1, 0, -1):
        b0 = 2.0 * x * b1 - b2 + table[_HEADER + k]
        b2 = b1
        b1 = b0
    return x * b1 - b2 + table[_HEADER]


@njit(cache=True)
def table_gap(table, u):
    """k0 - K(1 - u) for u in [0, 2], relative accuracy kept as u -> 0."""
    if u <= 0.0:
        return 0.0
    if u > 2.0:
        u = 2.0
    theta = 2.0 * math.asin(math.sqrt(0.5 * u))
    x = 2.0 * theta / math.pi - 1.0
    h = _clenshaw(table, x)
    if table[1] != 0.0:
        return math.sqrt(u) * h
    return u * h


@njit(cache=True)
def table_kernel(table, rho):
    """K(rho) for rho in [-1, 1] (clipped)."""
    if rho >= 1.0:
        return table[0]
    if rho < -1.0:
        rho = -1.0
    return table[0] - table_gap(table, 1.0 - rho)


@njit(cache=True)
def table_kernel_matrix(table, gram):
    """K(G_ij) for a Gram matrix G of unit vectors (N x N), symmetric by construction."""
    n = gram.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            if j < i:
                continue
            v = table_kernel(table, gram[i, j])
            out[i, j] = v
            out[j, i] = v
    return out
