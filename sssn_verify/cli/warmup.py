"""``sssn-verify warmup``: compile the numba kernels (and build the bridge's functions) ahead of time.

Runs the smallest case of every engine kernel (simulate for each model, tangent flow, refinement
ladder, the width coupling, one exactly sampled layer) and of ``regime``, so that later commands
start warm; everything lands in the caches (``SSSN_VERIFY_CACHE``, numba's cache) and is reused by
every later process.  The numbers of those runs are discarded.  Measured (relu, 2 cores shared with
other jobs): cold 66 s of CPU (223 s while the kernels used numba's prange), warm 6 s.
"""
from __future__ import annotations

import time

from .common import add_kernel_options, epilog

EXAMPLES = [
    "sssn-verify warmup",
    "sssn-verify warmup --activation tanh",
]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "warmup", help="compile every numba kernel ahead of time (about a CPU minute once; seconds afterwards)",
        description="Compile the engine's numba kernels for one activation (each activation has its own "
                    "compiled module) and build the derived functions regime uses, so that the first "
                    "simulate, verify or check does not pay the compile.", epilog=epilog(EXAMPLES))
    add_kernel_options(p, hidden=False)      # the compiled kernels do not depend on hidden layers
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


def run(args) -> int:
    from ..activations import get_activation
    name = get_activation(args.activation).name
    total = time.perf_counter()
    for label, thunk in steps(name):
        t0 = time.perf_counter()
        thunk()
        print(f"{label}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"warm: numba kernels for {name} compiled and cached ({time.perf_counter() - total:.1f} s)")
    return 0
