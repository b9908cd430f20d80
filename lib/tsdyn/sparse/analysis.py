"""Observables of a run and estimators of the critical mini-batch size m_c.

Hamming distance and TP/TN rates (Marino & Ricci-Tersenghi, secs. 4.1-4.2) compare
the student's matrices with the teacher's on the student's support. m_c is located
by a defined estimator, the crossing of the success fraction through 1/2, with a
bootstrap error bar (:func:`critical_batch`).
"""

import numpy as np

from .. import _validate


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


def crossing(m, fraction, level=0.5):
    """First m at which the fraction crosses ``level`` upwards, linearly interpolated
    in log m between the two grid points around the crossing.

    The fraction below the first grid point (or above the last) is not known, so
    a curve already at or above ``level`` at the first point gives ``m[0]`` with
    ``-inf`` flagged by the caller, and one never reaching it gives ``inf``.
    """
    m = np.asarray(m, float)
    f = np.asarray(fraction, float)
    above = np.nonzero(f >= level)[0]
    if len(above) == 0:
        return np.inf
    k = above[0]
    if k == 0:
        return -np.inf
    x0, x1 = np.log(m[k - 1]), np.log(m[k])
    f0, f1 = f[k - 1], f[k]
    return float(np.exp(x0 + (level - f0) / (f1 - f0) * (x1 - x0)))


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
    runs = success.shape[1]
    m_c = crossing(m, success.mean(1), level)
    rng = np.random.default_rng(seed)
    pick = rng.integers(runs, size=(n_boot, len(m), runs))
    boot_frac = np.take_along_axis(success[None].repeat(n_boot, 0), pick, axis=2).mean(2)
    boot = np.array([crossing(m, f, level) for f in boot_frac])
    finite = boot[np.isfinite(boot)]
    if len(finite) >= 2:
        se = float(finite.std(ddof=1))
        lo, hi = np.quantile(finite, [0.16, 0.84])
    else:
        se, lo, hi = np.nan, np.nan, np.nan
    grid = np.nan
    if np.isfinite(m_c):
        k = int(np.searchsorted(m, m_c))
        k = min(max(k, 1), len(m) - 1)
        grid = float(m_c * np.log(m[k] / m[k - 1]) / np.sqrt(12))
    return {"m_c": m_c, "m_c_se": se, "m_c_lo": float(lo), "m_c_hi": float(hi),
            "finite_fraction": len(finite) / n_boot, "m_c_grid": grid,
            "m_c_err": float(np.nanmax([se, grid])) if np.isfinite(m_c) else np.nan}


def transition_width(m, success, *, lo=0.2, hi=0.8, n_boot=1000, seed=0):
    """Width of the transition: m where the success fraction crosses ``hi`` minus m
    where it crosses ``lo`` (both by :func:`crossing`), with a bootstrap error.

    For a finite-size-rounded transition the width shrinks as N grows. It cannot be
    resolved below the grid: a perfect step between grid points m_k < m_{k+1} gives
    m_k [(m_{k+1}/m_k)^hi - (m_{k+1}/m_k)^lo], about (hi - lo) times the spacing.

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

    w = width(success.mean(1))
    rng = np.random.default_rng(seed)
    runs = success.shape[1]
    pick = rng.integers(runs, size=(n_boot, len(m), runs))
    boot_frac = np.take_along_axis(success[None].repeat(n_boot, 0), pick, axis=2).mean(2)
    boot = np.array([width(f) for f in boot_frac])
    boot = boot[np.isfinite(boot)]
    return {"width": float(w), "width_se": float(boot.std(ddof=1)) if len(boot) >= 2 else np.nan}
