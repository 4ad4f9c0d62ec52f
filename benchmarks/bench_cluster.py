"""A 2-worker dask LocalCluster against in-process, on the toolkit's real workloads.

Measures, in one run (ratios from the same run; the machine may be shared):

1. campaign: ``verify --quick --seeds 0:S`` on a few claims (claims x seeds tasks);
2. empirical phase diagram: ``phase-diagram --confirm`` on a modest grid (one task per cell);
3. per-task overhead: many no-op tasks through each executor;
4. workers compile for themselves: a fresh cluster whose workers have private, empty
   caches (``SSSN_VERIFY_CACHE`` and ``NUMBA_CACHE_DIR``): the first task on each worker
   (generates the activation module and compiles the kernels) against the second one.

In-process runs use numba's threads (all cores); each cluster worker runs one task at a
time with cores / workers numba threads.  Every distributed result is checked to be
bit-identical to the in-process one.

    python benchmarks/bench_cluster.py            # ~10 min on a busy 2-core box
    python benchmarks/bench_cluster.py --quick    # smaller campaign and grid
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from sssn_verify.executor import Distributed, InProcess, Task
from sssn_verify.phase_diagram import confirm_cell, confirm_grid
from sssn_verify.verify import campaign


def _noop(i: int) -> int:
    return i


def _estimates(res):
    return [(c.estimate, c.stderr, c.pvalue) for s in res.suites for r in s.results for c in r.checks]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_campaign(ex, claims, seeds):
    ref, t_in = timed(lambda: campaign("quick", claims, seeds))
    res, t_cl = timed(lambda: campaign("quick", claims, seeds, executor=ex))
    assert _estimates(res) == _estimates(ref), "cluster campaign differs from in-process"
    task_s = [t["seconds"] for t in res.timings]
    return {"claims": claims, "seeds": len(seeds), "tasks": len(task_s), "in_process_s": t_in,
            "cluster_s": t_cl, "speedup": t_in / t_cl, "task_s_median": float(np.median(task_s)),
            "task_s_max": float(np.max(task_s)), "identical": True}


def bench_phase(ex, nx, ny, budget):
    xs, ys = np.arange(2, 2 + nx), np.linspace(0.0, 2.0, ny)
    ref, t_in = timed(lambda: confirm_grid("relu", "d", "sigma_b", xs, ys, budget=budget))
    res, t_cl = timed(lambda: confirm_grid("relu", "d", "sigma_b", xs, ys, budget=budget, executor=ex))
    assert ref.lambda1.tobytes() == res.lambda1.tobytes()
    assert ref.energy_rate.tobytes() == res.energy_rate.tobytes()
    task_s = [t["seconds"] for t in res.timings]
    return {"grid": f"{nx}x{ny}", "cells": nx * ny, "budget": budget, "in_process_s": t_in, "cluster_s": t_cl,
            "speedup": t_in / t_cl, "task_s_median": float(np.median(task_s)), "identical": True}


def bench_overhead(ex, n):
    tasks = [Task(f"noop{i}", _noop, (i,)) for i in range(n)]
    ex.run(tasks[:10])                                       # warm the connection
    _, t_cl = timed(lambda: ex.run(tasks))
    _, t_in = timed(lambda: InProcess().run(tasks))
    return {"tasks": n, "cluster_per_task_ms": 1e3 * t_cl / n, "in_process_per_task_ms": 1e3 * t_in / n}


def bench_compile():
    """Fresh workers, private empty caches: first vs second task per worker (same work, other seed)."""
    point = dict(d=6, sigma_w=1.0, sigma_b=0.7, sigma_a=1.0, beta=0.0)
    budget = {"paths": 500, "depth": 32, "horizon": 1.0, "gap0": 1e-4}
    act = "u*tanh(u) + 0.25*sin(2*u)"    # a user expression: its module is generated on the worker
    with tempfile.TemporaryDirectory() as numba_dir:
        t0 = time.perf_counter()
        ex = Distributed.local(2, private_cache=True, env_extra={"NUMBA_CACHE_DIR": numba_dir})
        start = time.perf_counter() - t0
        try:
            addrs = sorted(ex.client.scheduler_info()["workers"])
            rows = []
            for k in range(3):   # three rounds: one task per worker each, pinned
                futs = [ex.client.submit(_timed_cell, act, point, budget, 100 * k + w, workers=[a], pure=False)
                        for w, a in enumerate(addrs)]
                rows.append(ex.client.gather(futs))
            caches = ex.client.run(lambda: os.environ.get("SSSN_VERIFY_CACHE"))
        finally:
            ex.close()
    firsts, seconds = [r[0] for r in rows[0]], [r[0] for r in rows[1] + rows[2]]
    return {"cluster_start_s": start, "first_task_s": firsts, "later_task_s": seconds,
            "first_over_later": float(np.mean(firsts) / np.mean(seconds)),
            "worker_caches_distinct": len(set(caches.values())) == len(caches),
            "worker_caches": sorted(caches.values())}


def _timed_cell(act, point, budget, seed):
    t0 = time.perf_counter()
    confirm_cell(act, point, budget, seed)
    return time.perf_counter() - t0, os.getpid()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    a = ap.parse_args(argv)
    seeds = list(range(2 if a.quick else 4))
    claims = ["two_point", "lyapunov"] if not a.quick else ["two_point"]
    grid = (4, 4) if a.quick else (8, 8)
    budget = {"paths": 1000, "depth": 32}
    out = {"cores": os.cpu_count(), "workers": a.workers, "load_before": os.getloadavg()[0]}
    # warm this process's caches so in-process times exclude compilation (as the cluster's do)
    campaign("quick", claims, [99])
    confirm_grid("relu", "d", "sigma_b", [3], [0.5], budget=budget)
    t0 = time.perf_counter()
    with Distributed.local(a.workers) as ex:
        out["cluster_start_s"] = time.perf_counter() - t0
        _, out["cluster_warmup_s"] = timed(lambda: (            # each worker loads its kernels once
            campaign("quick", claims, [98, 97], executor=ex),
            confirm_grid("relu", "d", "sigma_b", [3, 4], [0.5, 1.0], budget=budget, executor=ex)))
        out["campaign"] = bench_campaign(ex, claims, seeds)
        out["phase_diagram"] = bench_phase(ex, *grid, budget)
        out["overhead"] = bench_overhead(ex, 300)
    out["compile"] = bench_compile()
    out["load_after"] = os.getloadavg()[0]
    c, p, o, k = out["campaign"], out["phase_diagram"], out["overhead"], out["compile"]
    print(f"cores {out['cores']}, load {out['load_before']:.1f} -> {out['load_after']:.1f}; "
          f"LocalCluster({a.workers}) start {out['cluster_start_s']:.1f}s, warm-up {out['cluster_warmup_s']:.1f}s")
    print(f"campaign {'+'.join(c['claims'])} x {c['seeds']} seeds ({c['tasks']} tasks): in-process "
          f"{c['in_process_s']:.1f}s, cluster {c['cluster_s']:.1f}s, speed-up {c['speedup']:.2f}x "
          f"(task median {c['task_s_median']:.2f}s, max {c['task_s_max']:.2f}s); identical")
    print(f"phase diagram {p['grid']} ({p['cells']} cells, {budget['paths']} paths, L={budget['depth']}): "
          f"in-process {p['in_process_s']:.1f}s, cluster {p['cluster_s']:.1f}s, speed-up {p['speedup']:.2f}x "
          f"(task median {p['task_s_median']:.3f}s); identical")
    print(f"per-task overhead: cluster {o['cluster_per_task_ms']:.2f} ms, in-process "
          f"{o['in_process_per_task_ms']:.3f} ms ({o['tasks']} no-op tasks)")
    print(f"compile on fresh workers with private caches: start {k['cluster_start_s']:.1f}s; first task "
          f"{', '.join(f'{x:.1f}' for x in k['first_task_s'])}s, later tasks "
          f"{', '.join(f'{x:.2f}' for x in k['later_task_s'])}s (first/later {k['first_over_later']:.0f}x); "
          f"worker caches distinct: {k['worker_caches_distinct']}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
