"""lambda_bar against the dynamics (numeric/layer_rates), never against its own derivation.

* The generator of one exact Gaussian layer (second differences of the layer map, quadrature
  kernel) equals the derived L2 f / f pointwise within its stated error, and its sup the derived
  lambda_bar (including rho* = -1 at beta > 0).
* Monte Carlo of exact layers: the Richardson combination removes the time-step bias that a
  single step shows; bit-identical for any thread count.
* The dissipation claim rejects lambda_bar replaced by the edge value (where the sup is interior),
  lambda_bar + 1, + 3 and 2 % errors, through its Monte Carlo part alone as well; accepts the
  derived one over seeds 0..10.
* `check lambda_bar` rejects the edge formula when d is free (the chooser visits rho* = -1
  points) and 2 % errors; accepts the edge formula at beta = 0, the exact ReLU sup
  Max(edge, antipodal value) at beta > 0 (built by sympy), and the antipodal value where
  rho* = -1 over seeds 0..10 (the evidence is deterministic: the seed must not matter).
* relu_rates: the exact layers' log-distance drift and edge rate (no allowance) reject 1 % in
  lambda_1 and 2 % in lambda_edge by the Monte Carlo alone.
* A subnormal beta gives the beta = 0 value, not 0/0.
"""
import math
from dataclasses import replace

import numba
import numpy as np
import pytest
import sympy as sp

from sssn_verify.check import check_candidate
from sssn_verify.claims import CLAIMS
from sssn_verify.claims.dissipation import derived_formula, independent_kernel
from sssn_verify.numeric import layer_rates as lr
from sssn_verify.numeric.rates import lambda_bar, ratio

POINTS = [("relu", 8, 1.0, 1.0, 1.0, 1.0), ("relu", 6, 1.0, 1.5, 1.0, 0.0), ("tanh", 5, 1.2, 0.3, 1.0, 2.0),
          ("gelu", 10, 1.0, 1.5, 1.0, 1.0), ("erf", 3, 0.8, 0.5, 1.0, 1.0), ("sin:3", 4, 1.0, 0.0, 1.0, 0.5),
          ("relu", 2, 1.0, 0.0, 1.0, 0.0)]
# the Monte Carlo parts only: the deterministic part is seed-independent and tested separately
MC_ONLY = {"n_configs": 1, "paths": 100_000, "paths_bound": 4000}


@pytest.mark.parametrize("act,d,sw,sb,sa,beta", POINTS)
def test_layer_generator_equals_the_derived_ratio_and_sup(act, d, sw, sb, sa, beta):
    kf = independent_kernel(act, sw, sb, sa)
    us = np.array([1e-9, 1e-3, 0.3, 1.0, 1.7, 2.0])
    got, err = lr.generator_ratio(kf, d, beta, us)
    assert np.all(np.abs(got - ratio(kf, d, beta, us)) <= err)
    assert np.all(err <= 1e-6 * (1 + np.abs(got)))
    sup, arg, serr = lr.sup_ratio(kf, d, beta)
    der, darg = lambda_bar(act, d, sw, sb, sa, beta)
    assert abs(sup - der) <= 2 * serr
    assert abs(arg - darg) <= 1e-3


def test_layer_generator_sees_a_wrong_generator():
    # the derived ratio with d-2 replaced by d-1.98 (a 1 % slip in one coefficient) is outside the error
    kf = independent_kernel("relu", 1.0, 1.0, 1.0)
    us = np.array([0.5, 2.0])
    got, err = lr.generator_ratio(kf, 8, 1.0, us)
    wrong = ratio(kf, 8.02, 1.0, us)
    assert np.all(np.abs(got - wrong) > 100 * err)


def test_subnormal_beta_is_the_beta_zero_limit():
    for act in ("relu", "tanh"):
        zero = lambda_bar(act, 8, 1.0, 1.0, 1.0, 0.0)
        for beta in (5e-324, 1e-310, 1e-300):
            val, arg = lambda_bar(act, 8, 1.0, 1.0, 1.0, beta)
            assert math.isfinite(val) and val == pytest.approx(zero[0], rel=1e-12) and arg == zero[1]
    assert lr.f_tilde(np.array([0.5, 2.0]), 5e-324) == pytest.approx([0.5, 2.0])


def test_richardson_removes_the_step_bias_and_threads_do_not_matter():
    from sssn_verify.numeric.kernels import kernel
    kf = kernel("relu", 1.0, 1.0, 1.0)                  # the model's field (its table is what the engine samples)
    X = lr.two_tokens(9, 2.0)                     # rho* = -1 at beta = 3
    target = float(lr.generator_ratio(kf, 9, 3.0, np.array([2.0]))[0][0])
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        R1, A1, _ = lr.initial_rate_paths(X, kf, 3.0, 60_000, seed=4, delta=1e-2)
        numba.set_num_threads(old)
        R, A, _ = lr.initial_rate_paths(X, kf, 3.0, 60_000, seed=4, delta=1e-2)     # a coarse step
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(R, R1) and np.array_equal(A, A1)
    se = R.std(ddof=1) / math.sqrt(R.size)
    assert abs(R.mean() - target) < 4 * se                          # bias-free
    z_single = (A[:, 0].mean() - target) / (A[:, 0].std(ddof=1) / math.sqrt(R.size))
    assert abs(z_single) > 10                                       # one step of delta = 0.01 is biased
    Rd, Ad, _ = lr.initial_rate_paths(X, kf, 3.0, 60_000, seed=5)       # the default step: small, same variance
    assert abs(Rd.mean() - target) < 4 * Rd.std(ddof=1) / math.sqrt(Rd.size)
    assert Rd.std() < 1.2 * R.std()


def _mc_checks(result):
    return [c for c in result.checks if c.pvalue is not None]


def test_dissipation_claim_accepts_the_derived_rate_over_seeds():
    for seed in range(11):
        res = CLAIMS["dissipation"].run("quick", seed, budget=MC_ONLY)
        assert res.passed, (seed, [c.to_dict() for c in res.checks if not c.passed])


def test_dissipation_claim_rejects_edge_shifted_and_two_percent_wrong_rates():
    f = derived_formula()

    edge = replace(f, lambda_bar=lambda kf, d, beta: f.edge(d, kf.k0, kf.k1))
    mutants = {"edge value": edge,
               "+1": replace(f, lambda_bar=lambda *a: f.lambda_bar(*a) + 1),
               "+3": replace(f, lambda_bar=lambda *a: f.lambda_bar(*a) + 3),
               "x1.02": replace(f, lambda_bar=lambda *a: 1.02 * f.lambda_bar(*a)),
               "x0.98": replace(f, lambda_bar=lambda *a: 0.98 * f.lambda_bar(*a))}
    for seed in (0, 1):
        for name, mutant in mutants.items():
            res = CLAIMS["dissipation"].run("quick", seed, formula=mutant, level=1 - 1e-4, budget=MC_ONLY)
            assert not res.passed, name
            assert not all(c.passed for c in _mc_checks(res)), name      # the dynamics alone reject it


def test_two_percent_errors_at_an_edge_point_are_rejected_by_the_monte_carlo_alone():
    from sssn_verify.claims.dissipation import CONFIGS
    f = derived_formula()
    budget = {"configs": [CONFIGS[1]], "paths": 400_000, "paths_bound": 2000}     # relu d = 6, sup at the edge
    for factor in (1.02, 0.98):
        mutant = replace(f, lambda_bar=lambda *a, k=factor: k * f.lambda_bar(*a))
        res = CLAIMS["dissipation"].run("quick", 3, formula=mutant, level=1 - 1e-4, budget=budget)
        sharp = [c for c in _mc_checks(res) if "maximizing" in c.name]
        assert sharp and not sharp[0].passed and sharp[0].min_detectable < 0.02


def test_relu_rates_monte_carlo_alone_rejects_one_percent_in_lambda1_and_two_in_the_edge():
    from sssn_verify.claims.relu_rates import derived_formula as relu_formula
    f = relu_formula()
    budget = {"n_t": 1, "paths": 100_000, "paths_energy": 200_000}
    assert CLAIMS["relu_rates"].run("quick", 5, budget=budget).passed
    for mutant in (replace(f, lambda1=lambda *a: 1.01 * f.lambda1(*a)), replace(f, edge=lambda *a: 1.02 * f.edge(*a)),
                   replace(f, edge=lambda *a: 0.98 * f.edge(*a))):
        res = CLAIMS["relu_rates"].run("quick", 5, formula=mutant, level=1 - 1e-4, budget=budget)
        assert not all(c.passed for c in _mc_checks(res))


def _relu_sup_candidate() -> str:
    """Max(edge value, value at rho = -1) for ReLU, from the derivations (sympy), as check text."""
    from sssn_verify.symbolic.dissipation import antipodal_rate, edge_rate
    from sssn_verify.symbolic.kernel import closed_form_kernel
    K = closed_form_kernel("relu")
    (rho,) = [s for s in K.free_symbols if s.name == "rho"]
    anti = antipodal_rate()
    (K_rho,) = [s for s in anti.free_symbols if s.name == "K_rho"]
    anti = anti.subs(K_rho, K.subs(rho, -1))
    names = {s: sp.Symbol(s.name) for s in (anti.free_symbols | edge_rate().free_symbols)}
    return f"Max({sp.sstr(edge_rate().xreplace(names))}, {sp.sstr(anti.xreplace(names))})"


def test_check_lambda_bar_rejects_the_edge_formula_and_two_percent_errors():
    relu = {"activation": "relu"}           # ReLU's supremum (the exact forms below are ReLU's)
    out = check_candidate("lambda_bar", "(d-1)*k1-(d-3)*k0", **relu)
    assert out.verdict == "rejected" and out.details["argmax_rho"] == -1.0
    for beta in (1.0, 3.0):
        assert check_candidate("lambda_bar", "(d-1)*k1-(d-3)*k0", beta=beta, **relu).verdict == "rejected"
    assert check_candidate("lambda_bar", "(d-1)*k1-(d-3)*k0", beta=0.0, **relu).verdict == "consistent"
    for wrong in ("1.02*((d-1)*k1-(d-3)*k0)", "0.98*((d-1)*k1-(d-3)*k0)"):
        assert check_candidate("lambda_bar", wrong, beta=0.0, **relu).verdict == "rejected"
    exact = _relu_sup_candidate()           # the sigmas searched: edge and rho* = -1 points (sympy Max is slow)
    assert check_candidate("lambda_bar", exact, d=8, beta=1.0, explore=20, **relu).verdict == "consistent"
    anti = exact[exact.index(", -beta") + 2:-1]     # the value at rho = -1 alone: exact where rho* = -1
    point = dict(d=8, sigma_w=1.0, sigma_b=1.0, sigma_a=1.0, beta=1.0, activation="relu")
    for seed in range(11):
        assert check_candidate("lambda_bar", anti, seed=seed, **point).verdict == "consistent"
    for factor in ("1.02", "0.98"):
        assert check_candidate("lambda_bar", f"{factor}*{anti}", **point).verdict == "rejected"
