"""A signal never kills without its one line (issue 22, item 7): SIGTERM during a run (here
during verify --report) exits 128 + 15 with one line, and leaves no staging folder behind."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import os, signal, sys, threading
from sssn_verify.cli import main
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
sys.exit(main(["verify", "--quick", "--claim", "kernel", "--no-progress", "--report", sys.argv[1]]))
"""


def test_sigterm_gives_one_line_and_exit_143(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "rep")], capture_output=True,
                         text=True, timeout=300, env=env, cwd=tmp_path)
    assert res.returncode == 143, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == "sssn-verify: stopped by SIGTERM" and "Traceback" not in res.stderr, res.stderr
    assert not list(tmp_path.glob(".rep.partial-*"))
