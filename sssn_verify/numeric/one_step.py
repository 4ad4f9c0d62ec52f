"""One exactly sampled layer of a field model (the Gaussian transformer by default): its one-step moments.

A use of ``numeric.experiments.tangent_layer`` at the two levels 2h, h on shared normals (the
Richardson combination ``2 Y(h) - Y(2h)`` has bias O(h^2) and O(1) variance), named as the
lyapunov and ito_drift claims read them: ``lam`` (the exponent at step h, control variate
subtracted, averaged over the k tangent vectors) and ``gam`` (the radial drift of one layer), with
``_h`` / ``_2h`` the raw values at each step.  The law is rotation invariant and fresh every layer,
so one layer's log-growth per unit time *is* the model's exponent at step h (docs/experiments.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from .experiments import BLOCK, tangent_layer

__all__ = ["BLOCK", "STATS", "OneStepMoments", "one_step_moments"]

STATS = ("lam_h", "lam_2h", "gam_h", "gam_2h", "lam", "gam")
_NAMES = {"lam_h": "lam@1", "lam_2h": "lam@0", "gam_h": "gam@1", "gam_2h": "gam@0", "lam": "lam", "gam": "gam"}


@dataclass(frozen=True)
class OneStepMoments:
    """Means and standard errors over `n` paths of the statistics in :data:`STATS` at step `h`."""

    h: float
    n: int
    seed: object
    mean: dict
    stderr: dict
    sd: dict
    model: str = "gaussian"


def one_step_moments(params, h: float, n_paths: int, seed, n_vectors: int = 1,
                     model: str = "gaussian") -> OneStepMoments:
    """The one-step moments of `model` (a registered field model) at step `h` (levels 2h, h); `seed`: an
    int or a Key (the stream ``as_key(seed, "one-step")``)."""
    from .rng import as_key
    r = tangent_layer(model, params, 2.0 * h, n_paths, as_key(seed, "one-step"), n_vectors=n_vectors)
    pick = lambda d: {s: d[_NAMES[s]] for s in STATS}  # noqa: E731
    return OneStepMoments(float(h), r.n, seed, pick(r.mean), pick(r.stderr), pick(r.sd), model)
