"""The validated parameter object shared by every module.

`ModelParams` holds the model of SPEC section 1 (d, N, T, beta, Q/K/V,
activation, sigma_w, sigma_b, sigma_a).  Simulation sizes (depth L, width m,
paths) are validated with the same helpers where they are used.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .activations import Activation, get_activation
from . import limits
from .errors import ParameterError


def check_int(name: str, value, minimum: int) -> int:
    """Return `value` as an int >= minimum, or raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(name, value, f"must be an integer >= {minimum}")
    if value < minimum:
        raise ParameterError(name, value, f"must be an integer >= {minimum}")
    return int(value)


def check_real(name: str, value, minimum: float | None = None, *, strict: bool = False,
               maximum: float | None = None) -> float:
    """Return `value` as a finite float in the allowed range, or raise ParameterError."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, "must be a finite real number") from None
    if not math.isfinite(x):
        raise ParameterError(name, value, "must be a finite real number")
    if minimum is not None and (x < minimum or (strict and x == minimum)):
        op = ">" if strict else ">="
        raise ParameterError(name, value, f"must be {op} {minimum}")
    if maximum is not None and x > maximum:
        raise ParameterError(name, value, f"must be <= {maximum}")
    return x


def check_matrix(name: str, value, d: int) -> np.ndarray:
    """Return a finite float (d, d) matrix (None means the identity)."""
    if value is None:
        return np.eye(d)
    try:
        m = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(name, "<array>", f"must be a real {d}x{d} matrix") from None
    if m.ndim == 0:
        m = float(m) * np.eye(d)
    if m.shape != (d, d):
        raise ParameterError(name, f"shape {m.shape}", f"must be a real {d}x{d} matrix")
    if not np.all(np.isfinite(m)):
        raise ParameterError(name, "<array with non-finite entries>", "entries must be finite")
    return m


@dataclass(frozen=True)
class ModelParams:
    """The model of SPEC section 1.

    Tokens on S^{d-1}; attention ``softmax(beta <Q x_i, K x_j>) V x_j``; MLP noise with
    weights ``a ~ N(0, sigma_a^2 I)``, ``w ~ N(0, sigma_w^2 I)``, ``b ~ N(0, sigma_b^2)``.
    ``Q``, ``K``, ``V`` default to the identity; a scalar means that multiple of it,
    ``V = 0`` switches attention off.
    """

    d: int = 3
    n_tokens: int = 8
    horizon: float = 1.0
    beta: float = 1.0
    activation: Activation | str = "relu"
    sigma_w: float = 1.0
    sigma_b: float = 0.0
    sigma_a: float = 1.0
    Q: np.ndarray | None = field(default=None, compare=False)
    K: np.ndarray | None = field(default=None, compare=False)
    V: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self):
        set_ = object.__setattr__
        d = check_int("d", self.d, 2)
        limits.check_at_most("d", d, limits.MAX_D)      # before allocating d x d matrices
        set_(self, "d", d)
        set_(self, "n_tokens", check_int("n_tokens", self.n_tokens, 1))
        set_(self, "horizon", check_real("horizon", self.horizon, 0.0, strict=True))
        set_(self, "beta", check_real("beta", self.beta, 0.0, maximum=limits.MAX_BETA))
        set_(self, "sigma_w", check_real("sigma_w", self.sigma_w, 0.0, maximum=limits.MAX_SIGMA))
        set_(self, "sigma_b", check_real("sigma_b", self.sigma_b, 0.0, maximum=limits.MAX_SIGMA))
        set_(self, "sigma_a", check_real("sigma_a", self.sigma_a, 0.0, maximum=limits.MAX_SIGMA))
        if self.sigma_w == 0.0 and self.sigma_b == 0.0:
            raise ParameterError("sigma_w", self.sigma_w,
                                 "sigma_w and sigma_b cannot both be 0 (the pre-activation would vanish)")
        set_(self, "activation", get_activation(self.activation))
        for name in ("Q", "K", "V"):
            set_(self, name, check_matrix(name, getattr(self, name), d))
            limits.check_at_most(f"max |{name}_ij|", float(np.max(np.abs(getattr(self, name)))),
                                 limits.MAX_MATRIX_ENTRY)

    @property
    def attention_on(self) -> bool:
        """False when V = 0 (attention switched off)."""
        return bool(np.any(self.V != 0.0))

    def with_(self, **changes) -> "ModelParams":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def kernel_args(self) -> tuple[float, float, float]:
        return (self.sigma_w, self.sigma_b, self.sigma_a)
