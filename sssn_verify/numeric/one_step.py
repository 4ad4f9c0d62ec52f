"""One exactly sampled layer of the Gaussian transformer: its one-step moments (numba).

The noise-only Gaussian transformer (docs/mathematics.md, section 1; ``numeric/models/gaussian.py``)
moves one token x and a unit tangent vector v through one layer of step h by

    z = x + sqrt(h) G(x),   u = v + sqrt(h) DG(x)[v],   x' = Pi(z),   v' = DPi(z)[u] = P_{x'} u / |z|,

with ``G(x) ~ N(0, k0 I)`` and ``DG(x)[v] ~ N(0, k1 I)`` independent, sampled exactly by the model's
own ``tangent_step`` (the one sampler; per-block generator states from ``numeric/rng.py``).  The law
is rotation invariant, so the layers' log-growths ``log|v_{l+1}|/|v_l|`` are i.i.d. and the model's
Lyapunov exponent *at step h* is exactly ``E[log|v'|]/h``; likewise the mean radial displacement
of one layer is ``E[<x', x> - 1]``.  Nothing here uses a derived formula.

Per path and step size h (x = e_1, v = e_2) two statistics are recorded:

* ``lam(h) = (log|v'| - [(<u, v> - 1) - (<z, x> - 1)]) / h``: the bracket is the mean-zero
  term linear in sqrt(h) (a control variate read off the sampled z and u), so lam has O(1)
  variance and ``E lam(h) = E log|v'| / h``, the exponent at step h;
* ``gam(h) = (<x', x> - 1) / h`` (its linear term vanishes identically), whose mean is the
  radial (Ito) drift coefficient of one layer at step h.

Both means are smooth in h with an expansion in integer powers of h (the law is even in
sqrt(h)), so the Richardson combination ``2 Y(h) - Y(2h)`` on the *same* normals (each path
restores its generator state for the second step) has bias O(h^2) and O(1) variance.  Paths come
in fixed blocks of BLOCK, each block one generator seeded by ``rng.path_seeds`` and drawn in path
order; means and centred sums of squares per block are merged in block order, so the result
depends on the seed and the number of paths only, not on threads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .fields import DEFAULT_RTOL, STATUS_OK, rng_state
from .models.gaussian import tangent_step, tangent_work

BLOCK = 4096
# the statistics per path: lam(h), lam(2h), gam(h), gam(2h), and the Richardson combinations
STATS = ("lam_h", "lam_2h", "gam_h", "gam_2h", "lam", "gam")


@njit(cache=True)
def _one(st, d, h, consts, att, x, V, tw, rtol, out, j):
    """One layer of step h from x = e_1 and the k = V.shape[0] tangent vectors v_a = e_{a+2}, drawing
    from generator state st: lam (averaged over the k vectors) -> out[j], gam -> out[j + 2]."""
    k = V.shape[0]
    for c in range(d):
        x[c] = 0.0
        for a in range(k):
            V[a, c] = 0.0
    x[0] = 1.0
    for a in range(k):
        V[a, a + 1] = 1.0
    code = tangent_step(st, x, V, h, consts, att, tw, rtol)
    if code != STATUS_OK:
        return code
    # |z|^2 - 1, |u_a|^2 - 1, <z, u_a> computed without cancellation (z = x, u_a = V[a] here)
    zp = 0.0
    for c in range(1, d):
        zp += x[c] * x[c]
    z2m1 = (x[0] - 1.0) * (x[0] + 1.0) + zp
    nz2 = 1.0 + z2m1
    if not (nz2 > 0.0) or not math.isfinite(nz2):
        return 1
    lognz = 0.5 * math.log1p(z2m1)
    acc = 0.0
    for a in range(k):
        u2m1 = (V[a, a + 1] - 1.0) * (V[a, a + 1] + 1.0)
        zu = 0.0
        for c in range(d):
            zu += x[c] * V[a, c]
            if c != a + 1:
                u2m1 += V[a, c] * V[a, c]
        if not math.isfinite(u2m1 + zu):
            return 1
        # |v_a'| = |P_{x'} u_a| / |z|,  |P_{x'} u_a|^2 = |u_a|^2 - <z, u_a>^2 / |z|^2
        logv = 0.5 * math.log1p(u2m1 - zu * zu / nz2) - lognz
        lin = (V[a, a + 1] - 1.0) - (x[0] - 1.0)
        acc += logv - lin
    out[j] = acc / (k * h)
    nz = math.sqrt(nz2)
    # <x', e_1> - 1 = z_1/|z| - 1 = -|z_perp|^2 / (|z| (z_1 + |z|))
    out[j + 2] = -zp / (nz * (x[0] + nz)) / h
    return STATUS_OK


@njit(cache=True, parallel=True)
def _blocks(P, seeds, d, k, h, consts, att, rtol, mean, m2, status):
    """Per block b of BLOCK consecutive paths (one generator, seeded by seeds[b], drawn in path
    order): mean[b, s] and centred sum of squares m2[b, s] of the 6 statistics (Welford)."""
    nb = mean.shape[0]
    for b in prange(nb):
        x = np.empty(d)
        V = np.empty((k, d))
        tw = tangent_work(d, k, consts)
        out = np.empty(6)
        st = rng_state(seeds[b])
        cnt = 0
        for p in range(b * BLOCK, min(P, (b + 1) * BLOCK)):
            saved = st[0]
            code = _one(st, d, h, consts, att, x, V, tw, rtol, out, 0)
            st[0] = saved                             # the same normals for the step 2h
            if code == STATUS_OK:
                code = _one(st, d, 2.0 * h, consts, att, x, V, tw, rtol, out, 1)
            if code != STATUS_OK:
                status[b, 0] = code
                status[b, 1] = p
                break
            out[4] = 2.0 * out[0] - out[1]
            out[5] = 2.0 * out[2] - out[3]
            cnt += 1
            for s in range(6):                       # Welford, in path order
                delta = out[s] - mean[b, s]
                mean[b, s] += delta / cnt
                m2[b, s] += delta * (out[s] - mean[b, s])


@dataclass(frozen=True)
class OneStepMoments:
    """Means and standard errors over `n` paths of the statistics in :data:`STATS` at step `h`."""

    h: float
    n: int
    seed: int
    mean: dict
    stderr: dict
    sd: dict


def one_step_moments(params, h: float, n_paths: int, seed: int, stream: int = 0,
                     n_vectors: int = 1) -> OneStepMoments:
    """Run :func:`_blocks` on `n_paths` paths of the noise-only Gaussian transformer (params' kernel)."""
    from ..errors import SimulationError
    from ..params import check_int, check_real
    from . import attention
    from .models import gaussian
    from .rng import path_seeds
    h = check_real("h", h, 0.0, strict=True)
    P = check_int("n_paths", n_paths, 2)
    p = params.with_(V=0.0, n_tokens=1)
    consts = gaussian.prepare(p, tangent=True).consts
    nb = (P + BLOCK - 1) // BLOCK
    seeds = path_seeds(seed, nb, 40 + stream)
    mean = np.zeros((nb, 6))
    m2 = np.zeros((nb, 6))
    status = np.zeros((nb, 2), dtype=np.int64)
    k = min(check_int("n_vectors", n_vectors, 1), p.d - 1)
    _blocks(P, seeds, p.d, k, h, consts, attention.operands(p), DEFAULT_RTOL, mean, m2, status)
    if np.any(status[:, 0] != 0):
        raise SimulationError(f"one-step moments: non-finite or degenerate layer at h = {h:g} ({p})")
    counts = np.array([min(P, (b + 1) * BLOCK) - b * BLOCK for b in range(nb)], dtype=float)
    tot_mean = np.zeros(6)
    tot_m2 = np.zeros(6)
    n = 0.0
    for b in range(nb):                               # Chan et al., in block order
        nn = n + counts[b]
        delta = mean[b] - tot_mean
        tot_mean = tot_mean + delta * counts[b] / nn
        tot_m2 = tot_m2 + m2[b] + delta ** 2 * n * counts[b] / nn
        n = nn
    sd = np.sqrt(tot_m2 / (n - 1))
    return OneStepMoments(h, P, seed, dict(zip(STATS, map(float, tot_mean))),
                          dict(zip(STATS, map(float, sd / math.sqrt(n)))), dict(zip(STATS, map(float, sd))))

