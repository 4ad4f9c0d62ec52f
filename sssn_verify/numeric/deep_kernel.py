"""The kernel of a deep MLP block by composition of the layers' dual kernels (the NNGP recursion).

More (moved from this docstring): docs/modules.md, ``sssn_verify.numeric.deep_kernel``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..activations import Activation, get_activation
from ..errors import ParameterError
from . import kernel_quadrature as _k


@dataclass(frozen=True)
class Stage:
    """One layer's dual kernel: M0, M1 and the gap map G at variance S (sigma_a = 1)."""

    act: Activation
    closed: tuple | None           # kernels._closed(name): (k0(sw, sb), k1(sw, sb), K_mp(r, sw, sb))

    def mean_sq(self, S, fine: bool = True):
        """M0(S) = E phi(sqrt(S) Z)^2."""
        if self.closed is not None:
            import mpmath as mp
            return self.closed[0](mp.sqrt(S), 0) if isinstance(S, mp.mpf) else float(self.closed[0](math.sqrt(S), 0.0))
        kinks = _k._kink_points(self.act)
        f = lambda x: self.act.numpy(x) ** 2
        s = math.sqrt(float(S))
        return _k._gauss_1d(f, s, kinks, q=24, panels=48) if fine else _k._gauss_1d(f, s, kinks)

    def deriv_sq(self, S, fine: bool = True) -> float:
        """M1(S) = E phi'(sqrt(S) Z)^2 (inf when phi jumps)."""
        if self.act.has_jump:
            return math.inf
        S = float(S)
        if self.closed is not None:
            return float(self.closed[1](math.sqrt(S), 0.0)) / S     # k1(sw, 0) = sw^2 E phi'^2
        kinks = _k._kink_points(self.act)
        f = lambda x: self.act.numpy_derivative(x) ** 2
        s = math.sqrt(S)
        return _k._gauss_1d(f, s, kinks, q=24, panels=48) if fine else _k._gauss_1d(f, s, kinks)

    def gap(self, S, g, fine: bool = False):
        """G(S, g) = (1/2) E (phi(U) - phi(V))^2 with Var U = Var V = S, S - Cov(U, V) = g."""
        if g <= 0:
            return 0.0 * g
        if self.closed is not None:
            import mpmath as mp
            with mp.workdps(max(mp.mp.dps, 40)):          # k0 - K(r) cancels: 40 digits
                S_mp, g_mp = mp.mpf(S), mp.mpf(g)
                r = max(1 - g_mp / S_mp, mp.mpf(-1))
                s = mp.sqrt(S_mp)
                val = mp.re(self.closed[0](s, 0) - self.closed[2](r, s, 0))
            return val if isinstance(g, mp.mpf) else float(val)
        S, g = float(S), float(g)
        theta = 2.0 * math.asin(min(1.0, math.sqrt(g / (2.0 * S))))
        if fine:
            return _k._quad_gap(self.act, math.sqrt(S), 0.0, theta, q=20, panels_t=48, panels_r=15)
        return _k._quad_gap(self.act, math.sqrt(S), 0.0, theta)


def hidden_key(hidden) -> tuple:
    """The hashable key of a validated hidden stack: ((name, sigma_w, sigma_b), ...)."""
    return tuple((a.name, float(sw), float(sb)) for a, sw, sb in hidden)


def check_block(activation, hidden) -> None:
    """ParameterError for a block whose kernel table cannot be built: after a discontinuous
    activation every later one must be smooth (no kink, no jump), else k0 - K(1 - u) is not a
    smooth function of theta = arccos(rho) times sqrt(u) (e.g. step -> step gives u^(1/4))."""
    acts = [get_activation(activation)] + [get_activation(a) for a, _, _ in hidden]
    for i, a in enumerate(acts):
        if a.has_jump:
            later = [b for b in acts[i + 1:] if b.has_jump or b.kinks]
            if later:
                raise ParameterError("hidden", later[0].name,
                                     f"follows the discontinuous activation {a.name}: after a jump every later "
                                     "activation of the block must be smooth (no kink or jump), the kernel "
                                     "expansion at rho = 1 needs it")


class Block:
    """The stages and layer variances of one deep block (sigma_a = 1)."""

    def __init__(self, name: str, sw: float, sb: float, hkey: tuple, force_quadrature: bool = False):
        self.sw, self.sb = float(sw), float(sb)
        names = [name] + [h[0] for h in hkey]
        self.weights = [self.sw] + [h[1] for h in hkey]          # sigma_w of layer l (l = 1..L)
        self.biases = [self.sb] + [h[2] for h in hkey]
        self.stages = [Stage(get_activation(n), None if force_quadrature else _k._closed(n)) for n in names]
        self.closed = all(s.closed is not None for s in self.stages)
        self.jump = any(s.act.has_jump for s in self.stages)

    def variances(self, fine: bool = True, precise: bool = False) -> list:
        """[S_1, ..., S_L]: the pre-activation variance of every layer (mpmath numbers when `precise`)."""
        import mpmath as mp
        conv = mp.mpf if precise else float
        S = [conv(self.sw) ** 2 + conv(self.sb) ** 2]
        for stage, w, b in zip(self.stages[:-1], self.weights[1:], self.biases[1:]):
            S.append(conv(w) ** 2 * stage.mean_sq(S[-1], fine) + conv(b) ** 2)
        return S

    def check_moments(self) -> None:
        """ActivationError when a layer's E phi^2 or E phi'^2 is infinite or beyond the window."""
        for stage, S in zip(self.stages, self.variances()):
            stage.act.check_moments(math.sqrt(S))

    def constants(self, fine: bool = True) -> tuple[float, float]:
        """(k0, k1) for sigma_a = 1: M0 of the last layer and the chain-rule product."""
        S = self.variances(fine)
        k0 = float(self.stages[-1].mean_sq(S[-1], fine))
        if self.jump:
            return k0, math.inf
        k1 = self.sw ** 2
        for l, (stage, s) in enumerate(zip(self.stages, S)):
            k1 *= (self.weights[l] ** 2 if l else 1.0) * stage.deriv_sq(s, fine)
        return k0, float(k1)

    def gap(self, u, S=None, fine: bool = False):
        """k0 - K(1 - u) for sigma_a = 1 (mpmath when the variances `S` are)."""
        S = self.variances() if S is None else S
        g = self.sw ** 2 * u
        for l, stage in enumerate(self.stages):
            G = stage.gap(S[l], g, fine)
            if l + 1 < len(self.stages):
                g = self.weights[l + 1] ** 2 * G
        return G


def build_unit_table(name: str, sw: float, sb: float, hkey: tuple, force_quadrature: bool) -> dict:
    """The sigma_a = 1 table of numeric.kernels (same layout) for the deep block."""
    blk = Block(name, sw, sb, hkey, force_quadrature)
    header = _k._HEADER
    if sw == 0.0:                        # the first layer ignores x: K is constant
        k0 = blk.constants()[0]
        table = np.zeros(header + 1)
        table[0], table[1], table[2], table[3] = k0, float(blk.jump), 1, 0.0
        return dict(table=table, k0=k0, k1=0.0, method="closed form" if blk.closed else "quadrature",
                    error_bound=1e-15 * max(1.0, abs(k0)))
    k0, k1 = blk.constants()
    if blk.closed:
        import mpmath as mp
        with mp.workdps(40):
            S = blk.variances(precise=True)

            def h_at(thetas):
                out = np.empty(len(thetas))
                for i, th in enumerate(thetas):
                    u = 2 * mp.sin(mp.mpf(th) / 2) ** 2
                    out[i] = float(blk.gap(u, S) / (mp.sqrt(u) if blk.jump else u))
                return out
            coef, err = _k._adaptive_chebyshev(h_at, max_n=2049)
        quad_err, method = 0.0, "closed form"
    else:
        S = blk.variances()

        def h_at(thetas):
            out = np.empty(len(thetas))
            for i, th in enumerate(np.asarray(thetas, dtype=float)):
                u = _k._theta_to_u(th)
                out[i] = blk.gap(u, S) / (math.sqrt(u) if blk.jump else u)
            return out
        coef, err = _k._adaptive_chebyshev(h_at, max_n=257, start_n=65)
        k0c, k1c = blk.constants(fine=False)
        quad_err = abs(k0 - k0c) + (abs(k1 - k1c) if math.isfinite(k1) else 0.0)
        for th in (0.3, 1.7, 3.0):
            u = _k._theta_to_u(th)
            quad_err = max(quad_err, abs(blk.gap(u, S) - blk.gap(u, S, fine=True)))
        method = "quadrature"
    table = np.empty(header + coef.size)
    table[0], table[1], table[2], table[3] = k0, float(blk.jump), coef.size, k1
    table[header:] = coef
    bound = err + quad_err + 4e-16 * max(1.0, abs(k0))
    return dict(table=table, k0=k0, k1=k1, method=method, error_bound=float(bound))


def quadrature_value(name: str, rho: float, sw: float, sb: float, sa: float, hkey: tuple) -> float:
    """K(rho) of the block by the chain of quadratures, no table, no closed form."""
    blk = Block(name, sw, sb, hkey, force_quadrature=True)
    k0, _ = blk.constants()
    if sw == 0.0:
        return sa * sa * k0
    return sa * sa * (k0 - blk.gap(1.0 - rho))


__all__ = ["Stage", "Block", "build_unit_table", "quadrature_value", "hidden_key", "check_block"]
