"""Options shared by several sub-commands, spelled the same everywhere."""
from __future__ import annotations

import argparse
import json
import sys

from ..params import ModelParams


def add_kernel_options(p: argparse.ArgumentParser, *, activation_default: str = "relu") -> None:
    """--activation, --sigma-w, --sigma-b, --sigma-a."""
    p.add_argument("--activation", default=activation_default,
                   help="registry name (relu, leaky_relu:0.1, sin:3, ...) or an expression in u")
    p.add_argument("--sigma-w", type=float, default=1.0, help="std of each weight coordinate")
    p.add_argument("--sigma-b", type=float, default=0.0, help="std of the bias")
    p.add_argument("--sigma-a", type=float, default=1.0, help="std of each output-weight coordinate")


def add_model_options(p: argparse.ArgumentParser, *, d_default: int = 3) -> None:
    """Kernel options plus --d and --beta."""
    add_kernel_options(p)
    p.add_argument("--d", type=int, default=d_default, help="ambient dimension (tokens on S^{d-1})")
    p.add_argument("--beta", type=float, default=1.0, help="attention inverse temperature")


def params_from_args(args: argparse.Namespace, **overrides) -> ModelParams:
    """The validated ModelParams named by the parsed options."""
    fields = dict(activation=args.activation, sigma_w=args.sigma_w, sigma_b=args.sigma_b,
                  sigma_a=args.sigma_a)
    for name in ("d", "beta", "n_tokens", "horizon"):
        if hasattr(args, name) and getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    fields.update(overrides)
    return ModelParams(**fields)


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, allow_nan=False, default=str)
    sys.stdout.write("\n")
