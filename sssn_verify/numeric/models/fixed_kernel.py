"""A test model: the Gaussian transformer with a fixed kernel, K(rho) = sigma_a^2 (rho + rho^3) / 2.

Everything but the kernel is the Gaussian transformer's (``gaussian.py``): the layer, its noise and
its tangent step.  K is a positive-definite dot-product kernel on every sphere (non-negative
coefficients of rho^n), with k0 = sigma_a^2 and k1 = 2 sigma_a^2; the activation and sigma_w,
sigma_b are not used.  It exists to show that a model added as one file and one registry line is
simulated, and checked by every claim whose statement depends on the kernel only
(tests/test_experiments.py).
"""
from __future__ import annotations

import numpy as np

from . import Model, Prepared
from .gaussian import FieldConsts, advance, evaluate, noise, tangent_step, tangent_work, work

__all__ = ["work", "evaluate", "noise", "advance", "tangent_work", "tangent_step", "prepare", "MODEL"]


def _table(sa: float) -> np.ndarray:
    """The ``numeric.kernels`` table: [k0, jump flag, n, k1, Chebyshev coefficients in 2 theta/pi - 1
    of (k0 - K(cos theta)) / u = sa^2 (2 + cos theta + cos^2 theta) / 2]."""
    cheb = np.polynomial.chebyshev
    coef = cheb.chebinterpolate(lambda x: (2.0 + np.cos((x + 1) * np.pi / 2) + np.cos((x + 1) * np.pi / 2) ** 2)
                                / 2.0, 40)
    coef = coef[: np.nonzero(np.abs(coef) > 1e-17)[0][-1] + 1] * sa * sa
    return np.concatenate([[sa * sa, 0.0, coef.size, 2.0 * sa * sa], coef])


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False) -> Prepared:
    """FieldConsts of K(rho) = sigma_a^2 (rho + rho^3) / 2."""
    table = _table(float(params.sigma_a))
    return Prepared(FieldConsts(table, float(table[0]), float(table[3])), "exact field (fixed kernel)")


MODEL = Model(name="fixed_kernel", module=__name__, label="Gaussian transformer, K = sa^2 (rho + rho^3)/2",
              unit="layer", converges_to=None, needs_width=False, field=True, uses_activation=(),
              prepare=prepare, cost=lambda n, d, m: float(n) ** 3 + 10.0 * d,
              description="test model: the Gaussian transformer with the fixed kernel sa^2 (rho + rho^3)/2")
