"""The incremental Delta L equals the loss difference computed from scratch, and a greedy
sweep accepts exactly the moves that do not increase the mini-batch loss."""

import numpy as np
import pytest

from tsdyn import sparse
from tsdyn.sparse import _kernels
from tsdyn.sparse.networks import compact, dense, draw_networks, transpose_lists

from ._reference import loss_one_matrix, loss_two_matrix

# Delta L is a difference of two sums of O(N m) squares of O(1) numbers, each
# accumulated in a different order: agreement to 1e-9 relative to the loss itself
# is ~1e6 ulps of headroom for the summation error and still catches any wrong term.
RTOL = 1e-9

CASES = {
    "matched d=3": sparse.Params(N=12, d=3, m=5),
    "mismatched d=2, d_s=4": sparse.Params(N=12, d=2, d_s=4, m=5),
}


def two_matrix_setup(p, seed):
    nets = draw_networks(p, seed=seed)
    t_in = compact(nets.teacher_in, nets.teacher_in != 0)
    t_out = compact(nets.teacher_out, nets.teacher_out != 0)
    s_in = compact(nets.student_in, nets.support_in)
    s_out = compact(nets.student_out, nets.support_out)
    return nets, t_in, t_out, s_in, s_out, transpose_lists(s_out[0])


@pytest.mark.parametrize("name", CASES)
def test_incremental_delta_equals_loss_difference_two_matrices(name):
    p = CASES[name]
    N, m, a = p.N, p.m, p.a
    nets, t_in, t_out, s_in, s_out, (hid_out, hid_slot) = two_matrix_setup(p, 3)
    X = np.random.default_rng(0).standard_normal((N, m))
    H, A, Z, Y = (np.empty((N, m)) for _ in range(4))
    _kernels.forward2(*t_in, *t_out, X, a, H, A, Z, Y)
    Hs, As, Zs, Os = (np.empty((N, m)) for _ in range(4))
    _kernels.forward2(*s_in, *s_out, X, a, Hs, As, Zs, Os)
    W_in, W_out = nets.student_in.astype(float), nets.student_out.astype(float)
    base = loss_two_matrix(W_in, W_out, nets.teacher_in, nets.teacher_out, X, a)
    assert _kernels.loss2(Os, Y) == pytest.approx(base, rel=RTOL)
    D = p.student_d
    bufs = [np.empty(m) for _ in range(3)] + [np.empty((D, m)) for _ in range(2)]
    checked = 0
    for j in range(N):
        for t in range(D):
            for bit in (0, 1):
                new = _kernels.proposal(s_in[1][j, t], p.mismatched, bit)
                dl = _kernels.delta_in(j, t, new, *s_in, s_out[1], hid_out, hid_slot, X, a,
                                       Hs, As, Zs, Os, Y, *bufs)
                W2 = W_in.copy()
                W2[j, s_in[0][j, t]] = new
                ref = loss_two_matrix(W2, W_out, nets.teacher_in, nets.teacher_out, X, a) - base
                assert dl == pytest.approx(ref, rel=RTOL, abs=RTOL * base)
                new = _kernels.proposal(s_out[1][j, t], p.mismatched, bit)
                dl = _kernels.delta_out(j, t, new, *s_out, a, As, Zs, Os, Y, bufs[3], bufs[4])
                W2 = W_out.copy()
                W2[j, s_out[0][j, t]] = new
                ref = loss_two_matrix(W_in, W2, nets.teacher_in, nets.teacher_out, X, a) - base
                assert dl == pytest.approx(ref, rel=RTOL, abs=RTOL * base)
                checked += 2
    assert checked == 2 * 2 * N * D


def test_incremental_delta_equals_loss_difference_one_matrix():
    p = sparse.Params(N=16, d=3, m=7, model="one_matrix")
    nets = draw_networks(p, seed=5)
    t_idx, t_w = compact(nets.teacher_in.T, nets.teacher_in.T != 0)
    idx, w = compact(nets.student_in.T, nets.support_in.T)
    X = np.random.default_rng(1).standard_normal((p.N, p.m))
    scale = 1 / np.sqrt(p.d)
    TH, TP, Y = np.empty((p.N, p.m)), np.empty((p.N, p.m)), np.empty(p.m)
    _kernels.forward1(t_idx, t_w, X, scale, TH, TP, Y)
    H, P, O = np.empty((p.N, p.m)), np.empty((p.N, p.m)), np.empty(p.m)
    _kernels.forward1(idx, w, X, scale, H, P, O)
    W = nets.student_in.astype(float)
    base = loss_one_matrix(W, nets.teacher_in, X, p.d)
    assert _kernels.loss1(O, Y) == pytest.approx(base, rel=RTOL)
    bufs = [np.empty(p.m) for _ in range(3)]
    for r in range(p.N):
        for t in range(p.d):
            dl = _kernels.delta1(r, t, idx, w, X, scale, H, P, O, Y, *bufs)
            W2 = W.copy()
            W2[idx[r, t], r] *= -1
            ref = loss_one_matrix(W2, nets.teacher_in, X, p.d) - base
            assert dl == pytest.approx(ref, rel=RTOL, abs=RTOL * base)


def replay_two_matrix(p, seed, n_sweeps):
    """Run the kernel for n_sweeps with logged Delta L, then replay every move from scratch."""
    N, m, a, D = p.N, p.m, p.a, p.student_d
    nets, t_in, t_out, s_in, s_out, (hid_out, hid_slot) = two_matrix_setup(p, seed)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_sweeps, N, m))
    order = rng.permuted(np.tile(np.arange(p.n_weights), (n_sweeps, 1)), axis=1)
    bits = rng.integers(0, 2, size=order.shape).astype(np.int8)
    W_in, W_out = nets.student_in.astype(float), nets.student_out.astype(float)
    dl_log = np.empty(order.shape)
    accepted, batch_loss = np.empty(n_sweeps, np.int64), np.empty(n_sweeps)
    _kernels.greedy2_sweeps(*t_in, *t_out, *s_in, *s_out, hid_out, hid_slot, X, order, bits, a,
                            p.mismatched, accepted, batch_loss, dl_log)
    n_acc = 0
    for b in range(n_sweeps):
        loss = loss_two_matrix(W_in, W_out, nets.teacher_in, nets.teacher_out, X[b], a)
        start = loss
        n_acc_b = 0
        for q, slot in enumerate(order[b]):
            first = slot < N * D
            j, t = divmod(slot if first else slot - N * D, D)
            W = W_in if first else W_out
            idx = nets.support_in if first else nets.support_out
            col = np.nonzero(idx[j])[0][t]
            new = _kernels.proposal(W[j, col], p.mismatched, bits[b, q])
            old = W[j, col]
            W[j, col] = new
            trial = loss_two_matrix(W_in, W_out, nets.teacher_in, nets.teacher_out, X[b], a)
            assert dl_log[b, q] == pytest.approx(trial - loss, rel=RTOL, abs=RTOL * start)
            if trial - loss <= 0:
                loss = trial
                n_acc_b += 1
            else:
                W[j, col] = old
        # the greedy rule never raises the mini-batch loss within a sweep
        assert loss <= start
        assert batch_loss[b] == pytest.approx(loss, rel=RTOL)
        assert accepted[b] == n_acc_b
        n_acc += n_acc_b
    np.testing.assert_array_equal(dense(*s_in, N), W_in.astype(np.int8))
    np.testing.assert_array_equal(dense(*s_out, N), W_out.astype(np.int8))
    return n_acc


@pytest.mark.parametrize("name", CASES)
def test_greedy_sweep_accepts_exactly_the_non_increasing_moves(name):
    """Replaying every logged move from scratch reproduces the kernel's decisions and
    final student; no accepted move raised the mini-batch loss."""
    n_acc = replay_two_matrix(CASES[name], seed=11, n_sweeps=3)
    assert n_acc > 0  # the replay exercised accepted moves, not only rejections


def test_greedy_log_never_shows_an_accepted_increase():
    """Through the public greedy(): whenever Delta L > 0 the move was rejected, so the
    number of attempted moves with Delta L <= 0 is the number accepted (last sweep)."""
    p = sparse.Params(N=20, d=3, m=6)
    ds = sparse.greedy(p, 5, seed=2, n_points=6, spacing="linear", log_moves=True)
    dl = ds.dl.values
    assert dl.shape == (5, p.n_weights)
    for b in range(5):
        assert np.sum(dl[b] <= 0) == pytest.approx(ds.accept_rate.values[b + 1] * p.n_weights)
