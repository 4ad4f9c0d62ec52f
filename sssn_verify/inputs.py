"""Every file the toolkit reads from the user goes through here: checked before it is read.

* :func:`open_input` opens without blocking (``O_NONBLOCK``) and accepts only a regular
  file no larger than a limit: a FIFO, a device, a socket or a folder is refused at once
  (a FIFO never blocks the process, ``/dev/zero`` is never read).
* :func:`load_npy` reads a single ``.npy`` array (``simulate --init``): its header (dtype,
  shape) is checked against the limits before its data is read; no pickles.  (Attention
  ``.npz`` files have their own loader, ``params.load_attention``, with the same rules:
  sizes from the zip directory and shapes from the headers before decompression.)
* :func:`load_json` reads a size-limited JSON document (deep nesting is an error, not a
  crash; ``NaN``/``Infinity`` are refused, as JSON has none) and validates it against a
  JSON schema when one is given; :func:`report_schema` is report.json's (package data,
  ``sssn_verify/report.schema.json``, shipped by every install; ``docs/report.schema.json`` links to it).

Limits (:mod:`sssn_verify.limits`): ``MAX_INPUT_BYTES`` per file, ``MAX_ARRAY_BYTES`` per
array (uncompressed), ``MAX_REPORT_BYTES`` for report.json.
"""
from __future__ import annotations

import io
import json
import os
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ParameterError
from .limits import MAX_ARRAY_BYTES, MAX_INPUT_BYTES

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symbolic link"}


def open_input(path, *, what: str, max_bytes: int = MAX_INPUT_BYTES) -> io.BufferedReader:
    """A binary reader of the regular file `path` (at most `max_bytes`); ParameterError otherwise."""
    if path is None or str(path) == "":
        raise ParameterError(what, path, "must name a file")
    name = os.path.expanduser(str(path))
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ParameterError(what, str(path), f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise ParameterError(what, str(path), f"is {kind}, not a regular file")
        if st.st_size > max_bytes:
            raise ParameterError(what, str(path), f"is {st.st_size} bytes, more than {max_bytes} "
                                                  "(documented limit)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _header(fh, what: str, member: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of a .npy stream from its header alone; refuses object arrays."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"npy format version {version}")
    except (ValueError, EOFError, OSError, SyntaxError) as exc:
        raise ParameterError(what, member, f"is not a readable .npy array ({type(exc).__name__})") from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise ParameterError(what, member, f"has dtype {dtype}, not a real numeric array")
    return tuple(int(n) for n in shape), dtype


def _check_size(shape, dtype, what: str, member: str, max_bytes: int) -> None:
    n = int(np.prod(shape, dtype=object)) * dtype.itemsize if shape else dtype.itemsize
    if n > max_bytes:
        raise ParameterError(what, member, f"shape {shape} is {n} bytes, more than {max_bytes} (documented limit)")


def load_npy(path, *, what: str, max_bytes: int = MAX_ARRAY_BYTES) -> np.ndarray:
    """The real array of a ``.npy`` file, its header checked before its data is read."""
    with open_input(path, what=what) as fh:
        shape, dtype = _header(fh, what, str(path))
        _check_size(shape, dtype, what, str(path), max_bytes)
        fh.seek(0)
        try:
            return np.lib.format.read_array(fh, allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise ParameterError(what, str(path), f"is not a readable .npy array ({type(exc).__name__})") from None


def load_json(path, *, what: str, max_bytes: int, schema: dict | None = None) -> Any:
    """A JSON document from the regular file `path` (at most `max_bytes`), validated against
    `schema` (jsonschema) when given; every failure is one ParameterError.  Not JSON here: NaN,
    Infinity, numbers beyond the double range (1e999), a key twice in one object."""
    with open_input(path, what=what, max_bytes=max_bytes) as fh:
        raw = fh.read(max_bytes + 1)
    def no_constant(name):
        raise ValueError(f"{name} is not JSON (numbers must be finite; we write \"inf\" or null)")

    def no_float_overflow(text):
        value = float(text)
        if not np.isfinite(value):              # 1e999: Python's json reads it as inf
            raise ValueError(f"number {text[:20]} is beyond the double range")
        return value

    def unique_keys(pairs):                     # {"claims": [..], "claims": []}: readers disagree
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            twice = sorted({k for k in keys if keys.count(k) > 1})
            raise ValueError(f"key {twice[0][:40]!r} appears twice in one object")
        return dict(pairs)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=no_constant, parse_float=no_float_overflow,
                          object_pairs_hook=unique_keys)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParameterError(what, str(path), f"is not valid JSON ({str(exc)[:80]})") from None
    except RecursionError:
        raise ParameterError(what, str(path), "is nested too deeply to be a JSON document of ours") from None
    if schema is not None:
        from jsonschema import Draft202012Validator
        err = next(iter(Draft202012Validator(schema).iter_errors(data)), None)
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "(top)"
            raise ParameterError(what, str(path), f"does not match its schema at {where}: {err.message[:120]}")
    return data


def zip_entry_count(path, *, what: str, max_bytes: int) -> int:
    """The number of members a zip file declares in its end-of-central-directory record, read from its
    last 64 KiB only: a zip of a million empty members is refused before ``zipfile`` builds a million
    records (400 MB, 6 s for 500 000).  A zip64 count (0xFFFF) is returned as is: more than any of ours."""
    import struct
    with open_input(path, what=what, max_bytes=max_bytes) as fh:
        size = fh.seek(0, os.SEEK_END)
        n = min(size, 22 + 65535)
        fh.seek(size - n)
        tail = fh.read(n)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise ParameterError(what, str(path), "is not a readable .npz file (no zip directory)")
    return struct.unpack("<H", tail[at + 10:at + 12])[0]


@lru_cache(maxsize=1)
def report_schema() -> dict:
    """The JSON schema of report.json: ``report.schema.json`` of the installed package (package data,
    so a non-editable install has it too; ``docs/report.schema.json`` is a link to it)."""
    from importlib.resources import files
    return json.loads(files("sssn_verify").joinpath("report.schema.json").read_text(encoding="utf-8"))


__all__ = ["open_input", "load_npy", "load_json", "report_schema", "zip_entry_count"]
