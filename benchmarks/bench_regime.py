"""Benchmark: ``sssn-verify regime`` from the shell, on a cold and on a warm cache.

Each run is a fresh ``python -m sssn_verify regime ...`` subprocess with its own cache root
(``SSSN_VERIFY_CACHE``): *cold* starts from an empty folder (every derivation runs in
sympy, the bridge writes the generated functions and the kernel tables), *warm* repeats the
same command (the bridge reads them back).  Reported: wall time and CPU time (user + sys of
the child, less sensitive to other jobs on a shared machine), minimum over ``--repeat`` warm
runs, and which heavy modules the warm process imported (measured in a separate run of the
same command through ``runpy``).

    python benchmarks/bench_regime.py                     # relu, erf, sin:3
    python benchmarks/bench_regime.py --activations relu tanh --repeat 5
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--d", "8", "--sigma-w", "1", "--sigma-b", "1", "--sigma-a", "1", "--beta", "1"]
HEAVY = ("sympy", "numba", "scipy.optimize", "scipy.fft", "mpmath")


def _env(cache: str) -> dict:
    env = dict(os.environ, SSSN_VERIFY_CACHE=cache)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall, cpu) seconds of one subprocess."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imported(activation: str, env: dict) -> list[str]:
    code = ("import runpy, sys\n"
            f"sys.argv = ['sssn-verify', 'regime', '--activation', {activation!r}, *{ARGS!r}]\n"
            "try:\n    runpy.run_module('sssn_verify', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            f"print('\\n' + ' '.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1].split() if out.stdout.strip() else []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--activations", nargs="+", default=["relu", "erf", "sin:3"])
    ap.add_argument("--repeat", type=int, default=3, help="warm runs per activation (minimum kept)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for act in args.activations:
        with tempfile.TemporaryDirectory(prefix="sssn_bench_regime_") as cache:
            env = _env(cache)
            cmd = [sys.executable, "-m", "sssn_verify", "regime", "--activation", act, *ARGS]
            cold = timed(cmd, env)
            warm = [timed(cmd, env) for _ in range(args.repeat)]
            rows.append({"activation": act, "cold_wall": cold[0], "cold_cpu": cold[1],
                         "warm_wall": min(w for w, _ in warm), "warm_cpu": min(c for _, c in warm),
                         "warm_imports": imported(act, env)})
    bare = timed([sys.executable, "-c", "import numpy"], dict(os.environ))
    if args.json:
        print(json.dumps({"rows": rows, "python_numpy_start": bare[0]}, indent=2))
        return 0
    print(f"{'activation':10s} {'cold wall':>10s} {'cold cpu':>9s} {'warm wall':>10s} {'warm cpu':>9s}  "
          "heavy modules imported warm")
    for r in rows:
        print(f"{r['activation']:10s} {r['cold_wall']:9.2f}s {r['cold_cpu']:8.2f}s {r['warm_wall']:9.2f}s "
              f"{r['warm_cpu']:8.2f}s  {' '.join(r['warm_imports']) or '-'}")
    print(f"(python + import numpy alone: {bare[0]:.2f}s wall, {bare[1]:.2f}s cpu)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
