"""Numba kernel of the absorption runs: greedy sweeps that stop at the teacher.

Arithmetic only, no checks, no RNG (the sweeps themselves are :func:`._kernels.greedy2_sweeps`,
called one sweep at a time so that the student can be compared with the teacher after each).
"""

import numpy as np

from .._jit import njit
from ._kernels import greedy2_sweeps


@njit
def mismatches(w, target):
    """Number of entries where the student's row lists ``w`` (N, D) differ from ``target``,
    the teacher's values at the same positions of the student's support."""
    n = 0
    for j in range(w.shape[0]):
        for t in range(w.shape[1]):
            if w[j, t] != target[j, t]:
                n += 1
    return n


@njit
def greedy2_until_teacher(t_in_idx, t_in_w, t_out_idx, t_out_w, in_idx, in_w, out_idx, out_w,
                          hid_out, hid_slot, X, order, bits, a, ternary, target_in, target_out,
                          accepted, batch_loss):
    """Greedy sweeps of the two-matrix student (as :func:`._kernels.greedy2_sweeps`), in place,
    stopping after the first sweep that leaves the student equal to the teacher.

    Returns ``(done, wrong)``: the sweeps made (``X.shape[0]`` if the teacher was not reached)
    and the number of weights of the student's support that differ from the teacher's after
    the last of them (0 if and only if the run stopped at the teacher).
    """
    no_log = np.empty((0, 0))
    wrong = mismatches(in_w, target_in) + mismatches(out_w, target_out)
    for b in range(X.shape[0]):
        greedy2_sweeps(t_in_idx, t_in_w, t_out_idx, t_out_w, in_idx, in_w, out_idx, out_w, hid_out,
                       hid_slot, X[b:b + 1], order[b:b + 1], bits[b:b + 1], a, ternary,
                       accepted[b:b + 1], batch_loss[b:b + 1], no_log)
        wrong = mismatches(in_w, target_in) + mismatches(out_w, target_out)
        if wrong == 0:
            return b + 1, 0
    return X.shape[0], wrong
