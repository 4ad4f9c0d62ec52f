"""``sssn-verify simulate transformer|gaussian|sde|coupled``: run the Monte Carlo engine, save .npz.

The .npz holds ``tokens`` (P, N, D) final tokens, ``energy`` (P, L+1) the energy E_0 after
every layer/step, ``init`` (P, N, D), ``times`` (L+1,) and the run's settings.  ``--plot``
draws the tokens on S^2 (d = 3) or the energy against depth (otherwise).

``simulate coupled --widths 16,64,256,inf``: the widths and m = infinity on one noise
(``engine.simulate_coupled``); ``widths`` (R,) (inf for m = infinity), ``tokens`` (P, R, N, D),
``energy`` (P, R, L+1), ``max_dev`` / ``max_dev_config`` (P, R-1): max over layers of the
deviation from the last system (max over tokens / configuration norm).  ``--plot``: the mean
squared max deviation against m.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ..errors import ParameterError
from ..escape import terminal
from ..numeric.models import REGISTRY
from ..outputs import IMAGE_EXTENSIONS, output_path, write_atomic
from ..params import load_attention
from .common import add_field_options, add_model_options, epilog, params_from_args

EXAMPLES = [
    "sssn-verify simulate gaussian --d 4 --n-tokens 8 --depth 64 --paths 4 --seed 1 --out /tmp/g.npz --plot /tmp/g.png",
    "sssn-verify simulate transformer --d 4 --width 64 --depth 32 --paths 2 --out /tmp/t.npz",
    "sssn-verify simulate rqf --sigma-q 1 --d 5 --n-tokens 8 --depth 64 --paths 4 --no-attention --out /tmp/q.npz",
]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate", help="Monte Carlo: finite-width transformer, Gaussian transformer, the SDE, or widths "
                         "coupled with m = inf",
        description="Simulate the finite-width transformer (--width m), the Gaussian transformer "
                    "(m = infinity) or the limiting SDE (projected Euler, --depth steps), or several "
                    "widths and m = infinity on one noise (coupled --widths 16,64,256,inf); save the "
                    "final tokens and the energy E_0 after every layer to an .npz file.",
        epilog=epilog(EXAMPLES))
    p.add_argument("model", choices=list(REGISTRY), help="a registered model (numeric/models/); rqf and "
                   "rqf_sde: the random quadratic form field (finite depth, Gaussian already; its SDE)")
    p.add_argument("--n-tokens", type=int, default=8, help="number of tokens N")
    add_model_options(p)
    add_field_options(p, choose=False)
    p.add_argument("--width", type=int, default=None, help="MLP width m (transformer only; required there)")
    p.add_argument("--widths", default=None, metavar="M1,M2,..",
                   help="coupled only: the widths on one noise, comma-separated, inf for m = infinity "
                        "(e.g. 16,64,256,inf)")
    p.add_argument("--depth", type=int, required=True, help="number of layers L (SDE: Euler steps)")
    p.add_argument("--horizon", type=float, default=1.0, help="horizon T (step T / L)")
    p.add_argument("--paths", type=int, default=1, help="independent Monte Carlo paths P")
    p.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo (each path its own stream)")
    p.add_argument("--mode", choices=("auto", "exact", "literal"), default="auto",
                   help="transformer MLP sampling: exact-in-law, literal weights, or the cheaper")
    p.add_argument("--init", default=None, metavar="FILE.npy",
                   help="initial tokens, shape (N, D) or (P, N, D) (default: uniform on the sphere)")
    att = p.add_mutually_exclusive_group()
    att.add_argument("--attention", default=None, metavar="FILE.npz",
                     help="attention heads: arrays Q, K, V, each (D, D) or (H, D, D) (default: "
                          "one head, Q = K = V = I)")
    att.add_argument("--no-attention", action="store_true", help="switch attention off (V = 0)")
    p.add_argument("--out", required=True, metavar="FILE.npz",
                   help="the results: tokens (P, N, d), energy (P, L+1) and the parameters")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="also a figure (.png, .pdf or .svg): E_0 against depth (coupled: max deviation against m)")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    from ..executor import add_cli_options
    add_cli_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import engine
    out, note = output_path(args.out, extensions=(".npz",), default_ext=".npz", what="--out")
    plot_path, plot_note = (output_path(args.plot, extensions=IMAGE_EXTENSIONS, default_ext=".png",
                                        what="--plot") if args.plot else (None, None))
    for n in (note, plot_note):
        if n:
            print(f"sssn-verify simulate: {n}", file=sys.stderr)
    init = None
    if args.init is not None:
        from ..inputs import load_npy
        init = load_npy(args.init, what="init")     # a regular file; header checked before the data
    heads = load_attention(args.attention) if args.attention else ({"V": 0.0} if args.no_attention else {})
    from ..numeric.models import MODELS
    model = MODELS[args.model]
    params = params_from_args(args, field=model.fields[0], **heads)   # the model names its field
    width = args.width
    if model.driver == "coupled":
        if args.width is not None:
            raise ParameterError("width", args.width, "the coupled run takes --widths (e.g. 16,64,256,inf)")
        if args.widths is None:
            raise ParameterError("widths", None, "--widths is required for the width coupling (e.g. 16,64,256,inf)")
        from ..numeric.models.coupled import parse_widths
        width = parse_widths(args.widths)
    elif args.widths is not None:
        raise ParameterError("widths", args.widths, "applies only to the coupled model")
    elif model.needs_width and args.width is None:
        raise ParameterError("width", None, f"--width is required for the {model.label}")
    if not model.needs_width and args.width is not None:
        raise ParameterError("width", args.width, f"--width applies only to models with an MLP width, not {args.model}")
    from ..executor import from_cli
    with from_cli(args) as ex:
        res = engine.simulate(args.model, params, args.depth, width, n_paths=args.paths, seed=args.seed,
                              init=init, mode=args.mode, progress=False if args.no_progress else None,
                              executor=None if args.workers is None and args.scheduler is None else ex)
    settings = dict(model=args.model, n_tokens=params.n_tokens, d=params.d, width=args.width,
                    widths=None if args.widths is None else [str(w) for w in width],
                    depth=args.depth, horizon=params.horizon, beta=params.beta,
                    activation=params.activation.name, sigma_w=params.sigma_w, sigma_b=params.sigma_b,
                    sigma_a=params.sigma_a, field=params.field, sigma_q=params.sigma_q,
                    paths=args.paths, seed=args.seed, mode=res.mode,
                    heads=params.n_heads, attention=bool(params.attention_on))
    arrays = dict(tokens=res.tokens, energy=res.energy, init=res.init, times=res.times,
                  settings=json.dumps(settings))
    if model.driver == "coupled":
        arrays.update(widths=np.array(res.widths, dtype=float), max_dev=res.max_dev,
                      max_dev_config=res.max_dev_config)
    write_atomic(out, lambda fh: np.savez(fh, **arrays), what="--out")
    if plot_path:
        from ..plots import save
        save(res.plot(), plot_path)
    if model.driver == "coupled":
        errs = ", ".join(f"m={w}: {e:.3g}" for w, e in zip(res.widths, (res.max_dev ** 2).mean(axis=0)))
        print(f"coupled: P={args.paths} N={params.n_tokens} d={params.d} L={args.depth}: E max_l max_i "
              f"|x^m - x^{res.widths[-1]}|^2 {errs}; saved {terminal(out)}" + (f" and {terminal(plot_path)}" if plot_path else ""))
        return 0
    mean_e = res.energy.mean(axis=0)
    print(f"{args.model}: P={args.paths} N={params.n_tokens} d={params.d} L={args.depth}: "
          f"mean E_0 {mean_e[0]:.4g} -> {mean_e[-1]:.4g}; saved "
          f"{terminal(out)}" + (f" and {terminal(plot_path)}" if plot_path else ""))
    return 0
