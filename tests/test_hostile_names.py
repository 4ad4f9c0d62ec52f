"""Names are rebuilt from the parsed tree (issue 22, item 2): no comment or raw user character
of an activation, candidate or statement reaches derive, latex, the terminal or a plot."""
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from sssn_verify.activations import get_activation
from sssn_verify.expr import canonical, parse_tree

INJECT = r"sin(u) # $\immediate\write18{touch PWNED}$"

# --------------------------------------------------------------- canonical text round-trips
_atoms = st.sampled_from(["u", "2", "0.5", "1e-05", "pi", "E", "3"])


def _exprs():
    return st.recursive(
        _atoms,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "**", "^"]), inner).map(
                lambda t: f"({t[0]}){t[1]}({t[2]})" if t[1] in "**^" else f"{t[0]} {t[1]} {t[2]}"),
            inner.map(lambda x: f"-{x}"),
            inner.map(lambda x: f"({x})"),
            st.tuples(st.sampled_from(["sin", "exp", "tanh", "Abs"]), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"Max({t[0]}, {t[1]})"),
        ), max_leaves=8)


@given(_exprs())
@settings(max_examples=300, deadline=None)
def test_canonical_text_parses_back_to_the_same_tree(text):
    tree = parse_tree(text, ["u"])
    assert parse_tree(canonical(tree), ["u"]) == tree


@pytest.mark.parametrize("text, want", [
    ("-u**2", "-u**2"), ("(-u)**2", "(-u)**2"), ("u-(u-1)", "u - (u - 1)"), ("a/(b*c)", "a/(b*c)"),
    ("2^3^u", "2**3**u"), ("(2**3)**u", "(2**3)**u"), ("-(u*2)", "-(u*2)"),
    ("u > 0 and (u < 1 or not u == 2)", "u > 0 and (u < 1 or (not u == 2))"),
])
def test_canonical_text_examples(text, want):
    tree = parse_tree(text, ["u", "a", "b", "c"], allow_logic=True)
    assert canonical(tree) == want
    assert parse_tree(want, ["u", "a", "b", "c"], allow_logic=True) == tree


@pytest.mark.parametrize("spec, name", [
    (INJECT, "sin(u)"),
    ("sin(u)  # \x1b[2J\x1b]0;owned\x07", "sin(u)"),
    ("u *   erf(u)   # ` <script> ", "u*erf(u)"),
    ("leaky_relu: 0.1 # $\\input{/etc/passwd}$", "leaky_relu:0.1"),
    ("sin:3#}", "sin:3"),
    ("relu", "relu"),
    ("\uff53\uff49\uff4e(\uff55)", "sin(u)"),              # second audit: fullwidth letters (Python's NFKC)
    ("tanh(\U0001d462)  # \u202eevil", "tanh(u)"),          # mathematical italic u, a bidi override
    ("sin(u) \\\n# $\\input{/etc/passwd}$", "sin(u)"),     # a line continuation before the comment
])
def test_activation_name_is_the_canonical_text(spec, name):
    act = get_activation(spec)
    assert act.name == name
    assert get_activation(act.name) == act


@pytest.mark.parametrize("spec, says", [
    ("(x := u)", "assignment is not allowed"), ("(lambda: u)()", "lambda is not allowed"),
    ("relux:0.1", "unknown activation 'relux'"), ("\u0435xp(u)", "unknown function"),
])
def test_a_colon_outside_a_registry_name_is_judged_as_an_expression(spec, says):
    """Second audit: '(x := u)' was split at ':' and called an unknown activation '(x'; only a registry
    name takes ':' (leaky_relu:0.1), anything else gets the expression parser's reason."""
    from sssn_verify.errors import ActivationError
    with pytest.raises(ActivationError, match=re.escape(says)):
        get_activation(spec)


def test_candidate_and_statement_texts_are_canonical():
    from sssn_verify.check import parse_candidate
    from sssn_verify.explore import parse_statement
    c = parse_candidate("lambda1", "k1-k0 # $\\write18{x}$")
    assert c.text == "k1 - k0"
    s = parse_statement("lambda_bar<0 # \x1b[31m")
    assert s.text == "lambda_bar < 0"


def test_derive_latex_standalone_holds_no_raw_text_and_runs_nothing(tmp_path):
    from sssn_verify.cli import main
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["derive", "kernel", "--activation", INJECT, "--format", "latex", "--standalone"])
    tex = buf.getvalue()
    assert code == 0
    for raw in ("write18", "immediate", "PWNED", "#"):
        assert raw not in tex.split("\\begin{document}", 1)[1]
    assert "\\texttt{sin(u)}" in tex
    if shutil.which("pdflatex"):
        (tmp_path / "k.tex").write_text(tex)
        run = subprocess.run(["pdflatex", "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "k.tex"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-1500:]
        assert not (tmp_path / "PWNED").exists()


def test_plot_title_of_a_hostile_activation(tmp_path):
    from sssn_verify.cli import main
    code = main(["simulate", "gaussian", "--depth", "2", "--activation", r"sin(u) # $\frac{$",
                 "--out", str(tmp_path / "a.npz"), "--plot", str(tmp_path / "a.png")])
    assert code == 0
    assert (tmp_path / "a.png").stat().st_size > 0
