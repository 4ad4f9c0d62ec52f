"""Documented maxima of every size the toolkit accepts, and the checks that enforce them.

Each limit fails early with a one-line :class:`~sssn_verify.errors.ParameterError` or
:class:`~sssn_verify.errors.ResourceError` instead of a hang, an allocation of terabytes
or an overflow; the numbers are also in the README, section "Limits".

More (moved from this docstring): docs/modules.md, ``sssn_verify.limits``.
"""
from __future__ import annotations

import math
import os

from .errors import ParameterError, ResourceError

MAX_D = 512
MAX_SIGMA = 1e6
MAX_BETA = 1e6
MAX_MATRIX_ENTRY = 1e6
MAX_HEADS = 16
MAX_HIDDEN = 8
MAX_WIDTH = 10**7
MAX_GRID = 400
MAX_SEEDS = 10_000
MAX_SEED = 2**63 - 1
MAX_INPUT_BYTES = 64 * 2**20
MAX_REPORT_BYTES = 16 * 2**20
MAX_ARRAY_BYTES = 256 * 2**20
MEMORY_FRACTION = 0.5


def check_at_most(name: str, value, maximum, why: str = "") -> None:
    """ParameterError when `value` > `maximum` (a documented limit)."""
    try:
        big = value > maximum
    except TypeError:
        return
    if big:
        raise ParameterError(name, value, f"must be <= {maximum:g} (documented limit{'; ' + why if why else ''})")


def parse_seeds(text: str) -> list[int]:
    """Seeds from the command line: ``A:B`` (A, ..., B-1), ``A,B,C`` or one seed; at most
    :data:`~sssn_verify.limits.MAX_SEEDS` of them, each at most ``MAX_SEED`` (checked on the
    text and the range's ends, before any list is built)."""
    raw = str(text).strip()
    shown = raw if len(raw) <= 40 else raw[:37] + "..."
    if raw.count(",") >= MAX_SEEDS or len(raw) > 40 * MAX_SEEDS:
        raise ParameterError("seeds", shown, f"names more than {MAX_SEEDS} seeds (documented limit)")
    try:
        if ":" in raw:
            a, b = (int(x) for x in raw.split(":"))
            ends = [a, b - 1] if b > a else []
        else:
            ends = [int(x) for x in raw.split(",")]
    except ValueError:
        raise ParameterError("seeds", shown, "must be A:B (seeds A..B-1), a list A,B,C or one seed") from None
    if ":" in raw and b - a > MAX_SEEDS:
        raise ParameterError("seeds", shown, f"names {b - a} seeds, more than {MAX_SEEDS} (documented limit)")
    if not ends or min(ends) < 0 or max(ends) > MAX_SEED:
        raise ParameterError("seeds", shown, f"must name at least one seed, each >= 0 and <= {MAX_SEED}")
    seeds = list(range(a, b)) if ":" in raw else ends
    if len(set(seeds)) != len(seeds):
        raise ParameterError("seeds", shown, "must name distinct seeds")
    return seeds


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable on Linux; physical memory otherwise)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def check_memory(n_bytes: float, what: str) -> None:
    """ResourceError when an estimated `n_bytes` exceeds MEMORY_FRACTION of available memory."""
    avail = available_memory()
    if not math.isfinite(n_bytes) or n_bytes > MEMORY_FRACTION * avail:
        raise ResourceError(f"{what} needs about {_size(n_bytes)}, more than {MEMORY_FRACTION:.0%} of the "
                            f"{_size(avail)} available; use fewer paths, tokens, layers or a smaller width/d")


def simulation_bytes(n_paths: int, n_tokens: int, d: int, depth: int, width: int | None = None,
                     store_every: int = 0, n_betas: int = 1, threads: int | None = None) -> float:
    """Estimated peak bytes of a simulation: tokens, initial tokens, per-layer energies and
    stored trajectories of every path, plus per-thread work arrays (literal MLP weights
    m x (d + 2), tangents)."""
    threads = threads or os.cpu_count() or 1
    stored = (depth // store_every + 1) * n_tokens * d if store_every > 0 else 0
    per_path = 8.0 * (4 * n_tokens * d + (depth + 1) * (1 + n_betas) + 2 * d * d + stored)
    # finite width: Z, Xi (N x m), W (d x m), b (m), A (m x d) per running path
    per_thread = 8.0 * ((width or 0) * (2 * n_tokens + 2 * d + 1) + 4 * n_tokens * (d + n_tokens))
    return n_paths * per_path + threads * per_thread


def check_simulation(n_paths: int, n_tokens: int, d: int, depth: int, width: int | None = None,
                     store_every: int = 0, n_betas: int = 1) -> None:
    """The documented limits and the memory estimate of one simulation."""
    check_at_most("d", d, MAX_D)
    if width is not None:
        check_at_most("width", width, MAX_WIDTH)
    check_memory(simulation_bytes(n_paths, n_tokens, d, depth, width, store_every, n_betas),
                 "this simulation")


def _size(n: float) -> str:
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover
