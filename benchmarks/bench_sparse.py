"""Ratio benchmarks of the sparse greedy dynamics (run by `make bench`).

Everything is measured in one run and reported as ratios, never bare seconds (the
machine is shared and noisy). Each timing is the best of several interleaved repeats.

Two-matrix LeakyReLU network (ST-SS-2M-OC) at N = 200, d = 4, m = 64; attempted
moves (sign flips) per second of:

1. the library's kernel (``_kernels.greedy2_sweeps``: per sweep, the teacher's labels,
   the student's state on the fresh mini-batch, then 2 N d moves each evaluated
   incrementally in O(d m)), against
2. a plain-NumPy greedy loop that evaluates every Delta L from scratch: flip the
   weight, recompute the network's outputs on the mini-batch with dense matrix
   products (O(N^2 m) per move, BLAS), compare the losses, undo if it increased.
   Target: >= 20x.
3. Also against a plain-NumPy loop that recomputes from scratch but exploits the
   sparsity (gathers over the d non-zeros per row: O(N d m) per move), the best a
   non-incremental evaluation can do.
4. The floor: per sweep, drawing the N m Gaussian inputs of the mini-batch with
   numpy (the part of a sweep no kernel can avoid); the sweep costs this many floors.
"""

import os

# The kernel runs on one core; so does the NumPy baseline (BLAS threads spinning on a
# shared 2-core machine would make the baseline slower and the ratio flattering).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402

from tsdyn import sparse  # noqa: E402
from tsdyn.sparse import _kernels  # noqa: E402
from tsdyn.sparse.networks import compact, draw_networks, transpose_lists  # noqa: E402
from _timing import best_of, smoke, verdict  # noqa: E402  (benchmarks/ is on sys.path)

N, D, M, A = smoke(200, 20), 4, 64, 0.1


def leaky(x):
    return np.where(x >= 0, x, A * x)


def numpy_dense_moves(W_in, W_out, slots, X, Y):
    """Greedy moves, each Delta L from scratch with dense products. slots: (matrix, row, col)."""
    loss = 0.5 * np.sum((leaky(W_out @ leaky(W_in @ X)) - Y) ** 2)
    for which, j, k in slots:
        W = W_in if which == 0 else W_out
        W[j, k] = -W[j, k]
        trial = 0.5 * np.sum((leaky(W_out @ leaky(W_in @ X)) - Y) ** 2)
        if trial <= loss:
            loss = trial
        else:
            W[j, k] = -W[j, k]


def numpy_sparse_moves(in_idx, in_w, out_idx, out_w, slots, X, Y):
    """Greedy moves, each Delta L from scratch with sparse gathers (O(N d m) per move)."""

    def outputs():
        H = np.einsum("jt,jts->js", in_w, X[in_idx])
        Ah = leaky(H)
        return leaky(np.einsum("it,its->is", out_w, Ah[out_idx]))

    loss = 0.5 * np.sum((outputs() - Y) ** 2)
    for which, j, t in slots:
        w = in_w if which == 0 else out_w
        w[j, t] = -w[j, t]
        trial = 0.5 * np.sum((outputs() - Y) ** 2)
        if trial <= loss:
            loss = trial
        else:
            w[j, t] = -w[j, t]


def main():
    p = sparse.Params(N=N, d=D, m=M)
    nets = draw_networks(p, seed=0)
    t_in = compact(nets.teacher_in, nets.teacher_in != 0)
    t_out = compact(nets.teacher_out, nets.teacher_out != 0)
    s_in = compact(nets.student_in, nets.support_in)
    s_out = compact(nets.student_out, nets.support_out)
    hid_out, hid_slot = transpose_lists(s_out[0])
    rng = np.random.default_rng(0)
    n_sweeps = smoke(20, 2)
    X = rng.standard_normal((n_sweeps, N, M))
    order = rng.permuted(np.tile(np.arange(p.n_weights), (n_sweeps, 1)), axis=1)
    bits = np.zeros(order.shape, np.int8)
    acc, bl, no_log = np.empty(n_sweeps, np.int64), np.empty(n_sweeps), np.empty((0, 0))

    def kernel():
        _kernels.greedy2_sweeps(*t_in, *t_out, s_in[0], s_in[1].copy(), s_out[0], s_out[1].copy(),
                                hid_out, hid_slot, X, order, bits, A, False, acc, bl, no_log)

    # the NumPy contenders do fewer moves (they are slow); rates are per move
    Y = leaky(nets.teacher_out @ leaky(nets.teacher_in @ X[0].astype(float)))
    n_dense, n_sparse = 200, 1000
    slots = []
    for slot in order[0][:n_sparse]:
        which, (j, t) = (0, divmod(slot, D)) if slot < N * D else (1, divmod(slot - N * D, D))
        slots.append((which, j, t))
    dense_slots = [(w, j, (s_in if w == 0 else s_out)[0][j, t]) for w, j, t in slots[:n_dense]]

    def numpy_dense():
        numpy_dense_moves(nets.student_in.astype(float), nets.student_out.astype(float),
                          dense_slots, X[0], Y)

    def numpy_sparse():
        numpy_sparse_moves(s_in[0], s_in[1].copy(), s_out[0], s_out[1].copy(), slots, X[0], Y)

    def floor():
        rng.standard_normal((n_sweeps, N, M))

    kernel()  # compile
    t_kernel, t_dense, t_sparse, t_floor = best_of([kernel, numpy_dense, numpy_sparse, floor])
    rate = n_sweeps * p.n_weights / t_kernel
    ratio_dense = rate / (n_dense / t_dense)
    ratio_sparse = rate / (n_sparse / t_sparse)
    print(f"sparse: greedy moves, two-matrix LeakyReLU N={N}, d={D}, m={M} (ratios measured in one run)")
    print(f"  moves/s vs plain-NumPy from-scratch Delta L (dense products): {ratio_dense:7.0f}x "
          f"(target >= 20x) -> {verdict(ratio_dense >= 20)}")
    print(f"  moves/s vs plain-NumPy from-scratch Delta L (sparse gathers): {ratio_sparse:7.0f}x")
    print(f"  one sweep (labels, state, {p.n_weights} moves) costs {t_kernel / t_floor:5.1f}x "
          f"drawing its mini-batch (N m = {N * M} normals)")


if __name__ == "__main__":
    main()
