"""`sssn-verify check`: derived formulas are consistent, wrong ones (sign, d-2 for d-1, a missing
factor 2, k0 <-> k1) are rejected, parameters are chosen where they differ, bad input exits 2."""
import json

import pytest
from hypothesis import given, settings

from sssn_verify.check import parse_candidate
from sssn_verify.cli import main
from sssn_verify.errors import CandidateError
from sssn_verify.strategies import kernel_sigmas, overlaps

RELU_K = ("sa^2*(sw^2+sb^2)/(2*pi)*(sqrt(1-((sw^2*rho+sb^2)/(sw^2+sb^2))^2)"
          " + (pi-acos((sw^2*rho+sb^2)/(sw^2+sb^2)))*(sw^2*rho+sb^2)/(sw^2+sb^2))")


_SHARED: dict = {}


def run_json(capsys, *argv, shared=False):
    """`check ARGV --json`, parsed; `shared`: one run per module and process for an argv that several tests
    read (the check is deterministic in its seed: the second test reads the first one's output)."""
    if shared and argv in _SHARED:
        return json.loads(_SHARED[argv])
    rc = main(["check", *argv, "--json"])
    text = capsys.readouterr().out
    out = json.loads(text)
    assert rc == (0 if out["verdict"] == "consistent" else 1)
    for key in ("claim", "verdict", "estimate", "stderr", "candidate_value", "parameters"):
        assert key in out
    if shared:
        _SHARED[argv] = text
    return out


def test_kernel_relu_closed_form_is_consistent(capsys):
    out = run_json(capsys, "kernel", "--candidate", RELU_K, "--activation", "relu")
    assert out["verdict"] == "consistent"
    assert out["estimate"] == pytest.approx(out["candidate_value"], abs=1e-8)


@pytest.mark.parametrize("wrong", [
    RELU_K.replace("(pi-acos", "(pi+acos"),                   # sign
    "2*" + RELU_K,                                             # factor 2
    RELU_K.replace("sw^2+sb^2", "sw^2"),                       # bias dropped in the variance
    "sa^2*(sw^2*rho+sb^2)/2",                                  # a linearization
])
def test_kernel_wrong_candidates_are_rejected(capsys, wrong):
    out = run_json(capsys, "kernel", "--candidate", wrong, "--activation", "relu")
    assert out["verdict"] == "rejected"


def test_kernel_user_parameters_are_used(capsys):
    out = run_json(capsys, "kernel", "--candidate", RELU_K, "--activation", "relu", "--sigma-w", "0.7", "--sigma-b", "0.2",
                   "--sigma-a", "1.1", "--rho", "0.3")
    assert out["parameters"]["rho"] == 0.3 and out["parameters"]["sigma_w"] == 0.7
    assert out["chosen"] == "user" and out["verdict"] == "consistent"


def test_ito_drift_derived_is_consistent_and_wrong_ones_rejected(capsys):
    assert run_json(capsys, "ito_drift", "--candidate", "-(d-1)*k0/2")["verdict"] == "consistent"
    for wrong in ("-(d-2)*k0/2", "-(d-1)*k0", "(d-1)*k0/2", "-(d-1)*k0/2 - k0^2/4"):
        out = run_json(capsys, "ito_drift", "--candidate", wrong, shared=True)
        assert out["verdict"] == "rejected", (wrong, out)
        assert abs(out["candidate_value"] - out["estimate"]) > 3 * out["stderr"]


def test_parameters_are_searched_and_the_failure_shrunk(capsys):
    # d-2 for d-1 differs by k0/2 everywhere: the search rejects it and shrinks to the simplest point
    out = run_json(capsys, "ito_drift", "--candidate", "-(d-2)*k0/2", shared=True)   # the run of the test above
    assert out["verdict"] == "rejected" and out["chosen"] == "search (shrunk counterexample)"
    c = out["counterexample"]
    assert c == {k: v for k, v in out["parameters"].items() if k not in ("k0", "k1")}
    assert c["d"] == 2 and c["sigma_b"] == 0.0                      # shrunk: smallest d, no bias
    s = out["search"]
    assert s["first_failure"] is not None and s["examples"] > 10 and s["familywise"] == pytest.approx(1e-3)
    assert len(s["screens"]) <= 5 and s["confirmations"][-1]["rejected"]   # confirmed with a fresh seed
    assert s["confirmations"][-1]["key"] != s["screens"][0]["key"]


def test_pinned_axes_and_reproducible_from_seed(capsys):
    a = run_json(capsys, "lambda_bar", "--candidate", "((d-1)*k1-(d-3)*k0)*1.02", "--d", "5", "--seed", "3",
                 "--explore", "20")
    b = run_json(capsys, "lambda_bar", "--candidate", "((d-1)*k1-(d-3)*k0)*1.02", "--d", "5", "--seed", "3",
                 "--explore", "20")
    assert a["verdict"] == "rejected" and a["counterexample"]["d"] == 5 and a["search"]["ranges"]["d"] == 5
    assert a["search"]["max_examples"] == 20
    assert (a["counterexample"], a["search"]["screens"]) == (b["counterexample"], b["search"]["screens"])


def test_edge_formula_for_the_supremum_is_rejected_where_the_sup_is_interior(capsys):
    from sssn_verify.numeric.kernels import kernel
    from sssn_verify.numeric.rates import lambda_bar
    out = run_json(capsys, "lambda_bar", "--candidate", "(d-1)*k1-(d-3)*k0", "--activation", "relu")
    c = out["counterexample"]
    assert out["verdict"] == "rejected" and c["beta"] > 0
    # independently: at the shrunk point the supremum is not at rho -> 1 and differs from the edge value
    value, argmax = lambda_bar("relu", c["d"], c["sigma_w"], c["sigma_b"], c["sigma_a"], c["beta"])
    kf = kernel("relu", c["sigma_w"], c["sigma_b"], c["sigma_a"])
    assert argmax < 1.0 and abs(value - ((c["d"] - 1) * kf.k1 - (c["d"] - 3) * kf.k0)) > 1e-3
    assert c["d"] <= out["search"]["first_failure"]["d"]


@pytest.mark.parametrize("beta,verdict", [("2", "rejected"), ("0", "consistent")])
def test_edge_formula_with_a_quadrature_activation(capsys, beta, verdict):
    """tanh's kernel needs quadrature: the search puts (sigma_w, sigma_b) on a grid (one table
    each) and still finds where the supremum is interior at beta = 2 (at the default budget, which
    once missed it); at beta = 0 the supremum is the edge value and the formula is right."""
    from sssn_verify.numeric.kernels import kernel
    from sssn_verify.numeric.rates import lambda_bar
    out = run_json(capsys, "lambda_bar", "--candidate", "(d-1)*k1-(d-3)*k0", "--activation", "tanh",
                   "--beta", beta)
    assert out["verdict"] == verdict
    if verdict == "rejected":
        c = out["counterexample"]
        value, argmax = lambda_bar("tanh", c["d"], c["sigma_w"], c["sigma_b"], c["sigma_a"], c["beta"])
        kf = kernel("tanh", c["sigma_w"], c["sigma_b"], c["sigma_a"])
        assert argmax < 1.0 and abs(value - ((c["d"] - 1) * kf.k1 - (c["d"] - 3) * kf.k0)) > 1e-3


def test_text_output_says_the_verdict(capsys):
    rc = main(["check", "kernel", "--candidate", RELU_K, "--rho", "0.5", "--activation", "relu"])
    out = capsys.readouterr().out
    assert rc == 0 and "verdict:    CONSISTENT" in out


@pytest.mark.parametrize("argv", [
    ["check", "kernel", "--candidate", "rho + u"],                 # unknown symbol
    ["check", "kernel", "--candidate", "__import__('os').getcwd()"],
    ["check", "kernel", "--candidate", "((rho"],                   # unparsable
    ["check", "kernel", "--candidate", "rho", "--sigma-w", "-1"],  # bad parameter
    ["check", "nonsense", "--candidate", "d"],                     # unknown claim
    ["check", "lambda1", "--candidate", "k0", "--activation", "heaviside"],   # k1 = inf
    ["check", "kernel", "--candidate", "rho", "--explore", "0"],
])
def test_bad_input_exits_two(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0]


def test_parser_allows_only_the_claims_variables():
    assert parse_candidate("lambda1", "((d-3)*k1-(d-1)*k0)/2").expr.free_symbols
    assert parse_candidate("lambda1", "-(sa^2/4)*(2*sw^2+(d-1)*sb^2)").expr.free_symbols
    with pytest.raises(CandidateError):
        parse_candidate("ito_drift", "rho*k0")
    with pytest.raises(CandidateError):
        parse_candidate("kernel", "")
    with pytest.raises(CandidateError):
        parse_candidate("kernel", "lambda: 1")


LAMBDA1 = "((d-3)*k1-(d-1)*k0)/2"


@pytest.mark.parametrize("candidate,verdict", [
    (LAMBDA1, "consistent"),
    ("-(sa^2/4)*(2*sw^2+(d-1)*sb^2)", "consistent"),          # the explicit ReLU form (ReLU pinned)
    ("((d-3)*k0-(d-1)*k1)/2", "rejected"),                   # k0 <-> k1
    ("((d-2)*k1-(d-1)*k0)/2", "rejected"),                   # d-2 for d-3
    ("(d-3)*k1-(d-1)*k0", "rejected"),                       # missing factor 1/2
    ("-((d-3)*k1-(d-1)*k0)/2", "rejected"),                  # sign
])
def test_lambda1_candidates(capsys, candidate, verdict):
    # sigma_a scales k0, k1 and the error scale alike (the search goes to the same d, sigma_w, sigma_b)
    # but the tangent flow's depth with k0 d: pinned small to keep the Monte Carlo cheap
    out = run_json(capsys, "lambda1", "--candidate", candidate, "--sigma-a", "0.5", "--activation", "relu")
    assert out["verdict"] == verdict, out
    assert out["stderr"] > 0 and out["n"] > 100


def test_lambda1_k0_k1_swap_is_caught_where_they_differ(capsys):
    # without bias ReLU has k0 = k1, so the checker must move to a biased point
    out = run_json(capsys, "lambda1", "--candidate", "((d-3)*k0-(d-1)*k1)/2", "--sigma-a", "0.5",
                   "--activation", "relu")
    assert out["verdict"] == "rejected" and out["parameters"]["k0"] != out["parameters"]["k1"]
    assert out["counterexample"]["sigma_b"] > 0


@pytest.mark.parametrize("candidate,verdict", [
    ("(d-1)*k1-(d-3)*k0", "consistent"),                      # the edge value is the sup at beta = 0 (ReLU)
    ("(sa^2/2)*(2*sw^2-(d-3)*sb^2)", "consistent"),           # the explicit ReLU form (ReLU pinned)
    ("(d-2)*k1-(d-3)*k0", "rejected"),
    ("((d-1)*k1-(d-3)*k0)/2", "rejected"),
    ("(d-1)*k0-(d-3)*k1", "rejected"),
])
def test_lambda_bar_candidates(capsys, candidate, verdict):
    # the edge formula is lambda_bar only where the sup sits at the edge (ReLU, beta = 0); with beta
    # free the checker moves to a point where it sits at rho = -1 and rejects it
    out = run_json(capsys, "lambda_bar", "--candidate", candidate, "--beta", "0", "--activation", "relu")
    assert out["verdict"] == verdict, out
    if verdict == "consistent":
        assert run_json(capsys, "lambda_bar", "--candidate", candidate, "--activation", "relu")["verdict"] == "rejected"


@settings(max_examples=5, deadline=None)
@given(kernel_sigmas(min_w=0.3, max_w=1.5, max_b=1.5), overlaps(margin=0.01))
def test_kernel_check_property_relu_closed_form_consistent_and_sign_flip_rejected(sigmas, rho):
    from sssn_verify.check import check_candidate
    sw, sb, sa = sigmas
    kw = dict(sigma_w=sw, sigma_b=sb, sigma_a=sa, rho=rho, activation="relu")
    assert check_candidate("kernel", RELU_K, **kw).verdict == "consistent"
    assert check_candidate("kernel", "-" + RELU_K, **kw).verdict == "rejected"
