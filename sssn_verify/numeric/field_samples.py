"""Samples of one layer's noise F at fixed points, straight from a model's ``noise`` (its MLP or field).

``field_samples(model, params, Y, n_paths, key, width=..., mode=...)`` returns F(Y) (P, n, d) for
P independent layers, drawn by the model's own compiled ``work``/``noise`` (bound by
``driver.compiled``; a finite-width block with its hidden stack), so the empirical covariance
E[F(y_i) F(y_j)^T] can be compared with the derived K(<y_i, y_j>) I_d (tests/test_deep_blocks.py).
``tangent_samples`` does the same for the tangent step: (F(y), J_F(y) v_a) of one layer at one
point (attention off), which the tests compare with finite differences of ``field_samples`` on
the same literal weights.  Each block of paths has its own stream (``key.path_states``); a
path's numbers depend on the key alone.
"""
from __future__ import annotations

import numpy as np

from .fields import DEFAULT_RTOL, STATUS_OK, rng_state

BLOCK = 256  # paths per stream


def samples_block(b, P, states, Y, consts, rtol, out, status):
    """Block b: out[p] = F(Y) for paths p of the block (the model's noise at the rows of Y)."""
    n, d = Y.shape
    W = np.empty((n, d))
    w = model_work(n, d, consts)  # noqa: F821 (bound in the generated module)
    st = rng_state(states[b])
    for p in range(b * BLOCK, min(P, (b + 1) * BLOCK)):
        code = model_noise(st, Y, consts, w, W, rtol)  # noqa: F821
        if code != STATUS_OK:
            status[b] = code
            return
        out[p] = W


def tangent_block(b, P, states, y, V0, consts, att, rtol, out, status):
    """Block b: out[p] = (F(y), J_F(y) V0_a) of the model's tangent step (h = 1, attention off)."""
    k, d = V0.shape
    x = np.empty(d)
    V = np.empty((k, d))
    tw = model_tangent_work(d, k, consts)  # noqa: F821 (bound in the generated module)
    st = rng_state(states[b])
    for p in range(b * BLOCK, min(P, (b + 1) * BLOCK)):
        x[:] = y
        V[:, :] = V0
        code = model_tangent_step(st, x, V, 1.0, consts, att, tw, rtol)  # noqa: F821
        if code != STATUS_OK:
            status[b] = code
            return
        for c in range(d):
            out[p, 0, c] = x[c] - y[c]
            for a in range(k):
                out[p, a + 1, c] = V[a, c] - V0[a, c]


def _kernel(fn, m, params):
    from .driver import compiled
    from .models import hidden_activations
    return (compiled(fn, m, params.activation, None, hidden_activations(params)) if m.uses_activation
            else compiled(fn, m))


def tangent_samples(model: str, params, y, V, n_paths: int, key, *, width: int | None = None,
                    mode: str = "auto", rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """(n_paths, 1 + k, d): F(y) and J_F(y) v_a (rows of V) from `model`'s tangent step."""
    from ..errors import SimulationError
    from ..params import check_int
    from . import attention
    from .models import MODELS
    from .rng import as_key
    m = MODELS[model]
    p = params.with_(V=0.0, n_tokens=1)
    y = np.ascontiguousarray(y, dtype=float)
    V = np.ascontiguousarray(np.atleast_2d(V), dtype=float)
    P = check_int("n_paths", n_paths, 1)
    prep = m.prepare(p, width, mode, 1 + V.shape[0], tangent=True)
    nb = -(-P // BLOCK)
    out = np.empty((P, 1 + V.shape[0], y.size))
    status = np.zeros(nb, np.int64)
    _kernel(tangent_block, m, p)(nb, P, as_key(key).path_states(nb), y, V, prep.consts, attention.operands(p),
                                 rtol, out, status)
    if np.any(status != STATUS_OK):
        raise SimulationError(f"{m.label}: tangent samples, sampler status {int(status[status != STATUS_OK][0])}")
    return out


def field_samples(model: str, params, Y, n_paths: int, key, *, width: int | None = None,
                  mode: str = "auto", rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """F(Y) (n_paths, n, d) of `model`'s layer noise at the rows of Y (unit vectors, not checked)."""
    from ..errors import SimulationError
    from ..params import check_int
    from .models import MODELS
    from .rng import as_key
    m = MODELS[model]
    Y = np.ascontiguousarray(Y, dtype=float)
    n, d = Y.shape
    P = check_int("n_paths", n_paths, 1)
    prep = m.prepare(params, width, mode, n)
    nb = -(-P // BLOCK)
    out = np.empty((P, n, d))
    status = np.zeros(nb, np.int64)
    _kernel(samples_block, m, params)(nb, P, as_key(key).path_states(nb), Y, prep.consts, rtol, out, status)
    if np.any(status != STATUS_OK):
        raise SimulationError(f"{m.label}: field samples, sampler status {int(status[status != STATUS_OK][0])}")
    return out
