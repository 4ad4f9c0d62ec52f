"""Multi-head self-attention, the one attention unit of the engine (numba).

    A_i(X) = sum_h V_h sum_j softmax_j(beta <Q_h x_i, K_h x_j>) x_j        (H heads)

(the output projection is absorbed into V_h).  Its operands travel as one object,
:class:`Attention` (a namedtuple numba passes as one argument): ``on`` (False when every V_h
is 0: attention switched off), ``beta`` and the transposed stacks ``Qt, Kt, Vt`` of shape
(H, d, d) (row convention: ``(Q x_i)^T = x_i^T Q^T``).  :func:`operands` builds it from a
:class:`~sssn_verify.params.ModelParams`; :func:`work` allocates a path's buffers once.

More (moved from this docstring): docs/modules.md, ``sssn_verify.numeric.attention``.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from .fields import STATUS_OK
from .sphere import push, project_rows

Attention = namedtuple("Attention", ["on", "beta", "Qt", "Kt", "Vt"])


def operands(params) -> Attention:
    """The attention operands of `params` (Q, K, V as (H, d, d) stacks, transposed)."""
    Q, K, V = params.heads()
    t = (lambda M: np.ascontiguousarray(np.transpose(M, (0, 2, 1))))
    return Attention(bool(params.attention_on), float(params.beta), t(Q), t(K), t(V))


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
def work(n, d, att):
    """A path's attention buffers (QX, KX, VX, S, A) for n tokens."""
    S = np.empty((n, n)) if att.on else np.empty((1, 1))
    return (np.empty((n, d)), np.empty((n, d)), np.empty((n, d)), S, np.empty((n, d)))


@njit(cache=True)
def attend(X, att, aw):
    """A(X) (N, d) into aw's last buffer, heads summed in order (see module doc)."""
    QX, KX, VX, S, A = aw
    n = X.shape[0]
    for h in range(att.Vt.shape[0]):
        np.dot(X, att.Vt[h], VX)
        if n > 1:
            np.dot(X, att.Qt[h], QX)
            np.dot(X, att.Kt[h], KX)
            np.dot(QX, KX.T, S)
            softmax_rows(S, att.beta)
            if h == 0:
                np.dot(S, VX, A)
            else:
                A[:, :] += np.dot(S, VX)
        elif h == 0:
            A[:, :] = VX
        else:
            A[:, :] += VX
    return A


@njit(cache=True)
def half_step(X, Y, h, att, aw):
    """Y = Pi(X + h A(X)) (Y = X when attention is off); returns a status code."""
    if not att.on:
        Y[:, :] = X
        return STATUS_OK
    A = attend(X, att, aw)
    n, d = X.shape
    for i in range(n):
        for c in range(d):
            A[i, c] = X[i, c] + h * A[i, c]
    return project_rows(A, Y)


@njit(cache=True)
def pair_rates(X, att, aw, gap, rate):
    """Exact attention part of d(1 - rho_ij)/dt for the pairs i < j (row-major order) of X (N, d).

    The velocity is ``x_i' = P_{x_i} A_i = A_i - <x_i, A_i> x_i`` and
    ``d(1 - rho_ij)/dt = -(<x_i', x_j> + <x_i, x_j'>) = <x_i - x_j, x_i' - x_j'>`` (the velocities are
    tangent: ``<x_i', x_i> = 0``), evaluated in the second form and ``gap = 1 - rho_ij`` as
    ``|x_i - x_j|^2 / 2``, so nearly coincident tokens lose no accuracy to cancellation (relative
    rounding ~1e-16 / |x_i - x_j|).  Rows of X must be unit.
    """
    n, d = X.shape
    vel = aw[2]                      # the VX buffer is free after attend
    if att.on:
        A = attend(X, att, aw)
        for i in range(n):
            xa = 0.0
            for c in range(d):
                xa += X[i, c] * A[i, c]
            for c in range(d):
                vel[i, c] = A[i, c] - xa * X[i, c]
    else:
        vel[:, :] = 0.0
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            g = 0.0
            r = 0.0
            for c in range(d):
                diff = X[i, c] - X[j, c]
                g += diff * diff
                r += diff * (vel[i, c] - vel[j, c])
            gap[k] = 0.5 * g
            rate[k] = r
            k += 1


@njit(cache=True)
def max_pair_ratios(Xs, att):
    """For each configuration Xs[p] (P, N, d): max over pairs of |d(1 - rho_ij)/dt| / (1 - rho_ij)
    (attention part, exact; pairs with 1 - rho_ij = 0 are skipped)."""
    P, n, d = Xs.shape
    aw = work(n, d, att)
    m = n * (n - 1) // 2
    gap = np.empty(m)
    rate = np.empty(m)
    out = np.zeros(P)
    for p in range(P):
        pair_rates(Xs[p], att, aw, gap, rate)
        best = 0.0
        for k in range(m):
            if gap[k] > 0.0:
                best = max(best, abs(rate[k]) / gap[k])
        out[p] = best
    return out


@njit(cache=True)
def apply_sum_v(x, att, out):
    """out = sum_h V_h x (the attention seen by a single token)."""
    d = x.shape[0]
    for c in range(d):
        s = 0.0
        for h in range(att.Vt.shape[0]):
            for k in range(d):
                s += x[k] * att.Vt[h, k, c]
        out[c] = s


@njit(cache=True)
def tangent_half_step(x, dX, h, att, y, dY):
    """One token and k tangent vectors (rows of dX) through x -> Pi(x + h sum_h V_h x):
    y = Pi(x + h V x), dY_a = P_y (dX_a + h V dX_a) / |x + h V x|."""
    d = x.shape[0]
    if not att.on:
        y[:] = x
        dY[:, :] = dX
        return STATUS_OK
    for c in range(d):
        su = x[c]
        for hd in range(att.Vt.shape[0]):
            for k in range(d):
                su += h * x[k] * att.Vt[hd, k, c]
        y[c] = su
    for a in range(dX.shape[0]):
        for c in range(d):
            sv = dX[a, c]
            for hd in range(att.Vt.shape[0]):
                for k in range(d):
                    sv += h * dX[a, k] * att.Vt[hd, k, c]
            dY[a, c] = sv
    return push(y, dY)
