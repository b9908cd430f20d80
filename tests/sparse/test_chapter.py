"""The sparse chapter runs at quick scale and its glued figures hold."""

import pytest

from _chapter import assert_fails_in_first_cells, assert_quick_runtime, glued_fixture

glued = glued_fixture("05_sparse")


@pytest.mark.slow
def test_two_matrix_transition(glued):
    g = glued
    # d = 2 has no transition (paper, Fig. 1): with 16 runs per m, at most a quarter of
    # failures at any m (a real transition would give 0 below m_c).
    assert g["d2_success_min"] >= 0.75
    # m_c grows with d: the fitted slope is positive by more than 3 standard errors.
    assert g["mc_slope"] > 3 * g["mc_slope_se"]
    # ... and is of the order of the counting argument's 2d (outputs only): prefactor of
    # order one, here between 1/2 and 2 (quick data: 0.85 to 1.3).
    assert 0.5 <= g["mc_over_2d_min"] <= g["mc_over_2d_max"] <= 2.0
    # the paper's mixed count m = d lies below every measured m_c
    assert g["mc_over_d_min"] > 1.0
    # First-order transition: final Hamming distances are bimodal; fewer than 10% of the
    # runs with d >= 3 end in the gap (0.05, 0.25) (quick data: about 1%).
    assert g["gap_fraction"] < 0.10
    # m_c does not depend on N: the N's agree within 3 combined standard errors.
    assert g["mc_N_max_z"] < 3


@pytest.mark.slow
def test_mismatched_and_one_matrix(glued):
    g = glued
    # Near m_c, partly recovered students are common for d_t = 2 (continuous transition)
    # and rare for d_t = 4 (discontinuous), as in the paper.
    assert g["mm_gap_small_dt"] > g["mm_gap_large_dt"]
    # One matrix: m_c / d ~ N^alpha with alpha = 1 (counting argument), within 3 standard
    # errors of the fit plus 0.2 for the pre-asymptotic sizes N = 16..64.
    assert abs(g["erf_exponent"] - 1) < 3 * g["erf_exponent_se"] + 0.2


@pytest.mark.slow
def test_paper_cost_is_measured(glued):
    g = glued
    # The fitted cost model (fixed cost + cost per unit of work) reproduces every timed
    # run within a factor 2 (residual < 1), the accuracy a cost estimate needs; timings
    # on a loaded 2-core machine fluctuate by tens of percent (quick data under load: 0.46).
    assert g["cost_fit_residual"] < 1.0
    assert g["paper_hours_total"] > 0


@pytest.mark.slow
def test_chapter_runtime_at_quick_scale(glued):
    assert_quick_runtime(glued)


def test_bad_parameter_fails_in_the_first_cells(tmp_path):
    assert_fails_in_first_cells("05_sparse", tmp_path, {'ds': [0, 3]},
                                r"d \(teacher non-zeros per row and column\) must be an integer >= 1; got 0")
