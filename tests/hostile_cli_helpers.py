"""Shared by the tests/test_hostile_*.py files: run the CLI in-process, timed, and import what
the sub-commands load lazily first (so a time bound measures the input's handling, not the
one-time imports: seconds on a loaded 2-core machine)."""
import importlib
import time

import pytest

from sssn_verify.cli import build_parser, main

LAZY = ("engine", "regime", "phase_diagram", "check", "explore", "numeric.kernels", "latex_doc", "report")


@pytest.fixture(autouse=True, scope="module")
def modules_loaded():
    build_parser()
    for name in LAZY:
        importlib.import_module(f"sssn_verify.{name}")


def run(argv, capsys):
    """(exit code, stdout, stderr, seconds) of ``sssn-verify ARGV`` run in this process."""
    t0 = time.perf_counter()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:          # argparse errors
        code = exc.code
    seconds = time.perf_counter() - t0
    out, err = capsys.readouterr()
    return code, out, err, seconds
