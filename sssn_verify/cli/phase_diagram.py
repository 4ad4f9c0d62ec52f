"""``sssn-verify phase-diagram``: sign regions of lambda_1 and lambda_bar over two parameters.

A thin wrapper over :func:`sssn_verify.phase_diagram.phase_diagram_figure` (four sign regions,
the derived ReLU boundary ``sigma_b = sigma_w sqrt(2/(d-3))`` when sigma_b is an axis).
lambda_bar uses --beta (default 1, ModelParams'; at 0 the sup sits at the edge for ReLU).

``--confirm`` adds the empirical phase diagram (:func:`sssn_verify.phase_diagram.confirm_grid`):
Monte Carlo estimates of lambda_1 and of the energy rate at every grid cell, one task per cell
(in-process, or on dask with --workers/--scheduler), drawn over the derived regions; ``--json``
prints the per-cell estimates and intervals.
"""
from __future__ import annotations

import sys

import numpy as np

from ..escape import terminal
from ..errors import ParameterError
from ..params import MODEL_DEFAULTS, check_int, check_real
from ..executor import add_cli_options
from ..outputs import output_path, write_atomic
from ..phase_diagram import (AXES, BOTH_NEGATIVE, CONFIRM_BUDGET, CONFIRM_LEVEL, VALUES, axis_values, check_axes,
                             confirm_grid, phase_diagram_figure, phase_frame, sign_regions)
from .common import (add_field_options, add_format_options, add_kernel_options, epilog, hidden_from_args,
                     params_from_args, print_frame, print_json)

EXAMPLES = [
    "sssn-verify phase-diagram --activation relu --x d --y sigma_b --values lambda_bar --out relu.png",
    "sssn-verify phase-diagram --activation tanh --x sigma_w --y sigma_b --d 6 --resolution 9 --out tanh.svg",
    "sssn-verify phase-diagram --field rqf --x d --y sigma_q --values lambda_proj --resolution 7 --format csv",
]


def register(subparsers) -> None:
    p = subparsers.add_parser("phase-diagram", help="lambda_1 and lambda_bar over two parameters (PNG/PDF/SVG, "
                                                    "CSV/JSON grid)",
                              description="Sign regions of lambda_1 and lambda_bar(beta) over two parameters, or a "
                                          "colour map of one rate with its zero contour (--values; the projective "
                                          "rates lambda_proj, lambda_bar_proj are blank where the field is not "
                                          "odd), drawn with matplotlib (the derived ReLU boundary when sigma_b is "
                                          "an axis); --format csv|json prints the grid (sv.scan's columns). "
                                          "--field rqf: the random quadratic form over the axes d and sigma_q, "
                                          "sign regions of lambda_1 and lambda_bar_proj, every rate (lambda_bar "
                                          "at --beta included) as scan --field rqf gives it.",
                              epilog=epilog(EXAMPLES))
    add_kernel_options(p)
    p.add_argument("--d", type=int, default=MODEL_DEFAULTS["d"], help="dimension when d is not an axis")
    p.add_argument("--beta", type=float, default=MODEL_DEFAULTS["beta"],
                   help="beta of lambda_bar when not an axis (never an axis with --field rqf)")
    add_field_options(p, sigma_q_help="its value when sigma_q is not an axis")
    p.add_argument("--x", choices=AXES, default="d", help="horizontal axis")
    p.add_argument("--y", choices=AXES, default=None,
                   help="vertical axis (default: sigma_b; sigma_q with --field rqf)")
    p.add_argument("--x-range", type=float, nargs=2, metavar=("LO", "HI"), help="range of the x axis")
    p.add_argument("--y-range", type=float, nargs=2, metavar=("LO", "HI"), help="range of the y axis")
    p.add_argument("--resolution", type=int, default=25, help="grid points per continuous axis")
    p.add_argument("--values", choices=VALUES, default="signs",
                   help="what the figure shows: the four sign regions, or a colour map of one rate")
    p.add_argument("--out", default=None, help="the figure: .png, .pdf or .svg (needed unless --format csv|json)")
    add_format_options(p, ("text", "csv", "json"), default="text")
    c = p.add_argument_group("empirical phase diagram (--confirm)")
    c.add_argument("--confirm", action="store_true",
                   help="estimate lambda_1 (tangent flow) and the energy rate by Monte Carlo at every cell "
                        "and draw the estimated signs, with their confidence, over the derived regions")
    c.add_argument("--paths", type=int, default=CONFIRM_BUDGET["paths"], help="Monte Carlo paths per cell")
    c.add_argument("--depth", type=int, default=CONFIRM_BUDGET["depth"], help="layers per path (T = 1)")
    c.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo (each cell its own stream)")
    c.add_argument("--level", type=float, default=CONFIRM_LEVEL,
                   help="simultaneous confidence level of all the cells' signs (Bonferroni)")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_cli_options(c)
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
    hidden = hidden_from_args(args)
    field = args.field
    if args.y is None:
        args.y = "sigma_q" if field == "rqf" else "sigma_b"
    check_axes(args.x, args.y, field)
    res = check_int("resolution", args.resolution, 2)
    base = dict(d=check_int("d", args.d, 2), beta=check_real("beta", args.beta, 0.0),
                sigma_w=check_real("sigma_w", args.sigma_w, 0.0), sigma_b=check_real("sigma_b", args.sigma_b, 0.0),
                sigma_a=check_real("sigma_a", args.sigma_a, 0.0))
    params = params_from_args(args)            # the field's rule: the other field's options keep their defaults
    if field == "rqf":
        if args.confirm:
            raise ParameterError("confirm", True, "simulates the MLP field's Gaussian transformer: not for --field "
                                 "rqf (verify --claim rqf checks its rates by Monte Carlo)")
        base["sigma_q"] = params.sigma_q
    xs = axis_values(args.x, args.x_range, res)
    ys = axis_values(args.y, args.y_range, res)
    fmt = "json" if args.json else args.format
    if not args.confirm and (args.workers is not None or args.scheduler is not None):
        raise ParameterError("confirm", False, "--workers and --scheduler need --confirm")
    if args.out is None and (fmt == "text" or args.confirm):
        raise ParameterError("out", None, "give --out FILE (.png, .pdf, .svg), or --format csv|json for the grid")
    if args.out is None:
        print_frame(phase_frame(act, args.x, args.y, xs, ys, base, hidden, field=field), fmt)
        return 0
    out, note = output_path(args.out, extensions=(".png", ".pdf", ".svg"), default_ext=".png", what="--out")
    _headless_backend()
    import matplotlib.pyplot as plt
    emp = None
    if args.confirm:
        from ..executor import from_cli
        budget = dict(paths=args.paths, depth=args.depth)
        with from_cli(args) as ex:
            emp = confirm_grid(act, args.x, args.y, xs, ys, base, budget=budget, seed=args.seed,
                               level=args.level, executor=ex, progress=not args.no_progress, hidden=hidden)
    fig = phase_diagram_figure(params, x=args.x, y=args.y, xs=xs, ys=ys, empirical=emp, values=args.values,
                               **{k: v for k, v in base.items() if k != "sigma_q"})
    kind = out.suffix.lower().lstrip(".")
    write_atomic(out, lambda fh: fig.savefig(fh, format=kind, dpi=120), what="--out")
    plt.close(fig)
    code = sign_regions(act, args.x, args.y, xs, ys, base, hidden, field=field)   # cached by the figure
    if note:
        print(note, file=sys.stderr)
    if fmt != "text" and emp is not None:
        d = emp.to_dict()
        d["figure"] = str(out)
        if fmt == "json":
            print_json(d)
            return 0
    if fmt != "text":
        print_frame(phase_frame(act, args.x, args.y, xs, ys, base, hidden, field=field), fmt)
        return 0
    print(f"wrote {terminal(out)}: {int(np.sum(code == BOTH_NEGATIVE))}/{code.size} grid points with both rates negative"
          + (" (lambda_1 and lambda_bar_proj)" if field == "rqf" else ""))
    if emp is not None:
        s = emp.to_dict()["summary"]
        print(f"Monte Carlo ({emp.budget['paths']} paths, L={emp.budget['depth']}, simultaneous level "
              f"{emp.level:g}): lambda_1 sign decided at {s['lambda1_decided']}/{s['cells']} cells, energy rate "
              f"at {s['energy_rate_decided']}/{s['cells']}; decided signs contradicting the derived ones: "
              f"{s['disagreements']['lambda1']} (lambda_1), {s['disagreements']['energy_rate']} (energy rate)")
    return 0
