"""Finite-width and Gaussian (m = infinity) transformers of docs/mathematics.md, section 1 (numba kernels).

One layer, step ``delta = T / L``::

    y_i     = Pi(x_i + delta * A_i(X)),   A_i = sum_j softmax_j(beta <Q x_i, K x_j>) V x_j
    x_i'    = Pi(y_i + sqrt(delta) * F_l(y_i))

with ``F_l(y) = m^{-1/2} sum_k a_k phi(<w_k, y> + b_k)`` (fresh weights each layer, shared by
the tokens of a path) or, for the Gaussian transformer, the centred Gaussian field ``G_l``
with covariance ``K(<y_i, y_j>) I_d`` sampled jointly at the N points
(:mod:`sssn_verify.numeric.fields`).  The softmax uses log-sum-exp (row maximum
subtracted), so ``beta`` up to 1e4 and beyond cannot overflow.

Kernels take plain arrays; each path p re-seeds its own generator from ``seeds[p]`` and
writes ``status[p] = (code, layer)`` instead of raising (the Python layer raises).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

from .fields import (STATUS_NONFINITE, STATUS_OK, STATUS_ZERO_NORM, correlated_normals,
                     kernel_cholesky, mlp_outputs, mlp_preactivations, rng_state)
from .kernels import table_gap
from .observables import energy0, energy_beta, half_sq_dist


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


@intrinsic
def _bits_as_float(typingctx, x):
    """Reinterpret an int64 bit pattern as a float64 (LLVM bitcast; vectorisable)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10


@njit(cache=True, fastmath={"contract"})
def exp_nonpositive(x):
    """e^x for x <= 0 (the softmax weights), relative error < 3e-16 down to x = -708, 0 below.

    Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, degree-13 Taylor polynomial (remainder
    < 4e-18) and 2^k from its bit pattern: unlike libm's exp this vectorises (no SVML needed).
    """
    t = x * _LOG2E
    k = math.floor(t + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    kk = max(k, -1022.0)
    res = p * _bits_as_float((np.int64(kk) + 1023) << 52)
    return res if x >= -708.0 else 0.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def softmax_rows(S, beta):
    """In place: S_ij <- exp(beta S_ij - max_j beta S_ij) / sum_j (log-sum-exp: no overflow)."""
    n, m = S.shape
    for i in range(n):
        mx = -np.inf
        for j in range(m):
            v = beta * S[i, j]
            S[i, j] = v
            mx = max(mx, v)
        tot = 0.0
        for j in range(m):
            e = exp_nonpositive(S[i, j] - mx)
            S[i, j] = e
            tot += e
        inv = 1.0 / tot
        for j in range(m):
            S[i, j] *= inv


@njit(cache=True)
def attention(X, beta, Qt, Kt, Vt, QX, KX, VX, S, A):
    """A_i = sum_j softmax_j(beta <Q x_i, K x_j>) V x_j (log-sum-exp), into A (N, d).

    Qt, Kt, Vt are the transposed matrices (row convention: (Q x_i)^T = x_i^T Q^T).
    """
    n = X.shape[0]
    VX[:, :] = np.dot(X, Vt)
    if n == 1:
        A[:, :] = VX
        return
    QX[:, :] = np.dot(X, Qt)
    KX[:, :] = np.dot(X, Kt)
    S[:, :] = np.dot(QX, KX.T)
    softmax_rows(S, beta)
    A[:, :] = np.dot(S, VX)


@njit(cache=True)
def record(X, p, slot, energy, betas, energies):
    """E_0 into energy[p, slot]; E_beta for each requested beta into energies[p, slot, :]."""
    energy[p, slot] = energy0(X)
    for b in range(betas.shape[0]):
        energies[p, slot, b] = energy_beta(X, betas[b])


@njit(cache=True)
def store(X, p, layer, store_every, traj):
    if store_every > 0 and layer % store_every == 0:
        traj[p, layer // store_every, :, :] = X


@njit(cache=True)
def attention_half_step(X, Y, delta, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A):
    """Y = Pi(X + delta A(X)) (Y = X when attention is off)."""
    if not attn:
        Y[:, :] = X
        return STATUS_OK
    attention(X, beta, Qt, Kt, Vt, QX, KX, VX, S, A)
    n, d = X.shape
    for i in range(n):
        for c in range(d):
            A[i, c] = X[i, c] + delta * A[i, c]
    return project_rows(A, Y)


@njit(cache=True)
def finite_width_path(phi, p, X0, seeds, n_layers, delta, beta, attn, Qt, Kt, Vt, sw, sb, sa, m,
                      pre_exact, out_exact, rtol, energy, betas, energies, store_every, traj,
                      final, status):
    """Finite-width transformer, path p (the engine runs it in prange over paths).

    ``phi`` is the activation's numba callable; the engine compiles a per-activation
    parallel wrapper with ``phi`` as a global so that the wrapper is cached on disk
    (a dispatcher *argument* would defeat numba's cache).
    """
    _, N, d = X0.shape
    sq = math.sqrt(delta)
    st = rng_state(seeds[p])
    X = X0[p].copy()
    Y = np.empty((N, d))
    A = np.empty((N, d))
    QX = np.empty((N, d))
    KX = np.empty((N, d))
    VX = np.empty((N, d))
    S = np.empty((N, N)) if attn else np.empty((1, 1))
    ones = np.ones(N)
    Z = np.empty((N, m))
    C = np.empty((N, N))
    L = np.empty((N, N))
    Xi = np.empty((N, m)) if pre_exact else np.empty((1, 1))
    Wd = np.empty((1, 1)) if pre_exact else np.empty((d, m))
    bm = np.empty(1) if pre_exact else np.empty(m)
    Zd = np.empty((N, d))
    Am = np.empty((1, 1)) if out_exact else np.empty((m, d))
    O = np.empty((N, d))
    record(X, p, 0, energy, betas, energies)
    store(X, p, 0, store_every, traj)
    for layer in range(n_layers):
        code = attention_half_step(X, Y, delta, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A)
        if code == STATUS_OK:
            code = mlp_preactivations(st, Y, ones, sw, sb, pre_exact, Z, C, L, Xi, Wd, bm, rtol)
        if code == STATUS_OK:
            for i in range(N):
                for k in range(m):
                    Z[i, k] = phi(Z[i, k])
            code = mlp_outputs(st, Z, sa, out_exact, O, C, L, Zd, Am, rtol)
        if code == STATUS_OK:
            for i in range(N):
                for c in range(d):
                    O[i, c] = Y[i, c] + sq * O[i, c]
            code = project_rows(O, X)
        if code != STATUS_OK:
            status[p, 0] = code
            status[p, 1] = layer
            break
        record(X, p, layer + 1, energy, betas, energies)
        store(X, p, layer + 1, store_every, traj)
    final[p, :, :] = X


@njit(cache=True)
def gap_matrix(table, Y, G):
    """G_ij = k0 - K(<y_i, y_j>) through the stable gap of u = |y_i - y_j|^2 / 2."""
    n = Y.shape[0]
    for i in range(n):
        G[i, i] = 0.0
        for j in range(i):
            g = table_gap(table, half_sq_dist(Y[i], Y[j]))
            G[i, j] = g
            G[j, i] = g


@njit(cache=True)
def sample_field(st, table, k0, Y, G, Sw, L, Zd, out, rtol):
    """out (N, d): the Gaussian field with covariance K(<y_i, y_j>) I_d at the rows of Y.

    ``table`` is a ``numeric.kernels`` table (k0 = table[0]); the kernel matrix is
    factorised in gap form by ``fields.kernel_cholesky`` (see its jitter policy).
    """
    gap_matrix(table, Y, G)
    code = kernel_cholesky(k0, G, Sw, L, rtol)
    if code == STATUS_OK:
        correlated_normals(st, L, Zd, out)
    return code


@njit(cache=True, parallel=True)
def gaussian_paths(table, k0, X0, seeds, n_layers, delta, beta, attn, Qt, Kt, Vt, rtol,
                   energy, betas, energies, store_every, traj, final, status):
    """Gaussian transformer (m = infinity), all paths: x' = Pi(y + sqrt(delta) G(y))."""
    P, N, d = X0.shape
    sq = math.sqrt(delta)
    for p in prange(P):
        st = rng_state(seeds[p])
        X = X0[p].copy()
        Y = np.empty((N, d))
        A = np.empty((N, d))
        QX = np.empty((N, d))
        KX = np.empty((N, d))
        VX = np.empty((N, d))
        S = np.empty((N, N)) if attn else np.empty((1, 1))
        G = np.empty((N, N))
        Sw = np.empty((N, N))
        L = np.empty((N, N))
        Zd = np.empty((N, d))
        O = np.empty((N, d))
        record(X, p, 0, energy, betas, energies)
        store(X, p, 0, store_every, traj)
        for layer in range(n_layers):
            code = attention_half_step(X, Y, delta, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A)
            if code == STATUS_OK:
                code = sample_field(st, table, k0, Y, G, Sw, L, Zd, O, rtol)
            if code == STATUS_OK:
                for i in range(N):
                    for c in range(d):
                        O[i, c] = Y[i, c] + sq * O[i, c]
                code = project_rows(O, X)
            if code != STATUS_OK:
                status[p, 0] = code
                status[p, 1] = layer
                break
            record(X, p, layer + 1, energy, betas, energies)
            store(X, p, layer + 1, store_every, traj)
        final[p, :, :] = X

