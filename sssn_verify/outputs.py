"""Every file the toolkit writes goes through here: checked first, written atomically.

:func:`output_path` checks a target completely before any work starts; :func:`write_atomic`
writes a temporary file, fsyncs it and renames it over the target (an interrupted write leaves
the previous file); :func:`private_folder`, :func:`cache_folder` and :func:`numba_cache_dir`
are the user-only cache folders, whose whole tree is checked before anything is loaded.

More (moved from this docstring): docs/modules.md, ``sssn_verify.outputs``.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Union

from .errors import OutputError

Data = Union[bytes, str, Callable]

#: figure formats matplotlib writes without extra packages
IMAGE_EXTENSIONS = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def output_path(path, *, extensions: tuple[str, ...] = (), default_ext: str | None = None,
                what: str = "output") -> tuple[Path, str | None]:
    """Check `path` as an output target; return (path to write, note or None).

    With `extensions`, a name whose extension is not one of them is refused, unless
    it has no extension at all: then `default_ext` is appended and the note says so.
    """
    if path is None or str(path) == "":
        raise OutputError(f"{what}: empty file name")
    if "\x00" in str(path):
        raise OutputError(f"{what}: the file name contains a NUL character")
    p = Path(os.path.expanduser(str(path)))
    note = None
    check_name(p, what=what)
    if os.path.isdir(p):
        raise OutputError(f"{what} {str(p)!r} is a folder; give a file name (inside it, e.g. {str(p / 'out')!r})")
    if os.path.exists(p) and not os.path.isfile(p):   # (before an extension is added: --out /dev/null)
        raise OutputError(f"{what} {str(p)!r} exists and is a device, FIFO or socket, not a regular file")
    if extensions:
        ext = p.suffix.lower()
        if not ext and default_ext:
            p = p.with_name(p.name + default_ext)
            note = f"{what}: no extension given, writing {p}"
        elif ext not in extensions:
            raise OutputError(f"{what} {str(path)!r}: extension {ext or '(none)'} is not supported "
                              f"(use {', '.join(extensions)})")
    check_name(p, what=what)
    check_folder(p.parent, what=what)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p, note
    except OSError as exc:
        raise OutputError(f"{what} {str(p)!r}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{what} {str(p)!r} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a device, FIFO or socket"
        raise OutputError(f"{what} {str(p)!r} exists and is {kind}, not a regular file; refusing to replace it")
    if not st.st_mode & stat.S_IWUSR or not os.access(p, os.W_OK):
        # rename would still replace it (and root may write anything): refuse read-only files
        raise OutputError(f"{what} {str(p)!r} exists and is read-only")
    return p, note


#: room kept in a file name for write_atomic's temporary (".NAME.XXXXXXXX.tmp")
_TEMP_EXTRA = 16


def check_name(path, *, what: str = "output") -> None:
    """`path`'s name and length fit the file system, temporary-file suffix included."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX") if folder.exists() else 255
        path_max = os.pathconf(folder, "PC_PATH_MAX") if folder.exists() else 4096
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    if len(os.fsencode(p.name)) + _TEMP_EXTRA > name_max:
        raise OutputError(f"{what}: the file name is {len(os.fsencode(p.name))} bytes long; at most "
                          f"{name_max - _TEMP_EXTRA} are possible here")
    if len(os.fsencode(str(p.absolute()))) + _TEMP_EXTRA > path_max:
        raise OutputError(f"{what}: the path is longer than {path_max - _TEMP_EXTRA} bytes")


def check_folder(folder, *, what: str = "output", create: bool = False) -> Path:
    """`folder` exists (or is created when `create`), is a folder and a file can be created in it."""
    f = Path(os.path.expanduser(str(folder))) if str(folder) else Path(".")
    if create:
        try:
            f.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{what}: cannot create folder {str(f)!r}: {exc.strerror or exc}") from None
    if not f.exists():
        raise OutputError(f"{what}: folder {str(f)!r} does not exist")
    if not f.is_dir():
        raise OutputError(f"{what}: {str(f)!r} is not a folder")
    try:   # probe with a real file: access() says yes to root even where writing fails
        with tempfile.TemporaryFile(dir=f, prefix=".sssn-verify-probe-"):
            pass
    except OSError as exc:
        raise OutputError(f"{what}: folder {str(f)!r} is not writable ({exc.strerror or exc})") from None
    return f


def staging_folder(target, *, what: str = "report") -> Path:
    """A fresh private folder beside the folder `target` (same parent, so one rename swaps it in):
    a run writes its whole output there and :func:`swap_in` replaces `target` at the end, so the
    target is always one run's complete output, never a mixture."""
    t = Path(os.path.expanduser(str(target)))
    if not t.name:
        raise OutputError(f"{what}: {str(target)!r} names no folder")
    check_name(t.with_name(t.name + ".previous"), what=what)
    parent = check_folder(t.parent if str(t.parent) else Path("."), what=what, create=True)
    if t.is_symlink():       # the swap would replace the link, not fill the folder it names (as for files)
        raise OutputError(f"{what}: {str(t)!r} is a symbolic link; refusing to replace it (name the folder it "
                          f"points to, {os.path.realpath(t)!r})")
    if t.exists() and not t.is_dir():
        raise OutputError(f"{what}: {str(t)!r} exists and is not a folder")
    try:
        staged = Path(tempfile.mkdtemp(dir=parent, prefix=f".{t.name}.partial-"))
        os.chmod(staged, 0o777 & ~_umask())          # the mode a plain mkdir would give
        return staged
    except OSError as exc:
        raise OutputError(f"{what}: cannot create a folder in {str(parent)!r} ({exc.strerror or exc})") from None


def swap_in(staged, target) -> Path | None:
    """Rename the complete folder `staged` to `target`; a previous `target` is moved aside to
    ``TARGET.previous`` first (replacing an older one there).  Returns that path, or None."""
    staged, t = Path(staged), Path(os.path.expanduser(str(target)))
    aside = t.with_name(t.name + ".previous") if t.exists() else None
    if aside is not None:
        if aside.is_dir() and not aside.is_symlink():
            import shutil
            shutil.rmtree(aside)
        elif aside.exists() or aside.is_symlink():
            aside.unlink()
        os.rename(t, aside)
    os.rename(staged, t)
    return aside


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path, data: Data, *, mode: int | None = None, what: str = "output") -> Path:
    """Write `data` (bytes, text, or a callable writing into a binary file object) to `path`.

    The content goes to a temporary file in the same folder, is fsynced, and is renamed
    over `path`; on any failure (including Ctrl-C or a file-size limit) the temporary is
    removed and `path` is untouched.  `mode` defaults to 0o666 minus the umask.
    """
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {str(folder)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, (0o666 & ~_umask()) if mode is None else mode)
        os.replace(tmp, p)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"{what}: writing {str(p)!r} failed ({exc.strerror or exc}); "
                              "any previous file is unchanged") from None
        raise
    return p


def private_folder(path) -> Path:
    """Create `path` (mode 0700) or check it: owned by this user, not writable by others."""
    p = Path(path)
    try:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(p)
    except FileExistsError:                 # a file (or a device) where the folder should be
        raise OutputError(f"cache folder {str(p)!r} exists and is not a folder") from None
    except OSError as exc:
        raise OutputError(f"cache folder {str(p)!r}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cache folder {str(p)!r} is not a folder")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise OutputError(f"cache folder {str(p)!r} belongs to another user; refusing to use it "
                          "(set SSSN_VERIFY_CACHE to a folder of yours)")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OutputError(f"cache folder {str(p)!r} is writable by other users; refusing to use it "
                          f"(chmod go-w it, or set SSSN_VERIFY_CACHE)")
    return p


def read_cache_file(path, *, max_bytes: int) -> bytes | None:
    """The bytes of a file the package wrote into a private cache folder, or None when it is absent or
    not to be trusted (then the caller rebuilds it and writes it whole): not a regular file (a FIFO
    never blocks: opened without blocking, a symbolic link not followed), owned by another user,
    writable by group or others, or larger than `max_bytes` (a planted 1 GB table is not read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(str(path), flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes
                or (hasattr(os, "getuid") and st.st_uid != os.getuid())
                or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            return None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def cache_root() -> Path:
    """The root of every cache of the package: ``$SSSN_VERIFY_CACHE``, else
    ``$XDG_CACHE_HOME/sssn_verify`` (``~/.cache/sssn_verify``)."""
    root = os.environ.get("SSSN_VERIFY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sssn_verify")
    return Path(root)


def cache_folder(*parts: str) -> Path:
    """The private folder ``<cache root>/<parts...>``, every level created (0700) or checked."""
    folder = private_folder(cache_root())
    for part in parts:
        folder = private_folder(folder / part)
    return folder


#: set when the package chose NUMBA_CACHE_DIR (the user had not): the folder is then created private
_NUMBA_DEFAULT: dict = {}


def default_numba_cache() -> None:
    """Point numba's cache at ``<cache root>/numba`` unless the user set ``NUMBA_CACHE_DIR``.

    Called when the package is imported, before any of its modules imports numba (numba reads
    the variable when a ``cache=True`` function is defined; a numba imported earlier re-reads it).
    Nothing is created or checked here: :func:`numba_cache_dir` does that before the first use."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    path = str(cache_root() / "numba")
    os.environ["NUMBA_CACHE_DIR"] = path
    _NUMBA_DEFAULT["path"] = path
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.reload_config()


def check_tree(root, *, what: str = "cache folder") -> Path:
    """`root` and everything below it: owned by this user, not writable by group or others, and
    no symbolic links inside (a planted file cannot be slipped in by another user).  Raises
    OutputError naming the first offender."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    fix = "(chmod -R go-w it, or point SSSN_VERIFY_CACHE / NUMBA_CACHE_DIR at a folder of yours)"

    def check(path: str, st) -> None:
        if uid is not None and st.st_uid != uid:
            raise OutputError(f"{what} {path!r} belongs to another user; refusing to load from it {fix}")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise OutputError(f"{what} {path!r} is writable by other users; refusing to load from it {fix}")

    top = str(root)
    try:
        check(top, os.stat(top))
        stack = [top]
        while stack:
            folder = stack.pop()
            with os.scandir(folder) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISLNK(st.st_mode):
                        raise OutputError(f"{what} {entry.path!r} is a symbolic link; refusing to load "
                                          f"from {top!r} {fix}")
                    check(entry.path, st)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"{what} {top!r}: {exc.strerror or exc}") from None
    return Path(top)


def numba_cache_dir() -> Path:
    """numba's cache folder (``NUMBA_CACHE_DIR``, set by :func:`default_numba_cache` unless the user
    set it), created 0700 if missing, and its whole tree checked (:func:`check_tree`) once per
    process before numba loads anything from it.  Without ``NUMBA_CACHE_DIR`` numba would use the
    ``__pycache__`` folders next to the sources, which nobody checks."""
    if not os.environ.get("NUMBA_CACHE_DIR"):
        default_numba_cache()
    return _checked_numba_tree(os.environ["NUMBA_CACHE_DIR"])


def check_numba_environment() -> None:
    """NUMBA_NUM_THREADS and NUMBA_THREADING_LAYER, when the user set them, name something numba can
    use: numba itself raises a bare ValueError at its import (threads <= 0) or at the first parallel
    kernel (a layer that is unknown or not installed, e.g. tbb).  ParameterError naming the variable;
    numba is imported only to try a layer the user named."""
    from .errors import ParameterError
    threads = os.environ.get("NUMBA_NUM_THREADS")
    if threads:
        try:
            ok = int(threads) >= 1
        except ValueError:
            ok = False
        if not ok:
            raise ParameterError("NUMBA_NUM_THREADS", threads, "must be a positive integer (or unset)")
    layer = os.environ.get("NUMBA_THREADING_LAYER")
    if layer and layer != "default":
        try:
            from numba.np.ufunc.parallel import _launch_threads
            _launch_threads()
        except (ValueError, ImportError, RuntimeError) as exc:
            raise ParameterError("NUMBA_THREADING_LAYER", layer, "is not usable here "
                                 f"({' '.join(str(exc).split())[:120]}); unset it, or name an installed layer "
                                 "(workqueue is always there)") from None


@lru_cache(maxsize=None)
def _checked_numba_tree(path: str) -> Path:
    private_folder(path)
    return check_tree(path, what="numba cache folder")
