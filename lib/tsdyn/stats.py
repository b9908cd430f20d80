"""Small statistics used to turn runs into quoted numbers (fits, stationary means, t yardsticks)."""

import numpy as np

from . import _validate


def bootstrap_median(x, *, level=0.68, n_boot=2000, seed=0):
    """Median over the last axis (runs) and its percentile-bootstrap interval.

    ``x`` (..., runs) may hold +inf for censored runs (known only to exceed every finished
    time): they rank above every finite value, and the interval is read from order
    statistics of the bootstrap medians (no interpolation between a finite value and inf).
    Returns ``(median, lo, hi)``, arrays over the leading axes; ``hi`` (and the median) is
    inf where too many runs are censored.
    """
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="coverage")
    _validate.integer("n_boot", n_boot, low=100, doc="bootstrap resamples")
    x = np.asarray(x, float)
    lead, n = x.shape[:-1], x.shape[-1]
    flat = x.reshape(-1, n)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    boot = np.median(flat[:, idx], axis=-1)  # (points, n_boot)
    q = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.quantile(boot, q, axis=-1, method="lower")
        hi = np.quantile(boot, 1 - q, axis=-1, method="higher")
    return np.median(flat, axis=-1).reshape(lead), lo.reshape(lead), hi.reshape(lead)


def km_median(times, ends):
    """Kaplan-Meier median of right-censored times, each run with its own end.

    ``times`` (runs,) are hitting times, +inf for a run that had not hit by its end;
    ``ends`` (runs,) are the times at which the runs stopped (a finished run's time must not
    exceed its end). With censoring times that differ from run to run (runs of different
    length pooled on one clock) ranking the censored runs last, as :func:`bootstrap_median`
    does, is wrong: a run stopped early says only that its time exceeds its own end. The
    product-limit estimate S(t) = prod over hits t_i <= t of (1 - hits at t_i / runs still
    under way at t_i) uses each run for as long as it was watched (a run ending at a hit time
    counts as under way there). Returns the smallest hit time with S <= 1/2 (with no
    censoring this is the lower median, order statistic ceil(n/2)), or inf if S stays above
    1/2 while runs are watched.
    """
    times = np.asarray(times, float)
    ends = np.asarray(ends, float)
    if times.ndim != 1 or ends.shape != times.shape or len(times) == 0:
        raise ValueError(f"times and ends must be 1-d of one length >= 1; got shapes {times.shape}, {ends.shape}")
    if not (np.isfinite(ends).all() and np.all(ends > 0)):
        raise ValueError("ends must be finite and > 0 (the time each run stopped)")
    hit = np.isfinite(times)
    if np.any(times[hit] > ends[hit]) or np.any(times[hit] < 0) or np.isnan(times).any():
        raise ValueError("a finished run's time must lie in [0, its end]; unfinished runs are +inf")
    watched = np.where(hit, times, ends)
    surv = 1.0
    for t_i in np.unique(times[hit]):
        at_risk = np.count_nonzero(watched >= t_i)
        surv *= 1.0 - np.count_nonzero(times == t_i) / at_risk
        if surv <= 0.5 + 1e-12:  # 1e-12: products of exact fractions such as 1/2 computed in floats
            return float(t_i)
    return np.inf


def bootstrap_km_median(groups, *, level=0.68, n_boot=2000, seed=0):
    """Kaplan-Meier median (:func:`km_median`) of several groups of runs pooled, with a
    percentile-bootstrap interval that resamples the runs of each group separately.

    ``groups`` is a sequence of (times, ends) pairs, one per group (e.g. one per mini-batch
    size, each group's runs stopped at their own end). Returns ``(median, lo, hi)``; ``hi``
    is inf when more than (1 - level)/2 of the resamples have no median.
    """
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="coverage")
    _validate.integer("n_boot", n_boot, low=100, doc="bootstrap resamples")
    groups = [(np.asarray(t, float), np.broadcast_to(np.asarray(e, float), np.shape(t))) for t, e in groups]
    if not groups:
        raise ValueError("groups must hold at least one (times, ends) pair")
    med = km_median(np.concatenate([t for t, _ in groups]), np.concatenate([e for _, e in groups]))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_boot)
    for b in range(n_boot):
        picks = [rng.integers(0, len(t), len(t)) for t, _ in groups]
        boot[b] = km_median(np.concatenate([t[k] for (t, _), k in zip(groups, picks)]),
                            np.concatenate([e[k] for (_, e), k in zip(groups, picks)]))
    q = (1 - level) / 2
    return (med, float(np.quantile(boot, q, method="lower")), float(np.quantile(boot, 1 - q, method="higher")))


def fit_line(x, y, yerr=None):
    """Least-squares line y = a + b x, weighted by 1 / yerr^2 when errors are given.

    Returns
    -------
    dict
        slope, slope_se, intercept, intercept_se. With ``yerr`` the standard errors
        come from the given errors (scaled by sqrt(chi^2 / dof) when that exceeds 1,
        so a poor fit widens them rather than hiding it); without, from the residuals.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-d of the same length; got shapes {x.shape}, {y.shape}")
    if len(x) < 3:
        raise ValueError(f"fit_line needs at least 3 points; got {len(x)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite (drop diverged or missing points first)")
    if yerr is None:
        w = np.ones_like(y)
    else:
        yerr = np.broadcast_to(np.asarray(yerr, float), y.shape)
        if not np.all(np.isfinite(yerr) & (yerr > 0)):
            raise ValueError(f"yerr must be finite and > 0; got {yerr}")
        w = 1.0 / yerr ** 2
    A = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(A.T @ (A * w[:, None]))
    coef = cov @ A.T @ (w * y)
    chi2 = float(np.sum(w * (y - A @ coef) ** 2)) / (len(x) - 2)
    cov = cov * (chi2 if yerr is None else max(chi2, 1.0))
    return {"slope": coef[1], "slope_se": float(np.sqrt(cov[1, 1])),
            "intercept": coef[0], "intercept_se": float(np.sqrt(cov[0, 0]))}


def batch_means(series, n_batches=10):
    """Mean of a correlated time series and its standard error from batch means.

    The series is cut into ``n_batches`` contiguous blocks; if the blocks are
    longer than the correlation time, their means are independent and the
    spread of the block means gives an honest standard error.
    """
    _validate.integer("n_batches", n_batches, low=2, doc="number of blocks")
    series = np.asarray(series, float)
    if len(series) < 2 * n_batches:
        raise ValueError(f"need at least {2 * n_batches} points for {n_batches} batches; "
                         f"got {len(series)}")
    blocks = np.array_split(series, n_batches)
    means = np.array([b.mean() for b in blocks])
    return float(series.mean()), float(means.std(ddof=1) / np.sqrt(n_batches))


def max_abs_t_quantile(n, dof, q=0.95):
    """Quantile ``q`` of the largest of ``n`` independent |Student-t| variables with ``dof``.

    The yardstick for the largest of n deviations (mean - theory) / (standard
    error) when each standard error comes from dof + 1 seeds: P(max < c) = q
    for c = t_dof^{-1}(1 - (1 - q^{1/n}) / 2).
    """
    from scipy.stats import t

    _validate.integer("n", n, low=1, doc="number of deviations")
    _validate.integer("dof", dof, low=1, doc="degrees of freedom")
    _validate.real("q", q, low=0.0, high=1.0, low_open=True, high_open=True, doc="quantile")
    return float(t.ppf(1.0 - (1.0 - q ** (1.0 / n)) / 2.0, dof))


def welch_dof(se_a, n_a, se_b, n_b):
    """Welch-Satterthwaite degrees of freedom of (mean_a - mean_b) / hypot(se_a, se_b).

    se_a, se_b: standard errors of two means from n_a and n_b independent runs. Between
    min(n_a, n_b) - 1 (one error bar dominates) and n_a + n_b - 2 (equal variances).
    """
    va, vb = np.asarray(se_a, float) ** 2, np.asarray(se_b, float) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))


def max_abs_t_quantile_mixed(dofs, q=0.95):
    """Quantile ``q`` of the largest of independent |t| variables with degrees of freedom
    ``dofs`` (one each): the x with prod_i P(|t_dof_i| < x) = q (root of a monotone function)."""
    from scipy.optimize import brentq
    from scipy.stats import t as student

    dofs = np.asarray(dofs, float)
    _validate.real("q", q, low=0.0, high=1.0, low_open=True, high_open=True, doc="quantile")
    if dofs.size == 0 or np.any(dofs <= 0):
        raise ValueError(f"dofs (degrees of freedom) must be a non-empty list of positive numbers; got {dofs!r}")

    def f(x):
        return np.sum(np.log1p(-2.0 * student.sf(x, dofs))) - np.log(q)

    return float(brentq(f, 1e-6, 1e3))


def rms_t_expected(dofs):
    """Root-mean-square of independent t variables with these degrees of freedom
    (each has variance dof/(dof - 2); needs every dof > 2)."""
    dofs = np.asarray(dofs, float)
    if dofs.size == 0 or np.any(dofs <= 2):
        raise ValueError(f"dofs (degrees of freedom) must all be > 2 for a finite variance; got {dofs!r}")
    return float(np.sqrt(np.mean(dofs / (dofs - 2))))


def log_crossing(x, y, level, *, at_start=None, never=float("nan")):
    """The first x at which y reaches ``level`` from below, interpolated linearly in log x.

    ``x`` increasing and positive. If y starts at or above the level the crossing lies at or
    before ``x[0]``: returns ``at_start`` if given, else ``x[0]``. If y never reaches the level,
    returns ``never`` (nan by default: a crossing outside the scan is reported, not invented).
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.ndim != 1 or x.shape != y.shape or len(x) < 2:
        raise ValueError(f"x and y must be 1-d of the same length >= 2; got shapes {x.shape}, {y.shape}")
    if not (np.all(x > 0) and np.all(np.diff(x) > 0)):
        raise ValueError("x must be positive and increasing")
    above = np.flatnonzero(y >= level)
    if len(above) == 0:
        return float(never)
    i = int(above[0])
    if i == 0:
        return float(x[0] if at_start is None else at_start)
    lx0, lx1 = np.log(x[i - 1]), np.log(x[i])
    frac = (level - y[i - 1]) / (y[i] - y[i - 1])
    return float(np.exp(lx0 + frac * (lx1 - lx0)))


def critical_batch(batch, deviation, lo, hi, tolerance):
    """Where a measured deviation from the linear scaling rule reaches ``tolerance``.

    ``deviation`` is signed, with its interval [lo, hi] per batch size; the crossing is
    that of |deviation| (:func:`log_crossing`). The interval on the critical batch comes
    from the crossings of the interval's bounds on |deviation|: the upper bound crosses
    first (the smallest compatible critical batch), the lower bound last.

    Returns
    -------
    (float, float, float)
        critical batch, lower, upper; ``nan`` where a curve does not reach the tolerance.
    """
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="relative deviation")
    dev, lo, hi = (np.asarray(a, float) for a in (deviation, lo, hi))
    if not np.all(lo <= hi):
        raise ValueError("each interval needs lo <= hi")
    upper = np.maximum(np.abs(lo), np.abs(hi))
    lower = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    return (log_crossing(batch, np.abs(dev), tolerance), log_crossing(batch, upper, tolerance),
            log_crossing(batch, lower, tolerance))
