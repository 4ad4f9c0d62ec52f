"""Output paths are validated completely before any work (issue 22, items 5 and 8): length,
a folder given as a file name, devices and FIFOs, read-only files even as root; figures are
written with Agg whatever MPLBACKEND says."""
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sssn_verify.cli import main
from hostile_cli_helpers import modules_loaded, run  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parents[1]


def refused(argv, capsys, says):
    code, out, err, seconds = run(argv, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, out, err)
    assert says in err, err
    assert seconds < 10.0, f"took {seconds:.1f} s: not checked before the work"


@pytest.mark.parametrize("n", [250, 300, 5000])
def test_long_names_are_refused_before_any_work(n, tmp_path, capsys):
    refused(["simulate", "gaussian", "--depth", 2, "--out", tmp_path / ("a" * n + ".npz")], capsys, "long")
    refused(["phase-diagram", "--out", tmp_path / ("p" * n + ".png")], capsys, "long")


def test_existing_folder_as_a_file_name_is_refused(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    refused(["simulate", "gaussian", "--depth", 2, "--out", tmp_path / "d"], capsys, "is a folder")
    assert not (tmp_path / "d.npz").exists()


def test_read_only_file_is_refused_even_as_root(tmp_path, capsys):
    target = tmp_path / "x.npz"
    target.write_bytes(b"keep")
    target.chmod(0o444)
    refused(["simulate", "gaussian", "--depth", 2, "--out", target], capsys, "read-only")
    assert target.read_bytes() == b"keep"


def test_special_files_are_never_replaced(tmp_path, capsys):
    fifo = tmp_path / "f.npz"
    os.mkfifo(fifo)
    refused(["simulate", "gaussian", "--depth", 2, "--out", fifo], capsys, "not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    link = tmp_path / "l.png"
    link.symlink_to(tmp_path / "elsewhere.png")
    refused(["phase-diagram", "--out", link], capsys, "symbolic link")
    if os.geteuid() == 0:                  # a device node named *.npz (only root can make one)
        dev = tmp_path / "dev.npz"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        refused(["simulate", "gaussian", "--depth", 2, "--out", dev], capsys, "not a regular file")
        assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_device_without_extension_is_refused(capsys):
    existed = os.path.exists("/dev/null.npz")
    refused(["simulate", "gaussian", "--depth", 2, "--out", "/dev/null"], capsys, "not a regular file")
    assert os.path.exists("/dev/null.npz") == existed


def test_bogus_mplbackend_still_writes_the_figure(tmp_path):
    env = dict(os.environ, MPLBACKEND="bogus", PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "sssn_verify", "simulate", "gaussian", "--depth", "2",
                          "--no-progress", "--out", str(tmp_path / "a.npz"), "--plot", str(tmp_path / "a.png")],
                         capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_printed_paths_carry_no_escape_sequences(tmp_path, capsys):
    target = tmp_path / "e\x1b[2J\x1b]0;x\x07.npz"
    code, out, err, _ = run(["simulate", "gaussian", "--depth", 2, "--no-progress", "--out", target], capsys)
    assert code == 0, err
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "<U+001B>" in out and target.exists()
