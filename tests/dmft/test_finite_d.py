"""Deviations at fixed times, escape times and the spread of the escape across dimensions."""

import numpy as np
import pytest
import xarray as xr

from tsdyn import dmft

T = np.round(np.arange(0, 201) * 0.05, 10)  # a grid of 0.05 up to t = 10


def _sim(runs_eg, runs_m):
    """A stand-in for dmft.simulate_seeds: the runs and their mean."""
    return xr.Dataset({"eg_run": (("seed", "t"), runs_eg), "m_run": (("seed", "t"), runs_m),
                       "eg": ("t", runs_eg.mean(0))}, coords={"t": T}, attrs={"seeds": len(runs_eg)})


def _sols(eg, m):
    return [xr.Dataset({"eg": ("t", e), "m": ("t", mm)}, coords={"t": T}) for e, mm in zip(eg, m)]


def _escape_curves(t0):
    """A sharp escape at t0: |m| rises from 0.01 to 1, eps_g falls from 0.5 to 0.1."""
    x = 1 / (1 + np.exp(-(T - t0) / 0.3))
    return 0.5 - 0.4 * x, 0.01 + 0.99 * x


def test_time_deviations_find_a_transient_gap_where_it_is():
    rng = np.random.default_rng(0)
    base = 0.3 + 0.01 * T
    bump = 0.05 * np.exp(-((T - 3.0) / 0.2) ** 2)  # a gap of 0.05 during a short transient only
    sim = _sim(base + bump + 0.02 * rng.standard_normal((64, T.size)), np.ones((64, T.size)))
    sols = _sols(base + 0.01 * rng.standard_normal((8, T.size)), np.ones((8, T.size)))
    rows = dmft.time_deviations(sols, sim, times=np.arange(0.5, 10.01, 0.5))
    top = dmft.largest_deviation(rows)
    assert top["t"] == pytest.approx(3.0)
    # the measured gap is the bump, within 3 of its standard errors (64 runs of s.d. 0.02,
    # 8 solutions of s.d. 0.01)
    assert abs(top["diff"] - 0.05) < 3 * top["se"]
    assert top["z"] > top["z999"] and top["n"] == 20
    # a window average over (2, 4] dilutes the bump to 0.18 of its height (its mean there)
    win = dmft.window_deviations(sols, sim, windows=[(2.0, 4.0)], variables=("eg",))[0]
    assert abs(win["diff"] - 0.05 * 0.2 * np.sqrt(np.pi) / 2) < 3 * win["se"]
    with pytest.raises(ValueError, match="times"):
        dmft.time_deviations(sols, sim, times=[])
    with pytest.raises(ValueError, match="rows"):
        dmft.largest_deviation([])


def test_crossing_time_interpolates_and_folds_the_sign():
    t = np.linspace(0, 1, 11)
    runs = np.stack([t, -2 * t, 0.1 * t])  # crosses 0.25 at 0.25; the mirror run at 0.125; never
    out = dmft.crossing_time(runs, t, 0.25)
    assert out[0] == pytest.approx(0.25) and out[1] == pytest.approx(0.125)
    assert np.isinf(out[2])
    with pytest.raises(ValueError, match="level"):
        dmft.crossing_time(runs, t, 0.0)


def test_shifted_theory_recovers_runs_that_are_shifted_theory_curves():
    """Runs that are the theory curve delayed by scattered times: the delay-averaged theory
    reproduces their mean (residual at the interpolation error), the theory itself does not;
    a common delay is removed by centring on the median and kept by centring on the DMFT."""
    rng = np.random.default_rng(1)
    eg_th, m_th = _escape_curves(5.0)
    sols = _sols(np.stack([eg_th] * 4), np.stack([m_th] * 4))
    for common, centre in ((0.0, "median"), (0.8, "dmft")):
        delays = 0.6 * rng.standard_normal(128)
        delays += common - np.median(delays)  # median delay: 0 for the first, 0.8 for the second
        curves = [_escape_curves(5.0 + s) for s in delays]
        sim = _sim(np.stack([c[0] for c in curves]), np.stack([c[1] for c in curves]))
        sh = dmft.shifted_theory(sols, sim, level=0.5, centre=centre)
        # linear interpolation of a curve with width 0.3 on a 0.05 grid: below 1e-3
        assert float(np.abs(sh.residual).max()) < 1e-3, centre
        # the spread flattens the mean: measured 0.044 at the median centre
        assert float(np.abs(sh.sim - sh.dmft).max()) > 0.02
        assert sh.attrs["shift_sd"] == pytest.approx(np.std(delays, ddof=1), rel=0.01)
    # the same runs with the median centre miss the common delay of 0.8
    wrong = dmft.shifted_theory(sols, sim, level=0.5, centre="median")
    assert float(np.abs(wrong.residual).max()) > 0.05
    with pytest.raises(ValueError, match="centre"):
        dmft.shifted_theory(sols, sim, level=0.5, centre="mean")


@pytest.mark.slow
def test_the_spread_of_the_escape_shrinks_as_inverse_sqrt_d():
    """Three-cluster gradient descent from m0 = 0.05: the s.d. of |m| before the escape over
    96 training sets at d = 100, 200, 400, 800 (measured slope about -0.56 over d = 200-1600 in
    the chapter's run). Allowed: 3 standard errors of the fitted slope plus 0.15 for sizes
    this small (the escape level and the fluctuation of n = alpha d samples are not yet in
    their asymptotic regime)."""
    p = dmft.Params(alpha=2.0, Delta=0.05, R0=1.0, model="three-cluster", L=0.7, m0=0.05, b=1.0,
                    eta=0.2)
    ds, sims = dmft.escape_spread(p, 6.0, ds=[100, 200, 400, 800], seeds=96, level=0.5,
                                  t_spread=1.6)
    assert abs(ds.attrs["m_sd_slope"] + 0.5) < 3 * ds.attrs["m_sd_slope_se"] + 0.15
    assert set(sims) == {100, 200, 400, 800}
    assert np.all(ds.esc_median_lo <= ds.esc_median) and np.all(ds.esc_median <= ds.esc_median_hi)
    with pytest.raises(ValueError, match="ds"):
        dmft.escape_spread(p, 6.0, ds=[100], seeds=8, level=0.5, t_spread=1.6)
    with pytest.raises(ValueError, match="t_spread"):
        dmft.escape_spread(p, 6.0, ds=[100, 200], seeds=8, level=0.5, t_spread=7.0)


def test_shifted_theory_leaves_the_common_transient_unshifted():
    """Runs that share an initial transient (t < 1) and escape at scattered times: shifting from
    a time on the plateau (t_from = 2) reproduces them; shifting the whole curve does not."""
    rng = np.random.default_rng(2)
    transient = 0.3 * np.exp(-T / 0.2)  # the same in every run

    def curves(t0):
        eg, m = _escape_curves(t0)
        return eg + transient, m

    eg_th, m_th = curves(5.0)
    sols = _sols(np.stack([eg_th] * 4), np.stack([m_th] * 4))
    delays = 0.6 * rng.standard_normal(128)
    delays -= np.median(delays)
    runs = [curves(5.0 + s) for s in delays]
    sim = _sim(np.stack([r[0] for r in runs]), np.stack([r[1] for r in runs]))
    good = dmft.shifted_theory(sols, sim, level=0.5, t_from=2.0)
    # the plateau at t_from is flat to exp(-10) of the escape and the transient to exp(-10):
    # what is left is the interpolation error (below 1e-3, as above)
    assert float(np.abs(good.residual).max()) < 1e-3
    whole = dmft.shifted_theory(sols, sim, level=0.5, t_from=0.0)
    assert float(np.abs(whole.residual.sel(t=slice(0, 1))).max()) > 0.05
    with pytest.raises(ValueError, match="t_from"):
        dmft.shifted_theory(sols, sim, level=0.5, t_from=-1.0)
