"""One projected step of a pair under a Gaussian field, in numpy (independent of the engine): the
Monte Carlo of the two-point generator's drift and squared diffusion, for rho (test_two_point) and
for r = rho^2 (test_projective), Richardson-extrapolated over h, h/2."""
import math

import numpy as np


def one_step_moments(rng, dim, r, kk0, K, h, n, square=False):
    """(mean, se) of (d - control)/h and of d^2/h for the projected step, d the change of rho
    (or of rho^2 with `square`); x = e_1, y at overlap r, fields with K(1) = kk0, K(r) = K."""
    x = np.zeros(dim)
    x[0] = 1.0
    y = np.zeros(dim)
    y[0], y[1] = r, math.sqrt(1 - r * r)
    z1 = rng.standard_normal((n, dim))
    z2 = rng.standard_normal((n, dim))
    gx = math.sqrt(h * kk0) * z1
    gy = math.sqrt(h) * (K / math.sqrt(kk0) * z1 + math.sqrt(kk0 - K * K / kk0) * z2)
    X = x + gx
    Y = y + gy
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    rho = np.einsum("ij,ij->i", X, Y)
    delta = rho**2 - r * r if square else rho - r
    control = (2 * r if square else 1.0) * (gx @ (y - r * x) + gy @ (x - r * y))
    m1 = (delta - control) / h
    m2 = delta**2 / h
    return (m1.mean(), m1.std(ddof=1) / math.sqrt(n)), (m2.mean(), m2.std(ddof=1) / math.sqrt(n))


def extrapolated(rng, dim, r, kk0, K, h, n, square=False):
    """Richardson over h, h/2 of both moments: ((drift, se), (squared diffusion, se))."""
    (a1, s1), (b1, t1) = one_step_moments(rng, dim, r, kk0, K, h, n, square)
    (a2, s2), (b2, t2) = one_step_moments(rng, dim, r, kk0, K, h / 2, n, square)
    return (2 * a2 - a1, math.sqrt(4 * s2**2 + s1**2)), (2 * b2 - b1, math.sqrt(4 * t2**2 + t1**2))
