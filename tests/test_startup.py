"""Start-up (issue 26.3): on a warm cache a command imports what it uses and nothing else.

Structural, not timed (timings are flaky on a shared machine): each command runs in a fresh
interpreter, as ``python -m sssn_verify`` runs it, once to fill the caches and once more, and the
modules executed by the second run are compared with the heavy ones the command does not use.
Modules registered unexecuted (``importlib.util.LazyLoader``: ``sssn_verify.regime``,
``verify``, ``scan``) do not count until they run.  The measured times are in
benchmarks/README.md ("Start-up").

The warm path of the activations' numba modules (``bridge.numba_functions``: run from the
cached file's validated syntax tree, without printing, so without sympy) is tested here too.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sssn_verify import activations, bridge
from sssn_verify.errors import DerivationError

ROOT = Path(__file__).resolve().parents[1]

#: run argv as ``python -m sssn_verify`` does, then print the modules that were executed
WRAPPER = """\
import json, runpy, sys
sys.argv = ["sssn-verify"] + json.loads(sys.argv[1])
try:
    runpy.run_module("sssn_verify", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as exc:
    code = exc.code
loaded = sorted(n for n, m in list(sys.modules.items()) if type(m).__name__ != "_LazyModule")
print("\\nSTARTUP " + json.dumps({"code": code, "modules": loaded}))
"""

#: used by none of the commands below on a warm cache
NEVER = ("sympy", "mpmath", "pandas", "matplotlib", "jsonschema", "hypothesis", "distributed",
         "scipy.stats", "scipy.optimize", "scipy.integrate", "scipy.special",
         "sssn_verify.symbolic", "sssn_verify.claims", "sssn_verify.expr", "sssn_verify.check",
         "sssn_verify.verify", "sssn_verify.scan", "sssn_verify.report", "sssn_verify.plots",
         "sssn_verify.explore", "sssn_verify.strategies", "sssn_verify.latex_doc")
#: regime computes with numpy alone (its formulas and kernel tables read from the cache)
REGIME_NEVER = NEVER + ("numba", "llvmlite", "scipy", "sssn_verify.engine", "sssn_verify.numeric.driver")


def _modules(argv: list[str], tmp_path: Path) -> set[str]:
    """The modules a warm run of ``sssn-verify argv`` executed (the first run fills the caches)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SSSN_VERIFY_DEBUG", None)
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(argv)], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        report = json.loads(out.stdout.rstrip().rpartition("\nSTARTUP ")[2])
        assert report["code"] in (0, None), (report["code"], out.stderr[-3000:])
    return set(report["modules"])


def _present(modules: set[str], names) -> list[str]:
    """The packages of `names` that were executed (a name counts with its submodules)."""
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize("argv", [
    ["regime", "--d", "5"],
    ["regime", "--activation", "tanh", "--d", "5"],            # a kernel table built by quadrature
    ["regime", "--field", "rqf", "--sigma-q", "1", "--d", "5", "--no-attention", "--json"],
], ids=["relu", "tanh", "rqf"])
def test_warm_regime_imports_numpy_only(argv, tmp_path):
    modules = _modules(argv, tmp_path)
    assert _present(modules, REGIME_NEVER) == []
    assert "numpy" in modules and "sssn_verify.regime" in modules


@pytest.mark.parametrize("argv", [
    ["simulate", "transformer", "--width", "16", "--depth", "4", "--paths", "1", "--no-progress"],
    # test_deep_blocks' QUAD stack: its deep kernel table is built there anyway
    ["simulate", "gaussian", "--depth", "4", "--paths", "1", "--activation", "tanh", "--sigma-w", "1.15",
     "--sigma-b", "0.35", "--sigma-a", "0.95", "--hidden", "relu 1.25 0.15", "--hidden", "gelu 0.85 0.45",
     "--no-progress"],
], ids=["transformer", "gaussian-hidden"])
def test_warm_one_path_simulate_imports_no_sympy(argv, tmp_path):
    """A registry activation's numba module and the kernel load from the cache: numba (and the scipy.linalg
    BLAS numba's cached kernels bind to) is all the run needs beyond numpy."""
    modules = _modules(argv + ["--out", str(tmp_path / "run.npz")], tmp_path)
    assert _present(modules, NEVER) == []
    assert "numba" in modules and "sssn_verify.engine" in modules


def test_check_imports_no_plotting_tables_or_cluster(tmp_path):
    """check parses the candidate with sympy and runs the claim's evidence; it draws no figure, builds no
    DataFrame, reads no JSON schema and starts no cluster."""
    modules = _modules(["check", "kernel", "--candidate", "sigma_a**2*(sigma_w**2*rho+sigma_b**2)",
                        "--activation", "identity", "--sigma-w", "1", "--sigma-b", "0.5", "--sigma-a", "1",
                        "--rho", "0.3"], tmp_path)
    assert _present(modules, ("matplotlib", "pandas", "jsonschema", "distributed", "sssn_verify.plots",
                              "sssn_verify.report")) == []
    assert "sympy" in modules and "sssn_verify.check" in modules


# ----------------------------------------------------------------------------- the numba modules' warm path
def _module_text(spec: str) -> str:
    """The cached text of activation `spec`'s numba module (printed now if it was not there)."""
    act = activations.get_activation(spec)
    phi, _ = act.numba_pair
    return Path(sys.modules[phi.py_func.__module__].__file__).read_text()


@pytest.mark.parametrize("spec", sorted(activations.REGISTRY) + ["leaky_relu:0.1", "sin:3", "cos:0.5"])
def test_every_registry_activation_runs_warm_from_its_validated_text(spec):
    """Each registry activation's module passes the validator with the current fingerprint, so a warm
    process runs it without printing it (a refused text would be printed afresh every time)."""
    text = _module_text(spec)
    assert text.startswith(bridge._HEADER + f"# fingerprint {bridge.fingerprint()}\n")
    bridge._validated(text, spec, numba=("phi", "dphi"))


@pytest.mark.parametrize("spec", sorted(activations.REGISTRY) + ["leaky_relu:0.1", "sin:3", "cos:0"])
def test_registry_jumps_are_the_ones_sympy_finds(spec):
    """``has_jump`` of a registry activation reads the registry's table (no sympy on a warm deep block):
    the table says what the derivative's Dirac masses say."""
    import sympy as sp
    act = activations.get_activation(spec)
    assert act.has_jump == act.derivative.has(sp.DiracDelta)
    assert act.has_jump == (act.family in ("heaviside", "step"))


def test_warm_numba_module_does_not_build_its_expressions(tmp_path, monkeypatch):
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path / "cache"))
    import sympy as sp
    u = sp.Symbol("u", real=True)
    first = bridge.numba_functions("activations", "startup_test", ("phi",), lambda: (("phi", (u,), u ** 2 + 1),))

    def refuse():
        raise AssertionError("printed again on a warm cache")
    again = bridge.numba_functions("activations", "startup_test", ("phi",), refuse)
    assert again is not first and again.phi.py_func(3.0) == first.phi.py_func(3.0) == 10.0
    path = tmp_path / "cache" / "activations" / "startup_test.py"
    stale = path.read_text().replace(bridge.fingerprint(), "0" * 16)
    path.write_text(stale)                          # another version of the printer or derivations
    with pytest.raises(AssertionError, match="printed again"):
        bridge.numba_functions("activations", "startup_test", ("phi",), refuse)
    fresh = bridge.numba_functions("activations", "startup_test", ("phi",), lambda: (("phi", (u,), u ** 2 + 1),))
    assert path.read_text() != stale and fresh.phi.py_func(3.0) == 10.0


GOOD = ("import math\nfrom numba import njit\n\n\n@njit(cache=True)\ndef phi(a0):\n    return float(math.tanh(a0))\n"
        "\n\n@njit(cache=True)\ndef dphi(a0):\n    return float(1 - math.tanh(a0)**2)\n")


def test_the_good_numba_module_passes():
    bridge._validated(bridge._HEADER + GOOD, "good", numba=("phi", "dphi"))


@pytest.mark.parametrize("planted", [
    GOOD.replace("@njit(cache=True)\ndef phi", "@njit(cache=True, parallel=True)\ndef phi"),
    GOOD.replace("@njit(cache=True)\ndef phi", "@njit\ndef phi"),
    GOOD.replace("@njit(cache=True)\ndef phi", "@njit(cache=1)\ndef phi"),
    GOOD.replace("@njit(cache=True)\ndef phi", "def phi"),
    GOOD.replace("@njit(cache=True)\ndef phi", "@njit(cache=True)\n@staticmethod\ndef phi"),
    GOOD.replace("@njit(cache=True)\ndef phi", "@njit(cache=open('x', 'w'))\ndef phi"),
    GOOD.replace("from numba import njit", "from numba import njit as jit"),
    GOOD.replace("from numba import njit", "from numba import njit, objmode"),
    GOOD.replace("from numba import njit", "from os import system as njit"),
    GOOD.replace("from numba import njit", "from .numba import njit"),
    GOOD.replace("import math", "import os"),
    GOOD + "\n\nEXPRESSION = 'x'\n",
    GOOD + "\n\nopen('x', 'w')\n",
    GOOD + "\n\n@njit(cache=True)\ndef g(a0):\n    return a0\n",
    GOOD + "\n\n@njit(cache=True)\ndef phi(a0):\n    return a0\n",
    GOOD.split("\n\n\n@njit(cache=True)\ndef dphi")[0] + "\n",                  # dphi missing
    GOOD.replace("return float(math.tanh(a0))", "open('x', 'w')\n    return a0"),
    GOOD.replace("math.tanh(a0)", "__import__('os').system('id')"),
    GOOD.replace("math.tanh(a0)", "math.__dict__['tanh'](a0)"),
    GOOD.replace("def phi(a0)", "def phi(a0, a1=open('x', 'w'))"),
], ids=range(20))
def test_a_numba_module_doing_anything_else_is_refused(planted):
    with pytest.raises(DerivationError, match="refused"):
        bridge._validated(bridge._HEADER + planted, "planted", numba=("phi", "dphi"))


def test_a_derived_expression_module_stays_without_decorators_or_numba():
    """The numba form is accepted only where asked for: a derived expression's module keeps its rules."""
    text = bridge._HEADER + "import math\nfrom numba import njit\n\nEXPRESSION = 'x'\n\n\ndef f(a0):\n    return a0\n"
    with pytest.raises(DerivationError, match="refused"):
        bridge._validated(text, "planted")
    text = bridge._HEADER + "import math\n\nEXPRESSION = 'x'\n\n\n@njit(cache=True)\ndef f(a0):\n    return a0\n"
    with pytest.raises(DerivationError, match="refused"):
        bridge._validated(text, "planted")
