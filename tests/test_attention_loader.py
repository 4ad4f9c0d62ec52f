"""One attention loader (issues 20.4, 22.9): ``regime --attention`` and ``simulate --attention``
accept and refuse the same files, through ``params.load_attention``."""
import os
import zipfile

import numpy as np
import pytest

from sssn_verify.cli import main
from sssn_verify.errors import ParameterError
from sssn_verify.params import ModelParams, load_attention

D = 3
I3 = np.eye(D)
R3 = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def _corrupt(path):
    path.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    return path


def _bomb(path):
    """128 MB of zeros in a ~130 KB compressed file (d = 4000 > MAX_D)."""
    np.savez_compressed(path, Q=np.zeros((4000, 4000)), K=I3, V=I3)
    return path


def _misnamed(path):
    with zipfile.ZipFile(path, "w") as z:           # Q stored without the .npy suffix
        for n in "QKV":
            with z.open(n if n == "Q" else f"{n}.npy", "w") as fh:
                np.lib.format.write_array(fh, I3)
    return path


GOOD = {
    "one head": lambda p: _npz(p, Q=I3, K=I3, V=0.5 * I3),
    "two heads, shared K": lambda p: _npz(p, Q=np.stack([I3, 2 * I3]), K=R3, V=np.stack([I3, -I3])),
    "integer arrays": lambda p: _npz(p, Q=np.eye(D, dtype=np.int64), K=np.eye(D, dtype=np.int32), V=np.eye(D, dtype=np.int8)),
    "Fortran order": lambda p: _npz(p, Q=np.asfortranarray(R3), K=I3, V=I3),
    "(1, d, d) stack": lambda p: _npz(p, Q=I3[None], K=I3, V=I3[None]),
}

BAD = {
    "missing V": lambda p: _npz(p, Q=I3, K=I3),
    "extra array": lambda p: _npz(p, Q=I3, K=I3, V=I3, W=I3),
    "complex Q": lambda p: _npz(p, Q=I3.astype(complex), K=I3, V=I3),
    "boolean K": lambda p: _npz(p, Q=I3, K=I3.astype(bool), V=I3),
    "object array": lambda p: (np.savez(p, Q=np.array([I3, "x"], dtype=object), K=I3, V=I3), p)[1],
    "nan entry": lambda p: _npz(p, Q=np.where(I3 == 1, np.nan, 0.0), K=I3, V=I3),
    "not square": lambda p: _npz(p, Q=np.ones((D, D + 1)), K=I3, V=I3),
    "different H": lambda p: _npz(p, Q=np.stack([I3, I3]), K=np.stack([I3, I3, I3]), V=I3),
    "different d": lambda p: _npz(p, Q=np.eye(4), K=I3, V=I3),
    "d of the file != --d": lambda p: _npz(p, Q=np.eye(4), K=np.eye(4), V=np.eye(4)),
    "too many heads": lambda p: _npz(p, Q=np.broadcast_to(I3, (17, D, D)), K=I3, V=I3),
    "scalar": lambda p: _npz(p, Q=np.float64(1.0), K=I3, V=I3),
    "corrupt zip": _corrupt,
    "zip bomb": _bomb,
    "member without .npy": _misnamed,
    "missing file": lambda p: p,
    "folder": lambda p: (p.mkdir(), p)[1],
    "fifo": lambda p: (os.mkfifo(p), p)[1],
}

COMMANDS = {
    "regime": lambda f, tmp: ["regime", "--d", str(D), "--attention", str(f)],
    "simulate": lambda f, tmp: ["simulate", "gaussian", "--d", str(D), "--depth", "2", "--paths", "2",
                                "--n-tokens", "3", "--out", str(tmp / "out.npz"), "--attention", str(f)],
}


@pytest.mark.parametrize("case", GOOD)
def test_both_commands_accept_the_same_files(case, tmp_path, capsys):
    f = GOOD[case](tmp_path / "att.npz")
    codes = {name: main(argv(f, tmp_path)) for name, argv in COMMANDS.items()}
    assert codes == {"regime": 0, "simulate": 0}, capsys.readouterr().err
    heads = load_attention(f)
    assert sorted(heads) == ["K", "Q", "V"] and all(a.dtype == np.float64 for a in heads.values())
    ModelParams(d=D, **heads)


@pytest.mark.parametrize("case", BAD)
def test_both_commands_refuse_the_same_files_with_one_line(case, tmp_path, capsys):
    f = BAD[case](tmp_path / "att.npz")
    for name, argv in COMMANDS.items():
        assert main(argv(f, tmp_path)) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err, (name, err)
    assert not (tmp_path / "out.npz").exists()
    if case != "d of the file != --d":        # caught by ModelParams against --d, not by the file
        with pytest.raises(ParameterError):
            load_attention(f)


def test_the_loader_reads_the_values_it_was_given(tmp_path):
    """Independent of the loader: the arrays np.savez wrote, bit for bit."""
    rng = np.random.default_rng(7)
    Q, K, V = rng.standard_normal((2, D, D)), rng.standard_normal((D, D)), np.asfortranarray(rng.standard_normal((2, D, D)))
    got = load_attention(_npz(tmp_path / "a.npz", Q=Q, K=K, V=V))
    for want, name in ((Q, "Q"), (K, "K"), (V, "V")):
        assert np.array_equal(got[name], want)
