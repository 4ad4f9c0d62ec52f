"""``sssn-verify sync-time``: the law of the time two tokens take to come from eps0 to eps.

Prints lambda_1, the log-distance variance rate sigma^2, the mean, std and 0.1/0.5/0.9
quantiles of the synchronization time, p_reach (1 when lambda_1 < 0) and the time by which
the collapse has happened with probability 1 - alpha (and the depth at step ``--delta``).
``--simulate`` adds the empirical first-passage times of two-token runs of the Gaussian
transformer (a Kolmogorov-Smirnov p-value; with ``--plot`` their CDF over the predicted one).
The figure is written through ``outputs`` (target checked before any work, atomic write).
"""
from __future__ import annotations

import argparse
import sys


from ..escape import terminal
from ..errors import ParameterError
from ..outputs import output_path, write_atomic
from ..sync_time import censored_ks
from ..params import check_int, check_real
from .common import add_field_options, add_kernel_options, epilog, params_from_args, print_json

EXAMPLES = [
    "sssn-verify sync-time --activation relu --d 4 --sigma-b 0.5 --eps0 1e-2 --eps 1e-6",
    "sssn-verify sync-time --field rqf --sigma-q 1 --d 5 --eps0 1e-2 --eps 1e-6 --tail-prob 0.05 --delta 0.01 --json",
    "sssn-verify sync-time --activation tanh --d 6 --eps0 1e-2 --eps 1e-4 --simulate --paths 200 --plot cdf.png",
]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sync-time", help="law of the synchronization time of two tokens (eps0 -> eps) and the depth needed",
        description="In the small-distance limit log|x_1 - x_2| is a Brownian motion with drift lambda_1 "
                    "and variance rate sigma^2 (derived); the time to go from eps0 to eps is inverse "
                    "Gaussian when lambda_1 < 0 and reached with probability (eps0/eps)^(-2 lambda_1/sigma^2) "
                    "when lambda_1 > 0. --field rqf: lambda_1 and sigma^2 of the random quadratic form from "
                    "its general-field derivation (the small-distance limits of its two-point motion); "
                    "--simulate then runs its layer.",
        epilog=epilog(EXAMPLES))
    add_kernel_options(p)
    p.add_argument("--d", type=int, default=3, help="ambient dimension (tokens on S^{d-1})")
    add_field_options(p)
    p.add_argument("--eps0", type=float, required=True, help="initial distance |x_1 - x_2| (small)")
    p.add_argument("--eps", type=float, required=True, help="target distance, 0 < eps < eps0")
    p.add_argument("--tail-prob", "--alpha", dest="alpha", type=float, default=0.1, metavar="P",
                   help="report the time (and depth) by which the collapse has happened with probability 1 - P "
                        "(--alpha: the old spelling, deprecated; --alpha elsewhere is a family-wise level)")
    p.add_argument("--delta", type=float, default=None, help="step T/L of the network: report the depth")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="the predicted CDF (and the empirical one)")
    p.add_argument("--simulate", action="store_true",
                   help="also simulate two-token runs of the Gaussian transformer (--field rqf: of the rqf layer) "
                        "and compare")
    p.add_argument("--paths", type=int, default=2000, help="paths for --simulate")
    p.add_argument("--step", type=float, default=0.005, help="layer step for --simulate")
    p.add_argument("--horizon", type=float, default=None,
                   help="longest simulated time (default: the 0.999-quantile, or 10/|lambda_1|)")
    p.add_argument("--seed", type=int, default=0, help="seed of the --simulate runs")
    p.set_defaults(func=run)


def _simulation_horizon(law, horizon) -> float:
    if horizon is not None:
        return check_real("horizon", horizon, 0.0, strict=True)
    if law.lambda1 < 0:
        return law.ppf(0.999)
    return 10.0 / max(abs(law.lambda1), 1e-3)


def run(args: argparse.Namespace) -> int:
    from ..sync_time import first_passage_times, sync_time_law
    alpha = check_real("alpha", args.alpha, 0.0, strict=True, maximum=1.0)
    if alpha >= 1.0:
        raise ParameterError("alpha", alpha, "must lie in (0, 1)")
    delta = None if args.delta is None else check_real("delta", args.delta, 0.0, strict=True)
    plot_path = None
    if args.plot:
        plot_path, note = output_path(args.plot, extensions=(".png",), default_ext=".png", what="--plot")
        if note:
            print(note, file=sys.stderr)
    params = params_from_args(args)
    law = sync_time_law(params, args.eps0, args.eps)
    out = law.to_dict(alpha, delta)
    fp = None
    if args.simulate:
        paths = check_int("paths", args.paths, 2)
        T = _simulation_horizon(law, args.horizon)
        steps = T / check_real("step", args.step, 0.0, strict=True)
        if steps * paths > 2e8:
            raise ParameterError("horizon", T, f"needs {steps:.3g} layers of step {args.step} for {paths} paths: "
                                               "at most 2e8 path-layers (lower --horizon or --paths, raise --step)")
        model = "rqf" if params.field == "rqf" else "gaussian"
        fp = first_passage_times(params, law.eps0, law.eps, model=model, step=args.step, max_time=T, n_paths=paths,
                                 seed=check_int("seed", args.seed, 0), progress=False)
        ks_d, ks_p = censored_ks(fp, law)
        out["simulation"] = {"model": model, "n_paths": paths, "step": args.step,
                             "horizon": fp.max_time, "reached": float(fp.reached.mean()),
                             "predicted_reached": float(law.cdf(fp.max_time)),
                             "mean_of_reached": float(fp.times[fp.reached].mean()) if fp.reached.any() else None,
                             "ks_statistic": ks_d, "ks_pvalue": ks_p}
    if plot_path is not None:
        plot(law, plot_path, fp)
    if args.json:
        print_json(out)
    else:
        print(law.text(alpha, delta))
        if fp is not None:
            s = out["simulation"]
            print(f"simulated ({s['n_paths']} two-token runs, step {s['step']}): reached by t = "
                  f"{s['horizon']:.4g}: {s['reached']:.4f} (predicted {s['predicted_reached']:.4f}); "
                  f"Kolmogorov-Smirnov p = {s['ks_pvalue']:.3g}")
        if plot_path is not None:
            print(f"saved {terminal(plot_path)}")
    return 0


def plot(law, path, fp=None) -> None:
    """The figure of ``sync_time.sync_time_figure``, written atomically."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from ..sync_time import sync_time_figure
    fig = sync_time_figure(law, fp)
    try:
        write_atomic(path, lambda fh: fig.savefig(fh, dpi=110, format="png"), what="--plot")
    finally:
        plt.close(fig)
