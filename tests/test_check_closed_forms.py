"""`check` takes the Lyapunov spectrum lambda_i(d, k0, k1, i) and the log-distance variance rate
sigma^2(k0, k1) (issue 27, deliverable 3): right formulas in other algebraic forms are consistent,
slightly wrong ones are rejected, with every parameter (the activation and the index i included)
searched.  The runs are made once (module-scoped fixture) and shared by the assertions."""
import time

import pytest

from sssn_verify.check import DESIGN_POINTS, check_candidate
from sssn_verify.errors import CandidateError

SPECTRUM = "((d-1-2*i)*k1-(d-1)*k0)/2"
CASES = {
    # claim, candidate, verdict
    "spectrum, another form": ("lyapunov_spectrum", "(d*k1 - k1 - 2*i*k1 - d*k0 + k0)/2", "consistent"),
    "spectrum + 1 %": ("lyapunov_spectrum", f"1.01*{SPECTRUM}", "rejected"),
    "spectrum + 0.05 k1 for i >= 3": ("lyapunov_spectrum", f"{SPECTRUM} + 0.05*k1*Heaviside(i-2.5)", "rejected"),
    "sigma^2, another form": ("log_distance_variance", "(k0 + k1)*(1 + 0*d)", "consistent"),
    # 5 %: the evidence (20k paths x 50 blocks, Richardson L, 2L) detects about 1.5 % (stated per verdict)
    "sigma^2 + 5 %": ("log_distance_variance", "1.05*(k0 + k1)", "rejected"),
}
# sigma^2's evidence is an engine run per point (the slowest here): ReLU pinned keeps the test near 30 s,
# the activation axis is exercised by the spectrum's cases (and by `check` itself by default)
PINNED = {"log_distance_variance": {"activation": "relu"}}


@pytest.fixture(scope="module")
def outcomes():
    out = {}
    for name, (claim, cand, _) in CASES.items():
        t0 = time.perf_counter()
        out[name] = (check_candidate(claim, cand, seed=0, **PINNED.get(claim, {})), time.perf_counter() - t0)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_spectrum_and_variance_candidates(outcomes, name):
    out, seconds = outcomes[name]
    claim, _, verdict = CASES[name]
    assert out.verdict == verdict, (name, out.parameters, out.estimate, out.candidate_value)
    if name == "spectrum + 0.05 k1 for i >= 3":
        assert out.counterexample["i"] >= 3 and out.counterexample["d"] >= 4
    if verdict == "consistent":
        g = out.design
        assert g["tested"] >= DESIGN_POINTS
        assert len(g["domain"]["activation"]) >= (1 if claim in PINNED else 3)
        assert g["min_detectable_weakest"] is not None and g["min_detectable_weakest"] < 0.1
        assert out.min_detectable is not None and out.min_detectable < 0.1
    print(f"{name}: {out.verdict} in {seconds:.1f} s, power {out.min_detectable}")


def test_index_outside_one_to_d_minus_one_is_bad_input():
    with pytest.raises(CandidateError):
        check_candidate("lyapunov_spectrum", SPECTRUM, activation="relu", d=4, index=4, sigma_w=1.0, sigma_b=0.5,
                        sigma_a=1.0)


# ---------------------------------------------------------------- synchronization_time (mean, variance of tau)
# lambda_1 = ((d-3) k1 - (d-1) k0)/2 < 0, sigma^2 = k0 + k1, a = log(eps0/eps): E tau = a/|lambda_1|,
# Var tau = a sigma^2/|lambda_1|^3 (inverse Gaussian).  The evidence simulates first passages (Richardson over
# two steps; the mean with Wald's control variate, the claim's estimator), a few seconds per point: ReLU at d = 9,
# sigma_w = 0.5, sigma_b = 1 (the fastest passages of the domain) keeps these near 30 s; the searched cases still
# search sigma_a, eps0 and a.
MEAN = "log(eps0/eps)/(((d-1)*k0-(d-3)*k1)/2)"
VAR = "log(eps0/eps)*(k0+k1)/(((d-1)*k0-(d-3)*k1)/2)**3"
SEARCHED = {"activation": "relu", "d": 9, "sigma_w": 0.5, "sigma_b": 1.0}
POINT = {"activation": "relu", "d": 9, "sigma_w": 1.0, "sigma_b": 1.0, "sigma_a": 1.0, "eps0": 1e-4,
         "eps": 1e-4 * 2.718281828459045 ** -2}
SYNC_CASES = {
    # quantity, candidate, where, verdict
    "mean, another form, searched": ("mean", "2*(log(eps0)-log(eps))/((d-1)*k0-(d-3)*k1)", SEARCHED, "consistent"),
    # the mean's evidence resolves about 1 % there (0.4 % of it the allowance for Richardson's remainder)
    "mean x 1.02, searched": ("mean", f"1.02*{MEAN}", SEARCHED, "rejected"),
    "mean with k0, k1 swapped": ("mean", "log(eps0/eps)/abs(((d-3)*k0-(d-1)*k1)/2)", POINT, "rejected"),
    "variance, another form": ("variance", "8*log(eps0/eps)*(k0+k1)/((d-1)*k0-(d-3)*k1)**3", POINT, "consistent"),
    "variance without sigma^2": ("variance", "log(eps0/eps)/(((d-1)*k0-(d-3)*k1)/2)**3", POINT, "rejected"),
    "variance x 2": ("variance", f"2*{VAR}", POINT, "rejected"),
}


@pytest.fixture(scope="module")
def sync_outcomes():
    out = {}
    for name, (quantity, cand, where, _) in SYNC_CASES.items():
        t0 = time.perf_counter()
        out[name] = (check_candidate("synchronization_time", cand, quantity=quantity, seed=0, **where),
                     time.perf_counter() - t0)
    return out


@pytest.mark.parametrize("name", list(SYNC_CASES))
def test_synchronization_time_candidates(sync_outcomes, name):
    out, seconds = sync_outcomes[name]
    quantity, _, where, verdict = SYNC_CASES[name]
    assert out.verdict == verdict, (name, out.parameters, out.estimate, out.stderr, out.candidate_value)
    assert out.quantity == quantity and out.parameters["eps"] < out.parameters["eps0"]
    assert out.details["censored"] == 0          # every simulated pair synchronized: an uncensored moment
    if where is SEARCHED and verdict == "consistent":
        assert out.design["tested"] >= DESIGN_POINTS
        # the design's 4k + 2k paths and 200k layer paths: about 2 % in the mean (the raw mean's: 20 %)
        assert out.design["min_detectable_weakest"] < 0.03
    if quantity == "mean":
        # stated with every verdict (seed 0): 1.4 % and 0.5 % where the searched and the given point decided (16k +
        # 8k paths, 1M layer paths, or the design's budget far from the candidate; the raw mean's: 4-5 %), 2.0 % at
        # the design's worst agreement
        assert out.min_detectable is not None and out.min_detectable < (0.03 if verdict == "consistent" else 0.015)
    print(f"{name}: {out.verdict} in {seconds:.1f} s, power {out.min_detectable}")


def test_synchronization_time_quantity_and_distances_are_checked():
    with pytest.raises(CandidateError):
        check_candidate("synchronization_time", MEAN, quantity="median", **POINT)
    with pytest.raises(CandidateError):
        check_candidate("synchronization_time", MEAN, activation="relu", eps=1e-5)          # eps without eps0
    with pytest.raises(CandidateError):
        check_candidate("synchronization_time", MEAN, activation="relu", eps0=1e-4, eps=1e-3)  # eps >= eps0
    with pytest.raises(CandidateError):
        check_candidate("lyapunov", "-k0", heads=2)           # a claim without heads


# ---------------------------------------------------------------- attention_bound (C_att, an upper bound)
C_ATT = "2*(sum_V + beta*sum_VKQ)"
BOUND_CASES = {
    # candidate, options, verdict, sharp
    "C_att, one head's form": ("2*norm_V*(1 + beta*norm_KtQ)", {"heads": 1}, "consistent", True),
    "C_att, several heads": (C_ATT, {}, "consistent", True),
    "C_att x 1.01 (a valid bound, not sharp)": (f"1.01*{C_ATT}", {}, "consistent", False),
    "C_att x 0.99": (f"0.99*{C_ATT}", {}, "rejected", None),
    "C_att without its factor 2": ("sum_V + beta*sum_VKQ", {}, "rejected", None),
    "one head's form for several heads": ("2*norm_V*(1 + beta*norm_KtQ)", {}, "rejected", None),
    "the beta term halved": ("2*(sum_V + beta*sum_VKQ/2)", {}, "rejected", None),
}


@pytest.mark.parametrize("name", list(BOUND_CASES))
def test_attention_bound_candidates(name):
    cand, options, verdict, sharp = BOUND_CASES[name]
    out = check_candidate("attention_bound", cand, seed=0, **options)
    assert out.verdict == verdict, (name, out.parameters, out.estimate, out.candidate_value)
    assert out.sharp is sharp
    if verdict == "rejected":              # a rate found above the candidate, exactly (rounding only)
        assert out.estimate > out.candidate_value * (1 + 1e-9)
    else:
        g = out.design
        assert g["tested"] >= DESIGN_POINTS and g["domain"]["H"] == ([1, 2] if not options else 1)
        assert "activation" not in out.parameters
        s = out.details["sharpness"]
        assert len(s["points"]) >= 2 and all(p["parameters"]["beta"] == 0.0 for p in s["points"])
        if not sharp:
            assert s["factor"] == pytest.approx(1.01, rel=1e-5)
