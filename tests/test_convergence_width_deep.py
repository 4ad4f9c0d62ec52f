"""claims.convergence_width runs its deep-block anchor (full mode, ``n_deep``) through the same checker as its
one-layer anchors, with the hidden layers passed to the width coupling.  The coupling's runs themselves (a deep
block's slope near -1, the rates m^-2 and m^0 rejected) are tested in test_deep_finite_width; here the runs are
replaced by samples with a known slope, so the wiring is tested without simulating twice."""
import numpy as np

from sssn_verify.claims import CLAIMS
from sssn_verify.claims import convergence_width as cw
from sssn_verify.numeric.rng import Key


def test_the_claim_runs_its_deep_anchor_with_the_hidden_layers(monkeypatch):
    calls = []

    def fake(config, budget, seed, hidden=()):
        calls.append((tuple(config), tuple(hidden)))
        m = np.asarray(budget["widths"], dtype=float)
        rng = Key(0).child("test", "width-deep", len(calls)).generator()
        return m, (1.0 / m)[None, :] * rng.exponential(1.0, (int(budget["paths"]), m.size))   # slope exactly -1

    monkeypatch.setattr(cw, "width_errors", fake)
    claim = CLAIMS["convergence_width"]
    assert claim.budgets["full"]["n_deep"] == len(cw.DEEP_CONFIGS) >= 1 and not claim.budgets["quick"].get("n_deep")
    res = claim.run("full", 0, budget={"paths": 400, "n_boot": 300})
    assert [h for _, h in calls] == [()] * len(cw.CONFIGS) + [h for _, h in cw.DEEP_CONFIGS]
    assert res.passed and len(res.checks) == 2                   # bound and order, Bonferroni over the anchors
    names = [p["name"] for c in res.checks for p in c.details["points"]]
    assert any("then `relu`" in n for n in names)
    bad = claim.run("full", 0, budget={"paths": 400, "n_boot": 300}, formula=-2.0)
    assert not bad.passed
