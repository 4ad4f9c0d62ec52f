"""The Gaussian transformer (m = infinity): the finite-width transformer's width limit.

    y_i = Pi(x_i + h A_i(X)),   x_i' = Pi(y_i + sqrt(h) G_l(y_i)),

with ``G_l`` the centred Gaussian field of covariance ``K(<y, y'>) I_d``, fresh every layer,
sampled jointly at the N points (``fields.sample_field``).  It converges to the SDE as the
depth grows (Theorem 1.1; ``engine.sde_refinement_ladder(kind="gaussian")``).

Tangent step (one token y, k tangent vectors dy_a): ``G(y) ~ N(0, k0 I)`` and the
derivatives ``DG(y)[dy_a]`` are jointly Gaussian, independent of G(y) (Cov = K'(1) <y, dy> =
0 for tangent dy), with covariance ``k1 <dy_a, dy_b> I_d`` (``fields.gram_factor``).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ...errors import ParameterError
from ..attention import half_step, tangent_half_step
from ..fields import STATUS_OK, fill_normal, gram_factor, normal, sample_field
from . import Model, Prepared
from .finite_width import advance

FieldConsts = namedtuple("FieldConsts", ["table", "k0", "k1"])

evaluate = half_step


@njit(cache=True)
def work(n, d, consts):
    """(G, Sw, L, Zd, Zw): the field sampler's buffers for n points and a spare (n, d)."""
    return (np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.empty((n, d)), np.empty((n, d)))


@njit(cache=True)
def noise(st, E, consts, w, W, rtol):
    """W = G(E): the field at the rows of E."""
    G, Sw, L, Zd, _ = w
    return sample_field(st, consts.table, consts.k0, E, G, Sw, L, Zd, W, rtol)


@njit(cache=True)
def tangent_work(d, k, consts):
    return (np.empty(d), np.empty((k, d)), np.empty((k, k)), np.empty((k, d)))


@njit(cache=True)
def tangent_step(st, x, V, h, consts, att, tw, rtol):
    """x <- y + sqrt(h) G(y), V_a <- dy_a + sqrt(h) DG(y)[dy_a] (before the projection)."""
    y, dY, Lg, Zk = tw
    code = tangent_half_step(x, V, h, att, y, dY)
    if code != STATUS_OK:
        return code
    sq = math.sqrt(h)
    r0 = math.sqrt(consts.k0)
    r1 = math.sqrt(consts.k1)
    gram_factor(dY, Lg)
    d = x.shape[0]
    for c in range(d):
        x[c] = y[c] + sq * r0 * normal(st)
    fill_normal(st, Zk)
    for a in range(V.shape[0]):
        for c in range(d):
            s = 0.0
            for b in range(a + 1):
                s += sq * r1 * Lg[a, b] * Zk[b, c]
            V[a, c] = dY[a, c] + s
    return STATUS_OK


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False) -> Prepared:
    """FieldConsts of `params`' kernel K (sigma_w, sigma_b, sigma_a, activation)."""
    from ..kernels import kernel
    kf = kernel(params)
    if tangent and not math.isfinite(kf.k1):
        raise ParameterError("activation", params.activation.name,
                             "has a jump (k1 = K'(1) = inf): the m = infinity tangent flow is undefined")
    return Prepared(FieldConsts(np.ascontiguousarray(kf.table), kf.k0, kf.k1), "exact field")


def _cost(n, d, m):
    return float(n) ** 3 + 10.0 * d


MODEL = Model(name="gaussian", module=__name__, label="Gaussian transformer", unit="layer",
              converges_to="sde", needs_width=False, field=True, uses_activation=(),
              prepare=prepare, cost=_cost,
              description="Gaussian transformer (m = infinity): x' = Pi(y + sqrt(delta) G(y))")
