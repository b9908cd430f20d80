"""Quantities read off simulated or integrated runs (escape times, stationary errors, gaps)."""

import numpy as np

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
