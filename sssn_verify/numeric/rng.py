"""The one seeding scheme: a :class:`Key` names every random stream.

A key is a user seed plus a path of names, ``Key(seed).child("lyapunov", "one-step", i)``.
Its stream is numpy's ``SeedSequence(entropy=seed, spawn_key=path)``, so two keys that differ
anywhere in their path give independent streams, and nothing ever adds to or multiplies a seed.
From a key come per-path 64-bit generator states for the numba kernels (:meth:`Key.path_states`;
each path owns a SplitMix64 state with ziggurat normals, ``numeric/fields.py``) and a numpy
Generator for set-up draws (:meth:`Key.generator`).  Results depend on the key and the path index
only: bit-identical whatever the number of threads and however paths are split into chunks.
"""
from __future__ import annotations

import hashlib
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..params import check_int

_STR_TAG = 1 << 64  # names that are strings live above every integer name: the two never meet
_RECORD = threading.local()


def _word(name) -> int:
    if isinstance(name, str):
        return _STR_TAG | int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "little")
    if isinstance(name, (bool, np.bool_)) or not isinstance(name, (int, np.integer)):
        raise TypeError(f"a key name is a str or a non-negative int, got {type(name).__name__}")
    name = int(name)
    if not 0 <= name < _STR_TAG:
        raise ValueError(f"an integer key name must lie in [0, 2^64), got {name}")
    return name


@dataclass(frozen=True)
class Key:
    """A random stream: a user seed and a path of names (strings or non-negative integers)."""

    seed: int
    path: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0))
        object.__setattr__(self, "path", tuple(self.path))
        for n in self.path:
            _word(n)

    def child(self, *names) -> "Key":
        """The key of a sub-stream; ``k.child("a", 1) == k.child("a").child(1)``."""
        for n in names:
            _word(n)
        return Key(self.seed, self.path + tuple(names))

    def seed_sequence(self) -> np.random.SeedSequence:
        return np.random.SeedSequence(entropy=self.seed, spawn_key=tuple(_word(n) for n in self.path))

    def generator(self) -> np.random.Generator:
        """A numpy Generator for set-up work (initial tokens, parameter draws) on this stream."""
        _note(self, None)
        return np.random.default_rng(self.seed_sequence())

    def path_states(self, n_paths: int) -> np.ndarray:
        """Distinct 64-bit generator seeds (as int64) for paths 0..n_paths-1 of this stream."""
        n_paths = check_int("n_paths", n_paths, 0)
        _note(self, n_paths)
        ss = self.seed_sequence()
        words = ss.generate_state(n_paths + 8, dtype=np.uint64)
        _, first = np.unique(words, return_index=True)
        if first.size < n_paths:  # a 64-bit collision: ~n^2 / 2^65, never seen; stays deterministic
            more = ss.spawn(1)[0].generate_state(4 * n_paths + 64, dtype=np.uint64)
            words = np.concatenate([words, more])
            _, first = np.unique(words, return_index=True)
        return words[np.sort(first)[:n_paths]].view(np.int64)

    def __repr__(self) -> str:
        return f"Key({self.seed}{''.join(', ' + repr(n) for n in self.path)})"


def _note(key: Key, n_paths) -> None:
    log = getattr(_RECORD, "log", None)
    if log is not None:
        log.append((key, n_paths))


@contextmanager
def recording():
    """Record the streams drawn in this thread: yields a list that receives (key, n_paths) for every
    :meth:`Key.path_states` and (key, None) for every :meth:`Key.generator` (the campaign plan,
    ``verify.campaign_plan``, is built from it)."""
    prev = getattr(_RECORD, "log", None)
    _RECORD.log = log = []
    try:
        yield log
    finally:
        _RECORD.log = prev


def as_key(seed, *names) -> Key:
    """A user seed (int) or a Key, extended by `names`."""
    key = seed if isinstance(seed, Key) else Key(seed)
    return key.child(*names) if names else key


def uniform_sphere(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """Points uniform on S^{d-1}, array of shape (*shape, d)."""
    z = rng.standard_normal((*shape, d))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)
