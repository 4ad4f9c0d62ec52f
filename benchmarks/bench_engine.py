"""Benchmark: the numba engine against a plain vectorised numpy transformer.

Both simulate the finite-width transformer of docs/mathematics.md, section 1 (ReLU, Q = K = V = I) on the
four sizes of issue 3.  The numpy implementation is the obvious one: batched matmul over
paths, a numpy Generator drawing the literal weights (W: d x m, b: m, A: m x d per layer and
path).  The engine runs with mode="auto" (exact-in-law sampling where it is cheaper).

Every measurement runs in a fresh subprocess with the thread count fixed by environment
variables (NUMBA_NUM_THREADS for the engine, OPENBLAS/OMP/MKL_NUM_THREADS for numpy's BLAS),
so "whole process" is the subprocess wall time (imports, numba cache load, set-up and the
run) and "compute" is the timed call alone after a warm-up.  Ratios are numpy time / engine
time measured in the same run (minimum over ``--repeat`` interleaved runs): on a shared
machine only same-run ratios mean anything.

    python benchmarks/bench_engine.py            # all sizes, 1 and 2 threads
    python benchmarks/bench_engine.py --quick    # shorter (L / 4, fewer paths)
    python benchmarks/bench_engine.py --sizes small-N mid --threads 1
    python benchmarks/bench_engine.py --compare /path/to/other/checkout   # before/after, same run

``--compare DIR`` also times the engine of another source tree (e.g. ``git worktree`` or
``git archive`` of an older commit) in the same interleaved loop and prints its ratio too, so
a refactor's speed is judged on one machine state.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

SIZES = {
    # name: (N, d, m, L, paths)
    "small-N": (4, 16, 1024, 256, 64),
    "wide-MLP": (64, 32, 4096, 64, 32),
    "attention-heavy": (512, 16, 256, 64, 32),
    "mid": (32, 16, 512, 128, 96),
}


def numpy_transformer(X, depth, width, horizon=1.0, beta=1.0, sw=1.0, sb=0.5, sa=1.0, seed=0):
    """Plain numpy: literal weights from a Generator, batched matmul over paths (ReLU)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    P, N, d = X.shape
    delta = horizon / depth
    sq = math.sqrt(delta)
    energy = np.empty((P, depth + 1))
    energy[:, 0] = 0.5 * (1.0 - np.sum(X.mean(axis=1) ** 2, axis=-1))
    for layer in range(depth):
        s = beta * (X @ X.transpose(0, 2, 1))
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        Y = X + delta * (s @ X)
        Y /= np.linalg.norm(Y, axis=-1, keepdims=True)
        W = rng.standard_normal((P, d, width))
        b = rng.standard_normal((P, 1, width))
        A = rng.standard_normal((P, width, d))
        H = np.maximum(sw * (Y @ W) + sb * b, 0.0)
        Z = Y + (sq * sa / math.sqrt(width)) * (H @ A)
        X = Z / np.linalg.norm(Z, axis=-1, keepdims=True)
        energy[:, layer + 1] = 0.5 * (1.0 - np.sum(X.mean(axis=1) ** 2, axis=-1))
    return X, energy


def _worker(impl: str, size: str, quick: bool) -> dict:
    import numpy as np
    N, d, m, L, P = _dims(size, quick)
    X0 = np.random.default_rng(1).standard_normal((P, N, d))
    X0 /= np.linalg.norm(X0, axis=-1, keepdims=True)
    if impl == "numpy":
        numpy_transformer(X0[:1, :2], 2, 8)  # warm-up
        t = time.perf_counter()
        numpy_transformer(X0, L, m)
        return {"compute": time.perf_counter() - t}
    import numba
    from sssn_verify import ModelParams
    from sssn_verify.engine import simulate_transformer
    params = ModelParams(d=d, n_tokens=N, horizon=1.0, beta=1.0, sigma_w=1.0, sigma_b=0.5, sigma_a=1.0)
    simulate_transformer(params, 1, m, n_paths=1, seed=0, init=X0[:1], progress=False)  # load/compile
    t = time.perf_counter()
    res = simulate_transformer(params, L, m, n_paths=P, seed=0, init=X0, progress=False)
    return {"compute": time.perf_counter() - t, "mode": res.mode, "threads": numba.get_num_threads()}


def _dims(size, quick):
    N, d, m, L, P = SIZES[size]
    if quick:
        L, P = max(4, L // 4), max(2, P // 4)
    return N, d, m, L, P


def _measure(impl, size, threads, quick, tree=None):
    env = dict(os.environ)
    blas = "1" if impl == "engine" else str(threads)  # the engine parallelises over paths
    env.update(NUMBA_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=blas, OMP_NUM_THREADS=blas,
               MKL_NUM_THREADS=blas)
    if tree is not None:
        env["PYTHONPATH"] = os.path.abspath(tree)
        env["SSSN_VERIFY_CACHE"] = env.get("SSSN_VERIFY_CACHE", "/tmp/sssn_cache") + "_compare"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", impl, "--size", size]
    if quick:
        cmd.append("--quick")
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    whole = time.perf_counter() - t
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["whole"] = whole
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="L / 4 and a quarter of the paths")
    ap.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per measurement, interleaved numpy/engine; the minimum is kept")
    ap.add_argument("--compare", default=None, metavar="DIR",
                    help="also time the engine of the source tree DIR (same run, interleaved)")
    ap.add_argument("--worker", choices=["engine", "numpy"], help=argparse.SUPPRESS)
    ap.add_argument("--size", choices=list(SIZES), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.size, args.quick)))
        return 0
    print(f"cores: {os.cpu_count()}; {'quick' if args.quick else 'full'} run; ratios = numpy / engine "
          "(same run), "
          f"minimum of {args.repeat} interleaved runs each")
    header = (f"{'size':16s} {'thr':>3s} {'mode':>9s} {'numpy s':>8s} {'engine s':>8s} {'compute x':>9s} "
              f"{'np whole':>8s} {'en whole':>8s} {'whole x':>8s}")
    print(header)
    rows = []
    for size in args.sizes:
        for threads in args.threads:
            runs = {"numpy": [], "engine": [], "compare": []}
            for _ in range(max(1, args.repeat)):
                for impl in ("numpy", "engine"):
                    runs[impl].append(_measure(impl, size, threads, args.quick))
                if args.compare:
                    runs["compare"].append(_measure("engine", size, threads, args.quick, args.compare))
            npy, eng = ({"compute": min(r["compute"] for r in rs), "whole": min(r["whole"] for r in rs),
                         "mode": rs[0].get("mode", "")} for rs in (runs["numpy"], runs["engine"]))
            row = dict(size=size, threads=threads, mode=eng["mode"], numpy=npy["compute"],
                       engine=eng["compute"], numpy_whole=npy["whole"], engine_whole=eng["whole"])
            rows.append(row)
            print(f"{size:16s} {threads:3d} {eng['mode']:>9s} {npy['compute']:8.2f} {eng['compute']:8.2f} "
                  f"{npy['compute'] / eng['compute']:9.2f} {npy['whole']:8.2f} {eng['whole']:8.2f} "
                  f"{npy['whole'] / eng['whole']:8.2f}", flush=True)
            if args.compare:
                cmp = {"compute": min(r["compute"] for r in runs["compare"]),
                       "whole": min(r["whole"] for r in runs["compare"])}
                row.update(compare=cmp["compute"], compare_whole=cmp["whole"])
                print(f"{'  (--compare)':16s} {threads:3d} {'':>9s} {npy['compute']:8.2f} {cmp['compute']:8.2f} "
                      f"{npy['compute'] / cmp['compute']:9.2f} {npy['whole']:8.2f} {cmp['whole']:8.2f} "
                      f"{npy['whole'] / cmp['whole']:8.2f}", flush=True)
    if len(args.threads) > 1:
        print("\nengine throughput, threads t vs 1 (same run; ~2 means both cores were free):")
        for size in args.sizes:
            base = next(r for r in rows if r["size"] == size and r["threads"] == args.threads[0])
            for r in rows:
                if r["size"] == size and r["threads"] != args.threads[0]:
                    print(f"  {size:16s} {r['threads']} threads: engine {base['engine'] / r['engine']:.2f}x, "
                          f"numpy {base['numpy'] / r['numpy']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
