"""Monte Carlo experiments on the registered models: the one harness of the claims' evidence.

An experiment runs one layer of a model of ``numeric.models.REGISTRY`` from fixed start points at
Richardson levels h, h/2, ..., h/2^(n-1) on shared normals (each level restores the path's
generator state) and records a statistic per path (docs/experiments.md).  Its per-path function is
bound to the model's numba functions by ``driver.compiled``, as the engine's drivers are, so a new
registered model is simulated by every experiment whose requirements it meets
(:func:`models_where`).  Paths come in blocks of BLOCK, one generator state per block
(``Key.path_states``) drawn in path order; block moments (:func:`welford`) are merged in block order
(:func:`merge_blocks`), so results depend on the key and the number of paths only, never on threads
or on the slices of blocks the kernel is called on (``numeric.slices``: a return to Python about every
0.4 s, where Ctrl-C is raised).

One Richardson (:func:`richardson_weights`), one accumulator (:func:`welford`, :func:`merge_blocks`),
one control-variate helper (:func:`cross_fit`).  Experiments: :func:`tangent_layer` (one token and k
tangent vectors: log-growth rates with their mean-zero linear term removed, and the radial drift) and
:func:`pair_layer` (N tokens, antithetic noise: the initial rate of a functional of the tokens).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .attention import work as attention_work
from .driver import orthonormalise
from .fields import DEFAULT_RTOL, STATUS_NONFINITE, STATUS_OK, rng_state
from .kernel_table import table_gap
from .observables import half_sq_dist
from .slices import run_sliced
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
    """values (P,) or (P, k) minus the mean-zero `controls` (P, c) times least-squares coefficients fitted on
    the *other* half of the paths (even/odd), per column: each half's coefficients are independent of the
    half they correct, so the mean stays unbiased; the variance drops by the controls' share."""
    adj = np.empty_like(values)
    halves = (np.arange(values.shape[0]) % 2 == 0, np.arange(values.shape[0]) % 2 == 1)
    for this, other in (halves, halves[::-1]):
        coef, *_ = np.linalg.lstsq(controls[other], values[other] - values[other].mean(axis=0), rcond=None)
        adj[this] = values[this] - controls[this] @ coef
    return adj


#: fewest paths per control for a cross-fit (with fewer, the fitted coefficients are mostly noise)
MIN_PATHS_PER_CONTROL = 8


def with_controls(values: np.ndarray, controls: np.ndarray) -> np.ndarray:
    """`values` (P,) or (P, k) with the `controls` (P, c) cross-fitted out (:func:`cross_fit`) when there are
    controls and at least MIN_PATHS_PER_CONTROL paths per control; otherwise `values` as they are."""
    if controls.shape[0] > 0 and values.shape[0] >= MIN_PATHS_PER_CONTROL * controls.shape[1]:
        return cross_fit(values, controls)
    return values


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


@dataclass(frozen=True, eq=False)
class TableKernel:
    """A field model's kernel as Python callers read it: k0, k1, the table, K(rho) and the stable gap."""

    k0: float
    k1: float
    table: np.ndarray

    def value(self, rho):
        from .kernels import _kernel_array
        out = _kernel_array(self.table, np.clip(np.asarray(rho, dtype=float), -1.0, 1.0))
        return float(out) if np.ndim(rho) == 0 else out

    def gap(self, u):
        from .kernels import _gap_array
        out = _gap_array(self.table, np.clip(np.asarray(u, dtype=float), 0.0, 2.0))
        return float(out) if np.ndim(u) == 0 else out


def model_kernel(model: str, params) -> TableKernel:
    """The kernel K of the field model `model` at `params` (from its constants)."""
    c = model_constants(model, params, tangent=False)
    return TableKernel(float(c.k0), float(c.k1), np.asarray(c.table))


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
    from .models import MODELS, hidden_activations
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
    kern = (compiled(tangent_block, m, p.activation, None, hidden_activations(p)) if m.uses_activation
            else compiled(tangent_block, m))
    states, weights, att = key.path_states(nb), richardson_weights(nl), attention.operands(p)

    def call(a, b):            # blocks a..b-1: their states and rows, paths counted from block a
        kern(b - a, P - a * BLOCK, states[a:b], p.d, k, bool(qr), hs, weights, consts, att, DEFAULT_RTOL,
             mean[a:b], m2[a:b], cm[a:b], status[a:b])
        status[a:b, 1] += np.where(status[a:b, 0] != 0, a * BLOCK, 0)

    run_sliced(call, nb)
    if np.any(status[:, 0] != 0):
        raise SimulationError(f"{m.label}: non-finite or degenerate layer at h = {h:g} ({p})")
    return moments(model, hs, names, counts, mean, m2, cm, key)


# ------------------------------------------------------------------ one layer of N tokens: a functional's rate
FUNCTIONALS = {"energy": 0, "linear": 1, "quadratic": 2, "log_distance": 3, "projective_energy": 4,
               "projective_log_distance": 5, "overlap": 6, "overlap_squared": 7}
#: the functionals whose rate is a log-rate (A_l divided by F(X0))
LOG_RATE_KINDS = (0, 4)
N_CONTROLS = 9


@njit(cache=True)
def energy(X, beta):
    """sum_{i<j} f~(|x_i - x_j|^2 / 2), f~(u) = (1 - e^{-beta u}) / beta (u at beta = 0)."""
    n, d = X.shape
    tot = 0.0
    for i in range(n):
        for j in range(i):
            s = 0.0
            for c in range(d):
                t = X[i, c] - X[j, c]
                s += t * t
            u = 0.5 * s
            x = beta * u
            tot += u if x == 0.0 else -math.expm1(-x) / beta
    return tot


@njit(cache=True)
def projective_gaps(X, i, j):
    """(|x_i - x_j|^2 / 2, |x_i + x_j|^2 / 2) = (1 - rho, 1 + rho), each without cancellation."""
    sm = 0.0
    sp_ = 0.0
    for c in range(X.shape[1]):
        t = X[i, c] - X[j, c]
        v = X[i, c] + X[j, c]
        sm += t * t
        sp_ += v * v
    return 0.5 * sm, 0.5 * sp_


@njit(cache=True)
def functional(X, kind, beta, avec):
    """kind 0: ``energy``; 1: (1/N) sum_i <a, x_i>; 2: (1/N) sum_i <a, x_i>^2 (the SPDE's test functions);
    3: log |x_0 - x_1| (the log-distance of the first two tokens); 4: the projective energy
    sum_{i<j} (1 - rho_ij^2); 5: log sin(theta) = (1/2) log(1 - rho^2) of the first two tokens (theta their
    projective distance); 1 - rho^2 is formed as (1 - rho)(1 + rho) from the chords; 6: the overlap rho = <x_0, x_1>
    of the first two tokens; 7: rho^2 (with 6 on the same paths: the squared increment of rho, claim ``two_point``)."""
    if kind == 0:
        return energy(X, beta)
    if kind == 6 or kind == 7:
        r = 0.0
        for c in range(X.shape[1]):
            r += X[0, c] * X[1, c]
        return r if kind == 6 else r * r
    if kind == 4:
        tot = 0.0
        for i in range(X.shape[0]):
            for j in range(i):
                a, b = projective_gaps(X, i, j)
                tot += a * b
        return tot
    if kind == 5:
        a, b = projective_gaps(X, 0, 1)
        return 0.5 * math.log(a * b)
    if kind == 3:
        s = 0.0
        for c in range(X.shape[1]):
            t = X[0, c] - X[1, c]
            s += t * t
        return 0.5 * math.log(s)
    n, d = X.shape
    tot = 0.0
    for i in range(n):
        s = 0.0
        for c in range(d):
            s += avec[c] * X[i, c]
        tot += s if kind == 1 else s * s
    return tot / n


@njit(cache=True)
def pair_controls(W, g, k0, out):
    """Mean-zero functions of the standard normals Z behind the noise W at the two points E (whitened
    by the field's covariance [[k0, K], [K, k0]] per coordinate, g = k0 - K(<e_0, e_1>)): Z_1^2 - 1, Z_0^2 - 1
    and Z_0 Z_1 for coordinate 1 (the separation of two_tokens), coordinate 0 and the sum over the
    others.  Mean zero whatever the model's law beyond its covariance, so subtracting any fixed
    multiple leaves the mean unchanged (a direction of variance ~ 0 contributes no control)."""
    d = W.shape[1]
    s2 = g * (2.0 * k0 - g) / k0                     # the variance of W_1 given W_0, in gap form
    r0 = math.sqrt(k0)
    for j in range(N_CONTROLS):
        out[j] = 0.0
    for c in range(d):
        grp = 1 if c == 1 else (0 if c == 0 else 2)
        z0 = W[0, c] / r0
        out[3 + grp] += z0 * z0 - 1.0
        if s2 > 1e-14 * k0:
            z1 = ((W[1, c] - W[0, c]) + (g / k0) * W[0, c]) / math.sqrt(s2)
            out[grp] += z1 * z1 - 1.0
            out[6 + grp] += z0 * z1


def pair_block(b, P, states, X0, hs, kinds, beta, avec, consts, ctable, ck0, att, rtol, out, cv, status):
    """Block b of the pair experiment (bound to a field model by ``driver.compiled``): per path, level l and
    functional F of `kinds`, A_l = (F(X'_+) + F(X'_-) - 2 F(X0)) / (2 h_l norm) for the layer X0 -> X'_+- driven
    by +-sqrt(h_l) W, W the model's noise at its evaluation points (the same normals at every level; drawn once
    when the points do not depend on the step), norm = F(X0) for the energies (kinds 0 and 4: a log-rate), else 1.
    The controls (two tokens, field models only: cv has rows) whiten W by the kernel table `ctable`, k0 `ck0`."""
    n, d = X0.shape
    E = np.empty((n, d))
    W = np.empty((n, d))
    Ws = np.empty((n, d))
    Xn = np.empty((n, d))
    aw = attention_work(n, d, att)
    w = model_work(n, d, consts)  # noqa: F821 (bound in the generated module)
    nk = kinds.shape[0]
    e0 = np.empty(nk)
    norm = np.empty(nk)
    acc = np.empty(nk)
    for q in range(nk):
        e0[q] = functional(X0, kinds[q], beta, avec)
        norm[q] = e0[q] if kinds[q] == 0 or kinds[q] == 4 else 1.0
    nl = hs.shape[0]
    g = 0.0
    st = rng_state(states[b])
    for p in range(b * BLOCK, min(P, (b + 1) * BLOCK)):
        saved = st[0]
        code = STATUS_OK
        for lv in range(nl):
            if att.on or lv == 0:
                code = model_evaluate(X0, E, hs[lv], att, aw)  # noqa: F821
                if code == STATUS_OK:
                    st[0] = saved                      # the same normals at every level
                    code = model_noise(st, E, consts, w, W, rtol)  # noqa: F821
            sq = math.sqrt(hs[lv])
            for q in range(nk):
                acc[q] = -2.0 * e0[q]
            for sgn in (1.0, -1.0):                    # antithetic pair +-W
                if code != STATUS_OK:
                    break
                for i in range(n):
                    for c in range(d):
                        Xn[i, c] = X0[i, c]
                        Ws[i, c] = sgn * sq * W[i, c]
                code = model_advance(Xn, E, Ws, hs[lv], consts, att, aw, w)  # noqa: F821
                for q in range(nk):
                    acc[q] += functional(Xn, kinds[q], beta, avec)
            for q in range(nk):
                if code != STATUS_OK:
                    status[p] = code
                    out[p, lv, q] = np.nan
                else:
                    out[p, lv, q] = acc[q] / (2.0 * hs[lv] * norm[q])
        if cv.shape[0] > 0 and code == STATUS_OK:
            if p == b * BLOCK:                         # E is deterministic: the same at every path
                g = table_gap(ctable, half_sq_dist(E[0], E[1]))
            pair_controls(W, g, ck0, cv[p])


def pair_layer(model: str, consts, X0, functional_kind, n_paths: int, key, h: float, *, levels: int = 3,
               beta: float = 0.0, a=None, attention=None):
    """(per-path A_l at steps h/2^l (P, levels), per-path controls (P, N_CONTROLS) for two tokens of a field
    model, else (0, N_CONTROLS)) of one layer of the model `model` with constants `consts` (a field model's
    FieldConsts, or a ``numeric.kernels`` kernel: table, k0, k1; another model's own prepared constants,
    e.g. ``rqf``'s) from the tokens X0; see :func:`pair_block`.  A tuple of functionals gives A of each on the
    same paths, (P, levels, len(functional_kind))."""
    from ..errors import ParameterError, SimulationError
    from .attention import Attention
    from .driver import compiled
    from .models import MODELS
    from .rng import as_key
    if model not in MODELS or MODELS[model].driver != "simulate":
        raise ParameterError("model", model, "must be a registered one-system model (numeric/models/)")
    X0 = np.ascontiguousarray(X0, dtype=float)
    n, d = X0.shape
    if attention is None:
        e = np.zeros((1, d, d))
        attention = Attention(False, float(beta), e, e, e)
    field = MODELS[model].field
    if field:
        from .models.gaussian import FieldConsts
        consts = FieldConsts(np.ascontiguousarray(consts.table), float(consts.k0), float(consts.k1))
    ctable, ck0 = (consts.table, consts.k0) if field else (np.zeros(5), 0.0)
    P = int(n_paths)
    nb = block_counts(P).size
    several = not isinstance(functional_kind, str)
    kinds = np.array([FUNCTIONALS[k] for k in (functional_kind if several else (functional_kind,))], np.int64)
    out = np.empty((P, levels, kinds.size))
    cv = np.zeros((P if n == 2 and field else 0, N_CONTROLS))
    status = np.zeros(P, np.int64)
    avec = np.zeros(d) if a is None else np.ascontiguousarray(a, dtype=float)
    kern = compiled(pair_block, MODELS[model])
    states, hs = as_key(key).path_states(nb), h * 2.0 ** -np.arange(levels)

    def call(a, b):            # blocks a..b-1: their states, their paths' rows (counted from block a)
        r = a * BLOCK
        kern(b - a, P - r, states[a:b], X0, hs, kinds, float(beta), avec, consts, ctable, float(ck0), attention,
             1e-13, out[r:], cv[r:] if cv.shape[0] else cv, status[r:])

    run_sliced(call, nb)
    if np.any(status != STATUS_OK):
        raise SimulationError(f"{MODELS[model].label}: exact-layer rate, sampler status "
                              f"{int(status[status != STATUS_OK][0])}")
    return (out if several else np.ascontiguousarray(out[:, :, 0])), cv
