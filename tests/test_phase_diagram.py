"""The shared phase-diagram figure against the hand-derived ReLU edge rate.

Oracle (the conventions of docs/mathematics.md, by hand): for ReLU lambda_1 = -(sa^2/4)(2 sw^2 + (d-1) sb^2) < 0 and,
at beta = 0 where the sup of L2 f / f sits at the rho -> 1 edge, sign(lambda_bar) =
sign((sa^2/2)(2 sw^2 - (d-3) sb^2)).  So the region code is 3 (both negative) iff the edge
value is negative and 1 (lambda_1 only) otherwise; checked at grid points where the edge
value is at least MARGIN away from 0.
"""
import numpy as np
import pytest
from matplotlib.figure import Figure

from sssn_verify import phase_diagram_figure
from sssn_verify.errors import ParameterError
from sssn_verify.phase_diagram import axis_values, sign_regions

DS = np.arange(2, 10)
SBS = np.linspace(0.0, 2.0, 9)
BASE = dict(d=8, beta=0.0, sigma_w=1.0, sigma_b=0.0, sigma_a=1.0)
MARGIN = 0.2


def edge_oracle(d, sb, sw=1.0, sa=1.0, three=3):
    return sa**2 / 2 * (2 * sw**2 - (d - three) * sb**2)


def drawn_regions(fig):
    """The region codes as drawn (the pcolormesh), shape (len(SBS), len(DS))."""
    mesh = fig.axes[0].collections[0]
    return np.asarray(mesh.get_array()).reshape(len(SBS), len(DS))


def expected_and_mask(three=3):
    D, SB = np.meshgrid(DS, SBS)
    edge = edge_oracle(D, SB, three=three)
    return np.where(edge < 0, 3, 1), np.abs(edge) > MARGIN


def test_relu_figure_regions_follow_the_derived_edge_rate():
    import matplotlib.pyplot as plt
    fig = phase_diagram_figure(activation="relu", x="d", y="sigma_b", xs=DS, ys=SBS, point=(8, 1.0), **BASE)
    try:
        assert isinstance(fig, Figure)
        ax = fig.axes[0]
        assert ax.get_xlabel() == "d" and ax.get_ylabel() == "sigma_b" and ax.get_title()
        labels = ax.get_legend_handles_labels()[1] + [t.get_text() for t in ax.get_legend().get_texts()]
        assert any("derived boundary" in lab for lab in labels)
        assert any("current point" in lab for lab in labels)
        drawn = drawn_regions(fig)
    finally:
        plt.close(fig)
    expected, away = expected_and_mask()
    assert away.sum() >= 40                                  # most of the 72 points are tested
    np.testing.assert_array_equal(drawn[away], expected[away])
    np.testing.assert_array_equal(sign_regions("relu", "d", "sigma_b", DS, SBS, BASE), drawn)
    # the check discriminates: d-2 for d-3 in the oracle disagrees with the drawing somewhere
    wrong, away_wrong = expected_and_mask(three=2)
    assert np.any(drawn[away_wrong] != wrong[away_wrong])


def test_draws_into_a_given_axes_and_rejects_bad_axes():
    fig = Figure()
    ax = fig.add_subplot()
    out = phase_diagram_figure(activation="erf", d=6, x="sigma_w", y="sigma_b", xs=np.linspace(0.5, 1.5, 3),
                               ys=np.linspace(0.0, 1.0, 3), point=dict(sigma_w=1.0, sigma_b=0.5), ax=ax)
    assert out is fig and ax.get_xlabel() == "sigma_w" and ax.get_ylabel() == "sigma_b"
    with pytest.raises(ParameterError):
        phase_diagram_figure(x="d", y="d")
    with pytest.raises(ParameterError):
        phase_diagram_figure(x="depth", y="sigma_b")
    with pytest.raises(ParameterError):
        axis_values("sigma_w", (1.0, 0.5))
    with pytest.raises(ParameterError):
        axis_values("d", (3.2, 3.8))
