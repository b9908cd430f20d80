"""Numba kernels of the dmft package: arithmetic only (no checks, no RNG objects).

Simulation: :func:`batch_chain`, :func:`sgd_steps`. DMFT: :func:`effective_process`,
:func:`response_kernel`, :func:`bulk_response`.
"""

import math

import numpy as np

from .._jit import njit, njit_reduce
from .model import loss_terms


# ------------------------------------------------------------------ batch chain

@njit
def batch_chain(s, U, p01, p10):
    """Advance the indicators ``s`` (int8, shape (n,)) through the rows of ``U``.

    Row k of the uniforms U (shape (steps, n)) moves every chain one step: 0 -> 1 with
    probability p01, 1 -> 0 with probability p10 (derivation E3). Returns the path,
    shape (steps, n): out[k] is the state after k + 1 moves (``s`` ends in that state).
    """
    steps, n = U.shape
    out = np.empty((steps, n), np.int8)
    for k in range(steps):
        for mu in range(n):
            if s[mu] == 0:
                if U[k, mu] < p01:
                    s[mu] = 1
            elif U[k, mu] < p10:
                s[mu] = 0
            out[k, mu] = s[mu]
    return out


# ------------------------------------------------------------------ simulation
# Loops rather than np.dot: numba's np.dot calls a multi-threaded BLAS, which is much
# slower than one core's loop when the machine's cores are shared.

@njit_reduce
def _dot(a, b):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@njit_reduce
def _matvec(X, w, out, scale):
    n, d = X.shape
    for mu in range(n):
        acc = 0.0
        for i in range(d):
            acc += X[mu, i] * w[i]
        out[mu] = acc * scale


@njit_reduce
def sgd_steps(w, X, y, v_star, s, U, n_steps, eta, lam, p01, p10, loss, model, L,
              m_out, C_out, loss_out, acc_out, k0, chain):
    """``n_steps`` steps of (persistent) SGD on the fixed training set (derivation E1).

    w (d,) is updated in place; X (n, d) the data, y (n,) labels, s (n,) int8 batch
    indicators (updated in place when ``chain``), U (n_steps, n) uniforms for the chain.
    Before each step k0 + j the observables m, C, mean training loss and accuracy are
    written at index k0 + j. Returns the number of steps done (fewer if w diverged).
    """
    n, d = X.shape
    sq = math.sqrt(d)
    r = np.empty(n)
    g = np.empty(n)
    grad = np.empty(d)
    for j in range(n_steps):
        _matvec(X, w, r, 1.0 / sq)
        tot_loss, tot_acc = 0.0, 0.0
        for mu in range(n):
            val, d1, d2, ok = loss_terms(loss, model, y[mu], r[mu], L)
            tot_loss += val
            tot_acc += ok
            g[mu] = d1 if s[mu] == 1 else 0.0
        k = k0 + j
        m_out[k] = _dot(w, v_star) / d
        C_out[k] = _dot(w, w) / d
        loss_out[k] = tot_loss / n
        acc_out[k] = tot_acc / n
        if not (math.isfinite(C_out[k]) and math.isfinite(tot_loss)):
            return j
        grad[:] = 0.0
        for mu in range(n):
            if g[mu] != 0.0:
                gm = g[mu] / sq
                for i in range(d):
                    grad[i] += gm * X[mu, i]
        for i in range(d):
            w[i] -= eta * (lam * w[i] + grad[i])
        if chain:
            for mu in range(n):
                if s[mu] == 0:
                    if U[j, mu] < p01:
                        s[mu] = 1
                elif U[j, mu] < p10:
                    s[mu] = 0
    return n_steps


@njit_reduce
def observe(w, X, y, v_star, loss, model, L):
    """m, C, mean training loss and accuracy of ``w`` (the record after the last step)."""
    n, d = X.shape
    r = np.empty(n)
    _matvec(X, w, r, 1.0 / math.sqrt(d))
    tot_loss, tot_acc = 0.0, 0.0
    for mu in range(n):
        val, d1, d2, ok = loss_terms(loss, model, y[mu], r[mu], L)
        tot_loss += val
        tot_acc += ok
    return _dot(w, v_star) / d, _dot(w, w) / d, tot_loss / n, tot_acc / n


# ------------------------------------------------------------------ DMFT

@njit_reduce
def effective_process(c, y, h0, theta0, S, Z, Lc, m, lamhat, MR, dt, lam, Delta, loss, model, L,
                      A2, MC_sum, l2_sum, loss_out, acc_out, proj):
    """Run the N effective samples with given kernels (derivation Sec. 7, discrete E6).

    theta_{k+1} = theta_k - dt[(lam + lamhat_k) theta_k + sqrt(Delta) s_k Lambda'_k
                  - dt sum_{i<k} MR[k, i] theta_i - xi_k],
    r_k = c m_k + sqrt(Delta)(m_k h0 + theta_k),  xi_k = sum_{l<=k} Lc[k, l] Z_l.

    Inputs: per sample c, y, h0, theta0 (N,), batch path S (N, n_t) int8, white normals
    Z (N, n_t), Lc the (lower) Cholesky factor of M_C; kernels m, lamhat (n_t,), MR
    (n_t, n_t) (strictly lower part used). Outputs (sums over samples, overwritten):
    A2 = s Lambda'' (N, n_t); MC_sum[k, l] = sum s_k Lambda'_k s_l Lambda'_l (l <= k);
    l2_sum, the loss, the correctness and s Lambda'(c + sqrt(Delta) h0) (proj), each (n_t,).
    Cost O(n_t^2) per sample; no BLAS (threads would fight over the machine's cores).
    """
    N, n_t = S.shape
    sD = math.sqrt(Delta)
    theta = np.empty(n_t)
    a1 = np.empty(n_t)
    MC_sum[:, :] = 0.0
    for arr in (l2_sum, loss_out, acc_out, proj):
        arr[:] = 0.0
    for a in range(N):
        theta[0] = theta0[a]
        for k in range(n_t):
            r = c[a] * m[k] + sD * (m[k] * h0[a] + theta[k])
            val, d1, d2, ok = loss_terms(loss, model, y[a], r, L)
            loss_out[k] += val
            acc_out[k] += ok
            sk = S[a, k]
            a1[k] = sk * d1
            A2[a, k] = sk * d2
            l2_sum[k] += sk * d2
            proj[k] += sk * d1 * (c[a] + sD * h0[a])
            if a1[k] != 0.0:
                for l in range(k + 1):
                    MC_sum[k, l] += a1[k] * a1[l]
            if k + 1 < n_t:
                mem = 0.0
                for i in range(k):
                    mem += MR[k, i] * theta[i]
                xi = 0.0
                for l in range(k + 1):
                    xi += Lc[k, l] * Z[a, l]
                theta[k + 1] = theta[k] - dt * ((lam + lamhat[k]) * theta[k] + sD * sk * d1
                                                - dt * mem - xi)


@njit_reduce
def cholesky_shifted(M, eps):
    """Lower Cholesky factor of M + eps max(diag M) 1 (M symmetric PSD, shape (n, n)).

    Row k only uses M[:k+1, :k+1] (causal). Plain loops: no LAPACK threads.
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


@njit_reduce
def response_kernel(A2, lamhat, MR, dt, lam, Delta, out):
    """Sum over samples of A2_k chi_kj A2_j for j < k (derivation E8-E10, discrete).

    chi is the linear response of one sample's theta to a unit force impulse at step j,
    propagated exactly through the linearised process:
    chi_{j+1,j} = 1, chi_{k+1,j} = chi_kj [1 - dt(lam + lamhat_k + Delta A2_k)]
                                   + dt^2 sum_{i=j+1}^{k-1} MR[k, i] chi_ij.
    Only columns with A2_j != 0 (sample in the batch) contribute. ``out`` (n_t, n_t) is
    overwritten; M_R = alpha Delta^2 out / N. Cost O(n_t^3) per sample, memory O(n_t).
    """
    N, n_t = A2.shape
    out[:, :] = 0.0
    chi = np.zeros(n_t)
    for a in range(N):
        for j in range(n_t - 1):
            aj = A2[a, j]
            if aj == 0.0:
                continue
            chi[j + 1] = 1.0
            for k in range(j + 1, n_t):
                out[k, j] += A2[a, k] * chi[k] * aj
                if k + 1 < n_t:
                    mem = 0.0
                    for i in range(j + 1, k):
                        mem += MR[k, i] * chi[i]
                    chi[k + 1] = chi[k] * (1.0 - dt * (lam + lamhat[k] + Delta * A2[a, k])) \
                        + dt * dt * mem


@njit_reduce
def bulk_response(lamhat, MR, dt, lam):
    """Bulk response R (strictly lower, (n_t, n_t)) and initial-condition propagator P.

    Derivation E11 / Sec. 7: R_{j+1,j} = 1, R_{k+1,j} = R_kj [1 - dt(lam + lamhat_k)]
    + dt^2 sum_{i=j+1}^{k-1} MR[k, i] R_ij; P_0 = 1, same recursion with i from 0.
    """
    n_t = lamhat.shape[0]
    R = np.zeros((n_t, n_t))
    P = np.zeros(n_t)
    P[0] = 1.0
    for k in range(n_t - 1):
        mem = 0.0
        for i in range(k):
            mem += MR[k, i] * P[i]
        P[k + 1] = P[k] * (1.0 - dt * (lam + lamhat[k])) + dt * dt * mem
        for j in range(k + 1):
            if j == k:
                R[k + 1, j] = 1.0
            else:
                mem = 0.0
                for i in range(j + 1, k):
                    mem += MR[k, i] * R[i, j]
                R[k + 1, j] = R[k, j] * (1.0 - dt * (lam + lamhat[k])) + dt * dt * mem
    return R, P


@njit_reduce
def sandwich(R, M):
    """R M R^T for square matrices (loops, no BLAS threads); O(n^3)."""
    n = R.shape[0]
    T = np.zeros((n, n))
    for i in range(n):
        for k in range(n):
            rik = R[i, k]
            if rik != 0.0:
                for j in range(n):
                    T[i, j] += rik * M[k, j]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc += T[i, k] * R[j, k]
            out[i, j] = acc
    return out
