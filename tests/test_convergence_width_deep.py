"""claims.convergence_width runs its deep-block anchor (full mode, ``n_deep``): the slope of
E max_l |X^{l,m} - X^{l,inf}|^2 against m for a block with a hidden layer after the first, every hidden layer of
width m (the rates m^-2 and m^0 are rejected on the same kind of runs in test_deep_finite_width)."""
from sssn_verify.claims import CLAIMS


def test_the_claim_runs_its_deep_anchor_and_finds_one_over_m():
    claim = CLAIMS["convergence_width"]
    assert claim.budgets["full"]["n_deep"] >= 1 and claim.budgets["quick"].get("n_deep", 0) == 0
    res = claim.run("quick", 0, budget={"n_configs": 0, "n_deep": 1, "depth": 8, "widths": (16, 32, 64, 128),
                                        "paths": 600, "n_boot": 500})
    assert res.passed, [c.to_dict() for c in res.checks]
    bound, order = res.checks
    assert "then `relu`" in bound.name and bound.details["hidden"] == [["relu", "1.1", "0.3"]]
    assert -1.2 < bound.estimate < -0.8
