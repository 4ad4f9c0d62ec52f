"""Test configuration: hypothesis profiles (derandomized in CI) and shared fixtures."""
import os

# One BLAS thread per test process, set before anything imports numpy (this file is imported first, in the
# controller and in every pytest-xdist worker; the commands the tests start inherit it).  `-n auto` already runs
# one worker per core, and numba's path threads cover the cores inside a kernel (BLAS is single-threaded there:
# numeric.blas_threads); a multi-threaded OpenBLAS outside the kernels (numpy's lstsq, cov, dot in the checkers)
# only oversubscribes the cores, and its waiting threads spin: one lstsq of 10000 x 9 paths took 32 ms of CPU
# on 2 threads at load ~10 against 0.7 ms on one.  Dask's workers get the same (distributed's pre-spawn environ).
# A developer who sets OPENBLAS_NUM_THREADS keeps it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None, max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("dev", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# Derandomized unless a developer asks for randomized search (HYPOTHESIS_PROFILE=dev or long): the
# README's test line and CI then test the same examples on every machine.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
