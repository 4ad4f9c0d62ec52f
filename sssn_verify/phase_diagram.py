"""Phase diagram: sign regions of lambda_1 and lambda_bar(beta) over two parameters.

One drawing used by the ``phase-diagram`` CLI and the regime-explorer notebook.  Each grid
point is evaluated with ``numeric.rates`` (lambda_1 = ((d-3) k1 - (d-1) k0)/2 and the sup
lambda_bar(beta) of L2 f / f); four regions: both rates negative, only lambda_1 < 0, only
lambda_bar < 0, neither.  For ReLU with sigma_b on an axis the derived boundary
``sigma_b = sigma_w sqrt(2/(d-3))`` (edge value of lambda_bar = 0, ``symbolic.dissipation``)
is overlaid.  matplotlib is imported on use and no backend is selected here.

More (moved from this docstring): docs/modules.md, ``sssn_verify.phase_diagram``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .errors import ParameterError
from .escape import plot_text
from .limits import MAX_D, MAX_GRID, check_at_most
from .params import MODEL_DEFAULTS, ModelParams, check_int, check_real, takes_model

AXES = ("d", "sigma_w", "sigma_b", "sigma_a", "beta", "sigma_q")
#: the axes of each field: the rqf rates (symbolic.general_field) involve sigma_q only (d is kept as an axis:
#: they are free of it, which the diagram shows); beta is no rqf axis but a fixed value (beta=, --beta): it
#: enters only lambda_bar(beta), derived free of beta for rqf (2 sigma_q^2, scan's rqf rows)
FIELD_AXES = {"mlp": ("d", "sigma_w", "sigma_b", "sigma_a", "beta"), "rqf": ("d", "sigma_q")}
DEFAULT_RANGE = {"d": (2, 16), "sigma_w": (0.1, 2.0), "sigma_b": (0.0, 2.0), "sigma_a": (0.1, 2.0),
                 "beta": (0.0, 5.0), "sigma_q": (0.1, 2.0)}
DEFAULT_BASE = {k: MODEL_DEFAULTS[k] for k in AXES}        # ModelParams' defaults
DEFAULT_RESOLUTION = 25

REGION_COLORS = ("#f4cccc", "#cfe2f3", "#fff2cc", "#b6d7a8")
MARKER_COLORS = ("#cc0000", "#3d85c6", "#bf9000", "#38761d")   # the same hues, dark: Monte Carlo markers
REGION_LABELS = ("lambda_1 >= 0, lambda_bar >= 0", "lambda_1 < 0 only", "lambda_bar < 0 only",
                 "lambda_1 < 0 and lambda_bar < 0")
BOTH_NEGATIVE = 3
#: what phase_diagram_figure draws: the sign regions, or a colour map of one rate (the projective ones are
#: defined for odd fields only: blank cells elsewhere)
VALUES = ("signs", "lambda1", "lambda_bar", "lambda_proj", "lambda_bar_proj")
#: the two rates of the sign regions, per field: rqf's are lambda_1 and the projective energy rate
#: lambda_bar_proj (rqf is odd); lambda_bar is derived for rqf too and equals it there (2 sigma_q^2 for every
#: beta, symbolic.general_field), so its regions would be the same
SIGN_RATES = {"mlp": ("lambda1", "lambda_bar"), "rqf": ("lambda1", "lambda_bar_proj")}


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
        check_at_most("d range", hi_i, MAX_D)
        check_at_most("number of d values", hi_i - lo_i + 1, MAX_GRID, "narrow the d range")
        return np.arange(lo_i, hi_i + 1)
    if lo < 0:
        raise ParameterError(f"{name} range", (lo, hi), "must be >= 0")
    check_at_most("resolution", resolution, MAX_GRID)
    return np.linspace(lo, hi, resolution)


def phase_grid(activation, x: str, y: str, xs, ys, base: dict, hidden=(), *, field: str = "mlp",
               columns: tuple[str, ...] | None = None):
    """Arrays of shape (len(ys), len(xs)) of `columns` (default: the field's :data:`SIGN_RATES`, (lambda_1,
    lambda_bar) for the MLP field); `base` fixes the other parameters, `hidden` (ModelParams.hidden) the deep
    block's hidden layers after the first at every point."""
    frame = phase_frame(activation, x, y, xs, ys, base, hidden, field=field)
    shape = (len(ys), len(xs))
    return tuple(frame[c].to_numpy(dtype=float, na_value=np.nan).reshape(shape)
                 for c in (columns or SIGN_RATES[field]))


def phase_frame(activation, x: str, y: str, xs, ys, base: dict, hidden=(), *, field: str = "mlp"):
    """The grid as ``sv.scan``'s DataFrame (attention off), one row per point, x varying fastest
    (rows in the order of ``numpy.meshgrid(xs, ys)`` flattened); the axes sigma_w, sigma_b are the
    first layer's, `hidden` the same at every point.  `field` "rqf": the rqf scan over d and sigma_q
    (``scan(field="rqf")``; `activation` and `hidden` must then be the defaults)."""
    from .scan import AXES as SCAN_AXES, RQF_AXES, scan
    check_axes(x, y, field)
    if field == "rqf":
        kwargs = {k: v for k, v in dict(DEFAULT_BASE, **base).items() if k in RQF_AXES and k not in (x, y)}
        kwargs.update({x: np.asarray(xs), y: np.asarray(ys), "attention_scale": 0.0, "field": "rqf"})
        frame = scan(**kwargs)
        if RQF_AXES.index(x) < RQF_AXES.index(y):
            order = np.arange(len(frame)).reshape(len(xs), len(ys)).T.ravel()
            frame = frame.iloc[order].reset_index(drop=True)
        return frame
    kwargs = {k: v for k, v in dict(DEFAULT_BASE, **base).items() if k not in (x, y) and k != "sigma_q"}
    kwargs.update({x: np.asarray(xs), y: np.asarray(ys), "activation": activation, "attention_scale": 0.0,
                   "hidden": hidden})
    frame = scan(**kwargs)
    if SCAN_AXES.index(x) < SCAN_AXES.index(y):      # scan's product has its own axis order: y fastest here
        order = np.arange(len(frame)).reshape(len(xs), len(ys)).T.ravel()
        frame = frame.iloc[order].reset_index(drop=True)
    return frame


def check_axes(x: str, y: str, field: str = "mlp") -> None:
    """ParameterError unless x and y are two different axes of `field` (:data:`FIELD_AXES`)."""
    from .params import check_field
    field = check_field(field)
    for name, axis in (("x", x), ("y", y)):
        if axis not in AXES:
            raise ParameterError(name, axis, f"one of {', '.join(AXES)}")
        if axis not in FIELD_AXES[field]:
            why = ("describes the MLP block and does not enter field='rqf'" if field == "rqf" and axis != "beta"
                   else "is a fixed value for field='rqf' (beta=, --beta), not an axis: it enters only "
                        "lambda_bar(beta), which is 2 sigma_q^2 for every beta (symbolic.general_field)"
                   if field == "rqf"
                   else "enters only the rqf field (--field rqf)")
            raise ParameterError(name, axis, f"{why}: the axes of field {field} are {', '.join(FIELD_AXES[field])}")
    if x == y:
        raise ParameterError("y", y, "must differ from x")


def sign_regions(activation, x: str, y: str, xs, ys, base: dict, hidden=(), *, field: str = "mlp") -> np.ndarray:
    """Region code per grid point: 1{lambda_1 < 0} + 2 * 1{lambda_bar < 0} (3 = both negative); for the rqf
    field lambda_bar_proj in place of lambda_bar (:data:`SIGN_RATES`).

    Cached on (activation, axes, grids, the non-axis entries of `base`, field), so moving the point
    that is not an axis does not recompute the grid; the returned array is read-only.
    """
    from .activations import get_activation
    from .params import check_hidden, hidden_spec
    fixed = tuple(sorted((k, float(v)) for k, v in base.items() if k not in (x, y)))
    return _sign_regions_cached(get_activation(activation).name, x, y, tuple(float(v) for v in xs),
                                tuple(float(v) for v in ys), fixed, hidden_spec(check_hidden(hidden)), field)


@lru_cache(maxsize=32)
def _sign_regions_cached(name, x, y, xs, ys, fixed, hidden_text="", field="mlp"):
    from .params import check_hidden
    base = dict(fixed, **{x: xs[0], y: ys[0]})
    hidden = check_hidden(tuple(h for h in hidden_text.split("; ") if h))
    lam1, lbar = phase_grid(name, x, y, np.array(xs), np.array(ys), base, hidden, field=field)
    code = (lam1 < 0).astype(int) + 2 * (lbar < 0).astype(int)
    code.setflags(write=False)
    return code


@lru_cache(maxsize=1)
def _relu_threshold():
    """t*(d) = sigma_b/sigma_w on the derived ReLU edge boundary (numpy callable of d)."""
    from .bridge import function
    return function("coercivity.relu_threshold", "numpy")


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


@takes_model
def phase_diagram_figure(params: ModelParams, x: str = "d", y: str | None = None, xs=None, ys=None, point=None,
                         ax=None, empirical: "EmpiricalPhase | None" = None, values: str = "signs"):
    """Sign regions of lambda_1 and lambda_bar(beta) over (x, y) as a matplotlib Figure, or with
    `values` = "lambda1", "lambda_bar", "lambda_proj" or "lambda_bar_proj" a colour map of that rate
    (diverging at 0) with its zero contour (the projective rates: blank where the field is not odd).
    ``field="rqf"`` (with ``sigma_q``): the random quadratic form over the axes d and sigma_q, sign
    regions of lambda_1 and lambda_bar_proj (:data:`SIGN_RATES`), every rate as scan's rqf rows give it
    (lambda_bar at `beta`).  `y` defaults to sigma_b (sigma_q for rqf).

    The model is a ModelParams or its fields as keywords (as :func:`sssn_verify.regime`): its
    activation, and its d, beta and sigmas where they are not axes.  `xs`, `ys` default to
    ``axis_values(x)``, ``axis_values(y)``.  `point` (a dict with keys x and y, optionally
    "label", or a pair (x, y)) is marked with a star.  `empirical` (from :func:`confirm_grid` on
    the same grid) draws the Monte Carlo sign regions and their confidence over the derived
    ones.  Draws into `ax` when given, else into a new pyplot figure; returns the Figure.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    act = params.activation
    field = params.field
    y = ("sigma_q" if field == "rqf" else "sigma_b") if y is None else y
    if values not in VALUES:
        raise ParameterError("values", values, f"one of {', '.join(VALUES)}")
    base = _checked_base(x, y, {k: getattr(params, k) for k in AXES}, field)
    xs = axis_values(x) if xs is None else np.asarray(xs)
    ys = axis_values(y) if ys is None else np.asarray(ys)
    code = sign_regions(act, x, y, xs, ys, base, params.hidden, field=field)
    grid = None if values == "signs" else phase_grid(act, x, y, xs, ys, base, params.hidden, field=field,
                                                     columns=(values,))[0]
    if grid is not None and np.all(np.isnan(grid)):
        raise ParameterError("values", values, "is undefined at every point of the grid: the field is not odd "
                             "(phi odd and sigma_b = 0 are needed; sigma_b = 0 in every hidden layer)")

    if ax is None:
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 5) if empirical is None else (7.5, 7))
        own = True
    else:
        fig, own = ax.figure, False
    if values == "signs":
        ax.pcolormesh(xs, ys, code, cmap=ListedColormap(REGION_COLORS), vmin=-0.5, vmax=3.5, shading="nearest")
        labels = REGION_LABELS if field == "mlp" else tuple(t.replace("lambda_bar", "lambda_bar_proj")
                                                            for t in REGION_LABELS)
        handles = [Patch(color=c, label=lab) for c, lab in zip(REGION_COLORS, labels)]
    else:
        handles = _draw_values(ax, values, xs, ys, grid)
        if np.any(np.isnan(grid)):
            from matplotlib.patches import Patch as _Patch
            handles.append(_Patch(facecolor="white", edgecolor="0.6", label=f"{values} undefined (not an odd field)"))
    if field == "mlp" and act.name == "relu" and "sigma_b" in (x, y) and not params.hidden:   # the ReLU boundary
        line = _relu_boundary(ax, x, y, xs, ys, base)
        if line is not None:
            handles.append(line)
    if empirical is not None:
        handles += _overlay_empirical(ax, empirical)
    if point is not None:
        px, py = (point[x], point[y]) if isinstance(point, dict) else point
        label = point.get("label") if isinstance(point, dict) else None
        (pt,) = ax.plot([px], [py], marker="*", ms=16, color="k", mec="w", ls="none",
                        label=label or f"current point ({x}={px:g}, {y}={py:g})")
        handles.append(pt)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    # the fixed parameters of the title: the field's axes, and rqf's beta where lambda_bar(beta) is drawn
    shown = FIELD_AXES[field] + (("beta",) if field == "rqf" and values == "lambda_bar" else ())
    fixed = ", ".join(f"{k}={v:g}" for k, v in base.items() if k not in (x, y) and k in shown)
    if params.hidden:
        from .params import hidden_spec
        fixed += f"; hidden {hidden_spec(params.hidden)}"
    what = (f"sign regions of lambda_1 and {SIGN_RATES[field][1]}" if values == "signs" else values)
    name = act.name if field == "mlp" else "rqf, F(y) = Q y, Q = sigma_q (B + B^T)/2"
    ax.set_title(plot_text(f"{name}: {what}" + (f" ({fixed})" if fixed else "")), fontsize=9)
    if empirical is None:
        ax.legend(handles=handles, loc="upper left", fontsize=7, framealpha=0.9)
    else:
        ax.set_title(ax.get_title() + f"\nmarkers: Monte Carlo, Gaussian transformer, {empirical.budget['paths']} "
                     f"paths, L={empirical.budget['depth']}\n(lambda_1 by the tangent flow; energy rate near "
                     f"synchronization, whose limit is the edge value of lambda_bar)", fontsize=8)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=7, ncol=2)
    if own:
        fig.tight_layout()
    return fig


def _draw_values(ax, name: str, xs, ys, vals):
    """Colour map of one rate (blue < 0 < red, white at 0), its colour bar and zero contour; the legend handles."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.lines import Line2D
    finite = np.where(np.isfinite(vals), vals, np.nan)
    lo, hi = np.nanmin(finite), np.nanmax(finite)
    span = max(abs(lo), abs(hi), 1e-300)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=min(lo, -1e-3 * span), vmax=max(hi, 1e-3 * span))
    mesh = ax.pcolormesh(xs, ys, finite, cmap="RdBu_r", norm=norm, shading="nearest")
    ax.figure.colorbar(mesh, ax=ax, label=name)
    handles = []
    if lo < 0 < hi and len(xs) > 1 and len(ys) > 1:
        ax.contour(xs, ys, finite, levels=[0.0], colors="k", linewidths=1.5)
        handles.append(Line2D([], [], color="k", lw=1.5, label=f"{name} = 0"))
    return handles


# ----------------------------------------------------------------- empirical phase diagram
CONFIRM_BUDGET = {"paths": 1000, "depth": 32, "horizon": 1.0, "gap0": 1e-4}
CONFIRM_LEVEL = 0.99


def confirm_cell(activation: str, point: dict, budget: dict, seed, hidden=()) -> dict:
    """Monte Carlo at one parameter point (a task: pure, plain arguments in and out).

    Returns the tangent-flow lambda_1 and the near-synchronization energy rate, each as
    (estimate, stderr), with the derived lambda_1, lambda_bar and edge value at the point.
    """
    from .engine import lyapunov_tangent, simulate_gaussian
    from .numeric.kernels import kernel
    from .numeric.rates import lambda1, lambda_bar_from_kernel, lambda_edge
    from .params import ModelParams
    d = int(point["d"])
    kf = kernel(activation, point["sigma_w"], point["sigma_b"], point["sigma_a"], hidden=hidden)
    p = ModelParams(d=d, activation=activation, sigma_w=point["sigma_w"], sigma_b=point["sigma_b"],
                    sigma_a=point["sigma_a"], beta=point["beta"], V=0.0, n_tokens=1,
                    horizon=float(budget["horizon"]), hidden=hidden)
    L, P = int(budget["depth"]), int(budget["paths"])
    tan = lyapunov_tangent(p, model="gaussian", depth=L, n_paths=P, seed=seed)
    u0 = float(budget["gap0"])
    init = np.zeros((2, d))
    init[0, 0] = 1.0
    init[1, 0], init[1, 1] = 1.0 - u0, math.sqrt(u0 * (2.0 - u0))
    sim = simulate_gaussian(p.with_(n_tokens=2), L, n_paths=P, seed=seed, init=init)
    e0, eT = float(sim.energy[0, 0]), sim.energy[:, -1]
    mean = float(eT.mean())
    T = float(budget["horizon"])
    rate = math.log(mean / e0) / T
    rate_se = float(eT.std(ddof=1) / math.sqrt(P)) / mean / T
    return {"lambda1": (tan.rate, tan.stderr), "energy_rate": (rate, rate_se),
            "derived": {"lambda1": lambda1(d, kf.k0, kf.k1),
                        "lambda_bar": lambda_bar_from_kernel(kf, d, float(point["beta"]))[0],
                        "edge": lambda_edge(d, kf.k0, kf.k1)}}


def _sign(lo: float, hi: float) -> str:
    return "negative" if hi < 0 else ("positive" if lo > 0 else "undecided")


@dataclass
class EmpiricalPhase:
    """Per-cell Monte Carlo estimates over a grid, with simultaneous intervals (see module doc).

    Arrays have shape (len(ys), len(xs)); ``*_sign`` hold -1 (negative), 0 (undecided), +1.
    """

    activation: str
    x: str
    y: str
    xs: np.ndarray
    ys: np.ndarray
    base: dict
    budget: dict
    seed: int
    level: float
    cell_level: float
    lambda1: np.ndarray
    lambda1_se: np.ndarray
    energy_rate: np.ndarray
    energy_rate_se: np.ndarray
    derived_lambda1: np.ndarray
    derived_lambda_bar: np.ndarray
    derived_edge: np.ndarray
    executor: dict = field(default_factory=dict)
    timings: list = field(default_factory=list)

    @property
    def z(self) -> float:
        from scipy.stats import norm
        return float(norm.ppf(0.5 + self.cell_level / 2))

    def interval(self, name: str):
        est, se = getattr(self, name), getattr(self, name + "_se")
        return est - self.z * se, est + self.z * se

    def signs(self, name: str) -> np.ndarray:
        lo, hi = self.interval(name)
        return np.where(hi < 0, -1, np.where(lo > 0, 1, 0))

    def disagreements(self) -> dict[str, int]:
        """Cells whose confident sign contradicts the derived one (lambda_1; energy rate vs edge)."""
        return {"lambda1": int(np.sum(self.signs("lambda1") * np.sign(self.derived_lambda1) < 0)),
                "energy_rate": int(np.sum(self.signs("energy_rate") * np.sign(self.derived_edge) < 0))}

    def to_dict(self) -> dict:
        from .stats import _jsonable
        lo1, hi1 = self.interval("lambda1")
        loe, hie = self.interval("energy_rate")
        cells = []
        for j, yv in enumerate(self.ys):
            for i, xv in enumerate(self.xs):
                cells.append({
                    self.x: float(xv), self.y: float(yv),
                    "lambda1": {"estimate": self.lambda1[j, i], "stderr": self.lambda1_se[j, i],
                                "ci": [lo1[j, i], hi1[j, i]], "sign": _sign(lo1[j, i], hi1[j, i]),
                                "derived": self.derived_lambda1[j, i]},
                    "energy_rate": {"estimate": self.energy_rate[j, i], "stderr": self.energy_rate_se[j, i],
                                    "ci": [loe[j, i], hie[j, i]], "sign": _sign(loe[j, i], hie[j, i]),
                                    "derived_edge": self.derived_edge[j, i],
                                    "derived_lambda_bar": self.derived_lambda_bar[j, i]},
                })
        n = self.lambda1.size
        return _jsonable({
            "activation": self.activation, "x": self.x, "y": self.y, "xs": list(map(float, self.xs)),
            "ys": list(map(float, self.ys)), "base": self.base, "model": "gaussian (m = infinity)",
            "budget": self.budget, "seed": self.seed, "level": self.level, "cell_level": self.cell_level,
            "intervals": f"estimate +- {self.z:.3f} stderr: simultaneous level {self.level} over "
                         f"{2 * n} intervals (Bonferroni); the O(T/L) time-step bias is not included",
            "summary": {"cells": n,
                        "lambda1_decided": int(np.sum(self.signs("lambda1") != 0)),
                        "energy_rate_decided": int(np.sum(self.signs("energy_rate") != 0)),
                        "disagreements": self.disagreements()},
            "cells": cells, "executor": self.executor, "timings": self.timings,
        })


def confirm_grid(activation, x: str, y: str, xs, ys, base: dict | None = None, *, budget: dict | None = None,
                 seed=0, level: float = CONFIRM_LEVEL, executor=None, progress: bool = False,
                 hidden=()) -> EmpiricalPhase:
    """The empirical phase diagram: :func:`confirm_cell` at every (x, y) of the grid, one task per
    cell on `executor` (None: in-process; a worker count, an address, a Client, an Executor);
    `hidden` (ModelParams.hidden) the deep block's hidden layers at every cell."""
    from .activations import get_activation
    from .executor import Task, using
    from .numeric.rng import as_key
    from .params import check_hidden
    act = get_activation(activation)
    hidden = check_hidden(hidden)
    base = _checked_base(x, y, base)          # the MLP field's Monte Carlo
    b = dict(CONFIRM_BUDGET, **(budget or {}))
    unknown = set(b) - set(CONFIRM_BUDGET)
    if unknown:
        raise ParameterError("budget", sorted(unknown), f"keys among {', '.join(CONFIRM_BUDGET)}")
    b["paths"] = check_int("paths", b["paths"], 2)
    b["depth"] = check_int("depth", b["depth"], 1)
    b["horizon"] = check_real("horizon", b["horizon"], 0.0, strict=True)
    b["gap0"] = check_real("gap0", b["gap0"], 0.0, strict=True, maximum=0.5)
    key = as_key(seed, "confirm")
    level = check_real("level", level, 0.5, maximum=1.0 - 1e-12)
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    n = xs.size * ys.size
    tasks = []
    for j, yv in enumerate(ys):
        for i, xv in enumerate(xs):
            pt = dict(base, **{x: float(xv), y: float(yv)})
            pt["d"] = int(pt["d"])
            tasks.append(Task(f"{x}={xv:g},{y}={yv:g}", confirm_cell,
                              (act.name, pt, b, key.child(j, i), hidden)))
    with using(executor) as ex:
        outs = ex.run(tasks, desc="phase-diagram --confirm", progress=progress)
        info = ex.describe()
    shape = (ys.size, xs.size)

    def grid(f):
        return np.array([f(o.value) for o in outs], dtype=float).reshape(shape)

    return EmpiricalPhase(act.name, x, y, xs, ys, base, b, key.seed, level, 1.0 - (1.0 - level) / (2 * n),
                          grid(lambda v: v["lambda1"][0]), grid(lambda v: v["lambda1"][1]),
                          grid(lambda v: v["energy_rate"][0]), grid(lambda v: v["energy_rate"][1]),
                          grid(lambda v: v["derived"]["lambda1"]), grid(lambda v: v["derived"]["lambda_bar"]),
                          grid(lambda v: v["derived"]["edge"]), info, [o.timing() for o in outs])


def _checked_base(x: str, y: str, base: dict | None, field: str = "mlp") -> dict:
    check_axes(x, y, field)
    base = dict(DEFAULT_BASE, **(base or {}))
    unknown = set(base) - set(AXES)
    if unknown:
        raise ParameterError("base", sorted(unknown), f"keys among {', '.join(AXES)}")
    base["d"] = check_int("d", base["d"], 2)
    for k in ("beta", "sigma_w", "sigma_b", "sigma_a"):
        base[k] = check_real(k, base[k], 0.0)
    base["sigma_q"] = check_real("sigma_q", base["sigma_q"], 0.0, strict=True)
    if field == "mlp":
        if base.pop("sigma_q") != DEFAULT_BASE["sigma_q"]:
            raise ParameterError("sigma_q", base, "enters only the rqf field (field='rqf')")
    return base


def _overlay_empirical(ax, emp: EmpiricalPhase):
    """Markers over the derived regions: a dot in the dark hue of the estimated region when both
    signs are decided at the simultaneous level (a dot on its own background's hue = agreement),
    a grey x when one is undecided, a red square around a cell whose decided sign contradicts
    the derived one."""
    from matplotlib.lines import Line2D
    s1, se = emp.signs("lambda1"), emp.signs("energy_rate")
    code = (emp.lambda1 < 0).astype(int) + 2 * (emp.energy_rate < 0).astype(int)
    X, Y = np.meshgrid(emp.xs, emp.ys)
    decided = (s1 != 0) & (se != 0)
    wrong = (s1 * np.sign(emp.derived_lambda1) < 0) | (se * np.sign(emp.derived_edge) < 0)
    colors = np.array(MARKER_COLORS)[code]
    ax.scatter(X[decided], Y[decided], c=list(colors[decided]), s=22, edgecolors="w", linewidths=0.5, zorder=3)
    ax.scatter(X[~decided], Y[~decided], marker="x", c="0.35", s=18, linewidths=0.8, zorder=3)
    if wrong.any():
        ax.scatter(X[wrong], Y[wrong], marker="s", facecolors="none", edgecolors="r", s=70, linewidths=1.2,
                   zorder=4)
    return [Line2D([], [], ls="none", marker="o", mfc=MARKER_COLORS[BOTH_NEGATIVE], mec="w",
                   label=f"Monte Carlo: both signs decided (dark hue of the estimated region; level "
                         f"{emp.level:g} jointly)"),
            Line2D([], [], ls="none", marker="x", color="0.35", label="Monte Carlo: a sign undecided"),
            Line2D([], [], ls="none", marker="s", mfc="none", mec="r",
                   label=f"decided sign contradicts the derived one ({int(wrong.sum())} cells)")]


__all__ = ["AXES", "FIELD_AXES", "SIGN_RATES", "check_axes", "DEFAULT_RANGE", "DEFAULT_BASE", "REGION_COLORS", "REGION_LABELS", "BOTH_NEGATIVE",
           "axis_values", "phase_grid", "phase_frame", "VALUES", "sign_regions", "phase_diagram_figure", "confirm_cell", "confirm_grid",
           "EmpiricalPhase", "CONFIRM_BUDGET", "CONFIRM_LEVEL"]
