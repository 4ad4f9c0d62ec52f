"""Golden outputs: every model and entry point of the engine at fixed seeds, 1 and 2 threads.

The arrays in ``tests/golden/engine.npz`` were recorded on the engine before the model
refactor of issue 9; the same seeds must give bit-identical arrays whatever the code layout
and the thread count (the order of random draws is part of the contract).  Regenerate only
when a change is *meant* to alter the numbers, and say so in the commit message::

    python tests/test_golden.py --write
"""
from __future__ import annotations

import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from sssn_verify import ModelParams
from sssn_verify import engine

GOLDEN = Path(__file__).parent / "golden" / "engine.npz"


def _params(**kw) -> ModelParams:
    rng = np.random.default_rng(20261202)
    d = kw.pop("d", 3)
    mats = {name: np.eye(d) + 0.3 * rng.standard_normal((d, d)) for name in ("Q", "K", "V")}
    base = dict(d=d, n_tokens=4, horizon=1.0, beta=2.0, sigma_w=1.0, sigma_b=0.5, sigma_a=1.0, **mats)
    base.update(kw)
    return ModelParams(**base)


def compute() -> dict[str, np.ndarray]:
    """Every entry point at small sizes; keys name the run and the array."""
    out: dict[str, np.ndarray] = {}
    p = _params()
    sim = dict(n_paths=3, seed=11, progress=False)

    def keep(name, res, fields):
        for f in fields:
            out[f"{name}.{f}"] = np.asarray(getattr(res, f))

    fields = ("init", "tokens", "energy", "energies", "trajectory")
    for mode in ("exact", "literal"):
        keep(f"transformer_{mode}", engine.simulate_transformer(
            p, 6, 16, mode=mode, betas=(0.0, 2.0), store_every=2, **sim), fields)
    # auto mode picking literal pre-activations and exact outputs (N = 4, d = 3, m = 64; re-recorded when the
    # cost model learnt the tree's and the Cholesky's scalar work, and chose literal outputs at N = 8)
    keep("transformer_auto_mixed", engine.simulate_transformer(
        p, 4, 64, betas=(1.0,), store_every=1, **sim), fields)
    keep("transformer_no_attention", engine.simulate_transformer(
        p.with_(V=0.0), 5, 16, mode="literal", **sim), ("tokens", "energy"))
    for name, fn in (("gaussian", engine.simulate_gaussian), ("sde", engine.simulate_sde)):
        keep(name, fn(p, 8, betas=(0.0, 2.0), store_every=2, **sim), fields)
        keep(f"{name}_no_attention", fn(p.with_(V=0.0), 6, **sim), ("tokens", "energy"))
    for kind in ("sde", "gaussian"):
        keep(f"ladder_{kind}", engine.sde_refinement_ladder(p, 8, factors=(1, 2, 4), kind=kind, **sim),
             ("tokens", "max_dev", "max_dev_config"))
    tan = dict(depth=7, n_paths=3, seed=5, progress=False)
    for mode in ("exact", "literal"):
        keep(f"tangent_transformer_{mode}", engine.lyapunov_tangent(
            p, "transformer", width=12, mode=mode, **tan), ("log_growth", "running", "tokens"))
    for model in ("gaussian", "sde"):
        keep(f"tangent_{model}", engine.lyapunov_tangent(p, model, **tan), ("log_growth", "running", "tokens"))
    keep("tangent_sde_no_attention", engine.lyapunov_tangent(p.with_(V=0.0), "sde", **tan),
         ("log_growth", "running"))
    for model, extra in (("sde", {}), ("gaussian", {}), ("transformer", {"width": 10, "mode": "literal"})):
        keep(f"two_point_{model}", engine.two_point(p, model, depth=6, rho0=0.3, n_paths=2, seed=3,
                                                    progress=False, **extra), ("rho", "gap"))
    return out


def _with_threads(n: int) -> dict[str, np.ndarray]:
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        return compute()
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("threads", [1, 2])
def test_same_seed_gives_the_recorded_arrays_bit_for_bit(threads):
    golden = np.load(GOLDEN)
    got = _with_threads(threads)
    assert sorted(got) == sorted(golden.files)
    for key in golden.files:
        assert got[key].shape == golden[key].shape, key
        assert np.array_equal(got[key], golden[key], equal_nan=True), (
            f"{key}: max |diff| {np.max(np.abs(got[key] - golden[key]))}")


def test_golden_test_notices_a_one_ulp_change():
    """The comparison is exact: a single ulp in one token is a failure."""
    golden = np.load(GOLDEN)
    a = golden["sde.tokens"].copy()
    a[0, 0, 0] = np.nextafter(a[0, 0, 0], 2.0)
    assert not np.array_equal(a, golden["sde.tokens"])


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_golden.py --write")
    GOLDEN.parent.mkdir(exist_ok=True)
    data = _with_threads(2)
    tmp = GOLDEN.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **data)
    tmp.replace(GOLDEN)
    print(f"wrote {GOLDEN} ({len(data)} arrays, {GOLDEN.stat().st_size} bytes)")
