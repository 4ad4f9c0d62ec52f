"""Fast numeric kernels: K(rho) from the derived closed form (through ``sssn_verify.bridge``) or quadrature.

``kernel(activation, sigma_w, sigma_b, sigma_a)`` (or ``kernel(params)``) returns a cached
:class:`KernelFunction` for K(rho) = sigma_a^2 E[phi(U) phi(V)] (docs/mathematics.md, section 2):
``k0 = K(1)``, ``k1 = K'(1)`` (``inf`` when phi jumps), ``method`` ("closed form" or
"quadrature"), ``error_bound`` (measured), ``value(rho)``, the stable ``gap(u) = k0 - K(1 - u)``
and ``table``, read in O(1) inside numba by ``table_kernel``, ``table_gap``, ``table_kernel_matrix``.
The table is a Chebyshev interpolant in theta = arccos(rho) of (k0 - K(cos theta)) / w(u), so the
gap keeps its relative accuracy as u -> 0; its nodes come from the closed form at 40 digits or
from panelled Gauss-Legendre quadrature.  The construction and the error bound are in
docs/numerics.md, section "Kernels".
"""
from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..activations import Activation, get_activation
from ..errors import ParameterError
from ..limits import MAX_SIGMA
from ..params import check_real
from .kernel_quadrature import (_adaptive_chebyshev, _closed, _quad_gap, _quad_k0, _quad_k1,  # noqa: F401
                                _theta_to_u)

# table layout: [k0, jump flag, n, k1, c_0 .. c_{n-1}]
_HEADER = 4
_RHO_TOL = 1e-12          # |rho| <= 1 + _RHO_TOL is accepted and clipped
_MAX_TABLE_BYTES = 1 << 20   # a cached table holds at most a few thousand coefficients


# ----------------------------------------------------------------------------- evaluation
# The njit evaluators (table_kernel, table_gap, table_kernel_matrix) live in numeric/kernel_table.py
# and are imported on first use: numba costs about a second to import and load, and the
# Python-level callers here (rates, regime) evaluate the table with numpy instead.
_NUMBA_NAMES = ("table_kernel", "table_gap", "table_kernel_matrix")


def __getattr__(name):
    if name in _NUMBA_NAMES:
        from . import kernel_table
        return getattr(kernel_table, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _gap_array(table: np.ndarray, us: np.ndarray) -> np.ndarray:
    """k0 - K(1 - u) on an array of u in [0, 2] (numpy; the same formula as kernel_table.table_gap)."""
    us = np.minimum(us, 2.0)
    theta = 2.0 * np.arcsin(np.sqrt(0.5 * np.maximum(us, 0.0)))
    h = np.polynomial.chebyshev.chebval(2.0 * theta / np.pi - 1.0, table[_HEADER:_HEADER + int(table[2])])
    out = (np.sqrt(us) if table[1] != 0.0 else us) * h
    return np.where(us <= 0.0, 0.0, out)


def _kernel_array(table: np.ndarray, rhos: np.ndarray) -> np.ndarray:
    """K(rho) on an array of rho (clipped to [-1, 1])."""
    rhos = np.maximum(rhos, -1.0)
    return np.where(rhos >= 1.0, table[0], table[0] - _gap_array(table, 1.0 - rhos))


# ----------------------------------------------------------------------------- the object
@dataclass(frozen=True, eq=False)
class KernelFunction:
    """K(rho) for one activation and (sigma_w, sigma_b, sigma_a); see the module docstring."""

    activation: Activation
    sigma_w: float
    sigma_b: float
    sigma_a: float
    k0: float
    k1: float
    method: str
    error_bound: float
    table: np.ndarray = field(repr=False)
    hidden: tuple = ()           # the hidden layers after the first: ((Activation, sigma_w, sigma_b), ...)

    def value(self, rho):
        """K(rho), vectorised; rho must lie in [-1, 1]."""
        arr = _check_rho(rho)
        out = _kernel_array(self.table, arr)
        return float(out) if np.ndim(rho) == 0 else out

    __call__ = value

    def gap(self, u):
        """k0 - K(1 - u) for u = 1 - rho in [0, 2], stable (relative accuracy) as u -> 0."""
        arr = np.asarray(u, dtype=float)
        if np.any(~np.isfinite(arr)) or np.any(arr < -_RHO_TOL) or np.any(arr > 2 + _RHO_TOL):
            raise ParameterError("u", u, "must lie in [0, 2] (u = 1 - rho)")
        arr = np.clip(arr, 0.0, 2.0)
        out = _gap_array(self.table, arr)
        return float(out) if np.ndim(u) == 0 else out

    def matrix(self, gram):
        """K applied entrywise to a Gram matrix."""
        from .kernel_table import table_kernel_matrix
        return table_kernel_matrix(self.table, np.ascontiguousarray(gram, dtype=float))


def _check_rho(rho) -> np.ndarray:
    arr = np.asarray(rho, dtype=float)
    if np.any(~np.isfinite(arr)) or np.any(np.abs(arr) > 1 + _RHO_TOL):
        raise ParameterError("rho", rho, "must lie in [-1, 1]")
    return np.clip(arr, -1.0, 1.0)


def check_sigmas(sigma_w, sigma_b, sigma_a) -> tuple[float, float, float]:
    """Validated (sigma_w, sigma_b, sigma_a): finite, >= 0, not sigma_w = sigma_b = 0."""
    sw = check_real("sigma_w", sigma_w, 0.0, maximum=MAX_SIGMA)
    sb = check_real("sigma_b", sigma_b, 0.0, maximum=MAX_SIGMA)
    sa = check_real("sigma_a", sigma_a, 0.0, maximum=MAX_SIGMA)
    if sw == 0.0 and sb == 0.0:
        raise ParameterError("sigma_w", sigma_w,
                             "sigma_w and sigma_b cannot both be 0 (the pre-activation would vanish)")
    return sw, sb, sa


def kernel(activation="relu", sigma_w=1.0, sigma_b=0.0, sigma_a=1.0, *, hidden=(),
           force_quadrature: bool = False) -> KernelFunction:
    """The cached KernelFunction of `activation` at (sigma_w, sigma_b, sigma_a): K(rho) with
    ``k0`` = K(1), ``k1`` = K'(1), ``method`` ('closed form' or 'quadrature'), ``error_bound``.

    The arguments are ModelParams' fields, with its defaults; a ModelParams as the first
    argument stands for its activation, sigmas and hidden layers (the others then stay at their
    defaults).  `hidden` (ModelParams.hidden) makes it the deep block's kernel, composed layer by
    layer (:mod:`sssn_verify.numeric.deep_kernel`).
    """
    from ..params import ModelParams, check_hidden
    if isinstance(activation, ModelParams):
        if (sigma_w, sigma_b, sigma_a) != (1.0, 0.0, 1.0) or hidden:
            raise ParameterError("sigma_w", sigma_w, "cannot be given with a ModelParams (use params.with_(...))")
        p = activation
        if p.field != "mlp":
            raise ParameterError("field", p.field, "has no kernel K(rho) I (its covariance is a I + c y x^T: "
                                 "symbolic.general_field); this computation covers field='mlp' only")
        activation, sigma_w, sigma_b, sigma_a, hidden = p.activation, p.sigma_w, p.sigma_b, p.sigma_a, p.hidden
    act = get_activation(activation)
    sw, sb, sa = check_sigmas(sigma_w, sigma_b, sigma_a)
    hidden = check_hidden(hidden)
    if hidden:
        from .deep_kernel import Block, check_block, hidden_key
        check_block(act, hidden)
        hkey = hidden_key(hidden)
        if not _unit_table_path(act.name, sw, sb, bool(force_quadrature), hkey).exists():
            Block(act.name, sw, sb, hkey, True).check_moments()
        return _kernel_cached(act.name, sw, sb, sa, bool(force_quadrature), hkey)
    if not _unit_table_path(act.name, sw, sb, bool(force_quadrature)).exists():
        # infinite / beyond the quadrature window: say why (a cached table passed this when built)
        act.check_moments(math.hypot(sw, sb))
    return _kernel_cached(act.name, sw, sb, sa, bool(force_quadrature))


@lru_cache(maxsize=4096)
def _kernel_cached(name, sw, sb, sa, force_quadrature, hkey=()) -> KernelFunction:
    act = get_activation(name)
    base = _unit_table(name, sw, sb, force_quadrature, hkey)   # sigma_a = 1
    scale = sa * sa
    k1 = base["k1"] * scale if (scale > 0 or math.isfinite(base["k1"])) else 0.0
    table = base["table"].copy()
    table[0] *= scale
    table[3] = k1
    table[_HEADER:] *= scale
    table.setflags(write=False)
    hidden = tuple((get_activation(n), w, b) for n, w, b in hkey)
    return KernelFunction(act, sw, sb, sa, base["k0"] * scale, k1, base["method"],
                          base["error_bound"] * scale, table, hidden)


def has_closed_form(activation) -> bool:
    """True when `activation`'s kernel is a closed form (probed at sigma_w = 1, sigma_b = 0.5), False when
    it is built by quadrature: one table per (sigma_w, sigma_b), which the searches keep few."""
    return kernel(activation, 1.0, 0.5, 1.0).method == "closed form"


def kernel_constants(activation, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0, *, hidden=()) -> tuple[float, float]:
    """(k0, k1) as floats (k1 = inf for a jump)."""
    kf = kernel(activation, sigma_w, sigma_b, sigma_a, hidden=hidden)
    return kf.k0, kf.k1


@dataclass(frozen=True)
class KernelPoint:
    """k0 = K(1) and k1 = K'(1) (inf when phi jumps) of one activation and (sigma_w, sigma_b, sigma_a),
    each with its error bound; ``method`` as :class:`KernelFunction`'s."""

    k0: float
    k1: float
    k0_error: float
    k1_error: float
    method: str


def kernel_point(activation, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0) -> KernelPoint:
    """k0 and k1 without the Chebyshev table of K: the closed form or the two 1-D quadratures that
    the table's header holds (the same numbers as ``kernel(...).k0``, ``.k1``), each with its own
    error (the 1-D rule's difference to a coarser one, plus rounding; the table's bound adds the fit
    of K(rho) at rho < 1).  Milliseconds where a quadrature table costs about a second: for what
    needs no K(rho) at rho < 1 (``find 'lambda1 < 0'``).  The moments are checked as by :func:`kernel`."""
    act = get_activation(activation)
    sw, sb, sa = check_sigmas(sigma_w, sigma_b, sigma_a)
    act.check_moments(math.hypot(sw, sb))
    return _kernel_point(act.name, sw, sb, sa)


@lru_cache(maxsize=4096)
def _kernel_point(name: str, sw: float, sb: float, sa: float) -> KernelPoint:
    act = get_activation(name)
    closed = _closed(name)
    if sw == 0.0:                       # as _build_unit_table: K is constant
        k0 = _quad_k0(act, sb)[0]
        k1, e0, e1 = 0.0, 1e-15 * max(1.0, abs(k0)), 0.0
    else:
        k0, k1, e0, e1 = _unit_k0_k1(act, sw, sb, closed)
    e0 += 4e-16 * max(1.0, abs(k0))
    e1 += 4e-16 * max(1.0, abs(k1)) if math.isfinite(k1) else 0.0
    scale = sa * sa
    k1 = k1 * scale if (scale > 0 or math.isfinite(k1)) else 0.0
    return KernelPoint(k0 * scale, k1, e0 * scale, e1 * scale, "closed form" if closed is not None else "quadrature")


# ----------------------------------------------------------------------------- table building
@lru_cache(maxsize=1024)
def _unit_table(name: str, sw: float, sb: float, force_quadrature: bool, hkey: tuple = ()) -> dict:
    """The sigma_a = 1 table, read from the cache folder when an earlier process built it."""
    from ..outputs import read_cache_file, write_atomic
    path = _unit_table_path(name, sw, sb, force_quadrature, hkey)
    raw = read_cache_file(path, max_bytes=_MAX_TABLE_BYTES)    # a FIFO, a 1 GB or foreign file: rebuilt
    try:
        stored = None if raw is None else np.load(io.BytesIO(raw), allow_pickle=False)
        # finite everywhere but k1 (inf for a jump) and its copy in the table's header
        if (stored is not None and stored.ndim == 1 and stored.dtype == np.float64 and stored.size > 4 + _HEADER
                and np.all(np.isfinite(np.delete(stored, [1, 4 + 3])))):
            return dict(k0=float(stored[0]), k1=float(stored[1]), error_bound=float(stored[2]),
                        method="closed form" if stored[3] else "quadrature", table=stored[4:].copy())
    except (OSError, ValueError, EOFError):
        pass
    if hkey:
        from .deep_kernel import build_unit_table
        built = build_unit_table(name, sw, sb, hkey, force_quadrature)
    else:
        built = _build_unit_table(name, sw, sb, force_quadrature)
    head = [built["k0"], built["k1"], built["error_bound"], float(built["method"] == "closed form")]
    buf = io.BytesIO()
    np.save(buf, np.concatenate([np.array(head), built["table"]]), allow_pickle=False)
    write_atomic(path, buf.getvalue(), mode=0o600, what="cache")
    return built


def _unit_table_path(name: str, sw: float, sb: float, force_quadrature: bool, hkey: tuple = ()) -> Path:
    from ..bridge import cache_folder
    from ..outputs import private_folder
    deep = "".join(f"|{n}|{w!r}|{b!r}" for n, w, b in hkey)
    key = hashlib.sha256(f"{name}|{sw!r}|{sb!r}|{force_quadrature}|{_source_hash()}{deep}".encode()).hexdigest()[:24]
    return private_folder(cache_folder() / "kernel_tables") / f"{key}.npy"


@lru_cache(maxsize=1)
def _source_hash() -> str:
    """Tables depend on this module's code (and the deep blocks' composition) as well as on the
    derivations (bridge fingerprint)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    for name in ("deep_kernel.py", "kernel_quadrature.py"):
        h.update(Path(__file__).with_name(name).read_bytes())
    return h.hexdigest()[:16]


def _unit_k0_k1(act: Activation, sw: float, sb: float, closed) -> tuple[float, float, float, float]:
    """(k0, k1, their errors) at sigma_a = 1, sigma_w > 0: from the `closed` form (errors 0: rounding
    only) or else the 1-D quadratures (each error: the difference to a coarser rule); k1 = inf when
    phi jumps."""
    if closed is not None:
        return float(closed[0](sw, sb)), (math.inf if act.has_jump else float(closed[1](sw, sb))), 0.0, 0.0
    k0, k0_err = _quad_k0(act, math.hypot(sw, sb))
    k1, k1_err = (math.inf, 0.0) if act.has_jump else _quad_k1(act, sw, sb)
    return k0, k1, k0_err, k1_err


def _build_unit_table(name: str, sw: float, sb: float, force_quadrature: bool) -> dict:
    act = get_activation(name)
    jump = act.has_jump
    if sw == 0.0:   # rho does not enter: K is constant
        k0 = _quad_k0(act, sb)[0]
        table = np.zeros(_HEADER + 1)
        table[0], table[1], table[2], table[3] = k0, float(jump), 1, 0.0
        return dict(table=table, k0=k0, k1=0.0, method="closed form" if _closed(name) and not force_quadrature
                    else "quadrature", error_bound=1e-15 * max(1.0, abs(k0)))
    closed = None if force_quadrature else _closed(name)
    if closed is not None:
        import mpmath as mp
        k0_expr, k1_expr, K_mp = closed
        k0, k1, _, _ = _unit_k0_k1(act, sw, sb, closed)
        with mp.workdps(40):
            k0_mp = mp.mpf(k0_expr(mp.mpf(sw), mp.mpf(sb)))

            def h_at(thetas):
                out = np.empty(len(thetas))
                for i, th in enumerate(thetas):
                    th = mp.mpf(th)
                    u = 2 * mp.sin(th / 2) ** 2
                    g = k0_mp - K_mp(mp.cos(th), mp.mpf(sw), mp.mpf(sb))
                    out[i] = float(mp.re(g) / (mp.sqrt(u) if jump else u))
                return out
            coef, err = _adaptive_chebyshev(h_at, max_n=2049)
        method, quad_err = "closed form", 0.0
    else:
        k0, k1, k0_err, k1_err = _unit_k0_k1(act, sw, sb, None)

        def h_at(thetas):
            thetas = np.asarray(thetas, dtype=float)
            out = np.empty(thetas.size)
            for i, th in enumerate(thetas):
                g = _quad_gap(act, sw, sb, th)
                u = _theta_to_u(th)
                out[i] = g / (math.sqrt(u) if jump else u)
            return out
        coef, err = _adaptive_chebyshev(h_at, max_n=257, start_n=65)
        # error of the quadrature itself: the difference to a finer rule at a few points
        # (the 1-D errors are those of the coarser of two rules, hence conservative)
        quad_err = max(k0_err, k1_err if math.isfinite(k1_err) else 0.0)
        for th in (0.3, 1.7, 3.0):
            used = _quad_gap(act, sw, sb, th)
            finer = _quad_gap(act, sw, sb, th, q=20, panels_t=48, panels_r=15)
            quad_err = max(quad_err, abs(used - finer))
        method = "quadrature"
    table = np.empty(_HEADER + coef.size)
    table[0], table[1], table[2], table[3] = k0, float(jump), coef.size, k1
    table[_HEADER:] = coef
    bound = err + quad_err + 4e-16 * max(1.0, abs(k0))
    return dict(table=table, k0=k0, k1=k1, method=method, error_bound=float(bound))


def quadrature_value(activation, rho: float, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0, *, hidden=()) -> float:
    """K(rho) directly by the polar quadrature (no table): k0 - sigma_a^2 gap (for a deep block,
    the chain of quadratures of numeric.deep_kernel)."""
    from ..params import check_hidden
    act = get_activation(activation)
    sw, sb, sa = check_sigmas(sigma_w, sigma_b, sigma_a)
    rho = float(_check_rho(rho))
    hidden = check_hidden(hidden)
    if hidden:
        from .deep_kernel import check_block, hidden_key, quadrature_value as deep_value
        check_block(act, hidden)
        return deep_value(act.name, rho, sw, sb, sa, hidden_key(hidden))
    k0 = _quad_k0(act, math.hypot(sw, sb))[0]
    if sw == 0.0:
        return sa * sa * k0
    theta = 2.0 * math.asin(math.sqrt(max(0.0, (1.0 - rho) / 2.0)))
    return sa * sa * (k0 - _quad_gap(act, sw, sb, theta))


__all__ = ["KernelFunction", "KernelPoint", "kernel", "kernel_constants", "kernel_point", "check_sigmas", "table_kernel", "table_gap",
           "table_kernel_matrix", "quadrature_value"]
