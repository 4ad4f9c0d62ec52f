"""driver.PathKernel: generated range kernels run over path ranges on threads, the first call of a
process under the kernel's lock file (so two processes never compile one kernel at once)."""
from __future__ import annotations

import fcntl
import os
import threading

import numpy as np

from sssn_verify.numeric.driver import PathKernel


def _locked_elsewhere(path) -> bool:
    """True when another open file description holds the flock of `path`."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def test_first_call_runs_path_zero_under_the_lock_and_the_rest_outside(tmp_path):
    lock = tmp_path / "k.lock"
    calls, guard = [], threading.Lock()

    def fn(start, stop, out):
        with guard:                       # one probe at a time: two probes would see each other's flock
            calls.append((start, stop, _locked_elsewhere(lock)))
        for p in range(start, stop):
            out[p] = p * p

    kernel = PathKernel(fn, lock)
    out = np.zeros(9)
    kernel(9, out)
    assert calls[0] == (0, 1, True)                           # compiled (or loaded) once, locked
    assert all(not held for _, _, held in calls[1:])
    assert sorted((a, b) for a, b, _ in calls[1:])[0][0] == 1 and max(b for _, b, _ in calls) == 9
    assert np.array_equal(out, np.arange(9.0) ** 2)
    calls.clear()
    kernel(5, out)                                            # later calls: no lock, every path
    assert not any(held for _, _, held in calls) and sum(b - a for a, b, _ in calls) == 5


def test_the_ranges_cover_every_path_once_whatever_the_thread_count():
    import numba
    saved = numba.get_num_threads()
    try:
        for threads in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            for n in (1, 2, 7, 64):
                hits = np.zeros(n, int)

                def fn(start, stop, hits):
                    hits[start:stop] += 1

                PathKernel(fn)(n, hits)
                assert np.all(hits == 1), (threads, n)
    finally:
        numba.set_num_threads(saved)
