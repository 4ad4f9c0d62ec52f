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
    assert {"d", "beta", "activation", "sigma_w", "V"} <= set(inspect.signature(sssn_verify.regime).parameters)


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


def test_one_calling_style_a_model_or_its_fields_with_the_same_defaults():
    """Issue 24.1: a ModelParams or the same keywords, one set of defaults (ModelParams')."""
    import inspect

    import numpy as np

    from sssn_verify.cli import build_parser
    from sssn_verify.params import MODEL_DEFAULTS
    sv = sssn_verify
    kw = dict(activation="tanh", d=6, sigma_w=1.2, sigma_b=0.3, sigma_a=1, beta=1)
    p = sv.ModelParams(**kw)
    assert sv.regime(**kw) == sv.regime(p) == sv.regime(sv.ModelParams(d=6), **{k: kw[k] for k in kw if k != "d"})
    assert sv.regime(p, beta=2).beta == 2.0 and sv.regime(p, beta=2) == sv.regime(**{**kw, "beta": 2})
    for f in (sv.lambda1, sv.lambda_bar, sv.c_att):
        assert f(**kw) == f(p)
    # against a hand formula (ReLU): lambda_1 = -(sa^2/4)(2 sw^2 + (d-1) sb^2)
    sw, sb, sa, d = 0.8, 0.6, 1.3, 5
    assert np.isclose(sv.lambda1(d=d, sigma_w=sw, sigma_b=sb, sigma_a=sa),
                      -(sa**2 / 4) * (2 * sw**2 + (d - 1) * sb**2), rtol=1e-12, atol=0)
    assert sv.kernel(p).k0 == sv.kernel("tanh", 1.2, 0.3, 1.0).k0
    assert beta_default(sv.ModelParams) == 1.0 == MODEL_DEFAULTS["beta"]
    for f in (sv.regime, sv.lambda1, sv.lambda_bar, sv.c_att, sv.phase_diagram_figure):
        params = inspect.signature(f).parameters
        assert {k: params[k].default for k in MODEL_DEFAULTS} == MODEL_DEFAULTS, f.__name__
    parser = build_parser()
    for cmd in (["regime"], ["phase-diagram", "--out", "x.png"], ["simulate", "gaussian", "--depth", "2", "--out", "x.npz"]):
        args = parser.parse_args(cmd)
        given = getattr(args, "shown_defaults", vars(args))     # regime fills (and prints) its defaults
        for k in ("activation", "d", "sigma_w", "sigma_b", "sigma_a", "beta"):
            if k in given:
                assert given[k] == MODEL_DEFAULTS[k], (cmd[0], k)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = sv.phase_diagram_figure(p, xs=np.arange(2, 5), ys=np.linspace(0.0, 1.0, 3))
    plt.close(fig)
    try:
        sv.regime(dimension=3)
    except sv.ParameterError as exc:
        assert "dimension" in str(exc)
    else:
        raise AssertionError("an unknown keyword was accepted")


def test_the_simulators_take_a_model_or_its_fields_too():
    """Issue 24.1 for the engine: every public simulator takes a ModelParams, its fields as
    keywords, or both, with ModelParams' defaults in its signature; positional calls keep working."""
    import inspect

    import numpy as np

    from sssn_verify.params import MODEL_DEFAULTS
    sv = sssn_verify
    kw = dict(d=4, n_tokens=3, activation="relu", sigma_b=0.5)
    p = sv.ModelParams(**kw)
    for f in (sv.simulate_transformer, sv.simulate_gaussian, sv.simulate_sde, sv.simulate_coupled,
              sv.sde_refinement_ladder, sv.lyapunov_tangent):
        params = inspect.signature(f).parameters
        assert {k: params[k].default for k in MODEL_DEFAULTS} == MODEL_DEFAULTS, f.__name__
        assert params["depth"].default == 100, f.__name__
    a = sv.simulate_gaussian(p, 4, 2, 7, progress=False)
    b = sv.simulate_gaussian(depth=4, n_paths=2, seed=7, progress=False, **kw)
    c = sv.simulate_gaussian(sv.ModelParams(d=4), depth=4, n_paths=2, seed=7, progress=False,
                             **{k: v for k, v in kw.items() if k != "d"})
    assert np.array_equal(a.energy, b.energy) and np.array_equal(a.energy, c.energy)
    s1 = sv.simulate_sde(p, 4, 2, 7, progress=False)
    s2 = sv.simulate_sde(depth=4, n_paths=2, seed=7, progress=False, **kw)
    assert np.array_equal(s1.tokens, s2.tokens)
    try:
        sv.simulate_sde(depth=4, tokens=3)
    except sv.ParameterError as exc:
        assert "tokens" in str(exc)
    else:
        raise AssertionError("an unknown keyword was accepted")


def beta_default(cls):
    import dataclasses
    return {f.name: f.default for f in dataclasses.fields(cls)}["beta"]


def test_readme_defaults_table_is_modelparams_defaults():
    from sssn_verify.params import MODEL_DEFAULTS
    rows = dict(re.findall(r"^\| `([A-Za-z_]+)`(?:, `[A-Z]`)* \| ([^|]+?) \|", README.read_text(), flags=re.M))
    shown = {k: rows[k] for k in MODEL_DEFAULTS if k in rows}
    want = {k: "identity" if v is None else str(v) for k, v in MODEL_DEFAULTS.items()}
    assert shown == {k: want[k] for k in ("d", "n_tokens", "horizon", "beta", "activation", "sigma_w", "sigma_b",
                                          "sigma_a", "field", "sigma_q", "Q")}
