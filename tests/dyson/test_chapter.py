"""The dyson chapter runs at quick scale and its glued agreement figures hold."""

import math

import pytest

from _chapter import assert_fails_in_first_cells, assert_quick_runtime, glued_fixture

glued = glued_fixture("04_dyson")


@pytest.mark.slow
def test_chapter_agreement_figures(glued):
    g = glued
    # q = E tanh^2(w.x) of the teacher's first layer, a quadrature (Monte Carlo check in the unit tests)
    assert abs(g["q_first_layer"] - 0.3437) < 1e-3
    # Feature histograms: the chi^2 mixture of eq. (2.21) within 0.06 in total variation
    # (50 bins, ~5e5 correlated samples per histogram: statistical TV ~0.01, plus the
    # finite n1 = 32 of the mixture's law-of-large-numbers step), and closer than the
    # Gaussian form of eq. (2.21) itself
    assert g["fig1_tv_mix_max"] < 0.06
    assert g["fig1_tv_mix_max"] < g["fig1_tv_gauss_max"]
    assert 0.4 < g["peak_055"] < 0.6  # root of phi = tanh(1.1 phi)
    # Initial spectrum vs Marchenko-Pastur: KS distance below the n2^(-2/3)/2 edge smearing
    assert g["mp_ks"] < 16 ** (-2 / 3) / 2
    assert abs(g["mp_xplus_8"] - 0.0455) < 1e-4
    # The loss transition at 1/sigma_w = 8 lies at T ~ 1 (paper: "at T ~ 1"), within a factor 4
    assert 0.25 < g["T_transition_loss"] < 4.0
    # The SDE integration is converged (dt vs dt/2 on the same paths)
    assert g["sde_strong_max"] < 0.01
    # Jammed phase: nothing moves, SDE and SGD agree to the statistical error
    assert g["sde_z_jammed"] < 3
    # Ordered phase: the one-particle SDE tracks the measured spacing within 4 combined s.e.
    assert g["sde_z_late_ordered"] < 4
    # Linear scaling rule at low T: paired differences within 3 standard errors
    assert g["lsr_z_loss"] < 3 and g["lsr_z_S"] < 3
    # ... and broken at T = 1 (eps up to 16): ln S differs by more than 0.5 between batch sizes
    assert g["lsr_hot_dlogS"] > 0.5
    # Level repulsion at t = 0 (Wishart = GOE locally): closer to Wigner than a poor unfolding allows
    assert g["wigner_ks_init"] < 0.1
    assert g["pd_diverged"] == 0 and g["pd_models"] > 0
    assert math.isfinite(g["paper_hours"])


@pytest.mark.slow
def test_chapter_runtime_at_quick_scale(glued):
    assert_quick_runtime(glued)


def test_bad_parameter_fails_in_the_first_cells(tmp_path):
    assert_fails_in_first_cells("04_dyson", tmp_path, {'batch': 0},
                                r"batch \(mini-batch size \|B\|\) must be an integer >= 1; got 0")
