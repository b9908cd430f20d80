"""Numbers the chapter quotes, computed from simulation or theory outputs (no simulation here).

Exponent fits (:func:`fit_theta`, :func:`local_theta`), the step-budget line of the
phase diagram (:func:`budget_delta`), the agreement of two phase diagrams
(:func:`phase_agreement`, :func:`phase_sides`) and the one-step overlap of a giant step
(:func:`giant_step_overlap`).
"""

import numpy as np

from .. import _validate
from ..stats import bootstrap_median, fit_line


def _log_correction(ds, ell, eta):
    # For ell = 2 the drift is linear in m, so T ~ d^theta ln(eta sqrt d) / rate: the
    # logarithm is divided out before fitting the power (Arnaboldi et al. 2024, "phase
    # diagram"; derived in the chapter). ell >= 3 has no such factor.
    return np.log(np.log(eta * np.sqrt(ds))) if ell == 2 else 0.0


def fit_theta(ds, T, se=None, *, ell, eta):
    """Exponent theta of T ~ d^theta (x ln(eta sqrt d) for ell = 2): weighted least squares of
    log T against log d (weights from the standard errors ``se`` of T, if given).

    Returns the dict of :func:`tsdyn.stats.fit_line` (``slope``, ``slope_se``, ...).
    """
    ds, T = np.asarray(ds, float), np.asarray(T, float)
    _validate.integer("ell", ell, low=2, doc="information exponent")
    _validate.real("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True, doc="weak-recovery threshold")
    if ds.shape != T.shape or len(ds) < 2 or not np.all(T > 0) or not np.all(np.isfinite(T)):
        raise ValueError(f"T must be finite, positive and have the shape of ds (>= 2 sizes); got {T!r}")
    y = np.log(T) - _log_correction(ds, ell, eta)
    return fit_line(np.log(ds), y, None if se is None else np.asarray(se, float) / T)


def local_theta(ds, T, *, ell, eta):
    """Slopes of log T (log-corrected as in :func:`fit_theta`) between successive sizes:
    the local exponent at the geometric midpoints, which tends to theta as d grows."""
    ds, T = np.asarray(ds, float), np.asarray(T, float)
    y = np.log(T) - _log_correction(ds, ell, eta)
    return np.sqrt(ds[1:] * ds[:-1]), np.diff(y) / np.diff(np.log(ds))


def budget_delta(d, budget, gamma0, eta, ell=2):
    """Learning-rate exponent above which runs from m0 = d^-1/2 exceed a step budget.

    He_ell target and student: the drift alone moves the overlap by gamma l m^(l-1) per step
    (chapter Sec. 2). For ell = 2 it is linear, m' = m (1 + 2 gamma), and reaches eta after
    T = ln(eta sqrt d) / (2 gamma) steps; for ell >= 3, dm/dt = gamma l m^(l-1) gives
    T = (m0^(2-l) - eta^(2-l)) / (l (l-2) gamma). With gamma = gamma0 d^-delta, T = budget at
    delta = ln(gamma0 budget / (gamma T)) / ln d.
    """
    return float(np.log(gamma0 * budget / drift_time(d, 1.0, eta, ell)) / np.log(d))


def drift_time(d, gamma, eta, ell=2):
    """Steps the drift alone needs from m0 = d^-1/2 to eta at learning rate ``gamma`` (He_ell target and
    student, chapter Sec. 2): ln(eta sqrt d) / (2 gamma) for ell = 2, and
    (m0^(2-l) - eta^(2-l)) / (l (l-2) gamma) for ell >= 3. The noise, which slows the runs near the
    noise boundary, is left out: it is the scale on which the boundary runs' step budgets are set."""
    _validate.integer("ell", ell, low=2, doc="information exponent")
    _validate.real("gamma", gamma, low=0.0, low_open=True, doc="learning rate")
    if ell == 2:
        gamma_T = np.log(eta * np.sqrt(d)) / 2
    else:
        gamma_T = (d ** ((ell - 2) / 2) - eta ** (2 - ell)) / (ell * (ell - 2))
    return float(gamma_T / gamma)


def phase_agreement(fraction, theory_recovers):
    """Fraction of grid points where the simulations' verdict (at least half of the runs
    recovered) equals the theory's (boolean array of the same shape)."""
    fraction, theory_recovers = np.asarray(fraction, float), np.asarray(theory_recovers, bool)
    if fraction.shape != theory_recovers.shape:
        raise ValueError(f"fraction {fraction.shape} and theory_recovers {theory_recovers.shape} differ in shape")
    return float(np.mean((fraction >= 0.5) == theory_recovers))


def phase_sides(fraction, theory_recovers):
    """Fraction of runs recovered on each side of the theory's boundary, away from it.

    ``fraction`` and ``theory_recovers`` are (mu, delta) grids. A point is *decided* when the
    theory gives the same verdict at its neighbours one grid step above and below in delta
    (the grid's edge counts as the same verdict): the boundary is blurred at finite d over a
    band of about ln(few) / ln d in delta (a run escapes over the unstable overlap
    m* = m0 d^(delta_c - delta) by a fluctuation of a few times m0; the recovery time has a
    run-to-run spread of order one at the budget line), one grid step at d ~ 100. Returns
    ``inside`` / ``outside`` (mean fraction recovered over the decided points where the theory
    recovers / does not; nan if none), ``n_inside``, ``n_outside`` and ``agree``
    (:func:`phase_agreement` over all points).
    """
    fraction, ok = np.asarray(fraction, float), np.asarray(theory_recovers, bool)
    if fraction.shape != ok.shape or fraction.ndim != 2:
        raise ValueError(f"fraction {fraction.shape} and theory_recovers {ok.shape} must be equal 2-d grids")
    below = np.concatenate([ok[:, :1], ok[:, :-1]], axis=1)
    above = np.concatenate([ok[:, 1:], ok[:, -1:]], axis=1)
    decided = (below == ok) & (above == ok)
    inside, outside = fraction[decided & ok], fraction[decided & ~ok]
    return {"inside": float(inside.mean()) if inside.size else np.nan,
            "outside": float(outside.mean()) if outside.size else np.nan,
            "n_inside": int(inside.size), "n_outside": int(outside.size),
            "agree": phase_agreement(fraction, ok)}


def phase_edges(recovers, deltas):
    """Lower and upper edge in delta of the learning region, per mu: the smallest and the largest
    grid delta whose verdict is "recovers" (a boolean (mu, delta) grid, e.g. fraction >= 1/2 of the
    runs, or the theory's verdict). Returns two arrays of length n_mu, nan where nothing recovers.

    The lower edge is the noise boundary (or projected SGD's locality line, where it is higher),
    the upper one the step-budget line."""
    ok, deltas = np.asarray(recovers, bool), np.asarray(deltas, float)
    if ok.ndim != 2 or ok.shape[1] != deltas.size:
        raise ValueError(f"recovers must be an (n_mu, n_delta) grid with n_delta = {deltas.size}; got {ok.shape}")
    lo = np.array([deltas[row].min() if row.any() else np.nan for row in ok])
    hi = np.array([deltas[row].max() if row.any() else np.nan for row in ok])
    return lo, hi


def edge_offsets(fraction, theory_recovers, deltas):
    """Measured edge - theory's edge of the learning region, per mu column, for the lower and the
    upper edge of :func:`phase_edges` (measured: fraction >= 1/2).

    Returns ``lower`` / ``upper``: the largest |offset| over the columns (a column where one of the
    two has a learning region and the other none counts as inf; one where neither has, as 0), and
    ``lower_signed`` / ``upper_signed``: the signed offsets per column (nan where either has no
    learning region), whose mean shows a one-sided bias that the largest |offset| hides, and
    ``one_sided``: per column +1 where only the measurement has a learning region, -1 where only
    the theory has, 0 otherwise (the columns that make an offset inf)."""
    a = phase_edges(np.asarray(fraction, float) >= 0.5, deltas)
    b = phase_edges(theory_recovers, deltas)
    out = {"one_sided": np.isfinite(a[0]).astype(int) - np.isfinite(b[0]).astype(int)}
    for name, x, y in zip(("lower", "upper"), a, b):
        one = np.isnan(x) != np.isnan(y)
        diff = np.where(np.isnan(x) & np.isnan(y), 0.0, np.abs(x - y))
        out[name] = float(np.inf if one.any() else np.max(diff))
        out[f"{name}_signed"] = x - y
    return out


def edge_minus_root(fraction, deltas, root):
    """Measured lower edge of the learning region (the lowest grid delta where at least half of the
    runs recover, :func:`phase_edges`) minus the theory's finite-d noise boundary ``root`` (one value
    per mu column, e.g. ``experiments.noise_boundary_delta``), per column; nan where the column has
    no measured learning region or the root is not finite (no noise boundary in its range).

    At finite d a run can still escape a little below the root: for l >= 3 over the unstable overlap
    m* = m0 d^(root - delta) by a fluctuation of a few m0, i.e. down to about root - ln(3) / ln d
    (chapter, Sec. 5); this is the quantity to compare with that width."""
    lo, _ = phase_edges(np.asarray(fraction, float) >= 0.5, deltas)
    root = np.asarray(root, float)
    if root.shape != lo.shape:
        raise ValueError(f"root must have one value per mu column ({lo.size}); got shape {root.shape}")
    return np.where(np.isfinite(root), lo - root, np.nan)


def giant_step_overlap(A, noise_sq):
    """Overlap after one step with gamma -> infinity: m' = A / sqrt(A^2 + N), where A is the
    mean of <g, w*> and N = (d / n_b) E[F^2] the squared length of the noise part of g.

    At m = d^-1/2, A ~ c d^-(ell-1)/2, so m' = O(1) needs A^2 >~ d / n_b, i.e.
    n_b >~ d^ell (chapter, "giant steps")."""
    A, noise_sq = np.asarray(A, float), np.asarray(noise_sq, float)
    return A / np.sqrt(A ** 2 + noise_sq)


def optimal_batch(n_b, samples, samples_se, *, factor=2.0):
    """The optimal batch measured from sample complexities S = n_b T on a grid of batch sizes.

    Arnaboldi et al. (2024), "time/complexity trade-off": S is flat (the plateau) up to the
    optimal batch and grows beyond it. The measured optimum is the largest n_b such that it
    and every smaller grid batch have S <= ``factor`` min(S): the edge of the plateau, resolved
    to the grid spacing. Returns a dict with ``n_b`` (that batch), ``index``, ``ratio``
    (S / min S per batch), ``ratio_se`` (first-order standard error from ``samples_se``,
    ignoring that of the minimum), ``ratio_next`` (S / min S one grid point further; inf at
    the end of the grid: then the edge is only a lower bound), and ``resolved`` (whether the
    decision holds at two standard errors on both sides: ratio + 2 se <= factor at the
    optimum and ratio_next - 2 se > factor after it; False at the end of the grid).
    """
    n_b, S, se = (np.asarray(x, float) for x in (n_b, samples, samples_se))
    if not (n_b.ndim == 1 and n_b.shape == S.shape == se.shape and n_b.size >= 2):
        raise ValueError(f"n_b, samples and samples_se must be 1-d of one length >= 2; got shapes "
                         f"{n_b.shape}, {S.shape}, {se.shape}")
    if not (np.all(np.diff(n_b) > 0) and np.all(np.isfinite(S)) and np.all(S > 0)):
        raise ValueError("n_b must increase and samples be finite and > 0")
    if not (np.isfinite(factor) and factor > 1):
        raise ValueError(f"factor must be a finite number > 1; got {factor!r}")
    ratio, ratio_se = S / S.min(), se / S.min()
    inside = np.cumprod(ratio <= factor).astype(bool)
    i = int(np.flatnonzero(inside)[-1])
    nxt = float(ratio[i + 1]) if i + 1 < S.size else np.inf
    nxt_se = float(ratio_se[i + 1]) if i + 1 < S.size else 0.0
    resolved = bool(ratio[i] + 2 * ratio_se[i] <= factor and np.isfinite(nxt) and nxt - 2 * nxt_se > factor)
    return {"n_b": float(n_b[i]), "index": i, "ratio": ratio, "ratio_se": ratio_se,
            "ratio_next": nxt, "resolved": resolved}


# --- Hitting times: medians with censoring, bootstrap intervals, exponent fits on log-medians ---

def _times(T, recovered):
    """Hitting times as floats with the runs that did not finish (``recovered`` False) set to +inf."""
    T = np.asarray(T, float)
    rec = np.ones(T.shape, bool) if recovered is None else np.asarray(recovered, bool)
    if rec.shape != T.shape:
        raise ValueError(f"recovered {rec.shape} must have the shape of T {T.shape}")
    if T.shape[-1] < 2:
        raise ValueError(f"need at least 2 runs per point; got {T.shape[-1]}")
    if not np.all(np.isfinite(T[rec]) & (T[rec] >= 0)):
        raise ValueError("the hitting times of the finished runs must be finite and >= 0")
    return np.where(rec, T, np.inf)


def censored_median(T, recovered=None, *, budget=None):
    """Median of hitting times when the runs that do not finish within the budget are censored.

    A censored run is known only to take longer than the budget, so it is ranked above every
    finished run (its time set to +inf). The median of the n runs is then defined exactly when more
    than half of them finish (the middle order statistics are all finite). Otherwise only a lower
    bound is known: the budget (or, without ``budget``, the largest finished time).

    Parameters: ``T`` (..., runs) hitting times, ``recovered`` (..., runs) whether each run finished
    (default: all did). Returns ``(median, lower_bound)``: arrays over the leading axes, with
    ``lower_bound`` True where the median is only bounded from below by the value given.
    """
    x = _times(T, recovered)
    med = np.median(x, axis=-1)
    bound = ~np.isfinite(med)
    if bound.any():
        fin = np.where(np.isfinite(x), x, -np.inf).max(axis=-1)
        med = np.where(bound, fin if budget is None else float(budget), med)
    return med, bound


def _boot_index(n, n_boot, rng):
    return rng.integers(0, n, size=(n_boot, n))


def median_interval(T, recovered=None, *, level=0.68, n_boot=2000, seed=0):
    """Median of hitting times and its percentile-bootstrap interval (runs resampled with
    replacement, censored runs ranked last as in :func:`censored_median`).

    Returns a dict of arrays over the leading axes of ``T`` (..., runs): ``median`` (nan where not
    more than half of the runs finished), ``lo`` / ``hi`` (the ``level`` central interval of the
    bootstrap medians; ``hi`` is inf where in more than (1 - level)/2 of the resamples half of the
    runs or more are censored), ``finished`` (fraction of runs that finished).
    """
    x = _times(T, recovered)
    med, lo, hi = bootstrap_median(x, level=level, n_boot=n_boot, seed=seed)
    return {"median": np.where(np.isfinite(med), med, np.nan), "lo": lo, "hi": hi,
            "finished": np.isfinite(x).mean(axis=-1)}


def fit_theta_median(ds, T, recovered=None, *, ell, eta, n_boot=1000, seed=0):
    """Exponent theta of the median hitting time, median T ~ d^theta (x ln(eta sqrt d) for ell = 2),
    with a bootstrap standard error.

    The line is fitted (unweighted least squares) to log median T, log-corrected as in
    :func:`fit_theta`, against log d. Its error comes from the data, not from a model of them: the
    runs of every size are resampled with replacement (independently per size), the medians and the
    slope recomputed ``n_boot`` times, and ``slope_se`` is the standard deviation of those slopes,
    combined in quadrature with the slope's error from rounding (hitting times are integers: a
    median is known to half a step, +-0.5 / median in log). ``T`` and ``recovered`` are (n_d, runs);
    every size needs more than half of its runs finished (else the median is only a lower bound and
    the fit is refused with a ValueError).

    Returns ``slope``, ``slope_se``, ``intercept``, ``median`` (per d), ``boot_slopes``.
    """
    ds = np.asarray(ds, float)
    _validate.integer("ell", ell, low=2, doc="information exponent")
    _validate.real("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True, doc="weak-recovery threshold")
    x = _times(T, recovered)
    if x.ndim != 2 or x.shape[0] != ds.size or ds.size < 3:
        raise ValueError(f"T must be (n_d, runs) with n_d = len(ds) >= 3; got {x.shape} for {ds.size} sizes")
    med = np.median(x, axis=-1)
    if not np.all(np.isfinite(med) & (med > 0)):
        raise ValueError("at every d more than half of the runs must finish with T > 0 (median defined); "
                         f"got medians {med}")
    logd, corr = np.log(ds), _log_correction(ds, ell, eta)
    f = fit_line(logd, np.log(med) - corr)
    rng = np.random.default_rng(seed)
    boot = np.empty((n_boot, ds.size))
    for i in range(ds.size):
        boot[:, i] = np.median(x[i][_boot_index(x.shape[1], n_boot, rng)], axis=-1)
    ok = np.all(np.isfinite(boot) & (boot > 0), axis=1)
    yb = np.log(boot[ok]) - corr
    xc = logd - logd.mean()
    slopes = (yb - yb.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
    rounding = 0.5 / med
    se_round = np.sqrt(np.sum((xc / (xc @ xc)) ** 2 * rounding ** 2))
    se = float(np.sqrt(np.var(slopes, ddof=1) + se_round ** 2))
    return {"slope": float(f["slope"]), "slope_se": se, "intercept": float(f["intercept"]), "median": med,
            "boot_slopes": slopes, "boot_failed": int((~ok).sum())}


def fit_min_samples(ds, n_b, T, recovered=None, *, ell, eta, n_boot=1000, seed=0):
    """Exponent of the smallest sample complexity over a grid of batches,
    N*(d) = min over mu of n_b(mu, d) x median T(mu, d), fitted as N* ~ d^s (x ln(eta sqrt d) for
    ell = 2, divided out as in :func:`fit_theta`), with a bootstrap standard error.

    Arnaboldi et al. (2024), "time/complexity trade-off": at the best learning rate, projected SGD
    needs n_b T ~ d^(l-1) samples for every n_b <= d^(l/2) (the plateau) and more beyond, so the
    smallest N over the batches tends to d^(l-1). ``n_b`` is (n_mu, n_d) (the batch of every grid
    point), ``T`` and ``recovered`` are (n_mu, n_d, runs). The slope is the unweighted least-squares
    line through log N*(d) against log d; its error is the standard deviation of the slopes over
    ``n_boot`` resamples of the runs (independently per (mu, d), the minimum over mu retaken in every
    resample). The minimum of noisy medians is biased low where several batches share the plateau;
    the bias is a fraction of the bootstrap spread of one median and nearly the same at every d, so it
    moves the intercept, not the slope, to that order.

    Returns ``slope``, ``slope_se``, ``N`` (N* per d), ``lo`` / ``hi`` (the 68% central interval of the
    bootstrap N* per d), ``argmin`` (index of the batch attaining it per d), ``boot_slopes``.
    """
    ds = np.asarray(ds, float)
    nb = np.asarray(n_b, float)
    _validate.integer("ell", ell, low=2, doc="information exponent")
    _validate.real("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True, doc="weak-recovery threshold")
    x = _times(T, recovered)
    if x.ndim != 3 or x.shape[:2] != nb.shape or nb.shape[1] != ds.size or ds.size < 3:
        raise ValueError(f"T must be (n_mu, n_d, runs) and n_b (n_mu, n_d) with n_d = len(ds) >= 3; got "
                         f"T {x.shape}, n_b {nb.shape}, {ds.size} sizes")
    if not np.all(np.isfinite(nb) & (nb >= 1)):
        raise ValueError(f"n_b must be finite and >= 1; got {nb!r}")
    med = np.median(x, axis=-1)
    if not np.all(np.isfinite(med) & (med > 0)):
        raise ValueError("at every (mu, d) more than half of the runs must finish with T > 0 (median defined)")
    N = nb * med
    logd, corr = np.log(ds), _log_correction(ds, ell, eta)
    f = fit_line(logd, np.log(N.min(axis=0)) - corr)
    rng = np.random.default_rng(seed)
    boot = np.empty((n_boot,) + nb.shape)
    for i in range(nb.shape[0]):
        for j in range(nb.shape[1]):
            boot[:, i, j] = np.median(x[i, j][_boot_index(x.shape[-1], n_boot, rng)], axis=-1)
    Nb = (boot * nb).min(axis=1)
    ok = np.all(np.isfinite(Nb), axis=1)
    yb = np.log(Nb[ok]) - corr
    xc = logd - logd.mean()
    slopes = (yb - yb.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
    lo, hi = np.percentile(Nb[ok], [16, 84], axis=0)
    return {"slope": float(f["slope"]), "slope_se": float(np.std(slopes, ddof=1)), "N": N.min(axis=0),
            "lo": lo, "hi": hi, "argmin": N.argmin(axis=0), "boot_slopes": slopes}



# --- Where half of the runs recover: a phase boundary located between grid points ---

def _half_point(deltas, k, n, width=False):
    """Binomial maximum-likelihood fit of P(recover) = 1 / (1 + exp(-sign (delta - delta_half) / s)),
    sign the direction of the trend, to k of n runs recovered at each delta; returns delta_half
    (nan if the recovered fraction does not cross 1/2 on the grid), and with ``width`` (delta_half, s)."""
    from scipy.optimize import minimize
    frac = k / n
    if not (frac.min() < 0.5 < frac.max()):
        return (np.nan, np.nan) if width else np.nan
    sign = 1.0 if frac[np.argmax(deltas)] > frac[np.argmin(deltas)] else -1.0

    def nll(x):
        z = sign * (deltas - x[0]) / np.exp(x[1])
        return np.sum(k * np.logaddexp(0.0, -z) + (n - k) * np.logaddexp(0.0, z))

    start = [deltas[int(np.argmin(np.abs(frac - 0.5)))], np.log(np.ptp(deltas) / 10)]
    x = minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-12}).x
    return (float(x[0]), float(np.exp(x[1]))) if width else float(x[0])


def half_recovery_delta(deltas, recovered, *, n_boot=1000, seed=0):
    """The learning-rate exponent at which half of the runs recover, delta_half, from a logistic
    fit across a fine grid of delta (binomial likelihood), with its bootstrap replicates (runs
    resampled with replacement within each delta).

    ``deltas`` (n_delta,), ``recovered`` (n_delta, runs) booleans. Returns ``(delta_half,
    replicates)``; replicates whose resampled fraction does not cross 1/2 are nan."""
    deltas = np.asarray(deltas, float)
    rec = np.asarray(recovered, bool)
    if rec.ndim != 2 or rec.shape[0] != deltas.size:
        raise ValueError(f"recovered must have shape (len(deltas), runs) = ({deltas.size}, runs); got {rec.shape}")
    n = np.full(deltas.size, rec.shape[1], float)
    rng = np.random.default_rng(seed)
    reps = np.array([_half_point(deltas, np.array([r[rng.integers(0, r.size, r.size)].sum() for r in rec], float), n)
                     for _ in range(n_boot)])
    return _half_point(deltas, rec.sum(axis=1).astype(float), n), reps


def half_recovery_edge(deltas, recovered, *, n_boot=1000, seed=0):
    """:func:`half_recovery_delta` with an error that also holds where the grid does not resolve the
    transition: ``se_boot`` is the bootstrap standard deviation; where the fitted logistic width is below
    the grid spacing h (every run recovers on one side of a grid step and none on the other, so that
    resampling the runs cannot move the fit), the half point is known only to lie within that step, and
    ``se_grid`` = h / sqrt(12) (uniform over it) is added in quadrature; 0 where the fit resolves the
    transition. Returns a dict: ``half``, ``se``, ``se_boot``, ``se_grid``, ``width``."""
    deltas = np.asarray(deltas, float)
    half, reps = half_recovery_delta(deltas, recovered, n_boot=n_boot, seed=seed)
    rec = np.asarray(recovered, bool)
    _, width = _half_point(deltas, rec.sum(axis=1).astype(float), np.full(deltas.size, rec.shape[1], float), True)
    h = float(np.median(np.diff(np.sort(deltas))))
    se_boot = float(np.nanstd(reps, ddof=1)) if np.isfinite(reps).sum() > 1 else np.nan
    se_grid = h / np.sqrt(12) if width < h else 0.0
    return {"half": half, "se": float(np.hypot(se_boot, se_grid)), "se_boot": se_boot, "se_grid": se_grid,
            "width": width}


def boundary_shift(deltas, recovered_a, recovered_b, *, n_boot=1000, seed=0):
    """delta_half of sample b minus that of sample a (:func:`half_recovery_delta`), with the standard
    deviation of the difference of their independent bootstrap replicates as its error.
    Returns a dict: ``shift``, ``se``, ``a``, ``b`` (the two delta_half)."""
    a, ra = half_recovery_delta(deltas, recovered_a, n_boot=n_boot, seed=seed)
    b, rb = half_recovery_delta(deltas, recovered_b, n_boot=n_boot, seed=seed + 1)
    return {"shift": b - a, "se": float(np.nanstd(rb - ra, ddof=1)), "a": a, "b": b}
