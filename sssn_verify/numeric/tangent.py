"""Tangent (linearized) flow of one token and one tangent vector; Benettin renormalisation.

Each layer map x -> x' is differentiated exactly; the tangent vector v is pushed forward,
its log-length increment accumulated and v renormalised to |v| = 1 (Benettin), so
``log_growth / T`` estimates the top Lyapunov exponent lambda_1 of docs/mathematics.md, section 5.

Finite-width transformer (one token, attention ``A(x) = V x``):
    u = x + delta V x,  y = u / |u|,   dy = P_y (v + delta V v) / |u|
    z = y + sqrt(delta) F(y),          dz = dy + sqrt(delta) J_F(y) dy
    x' = z / |z|,                      v' = P_{x'} dz / |z|
with (F(y), J_F(y) dy) sampled exactly in law: per hidden unit k the pair
``(<w_k, y> + b_k, <w_k, dy>)`` is Gaussian with covariance
``[[sw^2 |y|^2 + sb^2, sw^2 <y, dy>], [., sw^2 |dy|^2]]`` and, given the hidden rows
``h = phi(z)``, ``hdot = phi'(z) zdot``, the outputs are Gaussian with covariance
``(sa^2 / m)`` times their 2 x 2 Gram matrix (``fields.mlp_preactivations`` / ``mlp_outputs``
with rows (y, dy) and bias indicators (1, 0)).

Gaussian transformer: for a unit y and a tangent dy, G(y) ~ N(0, k0 I) and
DG(y)[dy] ~ N(0, k1 |dy|^2 I) are independent (Cov = dK/dt = K'(1) <y, dy> = 0), so they are
drawn directly.  SDE: the Jacobian of the projected Euler step
``x' = Pi(x + h b(x) + P_x w)``, ``b(x) = V x - <x, V x> x - ((d-1) k0 / 2) x``, with
``w ~ N(0, k0 h I)`` and ``Dw[v] ~ N(0, k1 h |v|^2 I)`` independent:
``dz = v + h Db[v] - (v <x, w> + x <v, w>) + P_x Dw[v]``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .fields import (STATUS_NONFINITE, STATUS_OK, STATUS_ZERO_NORM, mlp_outputs,
                     mlp_preactivations, normal, rng_state)


@njit(cache=True)
def _dot(a, b):
    s = 0.0
    for c in range(a.shape[0]):
        s += a[c] * b[c]
    return s


@njit(cache=True)
def _attention_one(x, v, delta, attn, Vt, y, dy):
    """y = Pi(x + delta V x), dy = P_y (v + delta V v) / |x + delta V x|."""
    d = x.shape[0]
    if not attn:
        y[:] = x
        dy[:] = v
        return STATUS_OK
    for c in range(d):
        su = x[c]
        sv = v[c]
        for k in range(d):
            su += delta * x[k] * Vt[k, c]
            sv += delta * v[k] * Vt[k, c]
        y[c] = su
        dy[c] = sv
    return _push(y, dy)


@njit(cache=True)
def _push(z, dz):
    """In place: z <- z / |z|, dz <- P_{z/|z|} dz / |z| (the derivative of Pi)."""
    s = _dot(z, z)
    if not np.isfinite(s) or not np.isfinite(_dot(dz, dz)):
        return STATUS_NONFINITE
    if s == 0.0:
        return STATUS_ZERO_NORM
    nz = math.sqrt(s)
    for c in range(z.shape[0]):
        z[c] /= nz
    proj = _dot(z, dz)
    for c in range(z.shape[0]):
        dz[c] = (dz[c] - proj * z[c]) / nz
    return STATUS_OK


@njit(cache=True)
def _renormalise(x, v, p, layer, logs, cum):
    nv = math.sqrt(_dot(v, v))
    if not (nv > 0.0) or not np.isfinite(nv):
        return cum, STATUS_NONFINITE
    for c in range(v.shape[0]):
        v[c] /= nv
    cum += math.log(nv)
    logs[p, layer + 1] = cum
    return cum, STATUS_OK


@njit(cache=True)
def tangent_finite_path(phi, dphi, p, x0s, v0s, seeds, n_layers, delta, attn, Vt, sw, sb, sa, m,
                        pre_exact, out_exact, rtol, logs, final, status):
    """Tangent flow of the finite-width transformer, path p (see module docstring)."""
    d = x0s.shape[1]
    sq = math.sqrt(delta)
    st = rng_state(seeds[p])
    x = x0s[p].copy()
    v = v0s[p].copy()
    Yr = np.empty((2, d))
    bias = np.array([1.0, 0.0])
    Z = np.empty((2, m))
    C = np.empty((2, 2))
    L = np.empty((2, 2))
    Xi = np.empty((2, m)) if pre_exact else np.empty((1, 1))
    Wd = np.empty((1, 1)) if pre_exact else np.empty((d, m))
    bm = np.empty(1) if pre_exact else np.empty(m)
    Zd = np.empty((2, d))
    Am = np.empty((1, 1)) if out_exact else np.empty((m, d))
    O = np.empty((2, d))
    y = np.empty(d)
    dy = np.empty(d)
    cum = 0.0
    logs[p, 0] = 0.0
    for layer in range(n_layers):
        code = _attention_one(x, v, delta, attn, Vt, y, dy)
        if code == STATUS_OK:
            Yr[0] = y
            Yr[1] = dy
            code = mlp_preactivations(st, Yr, bias, sw, sb, pre_exact, Z, C, L, Xi, Wd, bm, rtol)
        if code == STATUS_OK:
            for k in range(m):
                z = Z[0, k]
                Z[1, k] = dphi(z) * Z[1, k]
                Z[0, k] = phi(z)
            code = mlp_outputs(st, Z, sa, out_exact, O, C, L, Zd, Am, rtol)
        if code == STATUS_OK:
            for c in range(d):
                x[c] = y[c] + sq * O[0, c]
                v[c] = dy[c] + sq * O[1, c]
            code = _push(x, v)
        if code == STATUS_OK:
            cum, code = _renormalise(x, v, p, layer, logs, cum)
        if code != STATUS_OK:
            status[p, 0] = code
            status[p, 1] = layer
            break
    final[p, :] = x


@njit(cache=True, parallel=True)
def tangent_gaussian_paths(x0s, v0s, seeds, n_layers, delta, attn, Vt, k0, k1, logs, final, status):
    """Tangent flow of the Gaussian transformer: G ~ N(0, k0 I), DG[dy] ~ N(0, k1 |dy|^2 I)."""
    P, d = x0s.shape
    sq = math.sqrt(delta)
    r0 = math.sqrt(k0)
    r1 = math.sqrt(k1)
    for p in prange(P):
        st = rng_state(seeds[p])
        x = x0s[p].copy()
        v = v0s[p].copy()
        y = np.empty(d)
        dy = np.empty(d)
        cum = 0.0
        logs[p, 0] = 0.0
        for layer in range(n_layers):
            code = _attention_one(x, v, delta, attn, Vt, y, dy)
            if code == STATUS_OK:
                ndy = math.sqrt(_dot(dy, dy))
                for c in range(d):
                    x[c] = y[c] + sq * r0 * normal(st)
                for c in range(d):
                    v[c] = dy[c] + sq * r1 * ndy * normal(st)
                code = _push(x, v)
            if code == STATUS_OK:
                cum, code = _renormalise(x, v, p, layer, logs, cum)
            if code != STATUS_OK:
                status[p, 0] = code
                status[p, 1] = layer
                break
        final[p, :] = x


@njit(cache=True, parallel=True)
def tangent_sde_paths(x0s, v0s, seeds, n_steps, dt, attn, Vt, k0, k1, logs, final, status):
    """Tangent flow of the projected Euler scheme of the SDE (one token, A(x) = V x)."""
    P, d = x0s.shape
    s0 = math.sqrt(k0 * dt)
    s1 = math.sqrt(k1 * dt)
    cc = -0.5 * (d - 1) * k0
    for p in prange(P):
        st = rng_state(seeds[p])
        x = x0s[p].copy()
        v = v0s[p].copy()
        w = np.empty(d)
        dw = np.empty(d)
        Vx = np.zeros(d)
        Vv = np.zeros(d)
        z = np.empty(d)
        dz = np.empty(d)
        cum = 0.0
        logs[p, 0] = 0.0
        for step in range(n_steps):
            nv = math.sqrt(_dot(v, v))
            for c in range(d):
                w[c] = s0 * normal(st)
            for c in range(d):
                dw[c] = s1 * nv * normal(st)
            if attn:
                for c in range(d):
                    a = 0.0
                    b = 0.0
                    for k in range(d):
                        a += x[k] * Vt[k, c]
                        b += v[k] * Vt[k, c]
                    Vx[c] = a
                    Vv[c] = b
            xVx = _dot(x, Vx)
            vVx = _dot(v, Vx)
            xVv = _dot(x, Vv)
            xw = _dot(x, w)
            vw = _dot(v, w)
            xdw = _dot(x, dw)
            for c in range(d):
                z[c] = x[c] + dt * (Vx[c] - xVx * x[c] + cc * x[c]) + w[c] - xw * x[c]
                dz[c] = (v[c] + dt * (Vv[c] - v[c] * xVx - x[c] * (vVx + xVv) + cc * v[c])
                         - (v[c] * xw + x[c] * vw) + dw[c] - xdw * x[c])
            code = _push(z, dz)
            if code == STATUS_OK:
                x[:] = z
                v[:] = dz
                cum, code = _renormalise(x, v, p, step, logs, cum)
            if code != STATUS_OK:
                status[p, 0] = code
                status[p, 1] = step
                break
        final[p, :] = x
