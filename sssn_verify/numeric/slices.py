"""Kernel calls in slices of about SLICE_SECONDS, so that Ctrl-C is seen within a second.

A numba kernel does not see signals: Ctrl-C (KeyboardInterrupt) is raised when it returns to
Python.  The engine's drivers (paths) and the experiments' harness (blocks of paths) therefore
call their parallel kernel on consecutive slices of their units, sized by the rate measured so
far.  Every unit owns its generator state and its output rows, so slicing never changes a
number; it bounds how long Ctrl-C waits to about SLICE_SECONDS, or one unit's time when a
single unit is longer.
"""
from __future__ import annotations

import time

#: seconds of kernel time between two returns to Python (the progress bar moves then)
SLICE_SECONDS = 0.4


def time_slices(n_units: int, threads: int, seconds: float | None = None):
    """Slices (a, b) of range(n_units): a first slice of one unit per thread (it may include the
    compile), then slices of about `seconds` (SLICE_SECONDS) at the rate measured so far (a
    multiple of the thread count).  The caller runs units a..b-1 between two yields."""
    seconds = SLICE_SECONDS if seconds is None else seconds
    a, size, spent, done = 0, min(n_units, threads), 0.0, 0
    while a < n_units:
        b = min(n_units, a + size)
        t0 = time.perf_counter()
        yield a, b
        dt = time.perf_counter() - t0
        if a > 0 or b == n_units:               # the first slice may hold the compile: not a rate
            spent, done = spent + dt, done + (b - a)
        per_unit = (spent / done) if done else dt / (b - a)
        size = max(threads, int(seconds / max(per_unit, 1e-9)) // threads * threads)
        a = b


def run_sliced(call, n_units: int, done=None) -> None:
    """call(a, b) over the :func:`time_slices` of range(n_units) with numba's threads over units and
    BLAS on one thread (``blas_threads``); done(b - a) after each slice (a progress bar)."""
    import numba

    from .blas_threads import single_threaded_blas
    threads = numba.get_num_threads()
    with single_threaded_blas(threads > 1):
        for a, b in time_slices(n_units, threads):
            call(a, b)
            if done is not None:
                done(b - a)
