"""One level of parallelism on the cores: threads over paths, BLAS single-threaded.

The engine's kernels run path ranges on ``numba.get_num_threads()`` threads
(``driver.PathKernel``), and inside a path the matrix products go to BLAS (numba's
``np.dot``, scipy's OpenBLAS).  A multi-threaded BLAS called from every such thread at once oversubscribes the cores (2 x 2 threads on a 2-core machine), so while
a parallel kernel runs, :func:`single_threaded_blas` sets the OpenBLAS libraries loaded in
the process to one thread and restores their count afterwards.  With one numba thread the
kernel runs one path at a time and BLAS keeps its own threads (the other split; the
benchmark ``benchmarks/bench_engine.py --splits`` times both).  Best effort: where the
libraries cannot be found (not Linux, another BLAS) nothing changes.
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager
from functools import lru_cache

_PAIRS = (("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
          ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"))


@lru_cache(maxsize=1)
def _controls() -> tuple:
    """(get, set) ctypes functions of every OpenBLAS loaded in this process."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (the BLAS numba's np.dot calls: load it first)
    except ImportError:
        pass
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
    except OSError:
        return ()
    out = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, set_ in _PAIRS:
            if hasattr(lib, get) and hasattr(lib, set_):
                g, s = getattr(lib, get), getattr(lib, set_)
                g.restype, g.argtypes = ctypes.c_int, []
                s.restype, s.argtypes = None, [ctypes.c_int]
                out.append((g, s))
                break
    return tuple(out)


@contextmanager
def single_threaded_blas(active: bool = True):
    """BLAS on one thread inside the block (when `active`), its thread counts restored after."""
    controls = _controls() if active else ()
    saved = [g() for g, _ in controls]
    try:
        for _, s in controls:
            s(1)
        yield
    finally:
        for (_, s), n in zip(controls, saved):
            s(n)
