"""Regime explorer: the synchronization rates of one parameter set (docs/mathematics.md, sections 5-6).

``regime(params)`` returns k0, k1 (numeric kernel bridge), lambda_1, lambda_bar(beta) with
its argmax, the edge value, C_att, the Lyapunov spectrum (d-1 values, descending) and the
log-distance variance rate sigma^2 (``sync_time``), and two verdicts:

* ``synchronizes``: ``lambda_1 < 0`` (True), ``> 0`` (False), undetermined (None) when
  lambda_1 is 0 or undefined (phi with a jump in d = 3, where k1 = inf meets d - 3 = 0);
* ``dissipates``: True when ``lambda_bar + C_att < 0`` (then
  ``E[E_beta(mu_t)] <= exp((lambda_bar + C_att) t) E[E_beta(mu_0)]``);  False when
  ``rate_lower_bound = lambda_edge - 2 lambda_min((V+V^T)/2) > 0``: for tokens in a small
  cap around the worst direction the expected energy grows at that rate (attention adds
  exactly -2 <V x, x> near synchronization, derived in symbolic/dissipation), so no uniform
  exponential dissipation holds; None (undetermined) otherwise.  The true best rate lies in
  ``[rate_lower_bound, lambda_bar + C_att]``.
  (A research decision: "dissipation" means the uniform exponential bound of docs/mathematics.md, section 5.)

Non-finite numbers (k1 = inf for jumps) appear in ``to_dict()`` as the strings "inf"/"-inf"
and nan as None, so that the JSON stays standard.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .numeric.kernels import kernel
from .numeric.rates import c_att as _c_att
from .numeric.rates import c_att_general, lambda1, lambda_bar_from_kernel, lambda_edge, near_sync_rate
from .errors import ResourceError
from .params import ModelParams
from .sync_time import log_distance_variance, lyapunov_spectrum


@dataclass(frozen=True)
class Regime:
    """The rates and verdicts of one parameter set."""

    activation: str
    d: int
    sigma_w: float
    sigma_b: float
    sigma_a: float
    beta: float
    kernel_method: str
    k0: float
    k1: float
    lambda1: float
    lambda_bar: float
    lambda_bar_argmax: float
    lambda_bar_edge: float
    sup_at_edge: bool
    c_att: float
    c_att_general: float
    rate_lower_bound: float
    synchronizes: bool | None
    dissipates: bool | None
    lyapunov_spectrum: tuple[float, ...] = ()
    log_distance_variance: float = math.nan

    def to_dict(self) -> dict:
        return {k: _json_number(v) for k, v in asdict(self).items()}

    def text(self) -> str:
        """Plain-text report with the two verdicts."""
        def fmt(x):
            if isinstance(x, float) and math.isnan(x):
                return "undefined"
            return f"{x:.10g}" if isinstance(x, float) else str(x)
        verdict = {True: "yes", False: "no", None: "undetermined"}
        where = "rho -> 1 (edge)" if self.sup_at_edge else f"rho = {self.lambda_bar_argmax:.6g}"
        lines = [
            f"activation {self.activation}, d = {self.d}, sigma_w = {fmt(self.sigma_w)}, "
            f"sigma_b = {fmt(self.sigma_b)}, sigma_a = {fmt(self.sigma_a)}, beta = {fmt(self.beta)}",
            f"k0 = {fmt(self.k0)}   k1 = {fmt(self.k1)}   (kernel: {self.kernel_method})",
            f"lambda_1 = ((d-3) k1 - (d-1) k0)/2 = {fmt(self.lambda1)}",
            f"lambda_bar(beta) = {fmt(self.lambda_bar)}   attained at {where};   "
            f"edge value (d-1) k1 - (d-3) k0 = {fmt(self.lambda_bar_edge)}",
            f"C_att = {fmt(self.c_att)}   (general bound {fmt(self.c_att_general)})",
            f"lambda_bar + C_att = {fmt(self.lambda_bar + self.c_att)}   (no uniform rate below "
            f"lambda_edge - 2 lambda_min(V_sym) = {fmt(self.rate_lower_bound)})",
            f"Lyapunov spectrum lambda_i = ((d-1-2i) k1 - (d-1) k0)/2: "
            + ", ".join(fmt(x) for x in self.lyapunov_spectrum),
            f"log-distance variance rate sigma^2 = k0 + k1 = {fmt(self.log_distance_variance)}",
            f"two-point synchronization: {verdict[self.synchronizes]}",
            f"energy dissipation: {verdict[self.dissipates]}",
        ]
        return "\n".join(lines)


def _json_number(v):
    if isinstance(v, (list, tuple)):
        return [_json_number(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def _check_finite(**values) -> None:
    """Overflow or an undefined value is an error, never a printed nan or a wrong number."""
    bad = {k: v for k, v in values.items() if not math.isfinite(float(v))}
    if bad:
        raise ResourceError(f"{', '.join(bad)} not finite at these parameters "
                            f"({', '.join(f'{k}={v}' for k, v in bad.items())}): outside the computable "
                            "range; use smaller sigmas, beta or attention scale")


def regime(params: ModelParams) -> Regime:
    """Rates and verdicts for `params` (Q, K, V and beta enter C_att and lambda_bar)."""
    kf = kernel(params.activation, params.sigma_w, params.sigma_b, params.sigma_a)
    lam1 = lambda1(params.d, kf.k0, kf.k1)
    lam_bar, argmax = lambda_bar_from_kernel(kf, params.d, params.beta)
    edge = lambda_edge(params.d, kf.k0, kf.k1) if kf.k0 > 0 else 0.0
    catt = _c_att(params.beta, params.Q, params.K, params.V)
    cgen = c_att_general(params.beta, params.Q, params.K, params.V)
    lower = near_sync_rate(params.d, kf.k0, kf.k1, params.V)
    _check_finite(k0=kf.k0, C_att=catt, C_att_general=cgen,
                  **({} if math.isinf(kf.k1) else dict(k1=kf.k1, lambda_1=lam1, lambda_bar=lam_bar,
                                                         lambda_bar_edge=edge, rate_lower_bound=lower)))
    sync = None if (math.isnan(lam1) or lam1 == 0.0) else lam1 < 0
    total = lam_bar + catt
    if total < 0:
        diss = True
    elif lower > 0:
        diss = False
    else:
        diss = None
    return Regime(
        activation=params.activation.name, d=params.d, sigma_w=params.sigma_w, sigma_b=params.sigma_b,
        sigma_a=params.sigma_a, beta=params.beta, kernel_method=kf.method, k0=float(kf.k0),
        k1=float(kf.k1), lambda1=float(lam1), lambda_bar=float(lam_bar), lambda_bar_argmax=float(argmax),
        lambda_bar_edge=float(edge), sup_at_edge=bool(argmax == 1.0), c_att=float(catt),
        c_att_general=float(cgen), rate_lower_bound=float(lower), synchronizes=sync, dissipates=diss,
        lyapunov_spectrum=tuple(float(x) for x in lyapunov_spectrum(params.d, kf.k0, kf.k1)),
        log_distance_variance=float(log_distance_variance(kf.k0, kf.k1)))


__all__ = ["Regime", "regime"]
