"""``sssn-verify find``: search the parameter domain for a counterexample to a statement."""
from __future__ import annotations

import argparse

from .common import epilog, print_json

EXAMPLES = [
    "sssn-verify find 'lambda_bar < 0' --assume 'd > 3' --explore 30",
    "sssn-verify find 'lambda1 < 0' --activation tanh --explore 20 --seed 1",
    "sssn-verify find 'lambda1 < 0' --activations all --explore 10 --json",
]


def register(sub) -> None:
    p = sub.add_parser(
        "find", help="search the parameter domain for a (shrunk) counterexample to a statement",
        description="Search, with hypothesis, the domain d in [2, 64], sigma_w and sigma_a in [0.05, 3], "
                    "sigma_b in [0, 3], beta in [0, 20] for parameters where STATEMENT fails (beyond the "
                    "stated numerical error of each quantity), and shrink it to a minimal counterexample. "
                    "STATEMENT and --assume are comparisons over lambda1, lambda_bar, k0, k1, c_att, d, "
                    "sigma_w, sigma_b, sigma_a, beta joined by and/or/not, e.g. 'lambda_bar < 0'. "
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
    p.add_argument("--seed", type=int, default=0, help="seed of the search (same seed, same result)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..explore import all_activations, find

    res = find(args.statement, args.assume, activation=args.activation,
               activations=all_activations() if args.activations == "all" else None,
               max_examples=args.max_examples, seed=args.seed)
    if args.json:
        print_json(res.to_dict())
    else:
        print(res.text())
    return 1 if res.found else 0
