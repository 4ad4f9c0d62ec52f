"""The width coupling (docs/mathematics.md, section 8): finite widths m_1 < .. < m_K and m = infinity
on one noise, so that E max_l |X^{l,m} - X^{l,inf}|^2 is measurable (Theorem 1.1's 1/m part).

Every system (a width, or m = inf) carries its own N tokens and runs its model's layer with the
same attention; the hidden units are nested (width m uses units 1..m) and one standard normal xi
drives all outputs, F = Khat_m^{1/2} xi and G = K^{1/2} xi, with the roots taken in the
near-coincidence tree basis of ``numeric.fields`` (``edge_rows``, ``tree_field_cov``,
``graded_sqrt``).  A deep block (``params.hidden``) nests its middle layers too: one M x M weight
matrix and M biases per hidden layer (M the largest width), width m using the top-left m x m
block with the scale sigma_w m^{-1/2} (``hidden_phi``, generated per stack by the driver); m =
inf uses the composed kernel.  Each system's law is exactly its model's; only the joint law is
new.  The reference of the deviations is the last system.  Driver: ``numeric.driver.coupled_path``; entry
point ``engine.simulate_coupled``.  The construction at length: docs/numerics.md, section
"The width coupling".
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ...errors import ParameterError
from ...params import check_int
from ..attention import half_step
from ..fields import (STATUS_OK, accumulate_tree, edge_rows, fill_normal, gap_matrix, graded_sqrt,
                      nearest_tree, tree_field_cov)
from . import Model, Prepared
from .finite_width import advance

CoupledConsts = namedtuple("CoupledConsts", ["sw", "sb", "sa", "widths", "has_inf", "table", "k0", "hsw", "hsb"])

evaluate = half_step
__all__ = ["advance", "evaluate", "noise", "work", "MODEL"]


def phi(u):  # bound to the activation's numba function in the generated kernel module
    raise NotImplementedError


hidden_phi = phi   # hidden layer l's activation, generated per stack by the driver


@njit(cache=True)
def work(n, d, consts):
    """(order, parent, zeros, xi, units, hidden, edges, C, A, Dd, gaps, hidden weights (M, M + 1),
    pre-activations (n, M)) for n tokens (the last two (1, 1) for a one-layer block)."""
    M = consts.widths[-1] if consts.widths.shape[0] > 0 else 1
    deep = consts.hsw.shape[0] > 0
    return (np.empty(n, np.int64), np.empty(n, np.int64), np.zeros(n), np.empty((n, d)),
            np.empty((M, d + 1)), np.empty((n, M)), np.empty((n, M)), np.empty((n, n)),
            np.empty((n, n)), np.empty((n, d)), np.empty((n, n)),
            np.empty((consts.hsw.shape[0], M, M + 1)) if deep else np.empty((1, 1, 1)),
            np.empty((n, M)) if deep else np.empty((1, 1)))


@njit(cache=True)
def _drive(A, xi, order, parent, Dd, out):
    """out = the tree basis draws A xi summed back along the tree."""
    Dd[:, :] = np.dot(A, xi)
    accumulate_tree(Dd, order, parent, out)


@njit(cache=True)
def noise(st, Es, consts, w, Ws, rtol):
    """Ws[r] = the noise of system r at the rows of Es[r], all systems on one draw (module doc)."""
    order, parent, zeros, xi, U, H, Er, C, A, Dd, Gm, Wh, Zh = w
    R, n, d = Es.shape
    ref = Es[R - 1]
    nearest_tree(ref, zeros, 1.0, 0.0, d, order, parent)
    fill_normal(st, xi)
    K = consts.widths.shape[0]
    nh = consts.hsw.shape[0]
    if K > 0:
        fill_normal(st, U)  # unit-major: unit k = (w_k, b_k) = U[k]; width m uses units < m
        if nh > 0:
            fill_normal(st, Wh)  # hidden layer l, unit k: weights Wh[l, k, :M], bias Wh[l, k, M]
    sw, sb = consts.sw, consts.sb
    for r in range(K):
        m = consts.widths[r]
        Y = Es[r]
        for i in range(n):
            for k in range(m):
                s = 0.0
                for c in range(d):
                    s += Y[i, c] * U[k, c]
                H[i, k] = phi(sw * s + sb * U[k, d])
        M = Wh.shape[1]
        for layer in range(nh):
            f = consts.hsw[layer] / math.sqrt(m)
            for i in range(n):
                for k in range(m):
                    s = 0.0
                    for j in range(m):
                        s += H[i, j] * Wh[layer, k, j]
                    Zh[i, k] = f * s + consts.hsb[layer] * Wh[layer, k, M]
            for i in range(n):
                for k in range(m):
                    H[i, k] = hidden_phi(layer, Zh[i, k])
        Hm = H[:, :m]
        Em = Er[:, :m]
        edge_rows(Hm, order, parent, Em)
        scale = consts.sa * consts.sa / m
        for i in range(n):
            for j in range(i + 1):
                s = 0.0
                for k in range(m):
                    s += Em[i, k] * Em[j, k]
                C[i, j] = scale * s
                C[j, i] = scale * s
        code = graded_sqrt(C, A, rtol)
        if code != STATUS_OK:
            return code
        _drive(A, xi, order, parent, Dd, Ws[r])
    if consts.has_inf:
        gap_matrix(consts.table, ref, Gm)
        tree_field_cov(Gm, consts.k0, order, parent, C)
        code = graded_sqrt(C, A, rtol)
        if code != STATUS_OK:
            return code
        _drive(A, xi, order, parent, Dd, Ws[R - 1])
    return STATUS_OK


def parse_widths(widths) -> tuple:
    """Sorted distinct widths: positive ints and at most one infinity (``inf``, ``"inf"``)."""
    if isinstance(widths, str):
        widths = [w for w in widths.split(",") if w.strip()]
    try:
        items = list(widths)
    except TypeError:
        raise ParameterError("widths", widths, "must be a list of widths (integers >= 1 and/or inf)") from None
    out = []
    for w in items:
        if isinstance(w, str):
            t = w.strip().lower()
            if t in ("inf", "infinity"):
                w = math.inf
            else:
                try:
                    w = int(t)
                except ValueError:
                    raise ParameterError("widths", w, "entries must be integers >= 1 or inf") from None
        if isinstance(w, float) and math.isinf(w) and w > 0:
            out.append(math.inf)
        else:
            out.append(check_int("widths", w, 1))
    if len(out) < 2:
        raise ParameterError("widths", widths, "must name at least two widths (the last, e.g. inf, is the reference)")
    if len(set(out)) != len(out):
        raise ParameterError("widths", widths, "must be distinct")
    return tuple(sorted(out))


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False) -> Prepared:
    """CoupledConsts for the widths `width` (a sequence, see :func:`parse_widths`)."""
    if tangent:
        raise ParameterError("model", "coupled", "has no tangent flow (use transformer or gaussian)")
    if mode not in ("auto", "exact"):
        raise ParameterError("mode", mode, "the coupled run samples the outputs exactly in law (mode auto)")
    if width is None:
        raise ParameterError("widths", None, "are required for model='coupled' (e.g. 16,64,256,inf)")
    ws = parse_widths(width)
    finite = np.array([w for w in ws if w != math.inf], dtype=np.int64)
    has_inf = ws[-1] == math.inf
    table, k0 = np.zeros(5), 0.0
    if has_inf:
        from ..kernels import kernel
        kf = kernel(params.activation, params.sigma_w, params.sigma_b, params.sigma_a, hidden=params.hidden)
        table, k0 = np.ascontiguousarray(kf.table), kf.k0
    hsw = np.array([float(s) for _, s, _ in params.hidden], dtype=np.float64)
    hsb = np.array([float(s) for _, _, s in params.hidden], dtype=np.float64)
    consts = CoupledConsts(params.sigma_w, params.sigma_b, params.sigma_a, finite, bool(has_inf), table, k0,
                           hsw, hsb)
    return Prepared(consts, "coupled", (("widths", ws),), int(finite[-1]) if finite.size else None)


def _cost(n, d, m):
    return float(n) * m * (d + n) + float(n) ** 3   # one-layer; a hidden layer adds n m^2


MODEL = Model(name="coupled", module=__name__, label="width coupling", unit="layer", converges_to=None,
              needs_width=True, field=False, uses_activation=("noise",), prepare=prepare, cost=_cost,
              description="widths m_1 < .. < m_K and m = inf on one noise (nested hidden units, one "
                          "xi: F = Khat_m^{1/2} xi, G = K^{1/2} xi)",
              driver="coupled")
