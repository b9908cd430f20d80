"""The synthesis chapter (is the batch size a temperature?) runs at quick scale and its glued
measurements hold."""

import pytest

from _chapter import assert_fails_in_first_cells, glued_fixture

glued = glued_fixture("06_batchtemp")


def num(g, key):
    return float(g[key])


def brackets(g, name, value):
    """value lies in the measured critical batch's 68 % interval, widened by its own width on each
    side (a 68 % interval misses the truth one time in three)."""
    lo, hi = num(g, f"{name}_bc_lo"), num(g, f"{name}_bc_hi")
    return lo - (hi - lo) <= value <= hi + (hi - lo)


@pytest.mark.slow
def test_committee_follows_the_exact_finite_n_deviation(glued):
    g = glued
    # statistical: every batch size within 3.5 standard errors of the exact finite-N theory
    # (eight comparisons, 16 runs each; quick data: at most 1.9)
    assert g["committee_max_z"] < 3.5
    assert brackets(g, "committee", num(g, "committee_bc_grid"))


@pytest.mark.slow
def test_large_batches_break_where_the_recursion_says_and_grow_with_d(glued):
    g = glued
    # ratio-of-medians intervals over 256 paired runs; the largest batch is excluded (one step
    # moves the overlap by its own size there; quick data: 0.67 elsewhere)
    assert g["largebatch_max_z_but_last"] < 3
    assert brackets(g, "largebatch", num(g, "largebatch_bc_grid"))
    # the d-exponent of the critical batch against the theory's own over the same d: statistical,
    # 3 standard errors of the weighted fit (quick data: 0.93 +- 0.23 against 1.07)
    assert abs(num(g, "largebatch_exp") - num(g, "largebatch_exp_theory")) < 3 * num(g, "largebatch_exp_se")


@pytest.mark.slow
def test_multipass_break_is_the_step_not_the_noise(glued):
    g = glued
    assert g["dmft_max_z"] < 3.5  # paired ratios over 32 training sets, nine fractions
    # measured and predicted b_c agree to the grid's resolution (moving the grid of fractions
    # shifts the interpolated crossing by about 0.02)
    assert abs(num(g, "dmft_bc3") - num(g, "dmft_bc_theory3")) < 0.02
    # the control: noiseless gradient descent at the matched step breaks at the same b_c
    assert abs(num(g, "dmft_bc_gd") - num(g, "dmft_bc_theory3")) < 0.02
    # while the noise's own share stays small at every b (quick data 0.5-0.7 %)
    assert num(g, "dmft_noise_max") < 2.0


@pytest.mark.slow
def test_multipass_noise_is_a_temperature(glued):
    g = glued
    # the fluctuation-dissipation slope meets the white batch noise at the smallest step (3 s.e.
    # over 8 DMFT solutions) and exceeds it at the largest by more than 2 combined s.e.
    assert g["fdt_small_z"] < 3
    assert g["fdt_step_z"] > 2


@pytest.mark.slow
def test_dyson_minimum_breaks_at_the_stability_batch(glued):
    g = glued
    # the start-at-teacher control and the stability theory overlap: the measured 68 % interval
    # meets the theory's spread over teachers (quick data: 24.4-27.4 against 15-25)
    assert num(g, "dyson_bc_rep_lo") <= num(g, "dyson_bc_theory_hi")
    assert num(g, "dyson_bc_rep_hi") >= num(g, "dyson_bc_theory_lo")
    # beyond B_c the trained networks sit at the step's edge of stability (eps lambda_max / 2 near 1;
    # quick data 0.99), far from it at |B| = 1 (quick data 0.054)
    assert num(g, "dyson_step_sharp_last") > 0.8
    assert num(g, "dyson_step_sharp_first") < 0.2
    # the loss leaves the rule before the instability: positive beyond its 68 % interval where
    # every teacher is still stable (quick data 0.065, 0.04-0.09)
    assert num(g, "dyson_dev_stable_lo") > 0


@pytest.mark.slow
def test_sparse_teacher_breaks_at_a_step_proportional_to_one_over_lambda(glued):
    g = glued
    # below the stability batch: bootstrap half-widths of medians over 32 paired runs
    assert g["sparse_max_z_below"] < 3
    assert brackets(g, "sparse", num(g, "sparse_bc_grid"))
    # m_c against lambda: the fitted exponent within 3 standard errors of 1
    assert g["sparse_alpha_z"] < 3


@pytest.mark.slow
def test_the_five_critical_batches_against_their_predictions(glued):
    g = glued
    # measured over predicted critical batch: within a factor 3 in every model (quick data
    # 0.49-1.1; the Dyson loss leaves the rule at about half the stability batch)
    assert 1 / 3 < num(g, "ratio_min") <= num(g, "ratio_max") < 3


def test_bad_temperature_fails_in_the_first_cells(tmp_path):
    # K x = 2 * 1.2 > 2: no batch size is stable
    assert_fails_in_first_cells("06_batchtemp", tmp_path, {"committee_x": 1.2}, "must be < 2")
