"""The one Gaussian sampler of the engine: random numbers, the field at N points, the MLP in law.

* random numbers: a 64-bit SplitMix64 state per path (``rng_state``), normals by the
  Marsaglia-Tsang ziggurat (``fill_normal``: blockwise, vectorised); a path's numbers depend on
  its seed alone (any threads, chunks);
* the field at N points: ``kernel_cholesky`` + ``correlated_normals``, a pivoted semi-definite
  Cholesky with **no diagonal jitter** (``psd_cholesky``; ``STATUS_NOT_PSD`` for an invalid kernel);
* the MLP in law (``mlp_preactivations`` / ``mlp_outputs``): exact-in-law through an n x n factor
  (normals only for its rank, ``factor_rank``), in a tree basis near coincidence (``nearest_tree``, ``edge_rows``, ``graded_cholesky``,
  ``accumulate_tree``);
* the width coupling's square roots (``tree_field_cov``, ``graded_sqrt``).

The policies, their accuracy and the reasons are in docs/numerics.md, section "Fields".
"""
from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
from numba import njit

from ..errors import OutputError
from ..outputs import numba_cache_dir
from .kernels import table_gap
from .observables import half_sq_dist

# numba's cache=True checks only the cached function's own file, not the modules it calls:
# an edit of fields.py would leave a model's cached kernels stale.  Every module of the package
# with an ``@njit(cache=True)`` function (found in the sources, not listed by hand) therefore
# shares one digest; when it changes their cache files are removed, and the generated kernels
# get new names.
_NJIT_CACHE = re.compile(rb"^[ \t]*@(?:numba\.)?njit\((?:[^)]*,)?\s*cache\s*=\s*True", re.M)
_PACKAGE = Path(__file__).resolve().parents[1]


def _engine_modules() -> tuple[str, ...]:
    found = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        try:
            if _NJIT_CACHE.search(path.read_bytes()):
                found.append(".".join(("sssn_verify",) + path.relative_to(_PACKAGE).with_suffix("").parts))
        except OSError:
            continue
    return tuple(found)


#: the package's modules with ``@njit(cache=True)`` functions (dotted names)
ENGINE_MODULES = _engine_modules()


def _engine_files() -> list[Path]:
    return [_PACKAGE.joinpath(*name.split(".")[1:]).with_suffix(".py") for name in ENGINE_MODULES]


def engine_sources_digest() -> str:
    """sha256 over the sources of the numba modules the engine's kernels are built from."""
    import numba
    h = hashlib.sha256(numba.__version__.encode())
    for path in _engine_files():
        if path.exists():
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _invalidate_stale_caches() -> None:
    """Remove the engine modules' numba cache files (in the checked ``NUMBA_CACHE_DIR``) when the
    digest of their sources changed."""
    from numba.core.caching import UserProvidedCacheLocator
    root = numba_cache_dir()
    by_folder: dict[Path, set[str]] = {}
    for path in _engine_files():
        folder = root / UserProvidedCacheLocator.get_suitable_cache_subpath(str(path))
        by_folder.setdefault(folder, set()).add(path.stem)
    digest = engine_sources_digest()
    for folder, stems in by_folder.items():
        stamp = folder / "sssn_engine_sources.digest"
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if stamp.exists() and stamp.read_text() == digest:
                continue
            for name in stems:
                for f in list(folder.glob(f"{name}.*.nbi")) + list(folder.glob(f"{name}.*.nbc")):
                    f.unlink(missing_ok=True)
            stamp.write_text(digest)
        except OSError as exc:   # the checked private folder went away or filled up meanwhile
            raise OutputError(f"numba cache folder {str(folder)!r}: {exc.strerror or exc}") from None


_invalidate_stale_caches()

STATUS_OK = 0
STATUS_NONFINITE = 1
STATUS_NOT_PSD = 2
STATUS_ZERO_NORM = 3
STATUS_MESSAGES = {
    STATUS_NONFINITE: "non-finite (NaN/inf) state",
    STATUS_NOT_PSD: ("a sampling covariance is not positive semi-definite or not finite "
                     "(overflow/NaN in the MLP's hidden units, or an invalid kernel)"),
    STATUS_ZERO_NORM: "a token vanished before the radial projection (|z| = 0)",
}

DEFAULT_RTOL = 1e-13

# ---------------------------------------------------------------- random numbers
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_S32 = np.uint64(32)
_LOW7 = np.uint64(127)


def _ziggurat_tables():
    """Marsaglia & Tsang (2000) RNOR tables, 128 layers, 32-bit signed draws."""
    m1 = 2147483648.0
    dn = tn = 3.442619855899
    vn = 9.91256303526217e-3
    kn = np.zeros(128, np.int64)
    wn = np.zeros(128)
    fn = np.zeros(128)
    q = vn / math.exp(-0.5 * dn * dn)
    kn[0] = int((dn / q) * m1)
    kn[1] = 0
    wn[0] = q / m1
    wn[127] = dn / m1
    fn[0] = 1.0
    fn[127] = math.exp(-0.5 * dn * dn)
    for i in range(126, 0, -1):
        dn = math.sqrt(-2.0 * math.log(vn / dn + math.exp(-0.5 * dn * dn)))
        kn[i + 1] = int((dn / tn) * m1)
        tn = dn
        fn[i] = math.exp(-0.5 * dn * dn)
        wn[i] = dn / m1
    return kn, wn, fn


_KN, _WN, _FN = _ziggurat_tables()
_ZIG_R = 3.442619855899


@njit(cache=True)
def _mix64(z):
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(cache=True)
def rng_state(seed):
    """A fresh per-path generator state (SplitMix64) from a path seed."""
    s = np.empty(1, np.uint64)
    s[0] = _mix64(np.uint64(seed) * _MIX2 + _GOLDEN)
    return s


@njit(cache=True)
def next_u64(state):
    z = state[0] + _GOLDEN
    state[0] = z
    return _mix64(z)


@njit(cache=True)
def uniform(state):
    """Uniform on the open interval (0, 1)."""
    return (np.float64(next_u64(state) >> _S11) + 0.5) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _ziggurat_from(state, u):
    """The ziggurat draw that starts from the 64-bit word u: the rectangle test, then (rarely)
    the wedge or the tail with fresh uniforms, and a fresh word when the wedge rejects."""
    while True:
        iz = np.int64(u & _LOW7)
        hz = np.int64(u >> _S32) - 2147483648
        if abs(hz) < _KN[iz]:
            return hz * _WN[iz]
        x = hz * _WN[iz]
        if iz == 0:  # the tail beyond r
            while True:
                xx = -math.log(uniform(state)) / _ZIG_R
                yy = -math.log(uniform(state))
                if yy + yy >= xx * xx:
                    break
            return _ZIG_R + xx if hz > 0 else -_ZIG_R - xx
        if _FN[iz] + uniform(state) * (_FN[iz - 1] - _FN[iz]) < math.exp(-0.5 * x * x):
            return x
        u = next_u64(state)


@njit(cache=True)
def normal(state):
    """Standard normal (ziggurat)."""
    return _ziggurat_from(state, next_u64(state))


NORMAL_BLOCK = 256  # normals per block of fill_normal


@njit(cache=True)
def fill_normal(state, out):
    """Fill a C-contiguous array with standard normals (the ziggurat, blockwise).

    A block of NORMAL_BLOCK consecutive SplitMix64 words is generated and put through the
    rectangle test in one branch-free loop the compiler vectorises (the state advances by a
    constant, so word i of the block is ``mix(s + (i + 1) golden)``); the ~1.2 % of words that
    fail it then finish their ziggurat draw in order (wedge or tail), with their extra uniforms
    taken from the stream after the block.  Each entry is an exact ziggurat draw (same law as
    ``normal``; only the order in which the rare extra uniforms are consumed differs), and the
    numbers depend on the state alone.  About 2x the scalar loop per thread.
    """
    flat = out.reshape(out.size)
    n = flat.size
    raw = np.empty(NORMAL_BLOCK, np.uint64)
    bad = np.empty(NORMAL_BLOCK, np.int64)
    for a in range(0, n, NORMAL_BLOCK):
        nb = min(n - a, NORMAL_BLOCK)
        s = state[0]
        for i in range(nb):
            u = _mix64(s + np.uint64(i + 1) * _GOLDEN)
            raw[i] = u
            flat[a + i] = (np.int64(u >> _S32) - 2147483648) * _WN[np.int64(u & _LOW7)]
        state[0] = s + np.uint64(nb) * _GOLDEN
        k = 0
        for i in range(nb):
            u = raw[i]
            if not (abs(np.int64(u >> _S32) - 2147483648) < _KN[np.int64(u & _LOW7)]):
                bad[k] = i
                k += 1
        for t in range(k):
            i = bad[t]
            flat[a + i] = _ziggurat_from(state, raw[i])


# ---------------------------------------------------------------- semi-definite Cholesky
@njit(cache=True)
def _pivoted_from(C, B, start, tol, neg_tol, diag, perm):
    """Pivoted semi-definite Cholesky of the trailing block C[start:, start:] (see module doc).

    Columns start.. of B receive the factor in the original row order (B need not be
    triangular): C[start:, start:] ~ B[start:, start:] B[start:, start:]^T.
    """
    n = C.shape[0]
    for i in range(start, n):
        diag[i] = C[i, i]
        perm[i] = i
        if not np.isfinite(diag[i]):
            return STATUS_NOT_PSD
        for j in range(start, n):
            B[i, j] = 0.0
    for j in range(start, n):
        q = j
        best = diag[perm[j]]
        for t in range(j + 1, n):
            v = diag[perm[t]]
            if v > best:
                best = v
                q = t
        if not (best > tol):
            for t in range(j, n):
                if not (diag[perm[t]] >= -neg_tol):
                    return STATUS_NOT_PSD
            return STATUS_OK
        piv = perm[q]
        perm[q] = perm[j]
        perm[j] = piv
        inv = 1.0 / math.sqrt(best)
        B[piv, j] = best * inv  # = sqrt(best), rounded exactly as a duplicate row's entry
        for t in range(j + 1, n):
            i = perm[t]
            if diag[i] <= tol:  # already determined by the pivots: frozen (exact duplicates stay equal)
                continue
            acc = C[i, piv]
            for k in range(start, j):
                acc -= B[i, k] * B[piv, k]
            lij = acc * inv
            B[i, j] = lij
            diag[i] -= lij * lij
    return STATUS_OK


@njit(cache=True)
def psd_cholesky(C, B, rtol):
    """B with B B^T = C up to the pivot-clipping policy (diagonal pivoting); returns a status."""
    n = C.shape[0]
    scale = 0.0
    for i in range(n):
        if not (C[i, i] >= 0.0) or not np.isfinite(C[i, i]):
            return STATUS_NOT_PSD
        if C[i, i] > scale:
            scale = C[i, i]
    diag = np.empty(n)
    perm = np.empty(n, np.int64)
    return _pivoted_from(C, B, 0, rtol * scale, math.sqrt(rtol) * scale, diag, perm)


@njit(cache=True)
def kernel_cholesky(k0, G, S, B, rtol):
    """Factor B B^T = C for C = k0 - G (G the gap matrix, G_ii = 0), first point exact.

    S is an (n, n) work array; B receives the factor (see module doc).  Returns a status.
    """
    n = G.shape[0]
    if not (k0 >= 0.0) or not np.isfinite(k0):
        return STATUS_NOT_PSD
    for i in range(n):
        for j in range(n):
            B[i, j] = 0.0
    if k0 == 0.0:
        return STATUS_OK
    r0 = math.sqrt(k0)
    B[0, 0] = k0 / r0  # rounded as a coincident point's entry (k0 - 0) / r0
    for i in range(1, n):
        B[i, 0] = (k0 - G[i, 0]) / r0
    scale = 0.0
    for i in range(1, n):
        gi = G[i, 0]
        for j in range(1, i + 1):
            gj = G[j, 0]
            v = gi + gj - G[i, j] - gi * gj / k0
            S[i, j] = v
            S[j, i] = v
        if not np.isfinite(S[i, i]):
            return STATUS_NOT_PSD
        if S[i, i] > scale:
            scale = S[i, i]
    if n == 1:
        return STATUS_OK
    diag = np.empty(n)
    perm = np.empty(n, np.int64)
    # negative pivots are judged against k0 (the scale of the rounding in G)
    return _pivoted_from(S, B, 1, rtol * scale, math.sqrt(rtol) * k0, diag, perm)


@njit(cache=True)
def factor_rank(B):
    """1 + the last column of B with a nonzero entry (0 if none).

    A factor B (B B^T = C) needs standard normals only for its first factor_rank(B) columns:
    the pivoted factors of this module keep the columns beyond their rank zero, so a
    rank-deficient covariance (N > d + 1 pre-activations, N > m outputs) costs rank x k
    normals instead of n x k, exactly in law.
    """
    n, k = B.shape
    for j in range(k - 1, -1, -1):
        for i in range(n):
            if B[i, j] != 0.0:
                return j + 1
    return 0


@njit(cache=True)
def correlated_normals(state, B, Z, out):
    """out = B @ Z with Z (n, d) fresh standard normals: rows with covariance B B^T (times I_d).

    Only the first ``factor_rank(B)`` rows of Z are drawn (the others meet zero columns).
    """
    n, d = Z.shape
    r = factor_rank(B)
    fill_normal(state, Z.reshape(n * d)[:r * d])
    for i in range(n):
        for c in range(d):
            out[i, c] = 0.0
        for j in range(r):
            bij = B[i, j]
            if bij != 0.0:
                for c in range(d):
                    out[i, c] += bij * Z[j, c]


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
    factorised in gap form by :func:`kernel_cholesky` (see its jitter policy).
    """
    gap_matrix(table, Y, G)
    code = kernel_cholesky(k0, G, Sw, L, rtol)
    if code == STATUS_OK:
        correlated_normals(st, L, Zd, out)
    return code


@njit(cache=True)
def gram_factor(V, Lg):
    """Lower-triangular Lg (k, k) with Lg Lg^T = <V_a, V_b> (Cholesky of the rows' Gram matrix).

    ``sum_b Lg[a, b] Z_b`` with Z i.i.d. standard normal then has covariance <V_a, V_b>: the
    joint law of a field's derivatives along k tangent vectors.  A row dependent on the
    previous ones gets a zero diagonal (and a zero column below it).  k = 1: Lg = |V_0|.
    """
    k = V.shape[0]
    for a in range(k):
        for b in range(a + 1):
            s = 0.0
            for c in range(V.shape[1]):
                s += V[a, c] * V[b, c]
            for c in range(b):
                s -= Lg[a, c] * Lg[b, c]
            if a == b:
                Lg[a, a] = math.sqrt(s) if s > 0.0 else 0.0
            else:
                Lg[a, b] = s / Lg[b, b] if Lg[b, b] > 0.0 else 0.0
        for b in range(a + 1, k):
            Lg[a, b] = 0.0


# ---------------------------------------------------------------- the MLP in law
@njit(cache=True)
def graded_cholesky(C, B, rtol):
    """B B^T = C for a *graded* PSD matrix C (rows of very different scales); returns a status.

    Pivoted semi-definite Cholesky (largest remaining diagonal first) whose policy is relative
    to each row's own scale: row i is frozen (determined by the pivots, conditional mean) once
    its remaining diagonal is ``<= rtol * C_ii``, and a remaining diagonal below
    ``-sqrt(rtol) * C_ii`` (or NaN) is ``STATUS_NOT_PSD``.  The policy is invariant under
    C -> D C D (D diagonal), so a row of scale 1e-24 (the Gram entry of a 1e-12 difference) is
    factorised to the same relative accuracy as a row of scale 1; exactly zero rows stay zero.
    """
    n = C.shape[0]
    diag = np.empty(n)
    perm = np.empty(n, np.int64)
    for i in range(n):
        if not (C[i, i] >= 0.0) or not np.isfinite(C[i, i]):
            return STATUS_NOT_PSD
        diag[i] = C[i, i]
        perm[i] = i
        for j in range(n):
            B[i, j] = 0.0
    for j in range(n):
        q = -1
        best = 0.0
        for t in range(j, n):
            i = perm[t]
            if diag[i] > rtol * C[i, i] and diag[i] > best:
                best = diag[i]
                q = t
        if q < 0:
            for t in range(j, n):
                i = perm[t]
                if not (diag[i] >= -math.sqrt(rtol) * C[i, i]):
                    return STATUS_NOT_PSD
            return STATUS_OK
        piv = perm[q]
        perm[q] = perm[j]
        perm[j] = piv
        inv = 1.0 / math.sqrt(best)
        B[piv, j] = best * inv
        for t in range(j + 1, n):
            i = perm[t]
            if not (diag[i] > rtol * C[i, i]):  # frozen: determined by the pivots
                if not (diag[i] >= -math.sqrt(rtol) * C[i, i]):
                    return STATUS_NOT_PSD
                continue
            acc = C[i, piv]
            for k in range(j):
                acc -= B[i, k] * B[piv, k]
            lij = acc * inv
            B[i, j] = lij
            diag[i] -= lij * lij
    return STATUS_OK


@njit(cache=True)
def nearest_tree(X, c, w0, w1, ncols, order, parent):
    """Prim's minimum spanning tree of the rows of X, rooted at row 0, for the near-coincidence basis.

    Distance^2 of rows i, j: ``w0 sum_{col < ncols} (X_ic - X_jc)^2 + w1 (c_i - c_j)^2``.
    ``order`` receives the visiting order (order[0] = 0) and ``parent[order[t]]`` (t >= 1) an
    earlier row: every row but the root is represented by its difference from its nearest
    earlier neighbour, so nearly coincident rows are linked by an edge (any spanning tree is
    exact in law; a near one is what keeps small differences accurate).
    """
    n = X.shape[0]
    best = np.empty(n)
    inside = np.zeros(n, np.bool_)
    order[0] = 0
    parent[0] = -1
    inside[0] = True
    last = 0
    for i in range(1, n):
        best[i] = np.inf
        parent[i] = 0
    for t in range(1, n):
        q = -1
        bv = np.inf
        for i in range(n):
            if inside[i]:
                continue
            s = 0.0
            for col in range(ncols):
                e = X[i, col] - X[last, col]
                s += e * e
            e = c[i] - c[last]
            s = w0 * s + w1 * e * e
            if s < best[i]:  # NaN never wins: the row keeps its earlier parent
                best[i] = s
                parent[i] = last
            if q < 0 or best[i] < bv:
                bv = best[i]
                q = i
        inside[q] = True
        order[t] = q
        last = q
    return


@njit(cache=True)
def edge_rows(X, order, parent, E):
    """E[0] = X[order[0]], E[t] = X[order[t]] - X[parent[order[t]]]: the tree basis of the rows."""
    n, k = X.shape
    for col in range(k):
        E[0, col] = X[order[0], col]
    for t in range(1, n):
        i = order[t]
        pi = parent[i]
        for col in range(k):
            E[t, col] = X[i, col] - X[pi, col]


@njit(cache=True)
def accumulate_tree(D, order, parent, out):
    """out[order[0]] = D[0], out[order[t]] = out[parent] + D[t] (back from the tree basis)."""
    n, k = D.shape
    for col in range(k):
        out[order[0], col] = D[0, col]
    for t in range(1, n):
        i = order[t]
        pi = parent[i]
        for col in range(k):
            out[i, col] = out[pi, col] + D[t, col]


@njit(cache=True)
def mlp_preactivations(state, Y, bias, sw, sb, exact, Z, C, L, Xi, Wd, bm, rtol):
    """Pre-activations Z (n, m): Z[i, k] = sw <w_k, Y_i> + sb bias_i b_k, fresh weights.

    exact: draw Z through the n x n covariance sw^2 <Y_i, Y_j> + sb^2 bias_i bias_j in the
    near-coincidence basis (root row and tree differences, ``graded_cholesky``; C, L work
    arrays (n, n), Xi work (n, m)); otherwise draw the literal weights Wd (d, m) and bm (m,).
    """
    n = Y.shape[0]
    m = Z.shape[1]
    if exact:
        d = Y.shape[1]
        order = np.empty(n, np.int64)
        parent = np.empty(n, np.int64)
        nearest_tree(Y, bias, sw * sw, sb * sb, d, order, parent)
        E = np.empty((n, d))
        edge_rows(Y, order, parent, E)
        eb = np.empty(n)
        eb[0] = bias[order[0]]
        for t in range(1, n):
            eb[t] = bias[order[t]] - bias[parent[order[t]]]
        for i in range(n):
            for j in range(i + 1):
                s = 0.0
                for c in range(d):
                    s += E[i, c] * E[j, c]
                v = sw * sw * s + sb * sb * eb[i] * eb[j]
                C[i, j] = v
                C[j, i] = v
        status = graded_cholesky(C, L, rtol)
        if status != STATUS_OK:
            return status
        r = factor_rank(L)  # <= min(n, d + 1): rank x m normals, not n x m
        xi = Xi.reshape(n * m)[:r * m].reshape(r, m)
        fill_normal(state, xi)
        if r == n:
            D = np.dot(L, xi)
        elif r > 0:
            D = np.dot(np.ascontiguousarray(L[:, :r]), xi)
        else:
            D = np.zeros((n, m))
        accumulate_tree(D, order, parent, Z)
        return STATUS_OK
    fill_normal(state, Wd)
    fill_normal(state, bm)
    np.dot(Y, Wd, Z)
    for i in range(n):
        cb = sb * bias[i]
        for k in range(m):
            Z[i, k] = sw * Z[i, k] + cb * bm[k]
    return STATUS_OK


TREE_COLUMNS = 32  # hidden units used to pick the output tree (any tree is exact in law)


@njit(cache=True)
def output_factor(H, sa, C, L, rtol, order, parent, E):
    """Factor of the outputs' covariance (sa^2/m) <H_i, H_j> in the near-coincidence basis.

    Fills order/parent (tree over the hidden rows), E (n, m: the tree basis of the rows), C
    (its Gram matrix) and L with L L^T = C (``graded_cholesky``); the outputs are
    ``accumulate_tree(L @ xi)``.
    """
    n, m = H.shape
    zeros = np.zeros(n)
    nearest_tree(H, zeros, 1.0, 0.0, min(m, TREE_COLUMNS), order, parent)
    edge_rows(H, order, parent, E)
    np.dot(E, E.T, C)
    scale = sa * sa / m
    for i in range(n):
        for j in range(n):
            C[i, j] *= scale
    return graded_cholesky(C, L, rtol)


@njit(cache=True)
def mlp_outputs(state, H, sa, exact, out, C, L, Zd, Am, rtol):
    """Outputs out (n, d): out[i] = m^{-1/2} sum_k a_k H[i, k], a_k ~ N(0, sa^2 I_d) fresh.

    exact: through the n x n covariance (sa^2 / m) <H_i, H_j> in the near-coincidence basis
    (``output_factor``; C, L work (n, n), Zd (n, d), Am work (n, m) or any array, then one is
    allocated); otherwise the literal output weights Am (m, d).
    """
    n, m = H.shape
    if exact:
        order = np.empty(n, np.int64)
        parent = np.empty(n, np.int64)
        E = Am if Am.shape[0] == n and Am.shape[1] == m else np.empty((n, m))
        status = output_factor(H, sa, C, L, rtol, order, parent, E)
        if status != STATUS_OK:
            return status
        D = np.empty(out.shape)
        correlated_normals(state, L, Zd, D)
        accumulate_tree(D, order, parent, out)
        return STATUS_OK
    fill_normal(state, Am)
    np.dot(H, Am, out)
    f = sa / math.sqrt(m)
    for i in range(n):
        for c in range(out.shape[1]):
            out[i, c] *= f
    return STATUS_OK


# ---------------------------------------------------------------- the width coupling (issue 11.2)
@njit(cache=True)
def tree_field_cov(G, k0, order, parent, C):
    """C: covariance of the field in the tree basis, from the gap matrix G (G_ij = k0 - K_ij).

    Basis (``nearest_tree``'s order/parent): the root value G(y_r), then the edge differences
    G(y_a) - G(y_parent(a)).  Cov(G(a) - G(b), G(c) - G(e)) = g_ae + g_bc - g_ac - g_be, so an
    edge's variance is 2 g_ab exactly (no cancellation, whatever |a - b|);
    Cov(G(r), G(c) - G(e)) = g_re - g_rc; Var G(r) = k0.  (The covariance of two *different*
    short edges far apart is a mixed difference of O(1) gaps: absolute error ~ eps k0.)
    """
    n = G.shape[0]
    r = order[0]
    C[0, 0] = k0
    for t in range(1, n):
        c = order[t]
        e = parent[c]
        v = G[r, e] - G[r, c]
        C[0, t] = v
        C[t, 0] = v
    for s in range(1, n):
        a = order[s]
        b = parent[a]
        for t in range(1, s + 1):
            c = order[t]
            e = parent[c]
            v = (G[a, e] + G[b, c]) - (G[a, c] + G[b, e])
            C[s, t] = v
            C[t, s] = v


@njit(cache=True)
def graded_sqrt(C, A, rtol):
    """A with A A^T = C: A = D R^{1/2}, D = diag(C)^{1/2}, R = D^{-1} C D^{-1}; returns a status.

    R^{1/2} is the symmetric positive semi-definite square root of the correlation matrix
    (eigendecomposition); the diagonal scaling keeps every row (a token, or a 1e-12 difference of
    two tokens in the tree basis) at its own scale, so small differences are exact to relative
    rounding.  A is a continuous function of C that does not depend on any pivoting order: two
    nearby covariances (the width-m empirical kernel and K) get nearby roots, which is what the
    width coupling needs.  Policy: rows with C_ii = 0 get a zero row (coincident tokens: identical
    noise); correlations are clipped to [-1, 1] and negative eigenvalues of R (rounding) set to 0;
    a non-finite or negative diagonal, or an eigenvalue below ``-sqrt(rtol) * n``, is
    ``STATUS_NOT_PSD``.
    """
    n = C.shape[0]
    D = np.empty(n)
    idx = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        c = C[i, i]
        if not (c >= 0.0) or not np.isfinite(c):
            return STATUS_NOT_PSD
        D[i] = math.sqrt(c)
        for j in range(n):
            A[i, j] = 0.0
        if c > 0.0:
            idx[k] = i
            k += 1
    if k == 0:
        return STATUS_OK
    R = np.empty((k, k))
    for a in range(k):
        ia = idx[a]
        for b in range(a):
            ib = idx[b]
            v = (C[ia, ib] / D[ia]) / D[ib]
            if not np.isfinite(v):
                return STATUS_NOT_PSD
            v = min(1.0, max(-1.0, v))
            R[a, b] = v
            R[b, a] = v
        R[a, a] = 1.0
    w, V = np.linalg.eigh(R)
    if w[0] < -math.sqrt(rtol) * k:
        return STATUS_NOT_PSD
    for q in range(k):
        sw = math.sqrt(w[q]) if w[q] > 0.0 else 0.0
        for a in range(k):
            V[a, q] *= math.sqrt(sw)
    S = np.dot(V, V.T)
    for a in range(k):
        for b in range(k):
            A[idx[a], idx[b]] = D[idx[a]] * S[a, b]
    return STATUS_OK


def exact_in_law_choice(n: int, d: int, m: int, rng_cost: float = 40.0,
                        tree_cost: float = 4.0) -> tuple[bool, bool]:
    """Cost model choosing exact-in-law or literal weights per block (units: one BLAS
    multiply-add; one normal ~ rng_cost of them, one scalar operation ~ tree_cost).

    With r = min(n, d + 1) and s = min(n, m) the ranks of the two covariances:
    pre-activations exact r m rng + n r m + tree (n m + n^2 (d + 1) + n^3 / 3) + n^2 d vs
    literal (d + 1) m rng + n m d + n m; outputs exact n^2 m (the Gram matrix) + tree (n m +
    n^2 min(m, TREE_COLUMNS) + n^3 / 3) + s d (rng + n) vs literal m d (rng + n) + n d.  The
    scalar terms are the near-coincidence tree (Prim, n^2 columns) and the graded Cholesky
    (n^3 / 3, scalar loops).  The constants are fitted to timings (benchmarks/README.md, "auto
    mode"): exact against literal outputs at seven sizes, the faster picked at six of them.
    """
    r, q = min(n, d + 1), min(n, m)
    pre_exact = r * m * rng_cost + n * r * m + tree_cost * (n * m + n * n * (d + 1) + n ** 3 / 3) + n * n * d
    pre_literal = (d + 1) * m * rng_cost + n * m * d + n * m
    out_exact = n * n * m + tree_cost * (n * m + n * n * min(m, TREE_COLUMNS) + n ** 3 / 3) + q * d * (rng_cost + n)
    out_literal = m * d * (rng_cost + n) + n * d
    return bool(pre_exact < pre_literal), bool(out_exact < out_literal)
