"""The campaign's pooled tests (verify._pool_points) on sub-tests as claims record them (claims._util.combine):
a one-sided sign sub-test stays one-sided when pooled, and a sub-test whose expected value differs between seeds
(spde_weak_form draws its test function per seed) is pooled against the mean of its expected values.  Both were
pooled wrongly before (20 seeds of synchronization and spde_weak_form, every seed passing, were reported as
pooled failures: p = 0)."""
import numpy as np

from sssn_verify.claims._util import combine
from sssn_verify.numeric.rng import Key
from sssn_verify.stats import agreement_test
from sssn_verify.verify import _pool_points

LEVEL = 0.999
S = 20


def _points(seed_values, alternative="two-sided"):
    """details['points'] of a combined check per seed: one sub-test (estimate, stderr, expected) per seed."""
    out = []
    for est, se, exp in seed_values:
        c = combine("check", [agreement_test("point", est, se, exp, level=LEVEL, n=1000, alternative=alternative)],
                    LEVEL)
        out.append(c.details["points"])
    return out


def test_a_one_sided_sign_point_is_pooled_one_sided():
    rng = Key(0).child("test", "pool-sign").generator()
    vals = [(-0.5 + 0.01 * rng.standard_normal(), 0.01, 0.0) for _ in range(S)]
    (pooled,) = _pool_points(_points(vals, alternative="greater"), "two-sided", LEVEL)
    assert pooled.passed and pooled.alternative == "greater"
    wrong = [(+0.5 + 0.01 * rng.standard_normal(), 0.01, 0.0) for _ in range(S)]     # the other sign
    (bad,) = _pool_points(_points(wrong, alternative="greater"), "two-sided", LEVEL)
    assert not bad.passed


def test_an_expected_value_drawn_per_seed_is_pooled_against_its_mean():
    rng = Key(0).child("test", "pool-expected").generator()
    exp = rng.uniform(-1.0, 1.0, S)
    se = 0.01
    right = [(e + se * rng.standard_normal(), se, e) for e in exp]
    (pooled,) = _pool_points(_points(right), "two-sided", LEVEL)
    assert pooled.passed and abs(pooled.expected - exp.mean()) < 1e-15
    # an error of 0.02 in every seed: each seed alone misses it (2 se), the pooled test (se / sqrt(20)) does not
    off = [(e + 0.02 + se * rng.standard_normal(), se, e) for e in exp]
    assert sum(not agreement_test("p", *v, level=LEVEL, n=1000).passed for v in off) <= 2
    (bad,) = _pool_points(_points(off), "two-sided", LEVEL)
    assert not bad.passed


def test_points_that_are_not_the_same_sub_test_at_every_seed_are_not_pooled():
    a = _points([(0.1, 0.01, 0.1)])[0]
    b = [dict(a[0], name="another configuration")]
    assert _pool_points([a, b], "two-sided", LEVEL) is None
    assert _pool_points([a, a + a], "two-sided", LEVEL) is None
    assert np.isfinite(_pool_points([a, a], "two-sided", LEVEL)[0].pvalue)
