"""Parameter scans: the rates and verdicts of ``regime`` over a grid, as one pandas DataFrame.

``scan(activation=..., d=..., sigma_w=..., sigma_b=..., sigma_a=..., beta=..., attention_scale=...)``:
every argument is a scalar or a sequence; the grid is their product (in that order, the last
varying fastest), one row per point, with the columns of :data:`COLUMNS`.  The numbers are those
of :func:`sssn_verify.regime.regime` (same kernel tables, same derived expressions through the
bridge, same sup over rho), computed per kernel (one table per activation and (sigma_w, sigma_b,
sigma_a)) for all its (d, beta) rows at once (``numeric.rates.lambda_bar_rows``), so a scan costs
numpy passes, not a Python loop per point.  Attention is ``Q = K = I``, ``V = attention_scale I``
(``regime --attention-scale``): 0 switches it off, negative values make it repulsive.

``field="rqf"`` scans the random quadratic form instead (``regime --field rqf``): the axes are d, sigma_q,
beta and attention_scale, the rates those of ``symbolic.general_field`` through the bridge, and the columns
:data:`RQF_COLUMNS` (the MLP block's quantities, k1 and sigma_w, sigma_b, sigma_a, are absent: rqf has no
block and no kernel K(rho); lambda_bar and the dissipation bounds are derived for its covariance tensor).  The
projective columns (``odd_field``, ``lambda_bar_proj``, ``lambda_proj``, ``sync_up_to_sign``) are in every frame:
NaN (``<NA>``) where the field is not odd.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .errors import ParameterError, ResourceError
from .limits import MAX_BETA, MAX_D, MAX_SIGMA, check_at_most
from .params import check_int, check_real
from .regime import FIELDS, dissipation_verdicts, synchronization_verdicts

#: the largest grid one call accepts (rows of the DataFrame)
MAX_POINTS = 1_000_000

AXES = ("activation", "d", "sigma_w", "sigma_b", "sigma_a", "beta", "attention_scale")
#: the axes of an rqf scan (``field="rqf"``), in the order of its product grid (the last fastest)
RQF_AXES = ("d", "sigma_q", "beta", "attention_scale")
#: the projective columns, in every frame (undefined, NaN or <NA>, where the field is not odd)
PROJECTIVE_COLUMNS = ("odd_field", "lambda_bar_proj", "lambda_proj", "sync_up_to_sign")

_MLP_COLUMNS = ("activation", "d", "sigma_w", "sigma_b", "sigma_a", "beta", "attention_scale", "kernel_method", "k0",
                "k1", "lambda1", "lambda_bar", "lambda_bar_argmax", "lambda_bar_edge", "sup_at_edge", "c_att",
                "rate_lower_bound", "rate_upper_bound", "synchronizes", "dissipates") + PROJECTIVE_COLUMNS
#: the columns of an rqf scan, in order (c_att only when attention is on at some point)
RQF_COLUMNS = ("field", "d", "sigma_q", "beta", "attention_scale", "k0", "lambda1", "lambda_bar", "lambda_bar_argmax",
               "lambda_bar_edge", "sup_at_edge", "c_att", "rate_lower_bound", "rate_upper_bound", "synchronizes",
               "dissipates") + PROJECTIVE_COLUMNS
#: the columns that exist for the MLP field only: absent from an rqf scan (they describe the MLP block or its
#: kernel K(rho), which the covariance tensor a(rho) I + c(rho) y x^T of rqf does not have)
MLP_ONLY_COLUMNS = tuple(c for c in _MLP_COLUMNS + ("hidden",) if c not in RQF_COLUMNS)

_MEANINGS = {**FIELDS, **{
    "attention_scale": "V = attention_scale I, Q = K = I (0: attention off)",
    "rate_upper_bound": "lambda_bar + C_att: E[E_beta(mu_t)] <= exp(rate_upper_bound t) E[E_beta(mu_0)]",
    "synchronizes": "lambda_1 < 0 (True), > 0 (False), undetermined (<NA>)",
    "dissipates": "rate_upper_bound < 0 (True), rate_lower_bound > 0 (False), else undetermined (<NA>)",
    "odd_field": "F(-x) = -F(x): phi odd and sigma_b = 0 (every hidden layer too); always True for rqf",
    "lambda_bar_proj": "odd fields: sup over rho in [0, 1) of L f / f for the projective energy f = 1 - rho^2 "
                       "(noise only); NaN (undefined) where the field is not odd",
    "lambda_proj": "odd fields: the projective Lyapunov exponent; NaN (undefined) where the field is not odd",
    "sync_up_to_sign": "odd fields: lambda_proj < 0 (True), > 0 (False); <NA> (undetermined) when zero or "
                       "the field is not odd",
    "field": "the layer noise: 'rqf' (an rqf scan; an MLP scan has no field column)",
    "sigma_q": "rqf: the scale of the random symmetric matrix Q = sigma_q (B + B^T)/2 (an axis)",
    "k0": FIELDS["k0"],
    "lambda1": "top Lyapunov exponent: ((d-3) k1 - (d-1) k0)/2 (MLP), -sigma_q^2 (rqf, symbolic.general_field)",
    "lambda_bar": FIELDS["lambda_bar"] + " (rqf: 2 sigma_q^2 at the edge for every beta and d, "
                  "symbolic.general_field)"}}

#: column -> meaning (the DataFrame's columns, in order: an MLP scan's, then the rqf scan's own; the names
#: and meanings are Regime's fields).  The MLP-only columns say so: they are absent from an rqf scan.
COLUMNS = {c: _MEANINGS[c] + (" [field mlp only: absent from an rqf scan]" if c in MLP_ONLY_COLUMNS else "")
           for c in _MLP_COLUMNS + ("hidden", "field", "sigma_q")}


def _axis(name: str, value) -> list:
    """One axis: a scalar or a sequence (a string is one activation), validated value by value."""
    values = [value] if isinstance(value, str) or np.ndim(value) == 0 else list(np.ravel(np.asarray(value, dtype=object)))
    if not values:
        raise ParameterError(name, "[]", "must hold at least one value")
    if name == "activation":
        from .activations import get_activation
        return list(dict.fromkeys(get_activation(v).name for v in values))
    if name == "d":
        out = [check_int("d", v, 2) for v in values]
        for v in out:
            check_at_most("d", v, MAX_D)
        return out
    if name == "attention_scale":
        return [check_real(name, v) for v in values]
    if name == "sigma_q":
        return [check_real(name, v, 0.0, strict=True, maximum=MAX_SIGMA) for v in values]
    maximum = MAX_BETA if name == "beta" else MAX_SIGMA
    return [check_real(name, v, 0.0, maximum=maximum) for v in values]


def scan(activation="relu", d=3, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0, beta=1.0, attention_scale=1.0, *,
         hidden=(), field="mlp", sigma_q=1.0):
    """Rates and verdicts over the product grid of the arguments, one row per point.

    Every argument is a scalar or a sequence (``d=range(2, 66)``, ``sigma_b=numpy.linspace(0, 3, 31)``,
    ``activation=["relu", "tanh"]``); the defaults are ModelParams'.  Returns a ``pandas.DataFrame``
    with the columns of :data:`COLUMNS` (``c_att`` only when attention is on at some point, i.e.
    attention_scale != 0); ``synchronizes`` and
    ``dissipates`` are nullable booleans (``<NA>``: undetermined).  `hidden` (ModelParams.hidden, not an
    axis) gives every point the same hidden layers after the first (a deep MLP block); the frame then
    has a column ``hidden``.  The projective columns (:data:`PROJECTIVE_COLUMNS`) are in every frame, NaN
    (``<NA>``) where the field is not odd.  ``field="rqf"`` scans the random quadratic form: `sigma_q` is then
    an axis (``sv.scan(field="rqf", sigma_q=numpy.linspace(0.5, 2, 4), d=[3, 5])``), the MLP block's
    arguments keep their defaults (else ParameterError naming them) and the frame has the columns
    :data:`RQF_COLUMNS`.  Raises ParameterError for a bad
    value, ResourceError for a grid beyond :data:`MAX_POINTS` or rates that overflow.
    """
    import pandas as pd
    from .numeric.kernels import kernel
    from .numeric.rates import _fn, lambda1_rows, lambda_bar_proj_from_kernel, lambda_bar_rows
    from .params import check_field, check_hidden, hidden_spec
    field = check_field(field)
    if field == "rqf":
        return _scan_rqf(activation, d, sigma_w, sigma_b, sigma_a, beta, attention_scale, hidden, sigma_q)
    _only_default("sigma_q", sigma_q, field)
    hidden = check_hidden(hidden)
    axes = {name: _axis(name, value) for name, value in zip(
        AXES, (activation, d, sigma_w, sigma_b, sigma_a, beta, attention_scale))}
    n = math.prod(len(v) for v in axes.values())
    if n > MAX_POINTS:
        raise ResourceError(f"scan of {n} points: at most {MAX_POINTS} per call (split the grid)")
    grid = {name: np.empty(n, dtype=object if name == "activation" else float) for name in AXES}
    # product grid, the last axis fastest (numpy indexing, no Python loop over the points)
    shape = tuple(len(axes[a]) for a in AXES)
    index = np.indices(shape).reshape(len(AXES), -1)
    for k, name in enumerate(AXES):
        grid[name] = np.asarray(axes[name], dtype=grid[name].dtype)[index[k]]
    dd, beta_, scale = grid["d"], grid["beta"], grid["attention_scale"]
    out = {c: np.empty(n) for c in ("k0", "k1", "lambda_bar", "lambda_bar_argmax")}
    method = np.empty(n, dtype=object)
    odd, lbp = np.zeros(n, dtype=bool), np.full(n, math.nan)
    # one kernel per (activation, sigma_w, sigma_b, sigma_a); all its (d, beta) rows in one pass
    n_ker = shape[0] * shape[2] * shape[3] * shape[4]
    kernel_id = np.ravel_multi_index((index[0], index[2], index[3], index[4]), (shape[0],) + shape[2:5])
    order = np.argsort(kernel_id, kind="stable")
    bounds = np.searchsorted(kernel_id[order], np.arange(n_ker + 1))
    for k in range(n_ker):
        rows = order[bounds[k]:bounds[k + 1]]
        r0 = rows[0]
        kf = kernel(grid["activation"][r0], grid["sigma_w"][r0], grid["sigma_b"][r0], grid["sigma_a"][r0],
                    hidden=hidden)
        out["k0"][rows], out["k1"][rows], method[rows] = kf.k0, kf.k1, kf.method
        # beta and d vary inside the kernel group; lambda_bar_rows takes both per row
        out["lambda_bar"][rows], out["lambda_bar_argmax"][rows] = lambda_bar_rows(kf, dd[rows], beta_[rows])
        if _odd(grid["activation"][r0], grid["sigma_b"][r0], hidden):
            odd[rows] = True
            # the projective energy rate does not involve beta: one sup per distinct d of the group
            ds, inv = np.unique(dd[rows], return_inverse=True)
            lbp[rows] = np.array([lambda_bar_proj_from_kernel(kf, int(x))[0] for x in ds])[inv]
    k0, k1 = out["k0"], out["k1"]
    lam1 = lambda1_rows(dd, k0, k1)
    jump = np.isinf(k1)
    with np.errstate(invalid="ignore"):
        edge = np.where(jump, math.inf, _fn("dissipation.edge_rate")(dd, k0, np.where(jump, 0.0, k1)))
    edge = np.where(k0 > 0, edge, 0.0)
    # attention V = s I, Q = K = I: energy-lowering (C_att = 0) for s >= 0; else the derived one-head bound
    # with ||V|| = |s|, ||K^T Q|| = 1; the rate near synchronization is edge - 2 s
    c_att = np.where(scale >= 0, 0.0, _fn("attention_bound.c_att")(beta_, np.abs(scale), 1.0) * np.ones(n))
    lower = edge + _fn("attention_bound.near_sync_rate")(scale)
    upper = out["lambda_bar"] + c_att
    with np.errstate(invalid="ignore"):
        lam_p = np.where(odd, _fn("projective.lambda_proj")(dd, k0, np.where(jump, 0.0, k1)), math.nan)
    lam_p = np.where(odd & jump, lam1, lam_p)         # k1 = inf: numeric.rates.lambda_proj's value, lambda_1's
    finite = {"k0": k0, "c_att": c_att, **{name: np.where(jump, 0.0, v) for name, v in (
        ("k1", k1), ("lambda_1", lam1), ("lambda_bar", out["lambda_bar"]), ("lambda_bar_edge", edge),
        ("rate_lower_bound", lower))},
        **{name: np.where(jump | ~odd, 0.0, v) for name, v in (("lambda_proj", lam_p), ("lambda_bar_proj", lbp))}}
    bad = [name for name, v in finite.items() if not np.all(np.isfinite(v))]
    if bad:
        raise ResourceError(f"{', '.join(bad)} not finite at some points of the scan: outside the computable "
                            "range; use smaller sigmas, beta or attention scale")
    frame = pd.DataFrame({
        "activation": grid["activation"], "d": dd.astype(np.int64), "sigma_w": grid["sigma_w"],
        "sigma_b": grid["sigma_b"], "sigma_a": grid["sigma_a"], "beta": beta_, "attention_scale": scale,
        "kernel_method": method, "k0": k0, "k1": k1, "lambda1": lam1, "lambda_bar": out["lambda_bar"],
        "lambda_bar_argmax": out["lambda_bar_argmax"], "lambda_bar_edge": edge,
        "sup_at_edge": out["lambda_bar_argmax"] == 1.0, "c_att": c_att, "rate_lower_bound": lower,
        "rate_upper_bound": upper,
        "synchronizes": pd.array(synchronization_verdicts(lam1), dtype="boolean"),
        "dissipates": pd.array(dissipation_verdicts(upper, lower), dtype="boolean"),
        **_projective_columns(odd, lbp, lam_p)})
    if np.all(scale == 0):
        frame = frame.drop(columns=["c_att"])
    if hidden:
        frame["hidden"] = hidden_spec(hidden)
    frame.attrs["columns"] = {c: COLUMNS[c] for c in frame.columns}
    frame.attrs["field"] = "mlp"
    return frame


def _projective_columns(odd, lbp, lam_p) -> dict:
    """The projective columns: lambda_bar_proj, lambda_proj NaN and sync_up_to_sign <NA> where not odd."""
    import pandas as pd
    return {"odd_field": np.asarray(odd, dtype=bool), "lambda_bar_proj": np.asarray(lbp, dtype=float),
            "lambda_proj": np.asarray(lam_p, dtype=float),
            "sync_up_to_sign": pd.array(synchronization_verdicts(lam_p), dtype="boolean")}


def _odd(activation: str, sigma_b: float, hidden) -> bool:
    """F(-x) = -F(x) for the kernel group (``regime.field_is_odd``: phi odd and sigma_b = 0, every layer)."""
    from .params import ModelParams
    from .regime import field_is_odd
    if float(sigma_b) != 0.0:
        return False
    return field_is_odd(ModelParams(activation=activation, sigma_b=0.0, hidden=hidden))


def _only_default(name: str, value, field: str) -> None:
    """An argument that does not enter `field`'s model must keep its default (ModelParams' rule, its error)."""
    from .params import MODEL_DEFAULTS, ModelParams
    values = _axis(name, value) if name != "hidden" else [value]
    for v in values:
        if (v != MODEL_DEFAULTS[name]) if name != "hidden" else bool(v):
            ModelParams(field=field, **{name: v})        # raises the one error naming the option
            raise ParameterError(name, v, f"does not enter field={field!r}")     # pragma: no cover


def _scan_rqf(activation, d, sigma_w, sigma_b, sigma_a, beta, attention_scale, hidden, sigma_q):
    """The rqf scan: a(1), lambda_1, lambda_bar and the projective rates (symbolic.general_field through the bridge,
    numpy flavour, one pass), C_att of the attention, the dissipation bounds; columns :data:`RQF_COLUMNS`."""
    import pandas as pd
    from .bridge import function
    from .numeric.rates import _fn, rqf_lambda_bar_rows
    for name, value in (("activation", activation), ("sigma_w", sigma_w), ("sigma_b", sigma_b),
                        ("sigma_a", sigma_a), ("hidden", hidden)):
        _only_default(name, value, "rqf")
    axes = {"d": _axis("d", d), "sigma_q": _axis("sigma_q", sigma_q),
            "beta": _axis("beta", beta), "attention_scale": _axis("attention_scale", attention_scale)}
    n = math.prod(len(v) for v in axes.values())
    if n > MAX_POINTS:
        raise ResourceError(f"scan of {n} points: at most {MAX_POINTS} per call (split the grid)")
    shape = tuple(len(axes[a]) for a in RQF_AXES)
    index = np.indices(shape).reshape(len(RQF_AXES), -1)
    grid = {name: np.asarray(axes[name], dtype=float)[index[k]] for k, name in enumerate(RQF_AXES)}
    S, beta_, scale = grid["sigma_q"], grid["beta"], grid["attention_scale"]
    with np.errstate(over="ignore", invalid="ignore"):
        rate = {name: np.asarray(function(f"general_field.rqf_{name}", "numpy")(S), dtype=float) * np.ones(n)
                for name in ("a1", "lambda1", "lambda_bar_proj", "lambda_proj")}
        c_att = np.where(scale >= 0, 0.0, _fn("attention_bound.c_att")(beta_, np.abs(scale), 1.0) * np.ones(n))
        lam_bar, argmax, edge = rqf_lambda_bar_rows(S, beta_)
        # V = s I: the rate near synchronization is edge - 2 s (regime's rate_lower_bound)
        lower = edge + _fn("attention_bound.near_sync_rate")(scale)
        upper = lam_bar + c_att
    bad = [name for name, v in {**rate, "c_att": c_att, "lambda_bar": lam_bar, "rate_lower_bound": lower}.items()
           if not np.all(np.isfinite(v))]
    if bad:
        raise ResourceError(f"{', '.join(bad)} not finite at some points of the scan: outside the computable "
                            "range; use a smaller sigma_q, beta or attention scale")
    frame = pd.DataFrame({
        "field": np.full(n, "rqf", dtype=object), "d": grid["d"].astype(np.int64), "sigma_q": S, "beta": beta_,
        "attention_scale": scale, "k0": rate["a1"], "lambda1": rate["lambda1"], "lambda_bar": lam_bar,
        "lambda_bar_argmax": argmax, "lambda_bar_edge": edge, "sup_at_edge": argmax == 1.0, "c_att": c_att,
        "rate_lower_bound": lower, "rate_upper_bound": upper,
        "synchronizes": pd.array(synchronization_verdicts(rate["lambda1"]), dtype="boolean"),
        "dissipates": pd.array(dissipation_verdicts(upper, lower), dtype="boolean"),
        **_projective_columns(np.ones(n, dtype=bool), rate["lambda_bar_proj"], rate["lambda_proj"])})
    if np.all(scale == 0):
        frame = frame.drop(columns=["c_att"])
    frame.attrs["columns"] = {c: COLUMNS[c] for c in frame.columns}
    frame.attrs["field"] = "rqf"
    return frame


def parse_axis(name: str, text: str) -> list:
    """The CLI's axis grammar: a number, a comma list, ``START:STOP`` (integers, both ends included) or
    ``START:STOP:NUM`` (NUM evenly spaced values, both ends included)."""
    text = text.strip()
    if name == "activation":
        return [t.strip() for t in _split_activations(text)]
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise ParameterError(name, text, "must be a number, a comma list, START:STOP or START:STOP:NUM")
        if len(parts) == 2:
            start, stop = (check_int(name, _number(name, p), -(2 ** 62)) for p in parts)
            if stop < start:
                raise ParameterError(name, text, "START:STOP needs STOP >= START")
            check_at_most(f"number of {name} values", stop - start + 1, MAX_POINTS)
            return list(range(start, stop + 1))
        start, stop = (_number(name, p) for p in parts[:2])
        num = check_int(f"{name} NUM", _number(name, parts[2]), 1)
        check_at_most(f"number of {name} values", num, MAX_POINTS)
        values = np.linspace(start, stop, num).tolist()
        if name == "d":
            if not all(float(v).is_integer() for v in values):
                raise ParameterError(name, text, "must give integers (choose NUM so the step is whole)")
            values = [int(v) for v in values]
        return values
    values = [_number(name, t) for t in text.split(",")]
    return [int(v) if name == "d" and float(v).is_integer() else v for v in values]


def _number(name: str, text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ParameterError(name, text, "must be a number, a comma list, START:STOP or START:STOP:NUM") from None
    if not math.isfinite(x):
        raise ParameterError(name, text, "must be finite")
    return x


def _split_activations(text: str) -> list[str]:
    """Comma list of activations, commas inside parentheses kept (``max(u, 0), tanh``)."""
    out, depth, cur = [], 0, []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    if any(not t.strip() for t in out):
        raise ParameterError("activation", text, "has an empty item")
    return out


__all__ = ["scan", "parse_axis", "COLUMNS", "AXES", "RQF_AXES", "RQF_COLUMNS", "MLP_ONLY_COLUMNS",
           "PROJECTIVE_COLUMNS", "MAX_POINTS"]
