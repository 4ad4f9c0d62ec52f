"""``sssn-verify check CLAIM --candidate EXPR``: test a user's own formula against the numerics."""
from __future__ import annotations

import argparse
import re

from ..escape import terminal as escape_terminal
from .common import add_field_options, add_model_options, epilog, print_json

EXAMPLES = [
    "sssn-verify check lambda1 --candidate '((d-3)*k1-(d-1)*k0)/2' --d 5 --sigma-b 0.5",
    "sssn-verify check synchronization_time --quantity variance "
    "--candidate 'log(eps0/eps)*(k0+k1)/(((d-1)*k0-(d-3)*k1)/2)**3' --activation relu --d 9",
    "sssn-verify check attention_bound --candidate '2*(sum_V + beta*sum_VKQ)' --heads 2 --field rqf --sigma-q 1",
]


def register(sub) -> None:
    p = sub.add_parser(
        "check", help="test your own formula for a claim (kernel, ito_drift, lyapunov, dissipation, relu_rates, "
             "lyapunov_spectrum, log_distance_variance, synchronization_time, attention_bound)",
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
                    "in d and the sigmas), lyapunov_spectrum (lambda_i in d, i, k0, k1), log_distance_variance "
                    "(sigma^2 in d, k0, k1), synchronization_time (--quantity mean or variance of the time two "
                    "tokens take from distance eps0 to eps, in d, k0, k1, eps0, eps), attention_bound (C_att, an "
                    "upper bound, in beta, H, d, N, norm_V, norm_KtQ (largest over heads), sum_V = sum_h ||V_h||, "
                    "sum_VKQ = sum_h ||V_h|| ||K_h^T Q_h||: rejected where an exact attention rate exceeds it; a "
                    "consistent bound is called sharp or not sharp by the rate at the configurations where the "
                    "claim attains it, beta = 0, V_h = -v_h I, two tokens). "
                    "The activation is searched too unless --activation is given. "
                    "Every verdict with free parameters also rests on a space-filling design (2 opposite "
                    "corners + a Latin hypercube over the claim's domain, chosen without the derivation); the "
                    "text and JSON say the domain, the points and the smallest error caught there. "
                    "--field rqf: only a claim that no noise field enters (attention_bound) runs; the others "
                    "are refused with the reason (their formula or evidence is the MLP field's). "
                    "--hidden pins a deep block's hidden stack, as --activation pins its first layer: for the "
                    "claims whose evidence runs on the Gaussian field of the block's kernel K (lyapunov, ito_drift, "
                    "lyapunov_spectrum, log_distance_variance, synchronization_time; attention_bound, which no "
                    "noise field enters, runs unchanged); the others are refused with the reason. Without "
                    "--hidden the search is over one-layer blocks, and the design of lyapunov and ito_drift also "
                    "draws deep stacks for a candidate in d, k0, k1 (not in the sigmas, the first layer's). "
                    "Exit 0 if consistent, 1 if rejected, 2 on bad input.",
        epilog=epilog(EXAMPLES))
    # a candidate may start with a minus sign ("-(d-1)*k0/2"): only -h is a single-dash option here,
    # so every other single-dash word is read as a value, not as an unknown option
    p._negative_number_matcher = re.compile(r"^-(?!-|h$)")
    p.add_argument("claim", help="a claim with a closed-form result (see above), or an alias")
    p.add_argument("--candidate", required=True, metavar="EXPR", help="the formula, e.g. '((d-3)*k1-(d-1)*k0)/2'")
    add_model_options(p)
    add_field_options(p, sigma_q_help="check --field rqf runs attention_bound only")
    for action in p._actions:      # here a model option not given is searched, not defaulted
        if action.dest in ("d", "beta", "sigma_w", "sigma_b", "sigma_a", "activation"):
            action.help += " (default: searched over the claim's domain)"
        if action.dest == "hidden":
            action.help = action.help.replace("(default: none, the one-layer block)",
                                              "(default: one-layer blocks searched; lyapunov's and ito_drift's "
                                              "designs also draw deep stacks)")
    p.add_argument("--rho", type=float, default=None, help="overlap (kernel only; default: searched)")
    p.add_argument("--index", type=int, default=None, metavar="I",
                   help="the exponent's index i, 1 <= i <= d-1 (lyapunov_spectrum only; default: searched)")
    p.add_argument("--quantity", default=None, metavar="Q",
                   help="which quantity the candidate is (synchronization_time: mean, the default, or variance)")
    p.add_argument("--eps0", type=float, default=None,
                   help="initial distance of the two tokens (synchronization_time; default: searched)")
    p.add_argument("--eps", type=float, default=None,
                   help="target distance, eps < eps0 (synchronization_time, with --eps0; default: searched)")
    p.add_argument("--heads", type=int, default=None, metavar="H",
                   help="attention heads (attention_bound only; default: searched)")
    p.add_argument("--n-tokens", type=int, default=None, metavar="N",
                   help="tokens (attention_bound only; default: searched)")
    p.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo evidence")
    p.add_argument("--level", type=float, default=0.999, help="confidence level of the test")
    p.add_argument("--explore", type=int, metavar="N", default=None,
                   help="size of the parameter search: examples drawn by hypothesis (default 60; 40 for "
                        "activations whose kernel needs quadrature; reproducible from --seed)")
    p.add_argument("--design", type=int, metavar="N", default=None,
                   help="points of the space-filling design (2 opposite corners + a Latin hypercube over every "
                        "searched axis and the activation; default and minimum 8)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    # None = not given: the checker then chooses the parameters
    p.set_defaults(func=run, d=None, sigma_w=None, sigma_b=None, sigma_a=None, beta=None, activation=None)
    plain = p.format_help

    def format_help() -> str:   # the evidence of each claim, from its CandidateCheck (loaded only for --help)
        import textwrap
        from ..check import evidence_descriptions
        from ..symbolic.derivation import plain_text        # the descriptions are LaTeX prose: spelt in ASCII
        text = "\n".join(textwrap.fill(f"{name}: {plain_text(what)}", 100, initial_indent="  ",
                                       subsequent_indent="      ")
                         for name, what in evidence_descriptions().items())
        head, _, examples = plain().partition("\nexamples:\n")        # the examples stay last
        return (head + "\nevidence per claim (from its CandidateCheck):\n" + text + "\n\nexamples:\n"
                + examples)
    p.format_help = format_help


def run(args: argparse.Namespace) -> int:
    from ..check import DESIGN_POINTS, check_candidate, domain_text
    from ..params import check_int, check_real
    from .common import hidden_from_args

    hidden = hidden_from_args(args) if args.hidden else None
    level = check_real("level", args.level, 0.5, maximum=1.0 - 1e-12)
    explore = None if args.explore is None else check_int("explore", args.explore, 1)
    design = DESIGN_POINTS if args.design is None else check_int("design", args.design, DESIGN_POINTS)
    out = check_candidate(args.claim, args.candidate, activation=args.activation, d=args.d,
                          sigma_w=args.sigma_w, sigma_b=args.sigma_b, sigma_a=args.sigma_a,
                          beta=args.beta, rho=args.rho, index=args.index, eps0=args.eps0, eps=args.eps,
                          heads=args.heads, n_tokens=args.n_tokens, quantity=args.quantity, seed=args.seed, level=level,
                          explore=explore,
                          design=design, field=args.field, sigma_q=args.sigma_q, hidden=hidden)
    if args.json:
        print_json(out.to_dict())
    else:
        params = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in out.parameters.items())
        asked = out.details.get("asked_as")
        print(f"claim:      {out.claim}" + (f" (asked as {asked})" if asked else "")
              + (f", quantity {out.quantity}" if out.quantity else ""))
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
        if out.design is not None:
            g = out.design
            print(f"domain:     {escape_terminal(domain_text(g['domain']))}")
            if g.get("tested"):
                weak, best = g["min_detectable_weakest"], g["min_detectable_best"]
                caught = ("no point has a relative scale" if weak is None else
                          f"a relative error >= {100 * weak:.2g} % is caught at every powered point "
                          f"(>= {100 * best:.2g} % at the best)")
                print(f"design:     {g['tested']} of {g['points']} points ({g['kind']}), level {g['level']:.4g}, "
                      f"{'REJECTED at one' if g['rejected'] else 'all consistent'}; {caught}"
                      + (f"; {g['unpowered']} without a relative scale" if g["unpowered"] else ""))
            else:
                print(f"design:     {g['points']} points planned, not run (the search's rejection decided)")
        power = ("power unknown" if out.min_detectable is None else
                 f"detects a relative error >= {100 * out.min_detectable:.2g} % with probability {out.power:g}"
                 + (" (a bound: a candidate that much below the derived one; above it, see sharpness)"
                    if out.sharp is not None or out.details.get("sharpness") else ""))
        sharp = out.details.get("sharpness") or {}
        if sharp.get("points"):
            w = sharp["worst"]
            print(f"sharpness:  at {len(sharp['points'])} points where the claim attains its bound the largest rate "
                  f"is {w['rate_over_candidate']:.8g} of the candidate (sharp: within {sharp['tolerance']:g})")
        qualifier = {True: ", SHARP", False: f" BUT NOT SHARP (x{sharp.get('factor') or 0:.3g} the attained value)",
                     None: ""}[out.sharp]
        if out.details.get("field"):
            print(f"note:       {out.details['field']}")
        if out.details.get("hidden"):
            print(f"note:       {escape_terminal(out.details['hidden'])}")
        print(f"verdict:    {out.verdict.upper()}{qualifier}   (power: {power})")
    return 0 if out.verdict == "consistent" else 1
