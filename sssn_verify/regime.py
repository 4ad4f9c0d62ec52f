"""Regime explorer: the synchronization rates of one parameter set (docs/mathematics.md, sections 5-6).

``regime(params)`` returns k0, k1 (numeric kernel bridge), lambda_1, lambda_bar(beta) with
its argmax, the edge value, C_att, the Lyapunov spectrum (d-1 values, descending) and the
log-distance variance rate sigma^2 (``sync_time``), the projective rates of odd fields, and the
verdicts: ``synchronizes`` (lambda_1 < 0), ``dissipates`` (True when lambda_bar + C_att < 0,
False when the rate near synchronization is > 0, None otherwise: the best rate then lies in
``[rate_lower_bound, lambda_bar + C_att]``).  Non-finite numbers appear in ``to_dict()`` as the
strings "inf"/"-inf" and nan as None, so that the JSON stays standard.

More (moved from this docstring): docs/modules.md, ``sssn_verify.regime``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .numeric.kernels import kernel
from .numeric.rates import c_att as _c_att
from .numeric.rates import c_att_general, lambda_bar_from_kernel, lambda_edge, near_sync_rate
from .numeric.rates import lambda_bar_proj_from_kernel, lambda_proj
from .numeric.rates import lambda1 as _lambda1
from .errors import ResourceError
from .params import ModelParams, hidden_spec, takes_model
from .sync_time import log_distance_variance, lyapunov_spectrum, rqf_spectrum


#: field -> meaning (Regime's fields, in order; ``help(Regime)`` and ``Regime.FIELDS`` show them)
FIELDS = {
    "activation": "the activation's canonical name",
    "d": "ambient dimension (tokens on S^{d-1})",
    "sigma_w": "std of each weight coordinate", "sigma_b": "std of the bias",
    "sigma_a": "std of each output-weight coordinate", "beta": "attention inverse temperature",
    "kernel_method": "how K was computed: 'closed form' or 'quadrature'",
    "k0": "K(1) = sigma_a^2 E[phi(U)^2] (rqf: a(1), the variance of each tangential one-point noise coordinate)", "k1": "K'(1) (inf when phi jumps)",
    "lambda1": "top Lyapunov exponent ((d-3) k1 - (d-1) k0)/2",
    "lambda_bar": "sup over rho in [-1, 1) of L2 f / f (the noise-only energy rate)",
    "lambda_bar_argmax": "the rho attaining lambda_bar (1.0: the rho -> 1 limit)",
    "lambda_bar_edge": "the rho -> 1 limit (d-1) k1 - (d-3) k0 (rqf: 2 sigma_q^2)",
    "sup_at_edge": "lambda_bar is the edge value",
    "c_att": "attention constant C_att (0 for energy-lowering attention)",
    "c_att_general": "the general bound 2 ||V|| (1 + beta ||K^T Q||) (2 (S_V + beta S_VKQ) for H heads)",
    "rate_lower_bound": "lambda_edge - 2 lambda_min((V+V^T)/2): no uniform energy rate is smaller",
    "synchronizes": "lambda_1 < 0 (True), > 0 (False), undetermined (None: lambda_1 zero or undefined)",
    "dissipates": "lambda_bar + C_att < 0 (True), rate_lower_bound > 0 (False), else undetermined (None)",
    "lyapunov_spectrum": "lambda_i = ((d-1-2i) k1 - (d-1) k0)/2, i = 1..d-1, descending",
    "log_distance_variance": "sigma^2 = k0 + k1, the variance rate of log|x_1 - x_2| at small distance",
    "rate_interval": "[rate_lower_bound, lambda_bar + C_att]: where the best uniform energy rate lies",
    "verdict": "'dissipates', 'does not dissipate' or 'undetermined: the rate lies in [a, b]'",
    "reason": "the dissipation verdict in words, with its numbers",
    "hidden": "the hidden layers after the first, 'ACT SIGMA_W SIGMA_B; ...' ('' for the one-layer block)",
    "odd_field": "F(-x) = -F(x): phi odd (phi(-u) + phi(u) simplifies to 0) and sigma_b = 0",
    "lambda_bar_proj": "odd fields: sup over rho in [0, 1) of L f / f for the projective energy f = 1 - rho^2 "
                       "(noise only; undefined, None, for other fields)",
    "lambda_bar_proj_argmax": "the rho attaining lambda_bar_proj (1.0: the rho -> 1 limit)",
    "lambda_proj": "odd fields: the projective Lyapunov exponent (the rate of log of the projective distance)",
    "sync_up_to_sign": "odd fields: lambda_proj < 0 (True), > 0 (False), else or not odd: undetermined (None)",
    "projective_verdict": "'synchronizes up to sign', 'does not synchronize up to sign', 'undetermined' or "
                          "'not an odd field'",
    "projective_reason": "the projective verdict in words, with its numbers",
    "field": "the MLP noise: 'mlp' (covariance K(rho) I) or 'rqf' (Q y, Q = sigma_q (B + B^T)/2)",
    "sigma_q": "rqf: the scale of the random symmetric matrix (nan for field 'mlp')",
}
#: the fields that exist for the MLP field only (nan or empty for rqf: they describe the MLP block or its kernel)
MLP_ONLY = ("activation", "sigma_w", "sigma_b", "sigma_a", "k1", "hidden")


@dataclass(frozen=True)
class Regime:
    """The rates and verdicts of one parameter set (fields: :data:`FIELDS`)."""

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
    hidden: str = ""
    odd_field: bool = False
    lambda_bar_proj: float = math.nan
    lambda_bar_proj_argmax: float = math.nan
    lambda_proj: float = math.nan
    sync_up_to_sign: bool | None = None
    attention_on: bool = field(default=True, repr=False)      # for the projective reason only
    field: str = "mlp"
    sigma_q: float = math.nan

    FIELDS = FIELDS

    @property
    def rate_interval(self) -> tuple[float, float]:
        """[a, b] holding the best uniform exponential rate of E[E_beta]: a = rate_lower_bound,
        b = lambda_bar + C_att."""
        return (self.rate_lower_bound, self.lambda_bar + self.c_att)

    @property
    def verdict(self) -> str:
        """"dissipates", "does not dissipate" or "undetermined: the rate lies in [a, b]"."""
        return dissipation_text(self.dissipates, *self.rate_interval)

    @property
    def reason(self) -> str:
        """Why: the bound that decides the verdict (or why neither does), with its numbers."""
        a, b = self.rate_interval
        if self.dissipates:
            return (f"lambda_bar + C_att = {_fmt(b)} < 0, so E[E_beta(mu_t)] <= exp({_fmt(b)} t) "
                    "E[E_beta(mu_0)]")
        if self.dissipates is False:
            return (f"near synchronization, in the worst direction, the expected energy grows at rate "
                    f"lambda_edge - 2 lambda_min((V+V^T)/2) = {_fmt(a)} > 0, so no uniform exponential "
                    "dissipation holds")
        return (f"lambda_bar + C_att = {_fmt(b)} >= 0 is no decay bound, and the rate near synchronization "
                f"lambda_edge - 2 lambda_min((V+V^T)/2) = {_fmt(a)} <= 0 does not exclude one: the best "
                "uniform rate lies between the two")

    @property
    def projective_verdict(self) -> str:
        """Synchronization up to sign (odd fields): from the sign of the projective exponent."""
        if not self.odd_field:
            return "not an odd field"
        return {True: "synchronizes up to sign", False: "does not synchronize up to sign",
                None: "undetermined"}[self.sync_up_to_sign]

    @property
    def projective_reason(self) -> str:
        """Why, with the projective numbers (lambda_proj, lambda_bar_proj)."""
        if not self.odd_field:
            return ("the projective motion is not Markov: phi is not odd or sigma_b > 0, so F(-x) = -F(x) fails "
                    "and antipodal pairs do not stay antipodal")
        lp, lb = _fmt(self.lambda_proj), _fmt(self.lambda_bar_proj)
        where = ("rho -> +-1" if self.lambda_bar_proj_argmax == 1.0
                 else f"rho = +-{self.lambda_bar_proj_argmax:.6g}")
        energy = (f"the projective energy E_proj = mean (1 - rho^2) decays: E[E_proj(t)] <= "
                  f"exp({lb} t) E[E_proj(0)] (noise only)" if self.lambda_bar_proj < 0 else
                  f"the projective energy bound lambda_bar_proj = {lb} (attained at {where}) is no decay bound "
                  "(it bounds the mean of 1 - rho^2, which fluctuations of the distance make grow)")
        attention = ("" if not self.attention_on else
                     "; attention is not odd token by token, so these noise-only rates ignore it")
        if self.sync_up_to_sign is None:
            return f"lambda_proj = {lp} is zero or undefined; {energy}{attention}"
        pairs = ("nearby and nearly antipodal pairs converge to rho^2 = 1 (rho -> +1 or -1) at rate"
                 if self.sync_up_to_sign else "nearby and nearly antipodal pairs separate at rate")
        return f"lambda_proj = {lp}: {pairs} {lp}; {energy}{attention}"

    def to_dict(self) -> dict:
        """Every field (:data:`FIELDS`) as JSON-ready values (inf as "inf", nan as None)."""
        out = {k: _json_number(v) for k, v in asdict(self).items() if k != "attention_on"}
        out["rate_interval"] = _json_number(list(self.rate_interval))
        out["verdict"] = self.verdict
        out["reason"] = self.reason
        out["projective_verdict"] = self.projective_verdict
        out["projective_reason"] = self.projective_reason
        return out

    def to_frame(self):
        """One-row pandas DataFrame of :meth:`to_dict`'s scalar fields (the columns of ``sv.scan``
        plus c_att_general, lyapunov_spectrum as a tuple, log_distance_variance, verdict, reason)."""
        import pandas as pd
        row = asdict(self)
        row["lyapunov_spectrum"] = tuple(self.lyapunov_spectrum)
        row["rate_interval"] = self.rate_interval
        row["verdict"], row["reason"] = self.verdict, self.reason
        row["projective_verdict"], row["projective_reason"] = self.projective_verdict, self.projective_reason
        row.pop("attention_on")
        frame = pd.DataFrame([row])
        for col in ("synchronizes", "dissipates"):
            frame[col] = pd.array([row[col]], dtype="boolean")
        return frame

    def __repr__(self) -> str:
        return (f"Regime(activation={self.activation!r}, d={self.d}, sigma_w={self.sigma_w:g}, "
                f"sigma_b={self.sigma_b:g}, sigma_a={self.sigma_a:g}, beta={self.beta:g}: "
                f"lambda1={_fmt(self.lambda1)}, lambda_bar={_fmt(self.lambda_bar)}, c_att={_fmt(self.c_att)}, "
                f"synchronizes={self.synchronizes}, dissipation: {self.verdict})")

    def text(self) -> str:
        """Plain-text report with the two verdicts."""
        fmt = _fmt
        if self.field == "rqf":
            return self._rqf_text()
        verdict = {True: "yes", False: "no", None: "undetermined"}
        where = "rho -> 1 (edge)" if self.sup_at_edge else f"rho = {self.lambda_bar_argmax:.6g}"
        lines = [
            f"activation {self.activation}, d = {self.d}, sigma_w = {fmt(self.sigma_w)}, "
            f"sigma_b = {fmt(self.sigma_b)}, sigma_a = {fmt(self.sigma_a)}, beta = {fmt(self.beta)}",
            *([f"hidden layers after the first (activation sigma_w sigma_b): {self.hidden}"] if self.hidden else []),
            f"k0 = {fmt(self.k0)}   k1 = {fmt(self.k1)}   (kernel: {self.kernel_method})",
            f"lambda_1 = ((d-3) k1 - (d-1) k0)/2 = {fmt(self.lambda1)}",
            f"lambda_bar(beta) = {fmt(self.lambda_bar)}   attained at {where};   "
            f"edge value (d-1) k1 - (d-3) k0 = {fmt(self.lambda_bar_edge)}",
            f"C_att = {fmt(self.c_att)}   (general bound {fmt(self.c_att_general)})",
            f"energy rate bounds: lambda_bar + C_att = {fmt(self.lambda_bar + self.c_att)} (above); "
            f"near synchronization lambda_edge - 2 lambda_min((V+V^T)/2) = {fmt(self.rate_lower_bound)} (below)",
            f"Lyapunov spectrum lambda_i = ((d-1-2i) k1 - (d-1) k0)/2: "
            + ", ".join(fmt(x) for x in self.lyapunov_spectrum),
            f"log-distance variance rate sigma^2 = k0 + k1 = {fmt(self.log_distance_variance)}",
            f"two-point synchronization: {verdict[self.synchronizes]}",
            f"energy dissipation: {self.verdict}",
            f"  because {self.reason}",
        ]
        if self.odd_field:
            where = ("rho -> +-1 (edge)" if self.lambda_bar_proj_argmax == 1.0
                     else f"rho = +-{self.lambda_bar_proj_argmax:.6g}")
            lines += [
                f"odd field (F(-x) = -F(x)): projective exponent lambda_proj = {fmt(self.lambda_proj)};   "
                f"lambda_bar_proj = {fmt(self.lambda_bar_proj)} (energy 1 - rho^2) attained at {where}",
                f"synchronization up to sign: {self.projective_verdict}",
                f"  because {self.projective_reason}",
            ]
        return "\n".join(lines)


    def _rqf_text(self) -> str:
        fmt = _fmt
        return "\n".join([
            f"field rqf: F(y) = Q y, Q = sigma_q (B + B^T)/2, sigma_q = {fmt(self.sigma_q)}, d = {self.d}, "
            f"beta = {fmt(self.beta)}",
            f"one-point noise a(1) = {fmt(self.k0)}: Brownian motion on the sphere at rate a(1)/2 = {fmt(self.k0 / 2)}",
            f"lambda_1 = {fmt(self.lambda1)}   (symbolic.general_field)",
            "Lyapunov spectrum lambda_i, i = 1..d-1: " + ", ".join(fmt(x) for x in self.lyapunov_spectrum),
            f"log-distance variance rate sigma^2 = {fmt(self.log_distance_variance)}",
            f"lambda_bar(beta) = {fmt(self.lambda_bar)}   attained at "
            f"{'rho -> 1 (edge)' if self.sup_at_edge else f'rho = {self.lambda_bar_argmax:.6g}'};   "
            f"edge value 2 sigma_q^2 = {fmt(self.lambda_bar_edge)}   (symbolic.general_field)",
            f"C_att = {fmt(self.c_att)}   (general bound {fmt(self.c_att_general)})",
            f"energy rate bounds: lambda_bar + C_att = {fmt(self.lambda_bar + self.c_att)} (above); "
            f"near synchronization lambda_edge - 2 lambda_min((V+V^T)/2) = {fmt(self.rate_lower_bound)} (below)",
            f"two-point synchronization: {dict([(True, 'yes'), (False, 'no'), (None, 'undetermined')])[self.synchronizes]}",
            f"energy dissipation: {self.verdict}",
            f"  because {self.reason}",
            f"odd field (Q(-x) = -Qx): projective exponent lambda_proj = {fmt(self.lambda_proj)};   "
            f"lambda_bar_proj = {fmt(self.lambda_bar_proj)} (energy 1 - rho^2) attained at rho -> +-1 (edge)",
            f"synchronization up to sign: {self.projective_verdict}",
            f"  because {self.projective_reason}",
        ])


def _fmt(x) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "undefined"
    return f"{x:.10g}" if isinstance(x, float) else str(x)


def dissipation_text(dissipates, lower: float, upper: float) -> str:
    """The dissipation verdict in words: "dissipates", "does not dissipate", "undetermined: the rate lies
    in [a, b]"."""
    if dissipates:
        return "dissipates"
    if dissipates is False:
        return "does not dissipate"
    return f"undetermined: the rate lies in [{lower:.6g}, {upper:.6g}]"


def synchronization_verdicts(lam1) -> list:
    """lambda_1 < 0: True, > 0: False, 0 or undefined (nan): None (elementwise on an array)."""
    return [None if (math.isnan(x) or x == 0.0) else bool(x < 0) for x in np.ravel(np.asarray(lam1, dtype=float))]


def dissipation_verdicts(upper, lower) -> list:
    """lambda_bar + C_att < 0: True; else rate_lower_bound > 0: False; else None (elementwise)."""
    up, lo = (np.ravel(np.asarray(a, dtype=float)) for a in (upper, lower))
    return [True if u < 0 else (False if l > 0 else None) for u, l in zip(up, lo)]


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


@takes_model
def regime(params: ModelParams) -> Regime:
    """Rates and verdicts of one parameter set (Q, K, V and beta enter C_att and lambda_bar).

    ``regime(ModelParams(...))`` or ``regime(activation="tanh", d=6, sigma_w=1.2, ...)`` (the
    same fields and defaults), or both (the keywords change those fields).  Returns a
    :class:`Regime` with the fields listed below.
    """
    if params.field == "rqf":
        return _rqf_regime(params)
    kf = kernel(params)
    lam1 = _lambda1(params.d, kf.k0, kf.k1)
    lam_bar, argmax = lambda_bar_from_kernel(kf, params.d, params.beta)
    edge = lambda_edge(params.d, kf.k0, kf.k1) if kf.k0 > 0 else 0.0
    catt = _c_att(params.beta, params.Q, params.K, params.V)
    cgen = c_att_general(params.beta, params.Q, params.K, params.V)
    lower = near_sync_rate(params.d, kf.k0, kf.k1, params.V)
    _check_finite(k0=kf.k0, C_att=catt, C_att_general=cgen,
                  **({} if math.isinf(kf.k1) else dict(k1=kf.k1, lambda_1=lam1, lambda_bar=lam_bar,
                                                         lambda_bar_edge=edge, rate_lower_bound=lower)))
    (sync,) = synchronization_verdicts(lam1)
    (diss,) = dissipation_verdicts(lam_bar + catt, lower)
    return Regime(
        activation=params.activation.name, d=params.d, sigma_w=params.sigma_w, sigma_b=params.sigma_b,
        sigma_a=params.sigma_a, beta=params.beta, kernel_method=kf.method, k0=float(kf.k0),
        k1=float(kf.k1), lambda1=float(lam1), lambda_bar=float(lam_bar), lambda_bar_argmax=float(argmax),
        lambda_bar_edge=float(edge), sup_at_edge=bool(argmax == 1.0), c_att=float(catt),
        c_att_general=float(cgen), rate_lower_bound=float(lower), synchronizes=sync, dissipates=diss,
        lyapunov_spectrum=tuple(float(x) for x in lyapunov_spectrum(params.d, kf.k0, kf.k1)),
        log_distance_variance=float(log_distance_variance(kf.k0, kf.k1)), hidden=hidden_spec(params.hidden),
        attention_on=params.attention_on, **_projective(params, kf))


def _rqf_regime(params: ModelParams) -> Regime:
    """The rqf field's rates (symbolic.general_field through the bridge); the MLP-only fields (:data:`MLP_ONLY`)
    are nan or empty.  The projective energy ratio is nondecreasing in rho^2 (derived), so lambda_bar_proj sits at
    the edge; lambda_bar(beta) is the larger of the derived edge and antipodal values (``rqf_energy_rate``: the
    edge, 2 sigma_q^2, for every beta and d), and the rate near synchronization is the edge plus attention's."""
    from .bridge import function
    from .numeric.rates import near_sync_rate_from_edge, rqf_lambda_bar_rows
    S = params.sigma_q
    rate = {name: float(function(f"general_field.rqf_{name}", "math")(S))
            for name in ("a1", "lambda1", "lambda_bar_proj", "lambda_proj", "log_distance_variance")}
    spectrum = tuple(float(x) for x in rqf_spectrum(params.d, S))
    catt = _c_att(params.beta, params.Q, params.K, params.V)
    cgen = c_att_general(params.beta, params.Q, params.K, params.V)
    lam_bar, argmax, edge = (float(x) for x in rqf_lambda_bar_rows(S, params.beta))
    lower = near_sync_rate_from_edge(edge, params.V)
    _check_finite(C_att=catt, C_att_general=cgen, lambda_bar=lam_bar, lambda_bar_edge=edge, rate_lower_bound=lower,
                  **rate)
    (sync,) = synchronization_verdicts(rate["lambda1"])
    (diss,) = dissipation_verdicts(lam_bar + catt, lower)
    (sync_sign,) = synchronization_verdicts(rate["lambda_proj"])
    nan = math.nan
    return Regime(
        activation="", d=params.d, sigma_w=nan, sigma_b=nan, sigma_a=nan, beta=params.beta,
        kernel_method="none: the rqf covariance is a(rho) I + c(rho) y x^T (symbolic.general_field)",
        k0=rate["a1"], k1=nan, lambda1=rate["lambda1"], lambda_bar=lam_bar, lambda_bar_argmax=argmax,
        lambda_bar_edge=edge, sup_at_edge=bool(argmax == 1.0), c_att=float(catt), c_att_general=float(cgen),
        rate_lower_bound=float(lower), synchronizes=sync, dissipates=diss, odd_field=True,
        lambda_bar_proj=rate["lambda_bar_proj"], lambda_bar_proj_argmax=1.0, lambda_proj=rate["lambda_proj"], sync_up_to_sign=sync_sign,
        attention_on=params.attention_on, field="rqf", sigma_q=float(S), lyapunov_spectrum=spectrum,
        log_distance_variance=rate["log_distance_variance"])


def field_is_odd(params: ModelParams) -> bool:
    """F(-x) = -F(x) in law: sigma_b = 0 and phi odd, decided from the expression (phi(-u) + phi(u)
    simplifies to 0, derived once per activation and cached by the bridge), in every hidden layer."""
    if params.field == "rqf":
        return True                                   # Q(-x) = -Q x
    layers = [(params.activation, params.sigma_b)]
    layers += [(act, sb) for act, _sw, sb in params.hidden]
    from .activations import get_activation
    from .bridge import function
    return all(float(sb) == 0.0 and function("projective.phi_odd", "math", get_activation(act).name)() == 1
               for act, sb in layers)


def _projective(params: ModelParams, kf) -> dict:
    """The projective fields of :class:`Regime` (symbolic/projective; nan and None unless the field is odd)."""
    if not field_is_odd(params):
        return {}
    lam_p = lambda_proj(params.d, kf.k0, kf.k1)
    lbp, arg = lambda_bar_proj_from_kernel(kf, params.d)
    if not math.isinf(kf.k1):
        _check_finite(lambda_proj=lam_p, lambda_bar_proj=lbp)
    (sync,) = synchronization_verdicts(lam_p)
    return dict(odd_field=True, lambda_bar_proj=float(lbp), lambda_bar_proj_argmax=float(arg),
                lambda_proj=float(lam_p), sync_up_to_sign=sync)


regime.__doc__ += "\n" + "\n".join(f"    * ``{k}``: {v}" for k, v in FIELDS.items()) + "\n"


@takes_model
def lambda1(params: ModelParams) -> float:
    """lambda_1 = ((d-3) k1 - (d-1) k0)/2 of one parameter set (a ModelParams or its fields as
    keywords, as :func:`regime`): the top Lyapunov exponent, two-point synchronization iff < 0.
    A float: +-inf or nan (undefined) when k1 = inf (activations with a jump) at d > 3, d = 2 or d = 3."""
    kf = kernel(params)
    return float(_lambda1(params.d, kf.k0, kf.k1))


@takes_model
def lambda_bar(params: ModelParams) -> float:
    """lambda_bar(beta) = sup over rho in [-1, 1) of L2 f / f, the noise-only energy rate of one
    parameter set (a ModelParams or its fields as keywords, as :func:`regime`).  A float; where the
    sup sits and the edge value are in :func:`regime`'s ``lambda_bar_argmax``, ``lambda_bar_edge``.
    ``field="rqf"``: derived for its covariance tensor (symbolic.general_field), 2 sigma_q^2."""
    if params.field == "rqf":
        from .numeric.rates import rqf_lambda_bar_rows
        return float(rqf_lambda_bar_rows(params.sigma_q, params.beta)[0])
    kf = kernel(params)
    return float(lambda_bar_from_kernel(kf, params.d, params.beta)[0])


@takes_model
def c_att(params: ModelParams) -> float:
    """C_att(beta, Q, K, V) >= 0 of one parameter set (a ModelParams or its fields as keywords, as
    :func:`regime`): d/dt E_beta|_att <= C_att E_beta; 0 for energy-lowering attention.  A float."""
    return float(_c_att(params.beta, params.Q, params.K, params.V))


__all__ = ["Regime", "regime", "field_is_odd", "lambda1", "lambda_bar", "c_att", "FIELDS", "dissipation_text", "synchronization_verdicts", "dissipation_verdicts"]
