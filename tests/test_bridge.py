"""The one bridge from derivations to numbers (sssn_verify.bridge).

The derived formulas themselves are checked against independent numbers in the tests of
each derivation; here: the bridge's callables agree with independent quadrature, they are
kept across processes (a warm process imports no sympy), a tampered cache file is never
executed, and only declared arguments reach the generated code.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import dblquad

from sssn_verify import bridge
from sssn_verify.errors import DerivationError

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, cache: Path) -> str:
    env = dict(os.environ, SSSN_VERIFY_CACHE=str(cache), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _relu_kernel_by_quadrature(rho, sw, sb, sa):
    """sa^2 E[relu(U) relu(V)] by scipy's adaptive 2-D quadrature (no derivation involved)."""
    S = sw * sw + sb * sb
    r = (sw * sw * rho + sb * sb) / S
    q = math.sqrt(max(0.0, 1 - r * r))

    def f(z2, z1):
        U = math.sqrt(S) * z1
        V = math.sqrt(S) * (r * z1 + q * z2)
        return max(U, 0.0) * max(V, 0.0) * math.exp(-(z1 * z1 + z2 * z2) / 2) / (2 * math.pi)
    return sa * sa * dblquad(f, -9, 9, -9, 9, epsabs=1e-11, epsrel=1e-11)[0]


@pytest.mark.parametrize("flavor", ["scipy", "mpmath", "math"])
def test_kernel_callable_matches_independent_quadrature(flavor):
    K = bridge.function("kernel.K", flavor, "relu")
    for rho, sw, sb, sa in ((-0.7, 1.0, 0.5, 1.2), (0.3, 0.8, 0.0, 1.0), (0.95, 1.3, 1.1, 0.7)):
        assert float(K(rho, sw, sb, sa)) == pytest.approx(_relu_kernel_by_quadrature(rho, sw, sb, sa),
                                                          rel=1e-6, abs=1e-9)   # dblquad of a kink


def test_rate_callables_take_arrays_and_scalars():
    lam = bridge.function("lyapunov.lambda1", "numpy")
    d = np.array([2, 3, 8])
    out = lam(d, 1.0, 0.5)
    assert out.shape == (3,)
    # ((d-3) k1 - (d-1) k0)/2 written out by hand, an independent evaluation of the printed formula
    assert np.allclose(out, ((d - 3) * 0.5 - (d - 1) * 1.0) / 2, rtol=1e-15)
    assert bridge.function("lyapunov.lambda1", "math")(8, 1.0, 0.5) == pytest.approx(-2.25, rel=1e-15)


def test_no_closed_form_is_none_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path))
    bridge.function.cache_clear()
    assert bridge.function("kernel.K", "mpmath", "tanh") is None
    files = list((tmp_path / "bridge").rglob("kernel.K.*.py"))
    assert len(files) == 1 and "EXPRESSION = None" in files[0].read_text()
    bridge.function.cache_clear()


def test_warm_process_imports_no_sympy_and_gives_the_same_numbers(tmp_path):
    code = ("import sys\nfrom sssn_verify.bridge import function\n"
            "print(repr(function('lyapunov.lambda1', 'math')(7, 1.3, 0.4)), "
            "repr(function('kernel.K', 'mpmath', 'relu')(0.25, 1.0, 0.5, 1.0)), "
            "'sympy' in sys.modules)\n"
            "from sssn_verify.numeric import rates\n"
            "print(repr(rates.lambda_edge(6, 1.0, 0.75)), 'numba' in sys.modules, 'scipy.optimize' in sys.modules)\n")
    cold = _run(code, tmp_path).split()
    warm = _run(code, tmp_path).split()
    assert cold[:2] == warm[:2] and cold[3] == warm[3]
    assert cold[2] == "True"                               # the cold process derived
    assert warm[2] == "False"                              # the warm one only read the cache
    assert warm[4:] == ["False", "False"]                  # rates needs neither numba nor scipy.optimize
    assert not list(tmp_path.rglob("*.tmp"))               # atomic writes leave no temporaries


def test_tampered_cache_file_is_regenerated_not_executed(tmp_path, monkeypatch):
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path))
    bridge.function.cache_clear()
    f = bridge.function("lyapunov.lambda1", "math")
    path = next((tmp_path / "bridge").rglob("lyapunov.lambda1.math.py"))
    canary = tmp_path / "canary"
    text = path.read_text()
    path.write_text(text.replace("return ", f"open({str(canary)!r}, 'w').close()\n    return ", 1))
    bridge.function.cache_clear()
    g = bridge.function("lyapunov.lambda1", "math")
    assert not canary.exists()
    assert g(5, 1.0, 2.0) == f(5, 1.0, 2.0) and path.read_text() == text
    bridge.function.cache_clear()


def test_only_declared_arguments_reach_the_code(monkeypatch):
    import sympy as sp
    from sssn_verify.symbolic.symbols import d, k0
    stray = sp.Symbol("__import__('os')")
    monkeypatch.setitem(bridge.EXPRESSIONS, "test.stray", lambda: ((d,), d * k0 + stray))
    with pytest.raises(DerivationError, match="not among its arguments"):
        bridge.generate("test.stray", "math")
    # any argument names (ours may not be identifiers, e.g. sigma^2): the code only has a0, a1, ...
    odd = sp.Symbol("x'); import os; ('", positive=True)
    monkeypatch.setitem(bridge.EXPRESSIONS, "test.odd", lambda: ((odd, d), sp.sqrt(odd) * d))
    src = bridge.generate("test.odd", "math")
    assert "import os" not in src and "def f(a0, a1):" in src
    f = bridge.compile_expression((odd, d), sp.sqrt(odd) * d, "math")
    assert f(4.0, 3) == 6.0
    with pytest.raises(DerivationError, match="unknown expression"):
        bridge.function("no.such")
    with pytest.raises(DerivationError, match="needs"):
        bridge.function("kernel.K", "math")


def test_bridge_is_the_only_code_generator_from_derivations():
    """One printer and one loader: no lambdify, code printer (LaTeX/MathML for documents are not
    code), exec or compile of source anywhere in the package but bridge.py; numeric/ imports no sympy."""
    pkg = ROOT / "sssn_verify"
    texts = {str(p.relative_to(pkg)): p.read_text() for p in pkg.rglob("*.py")}
    for word in (r"lambdify\(", r"sympy\.printing\.(pycode|numpy|lambdarepr|codeprinter)", r"(?<![\w.])exec\(", r"(?<![\w.])compile\("):
        users = sorted(name for name, text in texts.items() if re.search(word, text) and name != "bridge.py")
        assert users == [], (word, users)
    numeric = [p.name for p in (pkg / "numeric").glob("*.py") if "import sympy" in p.read_text()]
    assert numeric == []


def test_engine_modules_are_every_module_with_cached_numba_functions():
    """ENGINE_MODULES (read from the sources) against the dispatchers themselves: every module of the
    package whose numba functions have an on-disk cache is in it, so no cache outlives an edit."""
    import importlib
    import pkgutil

    import sssn_verify
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher
    from sssn_verify.numeric.fields import ENGINE_MODULES, engine_sources_digest
    cached = set()
    for info in pkgutil.walk_packages(sssn_verify.__path__, "sssn_verify."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == info.name \
                    and not isinstance(value._cache, NullCache):
                cached.add(info.name)
    # the audit found kernel_table, layer_rates' Monte Carlo and lyapunov_spectrum's private kernel
    # missing; the latter two now live in numeric/experiments.py
    assert {"sssn_verify.numeric.kernel_table", "sssn_verify.numeric.experiments"} <= cached
    assert cached <= set(ENGINE_MODULES), sorted(cached - set(ENGINE_MODULES))
    assert set(ENGINE_MODULES) <= cached, sorted(set(ENGINE_MODULES) - cached)
    assert len(engine_sources_digest()) == 16


def test_depth_is_the_derived_ceiling():
    """sync_time's depth (spectrum.depth through the bridge) against ceil computed here in exact
    rationals of the same doubles."""
    from fractions import Fraction
    f = bridge.function("spectrum.depth", "math")
    for ta, delta, layers in ((16.9052, 0.01, 1691), (3.1, 0.5, 7), (1e-3, 7.0, 1), (123.4567, 0.001, 123457)):
        assert -((-Fraction(ta)) // Fraction(delta)) == layers           # away from integers: exact
        assert f(ta, delta) == layers


def test_warm_regime_imports_neither_sympy_nor_numba_nor_scipy():
    """Start-up (issue 26.3): on a warm cache, ``sssn-verify regime`` reads its derived formulas and
    the kernel table and imports only what it uses (the command's own module, numpy)."""
    code = ("import sys\nfrom sssn_verify.cli import main\n"
            "code = main(['regime', '--d', '4', '--activation', 'relu', '--json'])\n"
            "print(code, sorted(m for m in ('sympy', 'numba', 'scipy', 'mpmath', 'matplotlib', "
            "'sssn_verify.symbolic', 'sssn_verify.engine', 'sssn_verify.claims') if m in sys.modules))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = []
    for _ in range(2):                     # the first run may fill the cache
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(out.stdout.strip().splitlines())
    assert runs[0][0] == runs[1][0]                         # the same JSON
    assert runs[1][-1] == "0 []", runs[1][-1]
