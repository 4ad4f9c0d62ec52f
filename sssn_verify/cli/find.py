"""``sssn-verify find``: search the parameter domain for a counterexample to a statement."""
from __future__ import annotations

import argparse

from .common import add_field_options, epilog, print_json

EXAMPLES = [
    "sssn-verify find 'lambda_bar < 0' --assume 'd > 3' --explore 30",
    "sssn-verify find 'lambda_proj < 0' --field rqf --explore 20 --seed 1",
    "sssn-verify find 'lambda1 < 0' --activations all --explore 10 --json",
]


def register(sub) -> None:
    p = sub.add_parser(
        "find", help="search the parameter domain for a (shrunk) counterexample to a statement",
        description="Search, with hypothesis, the domain d in [2, 64], sigma_w and sigma_a in [0.05, 3], "
                    "sigma_b in [0, 3], beta in [0, 20] for parameters where STATEMENT fails (beyond the "
                    "stated numerical error of each quantity), and shrink it to a minimal counterexample. "
                    "STATEMENT and --assume are comparisons over lambda1, lambda_bar, k0, k1, c_att, "
                    "lambda_bar_proj, lambda_proj (odd fields), d, sigma_w, sigma_b, sigma_a, beta joined by "
                    "and/or/not, e.g. 'lambda_bar < 0'. --field rqf searches the random quadratic form over "
                    "d in [2, 64], sigma_q in [0.05, 3], beta in [0, 20]: its quantities are lambda1, lambda_bar "
                    "(2 sigma_q^2), k0 = a(1), c_att, lambda_bar_proj, lambda_proj, d, sigma_q, beta (k1 and the "
                    "MLP sigmas are not defined for it: a statement using them is refused). "
                    "Exit 0 when none is found, 1 when one is found, 2 on bad input.",
        epilog=epilog(EXAMPLES))
    p.add_argument("statement", metavar="STATEMENT", help="the statement to refute, e.g. 'lambda1 < 0'")
    p.add_argument("--assume", metavar="CONDITION", help="search only where CONDITION holds, e.g. 'd > 3'")
    acts = p.add_mutually_exclusive_group()
    acts.add_argument("--activation", default="relu",
                      help="registry name (relu, leaky_relu:0.1, sin:3, ...) or an expression in u")
    acts.add_argument("--activations", choices=["all"],
                      help="search over every registered activation (closed-form kernels first)")
    p.add_argument("--explore", "--max-examples", dest="max_examples", type=int, default=100, metavar="N",
                   help="size of the search: parameter sets drawn by hypothesis (--max-examples: the old "
                        "spelling)")
    add_field_options(p, sigma_q_help="given, it pins sigma_q", searched="[0.05, 3] (--field rqf)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (same seed, same result)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..explore import all_activations, find

    res = find(args.statement, args.assume, activation=args.activation,
               activations=all_activations() if args.activations == "all" else None,
               max_examples=args.max_examples, seed=args.seed, field=args.field, sigma_q=args.sigma_q)
    if args.json:
        print_json(res.to_dict())
    else:
        print(res.text())
    return 1 if res.found else 0
