"""The chapter's statistics: seeds per curve, Welch dof, window deviations, bias checks."""

import numpy as np
import pytest

from tsdyn import _seeds, dmft, stats


def test_welch_dof_bounds():
    """Between min(n_a, n_b) - 1 (one error bar dominates) and n_a + n_b - 2 (equal
    variances, equal n): the chapter's seed counts (6 + 6) give 5 to 10."""
    assert stats.welch_dof(1.0, 6, 1.0, 6) == pytest.approx(10.0)
    assert stats.welch_dof(1.0, 6, 1e-6, 6) == pytest.approx(5.0, rel=1e-6)
    se = np.random.default_rng(0).uniform(0.1, 2.0, (2, 1000))
    dof = stats.welch_dof(se[0], 6, se[1], 6)
    assert np.all((dof >= 5 - 1e-9) & (dof <= 10 + 1e-9))


def test_difference_by_hand():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5, 1.0, 0.5])
    r = dmft.difference(a, b)
    sa, sb = np.std(a, ddof=1) / np.sqrt(3), np.std(b, ddof=1) / np.sqrt(4)
    assert r["diff"] == pytest.approx(2.0 - 0.5)
    assert r["se"] == pytest.approx(np.hypot(sa, sb))
    dof = (sa ** 2 + sb ** 2) ** 2 / (sa ** 4 / 2 + sb ** 4 / 3)
    assert r["dof"] == pytest.approx(dof)
    from scipy.stats import t as student
    assert r["p"] == pytest.approx(2 * student.sf(1.5 / np.hypot(sa, sb), dof))
    with pytest.raises(ValueError, match="x .independent values"):
        dmft.mean_se([1.0])


def test_curve_seeds_are_distinct_and_reproducible():
    """Every curve key gives its own root seed; the same key the same one; runs of a
    curve are the root's children (so two curves never share a training set)."""
    a, b = dmft.curve_seed("sim", {"b": 0.3, "d": 400}), dmft.curve_seed("sim", {"d": 400, "b": 0.3})
    assert a.entropy == b.entropy  # dict order does not matter
    assert dmft.curve_seed("sim", {"b": 0.3}).entropy != dmft.curve_seed("sim", {"b": 0.1}).entropy
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2, R0=0.01)
    q = dmft.Params(alpha=2.0, Delta=0.5, b=0.6, eta=0.2, R0=0.01)
    sp, sq = (dmft.simulate_seeds(x, 1.0, d=40, seeds=2) for x in (p, q))
    assert not np.allclose(sp.eg_run.values[:, 1], sq.eg_run.values[:, 1])
    root = dmft.curve_seed("simulation", p.attrs(), 40, "fixed")
    run1 = dmft.simulate(p, 1.0, d=40, seed=_seeds.child(root, 1))
    np.testing.assert_array_equal(sp.eg_run.values[1], run1.eg.values)
    # DMFT: the key leaves out n_samples, so 4x the samples nests the same seeds
    _, _, s1 = dmft.solve_seeds(p, 1.0, seeds=2, n_samples=100)
    _, _, s2 = dmft.solve_seeds(q, 1.0, seeds=2, n_samples=100)
    assert s1[0].attrs["seed_entropy"] != s2[0].attrs["seed_entropy"]


def test_window_yardstick_counts_and_run_averages():
    """One deviation per curve, window and variable; each one compares run averages."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2, R0=0.01)
    sim = dmft.simulate_seeds(p, 4.0, d=60, seeds=5)
    _, _, sols = dmft.solve_seeds(p, 4.0, seeds=5, n_samples=200)
    w = dmft.log_windows(4.0, n=3)
    assert w == [(0.0, 1.0), (1.0, 2.0), (2.0, 4.0)]
    y = dmft.yardstick([(sols, sim)] * 2, windows=w, variables=("eg", "train_loss"))
    assert y["n"] == 2 * 3 * 2 and y["max_z"] >= y["rms_z"] > 0
    row = y["rows"][2]  # eg, window (2, 4]
    a = sim.eg_run.values[:, 11:].mean(1)  # t = 2.2 ... 4.0
    b = np.array([float(s.eg.sel(t=slice(2.1, None)).mean()) for s in sols])
    assert row["window"] == (2.0, 4.0) and row["diff"] == pytest.approx(a.mean() - b.mean())
    with pytest.raises(ValueError, match="windows"):
        dmft.window_deviations(sols, sim, windows=[(4.0, 5.0)])


def test_bias_check_is_paired_and_nested():
    """The three solves of a seed share it; at factor * n_samples the first n_samples are
    the same samples, so the paired difference is far below the seed-to-seed spread."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=1.0, eta=0.2, R0=0.01)
    bc = dmft.bias_check(p, 2.0, n_samples=200, seeds=3, n_resp_alt=50, variables=("eg",))
    assert len(bc["base"]["eg"]) == 3 and bc["n_resp"] == 200 and bc["n_resp_alt"] == 50
    d = bc["big"]["eg"] - bc["base"]["eg"]
    assert bc["d_samples"]["eg"][0] == pytest.approx(d.mean())
    assert len(bc["sols_big"]) == 3 and bc["sols_big"][0].attrs["n_samples"] == 800


def test_finite_d_sweep_pairs_the_half_step_runs():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=1.0, eta=0.2, R0=0.01)
    sw = dmft.finite_d_sweep(p, 2.0, ds=[40, 80], seeds=3, variables=("train_loss",))
    assert set(sw["sim"]) == {40, 80} and len(sw["half"]["train_loss"]) == 3
    m, se = sw["eta_diff"]["train_loss"]
    assert m == pytest.approx((sw["half"]["train_loss"] - sw["sim"][40]["train_loss"]).mean())
    for bad, match in ((dict(d_half=50), "d_half"), (dict(ds=40), "ds")):
        with pytest.raises(ValueError, match=match):
            dmft.finite_d_sweep(p, 2.0, **{**dict(ds=[40, 80], seeds=3), **bad})


def test_crossing_times_and_median_interval():
    t = np.arange(5.0)
    v = np.array([[0, 0.2, 0.6, 0.9, 1], [0, 0, 0, 0.1, 0.2], [0, 0.5, 0.5, 1, 1]])
    np.testing.assert_array_equal(dmft.crossing_times(v, t, 0.5), [2.0, np.inf, 1.0])
    med, lo, hi = dmft.median_ci(np.arange(101.0))
    assert med == 50.0 and lo < 50.0 < hi and hi - lo < 30
    assert dmft.median_ci([1.0, np.inf, np.inf])[0] == np.inf  # censored runs count
    with pytest.raises(ValueError, match="values"):
        dmft.crossing_times(v, t[:4], 0.5)


def test_runs_on_an_executor_are_identical_to_serial_runs():
    """simulate_seeds, solve_seeds and bias_check on worker processes (tsdyn.sweep.executor,
    as the chapter runs them; a Dask client's executor is used the same way) return the
    same numbers as serially: each run carries its own seed."""
    from tsdyn import sweep

    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2, R0=0.01)
    with sweep.executor(max_workers=2) as pool:
        par = [dmft.simulate_seeds(p, 2.0, d=60, seeds=3, executor=pool),
               dmft.solve_seeds(p, 2.0, seeds=2, n_samples=200, executor=pool)[0],
               dmft.bias_check(p, 2.0, n_samples=100, seeds=2, n_resp=50, n_resp_alt=100,
                               executor=pool)]
    ser = [dmft.simulate_seeds(p, 2.0, d=60, seeds=3),
           dmft.solve_seeds(p, 2.0, seeds=2, n_samples=200)[0],
           dmft.bias_check(p, 2.0, n_samples=100, seeds=2, n_resp=50, n_resp_alt=100)]
    assert par[0].identical(ser[0])
    assert par[1].equals(ser[1])  # values; the attrs hold each solve's wall time
    for k in ("base", "big", "resp"):
        for v in ("train_loss", "eg"):
            np.testing.assert_array_equal(par[2][k][v], ser[2][k][v])


def test_cached_runs_are_the_runs(tmp_path):
    """With ``cache``, every simulation and solve is stored once and read back bit for bit:
    the second call computes nothing (its files are unchanged) and returns the same Datasets,
    attrs (each solve's wall time) included."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2, R0=0.01)
    first = [dmft.simulate_seeds(p, 2.0, d=60, seeds=3, cache=tmp_path),
             dmft.solve_seeds(p, 2.0, seeds=2, n_samples=200, cache=tmp_path)[2]]
    files = {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir()}
    assert len(files) == 3 + 2
    second = [dmft.simulate_seeds(p, 2.0, d=60, seeds=3, cache=tmp_path),
              dmft.solve_seeds(p, 2.0, seeds=2, n_samples=200, cache=tmp_path)[2]]
    assert {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir()} == files
    assert second[0].identical(first[0])
    for a, b in zip(second[1], first[1]):
        assert a.identical(b)
    fresh = dmft.solve_seeds(p, 2.0, seeds=2, n_samples=200)[2]
    assert all(a.drop_attrs().identical(b.drop_attrs()) for a, b in zip(fresh, first[1]))
    dmft.bias_check(p, 2.0, n_samples=100, seeds=2, n_resp=50, n_resp_alt=100, cache=tmp_path)
    assert len(list(tmp_path.iterdir())) == 5 + 3 * 2
