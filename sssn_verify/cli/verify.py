"""``sssn-verify verify``: run the verification suite (SPEC section 7)."""
from __future__ import annotations

import argparse
import sys

from .common import print_json


def register(sub) -> None:
    p = sub.add_parser("verify", help="run the verification suite: every claim derived, checked, reported",
                       description="Derive every claim with sympy, confirm it numerically with a stated "
                                   "level, and control the family-wise false alarms (Holm). Exit 0 only "
                                   "if every claim passes, 1 if one fails, 2 on bad input.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="small budgets (the default; at most 5 minutes on 2 cores)")
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="large budgets (at most 60 minutes)")
    p.set_defaults(mode="quick")
    p.add_argument("--claim", action="append", metavar="NAME",
                   help="run only this claim (repeatable); see --list")
    p.add_argument("--seed", type=int, default=0, help="seed of every Monte Carlo check")
    p.add_argument("--alpha", type=float, default=None,
                   help="family-wise false-alarm probability (Holm), default 0.01")
    p.add_argument("--report", metavar="DIR", help="write report.html, report.md, report.json (schema docs/report.schema.json) "
                        "and the figures (PNG and PDF) to DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--list", action="store_true", help="list the claims and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..claims import CLAIMS, UNAVAILABLE, get_claim
    from ..report import table, write_report
    from ..verify import DEFAULT_ALPHA, verify

    if args.list:
        for name, claim in CLAIMS.items():
            print(f"{name:22s} {claim.title}")
        for name, why in UNAVAILABLE.items():
            print(f"{name:22s} (unavailable: {why})")
        return 0
    for name in args.claim or []:
        get_claim(name)  # ClaimError -> exit 2 before any work
    suite = verify(args.mode, args.claim, args.seed, progress=not args.no_progress,
                   alpha=DEFAULT_ALPHA if args.alpha is None else args.alpha)
    paths = write_report(suite, args.report, command=getattr(args, "argv", None)) if args.report else None
    if args.json:
        out = suite.to_dict()
        if paths:
            out["report"] = paths
        print_json(out)
    else:
        print(table(suite))
        if paths:
            print(f"report written to {args.report} (report.html, report.md, report.json, "
                  f"{len(paths.get('figures', []))} figures as PNG and PDF"
                  f"{', summary.pdf' if paths.get('summary') else ''})")
    sys.stdout.flush()
    return 0 if suite.passed else 1
