"""Absorption times: the early stop at the teacher, censoring, Kaplan-Meier medians, growth forms."""

import math

import numpy as np
import pytest

from tsdyn import sparse
from tsdyn.sparse import survival, threshold
from tsdyn.sparse.absorption import absorption_point, absorption_time

P = sparse.Params(N=16, d=2, d_s=3, m=10)  # above m_c: most runs reach the teacher in a few hundred sweeps


def _every_sweep(params, sweeps, seed):
    return sparse.greedy(params, sweeps, seed=seed, n_points=sweeps + 1, spacing="linear").hamming.values


def test_the_early_stop_is_the_first_sweep_at_the_teacher_of_the_same_greedy_run():
    checked = 0
    for seed in range(6):
        run = absorption_time(P, 600, seed=seed)
        h = _every_sweep(P, 600, seed)  # the same run, recorded after every sweep
        zero = np.flatnonzero(h == 0)
        if not zero.size:
            assert np.isinf(float(run.tau)) and not bool(run.absorbed)
            continue
        checked += 1
        assert float(run.tau) == zero[0] and bool(run.absorbed)
        assert np.all(h[zero[0]:] == 0)  # the teacher is absorbing: no sweep leaves it
        before = run.t.values < zero[0]
        np.testing.assert_array_equal(run.hamming.values[before], h[run.t.values[before].astype(int)])
        assert np.all(run.hamming.values[~before] == 0)
    assert checked >= 3  # the check above ran on runs that reached the teacher


def test_censoring_at_the_budget():
    tau = float(absorption_time(P, 2000, seed=1).tau)
    assert 10 < tau < 2000  # this run reaches the teacher after some tens of sweeps
    short = absorption_time(P, int(tau) - 1, seed=1)
    assert np.isinf(float(short.tau)) and not bool(short.absorbed)
    assert short.hamming.values[-1] > 0
    assert float(absorption_time(P, int(tau), seed=1).tau) == tau  # a budget of exactly tau still sees it
    assert float(absorption_point(seed=1, N=16, d=2, d_s=3, m=10, budget=3000).tau) == tau


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="budget"):
        absorption_time(P, 0, seed=0)
    with pytest.raises(ValueError, match="two_matrix"):
        absorption_time(sparse.Params(N=16, d=2, m=8, model="one_matrix"), 10, seed=0)
    with pytest.raises(ValueError, match="schedule"):
        absorption_time(P, 10, seed=0, schedule="sometimes")


def test_km_median_equals_the_direct_median_without_censoring_and_with_a_common_budget():
    rng = np.random.default_rng(0)
    for n in (20, 21):
        x = rng.exponential(100.0, n).round() + 1
        lower_median = np.sort(x)[math.ceil(n / 2) - 1]  # km_median's convention (order statistic ceil(n/2))
        assert survival.km_median_interval(x, x.max() + 1, n_boot=200)[0] == lower_median
        # one budget for every run, below the largest times but above the median: the same median
        budget = float(np.quantile(x, 0.8))
        cens = np.where(x <= budget, x, np.inf)
        med, lo, hi = survival.km_median_interval(cens, budget, n_boot=500)
        assert med == lower_median and lo <= med <= hi
    # more than half censored: the median lies beyond the budget
    assert np.isinf(survival.km_median_interval(np.array([5.0, np.inf, np.inf]), 10)[0])


@pytest.mark.parametrize("true_form", survival.FORMS)
def test_growth_forms_are_told_apart_on_synthetic_censored_times(true_form):
    rng = np.random.default_rng(1)
    Ns = np.repeat([8.0, 16.0, 32.0, 64.0], 150)
    mu = 2.0 + (0.08 * Ns if true_form == "exponential" else 1.2 * np.log(Ns))
    tau = np.exp(mu + 0.5 * rng.standard_normal(len(Ns)))
    budget = float(np.quantile(tau, 0.85))
    tau[tau > budget] = np.inf  # censored at the budget
    cmp_ = survival.compare_growth(Ns, tau, budget)
    fit = cmp_["fits"][true_form]
    truth = 0.08 if true_form == "exponential" else 1.2
    # three standard errors of the fitted slope (150 runs per size)
    assert abs(fit["slope"] - truth) < 3 * fit["slope_se"]
    assert fit["sigma"] == pytest.approx(0.5, abs=0.05)  # 600 runs: sigma to a few per cent
    assert (cmp_["delta"] > 5) == (true_form == "exponential") and abs(cmp_["delta"]) > 5
    # the fitted median at the end sizes: ln tau has spread sigma = 0.5, so ln(median) at N = 8 and 64
    # is known to about sigma / sqrt(150) = 0.04; measured over 60 such synthetic sets (censoring of
    # the top 15 % included) its standard deviation is 0.026-0.043 with a bias below 0.01, so
    # rtol 0.15 is about 3.5 standard errors at the worse end
    np.testing.assert_allclose(survival.growth_median(fit, [8, 64]), np.exp(
        2.0 + (0.08 * np.array([8, 64]) if true_form == "exponential" else 1.2 * np.log([8, 64]))), rtol=0.15)


def test_the_slope_is_undetermined_with_one_size_reached():
    assert survival.fit_growth([8, 8, 16, 16], [10, 12, np.inf, np.inf], 100, "power") is None
    assert np.isnan(survival.compare_growth([8, 8, 16, 16], [10, 12, np.inf, np.inf], 100)["delta"])
    # two sizes at the teacher: both forms fit, but they cannot differ (no curvature to see)
    two = survival.compare_growth([8, 8, 16, 16, 32, 32], [10, 12, 30, 40, np.inf, np.inf], 100)
    assert two["fits"]["power"] is not None and np.isnan(two["delta"])


def test_sign_changes_are_interpolated_in_log_m():
    m = [4, 8, 16, 32, 64]
    lower, upper = survival.sign_changes(m, [2.0, 1.0, -1.0, -1.0, 3.0])
    assert lower == pytest.approx(np.sqrt(8 * 16)) and upper == pytest.approx(32 * 2 ** 0.25)
    assert np.isnan(survival.sign_changes(m, [-1, -1, -1, -1, -1])[0])
    assert survival.sign_changes(m, [2.0, np.nan, -2.0, -1, -1])[0] == pytest.approx(8.0)  # NaN skipped


def test_absorption_edges_find_the_planted_window():
    rng = np.random.default_rng(2)
    Ns, ms = np.array([8.0, 16.0, 32.0, 64.0]), np.array([4.0, 6.0, 8.0, 12.0, 16.0])
    tau = np.empty((len(ms), len(Ns), 40))
    for k, m in enumerate(ms):
        exp_side = m < 7 or m > 14  # trapped below 7 and above 14: exponential growth there
        mu = 2.0 + (0.1 * Ns if exp_side else 0.5 * np.log(Ns))
        tau[k] = np.exp(mu[:, None] + 0.4 * rng.standard_normal((len(Ns), 40)))
    tau[tau > 400] = np.inf
    e = survival.absorption_edges(Ns, ms, tau, 400, n_boot=20, seed=3)
    # each edge lies between the resolved grid points around it (m = 8 is close to the edge and may be undecided)
    assert 6 < e["lower"] < 12 and 12 < e["upper"] < 16
    assert e["resolved"][[0, 1, 3, 4]].all()
    assert e["found_lower"] > 0.9 and e["lower_err"] < 1


def test_quasi_stationary_hamming_averages_the_late_records_of_survivors():
    t = np.array([0.0, 10, 50, 100])
    h = np.array([[0.6, 0.5, 0.3, 0.1], [0.6, 0.4, 0.0, 0.0], [0.6, 0.5, 0.5, 0.3]])
    mean, se, n = survival.quasi_stationary_hamming(t, h, np.array([np.inf, 40.0, np.inf]))
    assert n == 2 and mean == pytest.approx(np.mean([0.2, 0.4]))
    assert se == pytest.approx(np.std([0.2, 0.4], ddof=1) / np.sqrt(2))


def test_fixed_m_drift_is_fishers_test_per_m():
    a = np.array([[True] * 10 + [False] * 10, [True] * 20])
    b = np.array([[True] * 2 + [False] * 18, [True] * 19 + [False]])
    out = threshold.fixed_m_drift([8, 9], a, b)
    from scipy.stats import fisher_exact
    assert out["p"][0] == pytest.approx(fisher_exact([[10, 10], [2, 18]]).pvalue)
    assert out["m_min"] == 8 and out["p_min"] < 0.05 and out["p"][1] == pytest.approx(1.0)


def test_success_census_counts_where_successful_runs_end():
    h = np.array([[0.0, 0.0, 0.1, 0.24, 0.3, 0.45]])
    c = threshold.success_census(h, 0.25)
    assert (c["success"][0], c["teacher"][0], c["near"][0], c["runs"]) == (4, 2, 2, 6)
    with pytest.raises(ValueError, match="threshold"):
        threshold.success_census(h, 1.5)


def test_an_edge_needs_resolved_likelihood_differences_on_both_sides():
    rng = np.random.default_rng(4)
    Ns, ms = np.array([8.0, 16.0, 32.0, 64.0]), np.array([4.0, 8.0, 16.0])
    # power-law growth at every m: no m where the exponential form is resolved, so no lower edge
    tau = np.exp(2.0 + 0.5 * np.log(Ns)[None, :, None] + 0.4 * rng.standard_normal((3, 4, 40)))
    e = survival.absorption_edges(Ns, ms, tau, 1e6, n_boot=20, seed=5)
    assert np.all(e["delta"] < 0) and np.isnan(e["lower"]) and np.isnan(e["upper"])
    assert e["resolved"].dtype == bool and e["delta_err"].shape == (3,)
