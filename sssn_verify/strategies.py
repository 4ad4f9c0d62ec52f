"""Hypothesis strategies for parameters, shared by the tests and the checkers.

Ranges are those where the claims are meant to hold and the numerics are well
conditioned; tests narrow them further where a check needs it.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

# activations with a closed-form kernel, and ones that go through quadrature
CLOSED_FORM_ACTIVATIONS = ("relu", "leaky_relu:0.1", "leaky_relu:0.3", "abs", "identity", "erf",
                           "sin:1", "cos:1", "sin:3", "heaviside")
QUADRATURE_ACTIVATIONS = ("tanh", "gelu", "silu", "softplus", "u*erf(u)")
#: searches (check, find) put sigma_w and sigma_b of an activation whose kernel needs quadrature
#: (one kernel table, ~0.3-1 s, per (sigma_w, sigma_b) pair) on this many evenly spaced values each
SIGMA_GRID_QUADRATURE = 4
SMOOTH_ACTIVATIONS = ("relu", "leaky_relu:0.1", "identity", "erf", "tanh", "gelu", "silu",
                      "softplus", "sin:1")


def dims(min_d: int = 2, max_d: int = 12):
    return st.integers(min_d, max_d)


def std(min_value: float = 0.0, max_value: float = 2.0):
    """A standard deviation (sigma_w, sigma_b or sigma_a)."""
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)


def kernel_sigmas(min_w: float = 0.2, max_w: float = 2.0, max_b: float = 2.0):
    """(sigma_w, sigma_b, sigma_a) with sigma_w > 0."""
    return st.tuples(std(min_w, max_w), std(0.0, max_b), std(0.2, 2.0))


def overlaps(margin: float = 0.0):
    """rho = <x, y> in [-1 + margin, 1 - margin]."""
    return st.floats(-1.0 + margin, 1.0 - margin, allow_nan=False)


def betas(max_beta: float = 5.0):
    return st.floats(0.0, max_beta, allow_nan=False)


def activations(names=CLOSED_FORM_ACTIVATIONS + QUADRATURE_ACTIVATIONS):
    return st.sampled_from(names)


def _on_grid(lo: float, hi: float, steps: int = 10_000):
    """x -> the nearest of `steps` + 1 equally spaced values of [lo, hi]: a drawn parameter reads as a
    number (0.3413, not hypothesis' 8.438e-288 for 0) and still shrinks towards lo."""
    def snap(x: float) -> float:
        return min(hi, max(lo, round(lo + round((x - lo) / (hi - lo) * steps) * (hi - lo) / steps, 12)))
    return snap


def claim_configs(*, where=None, **fields):
    """A claim's domain: tuples of its configuration fields, in the order given.

    Each field is a tuple of choices (strings: ``sampled_from``, simplest first), an
    ``(low, high)`` pair of ints (``integers``) or of floats (``floats``, finite, on a grid of 10^4 steps).
    ``where=(predicate, reason)`` declares the part of the box where the claim is not meant to hold
    or its evidence does not exist: configurations failing ``predicate(config)`` are never drawn, and
    ``reason`` (recorded as ``strategy.excluded``) says why, beside the ranges (``explore.domain_text``).
    """
    parts = []
    for name, spec in fields.items():
        if all(isinstance(x, str) for x in spec):
            parts.append(st.sampled_from(tuple(spec)))
        elif len(spec) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
            parts.append(st.integers(*spec))
        elif len(spec) == 2:
            lo, hi = map(float, spec)
            parts.append(st.just(lo) if lo == hi else st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                                                                allow_subnormal=False).map(_on_grid(lo, hi)))
        else:
            raise ValueError(f"cannot make a strategy of field {name}={spec!r}")
    strategy = st.tuples(*parts)
    excluded = None
    if where is not None:
        predicate, excluded = where
        strategy = strategy.filter(predicate)
        strategy.predicate = predicate      # the corners and designs of a search must satisfy it too
    strategy.fields = tuple(fields)        # names of the tuple's entries (tables, figures)
    strategy.spec = dict(fields)           # the ranges, for searches over some of the fields
    strategy.excluded = excluded           # why part of the box is left out (None: nothing is)
    return strategy


@st.composite
def sphere_points(draw, n: int, d: int):
    """n points on S^{d-1} (from a drawn seed, so shrinking stays meaningful)."""
    seed = draw(st.integers(0, 2**32 - 1))
    from .numeric.rng import as_key
    z = as_key(seed, "sphere-points").generator().standard_normal((n, d))
    return z / np.linalg.norm(z, axis=1, keepdims=True)
