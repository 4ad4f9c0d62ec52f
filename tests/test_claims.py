"""The claims' checkers have power: deliberately wrong formulas, fed through the very same
checker as the derived ones, are rejected; the derived formulas pass for several seeds.

Mutations are judged at level 1 - 1e-4, stricter than the per-check level the suite uses
(Holm at family level 0.01 over ~20 checks: at worst 5e-4 per check), so a mutation rejected
here is rejected by the suite too.
"""
import math
from dataclasses import replace

import numpy as np
import pytest

from sssn_verify.claims import CLAIMS, UNAVAILABLE, get_claim
from sssn_verify.errors import ClaimError, ParameterError

STRICT = 1 - 1e-4
SEEDS = (0, 1, 2)


def claim(name):
    assert name in CLAIMS, f"claim {name} not registered: {UNAVAILABLE.get(name)}"
    return CLAIMS[name]


def rejected(result):
    return not result.passed


def test_registry_declares_every_claim_side_by_side():
    for name, c in CLAIMS.items():
        assert c.name == name and c.statement and c.statistic and c.tolerance
        assert 0.5 < c.level < 1
        assert set(c.budgets) >= {"quick", "full"}
        desc = c.describe()
        assert desc["budgets"]["quick"]
    with pytest.raises(ClaimError):
        get_claim("no_such_claim")
    with pytest.raises(ParameterError):
        claim("kernel").run("medium", 0)


# ----------------------------------------------------------------------------- kernel

KERNEL_FAST = {"activations": ("relu", "sin:3"), "samples": 20_000, "quadrature_check": ()}


def _kernel_mutant(mutate_K=None, mutate_k=None):
    from sssn_verify.claims.kernel import derived_formula
    f = derived_formula()
    K = f.K if mutate_K is None else (lambda n, r, sw, sb, sa: mutate_K(f.K, n, r, sw, sb, sa))
    kk = f.k0k1 if mutate_k is None else (lambda n, sw, sb, sa: mutate_k(f.k0k1(n, sw, sb, sa)))
    return replace(f, K=K, k0k1=kk)


def _relu_sign_flip(K, n, r, sw, sb, sa):
    """(pi + acos r) instead of (pi - acos r) in the ReLU kernel."""
    s2 = sw * sw + sb * sb
    c = (sw * sw * r + sb * sb) / s2
    return sa * sa * s2 / (2 * math.pi) * (math.sqrt(1 - c * c) + (math.pi + math.acos(c)) * c)


@pytest.mark.parametrize("mutant", [
    _kernel_mutant(mutate_K=_relu_sign_flip),
    _kernel_mutant(mutate_K=lambda K, *a: 2 * K(*a)),                       # a factor 2
    _kernel_mutant(mutate_K=lambda K, n, r, sw, sb, sa: K(n, r, sw, 0.0, sa)),   # bias dropped
    _kernel_mutant(mutate_k=lambda k: (k[0], 2 * k[1])),                    # k1 off by 2
    _kernel_mutant(mutate_k=lambda k: (k[1], k[0])),                        # k0 <-> k1
], ids=["relu-sign", "factor-2", "no-bias", "k1-factor-2", "k0-k1-swap"])
def test_kernel_checker_rejects_wrong_formulas(mutant):
    assert rejected(claim("kernel").run("quick", 0, level=STRICT, formula=mutant, budget=KERNEL_FAST))


@pytest.mark.parametrize("seed", SEEDS)
def test_kernel_checker_accepts_the_derived_formula(seed):
    res = claim("kernel").run("quick", seed, budget=KERNEL_FAST)
    assert res.passed, [c.to_dict() for c in res.checks if not c.passed]


def test_kernel_derived_relu_matches_the_arc_cosine_oracle():
    from sssn_verify.claims.kernel import derived_formula
    f = derived_formula()
    sw, sb, sa, r = 0.8, 0.6, 1.3, 0.4
    s2 = sw**2 + sb**2
    c = (sw**2 * r + sb**2) / s2
    oracle = sa**2 * s2 / (2 * math.pi) * (math.sqrt(1 - c * c) + (math.pi - math.acos(c)) * c)
    assert f.K("relu", r, sw, sb, sa) == pytest.approx(oracle, rel=1e-12)
    assert f.k0k1("relu", sw, sb, sa) == pytest.approx((sa**2 * s2 / 2, sa**2 * sw**2 / 2), rel=1e-12)


# ----------------------------------------------------------------------------- two-point motion

TWO_POINT_FAST = {"samples": 40_000}


def _two_point_mutant(b=None, a=None):
    from sssn_verify.claims.two_point import derived_formula
    f = derived_formula()
    return replace(f, b=b or f.b, a=a or f.a)


@pytest.mark.parametrize("mutant", [
    _two_point_mutant(b=lambda d, r, k0, K: -(d - 2) * k0 * r + (d - 2 + r * r) * K),   # d-2 for d-1
    _two_point_mutant(b=lambda d, r, k0, K: -(d - 1) * k0 * r + (d - 3 + r * r) * K),   # d-3 for d-2
    _two_point_mutant(b=lambda d, r, k0, K: (d - 1) * k0 * r - (d - 2 + r * r) * K),    # sign
    _two_point_mutant(a=lambda d, r, k0, K: (1 - r * r) * (k0 - r * K)),                # factor 2
    _two_point_mutant(a=lambda d, r, k0, K: 2 * (1 - r * r) * (k0 + r * K)),            # sign
], ids=["drift-d-2", "drift-d-3", "drift-sign", "diffusion-factor-2", "diffusion-sign"])
def test_two_point_checker_rejects_wrong_coefficients(mutant):
    assert rejected(claim("two_point").run("quick", 0, level=STRICT, formula=mutant, budget=TWO_POINT_FAST))


@pytest.mark.parametrize("seed", SEEDS)
def test_two_point_checker_accepts_the_derived_coefficients(seed):
    res = claim("two_point").run("quick", seed, budget=TWO_POINT_FAST)
    assert res.passed, [c.to_dict() for c in res.checks if not c.passed]


def test_two_point_derived_coefficients_match_the_hand_oracle():
    from sssn_verify.claims.two_point import derived_formula
    f = derived_formula()
    d, r, k0, K = 5, 0.3, 0.7, 0.4
    assert f.b(d, r, k0, K) == pytest.approx(-(d - 1) * k0 * r + (d - 2 + r * r) * K)
    assert f.a(d, r, k0, K) == pytest.approx(2 * (1 - r * r) * (k0 - r * K))


# ----------------------------------------------------------------------------- Ito drift

ITO_FAST = {"paths": 20_000, "n_configs": 2, "general_samples": 40_000, "one_step_paths": 50_000}


def _ito_mutant(coefficient=None, general=None):
    from sssn_verify.claims.ito_drift import derived_formula
    f = derived_formula()
    return replace(f, coefficient=coefficient or f.coefficient, general=general or f.general)


def _general_wrong_three_halves(x, S):
    return -S @ x - np.trace(S) / 2 * x + 0.5 * (x @ S @ x) * x


def _general_wrong_trace(x, S):
    return -S @ x - np.trace(S) * x + 1.5 * (x @ S @ x) * x


@pytest.mark.parametrize("mutant", [
    _ito_mutant(coefficient=lambda d, k0: -(d - 2) * k0 / 2),
    _ito_mutant(coefficient=lambda d, k0: -(d - 1) * k0),
    _ito_mutant(coefficient=lambda d, k0: (d - 1) * k0 / 2),
    _ito_mutant(general=_general_wrong_three_halves),
    _ito_mutant(general=_general_wrong_trace),
], ids=["d-2", "factor-2", "sign", "general-3/2", "general-trace/2"])
def test_ito_checker_rejects_wrong_drifts(mutant):
    assert rejected(claim("ito_drift").run("quick", 0, level=STRICT, formula=mutant, budget=ITO_FAST))


@pytest.mark.parametrize("seed", SEEDS)
def test_ito_checker_accepts_the_derived_drift(seed):
    res = claim("ito_drift").run("quick", seed, budget=ITO_FAST)
    assert res.passed, [c.to_dict() for c in res.checks if not c.passed]


def test_ito_derived_drift_matches_the_hand_oracle():
    from sssn_verify.claims.ito_drift import derived_formula
    f = derived_formula()
    assert f.coefficient(7, 0.3) == pytest.approx(-6 * 0.3 / 2)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    S = A @ A.T
    x = np.array([0.6, 0.8, 0.0])
    assert f.general(x, S) == pytest.approx(-S @ x - np.trace(S) / 2 * x + 1.5 * (x @ S @ x) * x)


# ----------------------------------------------------------------------------- lambda_1, synchronization

LYAP_FAST = {"n_configs": 3, "paths": 6_000, "paths_transformer": 3_000, "one_step_paths": 50_000}


@pytest.mark.parametrize("mutant", [
    lambda d, k0, k1: ((d - 3) * k1 - (d - 2) * k0) / 2,     # d-2 for d-1
    lambda d, k0, k1: ((d - 3) * k0 - (d - 1) * k1) / 2,     # k0 <-> k1
    lambda d, k0, k1: (d - 3) * k1 - (d - 1) * k0,           # factor 2
    lambda d, k0, k1: -((d - 3) * k1 - (d - 1) * k0) / 2,    # sign
], ids=["d-2", "k0-k1-swap", "factor-2", "sign"])
def test_lyapunov_checker_rejects_wrong_exponents(mutant):
    assert rejected(claim("lyapunov").run("quick", 0, level=STRICT, formula=mutant, budget=LYAP_FAST))


def test_lyapunov_and_synchronization_accept_the_derived_exponent():
    for seed in (0, 1):
        res = claim("lyapunov").run("quick", seed, budget=LYAP_FAST)
        assert res.passed, [c.to_dict() for c in res.checks]
    res = claim("synchronization").run("quick", 0, budget={"paths": 3000})
    assert res.passed, [c.to_dict() for c in res.checks]


def test_synchronization_rejects_a_flipped_sign_and_a_missing_factor():
    from sssn_verify.claims.lyapunov import derived_formula
    f = derived_formula()
    for mutant in (lambda d, k0, k1: -f(d, k0, k1), lambda d, k0, k1: 2 * f(d, k0, k1)):
        assert rejected(claim("synchronization").run("quick", 0, level=STRICT, formula=mutant,
                                                     budget={"paths": 3000}))


# ----------------------------------------------------------------------------- convergence, chaos, limits

def test_convergence_depth_accepts_log_l_over_l_and_rejects_faster_rates():
    budget = {"paths": 120, "n_boot": 500}
    assert claim("convergence_depth").run("quick", 0, budget=budget).passed
    for wrong in (lambda L: L ** -2.0, lambda L: L ** -1.5):
        assert rejected(claim("convergence_depth").run("quick", 0, level=STRICT, formula=wrong, budget=budget))


def test_propagation_of_chaos_accepts_n_to_the_minus_half_and_rejects_n_to_the_minus_two():
    budget = {"ns": (8, 16, 32), "n_ref": 256, "paths": 16, "depth": 16, "n_boot": 500}
    assert claim("propagation_of_chaos").run("quick", 0, budget=budget).passed
    assert rejected(claim("propagation_of_chaos").run("quick", 0, level=STRICT,
                                                      formula=lambda N: np.asarray(N, float) ** -2.0,
                                                      budget=budget))


def test_commuting_limits_rejects_a_wrong_limit():
    from sssn_verify.claims.commuting_limits import sde_limit
    budget = {"paths": 4000, "table": None}       # the L x m table is a report (tested in test_coupling)
    assert claim("commuting_limits").run("quick", 0, budget=budget).passed
    wrong = lambda p, L, P, seed: sde_limit(p.with_(sigma_a=p.sigma_a * math.sqrt(2)), L, P, seed)  # k0 x 2
    assert rejected(claim("commuting_limits").run("quick", 0, level=STRICT, formula=wrong, budget=budget))


# ----------------------------------------------------------------------------- dissipation, ReLU, coercivity

DISS_FAST = {"n_configs": 2, "n_edge": 2, "paths": 2000}


def test_dissipation_accepts_the_derived_rate_and_rejects_wrong_ones():
    from sssn_verify.claims.dissipation import derived_formula
    f = derived_formula()
    for seed in (0, 1):
        res = claim("dissipation").run("quick", seed, budget=DISS_FAST)
        assert res.passed, [c.to_dict() for c in res.checks if not c.passed]
    too_fast = replace(f, lambda_bar=lambda *a: 2 * f.lambda_bar(*a))                       # factor 2
    wrong_edge = replace(f, edge=lambda d, k0, k1: (d - 2) * k1 - (d - 3) * k0)             # d-2 for d-1
    for mutant in (too_fast, wrong_edge):
        assert rejected(claim("dissipation").run("quick", 0, level=STRICT, formula=mutant, budget=DISS_FAST))


def test_relu_rates_accepts_the_derived_and_rejects_wrong_sign_patterns():
    from sssn_verify.claims.relu_rates import derived_formula
    f = derived_formula()
    budget = {"n_t": 4, "paths": 8000, "paths_energy": 2000}
    assert claim("relu_rates").run("quick", 0, budget=budget).passed
    for mutant in (replace(f, edge=lambda d, sw, sb, sa: sa ** 2 / 2 * (2 * sw ** 2 - (d - 2) * sb ** 2)),
                   replace(f, region=lambda d, t: d > 2 and t > math.sqrt(2 / (d - 2))),
                   replace(f, lambda1=lambda *a: -f.lambda1(*a))):
        assert rejected(claim("relu_rates").run("quick", 0, level=STRICT, formula=mutant, budget=budget))


def test_coercivity_accepts_the_derived_and_rejects_wrong_characterizations():
    from sssn_verify.claims.coercivity import derived_formula
    f = derived_formula()
    budget = {"n_activations": 2, "paths": 2000}
    assert claim("coercivity").run("quick", 0, budget=budget).passed
    for mutant in (replace(f, edge=lambda d, sw, m0, m1: (d - 1) * sw ** 2 * m1 < (d - 2) * m0),
                   replace(f, edge=lambda d, sw, m0, m1: (d - 1) * sw ** 2 * m1 > (d - 3) * m0)):
        assert rejected(claim("coercivity").run("quick", 0, level=STRICT, formula=mutant, budget=budget))
