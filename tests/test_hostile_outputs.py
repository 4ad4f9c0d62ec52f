"""Atomic, early-checked outputs (sssn_verify.outputs): a failed, size-limited, interrupted
or concurrent write never leaves a corrupt or truncated file where a good one was."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from sssn_verify.errors import OutputError
from sssn_verify.outputs import check_folder, output_path, write_atomic

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}


def _good_npz(path, seed=0, n=20_000):
    data = np.random.default_rng(seed).standard_normal(n)
    np.savez(path, x=data)
    return data


def _leftovers(folder):
    return [p.name for p in Path(folder).iterdir() if p.name.endswith(".tmp")]


def test_name_given_is_name_written(tmp_path):
    p, note = output_path(tmp_path / "run", extensions=(".npz",), default_ext=".npz")
    assert p == tmp_path / "run.npz" and "run.npz" in note
    p, note = output_path(tmp_path / "run.NPZ", extensions=(".npz",), default_ext=".npz")
    assert p == tmp_path / "run.NPZ" and note is None
    with pytest.raises(OutputError, match=r"\.txt"):
        output_path(tmp_path / "important.txt", extensions=(".npz",), default_ext=".npz")
    with pytest.raises(OutputError, match="does not exist"):
        output_path(tmp_path / "missing" / "x.npz", extensions=(".npz",))
    with pytest.raises(OutputError, match="folder"):
        output_path(tmp_path, extensions=())
    with pytest.raises(OutputError, match="not writable"):
        check_folder("/proc/1")


def test_failing_writer_leaves_previous_file_and_no_temporary(tmp_path):
    target = tmp_path / "good.npz"
    data = _good_npz(target)

    def broken(fh):
        fh.write(b"PK partial")
        raise OSError(28, "No space left on device")
    with pytest.raises(OutputError, match="unchanged"):
        write_atomic(target, broken)
    np.testing.assert_array_equal(np.load(target)["x"], data)
    assert _leftovers(tmp_path) == []


_CHILD_SIZE_LIMIT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from sssn_verify.outputs import write_atomic
    from sssn_verify.errors import OutputError
    big = np.arange(50_000, dtype=float)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
    try:
        write_atomic(sys.argv[1], lambda fh: np.savez(fh, x=big))
    except OutputError as exc:
        print(exc)
        sys.exit(2)
""")


def test_file_size_limit_keeps_the_previous_file(tmp_path):
    target = tmp_path / "good.npz"
    data = _good_npz(target, n=100)
    proc = subprocess.run([sys.executable, "-c", _CHILD_SIZE_LIMIT, str(target)], env=ENV,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "unchanged" in proc.stdout and "Traceback" not in proc.stderr
    np.testing.assert_array_equal(np.load(target)["x"], data)
    assert _leftovers(tmp_path) == []


_CHILD_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from sssn_verify.outputs import write_atomic
    seed, target = int(sys.argv[1]), sys.argv[2]
    x = np.full(200_000, float(seed))
    for _ in range(15):
        write_atomic(target, lambda fh: np.savez(fh, x=x))
""")


def test_concurrent_writers_never_leave_a_corrupt_file(tmp_path):
    target = tmp_path / "same.npz"
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD_WRITER, str(s), str(target)], env=ENV)
             for s in range(1, 5)]
    seen = set()
    while any(p.poll() is None for p in procs):
        if target.exists():
            x = np.load(target)["x"]          # bad CRC or truncation would raise here
            assert np.all(x == x[0]) and x.size == 200_000
            seen.add(float(x[0]))
        time.sleep(0.01)
    assert all(p.returncode == 0 for p in procs)
    x = np.load(target)["x"]
    assert np.all(x == x[0]) and x[0] in (1.0, 2.0, 3.0, 4.0)
    assert _leftovers(tmp_path) == []


_CHILD_INTERRUPTED = textwrap.dedent("""
    import signal, sys, time
    # the child's SIGINT disposition is set here, not inherited: a parent started under nohup or a
    # job runner ignores SIGINT, and an ignored signal would never interrupt the write
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from sssn_verify.outputs import write_atomic
    def slow(fh):
        fh.write(b"half of a new file")
        fh.flush()
        print("writing", flush=True)
        time.sleep(30)
    try:
        write_atomic(sys.argv[1], slow)
    except KeyboardInterrupt:
        sys.exit(130)
""")


def test_interrupted_write_keeps_the_previous_file(tmp_path):
    target = tmp_path / "good.npz"
    data = _good_npz(target)
    proc = subprocess.Popen([sys.executable, "-c", _CHILD_INTERRUPTED, str(target)], env=ENV,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    np.testing.assert_array_equal(np.load(target)["x"], data)
    assert _leftovers(tmp_path) == []


def test_written_file_has_the_usual_permissions(tmp_path):
    p = write_atomic(tmp_path / "a.txt", "hello\n")
    mask = os.umask(0)
    os.umask(mask)
    assert p.read_text() == "hello\n"
    assert (p.stat().st_mode & 0o777) == (0o666 & ~mask)
