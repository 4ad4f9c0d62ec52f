"""The ``sssn-verify`` command line.

Every sub-command lives in its own module of this package and exposes
``register(subparsers)``; the module adds its parser and sets ``func``.
Any :class:`~sssn_verify.errors.SSSNError` (bad input, blow-up) becomes a
one-line message on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ..errors import SSSNError

_NOT_COMMANDS = {"common"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sssn-verify",
        description="Derive (sympy) and confirm (numba Monte Carlo) the formulas of "
                    "'stochastic scaling limits and synchronization by noise' for deep transformers.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"sssn-verify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in _NOT_COMMANDS or info.name.startswith("_"):
            continue
        importlib.import_module(f"{__name__}.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = ["sssn-verify", *(sys.argv[1:] if argv is None else argv)]   # for report provenance
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except SSSNError as exc:
        print(f"sssn-verify {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"sssn-verify {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
