"""Record neural-tangents' NNGP values of deep MLP blocks into neural_tangents_nngp.json.

Not run by the suite (neural-tangents is not a dependency); how the values were made:

    python -m venv /tmp/ntenv && /tmp/ntenv/bin/pip install neural-tangents "jax==0.4.30" "jaxlib==0.4.30"
    /tmp/ntenv/bin/python tests/data/record_neural_tangents.py

(neural-tangents 0.6.5's ``experimental`` package needs a tf2jax that the pinned jax lacks; it is
stubbed, stax does not use it.)  Conventions: stax's ``Dense(W_std, b_std)`` is
``W_std / sqrt(fan_in) W h + b_std b`` with standard normal entries.  Our first layer is
``<w, x> + b`` with w ~ N(0, sigma_w^2 I_d) on a unit token x, so it is ``Dense(W_std = sigma_w sqrt(d),
b_std = sigma_b)`` on x; a hidden layer ``m^{-1/2} W phi(h) + b`` (W entries N(0, sigma_w^2)) is
``Dense(W_std = sigma_w, b_std = sigma_b)``; the readout ``m^{-1/2} A phi(h)`` (A ~ N(0, sigma_a^2))
is ``Dense(1, W_std = sigma_a, b_std = 0)``.  The NNGP kernel of the output is then our K(rho).
"""
import json
import math
import sys
import types
from pathlib import Path

sys.modules["neural_tangents.experimental"] = types.ModuleType("neural_tangents.experimental")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import neural_tangents as nt  # noqa: E402
from neural_tangents import stax  # noqa: E402

D = 3
RHOS = [-0.9, -0.3, 0.2, 0.7, 0.99, 1.0]
STAX = {"relu": stax.Relu, "erf": stax.Erf, "gelu": lambda: stax.Gelu(approximate=False),
        "identity": stax.Identity, "sin": stax.Sin, "leaky_relu:0.1": lambda: stax.LeakyRelu(0.1)}
# (first activation, sigma_w, sigma_b), hidden layers, sigma_a
CASES = [
    (("relu", 1.1, 0.3), [("relu", 0.9, 0.4)], 0.8),
    (("erf", 1.2, 0.0), [("relu", 1.0, 0.5), ("erf", 0.7, 0.2)], 1.1),
    (("gelu", 0.8, 0.1), [("sin", 1.3, 0.0)], 1.0),
    (("leaky_relu:0.1", 1.0, 0.2), [("identity", 1.5, 0.3), ("relu", 1.2, 0.0)], 0.7),
]


def nngp(first, hidden, sa, rho):
    (act, sw, sb) = first
    layers = [stax.Dense(64, W_std=sw * math.sqrt(D), b_std=sb), STAX[act]()]
    for act, sw, sb in hidden:
        layers += [stax.Dense(64, W_std=sw, b_std=sb), STAX[act]()]
    layers.append(stax.Dense(1, W_std=sa, b_std=0.0))
    _, _, kernel_fn = stax.serial(*layers)
    x = jnp.array([[1.0, 0.0, 0.0], [rho, math.sqrt(max(0.0, 1 - rho * rho)), 0.0]])
    return float(kernel_fn(x, x, "nngp")[0, 1])


out = {"neural_tangents": nt.__version__, "jax": jax.__version__, "d": D, "cases": []}
for first, hidden, sa in CASES:
    out["cases"].append({"activation": first[0], "sigma_w": first[1], "sigma_b": first[2],
                         "hidden": [list(h) for h in hidden], "sigma_a": sa,
                         "rho": RHOS, "K": [nngp(first, hidden, sa, r) for r in RHOS]})
Path(__file__).with_name("neural_tangents_nngp.json").write_text(json.dumps(out, indent=1) + "\n")
