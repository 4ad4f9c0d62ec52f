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
#: the hidden stacks a claim's domain draws (``claim_configs(..., hidden=HIDDEN_STACKS)``), as configuration
#: values: "none" (the one-layer block) or the canonical ``params.hidden_spec`` text of ``ModelParams.hidden``.
#: One closed-form layer (relu: its table from the arc-cosine composition) and one quadrature stack
#: (tanh -> relu, ~0.7 s per kernel table); ``claim_configs`` draws "none" half the time (the cheapest
#: kernel), the deep stacks share the other half
NO_HIDDEN = "none"
HIDDEN_STACKS = (NO_HIDDEN, "relu 1.0 0.5", "tanh 1.2 0.1; relu 1.0 0.5")
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


def hidden_stack(text: str | None = None) -> tuple:
    """The validated ``ModelParams.hidden`` of a configuration's hidden stack: None, "" or "none" -> (), else
    the ``params.hidden_spec`` text "ACT SW SB; ACT SW SB" (ParameterError for anything else)."""
    from .params import check_hidden
    if text is None or (isinstance(text, str) and text.strip() in ("", NO_HIDDEN)):
        return ()
    if not isinstance(text, str):
        from .errors import ParameterError
        raise ParameterError("hidden", type(text).__name__, 'must be a text "ACT SW SB; ACT SW SB" or "none"')
    return check_hidden([part for part in text.split(";")])


def hidden_text(hidden) -> str:
    """The configuration value of a hidden stack (the inverse of :func:`hidden_stack`): "none" or its
    canonical ``params.hidden_spec`` text (a sequence of triples or strings, or such a text, is validated)."""
    from .params import check_hidden, hidden_spec
    stack = hidden_stack(hidden) if hidden is None or isinstance(hidden, str) else check_hidden(hidden)
    return hidden_spec(stack) if stack else NO_HIDDEN


def claim_configs(*, where=None, **fields):
    """A claim's domain: tuples of its configuration fields, in the order given.

    Each field is a tuple of choices (strings: ``sampled_from``, simplest first), an
    ``(low, high)`` pair of ints (``integers``) or of floats (``floats``, finite, on a grid of 10^4 steps).
    A field named ``hidden`` (the deep block's stack, :data:`HIDDEN_STACKS`: "none" first, then
    ``params.hidden_spec`` texts) draws its first choice half the time and the others uniformly in the
    other half (a deep kernel table costs more than a one-layer one), shrinking towards the first.
    ``where=(predicate, reason)`` declares the part of the box where the claim is not meant to hold
    or its evidence does not exist: configurations failing ``predicate(config)`` are never drawn, and
    ``reason`` (recorded as ``strategy.excluded``) says why, beside the ranges (``explore.domain_text``).
    """
    parts = []
    for name, spec in fields.items():
        if name == "hidden" and all(isinstance(x, str) for x in spec):
            if tuple(spec) != tuple(hidden_text(x) for x in spec) or len(set(spec)) != len(spec):
                raise ValueError(f"hidden stacks must be distinct canonical texts (strategies.hidden_text): {spec!r}")
            rest = st.sampled_from(tuple(spec[1:])) if len(spec) > 1 else None
            parts.append(st.just(spec[0]) if rest is None else   # False (shrinks first): the first choice
                         st.booleans().flatmap(lambda deep, rest=rest, first=spec[0]: rest if deep else st.just(first)))
        elif all(isinstance(x, str) for x in spec):
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
