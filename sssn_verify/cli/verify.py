"""``sssn-verify verify``: run the verification suite (docs/mathematics.md, section 7)."""
from __future__ import annotations

import argparse
import sys

from ..escape import terminal
from ..errors import ParameterError
from ..executor import add_cli_options
from ..params import check_int, check_real
from .common import epilog, print_json

EXAMPLES = [
    "sssn-verify verify --list",
    "sssn-verify verify --quick --claim kernel --claim lambda1 --seed 1",
    "sssn-verify verify --full --report report/ --json > suite.json",
]


def register(sub) -> None:
    p = sub.add_parser("verify", help="run the verification suite: every claim derived, checked, reported",
                       description="Derive every claim with sympy, confirm it numerically with a stated "
                                   "level, and control the family-wise false alarms (Holm). Exit 0 only "
                                   "if every claim passes, 1 if one fails its checks (or the exploration "
                                   "finds a counterexample), 2 on bad input, 3 if an explored point hit an "
                                   "internal error, 4 if a claim's checker (or an explored point) failed "
                                   "numerically and nothing failed its checks: that claim is recorded "
                                   "as an internal numerical failure, not a verdict on its formula, and "
                                   "the other claims, the table, --json and --report are still written "
                                   "whole (campaigns likewise); 130 on Ctrl-C, 128 + the signal's number "
                                   "on SIGTERM or SIGHUP (a batch system's time limit): both write the "
                                   "partial report.",
                       epilog=epilog(EXAMPLES))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="small budgets (the default; at most 5 minutes on 2 cores)")
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="large budgets (at most 60 minutes; the ETA is estimated from the claims' budgets)")
    p.set_defaults(mode="quick")
    p.add_argument("--claim", action="append", metavar="NAME",
                   help="run only this claim (repeatable; aliases such as lambda1 accepted); see --list")
    seed = p.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=int, default=0, help="seed of every Monte Carlo check")
    seed.add_argument("--seeds", metavar="A:B",
                      help="a campaign: the suite at seeds A..B-1 (or A,B,C), per-seed and pooled results")
    p.add_argument("--alpha", type=float, default=None,
                   help="family-wise false-alarm probability (Holm) (default: 0.01)")
    p.add_argument("--report", metavar="DIR", help="write report.html, report.md, report.json (schema docs/report.schema.json) "
                        "and the figures (PNG and PDF) to DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--list", action="store_true", help="list the claims and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_cli_options(p)
    p.add_argument("--explore", type=int, metavar="N", default=None,
                   help="per claim with a declared domain, N parameter sets drawn by hypothesis (screened, "
                        "failures confirmed with a fresh seed, then shrunk) (default: 2 with --quick, 10 with "
                        "--full)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..limits import parse_seeds
    seeds = parse_seeds(args.seeds) if args.seeds is not None else None   # before the claims load
    from ..claims import CLAIMS, UNAVAILABLE, get_claim
    from ..report import table, write_report
    from ..executor import from_cli
    from ..verify import DEFAULT_ALPHA, VerifyInterrupted, verify

    if args.list:
        from ..symbolic.derivation import plain_text      # titles are LaTeX prose
        for name, claim in CLAIMS.items():
            print(f"{name:22s} {plain_text(claim.title)}")
        for name, why in UNAVAILABLE.items():
            print(f"{name:22s} (unavailable: {why})")
        return 0
    if args.claim:        # ClaimError -> exit 2 before any work; aliases (lambda1) become claim names
        args.claim = list(dict.fromkeys(get_claim(name).name for name in args.claim))
    alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
    check_real("alpha", alpha, 0.0, strict=True, maximum=0.5)   # bad input: its one line, before the ETA line
    check_int("seed", args.seed, 0)
    if args.explore is not None:
        check_int("explore", args.explore, 0)   # ParameterError -> exit 2 before any work
    if args.seeds is not None:
        return _campaign(args, seeds, alpha)
    # the report is written into a fresh folder beside --report, swapped in when complete
    staged = _stage_report(args.report) if args.report else None    # OutputError -> exit 2 before any work
    stopped = _StopLikeCtrlC()          # SIGTERM/SIGHUP: the partial report, as Ctrl-C writes it
    try:
        with from_cli(args) as ex:                  # workers checked (and dask found) before the ETA line
            if not args.no_progress:
                _announce_eta(args.mode, args.claim)
            try:
                suite = verify(args.mode, args.claim, args.seed, progress=not args.no_progress,
                               alpha=alpha, executor=ex)
            except VerifyInterrupted as exc:      # Ctrl-C: the finished claims still reach the user
                return _partial(args, exc.suite, staged, stopped.signum)
            try:
                exploration = _explore(args, alpha, ex, staged)
            except KeyboardInterrupt:             # Ctrl-C while exploring: every claim's result is kept
                suite.exploration_interrupted = True
                return _partial(args, suite, staged, stopped.signum)
            paths = (write_report(suite, staged, command=getattr(args, "argv", None), exploration=exploration)
                     if staged else None)
            if staged:
                from ..explore import write_json
                write_json(exploration, staged)   # after write_report, which draws its figures
    except BaseException as exc:
        if staged:                                  # the previous report stays as it was
            import shutil
            shutil.rmtree(staged, ignore_errors=True)
        if stopped.signum is not None and isinstance(exc, KeyboardInterrupt):   # before any claim ran
            from . import _Terminated
            raise _Terminated(stopped.signum) from None
        raise
    finally:
        stopped.restore()
    if staged:
        from ..outputs import swap_in
        swap_in(staged, args.report)
        paths = _moved(paths, str(staged), str(args.report))
    if args.json:
        out = suite.to_dict()
        if paths:
            out["report"] = paths
        out["exploration"] = exploration.to_dict()
        print_json(out)
    else:
        print(table(suite))
        print(exploration.table())
        if paths:
            print(f"report written to {terminal(args.report)} (report.html, report.md, report.json, "
                  f"{len(paths.get('figures', []))} figures as PNG and PDF"
                  f"{', summary.pdf' if paths.get('summary') else ''}; exploration.json)")
    sys.stdout.flush()
    _say_numerical_failures(suite.numerical_failures)
    # 1: a claim failed its checks or the exploration found a counterexample; else 3: an explored point
    # raised an internal error; else 4: a claim's checker or an explored point failed numerically
    codes = {suite.exit_code(), exploration.exit_code()}
    return next((c for c in (1, 3, 4) if c in codes), 0)


def _say_numerical_failures(failed) -> None:
    """After every result is written: one line on stderr naming the claims whose checker failed
    numerically (as the CLI says any NumericalError), so that exit code 4 is explained."""
    if not failed:
        return
    what = "; ".join(terminal(r.error) for r in failed)
    print(f"sssn-verify verify: numerical failure (not an input error; please report it; every other result "
          f"is written): {what}", file=sys.stderr)


class _StopLikeCtrlC:
    """While installed, SIGTERM and SIGHUP raise KeyboardInterrupt, so that the claims and the
    exploration stop as on Ctrl-C and the partial report is written; ``signum`` remembers the signal
    (for the exit code 128 + signum and the closing line).  ``restore`` puts back the handlers."""

    NAMES = ("SIGTERM", "SIGHUP")

    def __init__(self):
        import signal
        self.signum = None
        self.saved = {}
        for name in self.NAMES:
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                self.saved[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):        # not the main thread: the CLI's own handlers stay
                pass

    def _on_signal(self, signum, frame):
        if self.signum is None:
            self.signum = signum
            raise KeyboardInterrupt

    def restore(self) -> None:
        import signal
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved = {}


def _partial(args, suite, staged, signum=None) -> int:
    """Ctrl-C (or SIGTERM/SIGHUP, `signum`) during the claims: the finished ones are printed (and,
    with --report, written as a whole report marked PARTIAL, swapped in like a complete one); one line
    on stderr; exit 130 (128 + `signum`)."""
    import signal
    from ..report import table, write_report
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not tear the report
    try:
        where = ""
        if staged and suite.results:
            write_report(suite, staged, command=getattr(args, "argv", None))
            from ..outputs import swap_in
            swap_in(staged, args.report)
            where = f"; partial report in {terminal(args.report)}"
        elif staged:                                        # nothing finished: the old report stays
            import shutil
            shutil.rmtree(staged, ignore_errors=True)
        if args.json:
            print_json(suite.to_dict())
        elif suite.results:
            print(table(suite))
        sys.stdout.flush()
    finally:
        signal.signal(signal.SIGINT, old)
    done = (f"all {len(suite.results)} claims, during the exploration" if suite.exploration_interrupted else
            f"{len(suite.results)} of {len(suite.results) + len(suite.interrupted)} claims")
    how = "interrupted" if signum is None else f"stopped by {signal.Signals(signum).name}"
    print(f"sssn-verify verify: {how} after {done}{where}", file=sys.stderr)
    return 130 if signum is None else 128 + signum


def _announce_eta(mode: str, claims) -> None:
    """One line on stderr: the expected duration, from this machine's recorded per-claim times (the other
    mode's scaled by the budgets' ratio), when there are any."""
    from ..claims import CLAIMS
    from ..verify import MODES, expected_seconds, recorded_seconds
    names = list(claims or CLAIMS)
    known = {n for m in MODES for n in recorded_seconds(m)} & set(names)
    if known:
        total = sum(expected_seconds(names, mode).values())
        print(f"verify --{mode}: about {total / 60:.0f} min expected (per-claim times recorded here, scaled by "
              f"the budgets; {len(known)}/{len(names)} claims recorded)", file=sys.stderr)


def _explore(args, alpha, executor, report_dir=None):
    """The hypothesis exploration of the claims' domains (sssn_verify.explore)."""
    from ..explore import DEFAULT_EXPLORE, explore_suite
    n = DEFAULT_EXPLORE[args.mode] if args.explore is None else args.explore
    return explore_suite(args.claim, n, mode=args.mode, seed=args.seed, alpha=alpha, report_dir=report_dir,
                         progress=not args.no_progress, executor=executor)


def _stage_report(report):
    """A fresh folder beside `report` for this run's whole report (outputs.staging_folder), holding a
    copy of the previous report's hypothesis example database (so earlier failures replay)."""
    import os
    import shutil
    from ..outputs import staging_folder
    staged = staging_folder(report)
    previous = os.path.join(os.path.expanduser(str(report)), "hypothesis-examples")
    if os.path.isdir(previous) and not os.path.islink(previous):
        shutil.copytree(previous, staged / "hypothesis-examples", symlinks=True)
    return staged


def _moved(paths, old: str, new: str):
    """`paths` (the report's dict of file names) with the staging folder's prefix replaced."""
    if isinstance(paths, dict):
        return {k: _moved(v, old, new) for k, v in paths.items()}
    if isinstance(paths, list):
        return [_moved(v, old, new) for v in paths]
    return new + paths[len(old):] if isinstance(paths, str) and paths.startswith(old) else paths


def _campaign(args, seeds, alpha) -> int:
    from ..executor import from_cli
    from ..verify import campaign
    if args.report:
        raise ParameterError("report", args.report, "is written for one seed; a campaign (--seeds) "
                                                     "prints its results (--json for all of them)")
    with from_cli(args) as ex:
        res = campaign(args.mode, args.claim, seeds, progress=not args.no_progress, alpha=alpha, executor=ex)
    if args.json:
        print_json(res.to_dict())
    else:
        print(campaign_table(res))
    sys.stdout.flush()
    if res.numerical_failures:
        what = "; ".join(terminal(f"seed {e['seed']}: {e['message']}") for e in res.numerical_failures)
        print(f"sssn-verify verify: numerical failure (not an input error; please report it; every other result "
              f"is written): {what}", file=sys.stderr)
    return res.exit_code()


def campaign_table(res) -> str:
    """Per claim: seeds passed, pooled estimate [CI] against the formula, Holm verdict."""
    from ..symbolic.derivation import plain_text      # check names are LaTeX prose
    rows = [("claim", "check", "seeds passed", "pooled estimate [CI]", "expected", "p (Holm)", "verdict")]
    for e in res.pooled:
        if e["pvalue"] is None:
            est, exp, p = "-", "-", "-"
        else:
            est = f"{e['estimate']:.4g} [{e['ci'][0]:.4g}, {e['ci'][1]:.4g}]"
            exp, p = f"{e['expected']:.4g}", f"{e['holm_adjusted_p']:.3g}"
        rows.append((e["claim"], plain_text(e["check"])[:40], f"{e['seeds_passed']}/{e['n_seeds']}", est, exp, p,
                     "PASS" if e["passed"] else "FAIL"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    st = res.seed_test
    lines.append(f"seeds whose suite failed: {st['failures']}/{st['n_seeds']} (p = {st['pvalue']:.3g}, "
                 f"{'PASS' if st['passed'] else 'FAIL'}); deterministic checks "
                 f"{'all passed' if res.deterministic_passed else 'FAILED'}")
    for e in res.numerical_failures:
        lines.append(f"not checked: {e['claim']} at seed {e['seed']}, an internal numerical failure (not a verdict "
                     f"on the formula; left out of the pooling): {terminal(e['message'])}")
    lines.append(f"{res.text}; {res.seconds:.1f}s on {res.executor.get('executor')} "
                 f"({res.executor.get('workers')} workers)")
    lines.append("CAMPAIGN PASSED" if res.passed else "CAMPAIGN FAILED" if not res.checks_passed else
                 "CAMPAIGN INCOMPLETE: internal numerical failures (no formula rejected)")
    return "\n".join(lines)
