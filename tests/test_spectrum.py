"""The Lyapunov spectrum, the log-distance variance and the synchronization-time law (docs/mathematics.md, section 8).

The sympy results are compared with independent numbers: the kernel constants by quadrature
(numeric.kernels), numpy's inverse-Gaussian sampler (``Generator.wald``), numerical Laplace
transforms and limits of the image-method CDF.  Monte Carlo of the flows lives in the claims.
"""
import json
import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate, stats

from sssn_verify.cli import main
from sssn_verify.errors import ParameterError
from sssn_verify.numeric.kernels import kernel
from sssn_verify.params import ModelParams
from sssn_verify.regime import regime
from sssn_verify.symbolic import derivation_names
from sssn_verify.symbolic import spectrum as S
from sssn_verify.symbolic.lyapunov import lambda1_tangent, sigma_a, sigma_b, sigma_w
from sssn_verify.symbolic.two_point import d, k0, k1
from sssn_verify.sync_time import (SyncTimeLaw, censored_ks, FirstPassage, log_distance_variance,
                                   lyapunov_spectrum, sync_time_law)


def test_derivations_registered():
    names = derivation_names()
    for n in ("lyapunov_spectrum", "log_distance_variance", "synchronization_time"):
        assert n in names


def test_spectrum_top_exponent_is_the_lyapunov_derivation():
    lam = S.spectrum()
    assert sp.simplify(lam.subs(S.i_idx, 1) - lambda1_tangent()) == 0
    # descending with equal gaps k1 >= 0; the k-volume rate is the partial sum
    assert sp.simplify(lam.subs(S.i_idx, S.i_idx) - lam.subs(S.i_idx, S.i_idx + 1) - k1) == 0
    for n in range(2, 7):
        for kk in range(1, n):
            partial = sum(lam.subs({S.i_idx: i, d: n}) for i in range(1, kk + 1))
            assert sp.simplify(partial - S.log_volume_moments(n, kk)[0]) == 0


def test_spectrum_wrong_variants_differ_from_explicit_volumes():
    """The explicit d = 5 volumes reject d-2 for d-1 and a wrong k1 coefficient."""
    lam = S.spectrum()
    for wrong in (lam.subs(d, d - 1) + k0 / 2, lam + k1 / 2, lam * sp.Rational(102, 100)):
        rates = [sum(wrong.subs({S.i_idx: i, d: 5}) for i in range(1, kk + 1)) for kk in (1, 2, 3)]
        assert any(sp.simplify(r - S.log_volume_moments(5, kk)[0]) != 0 for kk, r in zip((1, 2, 3), rates))


@pytest.mark.parametrize("dim,sw,sb,sa", [(3, 1.0, 0.0, 1.0), (8, 0.7, 1.3, 0.5), (5, 2.0, 0.2, 1.5)])
def test_relu_spectrum_against_quadrature_constants(dim, sw, sb, sa):
    kf = kernel("relu", sw, sb, sa)
    relu = S.spectrum_relu()
    for i in range(1, dim):
        val = float(relu.subs({d: dim, S.i_idx: i, sigma_w: sw, sigma_b: sb, sigma_a: sa}))
        num = ((dim - 1 - 2 * i) * kf.k1 - (dim - 1) * kf.k0) / 2     # quadrature k0, k1
        assert val == pytest.approx(num, rel=1e-9, abs=1e-12)
        assert val < 0


def test_variance_rate_two_routes_and_value():
    dr, df = S.log_distance_coefficients()
    assert sp.simplify(dr - lambda1_tangent()) == 0
    assert sp.simplify(df - S.variance_rate_tangent()) == 0
    kf = kernel("tanh", 1.2, 0.3, 1.0)
    assert log_distance_variance(kf.k0, kf.k1) == pytest.approx(kf.k0 + kf.k1, rel=1e-12)


def test_passage_law_routes_agree_numerically():
    """Laplace-transform moments vs the image-method CDF (numerical integration)."""
    m, s2, a = 0.7, 1.3, 2.1
    args = {S.drift_m: m, S.sigma2: s2, S.a_lvl: a}
    _, cdf, dens = S.image_density()
    f = sp.lambdify(S.t, dens.subs(args), "scipy")
    F = sp.lambdify(S.t, cdf.subs(args), "scipy")
    mom = {k: float(v.subs(args)) for k, v in S.passage_moments().items() if k not in ("p_reach_away",)}
    total = integrate.quad(f, 0, np.inf, limit=200)[0]
    mean = integrate.quad(lambda x: x * f(x), 0, np.inf, limit=200)[0]
    second = integrate.quad(lambda x: x * x * f(x), 0, np.inf, limit=200)[0]
    assert total == pytest.approx(1.0, abs=1e-8)
    assert mean == pytest.approx(mom["mean"], rel=1e-7)
    assert second - mean ** 2 == pytest.approx(mom["variance"], rel=1e-6)
    phi = sp.lambdify(S.s_lap, S.laplace_transform().subs(args), "math")
    for s in (0.1, 1.0, 3.0):
        lt = integrate.quad(lambda x: math.exp(-s * x) * f(x), 0, np.inf, limit=200)[0]
        assert lt == pytest.approx(phi(s), rel=1e-7)
    assert float(F(2.0)) == pytest.approx(integrate.quad(f, 0, 2.0)[0], rel=1e-8)
    # lambda_1 > 0 (m < 0): defective, tends to p_reach
    argsn = {S.drift_m: -m, S.sigma2: s2, S.a_lvl: a}
    Fn = sp.lambdify(S.t, cdf.subs(argsn), "scipy")
    pr = float(S.passage_moments()["p_reach_away"].subs(argsn))
    assert float(Fn(1e7)) == pytest.approx(pr, rel=1e-6)
    assert pr == pytest.approx(math.exp(-2 * a * m / s2), rel=1e-12)


def test_law_against_numpy_wald_sampler():
    """scipy.stats.invgauss with the derived (mu, scale) against numpy's independent sampler."""
    law = SyncTimeLaw(lambda1=-0.8, sigma2=1.7, eps0=1e-3, eps=1e-5)
    a = math.log(100)
    x = np.random.default_rng(5).wald(a / 0.8, a * a / 1.7, size=20000)
    assert stats.kstest(x, law.cdf).pvalue > 1e-3
    assert law.mean == pytest.approx(a / 0.8, rel=1e-12)
    assert law.std ** 2 == pytest.approx(a * 1.7 / 0.8 ** 3, rel=1e-12)
    wrong = SyncTimeLaw(lambda1=-0.8 * 1.05, sigma2=1.7, eps0=1e-3, eps=1e-5)
    assert stats.kstest(x, wrong.cdf).pvalue < 1e-3
    assert law.time_for_alpha(0.1) == pytest.approx(np.quantile(x, 0.9), rel=0.03)
    assert law.depth(0.1, 0.01) == math.ceil(law.time_for_alpha(0.1) / 0.01)


def test_positive_exponent_law():
    law = SyncTimeLaw(lambda1=0.5, sigma2=2.0, eps0=1e-4, eps=1e-5)
    assert law.p_reach == pytest.approx(10 ** (-0.5), rel=1e-12)
    assert math.isinf(law.mean) and math.isinf(law.time_for_alpha(0.1))
    q = law.ppf(0.1)
    assert float(law.cdf(q)) == pytest.approx(0.1, abs=1e-10)
    assert law.to_dict()["p_reach"] == pytest.approx(law.p_reach)
    zero = SyncTimeLaw(lambda1=0.0, sigma2=2.0, eps0=1e-4, eps=1e-5)
    assert zero.p_reach == 1.0 and math.isinf(zero.mean)
    assert float(zero.cdf(zero.ppf(0.5))) == pytest.approx(0.5, abs=1e-9)


def test_censored_ks_detects_shift():
    law = SyncTimeLaw(lambda1=-1.0, sigma2=1.0, eps0=1e-3, eps=1e-5)
    x = law.inverse_gaussian.rvs(size=3000, random_state=np.random.default_rng(1))
    T = law.ppf(0.95)

    def fp(times):
        tt = np.where(times < T, times, np.inf)
        return FirstPassage("gaussian", None, 1e-3, 1e-5, 0.01, T, times.size, 0, tt, 1.0)
    assert censored_ks(fp(x), law)[1] > 1e-3
    assert censored_ks(fp(x * 1.1), law)[1] < 1e-3


def test_regime_reports_spectrum():
    for act, dim, sb in (("relu", 6, 1.0), ("sin:3", 4, 0.0), ("tanh", 3, 0.3)):
        p = ModelParams(d=dim, activation=act, sigma_w=1.0, sigma_b=sb, sigma_a=1.0)
        r = regime(p)
        spec = np.array(r.lyapunov_spectrum)
        assert spec.shape == (dim - 1,) and np.all(np.diff(spec) <= 0)
        assert spec[0] == pytest.approx(r.lambda1, rel=1e-12)
        assert r.log_distance_variance == pytest.approx(r.k0 + r.k1, rel=1e-12)
        js = r.to_dict()
        assert len(js["lyapunov_spectrum"]) == dim - 1
    assert regime(ModelParams(d=4, activation="sin:3", sigma_w=1.0, sigma_b=0.0, sigma_a=1.0)).lambda1 > 0
    assert list(lyapunov_spectrum(4, 1.0, math.inf)) == [math.inf, -math.inf, -math.inf]


def test_sync_time_cli_json(capsys, tmp_path):
    out = tmp_path / "cdf.png"
    assert main(["sync-time", "--d", "5", "--sigma-b", "1", "--eps0", "1e-3", "--eps", "1e-6",
                 "--json", "--delta", "0.01", "--plot", str(out)]) == 0
    js = json.loads(capsys.readouterr().out)
    for key in ("lambda1", "log_distance_variance", "mean", "std", "quantiles", "p_reach", "time_for_alpha"):
        assert key in js
    assert set(js["quantiles"]) == {"0.1", "0.5", "0.9"} and js["p_reach"] == 1.0
    law = sync_time_law(ModelParams(d=5, activation="relu", sigma_b=1.0), 1e-3, 1e-6)
    assert js["mean"] == pytest.approx(law.mean) and out.stat().st_size > 1000
    assert js["depth_for_alpha"] == math.ceil(js["time_for_alpha"] / 0.01)


@pytest.mark.parametrize("argv", [
    ["--eps0", "1e-3", "--eps", "1e-2"],
    ["--eps0", "nan", "--eps", "1e-4"],
    ["--eps0", "1e-3", "--eps", "1e-4", "--alpha", "1.5"],
    ["--eps0", "1e-3", "--eps", "1e-4", "--d", "1"],
    ["--eps0", "1e-3", "--eps", "1e-4", "--activation", "heaviside"],
    ["--eps0", "1e-3", "--eps", "1e-4", "--sigma-a", "-1"],
    ["--eps0", "1e-3", "--eps", "1e-4", "--plot", "/nonexistent_dir/x.png"],
    ["--eps0", "1e-3", "--eps", "1e-4", "--activation", "__import__('os')"],
])
def test_sync_time_cli_bad_input(argv, capsys):
    assert main(["sync-time", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error" in err


def test_api_bad_input():
    p = ModelParams(d=4, activation="relu")
    with pytest.raises(ParameterError):
        sync_time_law(p, 1e-3, 2e-3)
    with pytest.raises(ParameterError):
        SyncTimeLaw(-1.0, 1.0, 1e-3, 1e-4).time_for_alpha(0.0)


def test_sync_time_cli_simulate(capsys):
    assert main(["sync-time", "--d", "9", "--sigma-w", "0.5", "--sigma-b", "1", "--eps0", "1e-4", "--eps", "5e-6",
                 "--simulate", "--paths", "400", "--step", "0.01", "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)["simulation"]
    assert sim["n_paths"] == 400 and sim["reached"] > 0.98 and sim["ks_pvalue"] > 1e-3


def test_first_passage_is_deterministic():
    from sssn_verify.sync_time import first_passage_times
    p = ModelParams(d=4, activation="relu", sigma_w=1.0, sigma_b=1.0)
    a = first_passage_times(p, 1e-4, 1e-5, step=0.01, max_time=3.0, n_paths=50, seed=4)
    b = first_passage_times(p, 1e-4, 1e-5, step=0.01, max_time=3.0, n_paths=50, seed=4)
    law = sync_time_law(p, 1e-4, 1e-5)
    assert np.array_equal(a.times, b.times) and abs(a.reached.mean() - float(law.cdf(3.0))) < 0.2
    with pytest.raises(ParameterError):
        first_passage_times(p, 1e-4, 1e-3)
