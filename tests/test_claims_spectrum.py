"""Power of the issue-15 claims: slightly wrong formulas fed through the same checkers are rejected
(at level 1 - 1e-4, as in test_claims), the derived ones pass for several seeds.

The checkers cache their simulations per (configuration, budget, seed), so each seed's runs
are made once and every formula below is judged on the same data.
"""
import pytest

from sssn_verify.claims import CLAIMS, UNAVAILABLE

STRICT = 1 - 1e-4
SEEDS = (0, 1, 2)


def claim(name):
    assert name in CLAIMS, f"claim {name} not registered: {UNAVAILABLE.get(name)}"
    return CLAIMS[name]


# ----------------------------------------------------------------------------- log_distance_variance
VAR_FAST = {"n_configs": 2, "paths": 20_000}


def test_log_distance_variance_accepts_k0_plus_k1_over_seeds():
    for seed in SEEDS[:2]:
        res = claim("log_distance_variance").run("quick", seed, budget=VAR_FAST)
        assert res.passed, [c.to_dict() for c in res.checks]


@pytest.mark.parametrize("mutant", [
    lambda k0, k1: 1.02 * (k0 + k1),          # 2 % too large
    lambda k0, k1: 0.98 * (k0 + k1),          # 2 % too small
    lambda k0, k1: k0 + 0.9 * k1,             # wrong k1 coefficient
    lambda k0, k1: 1.1 * k0 + k1,             # wrong k0 coefficient
], ids=["+2%", "-2%", "0.9k1", "1.1k0"])
def test_log_distance_variance_rejects_slightly_wrong_rates(mutant):
    for seed in SEEDS[:2]:
        res = claim("log_distance_variance").run("quick", seed, level=STRICT, formula=mutant, budget=VAR_FAST)
        assert not res.passed, res.checks[0].pvalue


# ----------------------------------------------------------------------------- synchronization_time
SYNC_FAST = {"n_configs": 2, "paths": 4_000}


def _sync_mutants():
    from sssn_verify.claims.synchronization_time import derived_formula
    f = derived_formula()
    return {
        "lambda1*1.05": lambda d, k0, k1: (1.05 * f(d, k0, k1)[0], f(d, k0, k1)[1]),
        "lambda1*0.95": lambda d, k0, k1: (0.95 * f(d, k0, k1)[0], f(d, k0, k1)[1]),
        "d-2 for d-1": lambda d, k0, k1: (((d - 3) * k1 - (d - 2) * k0) / 2, f(d, k0, k1)[1]),
        "sigma2=k0": lambda d, k0, k1: (f(d, k0, k1)[0], k0),
        "sigma2*1.15": lambda d, k0, k1: (f(d, k0, k1)[0], 1.15 * f(d, k0, k1)[1]),
    }


def test_synchronization_time_accepts_the_derived_law_and_rejects_wrong_ones():
    for seed in SEEDS[:2]:
        res = claim("synchronization_time").run("quick", seed, budget=SYNC_FAST)
        assert res.passed, [c.to_dict() for c in res.checks]
        for name, mutant in _sync_mutants().items():
            bad = claim("synchronization_time").run("quick", seed, level=STRICT, formula=mutant, budget=SYNC_FAST)
            assert not bad.passed, (name, bad.checks[0].pvalue)


# ----------------------------------------------------------------------------- lyapunov_spectrum
SPEC_FAST = {"n_configs": 2}


def _spectrum_mutants():
    from sssn_verify.claims.lyapunov_spectrum import derived_formula
    import numpy as np
    f = derived_formula()
    i = lambda d: np.arange(1, d)  # noqa: E731
    return {
        "+2%": lambda d, k0, k1: 1.02 * f(d, k0, k1),
        "-2%": lambda d, k0, k1: 0.98 * f(d, k0, k1),
        "d-2 for d-1": lambda d, k0, k1: ((d - 1 - 2 * i(d)) * k1 - (d - 2) * k0) / 2,
        "gap 1.1 k1": lambda d, k0, k1: ((d - 1 - 2.2 * i(d) + 0.2) * k1 - (d - 1) * k0) / 2,
        "k1 coefficient d-2-2i": lambda d, k0, k1: ((d - 2 - 2 * i(d)) * k1 - (d - 1) * k0) / 2,
        "all equal lambda_1": lambda d, k0, k1: np.full(d - 1, f(d, k0, k1)[0]),
    }


def test_lyapunov_spectrum_accepts_the_derived_spectrum_and_rejects_wrong_ones():
    for seed in SEEDS[:2]:
        res = claim("lyapunov_spectrum").run("quick", seed, budget=SPEC_FAST)
        assert res.passed, [c.to_dict() for c in res.checks]
        for name, mutant in _spectrum_mutants().items():
            bad = claim("lyapunov_spectrum").run("quick", seed, level=STRICT, formula=mutant, budget=SPEC_FAST)
            assert not bad.passed, (name, bad.checks[0].pvalue)


def test_richardson_removes_the_step_bias():
    """One layer at twice the claim's noise per layer: the raw exponents at steps h and 2h are off by
    O(h), resolved; the Richardson combination on the same normals lands on the formula."""
    from sssn_verify.claims.lyapunov_spectrum import derived_formula, one_layer_spectrum
    from sssn_verify.numeric.rng import Key
    k0, k1, r = one_layer_spectrum("gaussian", "sin:3", 4, 1.0, 0.0, 1.0, 800_000, Key(3).child("test", "spectrum"),
                                   step_noise=0.02)
    lam = derived_formula()(4, k0, k1)
    for i in range(3):
        name = f"lam_{i + 1}"
        assert abs(r.mean[name] - lam[i]) < 3.29 * r.stderr[name], (name, r.mean[name], lam[i])
    raw = r.mean["lam_3@1"] - lam[2]
    assert abs(raw) > 5 * r.stderr["lam_3@1"], raw
