"""Power of the `synchronization` and `synchronization_time` claims once their step biases are removed (issue 27.5).

* synchronization: the runs' separation rate minus the layers' step bias measured on one exact layer
  (``claims.synchronization.step_bias``).  At a coarse step the raw rate is off by many standard errors and the
  corrected one is not; the claim states its power, accepts lambda_1 over seeds and rejects an error 1.5 times its
  stated power at every seed.
* synchronization_time: the mean of min(tau, T) with the control variate of Wald's identity
  (``claims.synchronization_time.wald_richardson`` on one run) agrees with the raw mean, has a far smaller standard error, and the
  claim's headline check (the mean) rejects an error 1.5 times its stated power at every seed.

The claims cache their Monte Carlo runs per (configuration, budget, seed): each seed's runs are made once and every
formula is judged on them.
"""
from sssn_verify.claims import CLAIMS
from sssn_verify.numeric.kernels import kernel
from sssn_verify.numeric.rng import as_key

SEEDS = (1, 2, 3)


# ----------------------------------------------------------------------------- synchronization
#: the first anchor (finite-width transformer, relu, d = 3) at the quick depth: one rate sub-test (and its sign)
SYNC_ONE = {"n_configs": 1, "paths": 2000, "bias_paths": 2000}


def test_one_layer_measures_the_runs_step_bias():
    # the Gaussian transformer, relu d = 5, sb = 1 at a coarse step (noise per layer 0.075): the raw rate is biased
    # far beyond its standard error; minus the one-layer measured bias it agrees with lambda_1 (no allowance)
    from sssn_verify.claims.synchronization import corrected_rate, derived_formula
    kf = kernel("relu", 1.0, 1.0, 1.0)
    lam = derived_formula()(5, kf.k0, kf.k1)
    budget = {"horizon": 1.0, "depth": 20, "paths": 20_000, "bias_paths": 20_000}
    r = corrected_rate("gaussian", "relu", 5, 1.0, 1.0, 1.0, budget, as_key(0, "test"), 0)
    assert abs(r["raw"] - lam) > 6 * r["raw_stderr"], r
    assert abs(r["estimate"] - lam) < 3.9 * r["stderr"], r
    assert abs(r["step_bias"]) > 10 * r["step_bias_stderr"], r


def _headline(name, budget):
    """The claim, its derived formula, and the power summary of its run at seed 0 (which must pass on its
    headline check)."""
    claim = CLAIMS[name]
    res = claim.run("quick", 0, budget=budget)
    p = res.power_summary()
    assert res.passed and p["basis"] == "headline check", p
    return claim, claim.formula(), p, p["min_detectable"]


def test_synchronization_rejects_an_error_just_above_its_stated_power():
    claim, f, p, m = _headline("synchronization", SYNC_ONE)
    assert 0.0 < m < 0.5, p
    for seed in SEEDS:
        assert claim.run("quick", seed, budget=SYNC_ONE).passed, seed
        for sign in (+1, -1):
            wrong = (lambda s: lambda d, k0, k1: (1 + s * 1.5 * m) * f(d, k0, k1))(sign)
            assert not claim.run("quick", seed, budget=SYNC_ONE, formula=wrong).passed, (seed, sign, m)


# ----------------------------------------------------------------------------- synchronization_time
#: relu d = 9 (lambda_1 < 0: the mean check, and the law check's KS and standard deviation)
TIME_FAST = {"n_configs": 1, "paths": 2000, "layer_paths": 50_000}


def test_walds_control_variate_keeps_the_mean_and_cuts_its_error():
    from sssn_verify.claims.synchronization_time import CONFIGS, _passages, layer_drifts, wald_richardson
    act, d, sw, sb, sa, eps0, a, T = CONFIGS[0]
    fp = _passages(act, d, sw, sb, sa, eps0, a, T, 0.005, 3000, as_key(0, "test"))
    drift = layer_drifts(act, d, sw, sb, sa, eps0, 0.005, 1, 200_000, as_key(0, "test-layer"))
    r = wald_richardson([fp], T, drift, weights=(1.0,))
    assert abs(r["estimate"] - r["raw"]) < 4 * r["raw_stderr"], r         # the same mean
    assert r["stderr"] < r["raw_stderr"] / 3, r                           # measured: 1/8


def _time_mutant(f, factor):
    return lambda d, k0, k1: (factor * f(d, k0, k1)[0], f(d, k0, k1)[1])


def test_synchronization_time_headline_is_the_mean_and_rejects_an_error_just_above_it():
    claim, f, p, m = _headline("synchronization_time", TIME_FAST)
    assert "mean of" in p["check"] and 0.0 < m < 0.2, p
    for seed in SEEDS[:2]:
        assert claim.run("quick", seed, budget=TIME_FAST).passed, seed
        # the mean of tau is a / |lambda_1| (censoring negligible at relu d = 9): lambda_1 x 1/(1 -+ e) moves it by
        # -+ e; the mean check alone must reject
        for sign in (+1, -1):
            wrong = _time_mutant(f, 1.0 / (1.0 - sign * 1.5 * m))
            bad = claim.run("quick", seed, budget=TIME_FAST, formula=wrong)
            assert not bad.checks[0].passed and "mean of" in bad.checks[0].name, (seed, sign, m)
