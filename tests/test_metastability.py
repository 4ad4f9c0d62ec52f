"""Claim ``metastability``: with synchronizing MLP noise the time to one cluster is finite, while
attention alone (large beta) stays in several clusters; paired runs of the Gaussian transformer.

The right statement passes over seeds; the reversed statement (attention alone reaches one cluster
at least as often) is rejected, and so is the statement when the noise is too weak to synchronize
by T (the check can fail)."""
from __future__ import annotations

import numpy as np

from sssn_verify.claims import get_claim
from sssn_verify.claims.metastability import n_clusters


def test_cluster_count():
    e = np.eye(3)
    X = np.array([e[0], e[0], e[1], (e[1] + 1e-3 * e[2]) / np.linalg.norm(e[1] + 1e-3 * e[2]), e[2]])
    assert n_clusters(X) == 3
    assert n_clusters(np.array([e[0]] * 4)) == 1


def test_metastability_claim_passes_and_its_negations_fail():
    claim = get_claim("metastability")
    for seed in range(3):
        res = claim.run("quick", seed)
        assert res.passed, res.checks[0].details["points"]
        law = res.checks[0].details["laws"][0]
        assert law["attention_cdf"][-1] <= 0.05 and law["attention_only_reached_by_10T"] <= 0.05
        assert res.checks[0].details["clusters"][0]["attention_only_clusters_at_10T"] >= 2
    for seed in range(3):
        assert not claim.run("quick", seed, formula=(-1, 0.0)).passed          # reversed effect
    weak = ("relu", 5, 8, 12.0, 1.0, 1.5, 0.1)                                 # noise too weak by T
    assert not claim.run("quick", 0, budget={"configs": [weak]}).passed
