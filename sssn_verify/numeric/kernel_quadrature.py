"""The numerical building blocks of the kernel tables (numeric.kernels, numeric.deep_kernel).

Composite Gauss-Legendre rules for E f(sZ) (1-D, split at the activation's kinks) and for the gap
(1/2) E[(phi(U) - phi(V))^2] (polar coordinates, split where U, V or phi change regime), the
Chebyshev fit in theta = arccos(rho) with its measured error, and the mpmath callables of a
derived closed form (through the bridge).  docs/numerics.md, section "Kernels".
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..activations import Activation

_HEADER = 4               # table layout: [k0, jump flag, n, k1, c_0 .. c_{n-1}]
_R_MAX = 10.0             # radial cut-off: P(R > 10) = e^{-50}
_Z_MAX = 10.0             # 1-D cut-off


def _cheb_nodes(n: int) -> np.ndarray:
    """First-kind Chebyshev nodes on [-1, 1] (no endpoints), increasing."""
    return np.cos(np.pi * (np.arange(n) + 0.5) / n)[::-1]


def _cheb_coefficients(values: np.ndarray) -> np.ndarray:
    """Coefficients of the interpolant through first-kind nodes (values at increasing nodes)."""
    from scipy.fft import dct
    n = values.size
    f = values[::-1]                     # at cos(pi (j + 1/2)/n), j = 0..n-1
    coef = dct(f, type=2) / n            # 2 sum_j f_j cos(pi k (j + 1/2)/n) / n
    coef[0] /= 2.0
    return coef


def _theta_to_u(theta):
    return 2.0 * np.sin(theta / 2.0) ** 2


def _adaptive_chebyshev(h_at, max_n: int, start_n: int = 33):
    """Chebyshev coefficients of h on theta in [0, pi], doubling n until the tail is negligible.

    Returns (coefficients, measured error): the error is the largest difference between the
    interpolant and h at the midpoints between nodes, times w(u) <= 2 (an abs error in K).
    """
    n = start_n
    while True:
        x = _cheb_nodes(n)
        vals = h_at((x + 1.0) * np.pi / 2.0)
        coef = _cheb_coefficients(vals)
        scale = max(np.max(np.abs(coef)), 1e-300)
        tail = np.max(np.abs(coef[-4:]))
        if tail < 1e-14 * scale or 2 * n - 1 > max_n:
            break
        n = 2 * n - 1
    # trim negligible trailing coefficients
    keep = np.nonzero(np.abs(coef) > 1e-17 * scale)[0]
    coef = coef[: keep[-1] + 1] if keep.size else coef[:1]
    # measured error at points between the nodes
    xm = np.cos(np.pi * np.arange(1, n) / n)[::-1][:: max(1, n // 16)]
    check = h_at((xm + 1.0) * np.pi / 2.0)
    approx = np.polynomial.chebyshev.chebval(xm, coef)
    err = 2.0 * float(np.max(np.abs(check - approx))) + float(np.sum(np.abs(coef[-2:])))
    return coef, err


@lru_cache(maxsize=None)
def _closed(name: str):
    """(k0(sw, sb), k1(sw, sb), K_mp(rho, sw, sb)) mpmath callables with sigma_a = 1, or None."""
    from ..bridge import function
    f_K = function("kernel.K", "mpmath", name)
    if f_K is None:
        return None
    f_k0, f_k1 = function("kernel.k0", "mpmath", name), function("kernel.k1", "mpmath", name)
    return (lambda sw, sb: f_k0(sw, sb, 1)), (lambda sw, sb: f_k1(sw, sb, 1)), (lambda r, sw, sb: f_K(r, sw, sb, 1))


# ----------------------------------------------------------------------------- quadrature
@lru_cache(maxsize=None)
def _gl(q: int):
    return np.polynomial.legendre.leggauss(q)


def _panels(edges: np.ndarray, q: int):
    """Gauss-Legendre nodes/weights on consecutive panels; edges (..., P+1) sorted."""
    x, w = _gl(q)
    a, b = edges[..., :-1], edges[..., 1:]
    half = (b - a) / 2.0
    nodes = (a + b)[..., None] / 2.0 + half[..., None] * x
    weights = half[..., None] * w
    return nodes, weights


def _kink_points(act: Activation) -> np.ndarray:
    return np.array([k for k in act.kinks if math.isfinite(k)], dtype=float)


def _gauss_1d(f, s: float, kinks: np.ndarray, q: int = 20, panels: int = 20):
    """E f(s Z) by composite Gauss-Legendre on [-Z_MAX, Z_MAX] split at kinks/s."""
    edges = np.linspace(-_Z_MAX, _Z_MAX, panels + 1)
    if s > 0 and kinks.size:
        edges = np.unique(np.concatenate([edges, np.clip(kinks / s, -_Z_MAX, _Z_MAX)]))
    z, w = _panels(edges, q)
    z, w = z.ravel(), w.ravel()
    dens = np.exp(-z * z / 2.0) / math.sqrt(2.0 * math.pi)
    return float(np.sum(w * dens * f(s * z)))


def _quad_k0(act: Activation, s: float):
    """(E phi(sZ)^2, error estimate)."""
    kinks = _kink_points(act)
    f = lambda x: act.numpy(x) ** 2
    fine = _gauss_1d(f, s, kinks, q=24, panels=48)
    coarse = _gauss_1d(f, s, kinks)
    return fine, abs(fine - coarse)


def _quad_k1(act: Activation, sw: float, sb: float):
    """(sigma_w^2 E phi'(sZ)^2, error estimate) with s^2 = sw^2 + sb^2 (Price)."""
    s = math.hypot(sw, sb)
    kinks = _kink_points(act)
    f = lambda x: act.numpy_derivative(x) ** 2
    fine = _gauss_1d(f, s, kinks, q=24, panels=48)
    coarse = _gauss_1d(f, s, kinks)
    return sw * sw * fine, sw * sw * abs(fine - coarse)


def _quad_gap(act: Activation, sw: float, sb: float, theta: float, q: int = 16,
              panels_t: int = 32, panels_r: int = 10) -> float:
    """(1/2) E[(phi(U) - phi(V))^2] with rho = cos(theta), by polar Gauss-Legendre."""
    S = sw * sw + sb * sb
    s = math.sqrt(S)
    u = _theta_to_u(theta)                 # 1 - rho
    one_minus_r = sw * sw * u / S
    alpha = 2.0 * math.asin(min(1.0, math.sqrt(one_minus_r / 2.0)))
    kinks = _kink_points(act)
    half = np.pi / 2
    t_edges = [np.linspace(-np.pi, np.pi, panels_t + 1),
               np.array([-half, half, alpha - half, alpha + half, alpha / 2, alpha / 2 - np.pi])]
    t_edges = np.concatenate(t_edges)
    t_edges = np.unique(np.clip(np.mod(t_edges + np.pi, 2 * np.pi) - np.pi, -np.pi, np.pi))
    t_edges = np.unique(np.concatenate([t_edges, [-np.pi, np.pi]]))
    T, WT = _panels(t_edges, q)
    T, WT = T.ravel(), WT.ravel()
    base = np.linspace(0.0, _R_MAX, panels_r + 1)
    cu, cv = np.cos(T), np.cos(T - alpha)
    extra = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in kinks:
            if k == 0.0:
                continue
            for cc in (cu, cv):
                rk = k / (s * cc)
                extra.append(np.where(np.isfinite(rk) & (rk > 0), np.clip(rk, 0.0, _R_MAX), 0.0))
    edges = np.broadcast_to(base, (T.size, base.size))
    if extra:
        edges = np.sort(np.concatenate([edges, np.stack(extra, axis=1)], axis=1), axis=1)
    R, WR = _panels(edges, q)                        # (Nt, P, q)
    Uv = s * R * cu[:, None, None]
    Vv = s * R * cv[:, None, None]
    diff = act.numpy(Uv) - act.numpy(Vv)
    dens = R * np.exp(-R * R / 2.0) / (2.0 * np.pi)
    inner = np.sum(WR * dens * diff * diff, axis=(1, 2))
    return 0.5 * float(np.sum(WT * inner))
