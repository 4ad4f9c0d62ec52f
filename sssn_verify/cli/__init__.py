"""The ``sssn-verify`` command line.

Every sub-command lives in its own module of this package and exposes
``register(subparsers)``; the module adds its parser and sets ``func``.
Any :class:`~sssn_verify.errors.SSSNError` (bad input, blow-up) becomes a
one-line message on stderr and exit code 2, but a
:class:`~sssn_verify.errors.NumericalError` (the toolkit's own numbers failed at valid input) exit
code 4 (``verify`` records a claim whose checker failed so, writes every result, table, JSON and
report, then exits 4 with one line, or 1 if another claim failed its checks); Ctrl-C exits 130 with one line (SIGTERM and
SIGHUP: 128 + the signal's number, with one line); a
closed pipe (``| head``) ends quietly; any other exception is a bug: one line
asking for a report, the traceback saved to a file, exit code 3
(``SSSN_VERIFY_DEBUG=1`` re-raises it instead).
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import sys
import warnings

from ..errors import NumericalError, SSSNError
from ..escape import terminal

_NOT_COMMANDS = {"common"}


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line error contract (no usage block), exit code 2; help shows defaults
    and keeps the examples' lines (``common.HelpFormatter``)."""

    def __init__(self, *args, **kwargs):
        from .common import HelpFormatter
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command, or (given `argv` naming one: ``regime ...``) of that one
    only, so a command imports what it uses and not every other command's modules."""
    parser = _Parser(
        prog="sssn-verify",
        description="Derive (sympy) and confirm (numba Monte Carlo) the formulas of "
                    "'stochastic scaling limits and synchronization by noise' for deep transformers.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"sssn-verify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = sorted(m.name for m in pkgutil.iter_modules(__path__)
                   if m.name not in _NOT_COMMANDS and not m.name.startswith("_"))
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    module = first.replace("-", "_") if first else None
    if module in names:
        importlib.import_module(f"{__name__}.{module}").register(sub)
        if first in sub.choices:
            return parser
    for name in names:
        if name != module:
            importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def _crash_report(command: str) -> str:
    """Save the current traceback to a private file; return its path (or a note)."""
    import tempfile
    import traceback
    from datetime import datetime, timezone
    from .. import __version__
    text = (f"sssn-verify {__version__} {command!r} {datetime.now(timezone.utc).isoformat()}\n"
            f"argv: {sys.argv!r}\npython {sys.version}\n\n{traceback.format_exc()}")
    try:
        fd, path = tempfile.mkstemp(prefix="sssn-verify-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        return path
    except OSError:
        return "(could not save it; run again with SSSN_VERIFY_DEBUG=1 to see it)"


def _quiet_pipe_exit() -> int:
    """stdout's reader went away (``| head``): stop quietly, without a BrokenPipeError later."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141          # what a shell reports for a filter ended by SIGPIPE


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: the run stops with one line, like Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


#: seconds a run may take to unwind after SIGTERM/SIGHUP before the process ends anyway, with its line
LAST_RESORT_S = 30.0
_last_resort = []


def _on_signal(signum, frame):
    """Raise _Terminated in the main thread; the first signal also arms a last resort, so that code which
    swallows the exception (a third-party ``except BaseException``) cannot turn a stop into a hang."""
    if not _last_resort:
        import threading
        t = threading.Timer(LAST_RESORT_S, _end_now, (signum,))
        t.daemon = True
        t.start()
        _last_resort.append(t)
    raise _Terminated(signum)


#: how long after an "ignored" signal exception (see :func:`_redeliver`) the signal is sent again
REDELIVER_S = 0.05


def _redeliver(previous_hook, unraisable):
    """``sys.unraisablehook`` while a command runs.  Python runs a signal handler between any two bytecodes of
    the main thread, also inside a gc callback or a ``__del__`` (hypothesis registers a gc callback); an exception
    raised there cannot propagate, so Python prints "Exception ignored in ..." with a traceback and the stop is
    lost (seen: SIGTERM during ``find``).  Such an exception from a signal (_Terminated, KeyboardInterrupt) is
    kept quiet and the signal sent again a moment later, from a helper thread, so that it lands in ordinary code;
    anything else goes to the previous hook."""
    exc = unraisable.exc_value
    if isinstance(exc, (_Terminated, KeyboardInterrupt)):
        import signal
        import threading
        signum = exc.signum if isinstance(exc, _Terminated) else signal.SIGINT
        t = threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signum))
        t.daemon = True
        t.start()
        return
    previous_hook(unraisable)


def _end_now(signum):
    import signal
    _say(f"sssn-verify: stopped by {signal.Signals(signum).name}")
    os._exit(128 + signum)


def _catch_signals():
    """SIGTERM/SIGHUP raise _Terminated (so a signal never kills without its line); returns the
    previous handlers to restore (none off the main thread, where handlers cannot be set)."""
    import signal
    saved = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            saved[sig] = signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            pass
    return saved


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command (exit codes: see :func:`_main`); SIGTERM/SIGHUP end it with one line."""
    saved = _catch_signals()
    from functools import partial
    previous_hook = sys.unraisablehook
    sys.unraisablehook = partial(_redeliver, previous_hook)
    try:
        return _main(argv)
    except _Terminated as exc:
        import signal
        _say(f"sssn-verify: stopped by {signal.Signals(exc.signum).name}")
        return 128 + exc.signum
    finally:
        import signal
        sys.unraisablehook = previous_hook
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        while _last_resort:             # the run unwound by itself: no last resort
            _last_resort.pop().cancel()


def _main(argv: list[str] | None = None) -> int:
    """Run one sub-command.  Exit codes: 0 success (or a passing check), 1 a failed
    verification/rejected candidate, 2 bad input (one line on stderr), 3 an internal
    error (one line, traceback saved to a file), 4 an internal numerical failure at valid input
    (one line; ``verify`` still writes every result, the failing claim marked as such, and exits 1
    instead when another claim failed its checks), 130 interrupted."""
    # figures are written with Agg whatever MPLBACKEND says (a bogus value would stop matplotlib's import)
    os.environ["MPLBACKEND"] = "Agg"
    for stream in ("stdout", "stderr"):    # started with 1>&- or 2>&-: Python has None there; discard
        if getattr(sys, stream) is None:
            setattr(sys, stream, open(os.devnull, "w"))
    try:
        parser = build_parser(sys.argv[1:] if argv is None else argv)   # only the command named
        args = parser.parse_args(argv)
        if getattr(args, "func", None):
            # the cache folders (ours, numba's) and numba's variables are checked before a command's
            # modules load: a refusal raised inside a lazily registered module's import reaches
            # `from ... import` as a bare ImportError (exit 3), e.g. SSSN_VERIFY_CACHE naming a file
            from ..outputs import cache_folder, check_numba_environment, numba_cache_dir
            cache_folder()
            numba_cache_dir()
            check_numba_environment()
    except KeyboardInterrupt:
        _say("sssn-verify: interrupted")
        return 130
    except SSSNError as exc:             # e.g. a cache folder refused while the commands load
        _say(f"sssn-verify: error: {' '.join(str(exc).split())}")
        return 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    name = f"sssn-verify {args.command}"
    if not os.environ.get("SSSN_VERIFY_DEBUG"):
        # numpy's overflow/invalid warnings are not messages for users: every result is
        # checked for finiteness and reported as an error or "undetermined" instead
        warnings.simplefilter("ignore", RuntimeWarning)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except NumericalError as exc:        # an internal numerical failure, not bad input
        msg = terminal(" ".join(str(exc).split()))
        _say(f"{name}: numerical failure (not an input error; please report it): {msg}")
        return 4
    except SSSNError as exc:
        msg = terminal(" ".join(str(exc).split()))  # always one line, no control characters
        _say(f"{name}: error: {msg}")
        return 2
    except KeyboardInterrupt:
        _say(f"{name}: interrupted")
        return 130
    except BrokenPipeError:
        return _quiet_pipe_exit()
    except MemoryError:
        _say(f"{name}: error: out of memory; use smaller sizes (see README, 'Limits')")
        return 2
    except OSError as exc:
        if exc.errno not in _WRITE_ERRNOS:
            return _bug(name, args.command, exc)
        # the output could not be written (stdout on a full disk, /dev/full, a failing device): the
        # files we write say so themselves (OutputError); this is the terminal's share
        _say(f"{name}: error: writing the output failed ({exc.strerror or exc})")
        return 2
    except Exception as exc:  # noqa: BLE001 - a bug: one line, the traceback in a file
        return _bug(name, args.command, exc)


#: errors of a write that are the machine's state, not a bug (no space, quota, file too large, I/O)
_WRITE_ERRNOS = {getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, n)}


def _say(text: str) -> None:
    """One line on stderr; a closed or failing stderr (2>&-) loses the line, never the exit code."""
    try:
        print(text, file=sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass


def _bug(name: str, command: str, exc: BaseException) -> int:
    if os.environ.get("SSSN_VERIFY_DEBUG"):
        raise exc
    where = _crash_report(command)
    _say(f"{name}: internal error ({type(exc).__name__}); please report it with the traceback saved in {where}")
    return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
