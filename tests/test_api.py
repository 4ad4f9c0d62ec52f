"""The public API: README's Python example runs verbatim, each call twice; lazy names stay functions."""
from __future__ import annotations

import re
import subprocess
import sys
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
        importlib.import_module(module)              # binding the submodule must not hide the name
        obj = getattr(sssn_verify, name)
        target = getattr(sys.modules[module], name)
        if module == f"sssn_verify.{name}":          # regime, verify: the module itself, made callable
            assert obj is sys.modules[module] and callable(obj), name
        else:
            assert obj is target, name
        assert getattr(sssn_verify, name) is obj     # and again (cached)


def test_a_submodule_named_like_its_function_calls_it_and_stays_a_module():
    import sssn_verify.regime as regime_module       # the module, as Python's import statement says
    p = sssn_verify.ModelParams(d=4, activation="relu", sigma_w=1, sigma_b=1, sigma_a=1, beta=0)
    assert regime_module.Regime is sssn_verify.Regime
    first, second = sssn_verify.regime(p), sssn_verify.regime(p)
    assert first == second == regime_module.regime(p)


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
