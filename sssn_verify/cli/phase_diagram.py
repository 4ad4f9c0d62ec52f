"""``sssn-verify phase-diagram``: sign regions of lambda_1 and lambda_bar over two parameters.

A thin wrapper over :func:`sssn_verify.phase_diagram.phase_diagram_figure` (four sign regions,
the derived ReLU boundary ``sigma_b = sigma_w sqrt(2/(d-3))`` when sigma_b is an axis).
lambda_bar uses --beta (default 0, where the sup sits at the edge for ReLU).
"""
from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..params import check_int, check_real
from ..phase_diagram import AXES, BOTH_NEGATIVE, axis_values, phase_diagram_figure, sign_regions
from .common import add_kernel_options


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


def _headless_backend() -> None:
    """Select Agg unless a backend was chosen explicitly (MPLBACKEND, matplotlibrc, matplotlib.use)."""
    import os

    import matplotlib
    chosen = getattr(matplotlib.rcParams, "_get_backend_or_none", None)   # matplotlib >= 3.8
    if (chosen() if chosen else os.environ.get("MPLBACKEND")) is None:
        matplotlib.use("Agg")


def run(args) -> int:
    from ..activations import get_activation

    act = get_activation(args.activation)
    if args.x == args.y:
        raise ParameterError("y", args.y, "must differ from --x")
    res = check_int("resolution", args.resolution, 2)
    base = dict(d=check_int("d", args.d, 2), beta=check_real("beta", args.beta, 0.0),
                sigma_w=check_real("sigma_w", args.sigma_w, 0.0), sigma_b=check_real("sigma_b", args.sigma_b, 0.0),
                sigma_a=check_real("sigma_a", args.sigma_a, 0.0))
    xs = axis_values(args.x, args.x_range, res)
    ys = axis_values(args.y, args.y_range, res)
    _headless_backend()
    import matplotlib.pyplot as plt
    fig = phase_diagram_figure(act, args.x, args.y, xs, ys, base)
    fig.savefig(args.out, dpi=120)
    plt.close(fig)
    code = sign_regions(act, args.x, args.y, xs, ys, base)   # cached by the figure
    print(f"wrote {args.out}: {int(np.sum(code == BOTH_NEGATIVE))}/{code.size} grid points with both rates negative")
    return 0
