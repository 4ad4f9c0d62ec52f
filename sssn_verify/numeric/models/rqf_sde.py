"""The limiting SDE of the random quadratic form by projected Euler (issue 25; docs/mathematics.md, "The
random quadratic form"): the depth limit of the ``rqf`` layer,

    dX_i = [P_{X_i} A_i(X) - ((d-1) a_1 / 2) X_i] dt + P_{X_i} dQ_t X_i,   a_1 = a(1) = sigma_q^2 / 2 (derived),

Q_t a symmetric matrix Brownian motion (increments sigma_q (B + B^T)/2 sqrt(dt), the same for all tokens).
The step is the SDE's (``sde.evaluate``, ``sde.advance``: noise evaluated at X, Ito drift -(d-1) k0/2 X
with k0 = a_1, then Pi) with the rqf noise (``rqf.noise``); the tangent step draws Q once and hands
w = sqrt(dt) Q x and Dw_a = sqrt(dt) Q v_a to the SDE's Euler Jacobian (``sde.euler_tangent``).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit

from . import Model
from . import rqf
from .rqf import apply_rows, draw_symmetric, noise, work
from .sde import advance, euler_tangent, evaluate

__all__ = ["work", "evaluate", "noise", "advance", "tangent_work", "tangent_step", "prepare", "MODEL"]


@njit(cache=True)
def tangent_work(d, k, consts):
    """sde's (w, Dw, Vx, VV, z, dZ) and the rqf matrix, its normals, the token as a row."""
    return (np.empty(d), np.empty((k, d)), np.zeros(d), np.zeros((k, d)), np.empty(d), np.empty((k, d)),
            np.empty((d, d)), np.empty(d * (d + 1) // 2), np.empty((1, d)), np.empty((1, d)))


@njit(cache=True)
def tangent_step(st, x, V, dt, consts, att, tw, rtol):
    """(x, V) <- the Euler step and its Jacobian, noise w = sqrt(dt) Q x, Dw_a = sqrt(dt) Q v_a."""
    w, Dw, Qm, zq, xr, qx = tw[0], tw[1], tw[6], tw[7], tw[8], tw[9]
    draw_symmetric(st, consts.sigma_q, zq, Qm)
    sq = math.sqrt(dt)
    xr[0, :] = x
    apply_rows(Qm, xr, qx)
    apply_rows(Qm, V, Dw)
    for c in range(x.shape[0]):
        w[c] = sq * qx[0, c]
        for a in range(V.shape[0]):
            Dw[a, c] *= sq
    return euler_tangent(x, V, dt, consts, att, tw)


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False):
    """The rqf layer's constants (sigma_q, k0 = a(1) for the Ito drift)."""
    return replace(rqf.prepare(params, width, mode, n_rows, tangent), mode="projected Euler")


MODEL = Model(name="rqf_sde", module=__name__, label="rqf SDE (projected Euler)", unit="step",
              converges_to=None, needs_width=False, field=False, uses_activation=(),
              prepare=prepare, cost=rqf.MODEL.cost, fields=("rqf",),
              description="the rqf limit dX = P_X dQ X - ((d-1) a_1/2) X dt by projected Euler")
