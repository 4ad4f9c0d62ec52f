"""The one seeding scheme.

A user seed becomes one distinct 32-bit seed per Monte Carlo path through numpy's
``SeedSequence`` (:func:`path_seeds`).  Inside the numba kernels each path owns its own
generator state seeded from that entry (SplitMix64 + ziggurat normals,
``numeric/fields.py``: ``rng_state``, ``normal``).  Results therefore depend on the seed
and the path index only: bit-identical whatever the number of threads and however paths
are split into chunks.  Set-up draws outside the kernels (initial tokens, test data) use
:func:`generator`, a numpy Generator on a separate stream of the same seed.
"""
from __future__ import annotations

import numpy as np

from ..params import check_int


def path_seeds(seed: int, n_paths: int, stream: int = 0) -> np.ndarray:
    """Distinct uint32 seeds for paths 0..n_paths-1 of `stream` under `seed`.

    ``stream`` separates independent uses of one user seed (e.g. initial
    tokens vs. dynamics).  Seeds are deduplicated deterministically so that no
    two paths share a generator state.
    """
    seed = check_int("seed", seed, 0)
    n_paths = check_int("n_paths", n_paths, 0)
    ss = np.random.SeedSequence(entropy=seed, spawn_key=(stream,))
    words = ss.generate_state(n_paths + 64, dtype=np.uint32)
    _, first = np.unique(words, return_index=True)
    unique_in_order = words[np.sort(first)]
    extra = 1
    while unique_in_order.size < n_paths:  # astronomically rare; stays deterministic
        more = np.random.SeedSequence(entropy=seed, spawn_key=(stream, extra)).generate_state(
            n_paths + 64, dtype=np.uint32)
        merged = np.concatenate([unique_in_order, more])
        _, first = np.unique(merged, return_index=True)
        unique_in_order = merged[np.sort(first)]
        extra += 1
    return unique_in_order[:n_paths].astype(np.int64)


def generator(seed: int, stream: int = 0) -> np.random.Generator:
    """A numpy Generator for set-up work (initial tokens, parameter draws) under `seed`."""
    seed = check_int("seed", seed, 0)
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(1_000_000 + stream,)))


def uniform_sphere(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """Points uniform on S^{d-1}, array of shape (*shape, d)."""
    z = rng.standard_normal((*shape, d))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)
