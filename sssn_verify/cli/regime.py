"""``sssn-verify regime``: the synchronization rates and verdicts of one parameter set.

Attention defaults to Q = K = V = I (energy-lowering, C_att = 0); ``--attention-scale s``
uses V = s I, ``--no-attention`` V = 0, ``--attention FILE.npz`` reads arrays Q, K, V, each
(d, d) (one head) or (H, d, d) (H heads), through ``params.load_attention`` (as ``simulate``).
"""
from __future__ import annotations

from ..errors import ParameterError
from ..params import check_real, load_attention
from .common import add_model_options, params_from_args, print_json


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "regime", help="k0, k1, lambda_1, lambda_bar(beta), C_att and the synchronization verdicts",
        description="Rates of docs/mathematics.md, section 5 for one activation and parameter set: lambda_1 "
                    "(two-point synchronization iff < 0) and lambda_bar(beta) + C_att (energy "
                    "dissipation iff < 0).")
    add_model_options(p)
    p.add_argument("--attention-scale", type=float, default=1.0,
                   help="V = scale * I (Q = K = I); negative values make attention repulsive")
    p.add_argument("--no-attention", action="store_true", help="switch attention off (V = 0)")
    p.add_argument("--attention", metavar="FILE.npz", default=None,
                   help="Q, K, V from an .npz file (arrays Q, K, V, each (d, d) or (H, d, d))")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..regime import regime
    if args.attention is not None:
        if args.no_attention:
            raise ParameterError("attention", args.attention, "cannot be combined with --no-attention")
        params = params_from_args(args, **load_attention(args.attention))
    else:
        scale = 0.0 if args.no_attention else check_real("attention_scale", args.attention_scale)
        params = params_from_args(args, V=scale)          # a scalar V means scale * I
    result = regime(params)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.text())
    return 0

