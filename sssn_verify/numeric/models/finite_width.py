"""The finite-width transformer of docs/mathematics.md, section 1 (MLP width m); it converges, as m grows, to
the Gaussian transformer.  One layer, step ``h = T / L``::

    y_i  = Pi(x_i + h A_i(X))                       (numeric.attention: H heads)
    x_i' = Pi(y_i + sqrt(h) F_l(y_i)),   F_l(y) = m^{-1/2} sum_k a_k phi(<w_k, y> + b_k)

with fresh weights every layer, shared by the tokens of a path, drawn literally or exactly
in law (``fields.mlp_preactivations`` / ``mlp_outputs``; ``prepare`` picks per block).

Tangent step (one token, k tangent vectors dy_a): ``(F(y), J_F(y) dy_a)`` is the MLP's
output on the rows ``(y, dy_1, .., dy_k)`` with bias indicators ``(1, 0, .., 0)`` and hidden
rows ``(phi(z), phi'(z) zdot_a)``, sampled exactly in law or with literal weights.
``noise`` and ``tangent_step`` call ``phi``/``dphi``, bound per activation by the driver.

A deep block (``params.hidden``; width m in every hidden layer): each middle layer is
``mlp_preactivations`` on the previous layer's rows with scale sigma_w / sqrt(m), literal or
exact in law through their Gram matrix (``hid_exact``), activations ``hidden_phi``/``hidden_dphi``
(generated per stack by the driver); docs/mathematics.md "Deep MLP blocks".
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ...errors import ParameterError
from ...params import check_int
from ..attention import half_step, tangent_half_step
from ..fields import STATUS_OK, exact_in_law_choice, mlp_outputs, mlp_preactivations
from ..sphere import project_rows
from . import Model, Prepared

FiniteWidthConsts = namedtuple("FiniteWidthConsts", ["sw", "sb", "sa", "m", "pre_exact", "out_exact",
                                                     "hsw", "hsb", "hid_exact"])
MODES = ("auto", "exact", "literal")


def phi(u):  # bound to the activation's numba function in the generated kernel module
    raise NotImplementedError


dphi = phi


def hidden_phi(layer, u):  # hidden layer `layer`'s activation, generated per stack by the driver
    raise NotImplementedError


hidden_dphi = hidden_phi
evaluate = half_step


@njit(cache=True)
def advance(X, E, W, h, consts, att, aw, w):
    """X = Pi(E + W) (W is overwritten)."""
    for i in range(E.shape[0]):
        for c in range(E.shape[1]):
            W[i, c] = E[i, c] + W[i, c]
    return project_rows(W, X)


@njit(cache=True)
def _mlp_work(n, d, consts):
    m = consts.m
    Xi = np.empty((n, m)) if consts.pre_exact else np.empty((1, 1))
    Wd = np.empty((1, 1)) if consts.pre_exact else np.empty((d, m))
    bm = np.empty(1) if consts.pre_exact else np.empty(m)
    Am = np.empty((n, m)) if consts.out_exact else np.empty((m, d))  # exact: the tree-basis rows
    deep = consts.hsw.shape[0] > 0
    Z2 = np.empty((n, m)) if deep else np.empty((1, 1))
    Xih = np.empty((n, m)) if deep and consts.hid_exact else np.empty((1, 1))
    Wh = np.empty((m, m)) if deep and not consts.hid_exact else np.empty((1, 1))
    bh = np.empty(m) if deep and not consts.hid_exact else np.empty(1)
    return (np.empty((n, m)), np.empty((n, n)), np.empty((n, n)), Xi, Wd, bm, np.empty((n, d)), Am,
            Z2, Xih, Wh, bh)


@njit(cache=True)
def _hidden_stack(st, Z, bias, consts, Z2, C, L, Xih, Wh, bh, tangent, rtol):
    """The hidden layers after the first: Z (n, m) holds phi_1(h^1) rows (tangent: row 0 and
    the tangent rows phi_1'(z) zdot_a) and receives the last hidden layer's rows.  Returns a status."""
    cur = Z
    nxt = Z2
    code = STATUS_OK
    for layer in range(consts.hsw.shape[0]):
        code = mlp_preactivations(st, cur, bias, consts.hsw[layer], consts.hsb[layer], consts.hid_exact,
                                  nxt, C, L, Xih, Wh, bh, rtol)
        if code != STATUS_OK:
            return code
        if tangent:
            for j in range(nxt.shape[1]):
                z = nxt[0, j]
                g = hidden_dphi(layer, z)
                for a in range(1, nxt.shape[0]):
                    nxt[a, j] = g * nxt[a, j]
                nxt[0, j] = hidden_phi(layer, z)
        else:
            for i in range(nxt.shape[0]):
                for k in range(nxt.shape[1]):
                    nxt[i, k] = hidden_phi(layer, nxt[i, k])
        tmp = cur
        cur = nxt
        nxt = tmp
    if consts.hsw.shape[0] % 2 == 1:
        for i in range(Z.shape[0]):
            for k in range(Z.shape[1]):
                Z[i, k] = Z2[i, k]
    return code


@njit(cache=True)
def work(n, d, consts):
    """(bias indicators, the MLP's buffers) for n tokens."""
    return (np.ones(n), _mlp_work(n, d, consts))


@njit(cache=True)
def noise(st, E, consts, w, W, rtol):
    """W = F(E): a fresh MLP at the rows of E."""
    ones = w[0]
    Z, C, L, Xi, Wd, bm, Zd, Am, Z2, Xih, Wh, bh = w[1]
    code = mlp_preactivations(st, E, ones, consts.sw, consts.sb, consts.pre_exact, Z, C, L, Xi, Wd, bm,
                              rtol)
    if code == STATUS_OK:
        for i in range(Z.shape[0]):
            for k in range(Z.shape[1]):
                Z[i, k] = phi(Z[i, k])
        if consts.hsw.shape[0] > 0:
            code = _hidden_stack(st, Z, ones, consts, Z2, C, L, Xih, Wh, bh, False, rtol)
    if code == STATUS_OK:
        code = mlp_outputs(st, Z, consts.sa, consts.out_exact, W, C, L, Zd, Am, rtol)
    return code


@njit(cache=True)
def tangent_work(d, k, consts):
    bias = np.zeros(k + 1)
    bias[0] = 1.0
    return (bias, np.empty((k + 1, d)), np.empty((k + 1, d)), np.empty(d), np.empty((k, d)),
            _mlp_work(k + 1, d, consts))


@njit(cache=True)
def tangent_step(st, x, V, h, consts, att, tw, rtol):
    """x <- y + sqrt(h) F(y), V_a <- dy_a + sqrt(h) J_F(y) dy_a (before the projection)."""
    bias, Yr, O, y, dY = tw[0], tw[1], tw[2], tw[3], tw[4]
    Z, C, L, Xi, Wd, bm, Zd, Am, Z2, Xih, Wh, bh = tw[5]
    code = tangent_half_step(x, V, h, att, y, dY)
    k = V.shape[0]
    if code == STATUS_OK:
        Yr[0] = y
        for a in range(k):
            Yr[a + 1] = dY[a]
        code = mlp_preactivations(st, Yr, bias, consts.sw, consts.sb, consts.pre_exact, Z, C, L, Xi, Wd,
                                  bm, rtol)
    if code == STATUS_OK:
        for j in range(Z.shape[1]):
            z = Z[0, j]
            g = dphi(z)
            for a in range(1, k + 1):
                Z[a, j] = g * Z[a, j]
            Z[0, j] = phi(z)
        if consts.hsw.shape[0] > 0:
            code = _hidden_stack(st, Z, bias, consts, Z2, C, L, Xih, Wh, bh, True, rtol)
    if code == STATUS_OK:
        code = mlp_outputs(st, Z, consts.sa, consts.out_exact, O, C, L, Zd, Am, rtol)
    if code == STATUS_OK:
        sq = math.sqrt(h)
        for c in range(x.shape[0]):
            x[c] = y[c] + sq * O[0, c]
            for a in range(k):
                V[a, c] = dY[a, c] + sq * O[a + 1, c]
    return code


def choose_mode(mode: str, n: int, d: int, m: int) -> tuple[bool, bool]:
    """(pre_exact, out_exact) for `mode` ("auto": the cheaper per block, see fields)."""
    if mode not in MODES:
        raise ParameterError("mode", mode, f"must be one of {', '.join(MODES)}")
    if mode == "exact":
        return True, True
    if mode == "literal":
        return False, False
    return exact_in_law_choice(n, d, m)


def _hidden_consts(hidden, m: int, mode: str, n_rows: int):
    """(hsw, hsb, hid_exact): the hidden layers' scales sigma_w / sqrt(m), sigma_b and the
    middle layers' sampling (a middle layer is the first layer's problem with d = m inputs)."""
    hsw = np.array([float(sw) / math.sqrt(m) for _, sw, _ in hidden], dtype=np.float64)
    hsb = np.array([float(sb) for _, _, sb in hidden], dtype=np.float64)
    hid_exact = bool(hidden) and choose_mode(mode, n_rows, m, m)[0]
    return hsw, hsb, hid_exact


def prepare(params, width=None, mode="auto", n_rows=1, tangent=False) -> Prepared:
    """FiniteWidthConsts for MLP width m = `width` on `n_rows` rows (tokens, or 1 + k)."""
    if width is None:
        raise ParameterError("width", width, "is required for model='transformer'")
    m = check_int("width", width, 1)
    pre_exact, out_exact = choose_mode(mode, n_rows, params.d, m)
    label = {(True, True): "exact", (False, False): "literal"}.get(
        (pre_exact, out_exact), "exact-pre" if pre_exact else "exact-out")
    hsw, hsb, hid_exact = _hidden_consts(params.hidden, m, mode, n_rows)
    consts = FiniteWidthConsts(params.sigma_w, params.sigma_b, params.sigma_a, m, pre_exact, out_exact,
                               hsw, hsb, hid_exact)
    info = (("pre_exact", pre_exact), ("out_exact", out_exact))
    if params.hidden:
        info += (("hidden_exact", hid_exact),)
    return Prepared(consts, label, info, m)


def _cost(n, d, m):
    return float(n) * m * d   # the one-layer block's; a deep block's middle layers add ~ n m^2 each


MODEL = Model(name="transformer", module=__name__, label="finite-width transformer", unit="layer",
              converges_to="gaussian", needs_width=True, field=False,
              uses_activation=("noise", "tangent_step", "_hidden_stack"), prepare=prepare, cost=_cost,
              description="finite-width transformer (MLP width m): x' = Pi(y + sqrt(delta) F(y))")
