"""Quantities read off simulated or integrated runs (escape times, stationary errors, gaps)."""

import math

import numpy as np

from .. import _validate
from ..stats import batch_means


def escape_time(ds, threshold):
    """First recorded time at which eps_g falls below ``threshold`` (inf if never).

    With ``threshold`` half the plateau height, this is the end of the Saad-Solla
    plateau: the time at which the student units specialise.
    """
    if not np.isfinite(threshold):
        raise ValueError(f"threshold must be finite; got {threshold}")
    below = np.flatnonzero(ds.eg.values < threshold)
    return float(ds.t.values[below[0]]) if len(below) else np.inf


def plateau_stats(ds, height):
    """Escape time from a plateau of height ``height``, and the height the run shows.

    The escape time is the first recorded time at which eps_g falls below
    ``height / 2``; the measured height is the median eps_g over the middle third
    of [0, t_esc] (NaN if the run never escapes).
    """
    t_esc = escape_time(ds, height / 2)
    if not np.isfinite(t_esc):
        return t_esc, np.nan
    return t_esc, float(np.median(ds.eg.sel(t=slice(t_esc / 3, 2 * t_esc / 3)).values))


def stationary_error(ds, t_from, n_batches=10):
    """Time average of eps_g over t >= t_from, with its batch-means standard error."""
    tail = ds.eg.sel(t=slice(t_from, None)).values
    if np.any(~np.isfinite(tail)):
        raise ValueError("the run diverged before the averaging window ended")
    return batch_means(tail, n_batches)


def max_gap(sim, theory):
    """sup_t |eps_g^sim(t) - eps_g^theory(t)| over the common time axis."""
    if not np.array_equal(sim.t.values, theory.t.values):
        raise ValueError("simulation and theory must share the time axis (use ode(init=sim))")
    return float(np.max(np.abs(sim.eg.values - theory.eg.values)))


def growth_rate(ds):
    """Exponential rate of eps_g: least-squares slope of ln eps_g against t.

    Uses the recorded times before any divergence where eps_g is positive and
    finite; raises if fewer than three remain.
    """
    eg, t = ds.eg.values, ds.t.values
    ok = np.isfinite(eg) & (eg > 0)
    if ok.sum() < 3:
        raise ValueError("need at least three finite, positive eps_g values for a rate")
    return float(np.polyfit(t[ok], np.log(eg[ok]), 1)[0])


def paired_log_ratio(sims, theories, *, floor=1e-10):
    """ln(eps_g^SGD / eps_g^ODE) per recorded time, mean and standard error over runs.

    Run i is paired with the ODE integrated from its own initial overlaps, so the
    spread of the initial conditions cancels. Times at which some run or ODE has
    eps_g <= ``floor`` (where rounding of the overlaps and the ODE tolerance set the
    value) give NaN. Returns (t, mean, standard error), each of length n_t.
    """
    if len(sims) != len(theories) or len(sims) < 2:
        raise ValueError(f"need the same number (>= 2) of runs and ODEs; got {len(sims)}, "
                         f"{len(theories)}")
    for s, o in zip(sims, theories):
        if not np.array_equal(s.t.values, o.t.values):
            raise ValueError("each run and its ODE must share the time axis (use ode(init=run))")
    a = np.stack([s.eg.values for s in sims])
    b = np.stack([o.eg.values for o in theories])
    ok = np.all((a > floor) & (b > floor), axis=0)
    d = np.full(a.shape, np.nan)
    d[:, ok] = np.log(a[:, ok] / b[:, ok])
    return sims[0].t.values, d.mean(0), d.std(0, ddof=1) / np.sqrt(len(sims))


def decay_rate(ds, below, *, floor=1e-10):
    """Exponential rate of eps_g once it has fallen below ``below``, down to ``floor``.

    The least-squares slope of ln eps_g against t over the recorded times after the
    first one with eps_g < ``below`` at which eps_g > ``floor`` (NaN if fewer than
    three): the rate of the convergence phase of a noiseless student that can
    represent its teacher, above the level where rounding sets eps_g.
    """
    t, eg = ds.t.values, ds.eg.values
    first = np.flatnonzero(eg < below)
    if len(first) == 0:
        return np.nan
    sel = np.arange(len(t)) >= first[0]
    sel &= eg > floor
    if sel.sum() < 3:
        return np.nan
    return float(np.polyfit(t[sel], np.log(eg[sel]), 1)[0])


def unit_arrangement(R, v, *, off=0.05):
    """How the student units are shared out among the teacher units (both layers trained).

    Unit k counts for the teacher unit n with the largest |R_kn|, unless its
    second-layer weight is switched off, |v_k| < ``off`` * max_k |v_k|; such a unit
    adds nothing to the output whatever its first-layer weights. (An erf unit and
    its mirror image -w_k, -v_k have the same output, so the sign of R is ignored.)

    Parameters
    ----------
    R : ndarray, shape (K, M)
        Student-teacher overlaps at the time of interest.
    v : ndarray, shape (K,)
        Student second-layer weights.
    off : float
        Threshold, relative to the largest |v_k|, below which a unit counts as off.

    Returns
    -------
    tuple of int
        The number of active units on each teacher unit, sorted in decreasing order
        (length M), followed by the number of units switched off: (2, 2, 1) for a
        K = 5, M = 2 student with two units on each teacher unit and one off.
    """
    R = np.asarray(R, float)
    v = np.asarray(v, float)
    if R.ndim != 2 or v.shape != (R.shape[0],):
        raise ValueError(f"R must have shape (K, M) and v shape (K,); got {R.shape}, {v.shape}")
    if not 0 <= off < 1:
        raise ValueError(f"off (relative threshold on |v_k|) must lie in [0, 1); got {off}")
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(v))):
        raise ValueError("R and v must be finite (the run diverged?)")
    active = np.abs(v) >= off * np.abs(v).max()
    counts = np.bincount(np.argmax(np.abs(R), axis=1)[active], minlength=R.shape[1])
    return (*sorted(counts.tolist(), reverse=True), int((~active).sum()))


def weight_imbalance(R, v, *, off=0.05):
    """How unevenly the units on one teacher unit share its second-layer weight.

    For each teacher unit with two or more active units (as in
    :func:`unit_arrangement`), (max |v_k| - min |v_k|) / sum |v_k| over its units;
    returns the largest over teacher units (0 when no teacher unit has two). The
    denoising solution shares the weight equally (0); without label noise every
    split is a solution, and the noise pulls the split towards equal only slowly.
    """
    R = np.asarray(R, float)
    v = np.abs(np.asarray(v, float))
    unit_arrangement(R, v, off=off)  # validates
    active = v >= off * v.max()
    owner = np.argmax(np.abs(R), axis=1)
    worst = 0.0
    for n in range(R.shape[1]):
        w = v[active & (owner == n)]
        if len(w) >= 2:
            worst = max(worst, float((w.max() - w.min()) / w.sum()))
    return worst


def log_ratio_drift(sims, theories, *, below=1e-3, floor_factor=100.0):
    """Coherent drift of ln(eps_g^SGD / eps_g^ODE) in the convergence phase, run by run.

    In the convergence phase of a noiseless student that can represent its teacher, a run
    and the ODE from its own start (Goldt et al. eq. 9) both decay exponentially; if they
    decay at the same rate, the log-ratio of run i to its ODE is a constant (a shift of the
    escape), otherwise it drifts linearly in t. For each pair the least-squares slope of
    ln(eps_g^SGD / eps_g^ODE) against t is fitted over the window that starts at the first
    recorded time with the ODE's eps_g below ``below`` and ends where either error reaches
    its floor: the last time before the first at which the run's or the ODE's eps_g falls
    to ``floor_factor`` times the ODE's resolution (``attrs["eg_floor"]``, its absolute
    tolerance; at 100 times it the ODE's value is accurate to about 1%). Unlike a pointwise
    comparison, a slope averages over the whole window, so it has power against a drift
    that is a few standard errors deep at every single time.

    Returns
    -------
    dict
        ``slope``, ``slope_se``: mean over pairs of the slope (per unit t) and its standard
        error; ``rel``, ``rel_se``: the same for the slope divided by the ODE's own decay
        rate over that window (a relative rate difference); ``n``: pairs with at least
        three points in their window; ``t_end``: median end of the windows; ``floor``: the
        floor used.
    """
    if len(sims) != len(theories) or len(sims) < 2:
        raise ValueError(f"need the same number (>= 2) of runs and ODEs; got {len(sims)}, "
                         f"{len(theories)}")
    slopes, rel, ends, floor = [], [], [], None
    for s, o in zip(sims, theories):
        if not np.array_equal(s.t.values, o.t.values):
            raise ValueError("each run and its ODE must share the time axis (use ode(init=run))")
        floor = floor_factor * float(o.attrs["eg_floor"])
        t, a, b = s.t.values, s.eg.values, o.eg.values
        start = np.flatnonzero(b < below)
        if len(start) == 0:
            continue
        low = np.flatnonzero(~((a > floor) & (b > floor)) & (np.arange(len(t)) >= start[0]))
        stop = low[0] if len(low) else len(t)
        sel = slice(start[0], stop)
        if stop - start[0] < 3:
            continue
        slope = np.polyfit(t[sel], np.log(a[sel] / b[sel]), 1)[0]
        rate = np.polyfit(t[sel], np.log(b[sel]), 1)[0]
        slopes.append(slope)
        rel.append(slope / abs(rate))
        ends.append(t[stop - 1])
    n = len(slopes)
    if n < 2:
        nan = float("nan")
        return {"slope": nan, "slope_se": nan, "rel": nan, "rel_se": nan, "n": n,
                "t_end": nan, "floor": floor}
    slopes, rel = np.array(slopes), np.array(rel)
    return {"slope": float(slopes.mean()), "slope_se": float(slopes.std(ddof=1) / np.sqrt(n)),
            "rel": float(rel.mean()), "rel_se": float(rel.std(ddof=1) / np.sqrt(n)), "n": n,
            "t_end": float(np.median(ends)), "floor": floor}


def gap_exponents(Ns, gaps):
    """The exponent a of mean gap ~ N^a, one per time window (Goldt et al., Theorem 1: -1/2).

    ``gaps`` (len(Ns), runs, windows) holds sup_t |eps_g^run - eps_g^ODE| over each window,
    one run per row, each against the ODE from its own start. Per window, the weighted
    least-squares slope of ln(mean over runs) on ln N (weights from the relative standard
    errors of the means; :func:`tsdyn.stats.fit_line`). Returns (slope, slope_se), arrays
    over the windows.
    """
    from ..stats import fit_line

    Ns, gaps = np.asarray(Ns, float), np.asarray(gaps, float)
    if gaps.ndim != 3 or gaps.shape[0] != len(Ns) or gaps.shape[1] < 2:
        raise ValueError(f"gaps must have shape (len(Ns), runs >= 2, windows); got {gaps.shape}")
    mean = gaps.mean(1)
    rel = gaps.std(1, ddof=1) / np.sqrt(gaps.shape[1]) / mean
    fits = [fit_line(np.log(Ns), np.log(mean[:, w]), rel[:, w]) for w in range(gaps.shape[2])]
    return np.array([f["slope"] for f in fits]), np.array([f["slope_se"] for f in fits])


def spread(x):
    """Mean, standard deviation and skewness of independent times ``x`` (1-d), with errors.

    Returns (mean, mean_se, std, std_se, skew): the standard error of the standard deviation
    is the delta-method one from the fourth central moment, sqrt((m4 - m2^2) / n) / (2 sqrt m2),
    which, unlike sigma / sqrt(2 n), holds for a skewed law such as that of escape times.
    """
    x = np.asarray(x, float)
    if x.ndim != 1 or len(x) < 4 or not np.all(np.isfinite(x)):
        raise ValueError(f"x must be 1-d with at least 4 finite values; got shape {x.shape}")
    n = len(x)
    c = x - x.mean()
    m2, m3, m4 = (c ** 2).mean(), (c ** 3).mean(), (c ** 4).mean()
    return (float(x.mean()), float(x.std(ddof=1) / np.sqrt(n)), float(x.std(ddof=1)),
            float(np.sqrt(max(m4 - m2 ** 2, 0.0) / n) / (2 * np.sqrt(m2))), float(m3 / m2 ** 1.5))


def log_binned_mean(t, y, edges):
    """Mean of ``y`` over the recorded times in each bin ``[edges[j], edges[j+1])``.

    Used to read a noisy run's eps_g(t) on a logarithmic time axis (Fig. 2a at late
    times): each bin averages the records inside it. A bin without records is NaN.

    Parameters
    ----------
    t : ndarray, shape (n,)
        Recorded times (SGD steps / N).
    y : ndarray, shape (n,) or (..., n)
        Values at those times; the last axis is time.
    edges : ndarray, shape (n_bins + 1,)
        Increasing bin edges; the last bin includes its right edge.

    Returns
    -------
    centres : ndarray, shape (n_bins,)
        Geometric centres sqrt(edges[j] edges[j+1]) (arithmetic where an edge is 0).
    means : ndarray, shape (..., n_bins)
    """
    t, y, edges = np.asarray(t, float), np.asarray(y, float), np.asarray(edges, float)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError(f"edges must be an increasing 1-d array of at least 2 values; got {edges}")
    if y.shape[-1] != t.size:
        raise ValueError(f"y's last axis ({y.shape[-1]}) must match t ({t.size})")
    lo, hi = edges[:-1], edges[1:]
    centres = np.where(lo > 0, np.sqrt(np.abs(lo * hi)), (lo + hi) / 2)
    means = np.full(y.shape[:-1] + (lo.size,), np.nan)
    for j in range(lo.size):
        inside = (t >= lo[j]) & ((t < hi[j]) | ((j == lo.size - 1) & (t == hi[j])))
        if inside.any():
            means[..., j] = y[..., inside].mean(-1)
    return centres, means


def arrangement_agreement(sgd, ode, arr_sgd, arr_ode, *, excess=0.0, excess_se=0.0):
    """Paired SGD-ODE comparison of late errors, per final arrangement of the units.

    Pairs (a run and the ODE from its start) are grouped by arrangement; only pairs
    whose run and ODE end in the same arrangement enter its paired test. With
    d_i = sgd_i - (1 + excess) ode_i, the statistic is

        z = mean(d) / sqrt(s_d^2 / n + (excess_se * mean(ode))^2),

    s_d the standard deviation of d over the n pairs: SGD's finite-N excess over the
    ODE (a relative ``excess`` with error ``excess_se``, measured where there is a
    single arrangement) is allowed for, and its error counted.

    Parameters
    ----------
    sgd, ode : ndarray, shape (n,)
        Late errors of each run and of the ODE from its start.
    arr_sgd, arr_ode : ndarray, shape (n, M + 1)
        Final arrangements (:func:`unit_arrangement`).
    excess, excess_se : float
        Relative finite-N excess of SGD over the ODE and its standard error.

    Returns
    -------
    list of dict
        One per arrangement reached by a run or an ODE, in decreasing order:
        ``arrangement`` (tuple), ``runs``, ``odes`` (how many end in it), ``pairs``
        (both end in it), ``sgd``, ``ode`` (means over those pairs), ``ratio``
        (sgd / ode), ``z`` (NaN with fewer than two pairs).
    """
    sgd, ode = np.asarray(sgd, float), np.asarray(ode, float)
    arr_sgd, arr_ode = np.asarray(arr_sgd), np.asarray(arr_ode)
    if not (sgd.shape == ode.shape == arr_sgd.shape[:1] == arr_ode.shape[:1]):
        raise ValueError("sgd, ode, arr_sgd and arr_ode must describe the same pairs")
    if not excess_se >= 0:
        raise ValueError(f"excess_se must be >= 0; got {excess_se}")
    out = []
    for arr in sorted({tuple(a) for a in np.concatenate([arr_sgd, arr_ode]).tolist()}, reverse=True):
        in_s, in_o = np.all(arr_sgd == arr, -1), np.all(arr_ode == arr, -1)
        both = in_s & in_o
        n = int(both.sum())
        row = {"arrangement": arr, "runs": int(in_s.sum()), "odes": int(in_o.sum()), "pairs": n,
               "sgd": np.nan, "ode": np.nan, "ratio": np.nan, "z": np.nan}
        if n:
            s, o = sgd[both].mean(), ode[both].mean()
            row.update(sgd=float(s), ode=float(o), ratio=float(s / o))
        if n > 1:
            d = sgd[both] - (1.0 + excess) * ode[both]
            se = math.hypot(d.std(ddof=1) / math.sqrt(n), excess_se * ode[both].mean())
            row["z"] = float(d.mean() / se)
        out.append(row)
    return out


def log_interp(t, y, times):
    """``y`` at ``times``, interpolated linearly in ln t between the recorded ``t``.

    For reading an ODE integrated on a log grid at chosen multiples of a run's length.
    Times outside ``[t[0], t[-1]]`` raise (no extrapolation).
    """
    t, y, times = np.asarray(t, float), np.asarray(y, float), np.atleast_1d(np.asarray(times, float))
    if np.any(t <= 0) or np.any(np.diff(t) <= 0):
        raise ValueError("t must be increasing and > 0 (a log axis)")
    if np.any(times < t[0] * (1 - 1e-12)) or np.any(times > t[-1] * (1 + 1e-12)):
        raise ValueError(f"times {times} outside the recorded [{t[0]}, {t[-1]}]")
    return np.interp(np.log(times), np.log(t), y)


def _category_codes(*arrays):
    """Integer codes of the rows of the last axis of each array, over the rows of all of them."""
    rows = np.concatenate([np.asarray(a).reshape(-1, np.shape(a)[-1]) for a in arrays])
    cats, inv = np.unique(rows, axis=0, return_inverse=True)
    out, i = [], 0
    for a in arrays:
        n = int(np.prod(np.shape(a)[:-1]))
        out.append(inv.ravel()[i:i + n].reshape(np.shape(a)[:-1]))
        i += n
    return cats, out


def arrangement_probabilities(outcomes, categories, *, level=0.95):
    """The probability of each arrangement, with its interval, from outcomes grouped by start.

    ``outcomes`` (n_starts, n_per_start, d): the final arrangements (rows of d integers, e.g.
    the student size followed by :func:`unit_arrangement`) of ``n_per_start`` runs or paths
    from each of ``n_starts`` independent starts; ``categories`` (C, d): the arrangements to
    report. P_c is the fraction of all outcomes in c. With one outcome per start the outcomes
    are independent and the interval is Wilson's score interval for n_starts trials. With
    several, outcomes from one start are correlated, and the variance of P_c is the cluster
    estimator Var = s_c^2 / n_starts, s_c^2 the variance over starts of the per-start fraction
    in c; the Wilson interval is then taken at the effective number of trials
    P_c (1 - P_c) / Var, kept between n_starts and n_starts n_per_start (the latter when Var
    is 0).

    Returns
    -------
    p, lo, hi : ndarray, shape (C,)
    """
    from scipy.stats import norm

    outcomes = np.asarray(outcomes)
    categories = np.asarray(categories)
    if outcomes.ndim != 3 or categories.ndim != 2 or outcomes.shape[-1] != categories.shape[-1]:
        raise ValueError(f"outcomes must be (n_starts, n_per_start, d) and categories (C, d); got "
                         f"{outcomes.shape} and {categories.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    n, k = outcomes.shape[:2]
    frac = np.all(outcomes[:, :, None, :] == categories[None, None], axis=-1).mean(1)  # (n, C)
    p = frac.mean(0)
    if k == 1 or n < 2:
        n_eff = np.full(len(p), float(n))
    else:
        var = frac.var(0, ddof=1) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            n_eff = np.where(var > 0, p * (1 - p) / var, n * k)
        n_eff = np.clip(n_eff, n, n * k)
    z = norm.isf((1 - level) / 2)
    centre = (p + z ** 2 / (2 * n_eff)) / (1 + z ** 2 / n_eff)
    half = z / (1 + z ** 2 / n_eff) * np.sqrt(p * (1 - p) / n_eff + z ** 2 / (4 * n_eff ** 2))
    return p, np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def arrangement_test(runs, paths, ode, *, n_perm=20000, seed=0):
    """Do runs end in the arrangements that a model's paths from the same starts end in?

    A stratified permutation test. Start i has one run (``runs[i]``, d integers), ``P`` paths of
    a model of its fluctuations from the same start (``paths[i]``, e.g. the diffusion (D2) of
    :func:`tsdyn.committee.diffusion_arrangements`) and the arrangement of the ODE from that
    start (``ode[i]``). If the model is right, the run and the paths of one start are P + 1
    exchangeable draws of one law, so any reassignment of which of them plays the run is as
    likely as the observed one; the test draws ``n_perm`` such reassignments, start by start.
    Two statistics, each against its permutation law:

    * the distance of the pooled distributions over arrangements,
      D = sum_c (p_c^run - p_c^path)^2 / p_c^all (a chi-square distance);
    * the difference of the fractions that end where the ODE from the same start ends,
      |m^run - m^path| (the ODE alone predicts m = 1).

    Their p-values, (1 + #{permuted >= observed}) / (1 + n_perm), are combined by Bonferroni,
    p = min(1, 2 min(p_dist, p_match)).

    Returns
    -------
    dict
        ``p``, ``p_dist``, ``p_match``; ``m_run`` and ``m_path`` (fractions ending on the ODE's
        arrangement), ``m_path_se`` (over starts); ``diff_se``: the standard deviation of
        m^run - m^path under the permutations (the null), so that a difference of
        ``(z_{1-alpha/4} + z_power) diff_se`` is detected with probability ``power`` at level
        ``alpha`` (the test's power at these counts); ``n``, ``paths``.
    """
    runs, paths, ode = (np.asarray(a) for a in (runs, paths, ode))
    if not (runs.ndim == 2 and paths.ndim == 3 and ode.shape == runs.shape
            and paths.shape[0] == runs.shape[0] and paths.shape[2] == runs.shape[1]):
        raise ValueError(f"runs and ode must be (n, d) and paths (n, P, d); got {runs.shape}, "
                         f"{ode.shape}, {paths.shape}")
    n, P = paths.shape[:2]
    if n < 2:
        raise ValueError(f"need at least two starts; got {n}")
    _validate.integer("n_perm", n_perm, low=100, doc="random reassignments")
    _, (codes, ode_codes) = _category_codes(np.concatenate([runs[:, None], paths], 1), ode)
    C = int(codes.max()) + 1
    on_ode = codes == ode_codes[:, None]  # (n, P + 1)
    total = np.zeros(C)
    np.add.at(total, codes.ravel(), 1.0)
    p_all = total / total.sum()

    def stats(pick):  # pick (m, n): which outcome of each start plays the run
        run_codes = np.take_along_axis(np.broadcast_to(codes, (len(pick), n, P + 1)),
                                       pick[..., None], -1)[..., 0]
        c_run = np.stack([np.bincount(r, minlength=C) for r in run_codes]).astype(float)
        p_run, p_path = c_run / n, (total - c_run) / (n * P)
        dist = np.sum((p_run - p_path) ** 2 / np.where(p_all > 0, p_all, 1.0), axis=1)
        m_pick = np.take_along_axis(np.broadcast_to(on_ode, (len(pick), n, P + 1)),
                                    pick[..., None], -1)[..., 0]
        m_run = m_pick.mean(1)
        m_path = (on_ode.sum() - m_pick.sum(1)) / (n * P)
        return dist, m_run - m_path

    obs_dist, obs_diff = (x[0] for x in stats(np.zeros((1, n), dtype=np.int64)))
    rng = np.random.default_rng(seed)
    dist, diff = stats(rng.integers(0, P + 1, size=(n_perm, n)))
    p_dist = (1 + np.sum(dist >= obs_dist * (1 - 1e-12))) / (1 + n_perm)
    p_match = (1 + np.sum(np.abs(diff) >= abs(obs_diff) * (1 - 1e-12))) / (1 + n_perm)
    m_start = on_ode[:, 1:].mean(1)
    return {"p": float(min(1.0, 2 * min(p_dist, p_match))), "p_dist": float(p_dist),
            "p_match": float(p_match), "m_run": float(on_ode[:, 0].mean()),
            "m_path": float(m_start.mean()), "m_path_se": float(m_start.std(ddof=1) / np.sqrt(n)),
            "diff_se": float(diff.std()), "n": int(n), "paths": int(P)}
