"""The radial projection Pi(z) = z / |z| onto the sphere and its derivative (numba).

``project_rows`` projects the N tokens of a configuration; ``push`` moves one point and k
tangent vectors through Pi (the derivative ``DPi(z)[v] = P_{z/|z|} v / |z|``), as the tangent
flow needs.  Both return a status code (``fields.STATUS_*``) instead of raising.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .fields import STATUS_NONFINITE, STATUS_OK, STATUS_ZERO_NORM


@njit(cache=True)
def dot(a, b):
    """<a, b> of two 1-D arrays, summed in index order."""
    s = 0.0
    for c in range(a.shape[0]):
        s += a[c] * b[c]
    return s


@njit(cache=True)
def project_rows(Z, out):
    """out_i = Z_i / |Z_i| (the radial projection Pi); returns a status code."""
    n, d = Z.shape
    for i in range(n):
        s = 0.0
        for c in range(d):
            s += Z[i, c] * Z[i, c]
        if not np.isfinite(s):
            return STATUS_NONFINITE
        if s == 0.0:
            return STATUS_ZERO_NORM
        inv = 1.0 / math.sqrt(s)
        for c in range(d):
            out[i, c] = Z[i, c] * inv
    return STATUS_OK


@njit(cache=True)
def push(z, dZ):
    """In place: z <- z / |z| and each row dz of dZ (k, d) <- P_{z/|z|} dz / |z| (DPi)."""
    s = dot(z, z)
    if not np.isfinite(s):
        return STATUS_NONFINITE
    for a in range(dZ.shape[0]):
        if not np.isfinite(dot(dZ[a], dZ[a])):
            return STATUS_NONFINITE
    if s == 0.0:
        return STATUS_ZERO_NORM
    nz = math.sqrt(s)
    for c in range(z.shape[0]):
        z[c] /= nz
    for a in range(dZ.shape[0]):
        proj = dot(z, dZ[a])
        for c in range(z.shape[0]):
            dZ[a, c] = (dZ[a, c] - proj * z[c]) / nz
    return STATUS_OK
