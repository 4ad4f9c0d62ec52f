"""The numeric half: numba engine, kernels, rates (imports no sympy).

Importing it checks numba's cache folder first (``outputs.numba_cache_dir``: created private,
its tree owned by the user and writable by nobody else), before any ``@njit(cache=True)``
function of the engine is defined or loaded from it."""
from ..outputs import numba_cache_dir as _numba_cache_dir

_numba_cache_dir()
