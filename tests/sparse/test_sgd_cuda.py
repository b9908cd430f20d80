"""The GPU SGD (numba.cuda) against the CPU kernels, in numba's CUDA simulator.

Run here with ``NUMBA_ENABLE_CUDASIM=1`` (set by ``tests/conftest.py`` unless the
environment sets it): the kernels execute as Python threads, so the sizes are small.
``scripts/device_check.sh`` runs this file on a GPU with ``NUMBA_ENABLE_CUDASIM=0``.
"""

import numpy as np
import pytest

from tsdyn import sparse
from tsdyn.sparse import _kernels
from tsdyn.sparse.sgd import setup

from tsdyn.sparse import _cuda_kernels
from tsdyn.sparse import sgd_cuda as cuda_sgd

N, D = 6, 2


def cpu_reference(p, ss, X, steps):
    """W after ``steps`` steps and the validation mse at the start, by the CPU kernels on inputs X."""
    _, t_idx, t_w, W, X_val, Y_val = setup(p, ss)
    mse0 = _kernels.dense_loss(W, X_val, Y_val, p.student_scale)
    Xs = np.ascontiguousarray(X[: steps * p.m])
    Y = np.empty(len(Xs))
    _kernels.teacher1_outputs(t_idx, t_w, Xs, 1.0 / np.sqrt(p.d), Y)
    done = _kernels.sgd_steps(W, Xs, Y, p.m, p.lr, p.student_scale, p.reduction == "mean")
    return W, mse0, done


@pytest.mark.parametrize("reduction, lanes", [("sum", 2), ("mean", 1)])
def test_given_inputs_reproduce_cpu_kernels(reduction, lanes):
    """Lanes = 2 with m = 1 and 3: an idle lane, and a mini-batch that does not split evenly."""
    lrs, ms, seeds, steps = [0.05, 0.4], [1, 3], 2, 4
    layout = cuda_sgd.run_layout(lrs, ms, seeds)
    X = np.random.default_rng(1).standard_normal((len(layout), steps * max(ms), N))
    ds = cuda_sgd.sgd_sweep_cuda(N=N, d=D, lrs=lrs, ms=ms, steps=steps, seeds=seeds, seed=7, n_val=16,
                                 n_points=3, reduction=reduction, lanes=lanes, X=X)
    assert ds.val_loss.dims == ("lr", "m", "seed", "t") and not ds.diverged.any()
    root = np.random.SeedSequence(7)
    for j, (a, b, c) in enumerate(layout):
        p = sparse.SGDParams(N=N, d=D, m=ms[b], lr=lrs[a], reduction=reduction, n_val=16)
        ss = np.random.SeedSequence(root.entropy, spawn_key=(a, b, c))
        W, mse0, done = cpu_reference(p, ss, X[j], steps)
        assert done == steps
        # same arithmetic, sums over hidden units in another order: rounding only (1e-12 relative
        # is ~1e4 ulps after a few steps of O(1) weights; atol 1e-14 covers weights that cancel to ~0)
        np.testing.assert_allclose(ds.W.values[a, b, c], W, rtol=1e-12, atol=1e-14)
        # the first record (t = 0): same initial student and validation set as the CPU run
        np.testing.assert_allclose(ds.val_mse.values[a, b, c, 0], mse0, rtol=1e-12)


def test_divergence_step_matches_cpu():
    """A non-finite input at step 3 (index 2) of one run: both codes stop it there and mark t_diverged = 3;
    the other run of the launch goes on to the end."""
    lrs, ms, steps = [0.1, 0.2], [2], 6
    X = np.random.default_rng(2).standard_normal((2, steps * 2, N))
    X[0, 4, 1] = np.nan  # run 0 (lr = 0.1 in the layout): sample 0 of step index 2
    ds = cuda_sgd.sgd_sweep_cuda(N=N, d=D, lrs=lrs, ms=ms, steps=steps, seeds=1, seed=3, n_val=8, n_points=7,
                                 lanes=2, X=X)
    assert cuda_sgd.run_layout(lrs, ms, 1)[0] == (0, 0, 0)
    assert not bool(ds.diverged.values[1, 0, 0]) and np.isfinite(ds.val_loss.values[1, 0, 0]).all()
    p = sparse.SGDParams(N=N, d=D, m=2, lr=0.1, n_val=8)
    _, _, done = cpu_reference(p, np.random.SeedSequence(np.random.SeedSequence(3).entropy, spawn_key=(0, 0, 0)),
                               X[0], steps)
    assert done == 2
    assert bool(ds.diverged.values[0, 0, 0])
    assert float(ds.t_diverged.values[0, 0, 0]) == done + 1
    t = ds.t.values
    assert np.isnan(ds.val_loss.values[0, 0, 0][t >= done + 1]).all()
    assert np.isfinite(ds.val_loss.values[0, 0, 0][t < done + 1]).all()


def test_device_draws_are_independent_standard_normals():
    """The generators of 3 runs x 4 threads, drawn as the SGD kernel draws: mean 0, variance 1, and no
    correlation between any two generators (a shared stream would give correlation 1)."""
    sss = [np.random.SeedSequence(5, spawn_key=(0, 0, k)) for k in range(3)]
    states = cuda_sgd._states(sss, 4)
    n = 400
    out = np.zeros((len(states), n))
    _cuda_kernels.normals[1, len(states)](states, out)
    # 4800 draws: the mean's error is 1/sqrt(4800) = 0.014, the variance's sqrt(2/4800) = 0.02; 4 sigma
    assert abs(out.mean()) < 4 * 0.0145 and abs(out.var() - 1) < 4 * 0.0205
    # 66 pairs of 400 draws: each correlation has error 1/sqrt(400) = 0.05; 4.5 sigma over 66 pairs is a
    # false alarm below 0.1 %
    r = np.corrcoef(out)[np.triu_indices(len(states), 1)]
    assert np.max(np.abs(r)) < 4.5 * 0.05


def test_device_inputs_are_standard_normal_and_learning_happens():
    """Inputs drawn on the device: the loss falls as on the CPU (same law, other samples)."""
    ds = cuda_sgd.sgd_sweep_cuda(N=4, d=2, lrs=[0.5], ms=[4], steps=60, seeds=2, seed=5, n_val=32, n_points=5,
                                 lanes=2)
    loss = ds.val_loss.values[0, 0]
    assert np.isfinite(loss).all()
    # 60 steps of lambda m = 2 per step from a uniform [0, 1] start: the CPU runs fall by more than a
    # factor 3 with any batches (checked against sparse.sgd below); the device must too
    cpu = [sparse.sgd(sparse.SGDParams(N=4, d=2, m=4, lr=0.5, n_val=32), 60, n_points=5,
                      seed=np.random.SeedSequence(np.random.SeedSequence(5).entropy, spawn_key=(0, 0, k)))
           for k in range(2)]
    for k in range(2):
        assert cpu[k].val_loss.values[0] == pytest.approx(loss[k, 0], rel=1e-12)
        assert cpu[k].val_loss.values[-1] < loss[k, 0] / 3
        assert loss[k, -1] < loss[k, 0] / 3


def test_checkpoint_resumes_to_the_same_result(tmp_path):
    """Stopped after every record and inside recording intervals (chunks of 3 steps): the resumed
    runs are the uninterrupted ones, number for number (the generators' states are saved too)."""
    kw = dict(N=4, d=2, lrs=[0.3], ms=[2], steps=40, seeds=1, seed=9, n_val=8, n_points=6, lanes=2, chunk=3)
    whole = cuda_sgd.sgd_sweep_cuda(**kw)
    ck = tmp_path / "ck"
    stops = []  # with no time left, each call advances one launch or one record, saves and returns
    while (resumed := cuda_sgd.sgd_sweep_cuda(**kw, checkpoint=ck, time_limit=0.0)) is None:
        with np.load(ck / "state.npz") as z:
            stops.append(int(z["q"]))
    assert any(q not in whole.t.values for q in stops)  # some stops fell inside a recording interval
    np.testing.assert_array_equal(resumed.val_mse.values, whole.val_mse.values)
    np.testing.assert_array_equal(resumed.W.values, whole.W.values)


def test_records_only_reads_a_stopped_sweep(tmp_path):
    kw = dict(N=4, d=2, lrs=[0.3], ms=[2], steps=40, seeds=1, seed=9, n_val=8, n_points=6, lanes=2, chunk=3)
    whole = cuda_sgd.sgd_sweep_cuda(**kw)
    ck = tmp_path / "ck"
    with pytest.raises(ValueError, match="checkpoint"):
        cuda_sgd.sgd_sweep_cuda(**kw, checkpoint=ck, records_only=True)
    for _ in range(4):  # four records, then part of the next interval
        assert cuda_sgd.sgd_sweep_cuda(**kw, checkpoint=ck, time_limit=0.0) is None
    part = cuda_sgd.sgd_sweep_cuda(**kw, checkpoint=ck, records_only=True)
    n = part.sizes["t"]
    assert 1 <= n < whole.sizes["t"] and part.attrs["finished"] == 0 and "W" not in part
    assert part.attrs["steps_done"] == part.t.values[-1] and part.attrs["steps"] == 40
    np.testing.assert_array_equal(part.val_mse.values, whole.val_mse.values[..., :n])
    assert whole.attrs["finished"] == 1 and whole.attrs["steps"] == whole.attrs["steps_done"] == 40
    # a checkpoint is only resumed by the sweep that wrote it
    with pytest.raises(ValueError, match="lrs"):
        cuda_sgd.sgd_sweep_cuda(**(kw | dict(lrs=[0.31])), checkpoint=ck)


@pytest.mark.parametrize("kw, name", [(dict(N=65), "N"), (dict(N=0), "N"), (dict(steps=0), "steps"),
                                      (dict(seeds=0), "seeds"), (dict(lrs=[-1.0]), "lr"), (dict(ms=[0]), "m"),
                                      (dict(ms=[2, 2]), "ms"), (dict(reduction="max"), "reduction"),
                                      (dict(lanes=0), "lanes"), (dict(lanes=9), "lanes"),
                                      (dict(chunk=0), "chunk"), (dict(X=np.zeros((1, 2, 3))), "X")])
def test_bad_input_names_the_parameter(kw, name):
    args = dict(N=4, d=2, lrs=[0.1], ms=[2], steps=5, seeds=1, seed=0) | kw
    with pytest.raises(ValueError, match=name):
        cuda_sgd.sgd_sweep_cuda(**args)
