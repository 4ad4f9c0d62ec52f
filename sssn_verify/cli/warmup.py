"""``sssn-verify warmup``: compile the numba kernels (and build the bridge's functions) ahead of time.

Runs the smallest case of every engine kernel (simulate for each model, tangent flow, refinement
ladder, the width coupling, one exactly sampled layer) and of ``regime``, so that later commands
start warm; everything lands in the caches (``SSSN_VERIFY_CACHE``, numba's cache) and is reused by
every later process.  The numbers of those runs are discarded.  Measured (relu, 2 cores shared with
other jobs): cold 66 s of CPU (223 s while the kernels used numba's prange), warm 6 s.
"""
from __future__ import annotations

import time

from .common import add_field_options, add_kernel_options, epilog

EXAMPLES = [
    "sssn-verify warmup",
    "sssn-verify warmup --activation tanh",
    "sssn-verify warmup --field rqf",
]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "warmup", help="compile every numba kernel ahead of time (about a CPU minute once; seconds afterwards)",
        description="Compile the engine's numba kernels for one activation (each activation has its own "
                    "compiled module) and build the derived functions regime uses, so that the first "
                    "simulate, verify or check does not pay the compile. --field rqf: the kernels of the random "
                    "quadratic form instead (its layer and SDE, tangent flow, one-layer rates; scan and regime's "
                    "derived functions), those that simulate rqf|rqf_sde, sync-time --field rqf --simulate and "
                    "verify --claim rqf run.", epilog=epilog(EXAMPLES))
    add_kernel_options(p, hidden=False)      # the compiled kernels do not depend on hidden layers
    add_field_options(p, sigma_q_help="warmup: the kernels do not depend on it")
    p.set_defaults(func=run)


def steps(activation: str):
    """(name, thunk) of every kernel family, smallest sizes (the results are discarded)."""
    import math

    from .. import engine
    from ..params import ModelParams
    from ..regime import regime
    p = ModelParams(d=3, n_tokens=2, activation=activation, sigma_b=0.5)
    return [
        ("regime (bridge functions, kernel table)", lambda: regime(p)),
        ("simulate transformer", lambda: engine.simulate_transformer(p, depth=2, width=4, progress=False)),
        ("simulate gaussian", lambda: engine.simulate_gaussian(p, depth=2, progress=False)),
        ("simulate sde", lambda: engine.simulate_sde(p, depth=2, progress=False)),
        ("tangent flow", lambda: engine.lyapunov_tangent(p, model="gaussian", depth=2, progress=False)),
        ("refinement ladder", lambda: engine.sde_refinement_ladder(p, depth=2, factors=(1, 2), progress=False)),
        ("width coupling", lambda: engine.simulate_coupled(p, depth=2, widths=(4, math.inf), progress=False)),
    ]


def rqf_steps():
    """(name, thunk) of every kernel family of the rqf field (the claim rqf's and simulate's), smallest sizes."""
    import numpy as np

    from .. import engine
    from ..numeric.experiments import model_constants, tangent_layer
    from ..numeric.layer_rates import initial_functional_rate_paths, rate_estimate, two_tokens
    from ..params import ModelParams
    from ..regime import regime
    from ..scan import scan
    p = ModelParams(field="rqf", d=3, n_tokens=2, V=0.0)
    e = np.array([0.6, 0.8, 0.0])
    return [
        ("regime and scan (bridge functions)", lambda: (regime(p), scan(field="rqf", sigma_q=[1.0, 2.0]))),
        ("simulate rqf", lambda: engine.simulate("rqf", p, 2, progress=False, store_every=1)),
        ("simulate rqf_sde", lambda: engine.simulate("rqf_sde", p, 2, progress=False)),
        ("tangent flow", lambda: (engine.lyapunov_tangent(p, model="rqf", depth=2, progress=False),
                                  tangent_layer("rqf", p.with_(n_tokens=1), 0.01, 4, 0, levels=2))),
        ("one-layer rates", lambda: (
            initial_functional_rate_paths(np.eye(3)[:1], model_constants("rqf", p.with_(n_tokens=1)), "linear", 4, 0,
                                          a=e, delta=0.01, model="rqf"),
            rate_estimate(two_tokens(3, 0.5), model_constants("rqf", p), 0.0, 4, 0, delta=0.01, model="rqf",
                          kind="projective_log_distance"))),
    ]


def run(args) -> int:
    from ..activations import get_activation
    from .common import params_from_args
    params_from_args(args)            # the field's rule: with --field rqf the MLP options keep their defaults
    name = "rqf" if args.field == "rqf" else get_activation(args.activation).name
    total = time.perf_counter()
    for label, thunk in (rqf_steps() if args.field == "rqf" else steps(name)):
        t0 = time.perf_counter()
        thunk()
        print(f"{label}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"warm: numba kernels for {'the rqf field' if name == 'rqf' else name} compiled and cached "
          f"({time.perf_counter() - total:.1f} s)")
    return 0
