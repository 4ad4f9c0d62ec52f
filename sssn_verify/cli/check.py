"""``sssn-verify check CLAIM --candidate EXPR``: test a user's own formula against the numerics."""
from __future__ import annotations

import argparse
import re

from .common import add_model_options, epilog, print_json, refuse_hidden

EXAMPLES = [
    "sssn-verify check lambda1 --candidate '((d-3)*k1-(d-1)*k0)/2' --d 5 --sigma-b 0.5",
    "sssn-verify check kernel --candidate 'sigma_a**2*(sigma_w**2*rho+sigma_b**2)' --activation identity --rho 0.3",
    "sssn-verify check lambda_bar --candidate '(d-1)*k1-(d-3)*k0' --activation relu --explore 20 --json",
]


def register(sub) -> None:
    p = sub.add_parser(
        "check", help="test your own formula for a claim (kernel, ito_drift, lyapunov, dissipation, relu_rates)",
        description="Parse a candidate formula (the safe expression language) and compare it with the claim's "
                    "own numerical evidence, which does not use the derivation, at the given parameters; the "
                    "parameters not given are searched with hypothesis over the claim's domain: --explore N "
                    "examples steered to where the candidate differs most from the derived formula (relative "
                    "to the evidence's error), the evidence there, a rejection shrunk to a minimal "
                    "counterexample and confirmed with a fresh seed (false rejection of a right formula "
                    "<= 1 - level overall). Verdict: consistent or rejected. "
                    "Variables: kernel (rho, sigma_w, sigma_b, sigma_a), ito_drift (the gamma of "
                    "c(x) = gamma x, in d, k0), lyapunov alias lambda1 (d, k0, k1 or the sigmas), "
                    "dissipation alias lambda_bar (its edge value; also beta), relu_rates (ReLU lambda_1 "
                    "in d and the sigmas). Exit 0 if consistent, 1 if rejected, 2 on bad input.",
        epilog=epilog(EXAMPLES))
    # a candidate may start with a minus sign ("-(d-1)*k0/2"): only -h is a single-dash option here,
    # so every other single-dash word is read as a value, not as an unknown option
    p._negative_number_matcher = re.compile(r"^-(?!-|h$)")
    p.add_argument("claim", help="a claim with a closed-form result (see above), or an alias")
    p.add_argument("--candidate", required=True, metavar="EXPR", help="the formula, e.g. '((d-3)*k1-(d-1)*k0)/2'")
    add_model_options(p)
    for action in p._actions:      # here a model option not given is searched, not defaulted
        if action.dest in ("d", "beta", "sigma_w", "sigma_b", "sigma_a"):
            action.help += " (default: searched over the claim's domain)"
    p.add_argument("--rho", type=float, default=None, help="overlap (kernel only; default: searched)")
    p.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo evidence")
    p.add_argument("--level", type=float, default=0.999, help="confidence level of the test")
    p.add_argument("--explore", type=int, metavar="N", default=None,
                   help="size of the parameter search: examples drawn by hypothesis (default 60; 40 for "
                        "activations whose kernel needs quadrature; reproducible from --seed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    # None = not given: the checker then chooses the parameters
    p.set_defaults(func=run, d=None, sigma_w=None, sigma_b=None, sigma_a=None, beta=None)
    plain = p.format_help

    def format_help() -> str:   # the evidence of each claim, from its CandidateCheck (loaded only for --help)
        import textwrap
        from ..check import evidence_descriptions
        text = "\n".join(textwrap.fill(f"{name}: {what}", 100, initial_indent="  ", subsequent_indent="      ")
                         for name, what in evidence_descriptions().items())
        head, _, examples = plain().partition("\nexamples:\n")        # the examples stay last
        return (head + "\nevidence per claim (from its CandidateCheck):\n" + text + "\n\nexamples:\n"
                + examples)
    p.format_help = format_help


def run(args: argparse.Namespace) -> int:
    from ..check import check_candidate
    from ..params import check_int, check_real

    refuse_hidden(args, "check")
    level = check_real("level", args.level, 0.5, maximum=1.0 - 1e-12)
    explore = None if args.explore is None else check_int("explore", args.explore, 1)
    out = check_candidate(args.claim, args.candidate, activation=args.activation, d=args.d,
                          sigma_w=args.sigma_w, sigma_b=args.sigma_b, sigma_a=args.sigma_a,
                          beta=args.beta, rho=args.rho, seed=args.seed, level=level, explore=explore)
    if args.json:
        print_json(out.to_dict())
    else:
        params = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in out.parameters.items())
        asked = out.details.get("asked_as")
        print(f"claim:      {out.claim}" + (f" (asked as {asked})" if asked else ""))
        value = (f"{out.candidate_value:.8g}" if out.candidate_value is not None
                 else f"undefined ({out.details.get('reason', 'not a finite real number')})")
        print(f"candidate:  {out.candidate}   =  {value}")
        print(f"derived:    {out.derived_value:.8g}")
        print(f"parameters: {params}  ({out.chosen})")
        ci = out.details.get("ci")
        print(f"evidence:   {out.estimate:.8g} +- {out.stderr:.2g}"
              + (f"  CI [{ci[0]:.6g}, {ci[1]:.6g}]" if ci else "") + f"  ({out.method})")
        test = (f"p = {out.pvalue:.3g} at level {out.details['test_level']:.4g}" if out.pvalue is not None
                else "deterministic")
        print(f"test:       tolerance {out.tolerance:.3g}, {test}, n = {out.n}")
        if out.search is not None:
            s = out.search
            print(f"search:     {s['examples']} examples (seed {s['seed']}), largest discrepancy "
                  f"{s['max_discrepancy']:.3g} error scales, {len(s['screens'])} evidence screens at level "
                  f"{s['screen_level']:.4g}, {len(s['confirmations'])} confirmations; false rejection "
                  f"<= {s['familywise']:.3g}")
            if out.counterexample is not None and s["first_failure"] not in (None, out.counterexample):
                first = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in s["first_failure"].items())
                print(f"shrunk from {first}")
        power = ("power unknown" if out.min_detectable is None else
                 f"detects a relative error >= {100 * out.min_detectable:.2g} % with probability {out.power:g}")
        print(f"verdict:    {out.verdict.upper()}   (power: {power})")
    return 0 if out.verdict == "consistent" else 1
