"""Greedy runs: determinism, result layout, and the physics of both sides of m_c."""

import numpy as np
import pytest

from tsdyn import sparse

P = sparse.Params(N=40, d=3, m=6)


@pytest.mark.parametrize("params", [P, sparse.Params(N=30, d=2, d_s=3, m=5),
                                    sparse.Params(N=32, d=2, m=40, model="one_matrix")])
def test_same_seed_gives_bit_identical_runs_whatever_the_recording(params):
    a = sparse.greedy(params, 40, seed=7, n_points=8)
    b = sparse.greedy(params, 40, seed=7, n_points=8)
    c = sparse.greedy(params, 40, seed=np.random.SeedSequence(7), n_points=3)  # other blocks
    for var in ("val_loss", "hamming", "batch_loss", "accept_rate"):
        np.testing.assert_array_equal(a[var].values, b[var].values)
    np.testing.assert_array_equal(a.W_in.values, c.W_in.values)
    assert a.val_loss.values[-1] == c.val_loss.values[-1]
    d = sparse.greedy(params, 40, seed=8, n_points=8)
    assert not np.array_equal(a.W_in.values, d.W_in.values)


def test_result_layout_units_and_attrs():
    ds = sparse.greedy(P, 64, seed=0, n_points=8)
    assert ds.t.values[0] == 0 and ds.t.values[-1] == 64
    assert ds.t.attrs["units"] == "Monte Carlo sweeps"
    assert ds.t.attrs["moves_per_unit"] == 2 * 40 * 3 and ds.t.attrs["samples_per_unit"] == 6
    assert ds.attrs["d"] == 3 and ds.attrs["sweeps"] == 64 and ds.attrs["algorithm"] == "greedy"
    assert ds.W_in.shape == (40, 40) and ds.W_out.shape == (40, 40)
    # the recorded Hamming distance is that of the returned matrices
    assert ds.hamming.values[-1] == pytest.approx(sparse.hamming(
        (ds.W_in.values, ds.W_out.values), (ds.teacher_in.values, ds.teacher_out.values)))
    assert np.isnan(ds.accept_rate.values[0]) and np.all(np.isfinite(ds.accept_rate.values[1:]))


def test_teacher_has_the_paper_structure():
    nets = sparse.draw_networks(sparse.Params(N=50, d=4, m=1), seed=3)
    for W in (nets.teacher_in, nets.teacher_out):
        assert np.all((W != 0).sum(0) == 4) and np.all((W != 0).sum(1) == 4)
        assert set(np.unique(W)) == {-1, 0, 1}
    # the student knows the positions (matched case) ...
    np.testing.assert_array_equal(nets.student_in != 0, nets.teacher_in != 0)
    # ... or gets a larger support that contains the teacher's (mismatched case)
    mm = sparse.draw_networks(sparse.Params(N=50, d=2, d_s=4, m=1), seed=3)
    assert np.all(mm.support_in[mm.teacher_in != 0] == 1)
    assert np.all(mm.support_in.sum(0) == 4) and np.all(mm.support_in.sum(1) == 4)


def test_perfect_inference_means_zero_validation_loss():
    """Above m_c (d = 3, m = 24 >> m_c ~ 5) the student recovers the teacher exactly in
    every run, and its validation loss is then exactly 0 (same network)."""
    for seed in range(4):
        ds = sparse.greedy(sparse.Params(N=40, d=3, m=24), 200, seed=seed, n_points=4)
        assert ds.hamming.values[-1] == 0.0 and ds.val_loss.values[-1] == 0.0


def test_below_m_c_the_student_stays_far_from_the_teacher():
    """At m = 2 << m_c (d = 4) no run gets closer than Hamming distance 0.25 (paper,
    sec. 4.1: the failure phase sits near the random-guess value 1/2)."""
    h = [sparse.greedy(sparse.Params(N=40, d=4, m=2), 200, seed=s, n_points=2).hamming.values[-1]
         for s in range(4)]
    assert min(h) > 0.25


def test_greedy_point_returns_fixed_shape_trajectories():
    a = sparse.greedy_point(seed=np.random.SeedSequence(1), N=20, d=2, m=3, sweeps=16, n_points=5)
    b = sparse.greedy_point(seed=np.random.SeedSequence(1), N=30, d=3, m=3, sweeps=16, n_points=5)
    assert a.val_loss.shape == b.val_loss.shape and "W_in" not in a


def test_schedule_with_replacement_shares_everything_but_the_order():
    """The paper's schedule draws the weight to flip at random with replacement: a sweep makes
    as many attempts as there are weights, repeats some and misses others; teacher, start,
    mini-batches and validation set are those of the default schedule for the same seed."""
    p = sparse.Params(N=20, d=3, m=5)
    a = sparse.greedy(p, 30, seed=4, n_points=3, log_moves=True)
    b = sparse.greedy(p, 30, seed=4, n_points=3, log_moves=True, schedule="replacement")
    assert b.attrs["schedule"] == "replacement" and a.attrs["schedule"] == "permutation"
    np.testing.assert_array_equal(a.teacher_in.values, b.teacher_in.values)
    assert a.val_loss.values[0] == b.val_loss.values[0]  # same initial student and validation set
    n_w = p.n_weights
    assert b.order.shape == a.order.shape == (30, n_w)
    # permutation: every weight once per sweep
    assert all(len(np.unique(row)) == n_w for row in a.order.values)
    # replacement: uniform draws; the share of weights a sweep misses is (1 - 1/n)^n ~ 1/e = 0.368,
    # with a standard deviation over 30 sweeps of 120 weights of about sqrt(0.23 / 3600) = 0.008:
    # 0.368 +- 0.04 is 5 standard deviations
    missed = np.mean([1 - len(np.unique(row)) / n_w for row in b.order.values])
    assert abs(missed - (1 - 1 / n_w) ** n_w) < 0.04
    assert b.order.values.min() >= 0 and b.order.values.max() < n_w
    # same seed, same schedule: bit-identical
    c = sparse.greedy(p, 30, seed=4, n_points=3, schedule="replacement")
    np.testing.assert_array_equal(b.W_in.values, c.W_in.values)
    with pytest.raises(ValueError, match="schedule"):
        sparse.greedy(p, 3, seed=0, schedule="sequential")


def test_schedule_with_replacement_recovers_the_teacher_above_m_c():
    """Far above m_c (d = 3, m = 24 against m_c ~ 5) the paper's schedule also finds the teacher
    exactly in every run; the 1/e of weights a sweep misses are visited in later sweeps."""
    for seed in range(3):
        ds = sparse.greedy(sparse.Params(N=40, d=3, m=24), 200, seed=seed, n_points=2, schedule="replacement")
        assert ds.hamming.values[-1] == 0.0


def test_grid_seeds_reproduce_the_sweep_point_for_point():
    from functools import partial

    from tsdyn import sweep
    fn = partial(sparse.greedy_point, sweeps=8, n_points=2)
    grid = {"N": [12, 16], "d": [2, 3], "m": [3, 5]}
    full = sweep.run(fn, grid, seeds=2, seed=11, progress=False)
    pts = sparse.grid_seeds(grid, 2, 11, {"d": [3], "m": [5]})
    assert [p for p, _ in pts] == [{"N": 12, "d": 3, "m": 5}] * 2 + [{"N": 16, "d": 3, "m": 5}] * 2
    again = sweep.each(fn, pts)
    for k, (p, _) in enumerate(pts):
        np.testing.assert_array_equal(again[k].hamming.values,
                                      full.hamming.sel(N=p["N"], d=3, m=5).isel(seed=k % 2).values)
    with pytest.raises(ValueError, match="select"):
        sparse.grid_seeds(grid, 2, 11, {"d": [4]})
