"""Numba kernels of the exact-in-law overlap sampler: arithmetic only, no checks, no RNG objects.

State: the Gram matrix G = [[Q, R], [R^T, T]] of the K student and M teacher
first-layer weights (students first), G = W W^T / N with W = [w; w*].
"""

import math

import numpy as np

from .._jit import njit
from ..activations import dg, g
from ._kernels import DIVERGENCE_THRESHOLD


@njit
def chol_psd(A, L):
    """Lower-triangular L with A = L L^T for a symmetric positive semi-definite A.

    Cholesky without pivoting; a pivot that is not positive (a null direction, or
    round-off of order 1e-16 of the diagonal in a rank-deficient A) gives a zero
    column, which is the exact factor of a PSD matrix whose null directions are
    coordinate-aligned at that stage.
    """
    n = A.shape[0]
    for j in range(n):
        d = A[j, j]
        for p in range(j):
            d -= L[j, p] * L[j, p]
        if d > 0.0:
            ljj = math.sqrt(d)
            L[j, j] = ljj
            inv = 1.0 / ljj
            for i in range(j + 1, n):
                acc = A[i, j]
                for p in range(j):
                    acc -= L[i, p] * L[j, p]
                L[i, j] = acc * inv
        else:
            L[j, j] = 0.0
            for i in range(j + 1, n):
                L[i, j] = 0.0
        for i in range(j):
            L[i, j] = 0.0
    return L


@njit
def bartlett(chi2, off, L):
    """Bartlett factor of a Wishart_r(nu, I) matrix W = L L^T (r = len(chi2)).

    L_ii = sqrt(chi2_i) with chi2_i ~ chi^2(nu - i) (i = 0..r-1), L_ij ~ N(0, 1) for
    j < i (``off`` in row-major order of the strict lower triangle), L_ij = 0 above.
    """
    r = chi2.shape[0]
    q = 0
    for i in range(r):
        for j in range(i):
            L[i, j] = off[q]
            q += 1
        L[i, i] = math.sqrt(chi2[i])
        for j in range(i + 1, r):
            L[i, j] = 0.0
    return L


@njit
def overlap_steps(G, v, v_star, A, chi2, off, zeta, act, eta, eta_v, sigma, kappa, N, K, batch,
                  train_v):
    """Run len(A) mini-batch SGD steps on the overlaps, in place; return the steps completed.

    Exact in law for inputs x ~ N(0, I_N) (see :mod:`tsdyn.committee.sampler`). With
    L L^T = G (Cholesky) and, per sample b, a^b ~ N(0, I_{K+M}) (row ``A[s]``, sample-major),
    the fields are (lambda^b, rho^b) = L a^b. With c_kb = -eta/(N B) v_k g'(lambda_k^b) Delta^b
    and d = 1 - eta kappa / N, the new overlaps are

        Q' = d^2 Q + d (c Lambda^T + Lambda c^T) + (c A_s^T)(c A_s^T)^T + Y Y^T,
        R' = d R + c P^T,

    Lambda (K, B) and P (M, B) the student and teacher fields, A_s the (K+M, B) in-span
    projections, and Y Y^T = c X_perp X_perp^T c^T the part orthogonal to the span:
    Y = c L_W with L_W the Bartlett factor of a B x B Wishart(N - K - M) if B <= K, else
    Y = F L_W with F F^T = c c^T and L_W the factor of a K x K Wishart(N - K - M).
    ``chi2`` (steps, r) and ``off`` (steps, r (r - 1) / 2) feed the Bartlett factors,
    r = min(B, K).
    """
    n = G.shape[0]
    M = n - K
    n_steps = A.shape[0]
    r = chi2.shape[1]
    L = np.zeros((n, n))
    F = np.empty((n, batch))
    c = np.empty((K, batch))
    H = np.empty((K, n))
    P = np.empty((K, n))
    LW = np.zeros((r, r))
    S = np.empty((K, K))
    FS = np.zeros((K, K))
    Y = np.empty((K, r))
    Gn = np.empty((K, n))
    delta = np.empty(batch)
    decay = 1.0 - eta * kappa / N
    scale = -eta / (N * batch)
    for s in range(n_steps):
        chol_psd(G, L)
        a = A[s]
        for b in range(batch):
            base = b * n
            for i in range(n):
                acc = 0.0
                for j in range(i + 1):
                    acc += L[i, j] * a[base + j]
                F[i, b] = acc
            err = -sigma * zeta[s, b]
            for k in range(K):
                err += v[k] * g(act, F[k, b])
            for m in range(M):
                err -= v_star[m] * g(act, F[K + m, b])
            if not abs(err) < DIVERGENCE_THRESHOLD:  # also catches nan
                return s
            delta[b] = err
            for k in range(K):
                c[k, b] = scale * v[k] * dg(act, F[k, b]) * err
        # H = c F^T (cross terms), P = c A_s^T (in-span part of the new direction)
        for k in range(K):
            for j in range(n):
                h = 0.0
                p = 0.0
                for b in range(batch):
                    h += c[k, b] * F[j, b]
                    p += c[k, b] * a[b * n + j]
                H[k, j] = h
                P[k, j] = p
        # the part orthogonal to the span: Y Y^T ~ c Wishart_B(N - n) c^T
        bartlett(chi2[s], off[s], LW)
        if batch <= K:
            for k in range(K):
                for j in range(r):
                    acc = 0.0
                    for b in range(j, r):
                        acc += c[k, b] * LW[b, j]
                    Y[k, j] = acc
        else:
            for k in range(K):
                for l in range(k + 1):
                    acc = 0.0
                    for b in range(batch):
                        acc += c[k, b] * c[l, b]
                    S[k, l] = acc
                    S[l, k] = acc
            chol_psd(S, FS)
            for k in range(K):
                for j in range(r):
                    acc = 0.0
                    for b in range(j, k + 1):
                        acc += FS[k, b] * LW[b, j]
                    Y[k, j] = acc
        for k in range(K):
            for l in range(k + 1):
                acc = decay * decay * G[k, l] + decay * (H[k, l] + H[l, k])
                for j in range(n):
                    acc += P[k, j] * P[l, j]
                for j in range(r):
                    acc += Y[k, j] * Y[l, j]
                Gn[k, l] = acc
            for m in range(M):
                Gn[k, K + m] = decay * G[k, K + m] + H[k, K + m]
        for k in range(K):
            for l in range(k + 1):
                G[k, l] = Gn[k, l]
                G[l, k] = Gn[k, l]
            for m in range(M):
                G[k, K + m] = Gn[k, K + m]
                G[K + m, k] = Gn[k, K + m]
        if train_v:
            for k in range(K):
                grad = 0.0
                for b in range(batch):
                    grad += g(act, F[k, b]) * delta[b]
                v[k] -= eta_v / N * (grad / batch + kappa * v[k])
    return n_steps
