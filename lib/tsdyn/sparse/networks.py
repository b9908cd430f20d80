"""Teacher and student networks: supports, signs, and their compact (row-list) form."""

from dataclasses import dataclass

import numpy as np

from .._seeds import child
from . import _seeds
from .graph import neighbours, regular_bipartite
from .params import Params


@dataclass(frozen=True)
class Networks:
    """Dense weight matrices of a teacher and of the student's initial state.

    two_matrix: ``W_in`` (hidden j, input k) and ``W_out`` (output i, hidden j).
    one_matrix: ``W_in`` is the paper's W (input i, hidden r), so hidden unit r reads
    column r; ``W_out`` is None (the output is the mean of the hidden units).
    Values in {-1, 0, +1}; ``support_*`` are the student's 0/1 supports, which
    contain the teacher's.
    """

    teacher_in: np.ndarray
    teacher_out: np.ndarray | None
    student_in: np.ndarray
    student_out: np.ndarray | None
    support_in: np.ndarray
    support_out: np.ndarray | None


def draw_networks(params, *, seed):
    """Teacher and initial student of a run (same seed, same networks).

    The teacher's supports are random d-regular bipartite graphs
    (:func:`regular_bipartite`), its non-zero weights +-1 with equal probability
    (sec. 4.1). The student starts from uniformly random values on its support:
    +-1 when d_s = d, {-1, 0, +1} in the mismatched case.
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a sparse.Params; got {type(params).__name__}")
    N = params.N
    n_mat = 2 if params.model == "two_matrix" else 1
    rng_sign = _seeds.rng(seed, "teacher_signs")
    rng_init = _seeds.rng(seed, "student_init")
    teacher, student, support = [], [], []
    for which in range(n_mat):
        mask = regular_bipartite(N, params.d, seed=child(_seeds.stream(seed, "teacher_graph"), which))
        signs = rng_sign.choice(np.array([-1, 1], dtype=np.int8), size=(N, N))
        teacher.append((mask * signs).astype(np.int8))
        if params.mismatched:
            extra = regular_bipartite(N, params.student_d - params.d,
                                      seed=child(_seeds.stream(seed, "student_graph"), which), avoid=mask)
            supp = (mask + extra).astype(np.int8)
            values = np.array([-1, 0, 1], dtype=np.int8)
        else:
            supp = mask.copy()
            values = np.array([-1, 1], dtype=np.int8)
        support.append(supp)
        student.append((supp * rng_init.choice(values, size=(N, N))).astype(np.int8))
    if n_mat == 1:
        return Networks(teacher[0], None, student[0], None, support[0], None)
    return Networks(teacher[0], teacher[1], student[0], student[1], support[0], support[1])


def compact(weights, support):
    """Row-list form of a sparse matrix: ``idx`` (N, D) columns of the support of each
    row and ``w`` (N, D) float64 values there."""
    idx = neighbours(support)
    w = np.take_along_axis(np.asarray(weights, float), idx, axis=1)
    return idx, np.ascontiguousarray(w)


def dense(idx, w, N):
    """Inverse of :func:`compact`: the (N, N) int8 matrix."""
    out = np.zeros((N, N), dtype=np.int8)
    np.put_along_axis(out, idx, np.rint(w).astype(np.int8), axis=1)
    return out


def transpose_lists(out_idx):
    """For a row-list matrix (output i -> hidden out_idx[i]), the lists hidden j ->
    (outputs i, slot of j in out_idx[i]), shapes (N, D)."""
    N, D = out_idx.shape
    i = np.repeat(np.arange(N), D)
    slot = np.tile(np.arange(D), N)
    j = out_idx.ravel()
    order = np.argsort(j, kind="stable")
    return (np.ascontiguousarray(i[order].reshape(N, D)),
            np.ascontiguousarray(slot[order].reshape(N, D)))
