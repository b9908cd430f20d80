"""The DMFT chapter runs at quick scale and its glued agreement figures hold."""

import pytest

from _chapter import assert_fails_in_first_cells, glued_fixture

glued = glued_fixture("03_dmft")


@pytest.mark.slow
def test_chapter_agreement_figures(glued):
    g = glued
    # DMFT vs simulations, one deviation per curve, time window and variable (run averages,
    # Welch dof; every curve with its own seeds): the largest below the 99.9% quantile of
    # the largest of that many |t| variables (a correct chapter fails it about 0.1% of the
    # time per figure if the windows were independent; less, as they are positively
    # correlated within a curve). Sections 1 to 4.
    for fig in ("two", "three", "reg", "reg_fd", "tau"):
        assert g[f"{fig}_max_z"] < g[f"{fig}_z999"], fig
        # rms within a factor 1.6 of that of independent t variables: the windows of one
        # curve share its runs, which widens the spread of the rms (5 windows per curve).
        # The regulariser figure at d = 400 is read on its late window only: with 128 training
        # sets its middle windows resolve the finite-d spread of the escape (measured 1.68 over
        # all windows), which the escape section measures and which shrinks with d; the same
        # curves at the larger d (reg_fd) are held to all windows.
        rms = g["reg_rms_late"] if fig == "reg" else g[f"{fig}_rms_z"]
        assert rms < 1.6 * g[f"{fig}_rms_expected"], fig
    # The DMFT's own Monte Carlo band must be small against the differences the figure is
    # read for (between batch sizes, conv_gap_b): below a tenth of it.
    assert 0 < g["two_dmft_se_eg"] < g["conv_gap_b"] / 10
    # Section 1's text: the final training loss falls as b grows, and the simulations pick
    # the same b for the lowest final test error as the DMFT (1 = holds).
    assert g["two_loss_order"] == 1 and g["two_eg_best_agree"] == 1
    # Section 2's bias checks: paired finite-sample and response-subset changes of the late
    # loss and eps_g below the seed-to-seed spread of one solve (the text says "well below");
    # the halved step moves the simulations (paired training sets) by less than a fifth of
    # the standard error of their comparison with the DMFT at d, so it cannot decide it.
    for v in ("loss", "eg"):
        for name in ("samples", "resp"):
            assert abs(g[f"bias_{name}_{v}"]) < g[f"dmft_{v}_spread"], (name, v)
    assert g["bias_eta_frac"] < 0.2
    # the most significant paired change is below half of one solve's spread ("a fraction")
    assert g["bias_max_frac"] < 0.5
    # Simulations vs the 4 n_samples DMFT at every d of the sweep (3 d's against one DMFT
    # reference): below 3.5 standard errors (P(max of 3 |t| > 3.5) < 1% at these dof).
    assert g["gap_loss_max_z"] < 3.5 and g["gap_eg_max_z"] < 3.5
    # Finite d (the escape of three-cluster SGD over spread_ds, 128 training sets each). The
    # text says: the spread of |m| before the escape falls as d^(-1/2): the fitted slope within
    # 3 standard errors plus 0.15 (sizes far from asymptotic; measured -0.54 at quick) of -1/2;
    # the largest deviation from the DMFT at fixed times shrinks from the smallest to the largest
    # d; the DMFT averaged over the runs' escape delays meets the runs at the time of the largest
    # gap at d (paired residual within 3 standard errors).
    assert abs(g["spread_m_sd_slope"] + 0.5) < 3 * g["spread_m_sd_slope_se"] + 0.15
    assert g["spread_raw_z_hi"] < g["spread_raw_z_lo"]
    assert g["spread_top_resid_z"] < 3
    # The median escape does not move with d: the median at the largest d lies inside the 95%
    # bootstrap interval of the one at the smallest, widened by the grid step (0.2) for the
    # interpolated crossing.
    assert g["spread_esc_median_lo_lo"] - 0.2 <= g["spread_esc_median_hi"] <= g["spread_esc_median_hi_lo"] + 0.2
    # The fluctuation-dissipation temperature scales as eta (1 - b): the fitted exponent of b
    # within 3 standard errors plus 0.1 (the discrete step's O(eta) excess) of 0, and more than
    # 5 standard errors from the -1 of eta (1 - b)/b; the kicked-twin simulations' slope within
    # 3 combined standard errors of the DMFT's.
    assert abs(g["fdt_exp_b"]) < 3 * g["fdt_exp_b_se"] + 0.1
    assert abs(g["fdt_exp_b"] + 1) > 5 * g["fdt_exp_b_se"]
    assert abs(g["fdt_exp_eta"] - 1) < 3 * g["fdt_exp_eta_se"] + 0.1
    assert g["kick_T_z"] < 3
    assert g["C_gap_max_z"] < 3
    # The step dependences: Welch t test at the 0.1% level (the DMFT's dmft_seeds solves set
    # the dof; 24 seeds at quick scale gave -0.0576 +- 0.0012 against the simulations'
    # -0.0588 +- 0.0002). The text reads the glued p as it is: a p of a few per cent is
    # "not a clean agreement", not a resolved disagreement.
    assert g["C_step_p"] > 1e-3
    # Section 3: on the b t clock the b curves end within a fifth of their spread at equal
    # t; the mini-batch lowers the minimum more than ten times less than the largest ridge.
    assert g["reg_end_spread_bt"] < g["reg_end_spread_t"] / 5
    assert g["reg_min_drop_lam"] > 10 * abs(g["reg_min_drop_b"])
    # Noise or step (three-cluster, SGD at (b, eta) against gradient descent at step b eta,
    # on the b t clock). The earlier escape of the smallest b against gradient descent at
    # the full step is resolved: the 95% bootstrap interval of the difference of medians
    # lies below zero. The matched step accounts for at least half of it: the whole 95%
    # interval of SGD minus the matched step lies within half that shift of zero (DMFT, whose
    # escape is not blurred by finite d).
    g_lo = {k[len("ms_th_lo_"):]: v for k, v in g.items() if k.startswith("ms_th_lo_")}
    assert g_lo["shift_hi"] < 0
    assert max(abs(g_lo["esc_diff_lo"]), abs(g_lo["esc_diff_hi"])) < abs(g_lo["shift"]) / 2
    # The minimum at the largest b < 1 (interior there, 1 = holds): SGD's minimum is lower
    # than that of gradient descent at the full step by more than 3 standard errors, and the
    # gradient descent at the matched step lies lower than at the full step by more than 3
    # combined standard errors (independent curves): the lower minimum is the step.
    g_hi = {k[len("ms_th_hi_"):]: v for k, v in g.items() if k.startswith("ms_th_hi_")}
    assert g_hi["min_interior"] == 1
    assert g_hi["min_shift"] < -3 * g_hi["min_shift_se"]
    assert g_hi["min_full"] - g_hi["min_gd"] > 3 * (g_hi["min_full_se"] ** 2 + g_hi["min_gd_se"] ** 2) ** 0.5
    # The text says the theory resolves a rise of the minimum by the noise (SGD minus the
    # matched step positive): more than 2 standard errors (Welch dof about 20).
    assert g_hi["min_diff"] > 2 * g_hi["min_diff_se"]
    # Persistent SGD -> SGD: the gap shrinks monotonically as tau decreases (dt = eta/2 and
    # the discrete dt = eta), and at tau = eta/b (dt = eta/2) it is below a third of the
    # longest-persistence gap. (At dt = eta and tau = eta/b the gap is zero by construction,
    # not asserted; test_agreement checks that case in distribution.)
    assert g["tau_monotone"] == 1 and g["tau_monotone_discrete"] == 1
    assert g["tau_gap_smallest"] < g["tau_gap_largest"] / 3
    # Square loss: DMFT vs exact is Monte Carlo error only (dt = eta): at n_samples = 6000,
    # ~4 standard errors of m and C (about 0.5% of values of order 1, see test_theory).
    assert g["square_dmft_vs_exact"] < 0.025
    # GD at d = 400 vs the exact solution: within the 95% quantile of the largest of ~16
    # |t| deviations with 63 degrees of freedom (about 3.0), plus 1 for the O(1/d) bias.
    assert g["square_sim_max_z"] < 4.0
    # The solver's numerical error is below the plotted differences between batch sizes.
    assert g["conv_gap_dt"] < g["conv_gap_b"] / 3
    assert g["conv_gap_ns"] < g["conv_gap_b"] / 3


def test_bad_parameter_fails_in_the_first_cells(tmp_path):
    assert_fails_in_first_cells(
        "03_dmft", tmp_path, {"two_bs": [1.5]},
        r"b \(mean batch fraction\) must be a finite number in \(0.0, 1.0\]; got 1.5")


def test_sweep_without_the_chapters_d_fails_in_the_first_cells(tmp_path):
    assert_fails_in_first_cells(
        "03_dmft", tmp_path, {"gap_ds": [200, 1000]},
        r"gap_ds must contain d = 400")


def test_three_cluster_fractions_without_sgd_fail_in_the_first_cells(tmp_path):
    # only b = 1: nothing for the matched-step control (noise or step?) to compare
    assert_fails_in_first_cells(
        "03_dmft", tmp_path, {"three_bs": [1.0]},
        r"three_bs must contain a batch fraction b < 1")
