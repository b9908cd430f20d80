"""Small dense linear algebra shared by the models' kernels (numba, plain loops)."""

import math

import numpy as np

from ._jit import njit_reduce


@njit_reduce
def cholesky_row(M, Lc, k, shift):
    """Row k of the lower Cholesky factor Lc of M + diag(shift) (M symmetric PSD), given
    its rows below k: Lc[k, :k+1] is written from M[k, :k+1] and Lc[:k, :k]. A non-positive
    pivot gives a zero (the factor of a singular PSD matrix)."""
    for j in range(k + 1):
        acc = M[k, j]
        for i in range(j):
            acc -= Lc[k, i] * Lc[j, i]
        if j == k:
            acc += shift
            Lc[k, k] = math.sqrt(acc) if acc > 0.0 else 0.0
        elif Lc[j, j] > 0.0:
            Lc[k, j] = acc / Lc[j, j]
        else:
            Lc[k, j] = 0.0


@njit_reduce
def cholesky_shifted(M, eps):
    """Lower Cholesky factor of M + eps D, D diagonal with D_kk = max(diag M[:k+1, :k+1])
    (M symmetric PSD, shape (n, n)).

    Causal: row k only uses M[:k+1, :k+1], the relative shift included, so the factor can
    be built a row at a time as M grows (:func:`cholesky_row`). Plain loops: no LAPACK
    threads. A non-positive pivot gives a zero column (the factor of a singular PSD matrix).
    """
    n = M.shape[0]
    Lc = np.zeros((n, n))
    scale = 0.0
    for k in range(n):
        scale = max(scale, M[k, k])
        cholesky_row(M, Lc, k, eps * scale)
    return Lc
