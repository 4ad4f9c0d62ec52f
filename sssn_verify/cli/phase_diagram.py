"""``sssn-verify phase-diagram``: sign regions of lambda_1 and lambda_bar over two parameters.

Each grid point is evaluated with ``numeric.rates`` (the kernel is built once per
(sigma_w, sigma_b, sigma_a)).  Four regions: both rates negative, only lambda_1 < 0, only
lambda_bar < 0, neither.  For ReLU on a (d, sigma_b) diagram the derived boundary
``sigma_b = sigma_w sqrt(2/(d-3))`` (edge value of lambda_bar = 0, symbolic/dissipation)
is overlaid.  lambda_bar uses --beta (default 0, where the sup sits at the edge for ReLU).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..params import check_int, check_real
from .common import add_kernel_options

AXES = ("d", "sigma_w", "sigma_b", "sigma_a", "beta")
_DEFAULT_RANGE = {"d": (2, 16), "sigma_w": (0.1, 2.0), "sigma_b": (0.0, 2.0), "sigma_a": (0.1, 2.0),
                  "beta": (0.0, 5.0)}


def register(subparsers) -> None:
    p = subparsers.add_parser("phase-diagram", help="sign regions of lambda_1 and lambda_bar (PNG)",
                              description="Sign regions of lambda_1 and lambda_bar(beta) over two "
                                          "parameters, drawn with matplotlib.")
    add_kernel_options(p)
    p.add_argument("--d", type=int, default=8, help="dimension when d is not an axis")
    p.add_argument("--beta", type=float, default=0.0, help="beta of lambda_bar when not an axis")
    p.add_argument("--x", choices=AXES, default="d", help="horizontal axis")
    p.add_argument("--y", choices=AXES, default="sigma_b", help="vertical axis")
    p.add_argument("--x-range", type=float, nargs=2, metavar=("LO", "HI"), help="range of the x axis")
    p.add_argument("--y-range", type=float, nargs=2, metavar=("LO", "HI"), help="range of the y axis")
    p.add_argument("--resolution", type=int, default=25, help="grid points per continuous axis")
    p.add_argument("--out", required=True, help="output PNG file")
    p.set_defaults(func=run)


def _axis_values(name, rng, resolution):
    lo, hi = rng if rng is not None else _DEFAULT_RANGE[name]
    lo, hi = check_real(f"{name} range", lo), check_real(f"{name} range", hi)
    if hi <= lo:
        raise ParameterError(f"{name} range", (lo, hi), "must satisfy LO < HI")
    if name == "d":
        lo_i, hi_i = max(2, math.ceil(lo)), math.floor(hi)
        if hi_i < lo_i:
            raise ParameterError("d range", (lo, hi), "must contain an integer >= 2")
        return np.arange(lo_i, hi_i + 1)
    if name != "beta" and name != "sigma_b" and lo < 0:
        raise ParameterError(f"{name} range", (lo, hi), "must be >= 0")
    if lo < 0:
        raise ParameterError(f"{name} range", (lo, hi), "must be >= 0")
    return np.linspace(lo, hi, resolution)


def phase_grid(activation, x: str, y: str, xs, ys, base: dict):
    """(lambda_1, lambda_bar) arrays of shape (len(ys), len(xs))."""
    from ..numeric.kernels import kernel
    from ..numeric.rates import lambda1, lambda_bar_from_kernel
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


def _relu_boundary(ax, x, y, xs, ys, base, threshold, d_sym):
    """Overlay sigma_b = sigma_w sqrt(2/(d-3)) (derived edge boundary) against the other axis."""
    other = y if x == "sigma_b" else x
    vals = (np.linspace(float(min(ys if x == "sigma_b" else xs)), float(max(ys if x == "sigma_b" else xs)), 400)
            if other != "d" else np.linspace(float(min(xs if x == "d" else ys)), float(max(xs if x == "d" else ys)), 400))
    sb = []
    for v in vals:
        p = dict(base)
        p[other] = v
        dd = p["d"]
        sb.append(p["sigma_w"] * float(threshold.subs(d_sym, dd)) if dd > 3 else np.nan)
    sb = np.array(sb)
    if np.all(np.isnan(sb)):
        return None
    label = "derived boundary sigma_b = sigma_w sqrt(2/(d-3)) (edge value of lambda_bar = 0)"
    if x == "sigma_b":
        (line,) = ax.plot(sb, vals, "k--", lw=2, label=label)
    else:
        (line,) = ax.plot(vals, sb, "k--", lw=2, label=label)
    ax.set_xlim(min(xs), max(xs))
    ax.set_ylim(min(ys), max(ys))
    return line


def run(args) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from ..activations import get_activation
    from ..symbolic.dissipation import relu_region
    from ..symbolic.two_point import d as d_sym

    act = get_activation(args.activation)
    if args.x == args.y:
        raise ParameterError("y", args.y, "must differ from --x")
    res = check_int("resolution", args.resolution, 2)
    base = dict(d=check_int("d", args.d, 2), beta=check_real("beta", args.beta, 0.0),
                sigma_w=check_real("sigma_w", args.sigma_w, 0.0), sigma_b=check_real("sigma_b", args.sigma_b, 0.0),
                sigma_a=check_real("sigma_a", args.sigma_a, 0.0))
    xs = _axis_values(args.x, args.x_range, res)
    ys = _axis_values(args.y, args.y_range, res)
    lam1, lbar = phase_grid(act, args.x, args.y, xs, ys, base)
    code = (lam1 < 0).astype(int) + 2 * (lbar < 0).astype(int)   # 0 none, 1 lam1, 2 lbar, 3 both
    colors = ["#f4cccc", "#cfe2f3", "#fff2cc", "#b6d7a8"]
    labels = ["lambda_1 >= 0, lambda_bar >= 0", "lambda_1 < 0 only", "lambda_bar < 0 only",
              "lambda_1 < 0 and lambda_bar < 0"]
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.pcolormesh(xs, ys, code, cmap=ListedColormap(colors), vmin=-0.5, vmax=3.5, shading="nearest")
    handles = [Patch(color=c, label=lab) for c, lab in zip(colors, labels)]
    if act.name == "relu" and "sigma_b" in (args.x, args.y):
        line = _relu_boundary(ax, args.x, args.y, xs, ys, base, relu_region()[3], d_sym)
        if line is not None:
            handles.append(line)
    ax.set_xlabel(args.x)
    ax.set_ylabel(args.y)
    fixed = ", ".join(f"{k}={v:g}" for k, v in base.items() if k not in (args.x, args.y))
    ax.set_title(f"{act.name}: sign regions of lambda_1 and lambda_bar ({fixed})", fontsize=9)
    ax.legend(handles=handles, loc="upper left", fontsize=7, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    plt.close(fig)
    print(f"wrote {args.out}: {int(np.sum(code == 3))}/{code.size} grid points with both rates negative")
    return 0
