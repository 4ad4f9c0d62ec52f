"""The sympy symbols shared by the derivations, defined once with one set of assumptions.

Every symbolic module (and every consumer of a derived expression: the bridge, the
claims, the tests) takes these objects from here, so an expression built in one module
can be substituted into another without renaming (docs/mathematics.md, section 1 for
the model, section 8 for the notation).  Integration variables private to one
derivation (e.g. the polar coordinates of ``kernel``) stay in that module.

More (moved from this docstring): docs/modules.md, ``sssn_verify.symbolic.symbols``.
"""
from __future__ import annotations

import sympy as sp

# model and kernel
d = sp.Symbol("d", positive=True, integer=True)
rho = sp.Symbol("rho", real=True)
u = sp.Symbol("u", positive=True)                 # u = 1 - rho
sigma_w = sp.Symbol("sigma_w", positive=True)
sigma_b = sp.Symbol("sigma_b", nonnegative=True)
sigma_a = sp.Symbol("sigma_a", positive=True)
beta = sp.Symbol("beta", nonnegative=True)
k0 = sp.Symbol("k0", positive=True)
k1 = sp.Symbol("k1", real=True)
Krho = sp.Symbol("K_rho", real=True)              # K(rho)
gamma = sp.Symbol("gamma", real=True)             # c(x) = gamma x

# expansions near the edge: K(1-u) = k0 - k1 u + c u^(1+alpha), and q = (k0 - K(1-u))/u
alpha = sp.Symbol("alpha", positive=True)
c_rem = sp.Symbol("c", real=True)
q = sp.Symbol("q", real=True)

# coercivity: t = sigma_b/sigma_w, Gaussian moments M0 = E phi(U)^2, M1 = E phi'(U)^2
t_ratio = sp.Symbol("t", nonnegative=True)
M0, M1 = sp.symbols("M0 M1", positive=True)

# Ito expansion of the projection: the step delta and eps = sqrt(delta)
delta = sp.Symbol("delta", positive=True)
eps = sp.Symbol("epsilon", positive=True)

# attention: H heads, operator 2-norms of the value maps and of K_h^T Q_h
H = sp.Symbol("H", positive=True, integer=True)
norm_V = sp.Symbol("norm_V", nonnegative=True)          # max_h ||V_h|| (or a bound)
norm_KtQ = sp.Symbol("norm_KtQ", nonnegative=True)      # max_h ||K_h^T Q_h||
sum_V = sp.Symbol("S_V", nonnegative=True)              # sum_h ||V_h||
sum_VKQ = sp.Symbol("S_VKQ", nonnegative=True)          # sum_h ||V_h|| ||K_h^T Q_h||

#: name -> symbol, for code that receives names (the bridge's argument lists, candidates)
BY_NAME: dict[str, sp.Symbol] = {s.name if s is not c_rem else "c_rem": s for s in (
    d, rho, u, sigma_w, sigma_b, sigma_a, beta, k0, k1, Krho, gamma, alpha, c_rem, q, t_ratio, M0, M1,
    delta, eps, H, norm_V, norm_KtQ, sum_V, sum_VKQ)}

__all__ = ["d", "rho", "u", "sigma_w", "sigma_b", "sigma_a", "beta", "k0", "k1", "Krho", "gamma", "alpha",
           "c_rem", "q", "t_ratio", "M0", "M1", "delta", "eps", "H", "norm_V", "norm_KtQ", "sum_V", "sum_VKQ",
           "BY_NAME"]
