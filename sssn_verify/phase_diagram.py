"""Phase diagram: sign regions of lambda_1 and lambda_bar(beta) over two parameters.

One drawing used by the ``phase-diagram`` CLI and the regime-explorer notebook.  Each grid
point is evaluated with ``numeric.rates`` (lambda_1 = ((d-3) k1 - (d-1) k0)/2 and the sup
lambda_bar(beta) of L2 f / f); four regions: both rates negative, only lambda_1 < 0, only
lambda_bar < 0, neither.  For ReLU with sigma_b on an axis the derived boundary
``sigma_b = sigma_w sqrt(2/(d-3))`` (edge value of lambda_bar = 0, ``symbolic.dissipation``)
is overlaid.  matplotlib is imported on use and no backend is selected here.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .errors import ParameterError
from .params import check_real

AXES = ("d", "sigma_w", "sigma_b", "sigma_a", "beta")
DEFAULT_RANGE = {"d": (2, 16), "sigma_w": (0.1, 2.0), "sigma_b": (0.0, 2.0), "sigma_a": (0.1, 2.0),
                 "beta": (0.0, 5.0)}
DEFAULT_BASE = dict(d=8, beta=0.0, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0)
DEFAULT_RESOLUTION = 25

REGION_COLORS = ("#f4cccc", "#cfe2f3", "#fff2cc", "#b6d7a8")
REGION_LABELS = ("lambda_1 >= 0, lambda_bar >= 0", "lambda_1 < 0 only", "lambda_bar < 0 only",
                 "lambda_1 < 0 and lambda_bar < 0")
BOTH_NEGATIVE = 3


def axis_values(name: str, range=None, resolution: int = DEFAULT_RESOLUTION) -> np.ndarray:
    """Grid of one axis: the integers d >= 2 in the range, else `resolution` points in [LO, HI] (LO >= 0)."""
    if name not in AXES:
        raise ParameterError("axis", name, f"one of {', '.join(AXES)}")
    lo, hi = range if range is not None else DEFAULT_RANGE[name]
    lo, hi = check_real(f"{name} range", lo), check_real(f"{name} range", hi)
    if hi <= lo:
        raise ParameterError(f"{name} range", (lo, hi), "must satisfy LO < HI")
    if name == "d":
        lo_i, hi_i = max(2, math.ceil(lo)), math.floor(hi)
        if hi_i < lo_i:
            raise ParameterError("d range", (lo, hi), "must contain an integer >= 2")
        return np.arange(lo_i, hi_i + 1)
    if lo < 0:
        raise ParameterError(f"{name} range", (lo, hi), "must be >= 0")
    return np.linspace(lo, hi, resolution)


def phase_grid(activation, x: str, y: str, xs, ys, base: dict):
    """(lambda_1, lambda_bar) arrays of shape (len(ys), len(xs)); `base` fixes the other parameters."""
    from .numeric.kernels import kernel
    from .numeric.rates import lambda1, lambda_bar_from_kernel
    lam1 = np.empty((len(ys), len(xs)))
    lbar = np.empty_like(lam1)
    for j, yv in enumerate(ys):
        for i, xv in enumerate(xs):
            p = dict(base)
            p[x], p[y] = xv, yv
            kf = kernel(activation, p["sigma_w"], p["sigma_b"], p["sigma_a"])
            lam1[j, i] = lambda1(int(p["d"]), kf.k0, kf.k1)
            lbar[j, i] = lambda_bar_from_kernel(kf, int(p["d"]), float(p["beta"]))[0]
    return lam1, lbar


def sign_regions(activation, x: str, y: str, xs, ys, base: dict) -> np.ndarray:
    """Region code per grid point: 1{lambda_1 < 0} + 2 * 1{lambda_bar < 0} (3 = both negative).

    Cached on (activation, axes, grids, the non-axis entries of `base`), so moving the point
    that is not an axis does not recompute the grid; the returned array is read-only.
    """
    from .activations import get_activation
    fixed = tuple(sorted((k, float(v)) for k, v in base.items() if k not in (x, y)))
    return _sign_regions_cached(get_activation(activation).name, x, y, tuple(float(v) for v in xs),
                                tuple(float(v) for v in ys), fixed)


@lru_cache(maxsize=32)
def _sign_regions_cached(name, x, y, xs, ys, fixed):
    base = dict(fixed, **{x: xs[0], y: ys[0]})
    lam1, lbar = phase_grid(name, x, y, np.array(xs), np.array(ys), base)
    code = (lam1 < 0).astype(int) + 2 * (lbar < 0).astype(int)
    code.setflags(write=False)
    return code


@lru_cache(maxsize=1)
def _relu_threshold():
    """t*(d) = sigma_b/sigma_w on the derived ReLU edge boundary (numpy callable of d)."""
    import sympy as sp

    from .symbolic.dissipation import relu_region
    from .symbolic.two_point import d as d_sym
    return sp.lambdify(d_sym, relu_region()[3], "numpy")


def _relu_boundary(ax, x, y, xs, ys, base):
    """Overlay sigma_b = sigma_w sqrt(2/(d-3)) (derived edge boundary) against the other axis."""
    other = y if x == "sigma_b" else x
    vals = xs if other == x else ys
    vals = np.linspace(float(np.min(vals)), float(np.max(vals)), 400)
    p = {k: np.full_like(vals, float(v)) for k, v in base.items()}
    p[other] = vals
    with np.errstate(divide="ignore", invalid="ignore"):
        sb = np.where(p["d"] > 3, p["sigma_w"] * _relu_threshold()(np.maximum(p["d"], 3.0)), np.nan)
    if np.all(np.isnan(sb)):
        return None
    label = "derived boundary sigma_b = sigma_w sqrt(2/(d-3)) (edge value of lambda_bar = 0)"
    line_x, line_y = (sb, vals) if x == "sigma_b" else (vals, sb)
    (line,) = ax.plot(line_x, line_y, "k--", lw=2, label=label)
    ax.set_xlim(np.min(xs), np.max(xs))
    ax.set_ylim(np.min(ys), np.max(ys))
    return line


def phase_diagram_figure(activation, x: str = "d", y: str = "sigma_b", xs=None, ys=None, base=None,
                         point=None, ax=None):
    """Sign regions of lambda_1 and lambda_bar(beta) over (x, y) as a matplotlib Figure.

    `xs`, `ys` default to ``axis_values(x)``, ``axis_values(y)``; `base` (d, beta, sigma_w,
    sigma_b, sigma_a; missing keys from ``DEFAULT_BASE``) fixes the parameters that are not
    axes.  `point` (a dict with keys x and y, optionally "label", or a pair (x, y)) is marked
    with a star.  Draws into `ax` when given, else into a new pyplot figure.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from .activations import get_activation
    from .params import check_int

    for name, axis in (("x", x), ("y", y)):
        if axis not in AXES:
            raise ParameterError(name, axis, f"one of {', '.join(AXES)}")
    if x == y:
        raise ParameterError("y", y, "must differ from x")
    act = get_activation(activation)
    base = dict(DEFAULT_BASE, **(base or {}))
    unknown = set(base) - set(AXES)
    if unknown:
        raise ParameterError("base", sorted(unknown), f"keys among {', '.join(AXES)}")
    base["d"] = check_int("d", base["d"], 2)
    for k in ("beta", "sigma_w", "sigma_b", "sigma_a"):
        base[k] = check_real(k, base[k], 0.0)
    xs = axis_values(x) if xs is None else np.asarray(xs)
    ys = axis_values(y) if ys is None else np.asarray(ys)
    code = sign_regions(act, x, y, xs, ys, base)

    if ax is None:
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 5))
        own = True
    else:
        fig, own = ax.figure, False
    ax.pcolormesh(xs, ys, code, cmap=ListedColormap(REGION_COLORS), vmin=-0.5, vmax=3.5, shading="nearest")
    handles = [Patch(color=c, label=lab) for c, lab in zip(REGION_COLORS, REGION_LABELS)]
    if act.name == "relu" and "sigma_b" in (x, y):
        line = _relu_boundary(ax, x, y, xs, ys, base)
        if line is not None:
            handles.append(line)
    if point is not None:
        px, py = (point[x], point[y]) if isinstance(point, dict) else point
        label = point.get("label") if isinstance(point, dict) else None
        (pt,) = ax.plot([px], [py], marker="*", ms=16, color="k", mec="w", ls="none",
                        label=label or f"current point ({x}={px:g}, {y}={py:g})")
        handles.append(pt)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fixed = ", ".join(f"{k}={v:g}" for k, v in base.items() if k not in (x, y))
    ax.set_title(f"{act.name}: sign regions of lambda_1 and lambda_bar ({fixed})", fontsize=9)
    ax.legend(handles=handles, loc="upper left", fontsize=7, framealpha=0.9)
    if own:
        fig.tight_layout()
    return fig


__all__ = ["AXES", "DEFAULT_RANGE", "DEFAULT_BASE", "REGION_COLORS", "REGION_LABELS", "BOTH_NEGATIVE",
           "axis_values", "phase_grid", "sign_regions", "phase_diagram_figure"]
