"""Time `sssn-verify check` with its default budget (issue 27's acceptance: median <= 30 s, worst <= 90 s
on 2 cores), one fresh process per case, warm caches, and record each verdict.

Cases: each checkable claim with a right formula in another algebraic form, unpinned (every parameter
and the activation searched) unless its closed form is about one activation, and a slightly wrong one.
The CPU seconds (user + sys of the child) are the machine-load-independent number: on a quiet machine
the wall time is at most about that (the search and the evidence use both cores in part).

    python benchmarks/bench_check.py [--seed S] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

RELU_K = ("sa^2*(sw^2+sb^2)/(2*pi)*(sqrt(1-((sw^2*rho+sb^2)/(sw^2+sb^2))^2)"
          " + (pi-acos((sw^2*rho+sb^2)/(sw^2+sb^2)))*(sw^2*rho+sb^2)/(sw^2+sb^2))")
LAMBDA1 = "((d-3)*k1-(d-1)*k0)/2"
SPECTRUM = "((d-1-2*i)*k1-(d-1)*k0)/2"
MEAN = "log(eps0/eps)/(((d-1)*k0-(d-3)*k1)/2)"
C_ATT = "2*(sum_V + beta*sum_VKQ)"

# name: (claim, candidate, extra options, expected verdict)
CASES = {
    "kernel relu, another form": ("kernel", RELU_K.replace("sa^2*", "sa*sa*"), ["--activation", "relu"],
                                  "consistent"),
    "kernel relu x 1.01 for rho > 0.995": ("kernel", f"{RELU_K}*(1+0.01*Heaviside(rho-0.995))",
                                           ["--activation", "relu"], "rejected"),
    "ito_drift, another form": ("ito_drift", "k0/2 - d*k0/2", [], "consistent"),
    "ito_drift + 0.05 k0 for d >= 12": ("ito_drift", "-(d-1)*k0/2 + 0.05*k0*Heaviside(d-11.5)", [], "rejected"),
    "lambda1, another form": ("lyapunov", "(d*k1 - 3*k1 - d*k0 + k0)/2", [], "consistent"),
    "lambda1 - 1e-4 (d-1)^2 k0": ("lyapunov", f"{LAMBDA1} - 1e-4*(d-1)^2*k0", [], "rejected"),
    "lambda1 as the relu closed form": ("lyapunov", "-(sa^2/4)*(2*sw^2+(d-1)*sb^2)", [], "rejected"),
    # lambda_bar is the edge value at beta = 0 only (at beta = 2, relu d = 4, sigma_b = 1 it is not: rejected)
    "lambda_bar edge, relu, beta = 0": ("lambda_bar", "(d-1)*k1-(d-3)*k0", ["--activation", "relu", "--beta", "0"],
                                        "consistent"),
    "lambda_bar as the edge value, relu": ("lambda_bar", "(d-1)*k1-(d-3)*k0", ["--activation", "relu"], "rejected"),
    "relu_rates lambda1": ("relu_rates", "-(sa^2/4)*(2*sw^2+(d-1)*sb^2)", [], "consistent"),
    "spectrum, another form": ("lyapunov_spectrum", "(d*k1 - k1 - 2*i*k1 - d*k0 + k0)/2", [], "consistent"),
    "spectrum x 1.01": ("lyapunov_spectrum", f"1.01*{SPECTRUM}", [], "rejected"),
    "sigma^2, another form": ("log_distance_variance", "(k0 + k1)*(1 + 0*d)", [], "consistent"),
    "sigma^2 x 1.01": ("log_distance_variance", "1.01*(k0 + k1)", [], "rejected"),
    "tau mean, another form": ("synchronization_time", "2*(log(eps0)-log(eps))/((d-1)*k0-(d-3)*k1)",
                               ["--quantity", "mean"], "consistent"),
    "tau mean x 1.02": ("synchronization_time", f"1.02*{MEAN}", ["--quantity", "mean"], "rejected"),
    "C_att": ("attention_bound", C_ATT, [], "consistent"),
    "C_att x 0.99": ("attention_bound", f"0.99*{C_ATT}", [], "rejected"),
}


def run(claim, candidate, extra, seed):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "sssn_verify", "check", claim, "--candidate", candidate,
                          "--seed", str(seed), "--json", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        out = json.loads(res.stdout)
    except json.JSONDecodeError:
        return {"verdict": f"exit {res.returncode}: {res.stderr.strip()[-200:]}", "wall": wall, "cpu": cpu}
    return {"verdict": out.get("verdict"), "wall": wall, "cpu": cpu, "min_detectable": out.get("min_detectable"),
            "exit": res.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", help="case names (default: all)")
    args = ap.parse_args()
    names = args.only or list(CASES)
    print(f"# check, default budget, seed {args.seed}, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'case':38s} {'claim':22s} {'verdict':11s} {'expected':11s} {'wall s':>7s} {'CPU s':>7s} {'detects':>8s}")
    rows = []
    for name in names:
        claim, cand, extra, expected = CASES[name]
        r = run(claim, cand, extra, args.seed)
        rows.append(r)
        md = r.get("min_detectable")
        print(f"{name:38s} {claim:22s} {str(r['verdict']):11s} {expected:11s} {r['wall']:7.1f} {r['cpu']:7.1f} "
              f"{'-' if md is None else f'{100 * md:.2g} %':>8s}", flush=True)
    cpus = [r["cpu"] for r in rows]
    walls = [r["wall"] for r in rows]
    ok = sum(r["verdict"] == CASES[n][3] for n, r in zip(names, rows))
    print(f"# {ok}/{len(rows)} verdicts as expected; CPU median {statistics.median(cpus):.1f} s, worst {max(cpus):.1f} s; "
          f"wall median {statistics.median(walls):.1f} s, worst {max(walls):.1f} s; load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    return 0 if ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
