"""The rqf field's log-distance variance and Lyapunov spectrum (symbolic.general_field) against independent numbers.

sigma^2 against numpy: the radial part of the linearised layer noise, d/de P_x Q x along a unit v orthogonal to x,
is v^T Q v - x^T Q x; its variance per unit time is sigma^2 (Q = S (B + B^T)/2, B standard Gaussian).  The spectrum
against the rqf layer's tangent flow with QR (the claim's check (c)), which rejects a 5 % error."""
import numpy as np
import pytest

from sssn_verify.bridge import function
from sssn_verify.numeric.rng import Key


@pytest.mark.parametrize("d, S", [(2, 1.0), (3, 0.7), (5, 1.3), (8, 0.4)])
def test_log_distance_variance_is_that_of_the_linearised_radial_noise(d, S):
    rng = Key(0).child("test", "rqf-log-distance", d).generator()
    n = 200_000
    B = rng.standard_normal((n, d, d))
    Q = S * (B + np.swapaxes(B, 1, 2)) / 2
    x = rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    v = rng.standard_normal((n, d))
    v -= np.sum(v * x, axis=1, keepdims=True) * x
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    # the radial component of (P_x Q v - (x^T Q v + v^T Q x) x - (x^T Q x) v) along v
    r = np.einsum("ni,nij,nj->n", v, Q, v) - np.einsum("ni,nij,nj->n", x, Q, x)
    est = float(np.var(r, ddof=1))
    se = np.sqrt((float(np.mean((r - r.mean()) ** 4)) - est ** 2) / n)      # sd of a sample variance
    want = function("general_field.rqf_log_distance_variance", "math")(S)
    assert abs(est - want) < 4.5 * se, (est, se, want)
    # and the test has the power to see a 5 % error in sigma^2 (or the MLP-like value S^2)
    assert abs(est - 1.05 * want) > 4.5 * se and abs(est - S ** 2) > 4.5 * se


def test_the_drift_of_the_log_distance_is_lambda_1_and_both_are_free_of_d():
    from sssn_verify.symbolic.general_field import rqf_lambda1, rqf_log_distance, sigma_q
    drift, var = rqf_log_distance()
    assert drift == rqf_lambda1()
    assert var.free_symbols == {sigma_q} and drift.free_symbols == {sigma_q}


@pytest.mark.parametrize("seed", [0, 1])
def test_the_spectrum_check_accepts_the_derived_spectrum_and_rejects_a_five_percent_error(seed):
    from sssn_verify.claims.rqf import _spectrum, derived_formula
    right = derived_formula()
    wrong = right.__class__(*[getattr(right, f) for f in ("one_point_linear", "one_point_quadratic", "log_sin_rate",
                                                          "lambda1", "y_drift", "y_diffusion")],
                            spectrum=lambda d, i, S: 1.05 * right.spectrum(d, i, S))
    key = Key(seed).child("test", "rqf-spectrum")
    good = _spectrum(right, 4, 1.0, {"paths": 60_000}, key, 0.999, "t")
    bad = _spectrum(wrong, 4, 1.0, {"paths": 60_000}, key, 0.999, "t")
    assert [c.expected for c in good] == pytest.approx([-1.0, -2.0, -3.0])
    assert all(c.passed for c in good) and not all(c.passed for c in bad)


def test_regime_gives_the_rqf_spectrum_and_log_distance_variance():
    """regime --field rqf shows what the numerics above confirm (lambda_i = -i S^2, sigma^2 = 2 S^2), no longer
    'undefined'."""
    import sssn_verify as sv
    r = sv.regime(sv.ModelParams(field="rqf", sigma_q=0.7, d=5, V=0.0))
    assert r.lyapunov_spectrum == pytest.approx([-0.49, -0.98, -1.47, -1.96], rel=1e-12)
    assert r.log_distance_variance == pytest.approx(0.98, rel=1e-12)
    assert "Lyapunov spectrum" in r.text() and "sigma^2 = 0.98" in r.text()


def test_the_phase_diagram_of_rqf_takes_sigma_q_as_its_y_axis_by_default():
    import sssn_verify as sv
    assert sv.phase_diagram_figure(field="rqf", sigma_q=1.0).axes[0].get_ylabel() == "sigma_q"
    assert sv.phase_diagram_figure(activation="relu").axes[0].get_ylabel() == "sigma_b"


def test_the_rqf_phase_diagram_title_has_no_empty_parentheses():
    import sssn_verify as sv
    title = sv.phase_diagram_figure(field="rqf", sigma_q=1.0).axes[0].get_title()
    assert "()" not in title and title.endswith("lambda_bar_proj")
    assert "(sigma_b=" in sv.phase_diagram_figure(activation="relu", y="sigma_w").axes[0].get_title()
