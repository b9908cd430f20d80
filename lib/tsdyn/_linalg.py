"""Small dense linear algebra shared by the models' kernels (numba, plain loops)."""

import math

import numpy as np

from ._jit import njit_reduce


@njit_reduce
def cholesky_shifted(M, eps):
    """Lower Cholesky factor of M + eps max(diag M) 1 (M symmetric PSD, shape (n, n)).

    Row k only uses M[:k+1, :k+1] (causal). Plain loops: no LAPACK threads. A non-positive pivot
    gives a zero column (the factor of a singular PSD matrix).
    """
    n = M.shape[0]
    Lc = np.zeros((n, n))
    scale = 0.0
    for k in range(n):
        scale = max(scale, M[k, k])
    if scale <= 0.0:
        return Lc
    shift = eps * scale
    for k in range(n):
        for j in range(k + 1):
            acc = M[k, j]
            for i in range(j):
                acc -= Lc[k, i] * Lc[j, i]
            if j == k:
                acc += shift
                Lc[k, k] = math.sqrt(acc) if acc > 0.0 else 0.0
            elif Lc[j, j] > 0.0:
                Lc[k, j] = acc / Lc[j, j]
    return Lc
