"""Parameters and activations: validation and parsing."""
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st

from sssn_verify import ActivationError, ModelParams, ParameterError, get_activation, registry_names
from sssn_verify.activations import u


@pytest.mark.parametrize("field,value", [
    ("d", 1), ("d", 2.5), ("n_tokens", 0), ("horizon", 0.0), ("horizon", -1.0), ("beta", -0.1),
    ("sigma_w", -1.0), ("sigma_b", float("nan")), ("sigma_a", float("inf")), ("d", "three"),
])
def test_invalid_parameters_name_the_parameter(field, value):
    with pytest.raises(ParameterError) as err:
        ModelParams(**{field: value})
    assert field in str(err.value)


def test_both_pre_activation_variances_zero_is_rejected():
    with pytest.raises(ParameterError, match="sigma_w"):
        ModelParams(sigma_w=0.0, sigma_b=0.0)


def test_attention_matrices_are_checked():
    with pytest.raises(ParameterError, match="Q"):
        ModelParams(d=3, Q=np.eye(2))
    with pytest.raises(ParameterError, match="V"):
        ModelParams(d=2, V=[[np.nan, 0], [0, 1]])
    assert not ModelParams(V=0.0).attention_on
    assert ModelParams().attention_on


@pytest.mark.parametrize("name", registry_names())
def test_every_registry_entry_parses_and_evaluates(name):
    act = get_activation(name)
    x = np.linspace(-2, 2, 7)
    vals = act.numpy(x)
    assert vals.shape == x.shape and np.all(np.isfinite(vals))
    assert [act.numba_phi(v) for v in x] == pytest.approx(list(vals), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("spec,expected", [
    ("leaky_relu:0.1", sp.Piecewise((u, u >= 0), (u / 10, True))),
    ("sin:3", sp.sin(3 * u)),
    ("sin(3*u)", sp.sin(3 * u)),
    ("u*erf(u)", u * sp.erf(u)),
])
def test_spec_syntax(spec, expected):
    assert sp.simplify(get_activation(spec).expr - expected) == 0


@pytest.mark.parametrize("spec", ["relu:1", "foo", "sin(x)", "f(u)", "", "leaky_relu:nan", "1/0*u", "u+"])
def test_bad_activation_specs_raise(spec):
    with pytest.raises(ActivationError):
        get_activation(spec)


@given(st.floats(-5, 5, allow_nan=False))
def test_numba_derivative_matches_finite_difference(x):
    act = get_activation("gelu")
    h = 1e-6
    fd = (act.numba_phi(x + h) - act.numba_phi(x - h)) / (2 * h)
    assert math.isclose(act.numba_dphi(x), fd, rel_tol=1e-6, abs_tol=1e-8)


def test_jump_activations_are_flagged():
    assert get_activation("heaviside").has_jump and get_activation("sign(u)").has_jump
    assert not get_activation("relu").has_jump
