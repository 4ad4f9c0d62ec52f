"""Resources are checked before work (issue 22, items 4 and 5): seed ranges, .npz sizes and
shapes from the zip directory, regular files only (never blocking), report.json size-limited
and schema-validated; each bad input is one line and exit 2 within seconds."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sssn_verify.cli import main
from sssn_verify.errors import ParameterError
from sssn_verify.inputs import load_json, load_npy, open_input
from sssn_verify.params import load_attention
from hostile_cli_helpers import modules_loaded, run  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parents[1]


def assert_exit_2(code, out, err, seconds, says=None, limit=10.0):
    assert code == 2, (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert seconds < limit, f"took {seconds:.1f} s"
    if says:
        assert re.search(says, err), err


# ------------------------------------------------------------------ seeds
def test_huge_seed_range_is_refused_before_any_allocation(capsys):
    code, out, err, seconds = run(["verify", "--quick", "--seeds", "0:1000000000"], capsys)
    assert_exit_2(code, out, err, seconds, says="more than 10000", limit=5.0)


def test_seed_lists():
    from sssn_verify.limits import parse_seeds
    assert parse_seeds("3:6") == [3, 4, 5] and parse_seeds("1,5,2") == [1, 5, 2] and parse_seeds("7") == [7]
    for bad in ("0:10001", ",".join(map(str, range(10001))), "5:5", "-1:3", "1,1", "x", "0:2**70",
                str(2**63), "1:2:3"):
        with pytest.raises(ParameterError):
            parse_seeds(bad)


# ------------------------------------------------------------------ special files
@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe.npz"
    os.mkfifo(p)
    return p


def test_fifo_device_and_folder_are_refused_at_once(fifo, tmp_path):
    for path, kind in ((fifo, "FIFO"), ("/dev/zero", "device"), (tmp_path, "folder")):
        t0 = time.perf_counter()
        with pytest.raises(ParameterError, match=kind):
            open_input(path, what="attention")
        assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("argv", [
    ["regime", "--attention", "{fifo}"],
    ["simulate", "gaussian", "--depth", "2", "--attention", "{fifo}", "--out", "{tmp}/x.npz"],
    ["simulate", "gaussian", "--depth", "2", "--init", "{fifo}", "--out", "{tmp}/x.npz"],
    ["simulate", "gaussian", "--depth", "2", "--init", "/dev/zero", "--out", "{tmp}/x.npz"],
    ["regime", "--attention", "{tmp}"],
    ["latex", "--no-pdf", "--out", "{tmp}/tex", "--with-report", "{fifodir}"],
])
def test_special_files_in_the_cli(argv, fifo, tmp_path, capsys):
    fifodir = tmp_path / "rep"
    fifodir.mkdir()
    os.mkfifo(fifodir / "report.json")
    argv = [a.replace("{fifo}", str(fifo)).replace("{tmp}", str(tmp_path)).replace("{fifodir}", str(fifodir))
            for a in argv]
    assert_exit_2(*run(argv, capsys), says="regular")
    assert not (tmp_path / "x.npz").exists()


# ------------------------------------------------------------------ .npz files
def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_init_npy_header_is_checked_before_its_data(tmp_path):
    np.save(tmp_path / "ok.npy", np.eye(3))
    assert np.array_equal(load_npy(tmp_path / "ok.npy", what="init"), np.eye(3))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ParameterError, match="not a real numeric"):
        load_npy(tmp_path / "obj.npy", what="init")
    header = {"descr": "<f8", "fortran_order": False, "shape": (100000, 100000)}
    with open(tmp_path / "huge.npy", "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, header)
    with pytest.raises(ParameterError, match="more than"):
        load_npy(tmp_path / "huge.npy", what="init")


def test_corrupt_zip_is_one_error(tmp_path, capsys):
    good = _npz(tmp_path / "a.npz", Q=np.eye(3), K=np.eye(3), V=np.eye(3)).read_bytes()
    (tmp_path / "bad.npz").write_bytes(good[: len(good) // 2])
    (tmp_path / "flip.npz").write_bytes(good[:60] + bytes(b ^ 0xFF for b in good[60:200]) + good[200:])
    for name in ("bad.npz", "flip.npz"):
        assert_exit_2(*run(["regime", "--attention", tmp_path / name], capsys))


def test_zip_directory_is_counted_before_zipfile_reads_it(tmp_path, monkeypatch, capsys):
    """Second audit of issue 22: a 44 MB .npz of 500 000 empty members cost 6 s and 395 MB RSS inside
    zipfile (and a one-line message of 500 000 names); a Q.npy stored twice was read as whichever came
    last.  The end-of-central-directory count is read from the file's tail first: anything but 3 members
    (a forged count of 65535 here, a duplicate) is refused before zipfile builds a record."""
    good = _npz(tmp_path / "a.npz", Q=np.eye(3), K=np.eye(3), V=np.eye(3)).read_bytes()
    eocd = good.rindex(b"PK\x05\x06")
    many = bytearray(good)
    many[eocd + 8:eocd + 12] = b"\xff\xff\xff\xff"                 # entries on this disk, in total
    (tmp_path / "many.npz").write_bytes(bytes(many))
    with zipfile.ZipFile(tmp_path / "dup.npz", "w") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        for name, a in (("Q", np.eye(3)), ("K", np.eye(3)), ("V", np.eye(3)), ("Q", 2 * np.eye(3))):
            buf = __import__("io").BytesIO()
            np.save(buf, a)
            zf.writestr(f"{name}.npy", buf.getvalue())
    opened = []
    real = zipfile.ZipFile
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: opened.append(a) or real(*a, **k))
    code, out, err, seconds = run(["regime", "--attention", tmp_path / "many.npz"], capsys)
    assert_exit_2(code, out, err, seconds, says="lists 65535 or more members")
    assert_exit_2(*run(["regime", "--attention", tmp_path / "dup.npz"], capsys), says="lists 4 members")
    assert not opened
    with pytest.raises(ParameterError, match="no zip directory"):
        load_attention(_gz(tmp_path / "gz.npz"))


def _gz(path):
    import gzip
    path.write_bytes(gzip.compress(b"Q K V" * 100))
    return path


def test_forged_npy_header_is_refused_before_reading(tmp_path):
    path = tmp_path / "forged.npz"
    header = {"descr": "<f8", "fortran_order": False, "shape": (100000, 100000)}
    buf = __import__("io").BytesIO()
    np.lib.format.write_array_header_2_0(buf, header)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("Q.npy", buf.getvalue() + b"\0" * 64)
        zf.writestr("K.npy", buf.getvalue())
        zf.writestr("V.npy", buf.getvalue())
    with pytest.raises(ParameterError):
        load_attention(path)


BOMB = r"""
import resource, sys, zipfile, numpy as np
path = sys.argv[1]
n = 320 * 2**20 // 8                      # 320 MiB of zeros: more than MAX_ARRAY_BYTES
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
    for name in "QKV":
        with zf.open(name + ".npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_2_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (n,)})
            block = bytes(2**20)
            for _ in range(n * 8 // 2**20):
                fh.write(block)
"""

# The peak is VmHWM of this process's own memory map, not getrusage's ru_maxrss: Linux carries the
# forking parent's high-water mark across exec into ru_maxrss, so under a pytest-xdist worker that
# had grown to 1.2 GB the probe reported 1278 MB for a run that peaks at ~40 MB.
PROBE = r"""
import sys
from sssn_verify.cli import main
code = main(["regime", "--attention", sys.argv[1]])
with open("/proc/self/status") as fh:
    hwm_kb = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
print(code, hwm_kb // 1024)
"""


def test_zip_bomb_costs_no_memory(tmp_path):
    bomb = tmp_path / "bomb.npz"
    subprocess.run([sys.executable, "-c", BOMB, str(bomb)], check=True, timeout=120)
    assert bomb.stat().st_size < 2 * 2**20
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", PROBE, str(bomb)], capture_output=True, text=True,
                         timeout=120, env=env, cwd=tmp_path)
    code, rss_mb = (int(x) for x in res.stdout.split())
    assert code == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert rss_mb < 500, f"peak RSS {rss_mb} MB"


# ------------------------------------------------------------------ report.json
def _report_dir(tmp_path, text: str) -> Path:
    d = tmp_path / "rep"
    d.mkdir(exist_ok=True)
    (d / "report.json").write_text(text)
    return d


@pytest.mark.parametrize("text, says", [
    ('{"seed": [1, 2], "claims": []}', "schema"),
    ("[" * 100000, "nested too deeply|not valid JSON"),
    ('{"claims": [{"estimate": NaN}]}', "not JSON|not valid JSON"),
    ("\xff\xfe garbage", "not valid JSON"),
    ('{"claims": "x"}', "schema"),
    ('{"claims": [], "claims": [], "seed": 0}', "appears twice"),         # second audit: readers disagree
    ('{"claims": [{"estimate": 1e999}]}', "beyond the double range"),     # second audit: json reads inf
])
def test_bad_report_json_is_refused_before_any_building(text, says, tmp_path, capsys):
    d = _report_dir(tmp_path, text)
    assert_exit_2(*run(["latex", "--no-pdf", "--out", tmp_path / "tex", "--with-report", d], capsys),
                  says=says, limit=5.0)
    assert not (tmp_path / "tex" / "sssn_derivations.tex").exists()


def test_oversized_report_json_is_refused(tmp_path):
    d = _report_dir(tmp_path, "")
    with open(d / "report.json", "wb") as fh:
        fh.truncate(17 * 2**20)                     # sparse: 17 MiB > MAX_REPORT_BYTES
    with pytest.raises(ParameterError, match="more than"):
        load_json(d / "report.json", what="with-report", max_bytes=16 * 2**20)

