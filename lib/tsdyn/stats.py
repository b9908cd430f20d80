"""Small statistics used to turn runs into quoted numbers (fits, stationary means)."""

import numpy as np

from . import _validate


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
