"""Fast numerics for the synchronization rates (docs/mathematics.md, section 5), on plain numbers.

Everything here is a sympy result of ``symbolic/two_point``, ``lyapunov`` and ``dissipation``,
evaluated through the one bridge (``sssn_verify.bridge``) and fed with K from ``numeric.kernels``:
``lambda1(d, k0, k1)``, ``lambda_bar(activation, d, sw, sb, sa, beta, hidden=()) -> (value, argmax_rho)``
(the sup of L2 f / f: the larger of the edge limit and the value at rho = -1, derived for
positive-definite kernels, every kernel the toolkit builds; ``rqf_lambda_bar_rows`` the same for the rqf
field, symbolic/general_field), ``near_sync_rate`` (a lower bound on any uniform
decay rate), ``c_att`` / ``c_att_general`` for one or H heads.  The public, model-level
functions (``sv.lambda1(params)``, ...) are in ``sssn_verify.regime``.  The stable forms, the
grids and the limits: docs/numerics.md, section "Rates".
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..params import check_int, check_real
from .kernels import kernel

_EDGE_GRID = np.geomspace(1e-9, 1e-2, 241)
_BULK_GRID = np.linspace(1e-2, 2.0, 2400)
GRID_U = np.concatenate([_EDGE_GRID[:-1], _BULK_GRID])
_REFINE_POINTS = 33


def _fn(name: str, flavor: str = "numpy"):
    """A derived expression as a fast callable (the one bridge, cached across processes)."""
    from ..bridge import function
    return function(name, flavor)


def near_sync_rate(d: int, k0: float, k1: float, V) -> float:
    """max over directions x of lambda_edge - 2 <V x, x> = lambda_edge - 2 lambda_min((V + V^T)/2)
    (V of shape (H, d, d): V is replaced by sum_h V_h).

    The expected energy of configurations in a small cap around x changes at rate
    lambda_edge - 2 <V x, x> (symbolic/dissipation.near_sync_attention_rate), so no uniform
    decay rate can be smaller than this value.
    """
    return near_sync_rate_from_edge(lambda_edge(d, k0, k1), V)


def near_sync_rate_from_edge(edge: float, V) -> float:
    """edge - 2 lambda_min((V + V^T)/2) for any field whose noise-only energy rate near synchronization is
    `edge` (the MLP fields' lambda_edge, the rqf field's ``rqf_lambda_bar_rows`` edge): attention's rate there
    is field-free (symbolic/dissipation.near_sync_attention_rate)."""
    V = np.asarray(V, dtype=float)
    V = np.atleast_2d(V.sum(axis=0) if V.ndim == 3 else V)      # H heads: V -> sum_h V_h (derived)
    lam_min = float(np.linalg.eigvalsh((V + V.T) / 2).min())
    return float(edge) + float(_fn("attention_bound.near_sync_rate", "math")(lam_min))


def lambda1(d: int, k0: float, k1: float) -> float:
    """Top Lyapunov exponent ((d-3) k1 - (d-1) k0)/2 (lambdified from the derivation)."""
    d = check_int("d", d, 2)
    k0 = check_real("k0", k0, 0.0)
    k1 = float(k1)
    if math.isnan(k1):
        raise ValueError("k1 is nan")
    return float(lambda1_rows([d], [k0], [k1])[0])


def lambda1_rows(d, k0, k1) -> np.ndarray:
    """lambda_1 on arrays (validated by the caller); k1 = inf: +inf for d > 3, -inf for d = 2, nan at d = 3."""
    d, k0, k1 = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (d, k0, k1)))
    jump = np.isinf(k1)
    with np.errstate(invalid="ignore"):
        finite = np.asarray(_fn("lyapunov.lambda1")(d, k0, np.where(jump, 0.0, k1)), dtype=float)
    return np.where(jump, np.where(d == 3, math.nan, np.copysign(math.inf, d - 3)), finite)


def lambda_edge(d: int, k0: float, k1: float) -> float:
    """lim_{rho -> 1} L2 f / f = (d-1) k1 - (d-3) k0 (every beta)."""
    d = check_int("d", d, 2)
    if math.isinf(k1):
        return math.inf
    return float(_fn("dissipation.edge_rate")(d, k0, k1))


def ratio(kf, d, beta, us: np.ndarray) -> np.ndarray:
    """L2 f / f at rho = 1 - u for u in (0, 2], stable near u = 0 (kf: a numeric kernel).

    d and beta broadcast against us (e.g. a column (n, 1) of rows against a grid (1, G))."""
    us = np.asarray(us, dtype=float)
    qs = kf.gap(us) / us
    num = _fn("dissipation.stable_numerator")(us, qs, d, kf.k0, beta)
    # h(x) = -expm1(-x)/x with h(0) = 1: beta = 0, or a subnormal beta making x = beta u exactly 0 (not 0/0)
    x = np.asarray(beta, dtype=float) * us
    h = np.where(x > 0, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0)
    return -np.exp(-x) * num / h


def lambda_bar(activation, d: int, sigma_w: float, sigma_b: float, sigma_a: float,
               beta: float = 1.0, hidden=()) -> tuple[float, float]:
    """(sup_{rho in [-1,1)} L2 f / f, argmax rho); argmax 1.0 means the rho -> 1 limit.

    `hidden` (``ModelParams.hidden``: the hidden layers after the first; () the one-layer block) makes it
    the deep block's lambda_bar, from its composed kernel (``kernels.kernel(..., hidden=)``, the kernel
    ``regime`` uses): the same function of K as for one layer."""
    d = check_int("d", d, 2)
    beta = check_real("beta", beta, 0.0)
    kf = kernel(activation, sigma_w, sigma_b, sigma_a, hidden=hidden)
    return lambda_bar_from_kernel(kf, d, beta)


def lambda_bar_from_kernel(kf, d: int, beta: float) -> tuple[float, float]:
    """lambda_bar for an already built kernel object (k0, k1, gap)."""
    value, argmax = lambda_bar_rows(kf, [d], [beta])
    return float(value[0]), float(argmax[0])


def lambda_bar_rows(kf, d, beta) -> tuple[np.ndarray, np.ndarray]:
    """lambda_bar and its argmax rho for one kernel and many (d, beta) rows at once (1-D arrays of one
    length): the larger of the edge value and the value at rho = -1, argmax 1.0 (the edge limit) or -1.0.

    For a positive-definite kernel, K(rho) = sum a_n rho^n with a_n >= 0 (every kernel the toolkit
    builds: MLP blocks with Gaussian weights, deep blocks, any activation or expression), the supremum of
    L2 f / f over [-1, 1) sits at rho -> 1 or at rho = -1 and never inside (symbolic/dissipation,
    ``endpoint_certificate``): no search over rho is needed, and none is made, so the near-edge values,
    where a kernel's gap loses digits, never enter.  The value at rho = -1 is the derived stable ratio at
    u = 2."""
    d = np.asarray(d, dtype=float).ravel()
    beta = np.broadcast_to(np.asarray(beta, dtype=float).ravel(), d.shape)
    n = d.size
    if kf.k0 == 0.0:            # sigma_a = 0: no noise, L2 f = 0
        return np.zeros(n), np.ones(n)
    if math.isinf(kf.k1):
        return np.full(n, math.inf), np.ones(n)
    edge = np.asarray(_fn("dissipation.edge_rate")(d, kf.k0, kf.k1), dtype=float) * np.ones(n)
    anti = np.asarray(ratio(kf, d, beta, np.full(n, 2.0)), dtype=float) * np.ones(n)
    at_edge = edge >= anti
    return np.where(at_edge, edge, anti), np.where(at_edge, 1.0, -1.0)


def rqf_lambda_bar_rows(sigma_q, beta) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rqf field's lambda_bar(beta), its argmax rho and its edge value on arrays (sigma_q > 0 and beta >= 0,
    validated by the caller, broadcast together): the larger of the edge value and the value at rho = -1, as
    ``lambda_bar_rows``.  The supremum sits there for every covariance tensor whose chord defect, T and R0(-1)
    have the right signs, which symbolic/general_field (``rqf_energy_rate``) proves for rqf: no search over rho.
    Both values are derived (edge 2 sigma_q^2 > 0 = the antipodal value, so argmax 1.0, the rho -> 1 limit)."""
    S, beta = np.broadcast_arrays(np.asarray(sigma_q, dtype=float), np.asarray(beta, dtype=float))
    edge = np.asarray(_fn("general_field.rqf_lambda_bar_edge")(S), dtype=float) * np.ones(S.shape)
    anti = np.asarray(_fn("general_field.rqf_lambda_bar_anti")(beta, S), dtype=float) * np.ones(S.shape)
    at_edge = edge >= anti
    return np.where(at_edge, edge, anti), np.where(at_edge, 1.0, -1.0), edge


def heads(Q, K, V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V as (H, d, d) float arrays, by the rule of ``ModelParams``: a scalar s is s I, a
    (d, d) matrix is shared by every head, all (H, d, d) stacks have the same H."""
    arrays = [np.asarray(m, dtype=float) for m in (Q, K, V)]
    shape = next((a.shape for a in arrays if a.ndim >= 2), (1, 1))
    d = shape[-1]
    stacks = {a.shape[0] for a in arrays if a.ndim == 3}
    H = max(stacks, default=1)
    out = []
    for name, a in zip("QKV", arrays):
        if a.ndim == 0:
            a = float(a) * np.eye(d)
        if a.ndim == 2 and a.shape == (d, d):
            a = np.broadcast_to(a, (H, d, d))
        if a.ndim != 3 or a.shape[1:] != (d, d) or len(stacks) > 1:
            raise ParameterError(name, f"shape {a.shape}", f"must be ({d}, {d}) or (H, {d}, {d}) with one H "
                                 "for every stack")
        if not np.all(np.isfinite(a)):
            raise ParameterError(name, "<array with non-finite entries>", "entries must be finite")
        out.append(a)
    return out[0], out[1], out[2]


def energy_lowering(beta: float, Q, K, V, *, atol: float = 1e-12) -> bool:
    """True when attention can only lower E_beta (C_att = 0, see symbolic/dissipation): every head
    has V_h = 0, or V_h = v_h I with v_h >= 0 and (Q_h^T K_h = I or beta = 0)."""
    Q, K, V = heads(Q, K, V)
    eye = np.eye(V.shape[-1])
    for Qh, Kh, Vh in zip(Q, K, V):
        if not np.any(Vh):
            continue
        v = Vh[0, 0]
        if not (v >= 0 and np.allclose(Vh, v * eye, rtol=0, atol=atol)):
            return False
        if beta != 0 and not np.allclose(Qh.T @ Kh, eye, rtol=0, atol=atol):
            return False
    return True


def c_att_general(beta: float, Q, K, V) -> float:
    """Bound on |d(1-rho_ij)/dt| / (1-rho_ij) for any heads: 2 ||V||_2 (1 + beta ||K^T Q||_2) for one,
    2 (S_V + beta S_VKQ) with S_V = sum_h ||V_h||, S_VKQ = sum_h ||V_h|| ||K_h^T Q_h|| for H heads."""
    Q, K, V = heads(Q, K, V)
    nV = [float(np.linalg.norm(Vh, 2)) for Vh in V]
    nKQ = [float(np.linalg.norm(Kh.T @ Qh, 2)) for Qh, Kh in zip(Q, K)]
    if len(nV) == 1:
        return float(_fn("attention_bound.c_att", "math")(beta, nV[0], nKQ[0]))
    return float(_fn("attention_bound.c_att_heads", "math")(
        beta, math.fsum(nV), math.fsum(a * b for a, b in zip(nV, nKQ))))


def c_att(beta: float, Q, K, V) -> float:
    """C_att(beta, Q, K, V) >= 0 with d/dt E_beta|_att <= C_att E_beta (0 if energy-lowering).

    Q, K, V: (d, d) matrices (one head) or (H, d, d) arrays (H heads).
    """
    beta = check_real("beta", beta, 0.0)
    if energy_lowering(beta, Q, K, V):
        return 0.0
    return c_att_general(beta, Q, K, V)


# ----------------------------------------------------------------------------- projective (odd fields)
PROJ_GRID_U = GRID_U[GRID_U <= 1.0]          # rho = 1 - u in [0, 1): the rate is even in rho for odd fields


def ratio_proj(kf, d, us: np.ndarray) -> np.ndarray:
    """L f / f for the projective energy f = 1 - rho^2 at rho = 1 - u, u in (0, 1], stable near u = 0:
    ``-(B_r/u)/(2 - u)`` (symbolic/projective.stable_numerator).  Meaningful for odd fields only."""
    us = np.asarray(us, dtype=float)
    qs = kf.gap(us) / us
    return -np.asarray(_fn("projective.stable_numerator")(us, qs, d, kf.k0), dtype=float) / (2.0 - us)


def lambda_edge_proj(d: int, k0: float, k1: float) -> float:
    """lim_{rho -> 1} of the projective L f / f: (d-1) k1 - (d-3) k0 (derived; the edge value of 1 - rho)."""
    d = check_int("d", d, 2)
    if math.isinf(k1):
        return math.inf
    return float(_fn("projective.edge_rate")(d, k0, k1))


def lambda_proj(d: int, k0: float, k1: float) -> float:
    """The projective Lyapunov exponent (symbolic/projective.projective_lyapunov)."""
    d = check_int("d", d, 2)
    if math.isinf(k1):
        return float(lambda1_rows([d], [k0], [k1])[0])
    return float(_fn("projective.lambda_proj")(d, k0, k1))


def lambda_bar_proj_from_kernel(kf, d: int) -> tuple[float, float]:
    """(sup_{rho in [0, 1)} L f / f for f = 1 - rho^2, argmax rho; 1.0 = the rho -> 1 limit) for an odd
    field's kernel: the grid PROJ_GRID_U, the edge limit, nested refinement around the best grid point (33
    points, the bracket shrinking 16x per pass down to 1e-13 + 1e-10 u)."""
    d = check_int("d", d, 2)
    if kf.k0 == 0.0:
        return 0.0, 1.0
    if math.isinf(kf.k1):
        return math.inf, 1.0
    edge = lambda_edge_proj(d, kf.k0, kf.k1)
    vals = ratio_proj(kf, d, PROJ_GRID_U)
    i = int(np.argmax(vals))
    best, best_u = float(vals[i]), float(PROJ_GRID_U[i])
    if edge >= best:
        return edge, 1.0
    lo = PROJ_GRID_U[i - 1] if i > 0 else 0.5 * PROJ_GRID_U[0]
    hi = PROJ_GRID_U[i + 1] if i + 1 < PROJ_GRID_U.size else PROJ_GRID_U[i]
    while hi - lo > 1e-13 + 1e-10 * lo:
        us = np.linspace(lo, hi, _REFINE_POINTS)
        v = ratio_proj(kf, d, us)
        j = int(np.argmax(v))
        if v[j] > best:
            best, best_u = float(v[j]), float(us[j])
        step = (hi - lo) / (_REFINE_POINTS - 1)
        lo, hi = max(lo, us[j] - step), min(hi, us[j] + step)
    return best, 1.0 - best_u


__all__ = ["lambda1", "lambda1_rows", "lambda_edge", "near_sync_rate", "near_sync_rate_from_edge",
           "rqf_lambda_bar_rows", "lambda_bar", "lambda_bar_from_kernel", "lambda_bar_rows", "ratio", "c_att",
           "c_att_general", "energy_lowering", "heads", "GRID_U", "ratio_proj", "lambda_edge_proj", "lambda_proj",
           "lambda_bar_proj_from_kernel", "PROJ_GRID_U"]
