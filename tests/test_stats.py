"""The small statistics behind the quoted numbers: exact on hand-made data, loud on bad data."""

import numpy as np
import pytest

from tsdyn import stats
from tsdyn.stats import batch_means, fit_line


def test_fit_line_recovers_an_exact_line_and_weights_errors():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    fit = fit_line(x, 1.5 - 2.0 * x)
    assert fit["slope"] == pytest.approx(-2.0, abs=1e-12)
    assert fit["intercept"] == pytest.approx(1.5, abs=1e-12)
    assert fit["slope_se"] < 1e-12  # no residuals, no error
    # A point with a huge error bar does not pull the weighted line.
    y = 1.5 - 2.0 * x
    y[-1] += 10.0
    weighted = fit_line(x, y, yerr=[0.01, 0.01, 0.01, 1e6])
    assert weighted["slope"] == pytest.approx(-2.0, abs=1e-6)


def test_fit_line_standard_error_matches_the_textbook_formula():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 50)
    y = 2 * x + rng.normal(0, 0.1, x.size)
    fit = fit_line(x, y, yerr=0.1)
    # known-error weighted fit: se(slope) = sigma / sqrt(sum (x - xbar)^2) (chi^2/dof ~ 1 here)
    expected = 0.1 / np.sqrt(np.sum((x - x.mean()) ** 2))
    assert fit["slope_se"] == pytest.approx(expected, rel=0.3)  # max(chi2/dof, 1) scaling, 50 points


@pytest.mark.parametrize("args, message", [
    (([0, 1], [0, 1]), r"at least 3 points"),
    (([0, 1, 2], [0, 1]), r"same length"),
    (([0, 1, 2], [0, np.nan, 2]), r"must be finite"),
    (([0, 1, 2], [0, 1, 2], [1.0, 0.0, 1.0]), r"yerr must be finite and > 0"),
    (([0, 1, 2], [0, 1, 2], [1.0, np.inf, 1.0]), r"yerr must be finite and > 0"),
])
def test_fit_line_rejects_bad_data(args, message):
    with pytest.raises(ValueError, match=message):
        fit_line(*args)


def test_batch_means_of_independent_noise():
    rng = np.random.default_rng(1)
    series = rng.normal(3.0, 1.0, 10_000)
    mean, se = batch_means(series, n_batches=20)
    assert mean == pytest.approx(series.mean())
    # white noise: the block-means error is the naive 1/sqrt(n), up to the
    # chi-distribution spread of a 20-block estimate (~16% relative)
    assert se == pytest.approx(1 / np.sqrt(series.size), rel=0.5)


@pytest.mark.parametrize("n_batches, message", [(1, r"n_batches .* integer >= 2"),
                                                (2.0, r"n_batches .* integer >= 2"),
                                                (100, r"need at least 200 points")])
def test_batch_means_rejects_bad_blocks(n_batches, message):
    with pytest.raises(ValueError, match=message):
        batch_means(np.ones(50), n_batches)


def test_max_abs_t_quantile():
    from tsdyn.stats import max_abs_t_quantile

    # one deviation: the two-sided t quantile (t_{0.975, inf} = 1.95996)
    assert max_abs_t_quantile(1, 10 ** 9) == pytest.approx(1.959964, rel=1e-5)
    # the largest of many: checked by sampling
    rng = np.random.default_rng(2)
    c = max_abs_t_quantile(120, 19)
    maxima = np.abs(rng.standard_t(19, size=(20_000, 120))).max(axis=1)
    assert np.mean(maxima < c) == pytest.approx(0.95, abs=0.005)  # binomial s.e. 0.0015
    with pytest.raises(ValueError, match=r"q \(quantile\)"):
        max_abs_t_quantile(10, 3, q=1.0)


def test_mixed_dof_quantile_reduces_to_equal_dof_one():
    """With one dof for all deviations the root-found quantile is the closed form's
    (brentq's default xtol 2e-12 sets the tolerance)."""
    from tsdyn.stats import max_abs_t_quantile, max_abs_t_quantile_mixed

    for n, dof, q in [(1, 5, 0.95), (30, 7, 0.99), (100, 12, 0.95)]:
        assert max_abs_t_quantile_mixed([dof] * n, q=q) == pytest.approx(max_abs_t_quantile(n, dof, q), abs=1e-9)
    with pytest.raises(ValueError, match="dofs"):
        max_abs_t_quantile_mixed([])


def test_bootstrap_median_ranks_censored_runs_last():
    """Censored runs (inf) rank above every finite value: the median and the interval are
    finite while more than half of the runs finish, and the upper end turns inf when the
    resampled medians can land on a censored run."""
    finished = np.arange(1.0, 31.0)
    med, lo, hi = stats.bootstrap_median(np.r_[finished, [np.inf] * 10], level=0.68, seed=1)
    assert np.isfinite(med) and lo <= med <= hi < np.inf
    assert med == np.median(np.r_[finished, [1e9] * 10])  # same rank as a very long run
    med, lo, hi = stats.bootstrap_median([[1.0, 2.0, np.inf, np.inf, np.inf]], seed=1)
    assert med[0] == np.inf and hi[0] == np.inf and lo[0] <= 2.0
    with pytest.raises(ValueError, match="level"):
        stats.bootstrap_median([1.0, 2.0], level=1.5)


def test_km_median_matches_scipy_product_limit():
    """The Kaplan-Meier median agrees with scipy's product-limit estimator (an independent
    implementation) on censored samples whose runs stop at different ends, and is the
    lower median without censoring."""
    from scipy.stats import CensoredData, ecdf

    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(3, 30))
        ends = rng.choice([2.0, 5.0, 20.0], size=n)  # three run lengths pooled, as for three m
        t = rng.exponential(4.0, size=n).round(1) + 0.1  # ties on purpose
        times = np.where(t <= ends, t, np.inf)
        fin = np.isfinite(times)
        sf = ecdf(CensoredData(uncensored=times[fin], right=ends[~fin])).sf
        below = np.flatnonzero(sf.probabilities <= 0.5 + 1e-12)
        expected = sf.quantiles[below[0]] if below.size else np.inf
        assert stats.km_median(times, ends) == expected
    x = np.array([3.0, 1.0, 4.0, 2.0])
    assert stats.km_median(x, np.full(4, 10.0)) == 2.0  # order statistic ceil(4/2)
    # runs stopped early at 1.5 leave the risk set there instead of counting as slower than every
    # hit: S = 6/7 after t = 1, 6/7 * 2/3 after t = 2, 6/7 * 2/3 * 1/2 after t = 7. Ranking them
    # last would give no median at all (4 of 7 runs unfinished).
    times = np.array([1.0, np.inf, np.inf, np.inf, 2.0, 7.0, np.inf])
    ends = np.array([9.0, 1.5, 1.5, 1.5, 9.0, 9.0, 9.0])
    assert stats.km_median(times, ends) == 7.0
    assert np.median(np.where(np.isfinite(times), times, np.inf)) == np.inf


def test_bootstrap_km_median_covers_the_true_median():
    """Exponential times (median ln 2) in two groups stopped at different ends: the 68 %
    interval covers ln 2 in about 68 % of repeated experiments (binomial error of 200 repeats:
    +-0.033, so 0.55-0.82 allows four of them plus the percentile bootstrap's known
    under-coverage at 16 + 16 runs)."""
    rng = np.random.default_rng(8)
    hits = 0
    for r in range(200):
        groups = []
        for end in (0.8, 3.0):
            t = rng.exponential(1.0, size=16)
            groups.append((np.where(t <= end, t, np.inf), np.full(16, end)))
        med, lo, hi = stats.bootstrap_km_median(groups, n_boot=300, seed=r)
        assert lo <= med <= hi
        hits += lo <= np.log(2) <= hi
    assert 0.55 <= hits / 200 <= 0.82


def test_km_median_refuses_bad_input():
    with pytest.raises(ValueError, match="ends"):
        stats.km_median([1.0, np.inf], [2.0, np.inf])
    with pytest.raises(ValueError, match="its end"):
        stats.km_median([3.0, 1.0], [2.0, 2.0])
    with pytest.raises(ValueError, match="one length"):
        stats.km_median([1.0, 2.0], [2.0])
    with pytest.raises(ValueError, match="level"):
        stats.bootstrap_km_median([([1.0], [2.0])], level=0)


def test_log_crossing_interpolates_in_log_x():
    from tsdyn.stats import log_crossing
    # y = log2(x) / 4 reaches 0.5 at x = 4 exactly, and log interpolation is exact for it
    x = np.array([1.0, 2.0, 8.0, 16.0])
    assert log_crossing(x, np.log2(x) / 4, 0.5) == pytest.approx(4.0)
    assert np.isnan(log_crossing(x, np.zeros(4), 0.5))  # not reached within the scan: nan
    assert log_crossing(x, np.ones(4), 0.5) == 1.0
    # the caller's markers for a crossing before the scan and for none within it
    assert log_crossing(x, np.ones(4), 0.5, at_start=-np.inf) == -np.inf
    assert log_crossing(x, np.zeros(4), 0.5, never=np.inf) == np.inf
    with pytest.raises(ValueError, match="increasing"):
        log_crossing(x[::-1], np.ones(4), 0.5)


def test_critical_batch_brackets_the_crossing():
    from tsdyn.stats import critical_batch
    b = np.array([1.0, 2.0, 4.0, 8.0])
    dev = np.array([0.0, 0.05, 0.15, 0.4])
    c, lo, hi = critical_batch(b, dev, dev - 0.03, dev + 0.03, 0.1)
    assert lo < c < hi  # the upper bound crosses first
    c2, lo2, hi2 = critical_batch(b, -dev, -dev - 0.03, -dev + 0.03, 0.1)
    assert (c2, lo2, hi2) == pytest.approx((c, lo, hi))  # a negative deviation crosses alike
    with pytest.raises(ValueError, match="tolerance"):
        critical_batch(b, dev, dev, dev, 0.0)
