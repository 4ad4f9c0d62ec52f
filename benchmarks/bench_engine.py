"""Benchmark: the engine against the two peers, and against this machine's roofline.

The model is the finite-width transformer of docs/mathematics.md, section 1 (ReLU,
Q = K = V = I, beta = 1, T = 1, sigma = (1, 0.5, 1)) on the four sizes below.  In one run,
interleaved, each measurement a fresh process (the minimum of ``--repeat`` is kept):

* the peers of ``../shared/peers`` (``--peers``): ``baseline_numpy.py`` (vectorised numpy,
  batched BLAS products) and ``baseline_jax.py`` (JAX jit on CPU), whole process, with
  ``--threads`` BLAS / XLA threads;
* the engine as a user runs it, ``python -m sssn_verify simulate transformer ... --mode auto``
  (whole process, ``NUMBA_NUM_THREADS`` = threads, no other setting: the engine itself keeps
  BLAS single-threaded inside its kernels, which run one path per thread);
* the engine's compute alone for each of ``--modes`` (timed call after a warm-up, in a fresh
  process), and the roofline of that mode: the normals the mode draws per layer and path at
  this machine's measured generator rate plus its matrix products at their measured BLAS
  speed (``rates`` below, measured in the same run, on the same threads).  The softmax's
  exponentials, the activation and the projections are not in the bound.

    python benchmarks/bench_engine.py                       # four sizes, 2 threads
    python benchmarks/bench_engine.py --quick               # L / 4, a quarter of the paths
    python benchmarks/bench_engine.py --sizes mid --splits  # also numba-1 x BLAS-t threads
    python benchmarks/bench_engine.py --peer-python /tmp/jaxenv/bin/python   # JAX lives there

Ratios are from the same run only: the machine's cores are shared, absolute times and
cross-run comparisons mean little.  ``--json FILE`` keeps every number.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {
    # name: (N, d, m, L, paths)
    "small-N": (4, 16, 1024, 256, 64),
    "wide-MLP": (64, 32, 4096, 64, 32),
    "attention-heavy": (512, 16, 256, 64, 32),
    "mid": (32, 16, 512, 128, 256),   # issue 26's mid size (the peers' README too)
}
REPO = Path(__file__).resolve().parents[1]
PEERS = {"numpy": "baseline_numpy.py", "jax": "baseline_jax.py"}
MODES = {"exact": (True, True), "literal": (False, False), "exact-pre": (True, False),
         "exact-out": (False, True)}


def _dims(size, quick):
    N, d, m, L, P = SIZES[size]
    if quick:
        L, P = max(4, L // 4), max(2, P // 4)
    return N, d, m, L, P


# ------------------------------------------------------------------ work per layer and path
def layer_work(N, d, m, pre_exact, out_exact):
    """(normals, products) one layer of one path draws and multiplies in a mode.

    products: (a, b, c) for an (a x b) @ (b x c) matrix product.  Attention (Q = K = V = I,
    one head): the scores X X^T and the mixing S X.  Pre-activations: exact through the rank
    r = min(N, d + 1) factor of their covariance (r m normals, L @ xi), literal (d + 1) m normals
    and Y @ W.  Outputs: exact through the Gram matrix of the hidden rows (H H^T; min(N, m) d
    normals), literal m d normals and H @ A.
    """
    r, q = min(N, d + 1), min(N, m)
    products = [(N, d, N), (N, N, d)]
    normals = 0
    if pre_exact:
        normals += r * m
        products.append((N, r, m))
    else:
        normals += (d + 1) * m
        products.append((N, d, m))
    if out_exact:
        normals += q * d
        products += [(N, m, N), (N, q, d)]
    else:
        normals += m * d
        products.append((N, m, d))
    return normals, products


# ------------------------------------------------------------------ workers (fresh processes)
def _rates_worker(shapes) -> dict:
    """Generator and BLAS rates on numba's threads (one stream / one product per thread)."""
    import numba
    import numpy as np
    from numba import njit, prange

    from sssn_verify.numeric.blas_threads import single_threaded_blas
    from sssn_verify.numeric.fields import fill_normal, rng_state

    threads = numba.get_num_threads()

    @njit(parallel=True)
    def draws(n_streams, n, reps):
        tot = 0.0
        for p in prange(n_streams):
            st = rng_state(p + 1)
            buf = np.empty(n)
            for _ in range(reps):
                fill_normal(st, buf)
            tot += buf[0]
        return tot

    @njit(parallel=True)
    def products(n_streams, a, b, c, reps):
        tot = 0.0
        for p in prange(n_streams):
            A = np.ones((a, b)) * (p + 1.0)
            B = np.ones((b, c))
            C = np.empty((a, c))
            for _ in range(reps):
                np.dot(A, B, C)
            tot += C[0, 0]
        return tot

    def best_of(fn, *args, k=3):
        with single_threaded_blas(threads > 1):  # as in the engine: threads over products, BLAS on one each
            return _best_of(fn, *args, k=k)

    def _best_of(fn, *args, k=3):
        fn(*args)
        best = float("inf")
        for _ in range(k):
            t = time.perf_counter()
            fn(*args)
            best = min(best, time.perf_counter() - t)
        return best

    streams = 4 * threads
    n, reps = 1 << 15, 16
    rate = streams * n * reps / best_of(draws, streams, n, reps)
    one = np.empty(n * reps)
    np_rates = {}
    for name, bitgen in (("PCG64", np.random.PCG64), ("SFC64", np.random.SFC64)):
        g = np.random.Generator(bitgen(0))
        np_rates[name] = n * reps / best_of(lambda: g.standard_normal(out=one))
    st1 = n * reps / best_of(draws, 1, n, reps)
    per_product = {}
    for a, b, c in shapes:
        k = max(2, int(2e7 / (a * b * c)))
        per_product[f"{a}x{b}x{c}"] = best_of(products, streams, a, b, c, k) / (streams * k)
    return {"threads": threads, "normals_per_s": rate, "normals_per_s_1thread": st1,
            "numpy_normals_per_s_1thread": np_rates, "product_s": per_product}


def _engine_worker(size, quick, mode) -> dict:
    import numba
    import numpy as np

    from sssn_verify import ModelParams
    from sssn_verify.engine import simulate_transformer
    N, d, m, L, P = _dims(size, quick)
    params = ModelParams(d=d, n_tokens=N, horizon=1.0, beta=1.0, sigma_w=1.0, sigma_b=0.5, sigma_a=1.0)
    simulate_transformer(params, 1, m, n_paths=1, seed=0, mode=mode, progress=False)  # load the kernels
    t = time.perf_counter()
    res = simulate_transformer(params, L, m, n_paths=P, seed=0, mode=mode, progress=False)
    return {"compute": time.perf_counter() - t, "mode": res.mode, "threads": numba.get_num_threads(),
            "E0_mean": float(np.mean(res.energy[:, -1]))}


# ------------------------------------------------------------------ timing fresh processes
def _env(numba_threads, blas_threads=None):
    env = dict(os.environ)
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS"):
        env.pop(k, None)
    env["NUMBA_NUM_THREADS"] = str(numba_threads)
    if blas_threads is not None:
        env.update(OPENBLAS_NUM_THREADS=str(blas_threads), OMP_NUM_THREADS=str(blas_threads),
                   MKL_NUM_THREADS=str(blas_threads))
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _timed(cmd, env) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    whole = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return whole, out.stdout


def _last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def run_peer(name, python, peers, size, threads, quick) -> dict:
    N, d, m, L, P = _dims(size, quick)
    cmd = [python, str(Path(peers) / PEERS[name]), "--N", str(N), "--d", str(d), "--m", str(m),
           "--L", str(L), "--paths", str(P), "--seed", "0", "--T", "1", "--beta", "1", "--sw", "1",
           "--sb", "0.5", "--sa", "1", "--threads", str(threads)]
    env = _env(threads)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    whole, out = _timed(cmd, env)
    data = _last_json(out)
    return {"whole": whole, "loop": data.get("loop_s"), "E0_mean": data.get("E0_mean")}


def run_engine_cli(size, threads, quick, tree=REPO) -> dict:
    N, d, m, L, P = _dims(size, quick)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "sssn_verify", "simulate", "transformer", "--n-tokens", str(N),
               "--d", str(d), "--width", str(m), "--depth", str(L), "--paths", str(P), "--seed", "0",
               "--beta", "1", "--sigma-w", "1", "--sigma-b", "0.5", "--sigma-a", "1", "--mode", "auto",
               "--no-progress", "--out", os.path.join(tmp, "run.npz")]
        env = _env(threads)
        env["PYTHONPATH"] = str(Path(tree).resolve())
        if Path(tree).resolve() != REPO:  # another version's generated modules live in their own cache
            env["XDG_CACHE_HOME"] = str(Path(tree).resolve() / ".bench-cache")
            env.pop("SSSN_VERIFY_CACHE", None)
        whole, _ = _timed(cmd, env)
    return {"whole": whole}


def run_worker(kind, threads, blas_threads=None, **kw) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--worker-args", json.dumps(kw)]
    whole, out = _timed(cmd, _env(threads, blas_threads))
    data = _last_json(out)
    data["whole"] = whole
    return data


# ------------------------------------------------------------------ the run
def _bound(size, quick, mode, rates):
    N, d, m, L, P = _dims(size, quick)
    normals, products = layer_work(N, d, m, *MODES[mode])
    # both rates are aggregates over the threads (every thread busy): seconds per path-layer
    per_path_layer = (normals / rates["normals_per_s"]
                      + sum(rates["product_s"][f"{a}x{b}x{c}"] for a, b, c in products))
    return P * L * per_path_layer, normals, products


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="L / 4 and a quarter of the paths")
    ap.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs per measurement (minimum kept)")
    ap.add_argument("--modes", nargs="+", choices=["auto", "exact", "literal"], default=["auto", "exact", "literal"],
                    help="engine modes timed (compute) against their roofline")
    ap.add_argument("--peers", default=os.environ.get("SSSN_VERIFY_PEERS", str(REPO.parent / "shared" / "peers")),  # /work/main -> /work/shared/peers
                    help="folder of the peer implementations (default: ../shared/peers of the checkout)")
    ap.add_argument("--peer-python", default=sys.executable, help="python that runs the peers (JAX needs jax)")
    ap.add_argument("--no-peers", action="store_true", help="engine and roofline only")
    ap.add_argument("--splits", action="store_true",
                    help="also time the other thread split (1 numba thread, BLAS with --threads threads)")
    ap.add_argument("--compare", default=None, metavar="DIR",
                    help="also time the engine (CLI, whole process) of the source tree DIR, same run")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--worker", choices=["engine", "rates"], help=argparse.SUPPRESS)
    ap.add_argument("--worker-args", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        kw = json.loads(args.worker_args)
        out = _rates_worker([tuple(s) for s in kw["shapes"]]) if args.worker == "rates" else _engine_worker(**kw)
        print(json.dumps(out))
        return 0
    peers = [] if args.no_peers else [p for p in PEERS if (Path(args.peers) / PEERS[p]).exists()]
    if not args.no_peers and len(peers) < len(PEERS):
        print(f"note: peers not found in {args.peers}: {sorted(set(PEERS) - set(peers))}")
    t = args.threads
    print(f"cores: {os.cpu_count()}; {'quick' if args.quick else 'full'} run; {t} threads; minimum of "
          f"{args.repeat} interleaved fresh processes; peers: {', '.join(peers) or 'none'}")
    shapes = sorted({s for size in args.sizes for mode in MODES
                     for s in layer_work(*_dims(size, args.quick)[:3], *MODES[mode])[1]})
    record = {"threads": t, "quick": args.quick, "sizes": {}}
    rates = None
    for size in args.sizes:
        runs = {k: [] for k in peers + ["engine"] + [f"mode:{m}" for m in args.modes]
                + (["split:blas"] if args.splits else []) + (["compare"] if args.compare else [])}
        for rep in range(max(1, args.repeat)):
            for name in peers:
                runs[name].append(run_peer(name, args.peer_python, args.peers, size, t, args.quick))
            runs["engine"].append(run_engine_cli(size, t, args.quick))
            if args.compare:
                runs["compare"].append(run_engine_cli(size, t, args.quick, args.compare))
            for mode in args.modes:
                runs[f"mode:{mode}"].append(run_worker("engine", t, size=size, quick=args.quick, mode=mode))
            if args.splits:
                runs["split:blas"].append(run_worker("engine", 1, t, size=size, quick=args.quick, mode="auto"))
            if rates is None or rep == 0:  # rates measured amid the same run, once per size
                r = run_worker("rates", t, shapes=shapes)
                if rates is None:
                    rates = r
                else:  # keep the best rate seen (the minimum time of each)
                    rates["normals_per_s"] = max(rates["normals_per_s"], r["normals_per_s"])
                    rates["normals_per_s_1thread"] = max(rates["normals_per_s_1thread"], r["normals_per_s_1thread"])
                    for k, v in r["product_s"].items():
                        rates["product_s"][k] = min(rates["product_s"][k], v)
                    for k, v in r["numpy_normals_per_s_1thread"].items():
                        rates["numpy_normals_per_s_1thread"][k] = max(rates["numpy_normals_per_s_1thread"][k], v)
        best = {k: {f: min(r[f] for r in v) for f in ("whole", "compute") if f in v[0]} | (
            {"mode": v[0]["mode"]} if "mode" in v[0] else {}) for k, v in runs.items() if v}
        record["sizes"][size] = {"dims": _dims(size, args.quick), "runs": runs, "best": best}
        record["rates"] = rates
        print(f"  {size}: " + ", ".join(f"{k} {v.get('compute', v['whole']):.2f} s" for k, v in best.items()),
              flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(record, indent=1))
    _report(record, peers, args)
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0


def _report(record, peers, args):
    rates = record["rates"]
    print(f"\nrates ({rates['threads']} threads): engine normals {rates['normals_per_s'] / 1e6:.0f} M/s "
          f"({rates['normals_per_s_1thread'] / 1e6:.0f} M/s on one thread; numpy one thread: "
          + ", ".join(f"{k} {v / 1e6:.0f} M/s" for k, v in rates["numpy_normals_per_s_1thread"].items()) + ")")
    print("\nwhole process, engine = `simulate transformer --mode auto`; x = faster peer / engine")
    head = f"{'size':16s} {'N,d,m,L,P':>20s} " + "".join(f"{p + ' s':>9s}" for p in peers) + \
        f"{'engine s':>9s} {'x peer':>7s}" + (f" {'compare s':>9s}" if args.compare else "")
    print(head)
    for size, rec in record["sizes"].items():
        b = rec["best"]
        line = f"{size:16s} {','.join(map(str, rec['dims'])):>20s} " + "".join(f"{b[p]['whole']:9.2f}" for p in peers)
        line += f"{b['engine']['whole']:9.2f}"
        line += f" {min(b[p]['whole'] for p in peers) / b['engine']['whole']:7.2f}" if peers else f" {'':>7s}"
        if args.compare:
            line += f" {b['compare']['whole']:9.2f}"
        print(line)
    print("\nengine compute (timed call, fresh process) vs roofline (normals at the measured rate + products at "
          "the measured BLAS speed); x = engine / roofline")
    print(f"{'size':16s} {'mode':>9s} {'normals':>8s} {'Mmac':>7s} {'bound s':>8s} {'engine s':>9s} {'x bound':>8s}"
          f" {'whole s':>8s} {'x bound':>8s}")
    for size, rec in record["sizes"].items():
        N, d, m, L, P = rec["dims"]
        for mode in args.modes:
            b = rec["best"][f"mode:{mode}"]
            label = b["mode"]
            bound, normals, products = _bound(size, args.quick, label, rates)
            mac = sum(a * bb * c for a, bb, c in products) / 1e6
            b["bound"] = bound
            print(f"{size:16s} {label:>9s} {normals:8d} {mac:7.2f} {bound:8.2f} {b['compute']:9.2f} "
                  f"{b['compute'] / bound:8.2f} {b['whole']:8.2f} {b['whole'] / bound:8.2f}")
    if args.splits:
        print("\nthread split (auto mode, compute): numba threads over paths + 1 BLAS thread vs 1 numba thread + "
              f"{record['threads']} BLAS threads")
        for size, rec in record["sizes"].items():
            a, s = rec["best"]["mode:auto"]["compute"], rec["best"]["split:blas"]["compute"]
            print(f"  {size:16s} paths {a:7.2f} s   blas {s:7.2f} s   (blas / paths {s / a:.2f})")


if __name__ == "__main__":
    sys.exit(main())
