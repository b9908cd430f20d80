"""The SGD simulation: determinism, divergence, and agreement with the ODEs."""

import numpy as np
import pytest

from tsdyn import committee


def test_same_seed_gives_bit_identical_runs_whatever_the_recording():
    p = committee.Params(N=200, M=2, K=3, eta=0.5, sigma=0.1, batch=2)
    a = committee.simulate(p, 10.0, seed=7, n_points=11)
    b = committee.simulate(p, 10.0, seed=7, n_points=11)
    c = committee.simulate(p, 10.0, seed=7, n_points=3)  # other block boundaries
    d = committee.simulate(p, 10.0, seed=np.random.SeedSequence(7), n_points=11)
    for other in (b, d):
        np.testing.assert_array_equal(a.Q.values, other.Q.values)
    np.testing.assert_array_equal(a.Q.values[-1], c.Q.values[-1])
    np.testing.assert_array_equal(a.R.values[-1], c.R.values[-1])
    e = committee.simulate(p, 10.0, seed=8, n_points=11)
    assert not np.array_equal(a.Q.values[-1], e.Q.values[-1])


def test_result_layout_and_units():
    p = committee.Params(N=100, M=2, K=3, eta=0.5, train_second_layer=True)
    ds = committee.simulate(p, 2.0, seed=0, n_points=5, spacing="log")
    assert ds.Q.dims == ("t", "k", "k2") and ds.R.dims == ("t", "k", "m")
    assert ds.v.dims == ("t", "k") and ds.T.dims == ("m", "m2")
    assert ds.t.attrs["units"] == "SGD steps / N"
    assert ds.t.attrs["samples_per_unit"] == p.batch * p.N
    assert ds.attrs["K"] == 3 and ds.attrs["kind"] == "simulation"
    assert not bool(ds.diverged) and np.isinf(float(ds.t_diverged))
    assert ds.t.values[0] == 0 and ds.t.values[-1] == 2.0
    # recorded overlaps are those of the actual weights
    w_star, w, v = committee.initial_weights(p, 0)
    np.testing.assert_allclose(ds.Q.values[0], w @ w.T / p.N, rtol=1e-13)


def test_divergence_is_recorded_not_raised():
    """A linear SCM with K eta > 2B blows up: the run stops and says when."""
    p = committee.Params(N=100, M=2, K=4, eta=1.0, g="linear")
    ds = committee.simulate(p, 50.0, seed=0, n_points=26)
    assert bool(ds.diverged)
    t_div = float(ds.t_diverged)
    assert 0 < t_div < 50
    before = ds.t.values < t_div
    assert np.all(np.isfinite(ds.eg.values[before]))
    assert np.all(np.isnan(ds.eg.values[~before]))


SETTINGS = {
    "erf K=M=2": committee.Params(N=500, M=2, K=2, eta=0.5),
    "linear K=3 M=2 noisy": committee.Params(N=500, M=2, K=3, eta=0.5, sigma=0.1, g="linear"),
    "erf B=8 eta=2": committee.Params(N=500, M=2, K=2, eta=2.0, batch=8),
    "relu K=3 M=2": committee.Params(N=500, M=2, K=3, eta=0.3, g="relu", w_init_std=0.5),
    "erf both layers + decay": committee.Params(N=500, M=1, K=2, eta=0.5, v_star=2.0, v_init=0.5,
                                                train_second_layer=True, weight_decay=0.05,
                                                sigma=0.1),
}


@pytest.mark.parametrize("name", SETTINGS)
def test_ode_is_the_mean_of_sgd(name):
    """Theorem 1 of Goldt et al.: each run deviates from its ODE by O(N^-1/2).

    Every run is compared with the ODE started from its own t = 0 overlaps; the
    mean gap over 8 seeds must be within 4.5 standard errors (a Bonferroni bound
    for ~40 correlated times at a 1e-3 false-alarm rate) plus eps_g(0) / N, the
    size of the O(1/N) finite-size bias of the mean.
    """
    p = SETTINGS[name]
    gaps, scale = [], 0.0
    for seed in range(8):
        sim = committee.simulate(p, 20.0, seed=seed, n_points=41)
        theory = committee.ode(p, init=sim)
        gaps.append(sim.eg.values - theory.eg.values)
        scale = max(scale, float(theory.eg.max()))
    gaps = np.array(gaps)
    mean, se = gaps.mean(0), gaps.std(0, ddof=1) / np.sqrt(len(gaps))
    assert np.all(np.abs(mean) <= 4.5 * se + scale / p.N), np.max(np.abs(mean) - 4.5 * se)
    # and the deviation of single runs is itself of order N^-1/2 (C(T) ~ 1 here)
    assert np.abs(gaps).max() < scale * 3 / np.sqrt(p.N)


def test_linear_scm_stationary_error_matches_exact_finite_n_formula():
    """For a linear SCM the mean one-step change of d is known exactly at finite N,
    so eps_g* with c_N = (B+1)/(BN) must match SGD within its batch-means error
    (4 standard errors), while the N -> infinity eq. (12) is ~6% off here
    (K eta = 1.5 is close to the stability limit, which amplifies 2/N)."""
    p = committee.Params(N=100, M=2, K=5, eta=0.3, sigma=0.1, g="linear")
    sim = committee.simulate(p, 4000.0, seed=1, n_points=2001)
    mean, se = committee.stationary_error(sim, 200.0, n_batches=20)
    exact = committee.eg_star_linear_scm(p, finite_size=True)
    assert abs(mean - exact) < 4 * se
    assert abs(mean - committee.eg_star_linear_scm(p)) > 10 * se


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_linear_scm_growth_rate_collapses_with_batch(batch):
    """Noiseless linear SCM: ln eps_g grows at lambda = -2K eta + (K eta)^2 (1/B + c_N).
    At N = 2000 a single run's rate fluctuates by O(N^-1/2) relative; 5% covers it."""
    for x in (0.5, 1.2):
        p = committee.Params(N=2000, M=2, K=2, eta=x * batch, g="linear", batch=batch)
        rate = committee.growth_rate(committee.simulate(p, 2.0 / batch, seed=0, n_points=9))
        assert rate == pytest.approx(committee.linear_scm_growth_rate(p, finite_size=True), rel=0.05)


def test_sweep_of_simulations_is_independent_of_worker_count():
    """Per-point seeds come from the grid index: 1 process, 2 processes, serial agree bit for bit."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial
    import multiprocessing

    from tsdyn import sweep

    fn = partial(committee.simulate_point, N=100, M=2, K=2, t_max=2.0, n_points=5)
    grid = {"eta": [0.2, 0.5], "batch": [1, 4]}
    serial = sweep.run(fn, grid, executor="serial", seeds=2, progress=False)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        parallel = sweep.run(fn, grid, executor=pool, seeds=2, progress=False)
    xr_testing = __import__("xarray").testing
    xr_testing.assert_identical(serial, parallel)
    assert serial.eg.dims == ("eta", "batch", "seed", "t")
    # and each point is the run simulate() gives with that point's seed
    point_seed = np.random.SeedSequence(0, spawn_key=(1, 0, 1))
    direct = committee.simulate(committee.Params(N=100, M=2, K=2, eta=0.5, batch=1), 2.0,
                                seed=point_seed, n_points=5)
    np.testing.assert_array_equal(serial.eg.sel(eta=0.5, batch=1).isel(seed=1), direct.eg)


def test_plateau_escape_reports_sgd_and_ode_escape():
    """A K = M = 2 run at N = 100 leaves the plateau well within t = 300 (the escape
    time is ~ ln(N) / (2 lambda_max) + O(1/eta) ~ 100); so does its ODE."""
    out = committee.plateau_escape(seed=np.random.SeedSequence(3), N=100, K=2, eta=1.0, t_max=300.0)
    assert set(out) == {"sgd", "ode", "sgd_height", "ode_height", "plateau"}
    assert 0 < out["sgd"] < 300 and 0 < out["ode"] < 300
    # the measured heights: on the plateau, not above the symmetric fixed point
    # (at N = 100 runs leave before settling on it: within a factor 2 below)
    assert 0.5 * out["plateau"] < out["sgd_height"] <= 1.01 * out["plateau"]
    assert out["plateau"] == pytest.approx(committee.plateau(committee.Params(N=100, M=2, K=2, eta=1.0))["eg"])


def test_analysis_helpers_on_a_hand_made_run():
    p = committee.Params(N=100, M=2, K=2, eta=0.5)
    run = committee.ode(p, 10.0, n_points=11)
    shifted = run.copy(deep=True)
    shifted["eg"] = run.eg + 0.01 * np.arange(11)
    assert committee.max_gap(shifted, run) == pytest.approx(0.1, abs=1e-12)
    with pytest.raises(ValueError, match=r"share the time axis"):
        committee.max_gap(shifted.isel(t=slice(0, 5)), run)
    decaying = run.copy(deep=True)
    decaying["eg"] = 0.3 * np.exp(-0.25 * run.t)
    assert committee.growth_rate(decaying) == pytest.approx(-0.25, rel=1e-10)
    assert committee.escape_time(decaying, 0.3 * np.exp(-2.2)) == 9.0  # first t with e^{-t/4} below
    assert committee.escape_time(decaying, 0.0) == np.inf
    with pytest.raises(ValueError, match=r"threshold must be finite"):
        committee.escape_time(decaying, np.nan)
    assert committee.plateau_stats(decaying, 0.0) == (np.inf, pytest.approx(np.nan, nan_ok=True))


def test_sweep_points_for_the_finite_size_and_growth_rate_figures():
    gap = committee.sgd_ode_gap(seed=1, t_max=5.0, N=200, M=2, K=2, eta=0.5)["gap"]
    assert 0 < gap < 3 * 200 ** -0.5  # Theorem 1: O(N^-1/2) with C(T) of order one at t = 5
    rate = committee.linear_growth_rate(seed=2, N=2000, K=2, x=0.5, batch=4)
    # one N = 2000 run: the rate of ln eps_g within O(N^-1/2) ~ 0.02 of the exact mean rate,
    # and the single-run shift 4 x^2 (x - 1)^2 / N is far below that
    # x (x - 1) plus (K eta)^2 c_N / (4B) with K eta = 2Bx = 4, c_N = (B + 1) / (BN) = 5 / 8000
    assert rate["exact"] == pytest.approx(-0.25 + 5 / 8000, rel=1e-12)
    assert abs(rate["sgd"] - rate["exact"]) < 0.02
    assert rate["typical_shift"] == pytest.approx(0.25 / 2000)
