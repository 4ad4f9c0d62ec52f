"""Hostile input against the one expression language (sssn_verify.expr) and the code
generated from it: nothing outside the language is accepted, nothing is ever executed."""
import os
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from sssn_verify import activations, bridge, outputs
from sssn_verify.errors import ActivationError, DerivationError, ExpressionError, OutputError
from sssn_verify.expr import CONSTANTS, FUNCTIONS, MAX_LENGTH, Node, parse_expression, parse_with_tree

# one name per test run, the same in every pytest-xdist worker (test ids embed it and must agree)
CANARY = Path(os.environ.get("TMPDIR", "/tmp")) / f"sssn_canary_{os.environ.get('PYTEST_XDIST_TESTRUNUID', os.getpid())}"
VARIABLES = {"u": sp.Symbol("u", real=True), "rho": sp.Symbol("rho")}

PAYLOADS = [
    f"Max(u,0)+0*__import__('os').system('touch {CANARY}')",
    f"u+len(open('{CANARY}','w').write('x'))",
    f"exp('__import__(\"os\").system(\"touch {CANARY}\")')",
    "'\\137\\137import\\137\\137'",
    f"u + (lambda: open('{CANARY}', 'w'))()",
    "u.__class__.__mro__[1].__subclasses__()",
    "[x for x in ().__class__.__base__.__subclasses__()]",
    f"exec('open(\"{CANARY}\",\"w\")')",
    f"eval('1')", "getattr(u, 'real')", "Symbol('u\\nimport os')", "Sum(u, (k, 1, 3))",
    f"sin(u) if open('{CANARY}','w') else 0", "(x := 3)", "u @ u", "u // 2", "u % 2", "u << 1",
    "f'{u}'", "b'u'", "1j*u", "u[0]", "u[0:1]", "*u", "sin(*[u])", "sin(x=u)", "{u: 1}",
    "rho**(9**9**9)", "(2**256)**256", "9**9**9", "u**1000", "1e999", "10" * 200,
    "(" * 300 + "u" + ")" * 300, "-" * 1500 + "u", "u+" * 800 + "u", "u" * (MAX_LENGTH + 1),
    "sin(u, u)", "Max(u)", "Heaviside(u, u)", "Piecewise(u)", "Piecewise((u, True), (0, u > 0))",
    "log(0)", "1/0", "1/(u-u)", "sqrt(-1)", "zoo", "oo", "nan", "I", "besselj(0, u)", "u < 1",
    "u and 1", "not u", "True", "None", "...", "\x00u", "u\n+1", "", "   ", "sinx", "u;1",
]


def _in_language(node: Node, names: set) -> bool:
    kinds = {"num", "var", "const", "op", "neg", "call", "pair", "true", "cmp", "and", "or", "not"}
    if node.kind not in kinds:
        return False
    if node.kind == "var" and node.value not in names:
        return False
    if node.kind == "const" and node.value not in CONSTANTS:
        return False
    if node.kind == "call" and node.value not in FUNCTIONS:
        return False
    if node.kind == "op" and node.value not in ("+", "-", "*", "/", "**"):
        return False
    return all(_in_language(c, names) for c in node.children)


def _check(text, allow_logic=False):
    try:
        tree, expr = parse_with_tree(text, VARIABLES, allow_logic=allow_logic)
    except ExpressionError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600
        return None
    assert _in_language(tree, set(VARIABLES))
    assert {s.name for s in expr.free_symbols} <= set(VARIABLES)
    assert not expr.has(sp.zoo, sp.nan, sp.oo, sp.I)
    return expr


@pytest.mark.parametrize("text", PAYLOADS)
def test_payloads_are_refused_and_run_nothing(text):
    with pytest.raises(ExpressionError):
        parse_expression(text, VARIABLES)
    with pytest.raises(ActivationError):
        activations.get_activation(text)
    assert not CANARY.exists()


_TOKENS = ["u", "rho", "1", "2.5", "1e-3", "9", "+", "-", "*", "/", "**", "^", "(", ")", ",", " ",
           "sin", "exp", "log", "Max", "Heaviside", "Piecewise", "pi", "E", "<", ">=", "and", "or",
           "not", "True", "'", '"', ".", "[", "]", "_", "__import__", "os", "system", "open",
           f"'{CANARY}'", "lambda", ":", "=", "\\", "\n", "#", "0x1f", "1j", "\x00", "é", "ｕ"]


@settings(max_examples=600)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30).map("".join))
def test_token_soup_yields_a_tree_in_the_language_or_the_error(text):
    _check(text)
    _check(text, allow_logic=True)
    assert not CANARY.exists()


@settings(max_examples=300)
@given(st.text(max_size=80))
def test_arbitrary_text_yields_a_tree_in_the_language_or_the_error(text):
    _check(text)
    assert not CANARY.exists()


@pytest.mark.parametrize("text,expected", [
    ("sin(3*u)", sp.sin(3 * VARIABLES["u"])),
    ("1e-3*u", sp.Float("0.001") * VARIABLES["u"]),
    ("2^3*u", 8 * VARIABLES["u"]),                       # ^ has the precedence of **
    ("-u**2", -VARIABLES["u"] ** 2),
    ("Max(u, cos(u))", sp.Max(VARIABLES["u"], sp.cos(VARIABLES["u"]))),
    ("Piecewise((u, u > 0), (0, True))", sp.Piecewise((VARIABLES["u"], VARIABLES["u"] > 0), (0, True))),
    ("Heaviside(u, 0.5)", sp.Heaviside(VARIABLES["u"], sp.Float("0.5"))),
    ("rho**256", VARIABLES["rho"] ** 256),
])
def test_the_language_builds_the_expected_expression(text, expected):
    assert parse_expression(text, VARIABLES) == expected


def test_statements_with_logic_only_where_allowed():
    names = ["lambda_bar", "d"]
    got = parse_expression("lambda_bar < 0 and d > 3", names, allow_logic=True)
    lb, d = sp.Symbol("lambda_bar"), sp.Symbol("d")
    assert got == sp.And(lb < 0, d > 3)
    assert parse_expression("not (1 < d <= 4) or lambda_bar != 1", names, allow_logic=True) == \
        sp.Or(sp.Not(sp.And(sp.Lt(1, d), d <= 4)), sp.Ne(lb, 1))
    with pytest.raises(ExpressionError, match="comparison"):
        parse_expression("lambda_bar < 0", names)


def test_error_names_the_offending_piece_on_one_line():
    with pytest.raises(ExpressionError, match="unknown function 'len'"):
        parse_expression("u+len(u)", VARIABLES)
    with pytest.raises(ExpressionError, match="attribute"):
        parse_expression("u.real", VARIABLES)
    with pytest.raises(ExpressionError, match="string"):
        parse_expression("exp('u')", VARIABLES)
    with pytest.raises(ExpressionError, match="exponent"):
        parse_expression("rho**(9**9**9)", VARIABLES)
    with pytest.raises(ExpressionError, match="too long"):
        parse_expression("u+" * 50_000 + "u", VARIABLES)


# ----------------------------------------------------------------- generated code
def test_printer_refuses_foreign_symbols():
    printer = bridge._printer("numba", {"u"})
    assert printer.doprint(sp.sin(activations.u)) == "math.sin(u)"
    with pytest.raises(DerivationError):
        printer.doprint(sp.Symbol("u\nimport os\nos.system('id')") + 1)
    with pytest.raises(Exception):
        printer.doprint(sp.besselj(0, activations.u))


def test_tampered_cache_file_is_replaced_before_import(tmp_path, monkeypatch):
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path / "cache"))
    act = activations.get_activation("u*tanh(u) + 0.125")
    key_files = []
    phi, _ = act.numba_pair
    assert phi(1.0) == pytest.approx(float(sp.tanh(1)) + 0.125)
    key_files = list((tmp_path / "cache" / "activations").glob("act_*.py"))
    assert len(key_files) == 1
    good = key_files[0].read_text()
    key_files[0].write_text(f"open({str(CANARY)!r}, 'w').write('pwned')\n" + good)
    activations._compiled_pair.cache_clear()
    activations._parse.cache_clear()
    phi, _ = activations.get_activation("u*tanh(u) + 0.125").numba_pair
    assert not CANARY.exists()
    assert key_files[0].read_text() == good
    assert phi(1.0) == pytest.approx(float(sp.tanh(1)) + 0.125)
    assert oct((tmp_path / "cache" / "activations").stat().st_mode & 0o777) == oct(0o700)


def test_cache_folder_of_another_user_or_writable_by_others_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path / "c"))
    outputs.cache_folder("activations")
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(OutputError, match="another user"):
        outputs.cache_folder("activations")
    monkeypatch.undo()
    monkeypatch.setenv("SSSN_VERIFY_CACHE", str(tmp_path / "c"))
    os.chmod(tmp_path / "c" / "activations", 0o777)
    with pytest.raises(OutputError, match="writable by other users"):
        outputs.cache_folder("activations")
