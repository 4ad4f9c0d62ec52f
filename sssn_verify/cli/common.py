"""Options shared by several sub-commands, spelled the same everywhere."""
from __future__ import annotations

import argparse
import json
import sys

from ..params import MODEL_DEFAULTS, ModelParams


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (unless it says one already, or it has none: a flag,
    a required option, a default of None); the examples block keeps its lines."""

    def _fill_text(self, text, width, indent):
        if text.startswith("examples:"):
            return "".join(indent + line + "\n" for line in text.splitlines()).rstrip("\n")
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" in text or default is None or default is False or action.nargs == 0
                or default is argparse.SUPPRESS or action.required or not action.option_strings):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {shown})"


def epilog(examples: list[str]) -> str:
    """The examples block that ends a sub-command's --help (each line runnable as it stands)."""
    return "examples:\n" + "\n".join(f"  {e}" for e in examples)


def add_format_options(p: argparse.ArgumentParser, formats: tuple[str, ...], *, default: str) -> None:
    """--format F (one of `formats`) and --json, the same as --format json (every sub-command spells it so)."""
    p.add_argument("--format", choices=formats, default=default, help="output format")
    p.add_argument("--json", action="store_true", help="the same as --format json")


HIDDEN_HELP = ('a hidden layer after the first, "ACT SIGMA_W SIGMA_B" (the last two tokens are the numbers, '
               'the rest the activation); repeat for more layers, in order (default: none, the one-layer block)')


def add_hidden_option(p: argparse.ArgumentParser) -> None:
    """--hidden "ACT SIGMA_W SIGMA_B", repeatable: ModelParams.hidden (the deep MLP block)."""
    p.add_argument("--hidden", action="append", default=None, metavar='"ACT SIGMA_W SIGMA_B"', help=HIDDEN_HELP)


def hidden_from_args(args: argparse.Namespace) -> tuple:
    """The validated ModelParams.hidden of the parsed --hidden options (() without any)."""
    from ..params import check_hidden
    return check_hidden(getattr(args, "hidden", None) or ())


def add_kernel_options(p: argparse.ArgumentParser, *, activation_default: str = MODEL_DEFAULTS["activation"],
                       hidden: bool = True) -> None:
    """--activation, --sigma-w, --sigma-b, --sigma-a (defaults: ModelParams') and, unless `hidden` is
    False, --hidden (repeatable)."""
    p.add_argument("--activation", default=activation_default,
                   help="registry name (relu, leaky_relu:0.1, sin:3, ...) or an expression in u")
    p.add_argument("--sigma-w", type=float, default=MODEL_DEFAULTS["sigma_w"], help="std of each weight coordinate")
    p.add_argument("--sigma-b", type=float, default=MODEL_DEFAULTS["sigma_b"], help="std of the bias")
    p.add_argument("--sigma-a", type=float, default=MODEL_DEFAULTS["sigma_a"],
                   help="std of each output-weight coordinate")
    if hidden:
        add_hidden_option(p)


def add_model_options(p: argparse.ArgumentParser, *, d_default: int = MODEL_DEFAULTS["d"]) -> None:
    """Kernel options plus --d and --beta (defaults: ModelParams')."""
    add_kernel_options(p)
    p.add_argument("--d", type=int, default=d_default, help="ambient dimension (tokens on S^{d-1})")
    p.add_argument("--beta", type=float, default=MODEL_DEFAULTS["beta"], help="attention inverse temperature")


def add_field_options(p: argparse.ArgumentParser, *, choose: bool = True, axis: bool = False,
                      sigma_q_help: str = "", searched: str | None = None) -> None:
    """--field mlp|rqf (unless `choose` is False: the sub-command's model names the field) and --sigma-q S
    (ModelParams.field, sigma_q; the MLP options must keep their defaults with --field rqf, as ModelParams says).
    `axis`: --sigma-q is a text axis of ``scan``'s grammar (a number, a comma list, START:STOP:NUM), parsed by
    ``scan.parse_axis``; `sigma_q_help` is added to its help (what the sub-command does with it); `searched`
    (a range, e.g. "[0.05, 3]"): not given, --sigma-q is searched over it (default None, said in the help)."""
    from ..params import FIELD_CHOICES
    if choose:
        p.add_argument("--field", choices=FIELD_CHOICES, default=MODEL_DEFAULTS["field"],
                       help="the noise: mlp (the random MLP block) or rqf (F(y) = Q y, Q = sigma_q (B + B^T)/2; "
                            "the MLP block's options must then be left unset)")
    text = "rqf: the scale of the random symmetric matrix Q" + (f"; {sigma_q_help}" if sigma_q_help else "")
    if searched is not None:
        p.add_argument("--sigma-q", type=float, default=None, help=text + f" (default: searched over {searched})")
    elif axis:
        p.add_argument("--sigma-q", default=f"{MODEL_DEFAULTS['sigma_q']:g}", help=text + " (an axis)")
    else:
        p.add_argument("--sigma-q", type=float, default=MODEL_DEFAULTS["sigma_q"], help=text)


def params_from_args(args: argparse.Namespace, **overrides) -> ModelParams:
    """The validated ModelParams named by the parsed options."""
    fields = dict(activation=args.activation, sigma_w=args.sigma_w, sigma_b=args.sigma_b,
                  sigma_a=args.sigma_a, hidden=hidden_from_args(args))
    for name in ("d", "beta", "n_tokens", "horizon", "field", "sigma_q"):
        if hasattr(args, name) and getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    fields.update(overrides)
    return ModelParams(**fields)


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, allow_nan=False, default=str)
    sys.stdout.write("\n")


def print_frame(frame, fmt: str) -> None:
    """A DataFrame on stdout: csv (header row, 17 significant digits: the numbers read back exactly; an
    undefined number or undetermined verdict is an empty field), json (one object per row; inf as "inf",
    nan and undetermined as null) or text (an aligned table: a nan number is "undefined", a verdict <NA>
    "undetermined", as regime's text says them)."""
    if fmt == "csv":
        frame.to_csv(sys.stdout, index=False, float_format="%.17g")
    elif fmt == "json":
        print_json([{k: _json_value(v) for k, v in row.items()} for row in frame.to_dict(orient="records")])
    else:
        import pandas as pd
        shown = frame.copy()
        for c in shown.columns:
            if isinstance(shown[c].dtype, pd.BooleanDtype) and shown[c].isna().any():
                shown[c] = shown[c].astype(object).where(shown[c].notna(), "undetermined")
        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            print(shown.to_string(index=False, na_rep="undefined"))


def _json_value(v):
    import math

    import pandas as pd
    if v is pd.NA or v is None:
        return None
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v
