"""Monte Carlo experiments on the registered models: the one harness of the claims' evidence.

An experiment runs one layer of a model of ``numeric.models.REGISTRY`` from fixed start points at
Richardson levels h, h/2, ..., h/2^(n-1) on shared normals (each level restores the path's
generator state) and records a statistic per path (docs/experiments.md).  Its per-path function is
bound to the model's numba functions by ``driver.compiled``, as the engine's drivers are, so a new
registered model is simulated by every experiment whose requirements it meets
(:func:`models_where`).  Paths come in blocks of BLOCK, one generator state per block
(``Key.path_states``) drawn in path order; block moments (:func:`welford`) are merged in block order
(:func:`merge_blocks`), so results depend on the key and the number of paths only, never on threads.

One Richardson (:func:`richardson_weights`), one accumulator (:func:`welford`, :func:`merge_blocks`),
one control-variate helper (:func:`cross_fit`).  Experiments: :func:`tangent_layer` (one token and k
tangent vectors: log-growth rates with their mean-zero linear term removed, and the radial drift).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .driver import orthonormalise
from .fields import DEFAULT_RTOL, STATUS_NONFINITE, STATUS_OK, rng_state
from .sphere import push

BLOCK = 4096


# ------------------------------------------------------------------ the shared pieces
def richardson_weights(n_levels: int) -> np.ndarray:
    """Weights w_l of levels h/2^l (l = 0..n-1): sum_l w_l Y(h/2^l) cancels c_1 h, .., c_{n-1} h^{n-1}
    (2 levels: (-1, 2); 3 levels: (1, -6, 8)/3)."""
    r = 2.0 ** -np.arange(n_levels)
    A = np.vander(r, n_levels, increasing=True).T          # rows: powers 0..n-1 of the steps
    rhs = np.zeros(n_levels)
    rhs[0] = 1.0
    return np.linalg.solve(A, rhs)


@njit(cache=True)
def welford(mean, m2, cm, cnt, x):
    """Add observation x (the cnt-th) to the running mean, centred sums of squares m2 and co-moments
    cm (q, q) of its last q entries, in place (Welford)."""
    S = x.shape[0]
    q = cm.shape[0]
    for t in range(q):                                 # co-moments use the old means of one factor
        dt = x[S - q + t] - mean[S - q + t]
        for s in range(q):
            cm[s, t] += dt * (x[S - q + s] - mean[S - q + s]) * (cnt - 1.0) / cnt
    for s in range(S):
        delta = x[s] - mean[s]
        mean[s] += delta / cnt
        m2[s] += delta * (x[s] - mean[s])


def merge_blocks(counts, mean, m2, cm=None):
    """(mean, sd, n, cov of the co-moment entries) over blocks of (counts[b], mean[b], m2[b], cm[b])
    merged in block order (Chan et al.)."""
    S = mean.shape[1]
    q = 0 if cm is None else cm.shape[1]
    tot_mean = np.zeros(S)
    tot_m2 = np.zeros(S)
    tot_cm = np.zeros((q, q))
    n = 0.0
    for b in range(mean.shape[0]):
        nn = n + counts[b]
        delta = mean[b] - tot_mean
        tot_mean = tot_mean + delta * counts[b] / nn
        tot_m2 = tot_m2 + m2[b] + delta ** 2 * n * counts[b] / nn
        if q:
            dq = delta[S - q:]
            tot_cm = tot_cm + cm[b] + np.outer(dq, dq) * n * counts[b] / nn
        n = nn
    return tot_mean, np.sqrt(tot_m2 / (n - 1)), int(n), tot_cm / (n - 1)


def block_counts(n_paths: int) -> np.ndarray:
    nb = (n_paths + BLOCK - 1) // BLOCK
    return np.array([min(n_paths, (b + 1) * BLOCK) - b * BLOCK for b in range(nb)], dtype=float)


def cross_fit(values: np.ndarray, controls: np.ndarray) -> np.ndarray:
    """values minus the mean-zero `controls` (P, c) times least-squares coefficients fitted on the
    *other* half of the paths (even/odd): each half's coefficients are independent of the half they
    correct, so the mean stays unbiased; the variance drops by the controls' share."""
    adj = np.empty_like(values)
    halves = (np.arange(values.size) % 2 == 0, np.arange(values.size) % 2 == 1)
    for this, other in (halves, halves[::-1]):
        coef, *_ = np.linalg.lstsq(controls[other], values[other] - values[other].mean(), rcond=None)
        adj[this] = values[this] - controls[this] @ coef
    return adj


@dataclass(frozen=True)
class Moments:
    """Means, standard deviations and standard errors over `n` paths of the named statistics;
    ``name@l`` is the statistic at level l (step hs[l]), the bare name its Richardson combination."""

    model: str
    hs: tuple
    n: int
    key: object
    mean: dict
    sd: dict
    stderr: dict
    cov: np.ndarray          # per-path covariance of the Richardson combinations (the bare names)


def moments(model, hs, names, counts, mean, m2, cm, key) -> Moments:
    tot, sd, n, cov = merge_blocks(counts, mean, m2, cm)
    se = sd / math.sqrt(n)
    return Moments(model, tuple(hs), n, key, dict(zip(names, map(float, tot))), dict(zip(names, map(float, sd))),
                   dict(zip(names, map(float, se))), cov)


def models_where(**declared) -> tuple[str, ...]:
    """The registered models whose declared ``Model`` fields equal `declared` (e.g. field=True)."""
    from .models import MODELS
    return tuple(n for n, m in MODELS.items() if all(getattr(m, k) == v for k, v in declared.items()))


def model_constants(model: str, params, tangent: bool = True):
    """The constants a field model's kernels read (FieldConsts: table, k0, k1) at `params`."""
    from ..errors import ParameterError
    from .models import MODELS
    if model not in MODELS:
        raise ParameterError("model", model, f"must be one of {', '.join(MODELS)}")
    return MODELS[model].prepare(params, None, "auto", 1, tangent).consts


# ------------------------------------------------------------------ one layer of the tangent flow
@njit(cache=True)
def start_frame(x, V):
    """x = e_1 and V_a = e_{a+2}: the start of every path (the laws are rotation invariant)."""
    for c in range(x.shape[0]):
        x[c] = 0.0
        for a in range(V.shape[0]):
            V[a, c] = 0.0
    x[0] = 1.0
    for a in range(V.shape[0]):
        V[a, a + 1] = 1.0


@njit(cache=True)
def tangent_statistics(z, U, h, qr, lin, cum, out, j):
    """From the layer's map z and Jacobian rows U (before the projection) of start_frame: out[j + a]
    = (log r_a - lin_a) / h with r_a = |v_a'| averaged over a into out[j] (qr = False) or r_a = R_aa of
    the QR of the projected vectors (qr = True), lin_a = (<u_a, v_a> - 1) - (<z, x> - 1) the term
    linear in the noise (mean zero); then (<x', x> - 1) / h.  Differences formed without cancellation."""
    k, d = U.shape
    zp = 0.0
    for c in range(1, d):
        zp += z[c] * z[c]
    z2m1 = (z[0] - 1.0) * (z[0] + 1.0) + zp
    nz2 = 1.0 + z2m1
    if not (nz2 > 0.0) or not math.isfinite(nz2):
        return STATUS_NONFINITE
    nz = math.sqrt(nz2)
    gam = -zp / (nz * (z[0] + nz)) / h               # z_1/|z| - 1 = -|z_perp|^2 / (|z| (z_1 + |z|))
    for a in range(k):
        lin[a] = (U[a, a + 1] - 1.0) - (z[0] - 1.0)
    if qr:
        code = push(z, U)
        if code != STATUS_OK:
            return code
        for a in range(k):
            cum[a] = 0.0
        code = orthonormalise(U, cum)
        if code != STATUS_OK:
            return code
        for a in range(k):
            out[j + a] = (cum[a] - lin[a]) / h
        out[j + k] = gam
        return STATUS_OK
    lognz = 0.5 * math.log1p(z2m1)
    acc = 0.0
    for a in range(k):
        u2m1 = (U[a, a + 1] - 1.0) * (U[a, a + 1] + 1.0)
        zu = 0.0
        for c in range(d):
            zu += z[c] * U[a, c]
            if c != a + 1:
                u2m1 += U[a, c] * U[a, c]
        if not math.isfinite(u2m1 + zu):
            return STATUS_NONFINITE
        # |v_a'| = |P_{x'} u_a| / |z|,  |P_{x'} u_a|^2 = |u_a|^2 - <z, u_a>^2 / |z|^2
        acc += 0.5 * math.log1p(u2m1 - zu * zu / nz2) - lognz - lin[a]
    out[j] = acc / (k * h)
    out[j + 1] = gam
    return STATUS_OK


@njit(cache=True)
def richardson_into(out, weights, ns):
    """out[nl ns + s] = sum_l weights[l] out[l ns + s] (the Richardson combination of each statistic)."""
    nl = weights.shape[0]
    for s in range(ns):
        acc = 0.0
        for lv in range(nl):
            acc += weights[lv] * out[lv * ns + s]
        out[nl * ns + s] = acc


def tangent_block(b, P, states, d, k, qr, hs, weights, consts, att, rtol, mean, m2, cm, status):
    """Block b of the one-layer tangent experiment (bound to a model by ``driver.compiled``): for each
    path, start_frame, the model's tangent step at every level on the same normals, the statistics."""
    x = np.empty(d)
    V = np.empty((k, d))
    tw = model_tangent_work(d, k, consts)  # noqa: F821 (bound in the generated module)
    lin = np.empty(k)
    cum = np.empty(k)
    nl = hs.shape[0]
    ns = mean.shape[1] // (nl + 1)
    out = np.empty(mean.shape[1])
    st = rng_state(states[b])
    cnt = 0
    for p in range(b * BLOCK, min(P, (b + 1) * BLOCK)):
        saved = st[0]
        code = STATUS_OK
        for lv in range(nl):
            st[0] = saved                              # the same normals at every level
            start_frame(x, V)
            code = model_tangent_step(st, x, V, hs[lv], consts, att, tw, rtol)  # noqa: F821
            if code == STATUS_OK:
                code = tangent_statistics(x, V, hs[lv], qr, lin, cum, out, lv * ns)
            if code != STATUS_OK:
                break
        if code != STATUS_OK:
            status[b, 0] = code
            status[b, 1] = p
            break
        richardson_into(out, weights, ns)
        cnt += 1
        welford(mean[b], m2[b], cm[b], cnt, out)


def tangent_layer(model: str, params, h: float, n_paths: int, key, *, n_vectors: int = 1, qr: bool = False,
                  levels: int = 2, width: int | None = None) -> Moments:
    """One layer of `model`'s tangent flow (noise only) from x = e_1, v_a = e_{a+2}, at steps h/2^l.

    Statistics: "lam" (the mean over the k vectors of (log|v_a'| - lin_a)/h) or with `qr` "lam_1".."lam_k"
    ((log R_aa - lin_a)/h: the exponents at the step, the model's law being rotation invariant and
    fresh every layer), and "gam" ((<x', x> - 1)/h, the radial drift of one layer)."""
    from ..errors import SimulationError
    from ..params import check_int, check_real
    from . import attention
    from .driver import compiled
    from .models import MODELS
    from .rng import as_key
    h = check_real("h", h, 0.0, strict=True)
    P = check_int("n_paths", n_paths, 2)
    nl = check_int("levels", levels, 1)
    p = params.with_(V=0.0, n_tokens=1)
    m = MODELS[model] if model in MODELS else None
    consts = model_constants(model, p) if width is None else m.prepare(p, width, "auto", 1, True).consts
    k = check_int("n_vectors", n_vectors, 1)
    if k > p.d - 1:
        if qr:
            from ..errors import ParameterError
            raise ParameterError("n_vectors", n_vectors, f"must be at most d - 1 = {p.d - 1} for the QR statistics")
        k = p.d - 1
    base = [f"lam_{a + 1}" for a in range(k)] if qr else ["lam"]
    base.append("gam")
    hs = h * 2.0 ** -np.arange(nl)
    names = [f"{s}@{lv}" for lv in range(nl) for s in base] + base
    counts = block_counts(P)
    nb = counts.size
    key = as_key(key)
    mean = np.zeros((nb, len(names)))
    m2 = np.zeros((nb, len(names)))
    cm = np.zeros((nb, len(base), len(base)))
    status = np.zeros((nb, 2), dtype=np.int64)
    kern = compiled(tangent_block, m, p.activation if m.uses_activation else None)
    kern(nb, P, key.path_states(nb), p.d, k, bool(qr), hs, richardson_weights(nl), consts, attention.operands(p),
         DEFAULT_RTOL, mean, m2, cm, status)
    if np.any(status[:, 0] != 0):
        raise SimulationError(f"{m.label}: non-finite or degenerate layer at h = {h:g} ({p})")
    return moments(model, hs, names, counts, mean, m2, cm, key)
