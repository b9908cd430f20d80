"""Numba kernels of the exact-in-law overlap sampler: arithmetic only, no checks, no RNG objects.

State: in an orthonormal frame of span{w*, w} ordered teacher first, the teachers'
Cholesky factor LT (fixed, LT LT^T = T), the students' coordinates X (K, M) in the
teachers' span and the Gram matrix S = Q - X X^T of their remaining parts; then
R = X LT^T and Q = S + X X^T (see :func:`overlap_steps`)."""

import math

import numpy as np

from .._jit import njit, njit_reduce
from ..activations import g_dg_fit, g_fit
from ._kernels import DIVERGENCE_THRESHOLD, second_layer_step


@njit
def chol_psd(A, L):
    """Lower-triangular L with A = L L^T for a symmetric positive semi-definite A.

    Cholesky without pivoting; a pivot that is not positive (a null direction, or
    round-off of order 1e-16 of the diagonal in a rank-deficient A) gives a zero
    column, which is the exact factor of a PSD matrix whose null directions are
    coordinate-aligned at that stage. Only the lower triangle of L is written (the
    caller keeps the upper triangle zero).
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


@njit_reduce
def overlap_steps(X, S, LT, v, v_star, A, chi2, off, zeta, act, eta, eta_v, sigma, kappa, N, batch,
                  train_v):
    """Run len(A) mini-batch SGD steps on the overlaps, in place; return the steps completed.

    Fewer steps are completed if a step's error blew up. Exact in law for inputs
    x ~ N(0, I_N) (see :mod:`tsdyn.committee.sampler`). The frame of span{w*, w} is
    ordered teacher first: LT LT^T = T (fixed), the students' coordinates are X (K, M) in
    the teachers' span (R = X LT^T) and a K x K block with Gram matrix S = Q - X X^T in
    the rest. Per sample b, a^b = (a_T, a_S) ~ N(0, I_{M+K}) (row ``A[s]``, sample-major);
    with LS LS^T = S (Cholesky), the fields are rho = LT a_T and lambda = X a_T + mu,
    mu = LS a_S. With c_kb = -eta/(N B) v_k g'(lambda_k^b) Delta^b (Goldt et al. eq. 2)
    and d = 1 - eta kappa / N, the students move to d [X, LS] + c [A_T^T, A_S^T] plus
    c X_perp in the orthogonal complement, so

        X' = d X + c A_T^T,
        S' = d^2 S + d (c Mu^T + Mu c^T) + (c A_S^T)(c A_S^T)^T + Y Y^T,

    Y Y^T = c X_perp X_perp^T c^T: Y = c L_W with L_W the Bartlett factor of a B x B
    Wishart(N - K - M) if B <= K, else Y = F L_W with F F^T = c c^T and L_W the factor
    of a K x K Wishart(N - K - M). For B = 1 the last two terms are
    (|a_S|^2 + chi^2_{N-K-M}) c c^T. ``chi2`` (steps, r) and ``off`` (steps,
    r (r - 1) / 2) feed the Bartlett factors, r = min(B, K). Online SGD (B = 1) goes
    to :func:`online_steps`, the same step written for one sample, mini-batches to
    :func:`batch_steps`.
    """
    if batch == 1:
        return online_steps(X, S, LT, v, v_star, A, chi2, zeta, act, eta, eta_v, sigma, kappa, N,
                            train_v)
    return batch_steps(X, S, LT, v, v_star, A, chi2, off, zeta, act, eta, eta_v, sigma, kappa, N,
                       batch, train_v)


@njit_reduce
def batch_steps(X, S, LT, v, v_star, A, chi2, off, zeta, act, eta, eta_v, sigma, kappa, N, batch,
                train_v):
    """:func:`overlap_steps` for any batch size B >= 1, sample by sample within a step."""
    K, M = X.shape
    n = K + M
    n_steps = A.shape[0]
    r = chi2.shape[1]
    LS = np.zeros((K, K))
    lam = np.empty((K, batch))
    mu = np.empty((K, batch))
    c = np.empty((K, batch))
    P = np.empty((K, K))
    LW = np.zeros((r, r))
    CC = np.empty((K, K))
    FS = np.zeros((K, K))
    Y = np.empty((K, r))
    delta = np.empty(batch)
    dgk = np.empty(K)
    decay = 1.0 - eta * kappa / N
    scale = -eta / (N * batch)
    for s in range(n_steps):
        chol_psd(S, LS)
        a = A[s]
        for b in range(batch):
            base = b * n
            err = -sigma * zeta[s, b]
            for m in range(M):
                acc = 0.0
                for j in range(m + 1):
                    acc += LT[m, j] * a[base + j]
                err -= v_star[m] * g_fit(act, acc)
            for k in range(K):
                acc = 0.0
                for j in range(k + 1):
                    acc += LS[k, j] * a[base + M + j]
                mu[k, b] = acc
                for m in range(M):
                    acc += X[k, m] * a[base + m]
                lam[k, b] = acc
                gk, dgk[k] = g_dg_fit(act, acc)
                err += v[k] * gk
            if not abs(err) < DIVERGENCE_THRESHOLD:  # also catches nan
                return s
            delta[b] = err
            for k in range(K):
                c[k, b] = scale * v[k] * dgk[k] * err
        for k in range(K):
            for m in range(M):
                acc = decay * X[k, m]
                for b in range(batch):
                    acc += c[k, b] * a[b * n + m]
                X[k, m] = acc
        # P = c A_S^T: the new directions' part inside the students' own block
        for k in range(K):
            for j in range(K):
                acc = 0.0
                for b in range(batch):
                    acc += c[k, b] * a[b * n + M + j]
                P[k, j] = acc
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
                    CC[k, l] = acc
                    CC[l, k] = acc
            chol_psd(CC, FS)
            for k in range(K):
                for j in range(r):
                    acc = 0.0
                    for b in range(j, k + 1):
                        acc += FS[k, b] * LW[b, j]
                    Y[k, j] = acc
        for k in range(K):
            for l in range(k + 1):
                acc = decay * decay * S[k, l]
                for b in range(batch):
                    acc += decay * (c[k, b] * mu[l, b] + c[l, b] * mu[k, b])
                for j in range(K):
                    acc += P[k, j] * P[l, j]
                for j in range(r):
                    acc += Y[k, j] * Y[l, j]
                S[k, l] = acc
                S[l, k] = acc
        if train_v:
            second_layer_step(v, lam, delta, act, eta_v, kappa, N, batch)
    return n_steps



@njit_reduce
def online_steps(X, S, LT, v, v_star, A, chi2, zeta, act, eta, eta_v, sigma, kappa, N, train_v):
    """:func:`overlap_steps` for online SGD (B = 1), written for one sample.

    With a = (a_T, a_S) = ``A[s]`` and mu = LS a_S, the orthogonal part X_perp X_perp^T is a
    single chi^2_{N-K-M} (``chi2[s, 0]``), so S' = d^2 S + d (c mu^T + mu c^T) +
    (|a_S|^2 + chi^2) c c^T. The teachers' part of the errors, -sigma zeta - sum_m
    v*_m g(rho_m), does not depend on the state; it is computed for the whole block in a
    first pass, which leaves the Cholesky factor, the K student fields and the updates on
    the step-to-step chain. The Cholesky factor is that of :func:`chol_psd`, inlined.
    """
    K, M = X.shape
    n_steps = A.shape[0]
    LS = np.zeros((K, K))
    lam = np.empty((K, 1))
    mu = np.empty(K)
    c = np.empty(K)
    dgk = np.empty(K)
    delta = np.empty(1)
    teacher = np.empty(n_steps)
    decay = 1.0 - eta * kappa / N
    scale = -eta / N
    for s in range(n_steps):
        err = -sigma * zeta[s, 0]
        for m in range(M):
            acc = 0.0
            for j in range(m + 1):
                acc += LT[m, j] * A[s, j]
            err -= v_star[m] * g_fit(act, acc)
        teacher[s] = err
    for s in range(n_steps):
        for j in range(K):  # LS LS^T = S; a pivot that is not positive gives a zero column
            d = S[j, j]
            for p in range(j):
                d -= LS[j, p] * LS[j, p]
            ljj = math.sqrt(d) if d > 0.0 else 0.0
            inv = 1.0 / ljj if d > 0.0 else 0.0
            LS[j, j] = ljj
            for i in range(j + 1, K):
                acc = S[i, j]
                for p in range(j):
                    acc -= LS[i, p] * LS[j, p]
                LS[i, j] = acc * inv
        err = teacher[s]
        norm2 = chi2[s, 0]
        for k in range(K):
            acc = 0.0
            for j in range(k + 1):
                acc += LS[k, j] * A[s, M + j]
            mu[k] = acc
            norm2 += A[s, M + k] * A[s, M + k]
            for m in range(M):
                acc += X[k, m] * A[s, m]
            lam[k, 0] = acc
            gk, dgk[k] = g_dg_fit(act, acc)
            err += v[k] * gk
        if not abs(err) < DIVERGENCE_THRESHOLD:  # also catches nan
            return s
        delta[0] = err
        for k in range(K):
            c[k] = scale * v[k] * dgk[k] * err
        for k in range(K):
            for m in range(M):
                X[k, m] = decay * X[k, m] + c[k] * A[s, m]
        for k in range(K):
            for l in range(k + 1):
                val = (decay * decay * S[k, l] + decay * (c[k] * mu[l] + c[l] * mu[k])
                       + norm2 * c[k] * c[l])
                S[k, l] = val
                S[l, k] = val
        if train_v:
            second_layer_step(v, lam, delta, act, eta_v, kappa, N, 1)
    return n_steps


@njit
def independent_steps(X0, S0, LT, v0, v_star, A, chi2, off, zeta, act, eta, eta_v, sigma, kappa,
                      N, batch, train_v, X_out, S_out, v_out):
    """len(A) independent single steps of :func:`overlap_steps`, each from (X0, S0, v0).

    Row i of A, chi2, off, zeta feeds step i; its result goes to X_out[i], S_out[i],
    v_out[i] (NaN if the step blew up).
    """
    for i in range(A.shape[0]):
        X = X0.copy()
        S = S0.copy()
        v = v0.copy()
        done = overlap_steps(X, S, LT, v, v_star, A[i:i + 1], chi2[i:i + 1], off[i:i + 1],
                             zeta[i:i + 1], act, eta, eta_v, sigma, kappa, N, batch, train_v)
        if done == 1:
            X_out[i] = X
            S_out[i] = S
            v_out[i] = v
        else:
            X_out[i] = np.nan
            S_out[i] = np.nan
            v_out[i] = np.nan
