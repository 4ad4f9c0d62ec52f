"""The random quadratic form `rqf` at finite depth (issue 25; docs/mathematics.md, "The random quadratic form").

    y_i = Pi(x_i + h A_i(X)),   x_i' = Pi(y_i + sqrt(h) Q_l y_i),   Q_l = sigma_q (B_l + B_l^T) / 2,

B_l with i.i.d. standard normal entries, fresh every layer, the same for every token of a path.  The field
F(y) = Q y is Gaussian already, so this model is at once the "finite-width", the "Gaussian-field" and the
finite-depth model; it converges to the SDE ``rqf_sde`` as the depth grows.  Its covariance is not
K(rho) I (``symbolic.general_field``), so it is not a ``field`` model of the registry.

The symmetric matrix takes d(d+1)/2 normals from the path's generator (``fields.fill_normal``): Q_cc =
sigma_q z and, for c < k, Q_ck = Q_kc = (sigma_q / sqrt 2) z (the law of sigma_q (B + B^T)/2).
Tangent step (one token y, k tangent vectors dy_a): the layer is linear before the projection, so
z = y + sqrt(h) Q y and dz_a = dy_a + sqrt(h) Q dy_a with the same Q.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..attention import half_step, tangent_half_step
from ..fields import STATUS_OK, fill_normal
from . import Model, Prepared
from .finite_width import advance

__all__ = ["work", "evaluate", "noise", "advance", "tangent_work", "tangent_step", "prepare", "MODEL",
           "RqfConsts", "draw_symmetric", "apply_rows"]

#: sigma_q, and k0 = a(1) = the variance of each tangential coordinate of the one-point noise (derived:
#: symbolic.general_field, through the bridge); the SDE's Ito drift is -(d-1) k0/2 x (``rqf_sde``)
RqfConsts = namedtuple("RqfConsts", ["sigma_q", "k0"])

evaluate = half_step


@njit(cache=True)
def draw_symmetric(st, sq, z, Qm):
    """Qm <- sigma_q (B + B^T)/2 in law from d(d+1)/2 standard normals z of the path's generator."""
    fill_normal(st, z)
    d = Qm.shape[0]
    off = sq / math.sqrt(2.0)
    t = 0
    for c in range(d):
        Qm[c, c] = sq * z[t]
        t += 1
        for k in range(c + 1, d):
            v = off * z[t]
            t += 1
            Qm[c, k] = v
            Qm[k, c] = v


@njit(cache=True)
def apply_rows(Qm, Y, out):
    """out_i = Q y_i for the rows of Y."""
    n, d = Y.shape
    for i in range(n):
        for c in range(d):
            s = 0.0
            for k in range(d):
                s += Qm[c, k] * Y[i, k]
            out[i, c] = s


@njit(cache=True)
def work(n, d, consts):
    """(Q, the normals behind it, three spares, the (n, d) spare the SDE's advance writes into: w[4])."""
    return (np.empty((d, d)), np.empty(d * (d + 1) // 2), np.empty(1), np.empty(1), np.empty((n, d)))


@njit(cache=True)
def noise(st, E, consts, w, W, rtol):
    """W_i = Q E_i, one fresh Q for all rows."""
    Qm, z = w[0], w[1]
    draw_symmetric(st, consts.sigma_q, z, Qm)
    apply_rows(Qm, E, W)
    return STATUS_OK


@njit(cache=True)
def tangent_work(d, k, consts):
    return (np.empty(d), np.empty((k, d)), np.empty((d, d)), np.empty(d * (d + 1) // 2), np.empty((1, d)),
            np.empty((1, d)))


@njit(cache=True)
def tangent_step(st, x, V, h, consts, att, tw, rtol):
    """x <- y + sqrt(h) Q y, V_a <- dy_a + sqrt(h) Q dy_a (before the projection)."""
    y, dY, Qm, z, yr, qy = tw
    code = tangent_half_step(x, V, h, att, y, dY)
    if code != STATUS_OK:
        return code
    draw_symmetric(st, consts.sigma_q, z, Qm)
    sq = math.sqrt(h)
    yr[0, :] = y
    apply_rows(Qm, yr, qy)
    for c in range(x.shape[0]):
        x[c] = y[c] + sq * qy[0, c]
    apply_rows(Qm, dY, V)
    for a in range(V.shape[0]):
        for c in range(x.shape[0]):
            V[a, c] = dY[a, c] + sq * V[a, c]
    return STATUS_OK


def one_point_variance(sigma_q: float) -> float:
    """a(1) of the rqf tensor at sigma_q (symbolic.general_field through the bridge)."""
    from ...bridge import function
    return float(function("general_field.rqf_a1", "math")(sigma_q))


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False) -> Prepared:
    """RqfConsts of `params` (field "rqf": sigma_q)."""
    return Prepared(RqfConsts(float(params.sigma_q), one_point_variance(params.sigma_q)),
                    "exact (Q drawn, d(d+1)/2 normals per layer)")


def _cost(n, d, m):
    return float(n) * d * d + 0.5 * d * d


MODEL = Model(name="rqf", module=__name__, label="random quadratic form layer", unit="layer",
              converges_to="rqf_sde", needs_width=False, field=False, uses_activation=(),
              prepare=prepare, cost=_cost, fields=("rqf",),
              description="x' = Pi(y + sqrt(delta) Q y), Q = sigma_q (B + B^T)/2 fresh per layer (field rqf)")
