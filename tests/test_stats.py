"""The statistics every claim is judged by: intervals cover, tests hold their level
and have power, slopes come out right, Holm/Bonferroni control the family."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from sssn_verify import ParameterError
from sssn_verify import stats


def test_t_interval_covers_at_its_level():
    # 2000 seeded samples of size 10 from N(1, 4): the 90% t interval covers ~90% (binomial 5 sigma)
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        e = stats.mean_ci(rng.normal(1.0, 2.0, 10), 0.9)
        hits += e.ci[0] <= 1.0 <= e.ci[1]
    assert abs(hits / 2000 - 0.9) < 5 * math.sqrt(0.09 / 2000)


def test_batch_means_widens_the_interval_of_a_correlated_series():
    rng = np.random.default_rng(2)
    phi, n = 0.9, 20000
    eps = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = eps[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + eps[i]
    naive = stats.mean_ci(x)
    bm = stats.batch_means(x, 20)
    # true long-run stderr: sqrt(1/(1-phi)^2 / n)
    true_se = 1.0 / (1 - phi) / math.sqrt(n)
    assert bm.stderr > 2 * naive.stderr
    assert 0.5 * true_se < bm.stderr < 2.0 * true_se
    assert bm.df == 19


def test_agreement_test_accepts_truth_and_rejects_shift():
    rng = np.random.default_rng(3)
    sample = rng.normal(0.5, 1.0, 400)
    ok = stats.t_test("m", sample, 0.5, level=0.999, seed=3)
    assert ok.passed and ok.pvalue > 0.001 and ok.n == 400 and ok.seed == 3
    bad = stats.t_test("m", sample, 0.9, level=0.999)
    assert not bad.passed and bad.pvalue < 1e-6
    assert bad.ci[0] < 0.5 < bad.ci[1]


def test_tolerance_is_an_interval_null():
    r = stats.z_test("x", 1.05, 0.001, 1.0, n=10, abs_tol=0.06)
    assert r.passed and r.statistic == 0.0 and r.pvalue == 1.0
    r = stats.z_test("x", 1.05, 0.001, 1.0, n=10, rel_tol=0.01)
    assert not r.passed
    assert r.tolerance == pytest.approx(0.01)


def test_one_sided_tests_point_the_right_way():
    # 'greater': H0 mu <= expected; an estimate far below never rejects
    assert stats.z_test("g", -10.0, 1.0, 0.0, n=5, alternative="greater").passed
    assert not stats.z_test("g", 10.0, 1.0, 0.0, n=5, alternative="greater").passed
    assert stats.z_test("l", 10.0, 1.0, 0.0, n=5, alternative="less").passed
    assert not stats.z_test("l", -10.0, 1.0, 0.0, n=5, alternative="less").passed


def test_level_of_a_z_test_is_honest():
    # under H0 the rejection rate at level 0.95 is ~5%
    rng = np.random.default_rng(4)
    rej = sum(not stats.z_test("x", rng.normal(), 1.0, 0.0, n=1, level=0.95).passed for _ in range(4000))
    assert abs(rej / 4000 - 0.05) < 5 * math.sqrt(0.05 * 0.95 / 4000)


def test_loglog_slope_recovers_the_exponent_and_its_interval_covers():
    rng = np.random.default_rng(5)
    covered = 0
    for _ in range(200):
        L = np.array([4, 8, 16, 32, 64, 128])
        err = 3.0 * L ** -1.0 * np.exp(rng.normal(0, 0.05, L.size))
        fit = stats.loglog_slope(L, err, level=0.9)
        covered += fit.ci[0] <= -1.0 <= fit.ci[1]
    assert abs(covered / 200 - 0.9) < 5 * math.sqrt(0.09 / 200)
    assert fit.slope == pytest.approx(-1.0, abs=0.1)


def test_bootstrap_slope_is_seeded_and_reasonable():
    rng = np.random.default_rng(6)
    x = np.linspace(1, 5, 30)
    y = 2 - 0.5 * x + rng.normal(0, 0.1, x.size)
    a = stats.linear_fit(x, y, method="bootstrap", seed=7)
    b = stats.linear_fit(x, y, method="bootstrap", seed=7)
    assert a == b
    ols = stats.linear_fit(x, y)
    assert a.slope == pytest.approx(ols.slope)
    assert 0.5 < a.stderr / ols.stderr < 2.0


def test_slope_test_upper_bound_semantics():
    fit = stats.SlopeFit(-1.0, 0.0, 0.05, (-1.1, -0.9), 4, 6, 0.95, "ols")
    assert stats.slope_test("rate", fit, -0.5, direction="at_most").passed       # faster than bound
    assert not stats.slope_test("rate", fit, -2.0, direction="at_most").passed   # wrong exponent
    assert stats.slope_test("rate", fit, -1.0, direction="equal").passed
    assert not stats.slope_test("rate", fit, -0.5, direction="equal").passed


def test_holm_and_bonferroni():
    p = [0.001, 0.013, 0.02, 0.5]
    assert stats.bonferroni(p, 0.05) == [True, False, False, False]
    # Holm: 0.001 <= .05/4, 0.013 <= .05/3, 0.02 <= .05/2? yes (0.025), 0.5 > .05
    assert stats.holm(p, 0.05) == [True, True, True, False]
    adj = stats.holm_adjusted(p)
    assert adj == pytest.approx([0.004, 0.039, 0.04, 0.5])
    assert [a <= 0.05 for a in adj] == stats.holm(p, 0.05)
    assert stats.familywise_bound([0.001] * 12) == pytest.approx(0.012)
    assert stats.holm([], 0.05) == []


@given(st.lists(st.floats(0, 1), min_size=1, max_size=20), st.floats(0.001, 0.2))
def test_holm_rejects_at_least_what_bonferroni_rejects(p, alpha):
    b, h = stats.bonferroni(p, alpha), stats.holm(p, alpha)
    assert all(hi or not bi for bi, hi in zip(b, h))


def test_holm_controls_the_family_wise_error():
    rng = np.random.default_rng(8)
    false_alarms = sum(any(stats.holm(rng.uniform(size=10), 0.05)) for _ in range(4000))
    assert false_alarms / 4000 <= 0.05 + 5 * math.sqrt(0.05 * 0.95 / 4000)


def test_deterministic_check_and_serialization():
    r = stats.deterministic_check("k0", 0.5 + 1e-12, 0.5, tol=1e-9, error=1e-13)
    assert r.passed and not r.stochastic
    d = r.to_dict()
    assert d["ci"][0] < 0.5 + 1e-12 < d["ci"][1] and d["pvalue"] is None
    assert not stats.deterministic_check("k0", 0.6, 0.5, tol=1e-9).passed
    r = stats.z_test("x", 1.0, 0.1, 1.0, n=3)
    assert r.with_level(0.5).level == 0.5


@pytest.mark.parametrize("call", [
    lambda: stats.mean_ci([1.0]),
    lambda: stats.mean_ci([1.0, float("nan")]),
    lambda: stats.mean_ci([1.0, 2.0], level=1.5),
    lambda: stats.loglog_slope([1, 2, 3], [1, -1, 2]),
    lambda: stats.linear_fit([1, 2, 3], [1, 2]),
    lambda: stats.linear_fit([1, 2, 3], [1, 2, 3], method="magic"),
    lambda: stats.z_test("x", 0, 1, 0, n=1, alternative="sideways"),
    lambda: stats.batch_means([1.0, 2.0, 3.0], 5),
    lambda: stats.holm([0.1], alpha=0.0),
])
def test_bad_input_raises_parameter_error(call):
    with pytest.raises(ParameterError):
        call()


def test_path_bootstrap_slope_accounts_for_shared_paths():
    rng = np.random.default_rng(9)
    L = np.array([8, 16, 32, 64])
    common = rng.exponential(1.0, size=(300, 1))          # a path effect shared by every level
    samples = common * (2.0 / L) * rng.exponential(1.0, size=(300, L.size))
    a = stats.path_bootstrap_loglog_slope(L, samples, seed=1)
    assert a == stats.path_bootstrap_loglog_slope(L, samples, seed=1)
    assert a.slope == pytest.approx(-1.0, abs=4 * a.stderr)
    assert a.ci[0] < a.slope < a.ci[1] and a.method == "path bootstrap"
    assert stats.slope_test("rate", a, -0.5, direction="at_most").passed
    assert not stats.slope_test("rate", a, -2.0, direction="at_most").passed
    with pytest.raises(ParameterError):
        stats.path_bootstrap_loglog_slope(L, samples[:, :3])
