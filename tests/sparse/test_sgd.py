"""Dense SGD student: gradient, determinism, learning."""

import numpy as np
import pytest

from tsdyn import sparse
from tsdyn.sparse import _kernels
from tsdyn.sparse.networks import compact

from ._reference import output_one_matrix


def test_one_step_is_minus_lr_times_the_gradient():
    """A single step at m = 3 equals -lr times the finite-difference gradient of the
    mini-batch loss of eq. (2) (central differences, h = 1e-6: error O(h^2) ~ 1e-12
    plus round-off ~ 1e-16 / h, so 1e-7 relative is a safe margin)."""
    rng = np.random.default_rng(0)
    N, d, m, lr = 6, 2, 3, 0.1
    T = sparse.draw_networks(sparse.Params(N=N, d=d, m=1, model="one_matrix"), seed=0).teacher_in
    t_idx, t_w = compact(T.T, T.T != 0)
    W0 = rng.uniform(0, 1, (N, N))
    X = rng.standard_normal((m, N))
    Y = np.empty(m)
    _kernels.teacher1_outputs(t_idx, t_w, X, 1 / np.sqrt(d), Y)
    np.testing.assert_allclose(Y, output_one_matrix(T.astype(float), X.T, d), rtol=1e-12)

    def loss(W):
        return 0.5 * np.sum((output_one_matrix(W, X.T, d) - Y) ** 2)

    grad = np.zeros((N, N))
    h = 1e-6
    for i in range(N):
        for r in range(N):
            E = np.zeros((N, N))
            E[i, r] = h
            grad[i, r] = (loss(W0 + E) - loss(W0 - E)) / (2 * h)
    for mean, factor in ((False, 1.0), (True, 1.0 / m)):
        W = W0.copy()
        assert _kernels.sgd_steps(W, X, Y, m, lr, 1 / np.sqrt(d), mean) == 1
        np.testing.assert_allclose(W - W0, -lr * factor * grad, rtol=1e-7, atol=1e-12)


def test_same_seed_gives_bit_identical_runs():
    p = sparse.SGDParams(N=8, d=2, m=4, lr=0.1)
    a = sparse.sgd(p, 300, seed=3, n_points=6)
    b = sparse.sgd(p, 300, seed=3, n_points=3)
    np.testing.assert_array_equal(a.W.values, b.W.values)
    assert a.val_loss.values[-1] == b.val_loss.values[-1]
    assert not np.array_equal(a.W.values, sparse.sgd(p, 300, seed=4, n_points=3).W.values)
    assert a.t.attrs["units"] == "SGD steps" and a.attrs["lr"] == 0.1


def test_student_normalisation_d_s():
    """d_s sets the student's 1/sqrt(d_s) and nothing else: the recorded validation loss
    at t = 0 is the reference eq. (8) loss of the initial W (drawn on the run's own
    stream) with d_s in place of the teacher's d (1e-12: the same sums, reordered);
    d_s = d is the default run, bit for bit."""
    from tsdyn.sparse import _seeds

    N, d = 12, 2
    base = dict(N=N, d=d, m=4, lr=0.1, n_val=64)
    ds = sparse.sgd(sparse.SGDParams(**base, d_s=N), 3, seed=7, n_points=2)
    ss = _seeds.seed_sequence(7)
    W0 = _seeds.rng(ss, "dense_init").uniform(0.0, 1.0, (N, N))
    X = _seeds.rng(ss, "validation").standard_normal((64, N)).T
    T = ds.teacher.values.astype(float)
    ref = 0.5 * np.mean((output_one_matrix(W0, X, N) - output_one_matrix(T, X, d)) ** 2)
    np.testing.assert_allclose(ds.val_mse.values[0], ref, rtol=1e-12)
    a = sparse.sgd(sparse.SGDParams(**base), 50, seed=7, n_points=2)
    b = sparse.sgd(sparse.SGDParams(**base, d_s=d), 50, seed=7, n_points=2)
    np.testing.assert_array_equal(a.W.values, b.W.values)


def test_same_teacher_as_the_greedy_one_matrix_model():
    ds = sparse.sgd(sparse.SGDParams(N=16, d=2, m=2, lr=0.1), 2, seed=5, n_points=2)
    g = sparse.greedy(sparse.Params(N=16, d=2, m=2, model="one_matrix"), 1, seed=5, n_points=2)
    np.testing.assert_array_equal(ds.teacher.values, g.teacher_in.values)


def test_sgd_learns_the_teacher():
    """With a moderate batch the validation loss falls by two orders of magnitude from
    the uniform [0, 1] start within 5000 steps (N = 12)."""
    ds = sparse.sgd(sparse.SGDParams(N=12, d=2, m=16, lr=0.1), 5000, seed=0, n_points=5)
    assert not bool(ds.diverged)
    assert ds.val_loss.values[-1] < 1e-2 * ds.val_loss.values[0]


def test_non_finite_weights_stop_the_run():
    """With erf units every update is bounded (|phi'| <= 0.8, |y_hat - y| <= 2), so a
    finite learning rate cannot blow up; the kernel still stops at the first
    non-finite weight and reports how many steps it completed, which sgd() records
    as a divergence."""
    N, m = 4, 2
    W = np.full((N, N), np.nan)
    X = np.ones((3 * m, N))
    assert _kernels.sgd_steps(W, X, np.zeros(3 * m), m, 0.1, 1.0, False) == 0


def test_bad_step_count_names_steps():
    p = sparse.SGDParams(N=8, d=2, m=4, lr=0.1)
    with pytest.raises(ValueError, match=r"steps \(SGD steps\) must be an integer >= 1; got 0"):
        sparse.sgd(p, 0, seed=0)


def test_effective_time():
    assert sparse.effective_time(100, 0.1, 16) == pytest.approx(160.0)
    assert sparse.effective_time(100, 0.1, 16, "mean") == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"reduction must be one of \('sum', 'mean'\); got 'max'"):
        sparse.effective_time(1, 0.1, 1, "max")
