"""The limiting SDE of docs/mathematics.md, section 3 (projected Euler) and the refinement coupling.

    dX_i = [P_{X_i} A_i(X) + c(X_i)] dt + P_{X_i} W(dt, X_i),   c(x) = -((d-1) k0 / 2) x,

``E[W(t,x) W(s,y)^T] = min(t,s) K(<x,y>) I_d``.  One projected Euler step of size h:

    X_i' = Pi(X_i + h (P_{X_i} A_i(X) + c(X_i)) + P_{X_i} dW_i),

with ``dW`` the field increment over the step sampled jointly at the N tokens
(``fields.kernel_cholesky``: covariance ``h K(<x_i, x_j>) I_d``).  The Euler step keeps
``E|X + ...|^2 = 1 + O(h^2)`` (the Ito drift c compensates the radial push of the noise),
and the projection puts the tokens back on the sphere exactly.

Refinement coupling (``ladder_paths``): several levels share one Brownian field.  At every
fine step the increment over ``dt`` is drawn jointly at the current *evaluation points* of
all levels (R N points); level r adds it to its accumulator and, every ``factors[r]`` fine
steps, makes one step with the accumulated increment ``W(t + h_r, x) - W(t, x)`` evaluated at
its own points x, exactly the coarse increment of the same field.  A level is either the
SDE (evaluation points X) or the Gaussian transformer with step h_r (evaluation points
``Y = Pi(X + h_r A(X))``, update ``X' = Pi(Y + dW(Y))``), so the same routine couples the
Euler ladder and the depth ladder of the Gaussian transformer with the SDE.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .fields import STATUS_OK, rng_state
from .observables import config_deviation, max_token_deviation
from .transformer import attention, attention_half_step, project_rows, record, sample_field, store


@njit(cache=True)
def sde_step(X, dW, h, k0, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A, Zw, out):
    """out = Pi(X + h (P_X A(X) + c(X)) + P_X dW), c(x) = -((d-1) k0 / 2) x."""
    n, d = X.shape
    if attn:
        attention(X, beta, Qt, Kt, Vt, QX, KX, VX, S, A)
    else:
        A[:, :] = 0.0
    cc = -0.5 * (d - 1) * k0
    for i in range(n):
        xa = 0.0
        xw = 0.0
        for c in range(d):
            xa += X[i, c] * A[i, c]
            xw += X[i, c] * dW[i, c]
        for c in range(d):
            x = X[i, c]
            Zw[i, c] = x + h * (A[i, c] - xa * x + cc * x) + dW[i, c] - xw * x
    return project_rows(Zw, out)


@njit(cache=True, parallel=True)
def sde_paths(table, k0, X0, seeds, n_steps, dt, beta, attn, Qt, Kt, Vt, rtol, energy, betas,
              energies, store_every, traj, final, status):
    """Projected Euler for the SDE, all paths (status[p] = (code, step) on failure)."""
    P, N, d = X0.shape
    sq = math.sqrt(dt)
    for p in prange(P):
        st = rng_state(seeds[p])
        X = X0[p].copy()
        Xn = np.empty((N, d))
        A = np.empty((N, d))
        QX = np.empty((N, d))
        KX = np.empty((N, d))
        VX = np.empty((N, d))
        S = np.empty((N, N)) if attn else np.empty((1, 1))
        G = np.empty((N, N))
        Sw = np.empty((N, N))
        L = np.empty((N, N))
        Zd = np.empty((N, d))
        dW = np.empty((N, d))
        Zw = np.empty((N, d))
        record(X, p, 0, energy, betas, energies)
        store(X, p, 0, store_every, traj)
        for step in range(n_steps):
            code = sample_field(st, table, k0, X, G, Sw, L, Zd, dW, rtol)
            if code == STATUS_OK:
                for i in range(N):
                    for c in range(d):
                        dW[i, c] *= sq
                code = sde_step(X, dW, dt, k0, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A, Zw, Xn)
            if code != STATUS_OK:
                status[p, 0] = code
                status[p, 1] = step
                break
            X[:, :] = Xn
            record(X, p, step + 1, energy, betas, energies)
            store(X, p, step + 1, store_every, traj)
        final[p, :, :] = X


KIND_SDE = 0
KIND_GAUSSIAN_TRANSFORMER = 1


@njit(cache=True)
def _eval_points(kind, X, E, h, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A):
    if kind == KIND_SDE:
        E[:, :] = X
        return STATUS_OK
    return attention_half_step(X, E, h, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A)


@njit(cache=True, parallel=True)
def ladder_paths(table, k0, X0, seeds, n_fine, dt, factors, kinds, beta, attn, Qt, Kt, Vt, rtol,
                 final, max_dev, max_dev_config, status):
    """Levels r = 0..R-1 on one Brownian field; level 0 (factor 1) is the reference.

    final (P, R, N, d); max_dev / max_dev_config (P, R): max over level r's grid times of
    max_i |x_i^r - x_i^0| and of sqrt(sum_i |x_i^r - x_i^0|^2).
    """
    P, N, d = X0.shape
    R = factors.shape[0]
    M = R * N
    sq = math.sqrt(dt)
    for p in prange(P):
        st = rng_state(seeds[p])
        Xs = np.empty((R, N, d))
        Es = np.empty((R, N, d))
        Ws = np.zeros((R, N, d))
        for r in range(R):
            Xs[r] = X0[p]
        Eall = np.empty((M, d))
        dWall = np.empty((M, d))
        G = np.empty((M, M))
        Sw = np.empty((M, M))
        L = np.empty((M, M))
        Zd = np.empty((M, d))
        A = np.empty((N, d))
        QX = np.empty((N, d))
        KX = np.empty((N, d))
        VX = np.empty((N, d))
        S = np.empty((N, N)) if attn else np.empty((1, 1))
        Zw = np.empty((N, d))
        Xn = np.empty((N, d))
        code = STATUS_OK
        for r in range(R):
            if code == STATUS_OK:
                code = _eval_points(kinds[r], Xs[r], Es[r], factors[r] * dt, beta, attn, Qt, Kt, Vt,
                                    QX, KX, VX, S, A)
        for s in range(n_fine):
            if code != STATUS_OK:
                break
            for r in range(R):
                Eall[r * N:(r + 1) * N, :] = Es[r]
            code = sample_field(st, table, k0, Eall, G, Sw, L, Zd, dWall, rtol)
            if code != STATUS_OK:
                status[p, 1] = s
                break
            for r in range(R):
                for i in range(N):
                    for c in range(d):
                        Ws[r, i, c] += sq * dWall[r * N + i, c]
            for r in range(R):
                f = factors[r]
                if (s + 1) % f != 0:
                    continue
                h = f * dt
                if kinds[r] == KIND_SDE:
                    code = sde_step(Xs[r], Ws[r], h, k0, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A,
                                    Zw, Xn)
                else:
                    for i in range(N):
                        for c in range(d):
                            Zw[i, c] = Es[r, i, c] + Ws[r, i, c]
                    code = project_rows(Zw, Xn)
                if code != STATUS_OK:
                    status[p, 1] = s
                    break
                Xs[r] = Xn
                Ws[r] = 0.0
                code = _eval_points(kinds[r], Xs[r], Es[r], h, beta, attn, Qt, Kt, Vt, QX, KX, VX, S, A)
                if code != STATUS_OK:
                    status[p, 1] = s
                    break
                dev = max_token_deviation(Xs[r], Xs[0])
                if dev > max_dev[p, r]:
                    max_dev[p, r] = dev
                devc = config_deviation(Xs[r], Xs[0])
                if devc > max_dev_config[p, r]:
                    max_dev_config[p, r] = devc
        if code != STATUS_OK:
            status[p, 0] = code
        final[p] = Xs

