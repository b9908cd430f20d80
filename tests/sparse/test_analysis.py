"""Hamming distance, TP/TN rates and the m_c estimator on hand-made cases."""

import numpy as np
import pytest

from tsdyn import sparse


def test_hamming_on_a_hand_made_pair():
    teacher = np.array([[1, -1, 0], [0, 1, 1], [-1, 0, 1]])
    student = np.array([[1, 1, 0], [0, 1, -1], [-1, 0, 1]])
    # six non-zeros, two signs wrong
    assert sparse.hamming(student, teacher) == pytest.approx(2 / 6)
    assert sparse.hamming(teacher, teacher) == 0.0
    assert sparse.hamming(-teacher, teacher) == 1.0
    # several matrices: the fraction over all of them
    assert sparse.hamming((student, teacher), (teacher, teacher)) == pytest.approx(2 / 12)


def test_hamming_counts_wrongly_kept_weights_on_the_student_support():
    teacher = np.array([[1, 0], [0, -1]])
    support = np.ones((2, 2))
    student = np.array([[1, 1], [0, 0]])  # one spurious non-zero, one missed weight
    assert sparse.hamming(student, teacher, support) == pytest.approx(2 / 4)


def test_tp_tn_rates_on_a_hand_made_pair():
    teacher = np.array([[1, 0, -1, 0], [0, 1, 0, 1]])
    support = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    # teacher non-zeros: (0,0)=1 (0,2)=-1 (1,1)=1 (1,3)=1; student right on 3 of them
    # teacher zeros on the support: (0,1), (1,0), (1,2); student zero on 2 of them
    student = np.array([[1, 0, -1, 0], [1, 1, 0, -1]])
    tp, tn = sparse.tp_tn_rates(student, teacher, support)
    assert tp == pytest.approx(3 / 4)
    assert tn == pytest.approx(2 / 3)
    assert sparse.tp_tn_rates(teacher, teacher, support) == (1.0, 1.0)
    tp, tn = sparse.tp_tn_rates(teacher, teacher, teacher != 0)
    assert tp == 1.0 and np.isnan(tn)


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match="same shape"):
        sparse.hamming(np.ones((2, 2)), np.ones((3, 3)))


def test_crossing_interpolates_in_log_m():
    m = [1, 2, 4, 8]
    assert sparse.crossing(m, [0, 0, 0.25, 0.75]) == pytest.approx(np.sqrt(4 * 8))
    assert sparse.crossing(m, [0, 0, 0, 0.4]) == np.inf
    assert sparse.crossing(m, [0.6, 1, 1, 1]) == -np.inf
    assert sparse.crossing(m, [0, 0.5, 1, 1]) == 2.0


def test_critical_batch_of_a_sharp_step():
    """All runs fail below m = 8 and succeed from m = 8: m_c between 6 and 8, and every
    bootstrap resample gives the same crossing (zero spread)."""
    m = np.array([2, 4, 6, 8, 12])
    success = np.repeat((m >= 8)[:, None], 10, axis=1)
    out = sparse.critical_batch(m, success)
    assert out["m_c"] == pytest.approx(np.exp((np.log(6) + np.log(8)) / 2))
    assert out["m_c_se"] < 1e-12 and out["finite_fraction"] == 1.0  # round-off only
    # the error bar is then the grid's resolution: uniform in log m between 6 and 8
    assert out["m_c_grid"] == pytest.approx(out["m_c"] * np.log(8 / 6) / np.sqrt(12))
    assert out["m_c_err"] == out["m_c_grid"]


def test_critical_batch_recovers_a_known_threshold():
    """Synthetic Bernoulli data with success probability 1/(1 + (m_c/m)^5), m_c = 20:
    the estimate is within 3 bootstrap standard errors (plus the log-linear interpolation
    bias, under 2% of m_c on this grid) of the truth, and the bootstrap spread is
    close to the spread of the estimator over independent data sets (within 35%, the
    accuracy of a standard deviation from 40 replicas plus bootstrap noise)."""
    m = np.geomspace(5, 80, 9)
    true = 20.0
    prob = 1 / (1 + (true / m) ** 5)
    rng = np.random.default_rng(0)
    estimates, ses = [], []
    for _ in range(40):
        success = rng.random((len(m), 60)) < prob[:, None]
        out = sparse.critical_batch(m, success, n_boot=300, seed=int(rng.integers(1 << 30)))
        estimates.append(out["m_c"])
        ses.append(out["m_c_se"])
    estimates, ses = np.array(estimates), np.array(ses)
    assert abs(estimates.mean() - true) < 3 * estimates.std(ddof=1) / np.sqrt(40) + 0.02 * true
    assert abs(np.mean(ses) / estimates.std(ddof=1) - 1) < 0.35


def test_critical_batch_input_checks():
    with pytest.raises(ValueError, match=r"success must have shape \(len\(m\), runs\) = \(3, runs\)"):
        sparse.critical_batch([1, 2, 3], np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="m must be increasing"):
        sparse.critical_batch([1, 3, 2], np.ones((3, 4), bool))


def test_success_fraction_and_binomial_error():
    p, se = sparse.success_fraction(np.array([[True, True, False, False], [True] * 4]))
    np.testing.assert_allclose(p, [0.5, 1.0])
    np.testing.assert_allclose(se, [np.sqrt(0.25 / 3), 0.0])


def test_transition_width_on_hand_made_fractions():
    m = [1, 2, 4, 8]
    # 0.2 is crossed at m = 2 exactly, 0.8 at m = 4 exactly
    success = np.array([[False] * 10, [True] * 2 + [False] * 8, [True] * 8 + [False] * 2, [True] * 10])
    out = sparse.transition_width(m, success, n_boot=200)
    assert out["width"] == pytest.approx(2.0)
    assert out["width_se"] > 0
    # a perfect step between 6 and 8 is resolved only to the grid: 6 [(8/6)^0.8 - (8/6)^0.2]
    step = np.repeat((np.array([2, 4, 6, 8, 12]) >= 8)[:, None], 10, axis=1)
    out = sparse.transition_width([2, 4, 6, 8, 12], step)
    assert out["width"] == pytest.approx(6 * ((8 / 6) ** 0.8 - (8 / 6) ** 0.2))
    with pytest.raises(ValueError, match="levels must satisfy 0 < lo < hi < 1"):
        sparse.transition_width(m, success, lo=0.8, hi=0.2)


def test_success_interval_is_the_wilson_score_interval():
    # 3 successes of 10, z = 1: centre (0.3 + 1/20) / 1.1, half 1/1.1 sqrt(0.021 + 1/400)
    p, lo, hi = sparse.success_interval(np.array([True] * 3 + [False] * 7))
    half = np.sqrt(0.3 * 0.7 / 10 + 1 / 400) / 1.1
    assert p == pytest.approx(0.3)
    assert lo == pytest.approx(0.35 / 1.1 - half) and hi == pytest.approx(0.35 / 1.1 + half)
    # all failing or all succeeding: the interval keeps a width z^2 / (n + z^2)
    p, lo, hi = sparse.success_interval(np.zeros((2, 8), bool))
    np.testing.assert_allclose(hi, 1 / 9)
    np.testing.assert_allclose(lo, 0, atol=1e-15)
    p, lo, hi = sparse.success_interval(np.ones(8, bool))
    assert lo == pytest.approx(8 / 9) and hi == 1.0
    with pytest.raises(ValueError, match=r"z \(width of the interval in standard deviations\) must be a finite number in \(0.0, inf\]; got 0"):
        sparse.success_interval(np.ones(8, bool), z=0)


def test_success_interval_covers_about_68_percent():
    """Exact coverage of the z = 1 interval for n = 12 runs (binomial probabilities of
    every outcome k), averaged over p uniform in [0.05, 0.95]: within 0.03 of the
    nominal 0.683 (Wilson intervals are known to hold their level on average, while the
    coverage at a single p oscillates with the discreteness of k, here 0.38 to 0.88)."""
    from scipy.stats import binom
    n = 12
    k = np.arange(n + 1)
    _, lo, hi = sparse.success_interval(np.arange(n)[None, :] < k[:, None])
    ps = np.linspace(0.05, 0.95, 181)
    coverage = [binom.pmf(k, n, q)[(lo <= q) & (q <= hi)].sum() for q in ps]
    assert abs(np.mean(coverage) - 0.683) < 0.03


def test_mean_se_pools_the_given_dimensions():
    import xarray as xr
    da = xr.DataArray(np.arange(12.0).reshape(2, 3, 2), dims=("m", "N", "seed"))
    mean, se = sparse.mean_se(da, ["N", "seed"])
    np.testing.assert_allclose(mean, [2.5, 8.5])
    np.testing.assert_allclose(se, np.std(np.arange(6.0), ddof=1) / np.sqrt(6))
    with pytest.raises(ValueError, match="at least 2 entries"):
        sparse.mean_se(da.isel(seed=[0]), "seed")


def test_gap_fraction_and_near_transition():
    h = np.array([0.0, 0.0, 0.1, 0.2, 0.3, 0.5, 0.05, 0.25])
    # strictly inside (0.05, 0.25): 0.1 and 0.2
    assert sparse.gap_fraction(h, 0.05, 0.25) == pytest.approx(2 / 8)
    with pytest.raises(ValueError, match="without NaN"):
        sparse.gap_fraction([0.1, np.nan])
    with pytest.raises(ValueError, match="gap bounds must satisfy"):
        sparse.gap_fraction(h, 0.3, 0.2)
    m = [2, 4, 8, 16, 32, 64]
    np.testing.assert_array_equal(sparse.near_transition(m, 10.0), [False, False, True, True, False, False])
    np.testing.assert_array_equal(sparse.near_transition(m, 16.0), [False, False, True, True, True, False])
    assert not sparse.near_transition(m, np.inf).any()


def test_max_pairwise_z():
    # pairs: |1 - 2| / 5^0.5, |1 - 4| / 5^0.5, |2 - 4| / 8^0.5; NaN entries are skipped
    z = sparse.max_pairwise_z([1.0, 2.0, 4.0, np.nan], [1.0, 2.0, 2.0, 1.0])
    assert z == pytest.approx(3 / np.sqrt(5))
    assert np.isnan(sparse.max_pairwise_z([1.0], [1.0]))


def test_bootstrap_resamples_runs_per_m():
    """With one run succeeding of two at every m, the resampled fraction at one m is
    0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4 (within 4 binomial s.e. over 4000)."""
    success = np.array([[True, False]] * 3)
    boot = sparse.bootstrap(success, lambda f: f[0], n_boot=4000, seed=1)
    for value, prob in [(0.0, 0.25), (0.5, 0.5), (1.0, 0.25)]:
        assert abs(np.mean(boot == value) - prob) < 4 * np.sqrt(prob * (1 - prob) / 4000)
    # the same seed, the same resamples
    np.testing.assert_array_equal(boot, sparse.bootstrap(success, lambda f: f[0], n_boot=4000, seed=1))


def test_width_floor_is_the_width_of_a_perfect_step():
    m = np.array([2, 4, 6, 8, 12])
    step = np.repeat((m >= 8)[:, None], 10, axis=1)
    m_c = sparse.critical_batch(m, step)["m_c"]
    assert sparse.width_floor(m, m_c) == pytest.approx(sparse.transition_width(m, step)["width"])
    assert sparse.width_floor(m, m_c) == pytest.approx(6 * ((8 / 6) ** 0.8 - (8 / 6) ** 0.2))
    with pytest.raises(ValueError, match="m must be increasing"):
        sparse.width_floor([4, 2], 3.0)


def test_resolved_minimum():
    # interior minimum 1.0 at index 2, neighbours 2.0 and 3.0, s.e. 0.1: resolved
    assert sparse.resolved_minimum([5.0, 2.0, 1.0, 3.0], [0.1] * 4) == (2, True)
    # the same with s.e. 0.5: 2.0 - 1.0 < 2 sqrt(0.5) -> not resolved
    assert sparse.resolved_minimum([5.0, 2.0, 1.0, 3.0], [0.5] * 4) == (2, False)
    # at the edge of the grid: never resolved; a diverged (NaN) neighbour counts as higher
    assert sparse.resolved_minimum([1.0, 2.0, 3.0], [0.1] * 3) == (0, False)
    assert sparse.resolved_minimum([5.0, 1.0, np.nan], [0.1] * 3) == (1, True)
    assert sparse.resolved_minimum([5.0, 1.0, np.nan, 4.0], [0.1] * 4) == (1, True)
    assert sparse.resolved_minimum([1.05, 1.0, np.nan], [0.1] * 3) == (1, False)
    assert sparse.resolved_minimum([np.nan, np.nan], [0.1, 0.1]) == (-1, False)


def test_compatible_with_zero_reads_the_error_bar():
    # one failing run among n: mean h/n, standard error h/n exactly -> compatible at z = 1
    one = np.zeros(16)
    one[3] = 0.5
    assert sparse.compatible_with_zero(one)
    # two failing runs: mean / se = sqrt(2 (n - 1) / (n - 2)) > 1 -> not compatible
    two = one.copy()
    two[7] = 0.5
    assert not sparse.compatible_with_zero(two)
    assert sparse.compatible_with_zero(np.zeros(4))
    assert not sparse.compatible_with_zero(np.full(4, 0.1))
    with pytest.raises(ValueError, match="non-negative"):
        sparse.compatible_with_zero(np.array([0.1, -0.1]))
    with pytest.raises(ValueError, match="at least 2 runs"):
        sparse.compatible_with_zero(np.zeros((3, 1)))


def test_paper_critical_batch_is_the_first_zero_of_the_mean():
    m = np.array([2.0, 4, 8, 16, 32])
    h = np.full((5, 20), 0.45)
    h[2:] = 0.0  # all runs perfect from m = 8 on
    h[4, :10] = 0.2  # re-entrance at the largest m does not move the first zero
    res = sparse.paper_critical_batch(m, h, n_boot=200)
    assert res["m_c"] == 8.0 and res["m_prev"] == 4.0
    # every resample gives the same grid point: no bootstrap spread, the grid is the error
    assert res["m_c_se"] == 0.0
    assert res["m_c_err"] == pytest.approx(8 * np.log(2) / np.sqrt(12))
    # with a half-failing point at m = 8, resamples move m_c between 8 and 16
    h[2, :10] = 0.45
    mixed = sparse.paper_critical_batch(m, h, n_boot=200, seed=1)
    assert mixed["m_c"] == 16.0 and mixed["m_c_lo"] <= 16.0
    never = sparse.paper_critical_batch(m, np.full((5, 20), 0.4), n_boot=50)
    assert never["m_c"] == np.inf and never["finite_fraction"] == 0.0
    with pytest.raises(ValueError, match="shape"):
        sparse.paper_critical_batch(m, h[:3])


def test_passage_time_interpolates_in_log_time_and_log_loss():
    t = np.array([0.0, 1.0, 10.0, 100.0])
    v = np.array([[1.0, 0.5, 0.1, 0.001],   # crosses 0.01 half-way between 10 and 100 on the log scales
                  [1.0, 0.5, 0.2, 0.1],     # never: censored
                  [0.005, 0.5, 0.2, 0.1],   # already there at the first record
                  [1.0, 0.01, 0.2, 0.1]])   # reaches the level exactly at a record, then rises again
    got = sparse.passage_time(t, v, 0.01)
    assert got[0] == pytest.approx(10 ** 1.5, rel=1e-12)
    assert got[1] == np.inf and got[2] == 0.0 and got[3] == 1.0
    assert sparse.passage_time(t, v.reshape(2, 2, 4), 0.01).shape == (2, 2)
    # the bracket of the recording grid: the last record above the level and the first at or below
    np.testing.assert_array_equal(sparse.passage_time(t, v, 0.01, bound="lower"), [10.0, np.inf, 0.0, 0.0])
    np.testing.assert_array_equal(sparse.passage_time(t, v, 0.01, bound="upper"), [100.0, np.inf, 0.0, 1.0])
    # a fall of many decades between two records: the interpolation sits near the earlier one
    steep = sparse.passage_time([1.0, 10.0, 100.0], [1.0, 1e-30, 1e-30], 1e-3)
    assert 1.0 < steep < 1.5


def test_passage_time_input_checks():
    t = np.array([0.0, 1.0, 10.0])
    with pytest.raises(ValueError, match="positive"):
        sparse.passage_time(t, np.array([1.0, np.nan, 0.1]), 0.5)
    with pytest.raises(ValueError, match="increasing"):
        sparse.passage_time(t[::-1], np.ones(3), 0.5)
    with pytest.raises(ValueError, match="level"):
        sparse.passage_time(t, np.ones(3), 0.0)
    with pytest.raises(ValueError, match="bound"):
        sparse.passage_time(t, np.ones(3), 0.5, bound="middle")


def test_paired_shift_of_a_shifted_step():
    # b succeeds from one grid point later than a: the crossing moves by exactly that step in
    # the log-linear interpolation; pairs discordant at one m only
    m = np.array([2.0, 4.0, 8.0, 16.0])
    a = np.zeros((4, 20), bool)
    a[2:] = True
    a[1, :10] = True  # a crosses 1/2 exactly at m = 4
    b = np.zeros((4, 20), bool)
    b[3:] = True
    b[2, :10] = True  # b at m = 8
    r = sparse.paired_shift(m, a, b, seed=1)
    assert r["shift"] == pytest.approx(4.0)
    assert r["a_only"] == 20 and r["b_only"] == 0 and r["p"] == pytest.approx(2 * 0.5 ** 20)
    # identical outcomes: no shift, no discordant pair, and a paired bootstrap of zero spread
    r0 = sparse.paired_shift(m, a, a)
    assert r0["shift"] == 0 and r0["shift_se"] == 0 and r0["p"] == 1.0
    with pytest.raises(ValueError, match="shape"):
        sparse.paired_shift(m, a, b[:3])


def test_collapse_of_a_master_curve_and_of_a_floor():
    # three groups on one master curve f(log10 x) = -log10 x: every group's median is the curve,
    # spread 0 where at least two groups are present (interpolation is exact for a linear curve);
    # a fourth group stopping on a floor at -1 peels off by the floor's distance from the curve
    t = np.logspace(0, 4, 21)
    lam = np.array([0.01, 0.1, 1.0, 10.0])
    clock = np.broadcast_to(lam[:, None, None] * t, (4, 12, 21))
    y = -np.log10(clock)
    y[3] = np.maximum(y[3], -1.0)
    at = np.arange(-1.0, 5.01, 0.5)
    c = sparse.collapse(clock[:3], y[:3], at)
    ok = c["n_groups"] >= 2
    np.testing.assert_allclose(c["spread"][ok], 0, atol=1e-12)
    # identical runs: every bootstrap median is the median, a zero-width interval
    w = c["hi"] - c["lo"]
    assert np.isfinite(w).sum() == np.isfinite(c["median"]).sum() > 0
    np.testing.assert_allclose(w[np.isfinite(w)], 0, atol=1e-12)
    np.testing.assert_array_equal(c["n_groups"], [2, 2, 3, 3, 3, 3, 3, 2, 2, 1, 1, 0, 0])
    full = sparse.collapse(clock, y, at)
    k = np.flatnonzero(at == 3.0)[0]
    assert full["median"][3, k] == pytest.approx(-1.0) and full["spread"][k] == pytest.approx(2.0)
    # a group with fewer runs than min_runs at a point gets no median there
    assert np.isnan(sparse.collapse(clock[:1, :5], y[:1, :5], at)["median"]).all()


def test_flat_runs_finds_the_stuck_run_and_not_the_converged_ones():
    t = np.logspace(0, 6, 13)
    falling = -np.log10(t)
    stuck = np.where(t < 1e5, falling, -2.68 + 0.001 * np.sin(t))
    floor = np.where(t < 1e4, falling, -30.0)
    mask, level, span = sparse.flat_runs(t, np.stack([falling, stuck, floor]), t_from=1e5, tol=0.05)
    assert mask.tolist() == [False, True, False]
    assert level[1] == pytest.approx(-2.68, abs=1e-3) and span[1] < 0.003
