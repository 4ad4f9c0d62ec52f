"""`sssn-verify simulate`: the .npz contract, --init, --plot, errors (exit 2)."""
import json

import numpy as np
import pytest

from sssn_verify.cli import main


def test_simulate_transformer_writes_tokens_energy_and_plot(tmp_path):
    out, png = tmp_path / "run.npz", tmp_path / "run.png"
    rc = main(["simulate", "transformer", "--n-tokens", "4", "--d", "3", "--width", "16", "--depth", "5",
               "--horizon", "1", "--beta", "2", "--activation", "relu", "--sigma-w", "1", "--sigma-b",
               "0.5", "--sigma-a", "1", "--paths", "3", "--seed", "7", "--out", str(out), "--plot", str(png)])
    assert rc == 0
    z = np.load(out)
    assert z["tokens"].shape == (3, 4, 3) and z["energy"].shape == (3, 6)
    assert np.allclose(np.linalg.norm(z["tokens"], axis=-1), 1.0)
    assert json.loads(str(z["settings"]))["width"] == 16
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("model", ["gaussian", "sde"])
def test_simulate_limits_with_init_and_energy_plot(tmp_path, model):
    init = np.eye(5)[:3]
    np.save(tmp_path / "init.npy", init)
    out, png = tmp_path / "r.npz", tmp_path / "r.png"
    rc = main(["simulate", model, "--n-tokens", "3", "--d", "5", "--depth", "4", "--paths", "2",
               "--init", str(tmp_path / "init.npy"), "--out", str(out), "--plot", str(png)])
    assert rc == 0
    z = np.load(out)
    assert np.allclose(z["init"][1], init) and z["energy"].shape == (2, 5)
    assert z["energy"][0, 0] == pytest.approx(0.5 * (1 - 1 / 3))
    assert png.exists()


@pytest.mark.parametrize("argv", [
    ["simulate", "gaussian", "--width", "8", "--depth", "2"],
    ["simulate", "transformer", "--depth", "2"],
    ["simulate", "sde", "--depth", "0"],
    ["simulate", "sde", "--depth", "2", "--sigma-a", "-1"],
    ["simulate", "sde", "--depth", "2", "--init", "/nonexistent.npy"],
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv):
    assert main(argv + ["--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sssn-verify simulate: error:") and "\n" not in err
