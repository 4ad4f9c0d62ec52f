"""Fast numerics for the synchronization rates (SPEC section 5).

Everything here is a lambdified sympy result of ``symbolic/two_point``, ``lyapunov`` and
``dissipation``, fed with K from the one kernel bridge ``numeric.kernels``:

* ``lambda1(d, k0, k1) = ((d-3) k1 - (d-1) k0)/2`` (k1 = inf: +inf for d > 3, -inf for
  d = 2, nan (undetermined) for d = 3);
* ``lambda_bar(activation, d, sw, sb, sa, beta) -> (value, argmax_rho)``:
  ``sup_{rho in [-1,1)} L2 f / f``, evaluated in the stable form
  ``L2 f/f = -e^{-beta u} (N/u)(u, q) / h(u)``, ``u = 1 - rho``, ``q = gap(u)/u``,
  ``h(u) = -expm1(-beta u)/(beta u)`` (1 at beta = 0), so there is no cancellation near
  rho = 1; the edge limit (u -> 0) is ``-(N/u)(0, k1) = (d-1) k1 - (d-3) k0``.  The sup is
  taken over a dense grid (geometric in u near the edge, uniform elsewhere, rho = -1
  included) plus the edge limit, then refined by bounded scalar optimisation around the
  best grid point.  When the edge limit is the sup, ``argmax_rho = 1.0`` (a limit, not
  attained).  For very large beta (beyond ~700) the interior values underflow: lambda_bar is
  then reported as -0.0 (negative, but below double precision) and its argmax is arbitrary;
* ``near_sync_rate(d, k0, k1, V) = lambda_edge - 2 lambda_min((V+V^T)/2)``: a lower bound
  on any uniform decay rate (the rate near synchronization in the worst direction);
* ``c_att(beta, Q, K, V)``: 0 for energy-lowering attention (V = 0; V = v I, v >= 0 with
  Q^T K = I or beta = 0), else ``2 ||V||_2 (1 + beta ||K^T Q||_2)``.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy.optimize import minimize_scalar

from ..params import check_int, check_matrix, check_real
from .kernels import kernel

_EDGE_GRID = np.geomspace(1e-9, 1e-2, 241)
_BULK_GRID = np.linspace(1e-2, 2.0, 2400)
GRID_U = np.concatenate([_EDGE_GRID[:-1], _BULK_GRID])


@lru_cache(maxsize=None)
def _lambda1_fn():
    from ..symbolic.lyapunov import lambda1_tangent
    from ..symbolic.two_point import d, k0, k1
    return sp.lambdify((d, k0, k1), lambda1_tangent(), "numpy")


@lru_cache(maxsize=None)
def _edge_fn():
    from ..symbolic.dissipation import edge_rate
    from ..symbolic.two_point import d, k0, k1
    return sp.lambdify((d, k0, k1), edge_rate(), "numpy")


@lru_cache(maxsize=None)
def _numerator_fn():
    from ..symbolic.dissipation import beta, q, stable_numerator
    from ..symbolic.two_point import d, k0, u
    return sp.lambdify((u, q, d, k0, beta), stable_numerator(), "numpy")


@lru_cache(maxsize=None)
def _c_att_fn():
    from ..symbolic.dissipation import attention_constant
    (nV, nKQ, b_), _, C = attention_constant()
    return sp.lambdify((b_, nV, nKQ), C, "math")


@lru_cache(maxsize=None)
def _near_sync_fn():
    from ..symbolic.dissipation import near_sync_attention_rate
    expr = near_sync_attention_rate()
    (v11,) = [s for s in expr.free_symbols if s.name == "v11"]
    return sp.lambdify((v11,), expr, "math")


def near_sync_rate(d: int, k0: float, k1: float, V) -> float:
    """max over directions x of lambda_edge - 2 <V x, x> = lambda_edge - 2 lambda_min((V + V^T)/2).

    The expected energy of configurations in a small cap around x changes at rate
    lambda_edge - 2 <V x, x> (symbolic/dissipation.near_sync_attention_rate), so no uniform
    decay rate can be smaller than this value.
    """
    V = np.atleast_2d(np.asarray(V, dtype=float))
    lam_min = float(np.linalg.eigvalsh((V + V.T) / 2).min())
    return lambda_edge(d, k0, k1) + float(_near_sync_fn()(lam_min))


def lambda1(d: int, k0: float, k1: float) -> float:
    """Top Lyapunov exponent ((d-3) k1 - (d-1) k0)/2 (lambdified from the derivation)."""
    d = check_int("d", d, 2)
    k0 = check_real("k0", k0, 0.0)
    k1 = float(k1)
    if math.isnan(k1):
        raise ValueError("k1 is nan")
    if math.isinf(k1):
        return math.nan if d == 3 else math.copysign(math.inf, d - 3)
    return float(_lambda1_fn()(d, k0, k1))


def lambda_edge(d: int, k0: float, k1: float) -> float:
    """lim_{rho -> 1} L2 f / f = (d-1) k1 - (d-3) k0 (every beta)."""
    d = check_int("d", d, 2)
    if math.isinf(k1):
        return math.inf
    return float(_edge_fn()(d, k0, k1))


def ratio(kf, d: int, beta: float, us: np.ndarray) -> np.ndarray:
    """L2 f / f at rho = 1 - u for u in (0, 2], stable near u = 0 (kf: a numeric kernel)."""
    us = np.asarray(us, dtype=float)
    qs = kf.gap(us) / us
    num = _numerator_fn()(us, qs, d, kf.k0, beta)
    if beta > 0:
        h = -np.expm1(-beta * us) / (beta * us)
        return -np.exp(-beta * us) * num / h
    return -np.asarray(num, dtype=float) * np.ones_like(us)


def lambda_bar(activation, d: int, sigma_w: float, sigma_b: float, sigma_a: float,
               beta: float = 0.0) -> tuple[float, float]:
    """(sup_{rho in [-1,1)} L2 f / f, argmax rho); argmax 1.0 means the rho -> 1 limit."""
    d = check_int("d", d, 2)
    beta = check_real("beta", beta, 0.0)
    kf = kernel(activation, sigma_w, sigma_b, sigma_a)
    return lambda_bar_from_kernel(kf, d, beta)


def lambda_bar_from_kernel(kf, d: int, beta: float) -> tuple[float, float]:
    """lambda_bar for an already built kernel object (k0, k1, gap)."""
    if kf.k0 == 0.0:            # sigma_a = 0: no noise, L2 f = 0
        return 0.0, 1.0
    edge = lambda_edge(d, kf.k0, kf.k1)
    if math.isinf(edge):
        return math.inf, 1.0
    vals = ratio(kf, d, beta, GRID_U)
    i = int(np.argmax(vals))
    if edge >= vals[i]:
        return float(edge), 1.0
    lo = GRID_U[i - 1] if i > 0 else 0.5 * GRID_U[0]
    hi = GRID_U[i + 1] if i + 1 < GRID_U.size else GRID_U[i]
    best_u, best = GRID_U[i], float(vals[i])
    if hi > lo:
        res = minimize_scalar(lambda x: -float(ratio(kf, d, beta, np.array([x]))[0]),
                              bounds=(lo, hi), method="bounded", options={"xatol": 1e-13 + 1e-10 * lo})
        if res.success and -res.fun > best:
            best_u, best = float(res.x), float(-res.fun)
    return best, float(1.0 - best_u)


def energy_lowering(beta: float, Q, K, V, *, atol: float = 1e-12) -> bool:
    """True when attention can only lower E_beta (C_att = 0, see symbolic/dissipation)."""
    Q, K, V = (np.asarray(m, dtype=float) for m in (Q, K, V))
    if not np.any(V):
        return True
    d = V.shape[0]
    v = V[0, 0]
    scalar_v = v >= 0 and np.allclose(V, v * np.eye(d), rtol=0, atol=atol)
    return bool(scalar_v and (beta == 0 or np.allclose(Q.T @ K, np.eye(d), rtol=0, atol=atol)))


def c_att_general(beta: float, Q, K, V) -> float:
    """2 ||V||_2 (1 + beta ||K^T Q||_2): bounds |d(1-rho_ij)/dt| / (1-rho_ij) for any Q, K, V."""
    Q, K, V = (np.asarray(m, dtype=float) for m in (Q, K, V))
    return float(_c_att_fn()(beta, np.linalg.norm(V, 2), np.linalg.norm(K.T @ Q, 2)))


def c_att(beta: float, Q, K, V) -> float:
    """C_att(beta, Q, K, V) >= 0 with d/dt E_beta|_att <= C_att E_beta (0 if energy-lowering)."""
    beta = check_real("beta", beta, 0.0)
    V = np.asarray(V, dtype=float)
    d = V.shape[0] if V.ndim == 2 else 1
    Q, K, V = (check_matrix(n, m, d) for n, m in (("Q", Q), ("K", K), ("V", V)))
    if energy_lowering(beta, Q, K, V):
        return 0.0
    return c_att_general(beta, Q, K, V)


__all__ = ["lambda1", "lambda_edge", "near_sync_rate", "lambda_bar", "lambda_bar_from_kernel", "ratio", "c_att",
           "c_att_general", "energy_lowering", "GRID_U"]
