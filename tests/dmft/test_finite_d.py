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


THREE = dmft.Params(alpha=2.0, Delta=0.05, R0=1.0, model="three-cluster", L=0.7, m0=0.01)


def _delayed(delay):
    """m escapes from 0.01 to 1.5 at t = 5 + delay; C_perp relaxes from 1 to 0.3 at the same
    times in every run (the initial transient); eps_g from (m, m^2 + C_perp)."""
    m = 0.01 + 1.49 / (1 + np.exp(-(T - 5.0 - delay) / 0.3))
    cp = 0.3 + 0.7 * np.exp(-T / 0.5)
    C = m ** 2 + cp
    return dmft.generalisation_error(THREE, m, C), m, C


def _sols3(n=4):
    eg, m, C = _delayed(0.0)
    return [xr.Dataset({"eg": ("t", eg), "m": ("t", m), "C_diag": ("t", C)}, coords={"t": T})
            for _ in range(n)]


def test_shifted_theory_recovers_runs_whose_escape_is_delayed():
    """Runs that are the theory with a delayed escape (and a common transient of C_perp): the
    delay-averaged theory reproduces their mean to the interpolation error, the theory itself
    does not; a common delay is removed by centring on the median and kept by centring on the
    DMFT."""
    rng = np.random.default_rng(1)
    sols = _sols3()
    for common, centre in ((0.0, "median"), (0.8, "dmft")):
        delays = 0.6 * rng.standard_normal(128)
        delays += common - np.median(delays)  # median delay: 0 for the first, 0.8 for the second
        runs = [_delayed(s_) for s_ in delays]
        sim = _sim(np.stack([r[0] for r in runs]), np.stack([r[1] for r in runs]))
        sh = dmft.shifted_theory(THREE, sols, sim, level=0.75, centre=centre)
        # linear interpolation of m (width 0.3) on a 0.05 grid: below 2e-3 in eps_g
        assert float(np.abs(sh.residual).max()) < 2e-3, centre
        # the spread flattens the mean: the theory itself is off by more than 0.02
        assert float(np.abs(sh.sim - sh.dmft).max()) > 0.02
        assert sh.attrs["shift_sd"] == pytest.approx(np.std(delays, ddof=1), rel=0.01)
    # the same runs with the median centre miss the common delay of 0.8
    wrong = dmft.shifted_theory(THREE, sols, sim, level=0.75, centre="median")
    assert float(np.abs(wrong.residual).max()) > 0.05
    with pytest.raises(ValueError, match="centre"):
        dmft.shifted_theory(THREE, sols, sim, level=0.75, centre="mean")
    with pytest.raises(ValueError, match="level"):
        dmft.shifted_theory(THREE, sols, sim, level=5.0)


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
