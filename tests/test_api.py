"""The public API: README's Python example runs verbatim, each call twice; lazy names stay functions."""
from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import sssn_verify

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 1, "README has exactly one Python example"
    return blocks[0]


def test_readme_python_block_runs_verbatim_twice():
    """Run in a fresh interpreter: the first call of a lazy name used to rebind it to its submodule,
    so the second call of sv.regime raised TypeError: 'module' object is not callable."""
    code = _python_block()
    script = f"ns = {{}}\nsrc = {code!r}\nexec(src, ns)\nexec(src, ns)\nprint('twice ok')\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("twice ok")


def test_every_lazy_name_resolves_to_its_object_after_its_module_is_imported():
    import importlib
    for name, module in sssn_verify._LAZY.items():
        importlib.import_module(module)              # importing the submodule must not hide the name
        obj = getattr(sssn_verify, name)
        assert obj is getattr(sys.modules[module], name), name
        assert getattr(sssn_verify, name) is obj     # and again (cached)


def test_entry_points_are_plain_functions_with_signatures_and_docstrings():
    """No callable-module swap: sv.regime and sv.verify are the functions themselves."""
    import inspect
    import types
    for name in ("regime", "verify", "simulate_transformer", "check_candidate", "phase_diagram_figure", "scan"):
        f = getattr(sssn_verify, name)
        assert isinstance(f, types.FunctionType), name
        params = inspect.signature(f).parameters
        assert params and not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()), name
        assert f.__doc__ and f.__doc__.strip(), name
    assert {"mode", "claims", "seed"} <= set(inspect.signature(sssn_verify.verify).parameters)


def test_the_submodule_named_like_its_function_is_reachable_and_never_hides_it():
    import importlib
    regime_module = importlib.import_module("sssn_verify.regime")
    import sssn_verify.regime as imported            # the import statement binds the package's attribute
    assert isinstance(regime_module, types.ModuleType) and imported is sssn_verify.regime
    p = sssn_verify.ModelParams(d=4, activation="relu", sigma_w=1, sigma_b=1, sigma_a=1, beta=0)
    assert regime_module.Regime is sssn_verify.Regime
    first, second = sssn_verify.regime(p), sssn_verify.regime(p)
    assert first == second == regime_module.regime(p)


def test_import_stays_lazy_and_submodule_imports_keep_the_functions():
    """A fresh `import sssn_verify` loads no numpy, sympy, numba, scipy or pandas; importing
    the submodules regime and verify first (as the CLI does) leaves sv.regime, sv.verify functions."""
    code = ("import sys, types\n"
            "import sssn_verify as sv\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'sympy', 'numba', 'scipy', 'pandas'})\n"
            "assert heavy == [], heavy\n"
            "from sssn_verify.regime import Regime\n"
            "import sssn_verify.verify\n"
            "from sssn_verify.verify import SuiteResult\n"
            "assert isinstance(sv.regime, types.FunctionType) and isinstance(sv.verify, types.FunctionType)\n"
            "assert sv.regime.__module__ == 'sssn_verify.regime' and sv.Regime is Regime\n"
            "print('lazy ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "lazy ok", out.stderr[-2000:]


def test_dir_lists_the_public_api_and_unknown_names_raise():
    listed = dir(sssn_verify)
    assert set(sssn_verify.__all__) <= set(listed)
    assert {"regime", "verify", "derive", "ModelParams", "c_att"} <= set(listed)
    try:
        sssn_verify.regmie
    except AttributeError as exc:
        assert "regmie" in str(exc)
    else:
        raise AssertionError("unknown attribute did not raise")


def test_every_exception_of_errors_is_public():
    """Each exception class of sssn_verify.errors is re-exported (ExpressionError, OutputError and
    ResourceError were not), so `except sv.OutputError` works without importing the submodule."""
    import inspect

    from sssn_verify import errors
    classes = {n for n, o in vars(errors).items() if inspect.isclass(o) and issubclass(o, Exception)
               and o.__module__ == errors.__name__}
    assert {"ExpressionError", "OutputError", "ResourceError", "SSSNError"} <= classes
    for name in classes:
        assert name in sssn_verify.__all__ and getattr(sssn_verify, name) is getattr(errors, name), name
