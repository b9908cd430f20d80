"""Where simulations at finite d leave the DMFT, and why: deviations read at fixed times,
and the spread of the escape from the unstable point m = 0 across training sets.

A learning curve that drops abruptly (the three-cluster escape) can deviate from the theory
during the drop only; a time average over a long window dilutes that. :func:`time_deviations`
compares the runs and the DMFT solutions at fixed times instead, one Welch comparison per
time, and :func:`largest_deviation` reports the largest with its place.

At finite d each training set escapes at its own time. If the typical (median) escape does
not move with d but the escape times spread about it, the mean over training sets is the DMFT
curve averaged over delays of its escape: flatter and, during the drop, above the DMFT.
:func:`escape_spread` measures the median and the spread across dimensions;
:func:`shifted_theory` predicts the mean curve at one d from the DMFT and the measured delays.
"""

import numpy as np
import xarray as xr

from .. import _validate
from ..stats import fit_line, max_abs_t_quantile_mixed
from .analysis import difference, escape_times, mean_se, median_ci, simulate_seeds, value_at


def time_deviations(sols, sim, *, times, variables=("eg",)):
    """Simulation minus DMFT at fixed times, one Welch comparison per time and variable.

    At each time in ``times`` every simulated run (``sim[var + "_run"]``,
    :func:`~tsdyn.dmft.simulate_seeds`) and every DMFT solution (``sols``,
    :func:`~tsdyn.dmft.solve_seeds`) is read at that time (linear interpolation between
    grid times, :func:`~tsdyn.dmft.value_at`); the two sets are independent samples,
    compared by :func:`~tsdyn.dmft.difference`. Comparisons at nearby times share their
    runs and are positively correlated.

    Returns a list of dicts: ``var``, ``t``, ``sim`` and ``sim_se``, ``dmft`` and
    ``dmft_se`` (means and standard errors), and the fields of
    :func:`~tsdyn.dmft.difference` (``diff``, ``se``, ``z``, ``dof``, ``p``).
    """
    times = np.atleast_1d(np.asarray(times, float))
    if times.size == 0:
        raise ValueError("times (observation times) must hold at least one time")
    rows = []
    for v in variables:
        runs = sim[v + "_run"].values
        th = np.stack([s[v].values for s in sols])
        for t in times:
            a = value_at(runs, sim.t.values, t)
            b = value_at(th, sols[0].t.values, t)
            (ma, sa), (mb, sb) = mean_se(a), mean_se(b)
            rows.append(dict(var=v, t=float(t), sim=ma, sim_se=sa, dmft=mb, dmft_se=sb,
                             **difference(a, b)))
    return rows


def largest_deviation(rows):
    """The largest of the deviations ``rows`` (:func:`time_deviations`, any number of curves
    pooled) and the yardsticks for the largest of that many.

    Returns the row of the largest ``z`` with ``n`` (deviations pooled), ``z95`` and ``z999``
    (95% and 99.9% quantiles of the largest of ``n`` independent |t| variables with the rows'
    Welch degrees of freedom, :func:`tsdyn.stats.max_abs_t_quantile_mixed`; the deviations of
    one curve are positively correlated, so the largest of them exceeds these less often).
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows (deviations) must hold at least one deviation")
    top = max(rows, key=lambda r: r["z"])
    dofs = [r["dof"] for r in rows]
    return dict(top, n=len(rows), z95=max_abs_t_quantile_mixed(dofs, q=0.95),
                z999=max_abs_t_quantile_mixed(dofs, q=0.999))


def crossing_time(values, t, level):
    """First time each run's |value| reaches ``level``, interpolated linearly between the two
    grid times around the crossing (inf if it never does). ``values``: array (runs, t).

    The escape time of :func:`~tsdyn.dmft.escape_times` without its grid resolution: a
    spread of escape times comparable to the step is not quantised by it.
    """
    x = np.abs(np.atleast_2d(np.asarray(values, float)))
    t = np.asarray(t, float)
    if x.shape[1] != t.size:
        raise ValueError(f"values (runs, t) must have {t.size} columns; got shape {x.shape}")
    _validate.real("level", level, low=0.0, low_open=True, doc="escape level of |m|")
    out = np.full(x.shape[0], np.inf)
    for i, row in enumerate(x):
        hit = np.flatnonzero(row >= level)
        if hit.size == 0:
            continue
        k = hit[0]
        if k == 0:
            out[i] = t[0]
        else:
            f = (level - row[k - 1]) / (row[k] - row[k - 1])
            out[i] = t[k - 1] + f * (t[k] - t[k - 1])
    return out


def _boot_stat(x, stat, n_boot, rng, q=0.95):
    """``stat`` of ``x`` and its percentile bootstrap interval (runs resampled)."""
    boot = np.array([stat(x[rng.integers(0, x.size, x.size)]) for _ in range(n_boot)])
    lo, hi = np.quantile(boot, [(1 - q) / 2, 1 - (1 - q) / 2])
    return float(stat(x)), float(lo), float(hi)


def _iqr(x):
    return float(np.subtract(*np.quantile(x, [0.75, 0.25])))


def escape_spread(params, t_max, *, ds, seeds, level, t_spread, known=None, n_boot=2000, seed=0,
                  executor=None, cache=None):
    """The escape from m = 0 across training sets, at several dimensions: its median, its
    spread, and the spread of the magnetisation before it.

    For each d of ``ds``, ``seeds`` training sets (:func:`~tsdyn.dmft.simulate_seeds`, each d
    with its own; ``known`` maps a d to a simulation already run, used as it is). Per run: the
    escape time (|m| reaches ``level``, :func:`crossing_time`) and |m| at ``t_spread``
    (before the escape, where a run's delay is set). Per d: the median escape time with a
    bootstrap 95% interval (:func:`~tsdyn.dmft.median_ci`; runs that never escape rank last);
    the interquartile range of the escape times and the standard deviation of |m(t_spread)|,
    each with a percentile bootstrap 95% interval. Across d: weighted least-squares slopes of
    log(spread) against log d (errors from the bootstrap intervals, half-width / 1.96 in the
    log), the exponent that d^(-1/2) predicts for a fluctuation of the training set.

    Returns (xarray.Dataset over ``d``, {d: simulation}). Variables: esc_median (+ _lo, _hi),
    esc_iqr (+ _lo, _hi), m_sd (+ _lo, _hi), m_mean, n_censored, n_flipped; attrs:
    m_sd_slope (+ _se), esc_iqr_slope (+ _se), level, t_spread, seeds.
    """
    ds = [int(d) for d in ds]
    if len(ds) < 2:
        raise ValueError(f"ds (dimensions) must hold at least 2 values; got {ds!r}")
    _validate.real("level", level, low=0.0, low_open=True, doc="escape level of |m|")
    _validate.real("t_spread", t_spread, low=0.0, low_open=True, high=t_max,
                   doc="time at which the spread of |m| is read")
    known = {} if known is None else dict(known)
    rng = np.random.default_rng(seed)
    sims, rows = {}, []
    for d in ds:
        sim = known[d] if d in known else simulate_seeds(params, t_max, d=d, seeds=seeds,
                                                         executor=executor, cache=cache)
        sims[d] = sim
        m = sim.m_run.values
        esc = crossing_time(m, sim.t.values, level)
        _, flipped = escape_times(m, sim.t.values, level)
        m_s = np.abs(value_at(m, sim.t.values, t_spread))
        rows.append(dict(esc=median_ci(esc, n_boot=n_boot, seed=seed),
                         iqr=_boot_stat(esc, _iqr, n_boot, rng),
                         sd=_boot_stat(m_s, lambda x: float(np.std(x, ddof=1)), n_boot, rng),
                         m_mean=float(m_s.mean()), censored=int(np.sum(~np.isfinite(esc))),
                         flipped=flipped))

    def slope(key):
        y = np.array([r[key] for r in rows])
        if np.any(~np.isfinite(y)) or np.any(y[:, 1] <= 0):
            return float("nan"), float("nan")
        err = (np.log(y[:, 2]) - np.log(y[:, 1])) / (2 * 1.96)
        if len(ds) < 3:
            return float(np.diff(np.log(y[:, 0]))[0] / np.diff(np.log(ds))[0]), float("nan")
        fit = fit_line(np.log(ds), np.log(y[:, 0]), np.maximum(err, 1e-12))
        return float(fit["slope"]), float(fit["slope_se"])

    attrs = {**params.attrs(), "level": float(level), "t_spread": float(t_spread), "seeds": int(seeds)}
    for name, key in (("m_sd", "sd"), ("esc_iqr", "iqr")):
        attrs[f"{name}_slope"], attrs[f"{name}_slope_se"] = slope(key)
    out = {}
    for name, key in (("esc_median", "esc"), ("esc_iqr", "iqr"), ("m_sd", "sd")):
        for i, suffix in enumerate(("", "_lo", "_hi")):
            out[name + suffix] = ("d", np.array([r[key][i] for r in rows]))
    out["m_mean"] = ("d", np.array([r["m_mean"] for r in rows]))
    out["n_censored"] = ("d", np.array([r["censored"] for r in rows]))
    out["n_flipped"] = ("d", np.array([r["flipped"] for r in rows]))
    return xr.Dataset(out, coords={"d": ("d", np.array(ds))}, attrs=attrs), sims


def shifted_theory(params, sols, sim, *, level, centre="median"):
    """The mean simulated test error predicted from the DMFT and each run's own escape time.

    A run that escapes at tau_i is taken to be the DMFT with its magnetisation delayed by
    s_i = tau_i - tau_c: m_i(t) = m_DMFT(t - s_i), while the part of the weights orthogonal to
    v*, C_perp = C - m^2, is self-averaging and keeps the DMFT's C_perp(t). Each run's test
    error follows from (m_i, m_i^2 + C_perp) (:func:`~tsdyn.dmft.generalisation_error`), and

        <eps_g>(t) = (1/n) sum_i eps_g(m_DMFT(t - s_i), m_DMFT(t - s_i)^2 + C_perp(t))

    (m_DMFT before 0 reads its first value, after its end its last). The initial transient of
    C_perp, which every run goes through at the same time, is therefore not delayed; only the
    escape is. With ``centre="median"`` tau_c is the median escape time of the runs: only their
    spread about it enters (the DMFT keeps its own escape time). With ``centre="dmft"`` tau_c is
    the escape time of the mean DMFT curve: each run is moved to its own escape time, the median
    shift included. Escape times are the first time |m| reaches ``level``
    (:func:`crossing_time`); runs that never reach it are left out of the prediction and of
    the residuals. The three-cluster error depends on m only through |m|, so a run that
    escaped to m < 0 is the same state as its mirror image.

    The prediction uses the same runs as the mean it is compared with, so the comparison is
    paired: per run the residual r_i(t) = eps_g,i(t) - eps_g(m_DMFT(t - s_i), ...), whose mean
    and standard error (over runs, with the DMFT's standard error added in quadrature) say
    whether the runs are the DMFT with a delayed escape.

    Returns an xarray.Dataset over the simulation's ``t``: sim, sim_se (all runs), dmft,
    dmft_se (mean DMFT test error on that grid), predicted, residual, residual_se, z
    (|residual| / residual_se); attrs: centre, tau_c, tau_dmft, level, n_used, n_censored,
    shift_sd.
    """
    from .model import generalisation_error
    from .params import check_params

    check_params(params)
    if centre not in ("median", "dmft"):
        raise ValueError(f"centre must be 'median' or 'dmft'; got {centre!r}")
    t = sim.t.values
    runs = sim["eg_run"].values
    eg_all = np.stack([s.eg.values for s in sols])
    t_th = sols[0].t.values
    th_se = eg_all.std(0, ddof=1) / np.sqrt(len(sols))
    esc = crossing_time(sim.m_run.values, t, level)
    ok = np.isfinite(esc)
    if ok.sum() < 2:
        raise ValueError(f"level (escape level of |m|) {level!r} is reached by fewer than 2 runs")
    m_th = np.mean([s.m.values for s in sols], axis=0)
    cperp = np.mean([s.C_diag.values - s.m.values ** 2 for s in sols], axis=0)
    tau_th = float(crossing_time(m_th[None, :], t_th, level)[0])
    tau_c = float(np.median(esc[ok])) if centre == "median" else tau_th
    if not np.isfinite(tau_c):
        raise ValueError(f"level (escape level of |m|) {level!r} is not reached by the mean DMFT curve")
    shifts = esc[ok] - tau_c
    cp_on = np.interp(t, t_th, cperp)
    m_runs = np.stack([np.interp(t - s_, t_th, m_th) for s_ in shifts])
    pred_runs = generalisation_error(params, m_runs, m_runs ** 2 + cp_on)
    resid = runs[ok] - pred_runs
    th_on = np.interp(t, t_th, eg_all.mean(0))
    th_se_on = np.interp(t, t_th, th_se)
    r_se = np.hypot(resid.std(0, ddof=1) / np.sqrt(ok.sum()), th_se_on)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(resid.mean(0)) / r_se
    return xr.Dataset(
        {"sim": ("t", runs.mean(0)), "sim_se": ("t", runs.std(0, ddof=1) / np.sqrt(len(runs))),
         "dmft": ("t", th_on), "dmft_se": ("t", th_se_on), "predicted": ("t", pred_runs.mean(0)),
         "residual": ("t", resid.mean(0)), "residual_se": ("t", r_se), "z": ("t", z)},
        coords={"t": ("t", t)},
        attrs={"centre": centre, "tau_c": tau_c, "tau_dmft": tau_th, "level": float(level),
               "n_used": int(ok.sum()), "n_censored": int((~ok).sum()),
               "shift_sd": float(np.std(shifts, ddof=1))})
