"""The limiting SDE of docs/mathematics.md, section 3 by projected Euler: the limit the others converge to.

    dX_i = [P_{X_i} A_i(X) + c(X_i)] dt + P_{X_i} W(dt, X_i),   c(x) = -((d-1) k0 / 2) x,

``E[W(t,x) W(s,y)^T] = min(t,s) K(<x,y>) I_d``; one step ``X_i' = Pi(X_i + h (P_{X_i} A_i(X) +
c(X_i)) + P_{X_i} dW_i)`` with the field increment sampled jointly at the N tokens (the Gaussian
transformer's ``noise``), evaluated at X itself, which lets ``driver.ladder_path`` couple SDE
and Gaussian-transformer levels on one Brownian field.  The step, the Ito drift's role and the
tangent step (its Jacobian on k vectors): docs/numerics.md, section "The limiting SDE".
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit

from ..attention import apply_sum_v, attend
from ..fields import STATUS_OK, fill_normal, gram_factor, normal
from ..sphere import dot, project_rows
from . import Model
from . import gaussian
from .gaussian import noise, work

__all__ = ["work", "evaluate", "noise", "advance", "tangent_work", "tangent_step", "prepare", "MODEL"]


@njit(cache=True)
def evaluate(X, E, h, att, aw):
    """The SDE's noise is evaluated at the tokens themselves."""
    E[:, :] = X
    return STATUS_OK


@njit(cache=True)
def advance(X, E, W, h, consts, att, aw, w):
    """X <- Pi(X + h (P_X A(X) + c(X)) + P_X W), c(x) = -((d-1) k0 / 2) x."""
    n, d = X.shape
    A = aw[4]
    if att.on:
        attend(X, att, aw)
    else:
        A[:, :] = 0.0
    Zw = w[4]
    cc = -0.5 * (d - 1) * consts.k0
    for i in range(n):
        xa = 0.0
        xw = 0.0
        for c in range(d):
            xa += X[i, c] * A[i, c]
            xw += X[i, c] * W[i, c]
        for c in range(d):
            x = X[i, c]
            Zw[i, c] = x + h * (A[i, c] - xa * x + cc * x) + W[i, c] - xw * x
    return project_rows(Zw, X)


@njit(cache=True)
def tangent_work(d, k, consts):
    """(w, Dw, Vx, VV, z, dZ, Lg, Zk)."""
    return (np.empty(d), np.empty((k, d)), np.zeros(d), np.zeros((k, d)), np.empty(d), np.empty((k, d)),
            np.empty((k, k)), np.empty((k, d)))


@njit(cache=True)
def tangent_step(st, x, V, dt, consts, att, tw, rtol):
    """(x, V) <- (z, dZ) of the Euler step and its Jacobian (before the projection)."""
    w, Dw, Vx, VV, z, dZ, Lg, Zk = tw
    d = x.shape[0]
    k = V.shape[0]
    s0 = math.sqrt(consts.k0 * dt)
    s1 = math.sqrt(consts.k1 * dt)
    gram_factor(V, Lg)
    for c in range(d):
        w[c] = s0 * normal(st)
    fill_normal(st, Zk)
    for a in range(k):
        for c in range(d):
            s = 0.0
            for b in range(a + 1):
                s += s1 * Lg[a, b] * Zk[b, c]
            Dw[a, c] = s
    return euler_tangent(x, V, dt, consts, att, tw)


@njit(cache=True)
def euler_tangent(x, V, dt, consts, att, tw):
    """(x, V) <- (z, dZ) of the Euler step and its Jacobian for the noise w = tw[0] at x and its
    derivatives Dw = tw[1] along the rows of V (any field model's: ``rqf_sde`` shares it)."""
    w, Dw, Vx, VV, z, dZ = tw[0], tw[1], tw[2], tw[3], tw[4], tw[5]
    d = x.shape[0]
    k = V.shape[0]
    cc = -0.5 * (d - 1) * consts.k0
    if att.on:
        apply_sum_v(x, att, Vx)
        for a in range(k):
            apply_sum_v(V[a], att, VV[a])
    xVx = dot(x, Vx)
    xw = dot(x, w)
    for c in range(d):
        z[c] = x[c] + dt * (Vx[c] - xVx * x[c] + cc * x[c]) + w[c] - xw * x[c]
    for a in range(k):
        v = V[a]
        Vv = VV[a]
        dw = Dw[a]
        vVx = dot(v, Vx)
        xVv = dot(x, Vv)
        vw = dot(v, w)
        xdw = dot(x, dw)
        for c in range(d):
            dZ[a, c] = (v[c] + dt * (Vv[c] - v[c] * xVx - x[c] * (vVx + xVv) + cc * v[c])
                        - (v[c] * xw + x[c] * vw) + dw[c] - xdw * x[c])
    x[:] = z
    V[:, :] = dZ
    return STATUS_OK


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False):
    """The Gaussian transformer's field constants (same kernel K)."""
    return replace(gaussian.prepare(params, width, mode, n_rows, tangent), mode="projected Euler")


MODEL = Model(name="sde", module=__name__, label="SDE (projected Euler)", unit="step",
              converges_to=None, needs_width=False, field=True, uses_activation=(),
              prepare=prepare, cost=gaussian.MODEL.cost,
              description="the limiting SDE by projected Euler, depth = number of steps")
