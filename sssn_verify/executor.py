"""Where independent pieces of work run: in this process, or on a dask.distributed cluster.

The one seam between the toolkit and a cluster.  Callers describe work as
:class:`Task` objects -- a *top-level* function and plain, picklable arguments
(names, numbers, specification strings; never compiled functions or arrays
that the worker could rebuild) -- and hand a list of them to
:meth:`Executor.run`, which returns one :class:`Outcome` per task, *in the
order given*, with its value and timing.  Nothing else in the package knows
which executor runs: :class:`InProcess` (the default) or :class:`Distributed`
(dask.distributed: a local cluster, a scheduler address or a Client).

More (moved from this docstring): docs/modules.md, ``sssn_verify.executor``.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .errors import MissingExtraError, ParameterError
from .params import check_int

EXTRA_HINT = "pip install 'sssn_verify[distributed]'"


@dataclass(frozen=True)
class Task:
    """One independent piece of work: ``fn(*args)``; ``key`` names it in timings and on the dashboard.

    ``fn`` must be importable on a worker (a module-level function) and ``args``
    plain data, so that the task can be shipped, retried and re-run anywhere.
    """

    key: str
    fn: Callable[..., Any]
    args: tuple = ()
    weight: float = 1.0        # expected cost (e.g. seconds): the progress bar's ETA counts it, not tasks


@dataclass(frozen=True)
class Outcome:
    """What one task gave: its value, its wall time on the worker, the worker's name and
    the process-local start time (seconds since the epoch)."""

    key: str
    value: Any
    seconds: float
    worker: str
    started: float

    def timing(self) -> dict[str, Any]:
        return {"key": self.key, "seconds": round(self.seconds, 4), "worker": self.worker,
                "started": round(self.started, 3)}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :meth:`Executor.run`: a KeyboardInterrupt that carries the outcomes of the
    tasks that had finished (``done``, in the order given) and the keys of the others
    (``pending``), so that a caller can still write what was finished."""

    def __init__(self, done: list, pending: list[str]):
        super().__init__(f"interrupted after {len(done)} of {len(done) + len(pending)} tasks")
        self.done, self.pending = list(done), list(pending)


def _execute(fn: Callable[..., Any], args: tuple) -> tuple[Any, float, str, float]:
    """Run one task and time it (runs on the worker)."""
    started = time.time()
    t0 = time.perf_counter()
    value = fn(*args)
    seconds = time.perf_counter() - t0
    try:
        from distributed import get_worker
        where = get_worker().name
        where = f"worker {where}" if not isinstance(where, str) else where
    except (ImportError, ValueError):
        where = "in-process"
    return value, seconds, f"{where}@{socket.gethostname()}:{os.getpid()}", started


class Executor:
    """Runs lists of tasks; see the module docstring.  Use as a context manager."""

    name = "executor"
    n_workers = 1
    dashboard: str | None = None

    def run(self, tasks: Sequence[Task], *, desc: str = "", progress: bool = False) -> list[Outcome]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "workers": self.n_workers, "dashboard": self.dashboard}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcess(Executor):
    """Today's behaviour: the tasks run here, one after the other (a tqdm bar if `progress`)."""

    name = "in-process"

    def run(self, tasks: Sequence[Task], *, desc: str = "", progress: bool = False) -> list[Outcome]:
        tasks = list(tasks)
        bar = None
        weighted = any(t.weight != 1.0 for t in tasks)
        if progress and tasks:
            from tqdm import tqdm
            bar = (tqdm(total=sum(t.weight for t in tasks), file=sys.stderr, desc=desc or None,
                        bar_format="{l_bar}{bar}| {percentage:3.0f}% of the estimated work "
                                   "[{elapsed}<{remaining}{postfix}]")
                   if weighted else tqdm(total=len(tasks), file=sys.stderr, unit="task", desc=desc or None))
        out = []
        try:
            for t in tasks:
                if bar is not None:
                    bar.set_postfix_str(t.key)
                value, seconds, where, started = _execute(t.fn, t.args)
                out.append(Outcome(t.key, value, seconds, where, started))
                if bar is not None:
                    bar.update(t.weight if weighted else 1)
        except Interrupted:
            raise
        except KeyboardInterrupt:
            raise Interrupted(out, [t.key for t in tasks[len(out):]]) from None
        finally:
            if bar is not None:
                bar.close()
        return out


def _require_distributed():
    try:
        import distributed
    except ImportError:
        raise MissingExtraError(f"running on a cluster needs dask.distributed: {EXTRA_HINT}") from None
    return distributed


def _private_cache_plugin():
    """A worker plugin pointing ``SSSN_VERIFY_CACHE`` at a directory inside the worker's own
    local directory, so that each worker generates and compiles its activation modules and
    kernels itself (``Distributed.local(..., private_cache=True)`` imitates workers on
    machines that share no filesystem)."""
    from distributed import WorkerPlugin

    class PrivateCache(WorkerPlugin):
        name = "sssn-verify-private-cache"
        idempotent = True

        def setup(self, worker) -> None:
            path = os.path.join(worker.local_directory, "sssn_verify_cache")
            os.makedirs(path, exist_ok=True)
            os.environ["SSSN_VERIFY_CACHE"] = path

    return PrivateCache()


class Distributed(Executor):
    """Tasks as dask futures on a ``distributed.Client`` (results gathered in task order)."""

    name = "dask.distributed"

    def __init__(self, client, *, cluster=None, owns: bool = False):
        self.client = client
        self.cluster = cluster
        self._owns = owns

    @classmethod
    def local(cls, n_workers: int, *, threads_per_worker: int = 1, private_cache: bool = False,
              numba_threads: int | None = None, env_extra: dict[str, str] | None = None,
              **cluster_kwargs) -> "Distributed":
        """Start a ``LocalCluster`` of `n_workers` worker processes (closed with the executor).

        Each worker runs one task at a time with ``numba_threads`` numba threads (default:
        the machine's cores shared out, at least 1).  ``private_cache=True`` gives every
        worker its own empty ``SSSN_VERIFY_CACHE`` (compiles on the worker, nothing shared);
        ``env_extra`` adds environment variables of the worker processes.
        """
        distributed = _require_distributed()
        n_workers = check_int("workers", n_workers, 1)
        threads_per_worker = check_int("threads_per_worker", threads_per_worker, 1)
        if numba_threads is None:
            numba_threads = max(1, (os.cpu_count() or 1) // (n_workers * threads_per_worker))
        env = {"NUMBA_NUM_THREADS": str(check_int("numba_threads", numba_threads, 1))}
        for name in ("SSSN_VERIFY_CACHE", "PYTHONPATH", "NUMBA_CACHE_DIR"):
            if name in os.environ:
                env[name] = os.environ[name]
        env.update(env_extra or {})
        kwargs = dict(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
                      dashboard_address=":0", env=env, silence_logs=logging.ERROR)
        kwargs.update(cluster_kwargs)
        cluster = distributed.LocalCluster(**kwargs)
        client = distributed.Client(cluster)
        if private_cache:
            client.register_plugin(_private_cache_plugin())
        return cls(client, cluster=cluster, owns=True)

    @classmethod
    def connect(cls, address: str, *, timeout: float = 30) -> "Distributed":
        """Use an existing cluster through its scheduler (``tcp://host:8786``)."""
        distributed = _require_distributed()
        if not isinstance(address, str) or not address.strip():
            raise ParameterError("scheduler", address, "must be a scheduler address like tcp://host:8786")
        try:
            client = distributed.Client(address.strip(), timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ParameterError("scheduler", address, f"cannot connect ({type(exc).__name__}: {exc})") from None
        return cls(client, owns=True)

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    @property
    def dashboard(self) -> str | None:
        try:
            return self.client.dashboard_link
        except Exception:  # no dashboard served (bokeh missing)
            return None

    def run(self, tasks: Sequence[Task], *, desc: str = "", progress: bool = False) -> list[Outcome]:
        from distributed import progress as dask_progress
        tasks = list(tasks)
        if not tasks:
            return []
        token = f"{time.time_ns():x}"
        futures = [self.client.submit(_execute, t.fn, t.args, key=f"{desc or 'task'}-{t.key}-{token}",
                                      pure=False) for t in tasks]
        try:
            if progress and sys.stderr.isatty():
                with contextlib.redirect_stdout(sys.stderr):   # stdout may carry --json
                    dask_progress(futures)
                    sys.stderr.write("\n")
            values = self.client.gather(futures)
        except KeyboardInterrupt:
            done = [(t, f.result()) for t, f in zip(tasks, futures) if f.status == "finished"]
            finished = {t.key for t, _ in done}
            raise Interrupted([Outcome(t.key, *r) for t, r in done],
                              [t.key for t in tasks if t.key not in finished]) from None
        finally:
            for f in futures:
                f.release()
        return [Outcome(t.key, v, s, w, st) for t, (v, s, w, st) in zip(tasks, values)]

    def close(self) -> None:
        if self._owns:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()


def run_path_chunks(spec: Any, fn: Callable[..., Any], kwargs: dict, n_paths: int, progress: bool = False):
    """``fn(**kwargs, paths=(a, b), progress=False)`` over chunks of the `n_paths` paths as tasks,
    concatenated along paths (per-path seeds make this bit-identical to one call)."""
    import dataclasses

    import numpy as np
    with using(spec) as ex:
        n = min(n_paths, 4 * max(1, ex.n_workers))
        edges = np.linspace(0, n_paths, n + 1).astype(int)
        tasks = [Task(f"paths {a}:{b}", _path_chunk, (fn, kwargs, (int(a), int(b))))
                 for a, b in zip(edges[:-1], edges[1:]) if b > a]
        parts = [o.value for o in ex.run(tasks, desc="paths", progress=progress)]
    first = parts[0]
    arrays = {name: np.concatenate([getattr(p, name) for p in parts])
              for name in ("init", "tokens", "energy", "energies", "trajectory", "max_dev", "max_dev_config")
              if getattr(first, name, None) is not None}
    return dataclasses.replace(first, n_paths=n_paths, **arrays)


def _path_chunk(fn, kwargs, paths):
    return fn(**kwargs, paths=paths, progress=False)


def get_executor(spec: Any = None) -> Executor:
    """The executor named by `spec`: None -> in-process; an Executor -> itself; an int N -> a
    LocalCluster of N worker processes; a string -> the scheduler at that address; a
    ``distributed.Client`` -> that client (not closed by the executor)."""
    if spec is None:
        return InProcess()
    if isinstance(spec, Executor):
        return spec
    if isinstance(spec, bool):
        raise ParameterError("executor", spec, "None, a worker count, a scheduler address or a distributed.Client")
    if isinstance(spec, int):
        return Distributed.local(spec)
    if isinstance(spec, str):
        return Distributed.connect(spec)
    if type(spec).__name__ == "Client" and type(spec).__module__.startswith("distributed"):
        return Distributed(spec, owns=False)
    raise ParameterError("executor", type(spec).__name__,
                         "None, a worker count, a scheduler address or a distributed.Client")


@contextlib.contextmanager
def using(spec: Any = None):
    """``with using(spec) as ex:`` -- an executor closed on exit only if it was created here."""
    ex = get_executor(spec)
    try:
        yield ex
    finally:
        if ex is not spec:
            ex.close()


def add_cli_options(p) -> None:
    """--workers N / --scheduler ADDRESS, spelled the same in every sub-command that runs tasks."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help=f"run the tasks on a local dask cluster of N worker processes ({EXTRA_HINT})")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the tasks on an existing dask cluster (e.g. tcp://host:8786)")


def from_cli(args) -> Executor:
    """The executor named by --workers/--scheduler; prints the dashboard address to stderr."""
    workers, address = getattr(args, "workers", None), getattr(args, "scheduler", None)
    if workers is None and address is None:
        return InProcess()
    if workers is not None:
        workers = check_int("workers", workers, 1)
    _require_distributed()
    ex = Distributed.local(workers) if workers is not None else Distributed.connect(address)
    print(f"dask: {ex.n_workers} workers; dashboard: {ex.dashboard or 'not served (install bokeh)'}",
          file=sys.stderr)
    return ex


__all__ = ["run_path_chunks", "Task", "Outcome", "Interrupted", "Executor", "InProcess", "Distributed", "get_executor", "using",
           "add_cli_options", "from_cli", "EXTRA_HINT"]
