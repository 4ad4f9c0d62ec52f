"""``sssn-verify regime``: the synchronization rates and verdicts of one parameter set.

Attention defaults to Q = K = V = I (energy-lowering, C_att = 0); ``--attention-scale s``
uses V = s I, ``--no-attention`` V = 0, ``--attention FILE.npz`` reads arrays Q, K, V, each
(d, d) (one head) or (H, d, d) (H heads), through ``params.load_attention`` (as ``simulate``).
"""
from __future__ import annotations

from ..errors import ParameterError
from ..params import check_real, load_attention
from .common import add_field_options, add_model_options, epilog, params_from_args, print_json

EXAMPLES = [
    "sssn-verify regime --activation tanh --d 6 --sigma-w 1.2 --sigma-b 0.3 --sigma-a 1 --beta 1",
    "sssn-verify regime --activation relu --d 8 --sigma-b 1 --attention-scale=-0.5 --json",
    "sssn-verify regime --field rqf --sigma-q 1 --d 5 --no-attention --json",
]
#: the model options whose default is printed with the result when they are not given
_SHOWN_DEFAULTS = ("activation", "d", "sigma_w", "sigma_b", "sigma_a", "beta", "sigma_q")
#: the defaults that describe the MLP block: not listed as used with --field rqf (they do not enter it)
_MLP_SHOWN = ("activation", "sigma_w", "sigma_b", "sigma_a")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "regime", help="k0, k1, lambda_1, lambda_bar(beta), C_att and the synchronization verdicts",
        description="Rates of docs/mathematics.md, section 5 for one activation and parameter set: lambda_1 "
                    "(two-point synchronization iff < 0) and lambda_bar(beta) + C_att (energy dissipation "
                    "when < 0; no dissipation when the rate near synchronization is > 0; otherwise "
                    "undetermined, with the interval where the rate lies). Options not given take the "
                    "defaults below, and the output says which.", epilog=epilog(EXAMPLES))
    add_model_options(p)
    add_field_options(p)
    defaults = {}
    for action in p._actions:      # None = not given: run() fills the default and says so
        if action.dest in _SHOWN_DEFAULTS:
            defaults[action.dest] = action.default
            action.help += f" (default: {_show(action.default)})"
            action.default = None
    p.set_defaults(shown_defaults=defaults)
    p.add_argument("--attention-scale", type=float, default=1.0,
                   help="V = scale * I (Q = K = I); negative values make attention repulsive")
    p.add_argument("--no-attention", action="store_true", help="switch attention off (V = 0)")
    p.add_argument("--attention", metavar="FILE.npz", default=None,
                   help="Q, K, V from an .npz file (arrays Q, K, V, each (d, d) or (H, d, d))")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..regime import regime
    used = {k: v for k, v in args.shown_defaults.items() if getattr(args, k) is None}
    for k, v in used.items():
        setattr(args, k, v)
    for k in (_MLP_SHOWN if args.field == "rqf" else ("sigma_q",)):
        used.pop(k, None)                  # defaults of the other field's options enter nothing
    if args.attention is not None:
        if args.no_attention:
            raise ParameterError("attention", args.attention, "cannot be combined with --no-attention")
        params = params_from_args(args, **load_attention(args.attention))
    else:
        scale = 0.0 if args.no_attention else check_real("attention_scale", args.attention_scale)
        params = params_from_args(args, V=scale)          # a scalar V means scale * I
    result = regime(params)
    if args.json:
        print_json(dict(result.to_dict(), defaults_used=used))
    else:
        print(result.text())
        if used:
            print("defaults used (options not given): " + ", ".join(f"--{k.replace('_', '-')} {_show(v)}"
                                                                 for k, v in used.items()))
    return 0



def _show(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)
