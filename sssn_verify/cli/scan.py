"""``sssn-verify scan``: the rates and verdicts of ``regime`` over a grid of parameters (``sv.scan``).

Each of --activation, --d, --sigma-w, --sigma-b, --sigma-a, --beta, --attention-scale (and --sigma-q with
--field rqf) is an axis: a number, a comma list, ``START:STOP`` (integers, both ends included) or
``START:STOP:NUM`` (NUM evenly spaced values, both ends included); the grid is their product.  --field rqf
scans the random quadratic form (the columns ``sssn_verify.scan.RQF_COLUMNS``; the MLP options keep their
defaults).  ``--format csv`` (a header row with
the DataFrame's column names, numbers with 17 significant digits, so they read back exactly),
``json`` (one object per row; inf as "inf", undetermined verdicts as null) or ``text`` (a table).
"""
from __future__ import annotations

from .common import add_field_options, add_format_options, add_hidden_option, epilog, hidden_from_args, print_frame

EXAMPLES = [
    "sssn-verify scan --activation relu --d 2:64 --sigma-b 0:3:31 --format csv > relu.csv",
    "sssn-verify scan --field rqf --sigma-q 0.5:2:4 --d 3,5 --format csv",
    "sssn-verify scan --activation relu --d 6 --sigma-b 1 --attention-scale=-0.5 --json",
]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "scan", help="k0, k1, lambda_1, lambda_bar, C_att and the verdicts over a parameter grid (CSV/JSON/text)",
        description="The numbers of `regime` at every point of the product of the axes below (sv.scan in "
                    "Python). An axis is a number, a comma list, START:STOP (integers, both ends included) "
                    "or START:STOP:NUM (NUM evenly spaced values, both ends included). With --field rqf: "
                    "the random quadratic form over the axes d, sigma_q, beta, attention-scale (columns field, "
                    "d, sigma_q, beta, attention_scale, k0 = a(1), lambda1, lambda_bar (2 sigma_q^2) with "
                    "lambda_bar_argmax, lambda_bar_edge, sup_at_edge, c_att, rate_lower_bound, "
                    "rate_upper_bound, synchronizes, dissipates and the projective ones; the MLP-only "
                    "columns are absent). Every frame has the projective "
                    "columns odd_field, lambda_bar_proj, lambda_proj, sync_up_to_sign, undefined where the "
                    "field is not odd (empty in CSV, null in JSON, 'undefined'/'undetermined' in text).",
        epilog=epilog(EXAMPLES))
    p.add_argument("--activation", default="relu",
                   help="activation(s): registry names or expressions in u, comma separated")
    p.add_argument("--d", default="3", help="ambient dimension(s)")
    p.add_argument("--sigma-w", default="1", help="std of each weight coordinate")
    p.add_argument("--sigma-b", default="0", help="std of the bias")
    p.add_argument("--sigma-a", default="1", help="std of each output-weight coordinate")
    p.add_argument("--beta", default="1", help="attention inverse temperature")
    p.add_argument("--attention-scale", default="1",
                   help="V = scale I, Q = K = I; 0 switches attention off, negative is repulsive")
    add_hidden_option(p)                    # not an axis: every point gets the same hidden layers
    add_field_options(p, axis=True)         # --field: not an axis; --sigma-q: an axis (rqf only)
    add_format_options(p, ("text", "csv", "json"), default="text")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..scan import parse_axis, scan
    axes = {name: parse_axis(name, getattr(args, name)) for name in
            ("activation", "d", "sigma_w", "sigma_b", "sigma_a", "beta", "attention_scale", "sigma_q")}
    frame = scan(**axes, hidden=hidden_from_args(args), field=args.field)
    print_frame(frame, "json" if args.json else args.format)
    return 0
