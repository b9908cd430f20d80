"""The dyson chapter runs at quick scale and its glued agreement figures hold."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from _chapter import assert_fails_in_first_cells, glued_fixture

glued = glued_fixture("04_dyson")


def _kept():
    """The recorded numbers of the kept paper-scale run (book/paper_runs/dyson)."""
    return json.loads((Path(__file__).resolve().parents[2] / "book" / "paper_runs" / "dyson" / "glue.json").read_text())


def _q_by_dblquad():
    """q = E tanh^2(w.x), w ~ N(0, I/3), x ~ N(0, I_3), computed independently of the library:
    given x, w.x ~ N(0, |x|^2/3) and |x|^2 ~ chi^2_3 (a 2-D integral by scipy's dblquad)."""
    f = lambda g, s: stats.chi2.pdf(s, 3) * stats.norm.pdf(g) * np.tanh(np.sqrt(s / 3) * g) ** 2  # noqa: E731
    return integrate.dblquad(f, 0, 60, -10, 10, epsabs=1e-9)[0]


@pytest.mark.slow
def test_chapter_agreement_figures(glued):
    g = glued
    # q of the teacher's first layer, rounded to 4 digits in the chapter
    assert abs(g["q_first_layer"] - _q_by_dblquad()) < 1e-4
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
    # Phase-diagram title and text: exactly the contour levels reached are drawn (basis of X, the criterion)
    assert g["criterion_levels_drawn"] == sum(lv <= g["criterion_max_fraction"] for lv in (0.68, 0.95, 0.997))
    # The authors' recipe (dyson.published_criterion) has the shape of the paper's Fig. 8: a cold side
    # where at least 68% of the models pass, a hot side below 68%, a crossing bracketed by its bootstrap
    assert g["pub_cold_min"] >= 0.68 > g["pub_hot_fraction"]
    assert g["T_transition_pub_lo"] <= g["T_transition_pub"] <= g["T_transition_pub_hi"]
    assert g["T_transition_kd_lo"] <= g["T_transition_kd"] <= g["T_transition_kd_hi"]
    # ... and at T >= 1 its verdict is the sign of its V_S (the text's finding): the same for >= 95% of the
    # models there (it must hold for every model with V_S < 0 and K_S >= 0; >= 95% leaves one model in 20
    # with V_S > 0 at the smallest T >= 1 that could still pass on its drift)
    assert g["pub_hot_same_as_negV"] >= 0.95
    # Random eigenvector signs: the pooled hot fraction varies over the draws like a fair coin per model
    # (sd within 35% of sqrt(1/4n): the sd of 64 draws has a relative error of 9%, so 35% is ~4 of them)
    assert 0.65 < g["pub_draws_hot_sd"] / g["pub_draws_hot_binom_sd"] < 1.35
    assert g["pub_draws_hot_lo"] < 0.5 < g["pub_draws_hot_hi"]
    # In the basis of X, the stationarity argument's measurement: on the cold side the spectrum has widened
    # beyond the initial bound, S(t_f) > S_max(0), and further the longer the training
    assert g["spacing_over_bound_cold"] > 1 and g["crit_over_bound_last"] > g["crit_over_bound_first"]
    # The descending reading does not separate the phases (the text: "not a convergence test"): at the
    # coldest T its worst column over the whole disorder axis, jammed columns included, passes as often
    # as the ordered cold side of the scan, to within 0.05 (one model in 16-20)
    assert g["criterion_kd_coldest_min"] >= g["criterion_kd_cold_fraction"] - 0.05
    # Stationarity argument: late in the ordered run the drifts of S cancel on average (within 30% of
    # |K_S|, against K_S's own sign changes), and S has widened beyond its start (factor > 2)
    assert abs(g["drift_balance_ordered"]) < 0.3
    assert g["spread_growth_ordered"] > 2
    # The loss transition at 1/sigma_w = 8 lies at T ~ 1 (paper: "at T ~ 1"), within a factor 4,
    # and the bootstrap range brackets the estimate
    assert 0.25 < g["T_transition_loss"] < 4.0
    assert g["T_transition_loss_lo"] <= g["T_transition_loss"] <= g["T_transition_loss_hi"]
    # The text: the kept paper-scale run (100 models on the same temperatures) puts the same estimator
    # outside this run's bootstrap range, which resamples only the models (measured 0.905 against
    # 0.686-0.792): the estimate depends on the ensemble and the seeds, not only on the model
    assert not g["T_transition_loss_lo"] <= _kept()["T_transition_loss"] <= g["T_transition_loss_hi"]
    # The SDE integration is converged (dt vs dt/2 on the same paths)
    assert g["sde_strong_max"] < 0.01
    # Recording density: with ~7 times more coefficient records the ordered-phase gap in mean ln S falls
    # by more than 0.1 (measured: 0.60 -> 0.31). Margin: the same models and SDE seeds at each density,
    # only the SGD batches are redrawn; between 317 and 1119 records, where the density no longer
    # matters, that redraw moved the gap by 0.03 (0.31 vs 0.34), so 0.1 is three times that noise
    assert g["dens_ordered_max_dense"] < g["dens_ordered_max_sparse"] - 0.1
    # "Not all of it, and not only early in the run": at the densest records the ordered gap over the
    # second half stays above 0.1 in ln S (measured 0.25; the redraw of the batches moves it by ~0.03)
    assert g["dens_ordered_late_dense"] > 0.1
    # Hot phase, late: the exact Coulomb sum (B.3) in place of (B.5) shrinks the gap (the text's finding;
    # measured 0.45 -> 0.11, on the same ensemble and Brownian paths, so only the drift differs)
    assert abs(g["dens_hot_exact_late_dense"]) < g["dens_hot_late_dense"] - 0.1
    # The Ito drift moves the SDE towards the data (the text says so)
    assert g["sde_dlogS_ordered"] < g["sde_dlogS_noito_ordered"]
    # "Not the cause": neither the basis of K nor dropping the noise removes half of the gap
    assert g["sde_dlogS_kbasis_ordered"] > 0.5 * g["sde_dlogS_ordered"]
    assert g["sde_dlogS_nonoise_ordered"] > 0.5 * g["sde_dlogS_ordered"]
    # (B.5) overstates the late Coulomb drift, which is a minor share of |K_S| (text)
    assert g["coulomb_b5_ratio"] < 1 and g["coulomb_share"] < 0.3
    # Finite step: the early gap grows with eps at fixed T (|B| = 16 far off, > 0.5) and is small at
    # |B| = 1: within 0.15, 1.5 standard errors of the gap in mean ln S treated as unpaired (0.11 at
    # 16 models x 16 paths; the SDE paths start at their model's S(0), so the paired error is smaller)
    assert abs(g["sde_early_gap_B1"]) < 0.15
    assert g["sde_early_gap_B1"] < g["sde_early_gap_B4"] < g["sde_early_gap_B16"] and g["sde_early_gap_B16"] > 0.5
    # Full Dyson equation (Wishart-consistent coefficients): every level stays positive; halving dt moves
    # the medians by at most a fifth of their gaps to the data (the text: the gaps are not a step effect);
    # the text's "follows ... to within a factor e": every median gap in ln x below 1 (the explicit
    # scheme, without the Wishart structure, sent levels off by decades and fails this)
    assert g["dyson_min_x"] > 0
    for key in ("bottom", "mid", "top"):
        assert g[f"dyson_step_{key}"] <= g[f"dyson_gap_max_{key}"] / 5
        assert g[f"dyson_gap_max_{key}"] < 1
    # "The smallest level sinks below the measured one"
    assert g["dyson_gap_end_bottom"] > 0
    # Single levels of (4.3) against the recording density (dyson.sde_record_density(levels=...)). At the
    # sparsest density it is the same ensemble, records and SDE seed as the figure above: the same numbers
    for key in ("bottom", "mid", "top"):
        assert g[f"lev_{key}_end_sparse"] == g[f"dyson_gap_end_{key}"]
    # "For a level in the bulk the gap was the sparse sampling": the 8th level's sparse gaps are resolved
    # from zero (68% bootstrap interval above 0; measured 0.095 at t_f, 0.083 late) and the dense gaps lie
    # below those intervals (measured 0.03 and 0.031)
    for stat in ("end", "late"):
        assert g[f"lev_mid_{stat}_lo_sparse"] > 0
        assert g[f"lev_mid_{stat}_dense"] < g[f"lev_mid_{stat}_lo_sparse"]
    # "The smallest level keeps part of its gap ... with the sign of the sparse gap": the sparse gap is
    # resolved from zero, the dense one smaller but of the same sign (measured late: 0.43 -> 0.24)
    assert g["lev_bottom_late_lo_sparse"] > 0 and g["lev_bottom_end_lo_sparse"] > 0
    assert 0 < g["lev_bottom_late_kept"] < 1 and g["lev_bottom_end_dense"] > 0
    # "the widest intervals" are those of the largest level
    width = {k: g[f"lev_{k}_end_hi_dense"] - g[f"lev_{k}_end_lo_dense"] for k in ("bottom", "mid", "top")}
    assert width["top"] > max(width["bottom"], width["mid"])
    # Linear scaling rule at low T. The chapter reports the paired deviations from |B| = 1 per batch size
    # and states the verdict they support; a deviation within three standard errors is reported as "no
    # difference resolved", never as agreement (at the paper preset the same statistics are 9.2 and 25
    # s.e., p = 5e-4: a resolved failure at eps = 2, which the quick preset's eps <= 1/2 does not reach)
    resolved = max(g["lsr_z_loss"], g["lsr_z_S"]) > 3
    assert g["lsr_verdict"].startswith("the difference is resolved") == resolved
    assert g["lsr_verdict"].startswith("no difference is resolved") == (not resolved)
    assert g["lsr_z_loss"] == max(g["lsr_z_loss_B4"], g["lsr_z_loss_B16"])
    assert g["lsr_z_S"] == max(g["lsr_z_S_B4"], g["lsr_z_S_B16"])
    assert 0 < g["lsr_ks_p"] <= 1 and 0 < g["lsr_ks_loss"] <= 1
    # ... and broken at T = 1 (eps up to 16): ln S differs by more than 0.5 between batch sizes
    assert g["lsr_hot_dlogS"] > 0.5
    # Spacing ratio: at t = 0 the students' spectra are Wishart matrices: <r> within 3 s.e. of
    # the sampled 16 x 32 Wishart value; far (> 5 s.e.) above Poisson
    assert g["r_init_z_wishart"] < 3 and g["r_init_z_poisson"] > 5
    # The text says the ordered end state keeps some repulsion: > 3 s.e. above Poisson
    assert g["r_ordered_z_poisson"] > 3
    assert g["pd_diverged"] == 0 and g["pd_models"] > 0
    assert math.isfinite(g["paper_hours"])


@pytest.mark.slow
def test_long_column_at_the_paper_length(glued):
    g = glued
    # The stored long run (book/data/dyson_long_column.nc) reaches the paper's 1e5 epochs of 1000 steps
    assert g["long_epochs"] == 1e5
    # The ordered loss is still falling there: over the last decade it fell for so many of the cold
    # models (T <= 1/8) that a stopped loss (fall or rise with equal odds) is rejected at the 0.5% level
    assert g["long_fell_p"] < 0.005
    # The sign-invariant reading (basis of X) separates the two ends of the column at that length: the
    # models that pass at some record of the last decade, at T = 2^-5, 2^-3 against T = 2, 8 (16 models
    # each), differ by Fisher's exact test at the 0.1% level
    n = g["long_n_models"]
    cold = g["long_x_ever_T0"] + g["long_x_ever_T1"]
    hot = g["long_x_ever_T3"] + g["long_x_ever_T4"]
    assert stats.fisher_exact([[cold, 2 * n - cold], [hot, 2 * n - hot]], alternative="greater")[1] < 1e-3
    # The sign convention sets the recipe's hot plateau, not its line: at the paper's length the
    # sign-invariant descending reading crosses 68% within a factor 1.5 of the recipe (measured 0.41 and
    # 0.52 on five temperatures a factor 4 apart, so the two crossings lie in the same grid interval),
    # while at T = 8 it passes for none of the 16 models and the recipe for about half
    assert 1 / 1.5 < g["long_T_kd"] / g["long_T_pub"] < 1.5
    assert g["long_kd_hot"] == 0 and 0.2 < g["long_pub_hot"] < 0.8
    # The half-way temperature of the loss is robust to the training length: from 10 to 1e5 epochs it
    # moves by less than 15% (measured 0.89 -> 0.83, on the same models and temperatures)
    assert abs(math.log(g["long_Thalf_first"] / g["long_Thalf_last"])) < math.log(1.15)


def test_bad_parameter_fails_in_the_first_cells(tmp_path):
    assert_fails_in_first_cells("04_dyson", tmp_path, {'batch': 0},
                                r"batch \(mini-batch size \|B\|\) must be an integer >= 1; got 0")


@pytest.mark.slow
def test_published_contours_and_midpoint(glued):
    g = glued
    # The paper's reading of Fig. 8, "essentially all models converge" in the ordered phase (>= 95% pass the
    # recipe): pooled over the ordered grid points (96 networks at quick scale), the exact binomial 68%
    # interval lies below 0.95 (measured 0.81, 0.76-0.85)
    assert g["cap_pooled_n"] >= 48 and g["cap_pooled_hi"] < 0.95
    # ... and the 95% contour encloses fewer than half of the ordered points (measured 2 of 12; at the
    # measured pass rate 0.81 a point has all 8 of 8 networks passing with p = 0.19, so 12 points give
    # 2.2 +- 1.4: half of them is 2.7 sd away)
    assert g["cap95_ordered_inside"] < 0.5 * g["cap_n_ordered"]
    assert g["cap997_ordered_inside"] <= g["cap95_ordered_inside"] <= g["cap68_ordered_inside"] <= g["cap_n_ordered"]
    # Fig. 9's mask hides points where >= 68% pass the recipe but the loss is not ordered (measured 7 of the
    # 13 hidden points: the jammed corner, where T / sigma_W^2 is tiny; 4 leaves three for chance)
    assert g["mask_pass68_not_ordered"] >= 4
    assert abs(g["pub_line_top"] - 0.87) < 0.005 and abs(g["pub_jam_line"] - 1.41) < 0.005
    # The authors' midpoint T_c lies in the grid interval of the interpolated 68% crossing (the scan's grid
    # steps by 2: within a factor 2), and its bootstrap moves it to the hot side for more than a third of
    # the resamples
    # (measured 0.82 of 1000: s.e. 0.012, so 1/3 is far outside the noise). The point estimate itself has
    # no value when the hottest temperature passes by chance (16 networks on a plateau near one half: 11
    # or more, above 68%, pass with p ~ 0.1 per scan; machines whose arithmetic differs in the last bits
    # give other chaotic hot runs, and one of them gave 14 of 16), and the text then says why
    if g["T_mid_pub_short"] != "no value":
        assert abs(math.log2(g["T_mid_pub"] / g["T_transition_pub"])) < 1
    else:
        assert g["pub_hottest_pass"] > 0.68 and g["T_mid_pub_text"].startswith("no value: the hottest")
    assert g["T_mid_hot"] > 1 / 3 and g["T_mid_same"] + g["T_mid_hot"] <= 1.0 + 1e-9


@pytest.mark.slow
def test_batch_resolved_edge(glued):
    """Is T = eps/|B| the temperature? The paired scans at |B| = 1, 4, 16, 64 (equal T, equal tau)."""
    g = glued
    Bs = [int(b) for b in g["tc_batches_text"].split(", ")]
    for b in Bs:
        for name in ("T_level", "T_onset"):  # the bootstrap intervals bracket their estimates
            assert g[f"tc_{name}_lo_B{b}"] <= g[f"tc_{name}_B{b}"] <= g[f"tc_{name}_hi_B{b}"]
    # "neither T nor eps stays fixed": at one loss level the edge falls in T from the smallest to the largest
    # batch (the paired 68% interval of the ratio at |B| = 64 lies below 1; measured 0.12-0.17, the
    # estimate 0.14: 1 is far outside its bootstrap spread) and rises in eps
    assert g[f"tc_T_level_ratio_hi_B{Bs[-1]}"] < 1
    assert g[f"tc_eps_level_B{Bs[-1]}"] > g[f"tc_eps_level_B{Bs[0]}"]
    # the verdict sentence states what the paired ratios' intervals say, batch by batch
    holds = [b for b in Bs[1:] if g[f"tc_T_level_ratio_lo_B{b}"] <= 1 <= g[f"tc_T_level_ratio_hi_B{b}"]]
    assert g["tc_verdict"].startswith("the boundary is the same") == bool(holds)
    # the theory (eq-dyson-tc-batch): T_c(|B|) falls with the batch, below its Langevin limit T_c(0), and
    # its learning rate T_c |B| rises towards, and stays below, the step bound 2/lambda_max (per teacher
    # T_c(eps) = 0 beyond it; the medians over teachers keep the order to rounding: 5 % for the 2 digits glued)
    tc = [g[f"tc_Tc_theory_B{b}"] for b in Bs]
    assert all(a > b for a, b in zip(tc[:-1], tc[1:])) and tc[0] < g["tc_Tc0"]
    eps = [g[f"tc_eps_theory_B{b}"] for b in Bs]
    assert all(a < b * 1.05 for a, b in zip(eps[:-1], eps[1:])) and eps[-1] < 1.05 * g["tc_eps_gd"]
    # "the identification breaks at a learning rate of order one, whatever the batch size": the first
    # resolved (3 s.e.) paired departure of the loss lies at eps between 1/4 and 4 at every larger batch
    # (measured 1, 2, 2 on a factor-2 grid in T; the linear-scaling section resolves nothing at eps <= 1/2)
    assert 0.25 <= g["tc_break_eps_min"] <= g["tc_break_eps_max"] <= 4
    # "close to the loss's onset, not to its half-way level": where the descending reading's 68% crossing
    # exists, it lies within a factor 2 of the onset (measured 0.13/0.15, 0.10/0.12, 0.079/0.078; the scan
    # steps by 2 in T, so a factor 2 is one grid cell) and below half of the half-way temperature
    for b in Bs:
        kd = g[f"tc_pass_kd_B{b}"]
        if not isinstance(kd, str) or not kd.startswith("none"):
            kd = float(kd)
            assert 0.5 < kd / g[f"tc_T_onset_B{b}"] < 2 and kd < 0.5 * g[f"tc_T_level_B{b}"]
    # the grid: the ordered region (below the half-way level) and the descending reading's 68% region
    # shrink from the smallest to the largest batch (measured 12 -> 7 and 22 -> 18 of 36 points)
    for key in ("tcd_ordered_points", "tcd_kd_points"):
        counts = [int(c) for c in g[key].split(", ")]
        assert counts[-1] < counts[0]


@pytest.mark.slow
def test_measured_repulsion_in_the_ordered_phase(glued):
    """The (B.5) finding propagated: the spacing equation and the criterion with the measured repulsion."""
    g = glued
    # (B.5) overstates the late repulsion of the ordered run several times (measured 0.13, i.e. 7.7 times)
    assert g["coulomb_b5_factor"] > 2
    # the verdict sentence states what the densest records measured (the second-half gap in mean ln S and
    # in median ln S, with (B.5) and with the measured repulsion, the same networks and Brownian paths)
    closer = (g["dens_ordered_exact_late_dense"] < g["dens_ordered_late_dense"]
              and abs(g["dens_ordered_exact_med_dense"]) < abs(g["dens_ordered_med_dense"]))
    assert g["dens_ordered_exact_verdict"] == ("it brings the equation closer to SGD" if closer else
                                               "it does not bring the equation closer to SGD")
    for tag in ("ordered", "ordered_exact"):
        for lab in ("sparse", "dense"):
            assert g[f"dens_{tag}_med_{lab}_lo"] <= g[f"dens_{tag}_med_{lab}"] <= g[f"dens_{tag}_med_{lab}_hi"]
    # with the measured (weaker) repulsion the criterion passes more often late in the ordered run, and at
    # most as often as the drift of S is restoring (K_S < 0 is necessary while V_S > 0; the measured
    # ratio is positive at the late records)
    assert g["crit_late_instant_measured"] >= g["crit_late_instant_x"]
    assert g["crit_late_instant_measured"] <= g["crit_late_restoring"]
    # the 2 and 3 sigma claim at the paper's length on the stored column: its interval brackets it
    assert g["long_cap_lo"] <= g["long_cap_pooled"] <= g["long_cap_hi"] and g["long_cap_nT"] >= 1


@pytest.mark.slow
def test_beyond_the_teachers_edge(glued):
    """The mechanism of the onset above T_c at large |B|: the sharpness of the trained networks and the
    noiseless control (full-batch gradient descent at the matched step on the same networks)."""
    g = glued
    # between T_c(16) and the onset the networks have left their teachers: the teachers' step sharpness is
    # beyond the edge, the trained networks' below it, and the two intervals are apart (measured 1.2
    # (0.97-1.3) against 0.83 (0.80-0.84)): a network still at its teacher would read the teacher's value
    assert g["edge_between_B16"] and g["edge_teacher_step_B16"] > 1 > g["edge_sgd_step_hi_B16"]
    assert g["edge_sgd_step_hi_B16"] < g["edge_teacher_step_lo_B16"]
    # ... and near the edge, not far inside it: above 0.6 (the noise-dominated batches read 0.22 and 0.57 at
    # most), with the batch ordering the text states (smaller batches flatter; 0.22 < 0.57 < 0.83 measured,
    # each many bootstrap widths apart)
    assert 0.6 < g["edge_sgd_step_B16"] < 1 and 0.6 < g["edge_sgd_step_B64"] < 1.1
    assert g["edge_max_step_B1"] < g["edge_max_step_B4"] < g["edge_max_step_B16"]
    # the control: gradient descent leaves its plateau at the same step as SGD, within a factor 2^0.5 (the scan
    # steps by 2 in eps, so this is half a grid cell; measured ratios 1.1 and 0.86). If the temperature set
    # the onset, descent without noise would stay on its plateau past SGD's onset: a ratio of 2 or more
    for b in (16, 64):
        assert abs(math.log2(g[f"edge_onset_ratio_B{b}"])) < 0.5
        assert g[f"edge_onset_ratio_lo_B{b}"] <= g[f"edge_onset_ratio_B{b}"] <= g[f"edge_onset_ratio_hi_B{b}"]
    # at |B| = 64 SGD and descent agree pair by pair below the onset to less than the onset's own rise,
    # log10 2 = 0.3 decades (measured 0.10); at |B| = 16 SGD lies above (the noise, measured +0.17 +- 0.06)
    assert g["edge_dlog_maxabs_B64"] < np.log10(2.0)
    assert g["edge_dlog_cold_B16"] > 2 * g["edge_dlog_cold_se_B16"]
    # the correction at |B| = 64: its coldest loss is already more than twice that of |B| = 1 (measured 3.0,
    # 2.5-3.6 at +- one s.e.), so its onset from the common reference lies below the scan, as the text says
    assert g["edge_ratio_ref_lo_B64"] > 2 and g["edge_cold_ratio_last"] > 2
    assert g["edge_onset_ref_B64"].startswith("below") and not g["edge_onset_ref_B16"].startswith("below")


def test_kept_paper_run_high_contours_hold_a_core_of_the_ordered_phase():
    """What the chapter and the paper-scale page say of the kept run (12 x 12 grid, 100 networks per
    point): every point inside the 95% and 99.7% contours is ordered by the loss, they hold fewer than
    half of the ordered points, and the networks of the ordered points pass the recipe well short of
    the 95% that "essentially all converge" needs (its 68% interval lies below 0.9)."""
    k = _kept()
    assert k["cap95_inside"] > 0 and k["cap95_inside_ordered"] == k["cap95_inside"]
    assert k["cap997_inside_ordered"] == k["cap997_inside"]
    assert k["cap95_ordered_inside"] < k["cap_n_ordered"] / 2
    assert k["cap_pooled_hi"] < 0.9


def test_kept_paper_run_measured_repulsion_splits_median_and_mean():
    """The paper-scale page: at the densest records, with (B.5) the second-half median gap excludes
    zero; with the measured repulsion its interval holds zero, while the gap in the mean grows."""
    k = _kept()
    assert k["dens_ordered_med_dense_hi"] < 0 or k["dens_ordered_med_dense_lo"] > 0
    assert k["dens_ordered_exact_med_dense_lo"] <= 0 <= k["dens_ordered_exact_med_dense_hi"]
    assert k["dens_ordered_exact_late_dense"] > k["dens_ordered_late_dense"]
