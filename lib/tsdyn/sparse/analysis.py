"""Observables of a run and estimators of the critical mini-batch size m_c.

Hamming distance and TP/TN rates (Marino & Ricci-Tersenghi, secs. 4.1-4.2) compare
the student's matrices with the teacher's on the student's support. m_c is located
by a defined estimator, the crossing of the success fraction through 1/2, with a
bootstrap error bar (:func:`critical_batch`).
"""

import warnings

import numpy as np

from .. import _validate
from ..stats import log_crossing


def _pair(student, teacher, support):
    student, teacher = np.asarray(student), np.asarray(teacher)
    if student.shape != teacher.shape:
        raise ValueError(f"student and teacher must have the same shape; got {student.shape} "
                         f"and {teacher.shape}")
    support = (student != 0) | (teacher != 0) if support is None else np.asarray(support) != 0
    if support.shape != student.shape:
        raise ValueError(f"support must have shape {student.shape}; got {support.shape}")
    return student, teacher, support


def hamming(student, teacher, support=None):
    """Normalised Hamming distance: the fraction of the support where the values differ.

    For +-1 weights on the teacher's support this is the fraction of wrong signs
    (0.5 for a random guess, 0 for perfect inference; sec. 4.1). ``support``
    defaults to the positions where either matrix is non-zero; pass the student's
    support in the mismatched case, so a wrongly kept weight counts too.
    Several matrices may be given as tuples; the fraction is over all of them.
    """
    if isinstance(student, tuple):
        supports = support if isinstance(support, tuple) else (support,) * len(student)
        diff = total = 0
        for s, t, u in zip(student, teacher, supports):
            s, t, u = _pair(s, t, u)
            diff += int(np.sum((s != t) & u))
            total += int(u.sum())
        return diff / total
    s, t, u = _pair(student, teacher, support)
    return float(np.sum((s != t) & u) / u.sum())


def tp_tn_rates(student, teacher, support):
    """True-positive and true-negative rates of the recovered weights (sec. 4.2, Fig. 5).

    TP: the fraction of the teacher's non-zero weights that the student has with
    the right value. TN: the fraction of the student's support where the teacher
    is zero and the student is zero too. Both are 1 for perfect recovery. TN is
    NaN when the support has no teacher zeros (the matched case).
    """
    s, t, u = _pair(student, teacher, support)
    pos = t != 0
    neg = u & (t == 0)
    tp = float(np.sum((s == t) & pos) / pos.sum())
    tn = float(np.sum((s == 0) & neg) / neg.sum()) if neg.any() else np.nan
    return tp, tn


def success_fraction(success):
    """Fraction of successful runs per m and its binomial standard error.

    ``success`` is a boolean array (..., runs); returns (fraction, standard error)
    over the last axis.
    """
    success = np.asarray(success, float)
    n = success.shape[-1]
    p = success.mean(-1)
    return p, np.sqrt(p * (1 - p) / max(n - 1, 1))


def success_interval(success, z=1.0):
    """Fraction of successful runs with its Wilson score interval (z = 1: about 68%).

    ``success`` is a boolean array (..., runs); returns (fraction, lower, upper) over
    the last axis. Unlike the binomial standard error of :func:`success_fraction`,
    the interval does not collapse to zero width when every run fails or succeeds:
    with n runs all failing, the upper end is z^2 / (n + z^2).
    """
    success = np.asarray(success, float)
    _validate.real("z", z, low=0.0, low_open=True, doc="width of the interval in standard deviations")
    n = success.shape[-1]
    p = success.mean(-1)
    centre = (p + z ** 2 / (2 * n)) / (1 + z ** 2 / n)
    half = z / (1 + z ** 2 / n) * np.sqrt(p * (1 - p) / n + z ** 2 / (4 * n ** 2))
    # the interval contains p; clipping also removes round-off at p = 0 or 1
    return p, np.clip(centre - half, 0.0, p), np.clip(centre + half, p, 1.0)


def mean_se(values, dims):
    """Mean of an xarray DataArray over ``dims`` and its standard error (ddof = 1 over the
    pooled entries of those dimensions)."""
    dims = [dims] if isinstance(dims, str) else list(dims)
    n = int(np.prod([values.sizes[d] for d in dims]))
    if n < 2:
        raise ValueError(f"the standard error needs at least 2 entries over {dims}; got {n}")
    return values.mean(dims), values.std(dims, ddof=1) / np.sqrt(n)


def gap_fraction(hamming_values, lo=0.05, hi=0.25):
    """Fraction of runs ending partly recovered: final Hamming distance in (lo, hi).

    Between the two phases of a discontinuous transition (Hamming distance 0, or near
    the random-guess value) this range stays nearly empty; a continuous transition
    fills it near m_c (sec. 4.2). NaN entries are refused.
    """
    h = np.asarray(hamming_values, float)
    if not 0 <= lo < hi <= 1:
        raise ValueError(f"gap bounds must satisfy 0 <= lo < hi <= 1; got lo={lo}, hi={hi}")
    if h.size == 0 or np.isnan(h).any():
        raise ValueError(f"hamming_values must be a non-empty array without NaN; got size {h.size}")
    return float(np.mean((h > lo) & (h < hi)))


def near_transition(m, m_c, factor=2.0):
    """Boolean mask of the mini-batch sizes within a factor ``factor`` of m_c:
    m_c / factor <= m <= factor m_c (all False when m_c is not finite)."""
    m = np.asarray(m, float)
    _validate.real("factor", factor, low=1.0, doc="half-width of the window in log m (as a factor)")
    if not np.isfinite(m_c) or m_c <= 0:
        return np.zeros(m.shape, bool)
    return (m >= m_c / factor) & (m <= factor * m_c)


def max_pairwise_z(values, errors):
    """Largest |a - b| / sqrt(se_a^2 + se_b^2) over pairs of finite estimates (NaN if
    fewer than two): do the estimates agree within their errors?"""
    v, e = np.asarray(values, float), np.asarray(errors, float)
    ok = np.isfinite(v) & np.isfinite(e)
    v, e = v[ok], e[ok]
    if len(v) < 2:
        return np.nan
    i, j = np.triu_indices(len(v), 1)
    return float(np.max(np.abs(v[i] - v[j]) / np.hypot(e[i], e[j])))


def bootstrap(success, statistic, *, n_boot=1000, seed=0):
    """``statistic`` (a function of the success fraction per m) over ``n_boot``
    bootstrap resamples: the runs are redrawn with replacement independently at each m.

    ``success``: bool array (n_m, runs). Returns an array of n_boot values.
    """
    success = np.asarray(success, bool)
    n_m, runs = success.shape
    rng = np.random.default_rng(seed)
    pick = rng.integers(runs, size=(n_boot, n_m, runs))
    frac = np.take_along_axis(np.broadcast_to(success, (n_boot, n_m, runs)), pick, axis=2).mean(2)
    return np.array([statistic(f) for f in frac], float)


def width_floor(m, m_c, lo=0.2, hi=0.8):
    """Narrowest transition width the grid ``m`` can show at m_c.

    A perfect step between the grid points m_k < m_{k+1} around m_c has its success
    fraction interpolated linearly in log m (:func:`crossing`), so the ``lo`` and ``hi``
    crossings lie at m_k r^lo and m_k r^hi with r = m_{k+1}/m_k: the width is
    m_k (r^hi - r^lo), about (hi - lo) times the grid spacing.
    """
    m = np.asarray(m, float)
    if len(m) < 2 or np.any(np.diff(m) <= 0):
        raise ValueError(f"m must be increasing with at least two points; got {m.tolist()}")
    if not 0 < lo < hi < 1:
        raise ValueError(f"levels must satisfy 0 < lo < hi < 1; got lo={lo}, hi={hi}")
    k = int(np.clip(np.searchsorted(m, m_c), 1, len(m) - 1))
    r = m[k] / m[k - 1]
    return float(m[k - 1] * (r ** hi - r ** lo))


def crossing(m, fraction, level=0.5):
    """First m at which the fraction crosses ``level`` upwards, linearly interpolated
    in log m between the two grid points around the crossing (:func:`tsdyn.stats.log_crossing`).

    The fraction below the first grid point (or above the last) is not known, so
    a curve already at or above ``level`` at the first point gives ``-inf`` (flagged by
    the caller), and one never reaching it gives ``inf``.
    """
    return log_crossing(m, fraction, level, at_start=-np.inf, never=np.inf)


def _bootstrap_spread(boot):
    """Spread of bootstrap estimates over the resamples with a finite estimate.

    Returns (standard deviation, 16% quantile, 84% quantile, fraction of resamples
    with a finite estimate); the first three are NaN when fewer than two are finite.
    """
    boot = np.asarray(boot, float)
    finite = boot[np.isfinite(boot)]
    if len(finite) < 2:
        return np.nan, np.nan, np.nan, len(finite) / len(boot)
    lo, hi = np.quantile(finite, [0.16, 0.84])
    return float(finite.std(ddof=1)), float(lo), float(hi), len(finite) / len(boot)


def critical_batch(m, success, *, n_boot=1000, seed=0, level=0.5):
    """Critical mini-batch size: where the success fraction crosses ``level`` (1/2).

    Estimator: the first upward crossing of the success fraction through
    ``level``, interpolated linearly in log m (:func:`crossing`). Error bar: the
    standard deviation of the same estimator over ``n_boot`` bootstrap resamples
    of the runs (runs redrawn with replacement independently at each m).

    Parameters
    ----------
    m : array, shape (n_m,)
        Increasing mini-batch sizes.
    success : bool array, shape (n_m, runs)
        Whether each run succeeded (e.g. Hamming distance < 0.25).

    Returns
    -------
    dict
        ``m_c`` (inf: never crossed; -inf: crossed before the first m),
        ``m_c_se`` (bootstrap standard deviation over resamples with a finite
        crossing), ``m_c_lo``, ``m_c_hi`` (16% and 84% bootstrap quantiles),
        ``finite_fraction`` (fraction of resamples with a crossing inside the grid),
        and ``m_c_grid``, the resolution of the grid at the crossing: m_c times the
        log-spacing of the two bracketing grid points over sqrt(12) (the standard
        deviation of a point uniform in log m between them). When every run fails
        below a grid point and succeeds above it, the bootstrap spread is zero and
        ``m_c_grid`` is the only honest error; ``m_c_err`` = max(se, grid) is the
        error bar to draw.
    """
    m = np.asarray(m, float)
    success = np.asarray(success, bool)
    if success.ndim != 2 or success.shape[0] != len(m):
        raise ValueError(f"success must have shape (len(m), runs) = ({len(m)}, runs); "
                         f"got {success.shape}")
    if np.any(np.diff(m) <= 0):
        raise ValueError(f"m must be increasing; got {m.tolist()}")
    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    m_c = crossing(m, success.mean(1), level)
    boot = bootstrap(success, lambda f: crossing(m, f, level), n_boot=n_boot, seed=seed)
    se, lo, hi, frac = _bootstrap_spread(boot)
    grid = np.nan
    if np.isfinite(m_c):
        k = int(np.searchsorted(m, m_c))
        k = min(max(k, 1), len(m) - 1)
        grid = float(m_c * np.log(m[k] / m[k - 1]) / np.sqrt(12))
    return {"m_c": m_c, "m_c_se": se, "m_c_lo": lo, "m_c_hi": hi,
            "finite_fraction": frac, "m_c_grid": grid,
            "m_c_err": float(np.nanmax([se, grid])) if np.isfinite(m_c) else np.nan}


def transition_width(m, success, *, lo=0.2, hi=0.8, n_boot=1000, seed=0):
    """Width of the transition: m where the success fraction crosses ``hi`` minus m
    where it crosses ``lo`` (both by :func:`crossing`), with a bootstrap error.

    For a finite-size-rounded transition the width shrinks as N grows. It cannot be
    resolved below the grid (:func:`width_floor`).

    Returns
    -------
    dict
        ``width`` (NaN if a crossing is outside the grid) and ``width_se`` (bootstrap
        standard deviation over resamples of the runs at each m).
    """
    m = np.asarray(m, float)
    success = np.asarray(success, bool)
    if success.ndim != 2 or success.shape[0] != len(m):
        raise ValueError(f"success must have shape (len(m), runs) = ({len(m)}, runs); "
                         f"got {success.shape}")
    if not 0 < lo < hi < 1:
        raise ValueError(f"levels must satisfy 0 < lo < hi < 1; got lo={lo}, hi={hi}")

    def width(frac):
        a, b = crossing(m, frac, lo), crossing(m, frac, hi)
        return b - a if np.isfinite(a) and np.isfinite(b) else np.nan

    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    w = width(success.mean(1))
    boot = bootstrap(success, width, n_boot=n_boot, seed=seed)
    boot = boot[np.isfinite(boot)]
    return {"width": float(w), "width_se": float(boot.std(ddof=1)) if len(boot) >= 2 else np.nan}


def resolved_minimum(values, errors, z=2.0):
    """Index of the smallest finite entry of ``values`` (1-D) and whether it is a
    resolved interior minimum: not at either end, and below both neighbours by more
    than ``z`` combined standard errors (sqrt(se_k^2 + se_neighbour^2)).

    Returns (index or -1 when no entry is finite, resolved: bool). A neighbour that
    is not finite (e.g. a diverged run) counts as higher.
    """
    v, e = np.asarray(values, float), np.asarray(errors, float)
    if v.ndim != 1 or v.shape != e.shape:
        raise ValueError(f"values and errors must be 1-D of the same shape; got {v.shape}, {e.shape}")
    if not np.isfinite(v).any():
        return -1, False
    k = int(np.nanargmin(np.where(np.isfinite(v), v, np.nan)))
    if k == 0 or k == len(v) - 1:
        return k, False
    ok = True
    for j in (k - 1, k + 1):
        if np.isfinite(v[j]):
            ok &= bool(v[j] - v[k] > z * np.hypot(e[k], e[j]))
    return k, ok


def compatible_with_zero(values, z=1.0):
    """Whether the mean over the last axis is compatible with zero: mean <= z standard
    errors (sample standard deviation over sqrt(runs)).

    With z = 1 the error bar of a mean ± standard error plot reaches zero, the reading
    of "compatible with 0" in the paper's figures (secs. 4.1-4.2). A row of exact
    zeros is compatible; a row of equal non-zero values is not. ``values`` must be
    non-negative (a Hamming distance or a loss), with at least 2 entries per row.
    """
    v = np.asarray(values, float)
    _validate.real("z", z, low=0.0, doc="standard errors allowed between the mean and zero")
    if v.ndim < 1 or v.shape[-1] < 2:
        raise ValueError(f"values need at least 2 runs on the last axis; got shape {v.shape}")
    if np.isnan(v).any() or (v < 0).any():
        raise ValueError("values must be non-negative and not NaN (a Hamming distance or a loss)")
    mean = v.mean(-1)
    se = v.std(-1, ddof=1) / np.sqrt(v.shape[-1])
    return mean <= z * se


def first_zero(m, values, z=1.0):
    """First m at which the mean of ``values`` (n_m, runs) is compatible with zero
    (:func:`compatible_with_zero`); inf when there is none on the grid."""
    ok = np.nonzero(compatible_with_zero(values, z))[0]
    return float(np.asarray(m, float)[ok[0]]) if len(ok) else np.inf


def paper_critical_batch(m, values, *, z=1.0, n_boot=1000, seed=0):
    """The paper's critical mini-batch size: the first m at which the mean final
    Hamming distance (sec. 4.1) or, with a mismatched support, the mean validation
    loss (sec. 4.2) is compatible with zero (:func:`first_zero`).

    The estimate is a grid point. Its error combines the bootstrap spread (runs
    redrawn with replacement independently at each m, ``n_boot`` times) with the grid:
    the first zero lies somewhere between the preceding grid point and m_c, whose
    standard deviation for a point uniform in log m is m_c log(m_c / m_prev) / sqrt(12)
    (the convention of :func:`critical_batch`).

    Parameters
    ----------
    m : array, shape (n_m,)
        Increasing mini-batch sizes.
    values : array, shape (n_m, runs)
        Final Hamming distance (or loss) of each run, non-negative.

    Returns
    -------
    dict
        ``m_c`` (inf: never compatible with zero), ``m_c_se`` (bootstrap standard
        deviation over resamples with a finite estimate), ``m_c_lo``, ``m_c_hi``
        (16% and 84% bootstrap quantiles), ``m_prev`` (the grid point below m_c;
        NaN at the first), ``finite_fraction``, ``m_c_grid`` and ``m_c_err`` = max(se, grid).
    """
    m = np.asarray(m, float)
    v = np.asarray(values, float)
    if v.ndim != 2 or v.shape[0] != len(m):
        raise ValueError(f"values must have shape (len(m), runs) = ({len(m)}, runs); got {v.shape}")
    if len(m) == 0 or np.any(np.diff(m) <= 0):
        raise ValueError(f"m must be increasing and non-empty; got {m.tolist()}")
    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    m_c = first_zero(m, v, z)
    rng = np.random.default_rng(seed)
    runs = v.shape[1]
    pick = rng.integers(runs, size=(n_boot, len(m), runs))
    boot = np.array([first_zero(m, np.take_along_axis(v, p, axis=1), z) for p in pick])
    se, lo, hi, frac = _bootstrap_spread(boot)
    m_prev, grid = np.nan, np.nan
    if np.isfinite(m_c):
        k = int(np.searchsorted(m, m_c))
        if k > 0:
            m_prev = float(m[k - 1])
            grid = float(m_c * np.log(m_c / m_prev) / np.sqrt(12))
    return {"m_c": m_c, "m_c_se": se, "m_c_lo": lo, "m_c_hi": hi, "m_prev": m_prev,
            "finite_fraction": frac, "m_c_grid": grid,
            "m_c_err": float(np.nanmax([se, grid])) if np.isfinite(m_c) and np.isfinite([se, grid]).any()
            else np.nan}


def passage_time(t, values, level, *, bound=None):
    """First time each run's recorded curve falls to ``level`` or below: a hitting time.

    ``values`` (..., n_t) are positive (a loss) recorded at the increasing times ``t``
    (n_t,). Between the last record above ``level`` and the first at or below it the time
    is interpolated linearly in (log t, log value), the scale on which a loss recorded at
    log-spaced times changes smoothly. Where the loss falls by many decades between two
    records the interpolation leans toward the earlier one; ``bound="lower"`` or
    ``"upper"`` returns instead the time of the last record above ``level`` or of the first
    at or below it, the bracket that the recording grid alone guarantees. A run that never
    reaches ``level`` is censored: +inf, which :func:`tsdyn.stats.bootstrap_median` ranks
    above every finished run. A run already at ``level`` at the first record gets that
    record's time. NaN values (a diverged run) are refused.
    """
    if bound not in (None, "lower", "upper"):
        raise ValueError(f"bound must be None, 'lower' or 'upper'; got {bound!r}")
    t = np.asarray(t, float)
    v = np.asarray(values, float)
    if t.ndim != 1 or v.shape[-1:] != t.shape or np.any(np.diff(t) <= 0):
        raise ValueError(f"t must be increasing with one entry per record of values; got t of shape "
                         f"{t.shape} and values of shape {v.shape}")
    if not (np.isfinite(v).all() and (v > 0).all()):
        raise ValueError("values must be finite and positive (leave diverged runs out)")
    _validate.real("level", level, low=0.0, low_open=True, doc="the loss to reach")
    flat = v.reshape(-1, len(t))
    out = np.full(len(flat), np.inf)
    lt = np.log(np.where(t > 0, t, np.nan))
    for i, row in enumerate(flat):
        hit = np.flatnonzero(row <= level)
        if hit.size == 0:
            continue
        k = int(hit[0])
        if k == 0 or bound is not None:
            out[i] = t[k - 1] if (bound == "lower" and k > 0) else t[k]
            continue
        if not np.isfinite(lt[k - 1]):
            out[i] = t[k]
            continue
        a, b = np.log(row[k - 1]), np.log(row[k])
        f = (a - np.log(level)) / (a - b)
        out[i] = float(np.exp(lt[k - 1] + f * (lt[k] - lt[k - 1])))
    return out.reshape(v.shape[:-1])


def paired_shift(m, success_a, success_b, *, n_boot=1000, seed=0, level=0.5):
    """Shift of the critical size between two paired sets of runs, m_c(b) - m_c(a).

    ``success_a`` and ``success_b`` (n_m, runs) hold the outcomes of the same runs
    (same teacher, start and data at each (m, run)) under two variants of the dynamics.
    m_c is the crossing of ``level`` (:func:`crossing`). The error is the standard
    deviation over ``n_boot`` bootstrap resamples that redraw the *pairs* (one index per
    m shared by a and b), so the correlation between the two variants is kept and the
    error is that of the difference. Also returns McNemar's exact test of the discordant
    pairs over all m: ``a_only`` (runs that succeed under a only), ``b_only`` and ``p``
    (two-sided binomial test of a_only against b_only at 1/2; 1 when there are none).
    """
    from scipy.stats import binomtest

    m = np.asarray(m, float)
    a, b = np.asarray(success_a, bool), np.asarray(success_b, bool)
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] != len(m):
        raise ValueError(f"success_a and success_b must both have shape (len(m), runs) = ({len(m)}, runs); "
                         f"got {a.shape} and {b.shape}")
    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    shift = crossing(m, b.mean(1), level) - crossing(m, a.mean(1), level)
    rng = np.random.default_rng(seed)
    pick = rng.integers(a.shape[1], size=(n_boot, len(m), a.shape[1]))
    boot = np.array([crossing(m, np.take_along_axis(b, p, 1).mean(1), level)
                     - crossing(m, np.take_along_axis(a, p, 1).mean(1), level) for p in pick])
    boot = boot[np.isfinite(boot)]
    a_only, b_only = int((a & ~b).sum()), int((b & ~a).sum())
    p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
    return {"shift": float(shift), "shift_se": float(boot.std(ddof=1)) if len(boot) >= 2 else np.nan,
            "a_only": a_only, "b_only": b_only, "p": float(p), "frac_a": float(a.mean()), "frac_b": float(b.mean())}


def collapse(clock, log_loss, at, *, min_runs=10, n_boot=500, seed=0):
    """Median curves of several groups of runs on a common clock, and their spread.

    The test of a master curve: if runs of several learning rates lambda follow one curve
    in lambda m t (the summed loss of eq. (2), Marino & Ricci-Tersenghi, Fig. 8), the
    median log-loss of each lambda at a given lambda m t is the same. ``clock`` and
    ``log_loss`` (groups, runs, n_t) hold each record's clock value and log10 loss. Each
    run is interpolated linearly in log10 clock at the points ``at`` (decades) that lie
    inside its own recorded range (records with clock <= 0 left out), so a run never
    enters beyond its end; a group gets a median at a point where at least ``min_runs``
    of its runs do.

    Returns
    -------
    dict
        ``at``, ``median`` (groups, points; NaN where a group has too few runs), ``n_runs``
        (groups, points), ``lo``, ``hi`` (groups, points: 68 % percentile-bootstrap interval of
        each median, ``n_boot`` resamples of the runs present), ``spread`` (points: largest
        minus smallest median over the groups present, NaN with fewer than two) and
        ``n_groups`` (points).
    """
    x, y = np.asarray(clock, float), np.asarray(log_loss, float)
    if x.shape != y.shape or x.ndim != 3:
        raise ValueError(f"clock and log_loss must have one shape (groups, runs, n_t); got {x.shape}, {y.shape}")
    at = np.asarray(at, float)
    _validate.integer("min_runs", min_runs, low=1, doc="runs a group needs at a point")
    vals = np.full(x.shape[:2] + at.shape, np.nan)
    for g in range(x.shape[0]):
        for r in range(x.shape[1]):
            ok = (x[g, r] > 0) & np.isfinite(y[g, r])
            if ok.sum() < 2:
                continue
            lx = np.log10(x[g, r][ok])
            inside = (at >= lx[0]) & (at <= lx[-1])
            vals[g, r, inside] = np.interp(at[inside], lx, y[g, r][ok])
    n_runs = np.isfinite(vals).sum(1)
    with warnings.catch_warnings():  # a point no run of a group reaches: NaN, as intended
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.where(n_runs >= min_runs, np.nanmedian(np.where(np.isfinite(vals), vals, np.nan), 1), np.nan)
    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    rng = np.random.default_rng(seed)
    q_lo, q_hi = np.full(med.shape, np.nan), np.full(med.shape, np.nan)
    for g, j in zip(*np.nonzero(np.isfinite(med))):
        v = vals[g, :, j][np.isfinite(vals[g, :, j])]
        boot = np.median(v[rng.integers(len(v), size=(n_boot, len(v)))], axis=1)
        q_lo[g, j], q_hi[g, j] = np.quantile(boot, [0.16, 0.84])
    n = np.isfinite(med).sum(0)
    hi = np.nanmax(np.where(np.isfinite(med), med, -np.inf), 0)
    lo = np.nanmin(np.where(np.isfinite(med), med, np.inf), 0)
    return {"at": at, "median": med, "lo": q_lo, "hi": q_hi, "n_runs": n_runs,
            "spread": np.where(n >= 2, hi - lo, np.nan), "n_groups": n}


def flat_runs(t, log_loss, *, t_from, tol=0.05, floor=-20.0):
    """Runs stuck on a plateau: log10 loss within ``tol`` decades from ``t_from`` to the end.

    ``log_loss`` (..., n_t) recorded at times ``t`` (n_t,). A run counts when the largest
    minus the smallest of its records at t >= ``t_from`` is below ``tol`` and its last record
    is above ``floor`` (runs at the rounding floor of a converged student are flat too, but
    not stuck). Returns (mask (...), level: median of those records (...), span: their
    largest minus smallest (...)).
    """
    t, v = np.asarray(t, float), np.asarray(log_loss, float)
    if t.ndim != 1 or v.shape[-1:] != t.shape:
        raise ValueError(f"t must be 1-d with one entry per record; got {t.shape} and {v.shape}")
    sel = t >= t_from
    if sel.sum() < 2:
        raise ValueError(f"t_from = {t_from} leaves fewer than two records")
    tail = v[..., sel]
    span = tail.max(-1) - tail.min(-1)
    return (span < tol) & (tail[..., -1] > floor), np.median(tail, -1), span
