"""Numba kernels of the dmft package: arithmetic only (no checks, no RNG state).

Simulation: :func:`batch_chain`, :func:`sgd_steps`. DMFT: :func:`iteration` (effective
samples drawn, integrated step by step and reduced chunk by chunk; for b = 1),
:func:`iteration_closed` (each sample in closed form through the linear part of the
process, :func:`causal_operators`, evaluated at its in-batch steps only; for b < 1),
:func:`bulk_response`.
"""

import math

import numba
import numpy as np

from numba import prange

from .._jit import njit, njit_reduce
from .._linalg import cholesky_row, cholesky_shifted  # noqa: F401  (solve uses the second)
from ._rng import _GAMMA, _MASK8, _ONE, _S8, ZIG_X, _mix, _to_unit, normal, uniform
from .model import (TEACHER, THREE_CLUSTER, TWO_CLUSTER, is_correct, loss_derivatives,
                    loss_terms)


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
def sgd_steps(w, X, y, v_star, S, n_steps, eta, lam, loss, model, L,
              m_out, C_out, loss_out, acc_out, k0, chain):
    """``n_steps`` steps of (persistent) SGD on the fixed training set (derivation E1).

    w (d,) is updated in place; X (n, d) the data, y (n,) labels; S (n_steps, n) int8 the
    batch indicators of each step (a path of :func:`batch_chain`), or, if not ``chain``
    (full batch), one row of ones used at every step. Before each step k0 + j the
    observables m, C, mean training loss and accuracy are written at index k0 + j.
    Returns the number of steps done (fewer if w diverged).
    """
    n, d = X.shape
    sq = math.sqrt(d)
    r = np.empty(n)
    g = np.empty(n)
    grad = np.empty(d)
    for j in range(n_steps):
        _matvec(X, w, r, 1.0 / sq)
        tot_loss, tot_acc = 0.0, 0.0
        row = j if chain else 0
        for mu in range(n):
            val, d1, d2, ok = loss_terms(loss, model, y[mu], r[mu], L)
            tot_loss += val
            tot_acc += ok
            g[mu] = d1 if S[row, mu] == 1 else 0.0
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
def draw_samples(keys, a0, nc, model, rho, Delta, R0, b, p01, p10, c, y, h0, theta0, S, Z):
    """Effective samples a0 .. a0+nc-1 from the counter-based generator (:mod:`._rng`).

    keys (3,) uint64: data, batch chain, noise. Writes c, y, h0, theta0 [:nc] (cluster,
    label, h0 ~ N(0, 1), theta(0) ~ N(0, R0)), the batch path S[:, :nc] (int8, time-major:
    S[0] ~ Bernoulli(b), then one move of the chain E3 per step) and white normals
    Z[:, :nc]. Sample a's numbers depend only on (keys, a, step).
    """
    n_t = S.shape[0]
    sD, sR = math.sqrt(Delta), math.sqrt(R0)
    for q in range(nc):
        base = np.uint64(a0 + q) << np.uint64(32)
        u = uniform(keys[0], base)
        if model == TWO_CLUSTER:
            cq = 1.0 if u < rho else -1.0
        elif model == THREE_CLUSTER:
            cq = 1.0 if u < 0.5 * rho else (-1.0 if u < rho else 0.0)
        else:
            cq = 0.0
        h = normal(keys[0], base + np.uint64(1))
        c[q], h0[q] = cq, h
        theta0[q] = sR * normal(keys[0], base + np.uint64(2))
        if model == TEACHER:
            y[q] = sD * h
        elif model == TWO_CLUSTER:
            y[q] = cq
        else:
            y[q] = 1.0 if cq != 0.0 else -1.0
    # time-major: each row of S and Z written contiguously
    for q in range(nc):
        base = np.uint64(a0 + q) << np.uint64(32)
        S[0, q] = (1 if uniform(keys[1], base) < b else 0) if b < 1.0 else 1
        Z[0, q] = normal(keys[2], base)
    key_s, key = keys[1], keys[2]  # hoisted: the row loops below then vectorise
    for k in range(1, n_t):
        kk = np.uint64(k)
        if b < 1.0:
            for q in range(nc):
                u = uniform(key_s, (np.uint64(a0 + q) << np.uint64(32)) + kk)
                s = S[k - 1, q]
                if s == 0:
                    if u < p01:
                        s = 1
                elif u < p10:
                    s = 0
                S[k, q] = s
        else:
            for q in range(nc):
                S[k, q] = 1
        # the ziggurat's fast path for the whole row (one draw, accepted when the abscissa
        # falls inside its layer's rectangle, ~98.5%: a loop that vectorises), rejections
        # marked NaN (a normal never is), then normal() itself for those: it recomputes the
        # same draw and takes the slow path, so Z[k, q] = normal(keys[2], index) exactly
        for q in range(nc):
            z = _mix(key + ((np.uint64(a0 + q) << np.uint64(32)) + kk + _ONE) * _GAMMA)
            i = int(z & _MASK8)
            x = _to_unit(z) * ZIG_X[i]
            sign = 1.0 if (z >> _S8) & _ONE else -1.0
            Z[k, q] = sign * x if x < ZIG_X[i + 1] else np.nan
        for q in range(nc):
            if Z[k, q] != Z[k, q]:
                Z[k, q] = normal(key, (np.uint64(a0 + q) << np.uint64(32)) + kk)


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


@njit_reduce
def _accumulate(dst, drow, X, w, scale, i_lo, i_hi, n):
    """dst[drow, :n] += scale sum_{i_lo <= i < i_hi} w[i] X[i, :n] (four rows at a time)."""
    i = i_lo
    while i + 4 <= i_hi:
        w0, w1, w2, w3 = scale * w[i], scale * w[i + 1], scale * w[i + 2], scale * w[i + 3]
        for q in range(n):
            dst[drow, q] += w0 * X[i, q] + w1 * X[i + 1, q] + w2 * X[i + 2, q] + w3 * X[i + 3, q]
        i += 4
    while i < i_hi:
        wi = scale * w[i]
        for q in range(n):
            dst[drow, q] += wi * X[i, q]
        i += 1


@njit_reduce
def _accumulate4(dst, o0, W, w0, scale, X, i_lo, i_hi, n):
    """dst[o0 + m, :n] += scale sum_{i_lo <= i < i_hi} W[w0 + m, i] X[i, :n], m = 0..3.

    Four output rows against four input rows at a time: each loaded element of X serves
    four outputs (register blocking, as in a matrix product), which halves the memory
    traffic per multiply-add of four separate :func:`_accumulate` calls.
    """
    i = i_lo
    while i + 4 <= i_hi:
        a0, a1, a2, a3 = (scale * W[w0, i], scale * W[w0, i + 1], scale * W[w0, i + 2],
                          scale * W[w0, i + 3])
        b0, b1, b2, b3 = (scale * W[w0 + 1, i], scale * W[w0 + 1, i + 1], scale * W[w0 + 1, i + 2],
                          scale * W[w0 + 1, i + 3])
        c0, c1, c2, c3 = (scale * W[w0 + 2, i], scale * W[w0 + 2, i + 1], scale * W[w0 + 2, i + 2],
                          scale * W[w0 + 2, i + 3])
        d0, d1, d2, d3 = (scale * W[w0 + 3, i], scale * W[w0 + 3, i + 1], scale * W[w0 + 3, i + 2],
                          scale * W[w0 + 3, i + 3])
        for q in range(n):
            x0, x1, x2, x3 = X[i, q], X[i + 1, q], X[i + 2, q], X[i + 3, q]
            dst[o0, q] += a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3
            dst[o0 + 1, q] += b0 * x0 + b1 * x1 + b2 * x2 + b3 * x3
            dst[o0 + 2, q] += c0 * x0 + c1 * x1 + c2 * x2 + c3 * x3
            dst[o0 + 3, q] += d0 * x0 + d1 * x1 + d2 * x2 + d3 * x3
        i += 4
    while i < i_hi:
        a0, b0, c0, d0 = (scale * W[w0, i], scale * W[w0 + 1, i], scale * W[w0 + 2, i],
                          scale * W[w0 + 3, i])
        for q in range(n):
            x0 = X[i, q]
            dst[o0, q] += a0 * x0
            dst[o0 + 1, q] += b0 * x0
            dst[o0 + 2, q] += c0 * x0
            dst[o0 + 3, q] += d0 * x0
        i += 1


@njit_reduce
def _causal_bulk(dst, r0, nb, W, wshift, scale, X, i_lo, i_hi, n):
    """dst[r, :n] = scale sum_{i_lo <= i < i_hi} W[r + wshift, i] X[i, :n] for the nb <= 4
    rows r = r0 .. r0+nb-1 (the part of a causal sum that all rows of a block share)."""
    for r in range(r0, r0 + nb):
        for q in range(n):
            dst[r, q] = 0.0
    if nb == 4:
        _accumulate4(dst, r0, W, r0 + wshift, scale, X, i_lo, i_hi, n)
    else:
        for r in range(r0, r0 + nb):
            _accumulate(dst, r, X, W[r + wshift], scale, i_lo, i_hi, n)


@njit_reduce
def _lower_matmul(Lc, Z, XI, nc):
    """XI[:, :nc] = Lc Z[:, :nc] for lower-triangular Lc, in blocks of four rows."""
    n_t = Lc.shape[0]
    for r0 in range(0, n_t, 4):
        nb = min(4, n_t - r0)
        _causal_bulk(XI, r0, nb, Lc, 0, 1.0, Z, 0, r0 + 1, nc)
        for r in range(r0 + 1, r0 + nb):
            _accumulate(XI, r, Z, Lc[r], 1.0, r0 + 1, r + 1, nc)


@njit_reduce
def _pointwise(k, nc, c, y, h0, theta, S, m, sD, loss, model, L, want_loss, A1, A2, l2_sum,
               loss_sum, acc_sum, proj, r2_sum):
    """Lambda', Lambda'' of the chunk's samples at step k, and the sums over samples."""
    mk = m[k]
    for q in range(nc):
        r = c[q] * mk + sD * (mk * h0[q] + theta[k, q])
        r2_sum[k] += r * r
        if want_loss:
            val, d1, d2, ok = loss_terms(loss, model, y[q], r, L)
            loss_sum[k] += val
        else:
            ok = is_correct(model, y[q], r, L)
            d1, d2 = 0.0, 0.0
            if S[k, q] != 0:
                d1, d2 = loss_derivatives(loss, model, y[q], r, L)
        acc_sum[k] += ok
        if S[k, q] != 0:
            A1[k, q], A2[k, q] = d1, d2
            l2_sum[k] += d2
            proj[k] += d1 * (c[q] + sD * h0[q])
        else:
            A1[k, q], A2[k, q] = 0.0, 0.0


@njit_reduce
def _process_chunk(nc, c, y, h0, theta, S, XI, m, lamhat, MR, dt, lam, Delta, loss, model, L,
                   want_loss, A1, A2, l2_sum, loss_sum, acc_sum, proj, r2_sum):
    """Integrate the chunk's effective samples (time-major arrays, derivation E6, Sec. 7).

    theta_{k+1} = (1 - dt(lam + lamhat_k)) theta_k - dt sqrt(Delta) s_k Lambda'_k
                  + dt^2 sum_{i<k} MR[k, i] theta_i + dt xi_k,
    r_k = c m_k + sqrt(Delta)(m_k h0 + theta_k); theta[0] holds theta(0) on entry.
    A1 = s Lambda', A2 = s Lambda'' are written; the sums over samples (Lambda'' and
    Lambda' (c + sqrt(Delta) h0) in the batch, correctness, r^2 to detect divergence, and
    the loss value if ``want_loss``) are accumulated. Lambda', Lambda'' are evaluated only
    for samples in the batch: the others contribute nothing to the kernels.
    Rows are advanced in blocks of four: the memory terms over the rows before a block
    are added for the whole block at once (:func:`_causal_bulk`), the rest row by row.
    """
    n_t = S.shape[0]
    sD = math.sqrt(Delta)
    _pointwise(0, nc, c, y, h0, theta, S, m, sD, loss, model, L, want_loss, A1, A2, l2_sum,
               loss_sum, acc_sum, proj, r2_sum)
    for r0 in range(1, n_t, 4):
        nb = min(4, n_t - r0)
        # rows r = k + 1 of the block: memory over i <= r0 - 2 (final rows) for all of them
        _causal_bulk(theta, r0, nb, MR, -1, dt * dt, theta, 0, max(r0 - 1, 0), nc)
        for r in range(r0, r0 + nb):
            k = r - 1
            _accumulate(theta, r, theta, MR[k], dt * dt, max(r0 - 1, 0), k, nc)
            f = 1.0 - dt * (lam + lamhat[k])
            for q in range(nc):
                theta[r, q] += f * theta[k, q] - dt * sD * A1[k, q] + dt * XI[k, q]
            _pointwise(r, nc, c, y, h0, theta, S, m, sD, loss, model, L, want_loss, A1, A2,
                       l2_sum, loss_sum, acc_sum, proj, r2_sum)


@njit_reduce
def _outer_lower(A1, nc, out):
    """out[k, l] += sum_q A1[k, q] A1[l, q] for l <= k (four l at a time)."""
    n_t = A1.shape[0]
    for k in range(n_t):
        l = 0
        while l + 4 <= k + 1:
            s0 = s1 = s2 = s3 = 0.0
            for q in range(nc):
                x = A1[k, q]
                s0 += x * A1[l, q]
                s1 += x * A1[l + 1, q]
                s2 += x * A1[l + 2, q]
                s3 += x * A1[l + 3, q]
            out[k, l] += s0
            out[k, l + 1] += s1
            out[k, l + 2] += s2
            out[k, l + 3] += s3
            l += 4
        while l <= k:
            s0 = 0.0
            for q in range(nc):
                s0 += A1[k, q] * A1[l, q]
            out[k, l] += s0
            l += 1


@njit_reduce
def _response_impulse(j, A2, na, lamhat, MR, dt, lam, Delta, chi, G, idx, aj, out):
    """out[k, j] += sum over the first ``na`` samples of A2_k chi_kj A2_j for k > j (E8-E10).

    chi is the linear response of a sample's theta to a unit force impulse at step j,
    propagated exactly through the linearised process:
    chi_{j+1,j} = 1, chi_{k+1,j} = chi_kj [1 - dt(lam + lamhat_k + Delta A2_k)]
                                   + dt^2 sum_{i=j+1}^{k-1} MR[k, i] chi_ij.
    Only the samples in the batch at j (A2_j != 0) are propagated, together (gathered
    into the columns of chi and G = their A2), so the inner loops run over samples; rows
    advance in blocks of four as in :func:`_process_chunk`. Writes column j of ``out``
    only, so different j can run at the same time (with their own chi, G, idx, aj).
    """
    n_t = A2.shape[0]
    cnt = 0
    for q in range(na):
        if A2[j, q] != 0.0:
            idx[cnt] = q
            aj[cnt] = A2[j, q]
            cnt += 1
    if cnt == 0:
        return
    for k in range(j + 1, n_t):
        for p in range(cnt):
            G[k, p] = A2[k, idx[p]]
    acc = 0.0
    for p in range(cnt):
        chi[j + 1, p] = 1.0
        acc += G[j + 1, p] * aj[p]
    out[j + 1, j] += acc
    for r0 in range(j + 2, n_t, 4):
        nb = min(4, n_t - r0)
        _causal_bulk(chi, r0, nb, MR, -1, dt * dt, chi, j + 1, r0 - 1, cnt)
        for r in range(r0, r0 + nb):
            k = r - 1
            _accumulate(chi, r, chi, MR[k], dt * dt, r0 - 1, k, cnt)
            f = 1.0 - dt * (lam + lamhat[k])
            acc = 0.0
            for p in range(cnt):
                chi[r, p] += chi[k, p] * (f - dt * Delta * G[k, p])
                acc += G[r, p] * chi[r, p] * aj[p]
            out[r, j] += acc


def workspace(n_t, chunk, resp_chunk, n_resp=None, groups=None):
    """Buffers for :func:`iteration`, in a fixed number of groups (leading axis).

    Per group: one chunk of effective samples and its partial sums (O(n_t^2)), and the
    buffers of one impulse response (chi, G, idx, aj); shared: one batch of resp_chunk
    response samples' A2 paths, and the A2 paths of the first ``n_resp`` samples
    (default ``resp_chunk``), handed from the process to the responses.
    O(groups (n_t^2 + (chunk + resp_chunk) n_t) + n_resp n_t) in all; ``groups``
    defaults to :data:`GROUPS`.
    """
    G = GROUPS if groups is None else groups
    n_resp = resp_chunk if n_resp is None else n_resp
    vec = tuple(np.empty((G, chunk)) for _ in range(4))  # c, y, h0, theta(0)
    mats = tuple(np.empty((G, n_t, chunk)) for _ in range(5))  # Z, xi, theta, A1, A2
    return (*vec, np.empty((G, n_t, chunk), np.int8), *mats,
            np.empty((n_t, resp_chunk)),  # 10: A2 of one batch of response samples
            np.empty((G, n_t, resp_chunk)), np.empty((G, n_t, resp_chunk)),  # 11, 12: chi, G
            np.empty((G, resp_chunk)), np.empty((G, resp_chunk), np.int64),  # 13, 14: aj, idx
            np.empty((G, n_t, n_t)), np.empty((G, 5, n_t)),  # 15, 16: partial sums
            np.empty((n_t, max(n_resp, 1))))  # 17: A2 paths of the response samples


# Samples are split into this many groups, each reduced into its own partial sums, which
# are then added in group order: the result is the same whether the groups run one after
# the other or on up to GROUPS threads (bit for bit).
GROUPS = 4


@njit_reduce
def _group_process(g, G, keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10,
                   lam, dt, Lc, m, lamhat, MR, want_loss):
    """Phase 1 for group g: chunks g, g + G, g + 2G, ... of the N samples (drawn,
    integrated, reduced into the group's partial sums); the A2 paths of samples < n_resp
    are stored in the shared buffer (each column written by one group only)."""
    (c_, y_, h0_, th0_, S_, Z_, XI_, theta_, A1_, A2_, RA2_, chi_, G_, aj_, idx_, MCg_, sums_,
     A2R) = work
    c, y, h0, th0, S, Z, XI, theta, A1, A2 = (c_[g], y_[g], h0_[g], th0_[g], S_[g], Z_[g], XI_[g],
                                             theta_[g], A1_[g], A2_[g])
    MC_sum, sums = MCg_[g], sums_[g]
    n_t = m.shape[0]
    MC_sum[:, :] = 0.0
    sums[:, :] = 0.0
    l2_sum, loss_sum, acc_sum, proj, r2_sum = sums[0], sums[1], sums[2], sums[3], sums[4]
    chunk = c.shape[0]
    for a0 in range(g * chunk, N, G * chunk):
        nc = min(chunk, N - a0)
        draw_samples(keys, a0, nc, model, rho, Delta, R0, b, p01, p10, c, y, h0, th0, S, Z)
        for q in range(nc):
            theta[0, q] = th0[q]
        _lower_matmul(Lc, Z, XI, nc)
        _process_chunk(nc, c, y, h0, theta, S, XI, m, lamhat, MR, dt, lam, Delta, loss, model,
                       L, want_loss, A1, A2, l2_sum, loss_sum, acc_sum, proj, r2_sum)
        _outer_lower(A1, nc, MC_sum)
        na = min(nc, n_resp - a0)
        for k in range(n_t):
            for q in range(na):
                A2R[k, a0 + q] = A2[k, q]


@njit_reduce
def _responses(g, G, RA2, na, work, lamhat, MR, dt, lam, Delta, resp):
    """Impulse times j = g, g + G, g + 2G, ... of one batch of response samples, with
    group g's buffers (columns of ``resp`` are disjoint between groups)."""
    chi, Gm, aj, idx = work[11][g], work[12][g], work[13][g], work[14][g]
    for j in range(g, RA2.shape[0] - 1, G):
        _response_impulse(j, RA2, na, lamhat, MR, dt, lam, Delta, chi, Gm, idx, aj, resp)


@njit_reduce
def _reduce_groups(work, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum):
    """Outputs = sum of the groups' partial sums, added in group order (deterministic)."""
    MCg, sums = work[15], work[16]
    MC_sum[:, :] = MCg[0]
    l2_sum[:] = sums[0, 0]
    loss_sum[:] = sums[0, 1]
    acc_sum[:] = sums[0, 2]
    proj[:] = sums[0, 3]
    r2_sum[:] = sums[0, 4]
    for g in range(1, MCg.shape[0]):
        MC_sum += MCg[g]
        l2_sum += sums[g, 0]
        loss_sum += sums[g, 1]
        acc_sum += sums[g, 2]
        proj += sums[g, 3]
        r2_sum += sums[g, 4]


@njit_reduce
def _response_batch(s0, n_resp, work):
    """Copy the A2 paths of response samples s0 .. into the batch buffer; returns their number."""
    RA2, A2R = work[10], work[17]
    n_t, rc = RA2.shape
    na = min(rc, n_resp - s0)
    for k in range(n_t):
        for p in range(na):
            RA2[k, p] = A2R[k, s0 + p]
    return na


def _iteration(keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, lam, dt,
               Lc, m, lamhat, MR, want_loss, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum, resp):
    """One fixed-point iteration of the DMFT: all effective samples with given kernels.

    The N samples are drawn (:func:`draw_samples`), integrated (:func:`_process_chunk`)
    and reduced chunk by chunk, so no per-sample path is ever stored except the A2 paths
    of the n_resp response samples: memory O(GROUPS (n_t^2 + chunk n_t) + n_resp n_t).
    Lc is the lower Cholesky factor of M_C (noise xi = Lc z);
    m, lamhat (n_t,) and MR (n_t, n_t) the current kernels. Outputs (overwritten, sums
    over samples): MC_sum[k, l] = sum s_k Lambda'_k s_l Lambda'_l (l <= k); l2_sum,
    correctness, proj = s Lambda'(c + sqrt(Delta) h0), r^2, and the loss (only if
    ``want_loss``, else left at 0), each (n_t,); resp[k, j] = sum A2_k chi_kj A2_j over
    the first n_resp samples (:func:`_response_impulse`, run on batches of resp_chunk
    samples: longer inner loops than one chunk gives). ``work``: the buffers from
    :func:`workspace` (allocated by the caller, so that memory tools see them).
    Cost O(n_t^2 N + b n_t^3 n_resp/6).

    Work is split into the fixed groups of :func:`workspace`: group g takes the chunks
    g, g + G, ... of the process, with its own partial sums (added afterwards in group
    order), and the impulse times j = g, g + G, ... of each response batch (disjoint
    columns of ``resp``). The group loops are ``prange``: compiled serially
    (:data:`iteration`) they run one after the other, compiled with ``parallel=True``
    (:data:`iteration_threads`) on numba's threads; the same partial sums are added in the
    same order and the same response columns written, so both give the same bits.
    """
    G = work[0].shape[0]
    if work[17].shape[1] < n_resp:
        raise ValueError("workspace too small: its n_resp is below the iteration's n_resp")
    for g in prange(G):
        _group_process(g, G, keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10,
                       lam, dt, Lc, m, lamhat, MR, want_loss)
    _reduce_groups(work, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum)
    resp[:, :] = 0.0
    for s0 in range(0, n_resp, work[10].shape[1]):
        na = _response_batch(s0, n_resp, work)
        for g in prange(G):
            _responses(g, G, work[10], na, work, lamhat, MR, dt, lam, Delta, resp)


# One body, compiled twice: prange runs as range when not compiled with parallel=True.
iteration = njit(_iteration)
# The threaded build is not cached: numba's cache index is keyed by the Python function
# and its signature, not by the parallel flag, so a cached copy of it would share the
# serial build's entries. It is compiled on first use only (solve's default is serial).
iteration_threads = numba.njit(_iteration, parallel=True, error_model="numpy")


# ------------------------------------------------------------------ DMFT in closed form (b < 1)
# The effective process is linear in theta but for the force s Lambda', so theta at a
# sample's in-batch steps (the only ones at which it enters the kernels) follows from the
# bulk response R and the force at the earlier in-batch steps: for b < 1 this skips the
# out-of-batch steps that the step-by-step integration above has to run through. At b = 1
# every step is in the batch and the step-by-step kernels are faster (:func:`tsdyn.dmft.solve`
# dispatches on b).

@njit_reduce
def causal_operators(lamhat, MR, Lc, dt, lam, R, P, Q):
    """The linear part of the effective process, once per iteration (O(n_t^3)).

    Writes the bulk response R (strictly lower, the recursion of :func:`bulk_response`,
    advanced a row at a time), the propagator P of theta(0), and Q = dt R Lc, the
    response of theta to the white normals z of the noise xi = Lc z (Q strictly lower).
    The effective process is linear in theta with these coefficients: with the forcing
    F_j = dt xi_j - dt sqrt(Delta) s_j Lambda'_j,
        theta_k = P_k theta(0) + sum_{j<k} R_kj F_j
                = P_k theta(0) + (Q z)_k - dt sqrt(Delta) sum_{j<k} R_kj s_j Lambda'_j,
    the solution of theta_{k+1} = (1 - dt(lam + lamhat_k)) theta_k + dt^2 sum_{i<k}
    MR[k, i] theta_i + F_k (derivation E6, Sec. 7) by superposition.
    """
    n_t = lamhat.shape[0]
    for k in range(n_t):
        for j in range(n_t):
            R[k, j] = 0.0
            Q[k, j] = 0.0
    P[0] = 1.0
    for k in range(n_t - 1):
        f = 1.0 - dt * (lam + lamhat[k])
        mem = 0.0
        for i in range(k):
            mem += MR[k, i] * P[i]
        P[k + 1] = f * P[k] + dt * dt * mem
        # R[k+1, j] = f R[k, j] + dt^2 sum_i MR[k, i] R[i, j] (R[i, j] = 0 for i <= j)
        for j in range(k):
            R[k + 1, j] = f * R[k, j]
        for i in range(1, k):
            w = dt * dt * MR[k, i]
            for j in range(i):
                R[k + 1, j] += w * R[i, j]
        R[k + 1, k] = 1.0
    for k in range(1, n_t):
        for j in range(k):
            w = dt * R[k, j]
            if w != 0.0:
                for l in range(j + 1):
                    Q[k, l] += w * Lc[j, l]


@njit_reduce
def _sample_path(full, s, z, cq, yq, h0q, th0q, m, R, P, Q, sD, dt, loss, model, L, E, U, B, F,
                 a2, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum):
    """One effective sample through the process, in closed form (:func:`causal_operators`).

    s (n_t,) its batch path, z (n_t,) its white normals. r_k = c m_k + sqrt(Delta)(m_k h0
    + theta_k) with theta_k = P_k theta(0) + (Q z)_k - dt sqrt(Delta) sum_p R[k, B_p] F_p,
    the force F_p = Lambda' at the sample's earlier in-batch steps B_p (zero out of the
    batch), is evaluated at the in-batch steps only, the only ones at which it enters the
    kernels, unless ``full``: then r, the loss and the correctness are computed at every
    step (the final pass). In three passes: the force-free part U of r at the steps
    evaluated (E: independent rows, the bulk of the work); the forces, a chain from step
    to step but with sums over the nb in-batch steps only (B, F, a2 compressed), summing
    r^2 (divergence detection) at the steps evaluated and, at in-batch k, Lambda''_k and
    Lambda'_k (c + sqrt(Delta) h0); then M_C[k, B_p] += Lambda'_k F_p (p up to k itself).
    Splitting the passes keeps the latency of the chain (the loss derivatives) out of the
    way of the independent sums. Returns nb.
    """
    n_t = m.shape[0]
    ne = 0
    for k in range(n_t):  # the steps to evaluate, without a branch per step
        E[ne] = k
        ne += 1 if full else s[k]
    for e in range(ne):
        k = E[e]
        acc = 0.0
        for l in range(k):
            acc += Q[k, l] * z[l]
        mk = m[k]
        U[e] = cq * mk + sD * (mk * h0q + P[k] * th0q + acc)
    x0 = cq + sD * h0q
    gs = dt * sD * sD  # r's force term: sqrt(Delta) times theta's dt sqrt(Delta) sum R F
    nb = 0
    for e in range(ne):
        k = E[e]
        accf = 0.0
        for p in range(nb):
            accf += R[k, B[p]] * F[p]
        r = U[e] - gs * accf
        r2_sum[k] += r * r
        if full:
            val, d1, d2, ok = loss_terms(loss, model, yq, r, L)
            loss_sum[k] += val
            acc_sum[k] += ok
        else:
            d1, d2 = loss_derivatives(loss, model, yq, r, L)
        if s[k] != 0:
            B[nb], F[nb], a2[nb] = k, d1, d2
            nb += 1
            l2_sum[k] += d2
            proj[k] += d1 * x0
    for a in range(nb):
        k, d1 = B[a], F[a]
        for p in range(a + 1):
            MC_sum[k, B[p]] += d1 * F[p]
    return nb


@njit_reduce
def _sample_response(nb, B, a2, R, dt, Delta, X, out):
    """out[k, j] += Lambda''_k chi_kj Lambda''_j over the sample's in-batch steps j < k (E8-E10).

    chi, the linear response of theta to a force impulse at step j, obeys the bulk
    recursion of R plus the sample's own term -dt Delta s_k Lambda''_k chi_kj, so by
    superposition (a Dyson equation) chi_kj = R_kj + sum_{j<l<k} R_kl g_l chi_lj with
    g_l = -dt Delta s_l Lambda''_l, which vanishes out of the batch: restricted to the
    nb in-batch steps it is one forward substitution, X[a, b] = chi_{B_a, B_b},
        X[a, :a] = R[B_a, B[:a]] + sum_{b<c<a} R[B_a, B_c] g_c X[c, :c],
    O(nb^3/6) instead of propagating chi through every step, O(nb n_t^2/6).
    X is an (n_t, n_t) buffer.
    """
    for a in range(1, nb):
        ka = B[a]
        for b in range(a):
            X[a, b] = R[ka, B[b]]
        for c in range(1, a):
            w = -dt * Delta * a2[c] * R[ka, B[c]]
            for b in range(c):
                X[a, b] += w * X[c, b]
        ga = a2[a]
        for b in range(a):
            out[ka, B[b]] += ga * X[a, b] * a2[b]


def workspace_closed(n_t, chunk, groups=None):
    """Buffers for :func:`iteration_closed`, in a fixed number of groups (leading axis).

    Per group: one chunk of effective samples (c, y, h0, theta(0); batch paths S and
    normals Z, time-major as drawn, and sample-major copies ST, ZT), one sample's
    evaluated steps and force-free r there, in-batch steps, force and Lambda''
    (E, U, B, F, a2), the response's forward substitution X (n_t, n_t), and
    the group's partial sums (M_C, the response, five (n_t,) sums); shared: R, Q
    (n_t, n_t) and P. O(groups (n_t^2 + chunk n_t)) in all; ``groups`` defaults to
    :data:`GROUPS`.
    """
    G = GROUPS if groups is None else groups
    vec = tuple(np.empty((G, chunk)) for _ in range(4))  # 0-3: c, y, h0, theta(0)
    # S, Z: rows padded by 8 entries, so that a column (read in :func:`_transpose_chunk`)
    # does not fall into a handful of cache sets (a row of 256 doubles is 2 KiB: a power of two)
    return (*vec, np.empty((G, n_t, chunk + 8), np.int8), np.empty((G, n_t, chunk + 8)),  # 4, 5
            np.empty((G, chunk, n_t), np.int8), np.empty((G, chunk, n_t)),  # 6, 7: ST, ZT
            np.empty((G, n_t), np.int64), np.empty((G, n_t)), np.empty((G, n_t)),  # 8-10: B, F, a2
            np.empty((G, n_t, n_t)),  # 11: X
            np.empty((G, n_t, n_t)), np.empty((G, n_t, n_t)), np.empty((G, 5, n_t)),  # 12-14: sums
            np.empty((n_t, n_t)), np.empty((n_t, n_t)), np.empty(n_t),  # 15-17: R, Q, P
            np.empty((G, n_t), np.int64), np.empty((G, n_t)))  # 18, 19: E, U


@njit_reduce
def _transpose_chunk(S, Z, ST, ZT, nc):
    """ST[q, k] = S[k, q], ZT[q, k] = Z[k, q] for q < nc, eight samples at a time (one
    cache line of each row of Z read once), so that each sample's path is then read
    contiguously: reading it column by column from S, Z costs a cache miss per step, the
    rows having been evicted by the operators R, Q streamed through for the samples before."""
    n_t = S.shape[0]
    for q0 in range(0, nc, 8):
        q1 = min(q0 + 8, nc)
        for k in range(n_t):
            for q in range(q0, q1):
                ST[q, k] = S[k, q]
                ZT[q, k] = Z[k, q]


@njit_reduce
def _group_closed(g, G, keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, dt,
                  m, full):
    """Group g: chunks g, g + G, g + 2G, ... of the N samples, drawn (:func:`draw_samples`),
    run one by one (:func:`_sample_path`, and :func:`_sample_response` for samples below
    n_resp), reduced into the group's partial sums."""
    c, y, h0, th0, S, Z = work[0][g], work[1][g], work[2][g], work[3][g], work[4][g], work[5][g]
    ST, ZT, B, F, a2, X = work[6][g], work[7][g], work[8][g], work[9][g], work[10][g], work[11][g]
    MC_sum, resp, sums = work[12][g], work[13][g], work[14][g]
    R, Q, P, E, U = work[15], work[16], work[17], work[18][g], work[19][g]
    MC_sum[:, :] = 0.0
    resp[:, :] = 0.0
    sums[:, :] = 0.0
    n_t = m.shape[0]
    sD = math.sqrt(Delta)
    chunk = c.shape[0]
    for a0 in range(g * chunk, N, G * chunk):
        nc = min(chunk, N - a0)
        draw_samples(keys, a0, nc, model, rho, Delta, R0, b, p01, p10, c, y, h0, th0, S, Z)
        _transpose_chunk(S, Z, ST, ZT, nc)
        for q in range(nc):
            nb = _sample_path(full, ST[q], ZT[q], c[q], y[q], h0[q], th0[q], m, R, P, Q, sD, dt,
                              loss, model, L, E, U, B, F, a2, MC_sum, sums[0], sums[1], sums[2],
                              sums[3], sums[4])
            if a0 + q < n_resp:
                _sample_response(nb, B, a2, R, dt, Delta, X, resp)


@njit_reduce
def _reduce_groups_closed(work, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum, resp):
    """Outputs = sum of the groups' partial sums, added in group order (deterministic)."""
    MCg, respg, sums = work[12], work[13], work[14]
    MC_sum[:, :] = MCg[0]
    resp[:, :] = respg[0]
    l2_sum[:] = sums[0, 0]
    loss_sum[:] = sums[0, 1]
    acc_sum[:] = sums[0, 2]
    proj[:] = sums[0, 3]
    r2_sum[:] = sums[0, 4]
    for g in range(1, MCg.shape[0]):
        MC_sum += MCg[g]
        resp += respg[g]
        l2_sum += sums[g, 0]
        loss_sum += sums[g, 1]
        acc_sum += sums[g, 2]
        proj += sums[g, 3]
        r2_sum += sums[g, 4]


def _iteration_closed(keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, lam,
                      dt, Lc, m, lamhat, MR, full, MC_sum, l2_sum, loss_sum, acc_sum, proj,
                      r2_sum, resp):
    """One fixed-point iteration of the DMFT in closed form (for b < 1); the arguments and
    outputs of :func:`iteration`, with two differences in the iterations (``full`` False):
    r^2 is summed over the in-batch samples only and the correctness is left at 0.

    The kernels fix the linear part of the process (:func:`causal_operators`: R, P and
    Q = dt R Lc, Lc the lower Cholesky factor of M_C, noise xi = Lc z); each sample is
    then drawn (:func:`draw_samples`, chunk by chunk) and run in closed form, its theta
    evaluated only at its in-batch steps (:func:`_sample_path`; at every step if
    ``full``), and for the first n_resp samples its response chi restricted to those
    steps (:func:`_sample_response`). No per-sample path is stored: memory
    O(GROUPS (n_t^2 + chunk n_t)), buffers from :func:`workspace_closed`.
    Cost O(n_t^3 + N (b n_t^2/2 + (b n_t)^2) + n_resp (b n_t)^3/6), with b n_t the
    number of in-batch steps of a sample (``full``: O(N n_t^2/2) for the noise), against
    O(n_t^2 N + b n_t^3 n_resp/6) step by step. Groups and threads as in :func:`iteration`
    (same bits for any number of threads).
    """
    G = work[0].shape[0]
    causal_operators(lamhat, MR, Lc, dt, lam, work[15], work[17], work[16])
    for g in prange(G):
        _group_closed(g, G, keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10,
                      dt, m, full)
    _reduce_groups_closed(work, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum, resp)


iteration_closed = njit(_iteration_closed)
iteration_closed_threads = numba.njit(_iteration_closed, parallel=True, error_model="numpy")


# ------------------------------------------------------------------ DMFT marched in time
# The discretised equations are causal: with the common random numbers z, theta_k of every
# sample depends on the kernels at earlier steps only, and the kernels at step k (m, lamhat,
# row k of M_C and of its Cholesky factor, row k of M_R) on the samples up to step k. The
# fixed point of the iteration above can therefore be built in one pass, a step at a time.


def workspace_march(n_t, N, n_resp, full=False):
    """Buffers for :func:`march`: the samples (c, y, h0, theta(0); batch paths S, time-major,
    and white normals Z, sample-major), the forces F (N, n_t), Lambda' at each sample's
    in-batch steps and zero elsewhere; for the response samples their in-batch steps B,
    their count and Lambda'' there; the list of the samples in the batch at the current
    step, the row buffers, the operators R, P, Q. O(N n_t + n_resp n_t + n_t^2). With
    ``full`` (b = 1), the buffers of :func:`_march_responses_full` too."""
    vec = tuple(np.empty(N) for _ in range(4))  # 0-3: c, y, h0, theta(0)
    nr = max(n_resp, 1)
    return (*vec, np.empty((n_t, N), np.int8), np.empty((N, n_t)),  # 4, 5: S, Z
            np.empty((nr, n_t), np.int32), np.empty((N, n_t)),  # 6, 7: B, F
            np.zeros(nr, np.int32),  # 8: number of in-batch steps of each response sample
            np.empty((nr, n_t)),  # 9: Lambda'' of the response samples, compressed
            np.empty(N, np.int64),  # 10: the samples in the batch at step k
            np.empty(n_t), np.empty(n_t), np.empty(n_t),  # 11-13: M_C row, M_R row, u row
            np.zeros((n_t, n_t)), np.zeros(n_t), np.zeros((n_t, n_t)),  # 14-16: R, P, Q
            *((np.empty((n_t, n_resp)), np.empty((n_t, n_resp)), np.empty((4, n_resp)))
              if full else (np.empty((1, 1)),) * 3))  # 17-19: b = 1 responses: A2T, V, U


@njit_reduce
def _draw_all_samples(keys, N, model, rho, Delta, R0, b, p01, p10, c, y, h0, th0, S, Z):
    """Every effective sample, drawn chunk by chunk (:func:`draw_samples`: the same numbers
    as the iteration's), Z stored sample-major."""
    n_t = S.shape[0]
    chunk = 256
    cc, yc, hc, tc = np.empty(chunk), np.empty(chunk), np.empty(chunk), np.empty(chunk)
    Sc, Zc = np.empty((n_t, chunk), np.int8), np.empty((n_t, chunk))
    for a0 in range(0, N, chunk):
        nc = min(chunk, N - a0)
        draw_samples(keys, a0, nc, model, rho, Delta, R0, b, p01, p10, cc, yc, hc, tc, Sc, Zc)
        for q in range(nc):
            c[a0 + q], y[a0 + q], h0[a0 + q], th0[a0 + q] = cc[q], yc[q], hc[q], tc[q]
        for k in range(n_t):
            for q in range(nc):
                S[k, a0 + q] = Sc[k, q]
        for q in range(nc):
            for k in range(n_t):
                Z[a0 + q, k] = Zc[k, q]


@njit_reduce
def _march_samples(k, N, n_resp, work, m, R, P, Q, sD, dt, Delta, loss, model, L, l2_sum, proj,
                   r2_sum):
    """Step k of every sample in the batch at k, in closed form (:func:`_sample_path`):
    r_k from the noise (Q z)_k and the forces at its earlier in-batch steps; F[q, k] =
    Lambda'_k, and for a response sample k and Lambda''_k appended to its lists; the sums
    and M_C's row k (unnormalised).

    F is time-indexed (Lambda' at the in-batch steps, zero elsewhere), so the noise, the
    force and the M_C row are contiguous loops over the earlier steps, and four samples
    share each pass (each load of Q_k, R_k and of the M_C row serves four samples): at
    b = 0.3 faster than gathering each sample's in-batch steps, at b = 1 the same work."""
    c, y, h0, th0, S, Z = work[0], work[1], work[2], work[3], work[4], work[5]
    B, F, nbs, a2c, inb, MCrow = work[6], work[7], work[8], work[9], work[10], work[11]
    mk, Pk = m[k], P[k]
    Qk, Rk = Q[k], R[k]
    gs = dt * Delta
    n_in = 0
    for q in range(N):
        inb[n_in] = q
        n_in += S[k, q] != 0
    nz, fz, d1s = np.zeros(4), np.zeros(4), np.zeros(4)
    for i in range(0, n_in, 4):
        nq = min(4, n_in - i)
        q0, q1, q2, q3 = inb[i], inb[i + min(1, nq - 1)], inb[i + min(2, nq - 1)], inb[i + nq - 1]
        Z0, Z1, Z2, Z3 = Z[q0], Z[q1], Z[q2], Z[q3]  # a short block repeats its last sample
        F0, F1, F2, F3 = F[q0], F[q1], F[q2], F[q3]
        n0 = n1 = n2 = n3 = f0 = f1 = f2 = f3 = 0.0
        for l in range(k):
            ql, rl = Qk[l], Rk[l]
            n0 += ql * Z0[l]
            n1 += ql * Z1[l]
            n2 += ql * Z2[l]
            n3 += ql * Z3[l]
            f0 += rl * F0[l]
            f1 += rl * F1[l]
            f2 += rl * F2[l]
            f3 += rl * F3[l]
        nz[0], nz[1], nz[2], nz[3] = n0, n1, n2, n3
        fz[0], fz[1], fz[2], fz[3] = f0, f1, f2, f3
        d1s[:] = 0.0
        for j in range(nq):
            q = inb[i + j]
            r = c[q] * mk + sD * (mk * h0[q] + Pk * th0[q] + nz[j]) - gs * fz[j]
            r2_sum[k] += r * r
            d1, d2 = loss_derivatives(loss, model, y[q], r, L)
            F[q, k] = d1
            d1s[j] = d1
            l2_sum[k] += d2
            proj[k] += d1 * (c[q] + sD * h0[q])
            if q < n_resp:
                nb = nbs[q]
                B[q, nb], a2c[q, nb] = k, d2
                nbs[q] = nb + 1
        w0, w1, w2, w3 = d1s[0], d1s[1], d1s[2], d1s[3]  # zero weight for a repeated sample
        for p in range(k + 1):
            MCrow[p] += w0 * F0[p] + w1 * F1[p] + w2 * F2[p] + w3 * F3[p]


@njit_reduce
def _march_responses(k, n_resp, work, R, dt, Delta, MRrow):
    """Row k of M_R from the response samples in the batch at k, each by the adjoint of
    its forward substitution (:func:`_sample_response`; as :func:`_march_responses_full`,
    restricted to the sample's in-batch steps B_0 < ... < B_a = k): row a of
    X = (1 - R G)^-1 R is u with v_a = 1 and, downwards, u_c = sum_{c < i <= a} v_i
    R[B_i, B_c], v_c = g_c u_c (g_c = -dt Delta Lambda''_c). Each v_i, once known, adds
    its row of R (gathered at B_c, c < i, all in cache) to u, which then completes u_{i-1}.
    No past rows of X are stored or re-read: the work, a^2/2 per sample, reads R and the
    sample's short lists only. MRrow[B_c] += Lambda''_a u_c Lambda''_c (unnormalised)."""
    S, B, nbs, a2c, u = work[4], work[6], work[8], work[9], work[13]
    gk = -dt * Delta
    for q in range(n_resp):
        if S[k, q] == 0:
            continue
        a = nbs[q] - 1
        if a < 1:
            continue
        Bq, a2 = B[q], a2c[q]
        for c in range(a):
            u[c] = 0.0
        ga = a2[a]
        v = 1.0
        for i in range(a, 0, -1):
            Ri = R[Bq[i]]
            for c in range(i):
                u[c] += v * Ri[Bq[c]]
            uc = u[i - 1]  # complete: every row above it has been added
            MRrow[Bq[i - 1]] += ga * uc * a2[i - 1]
            v = gk * a2[i - 1] * uc


@njit_reduce
def _march_responses_full(k, n_resp, work, R, dt, Delta, MRrow):
    """Row k of M_R when every step is in the batch (b = 1), by the adjoint of the forward
    substitution of :func:`_march_responses`, for all response samples at once.

    Row k of X = (1 - R G)^-1 R (G = diag(g), g_c = -dt Delta Lambda''_c) is v^T R with
    v^T (1 - R G) = e_k^T, i.e. v_k = 1 and, downwards from c = k - 1,
        u_c = sum_{c < i <= k} v_i R[i, c],   X[k, c] = u_c,   v_c = g_c u_c,
    so no sample's past rows of X are stored or re-read: the work, O(k^2/2) per sample
    per step as before, runs over V (n_t, n_resp), shared R and vectors across samples.
    Blocks of four c share each load of V[i] (i above the block), as in :func:`_accumulate4`.
    MRrow[c] += sum_q Lambda''_k X[k, c] Lambda''_c over the response samples.
    """
    a2c, A2T, V, U = work[9], work[17], work[18], work[19]
    for q in range(n_resp):
        A2T[k, q] = a2c[q, k]
        V[k, q] = 1.0
    gk = -dt * Delta
    c_hi = k  # rows c_hi .. k of V are final
    while c_hi > 0:
        c0 = max(c_hi - 4, 0)
        nb = c_hi - c0
        for r in range(nb):
            for q in range(n_resp):
                U[r, q] = 0.0
        # i >= c_hi: every c of the block, four at a time
        for i in range(c_hi, k + 1):
            Vi = V[i]
            if nb == 4:
                w0, w1, w2, w3 = R[i, c0], R[i, c0 + 1], R[i, c0 + 2], R[i, c0 + 3]
                for q in range(n_resp):
                    x = Vi[q]
                    U[0, q] += w0 * x
                    U[1, q] += w1 * x
                    U[2, q] += w2 * x
                    U[3, q] += w3 * x
            else:
                for r in range(nb):
                    w = R[i, c0 + r]
                    for q in range(n_resp):
                        U[r, q] += w * Vi[q]
        # inside the block, downwards
        for r in range(nb - 1, -1, -1):
            c = c0 + r
            for i in range(c + 1, c_hi):
                w = R[i, c]
                Vi = V[i]
                for q in range(n_resp):
                    U[r, q] += w * Vi[q]
            acc = 0.0
            for q in range(n_resp):
                u = U[r, q]
                acc += A2T[k, q] * u * A2T[c, q]
                V[c, q] = gk * A2T[c, q] * u
            MRrow[c] += acc
        c_hi = c0


@njit_reduce
def _next_operators(k, MR, lamhat, Lc, dt, lam, R, P, Q):
    """Rows k + 1 of R, P (the recursion of :func:`bulk_response`, from row k of M_R) and
    row k + 1 of Q = dt R Lc (Lc known up to row k)."""
    f = 1.0 - dt * (lam + lamhat[k])
    mem = 0.0
    for i in range(k):
        mem += MR[k, i] * P[i]
    P[k + 1] = f * P[k] + dt * dt * mem
    Rn = R[k + 1]
    for j in range(k):
        Rn[j] = f * R[k, j]
    for i in range(1, k):
        w = dt * dt * MR[k, i]
        Ri = R[i]
        for j in range(i):
            Rn[j] += w * Ri[j]
    Rn[k] = 1.0
    Qn = Q[k + 1]
    for j in range(k + 1):
        w = dt * Rn[j]
        Lj = Lc[j]
        for l in range(j + 1):
            Qn[l] += w * Lj[l]


@njit_reduce
def march(keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, lam, dt, alpha,
          m0, eps, m, lamhat, MC, Lc, MR, l2_sum, proj, r2_sum):
    """The DMFT solution in one pass over time (the fixed point of :func:`iteration_closed`).

    At step k, with the kernels known up to step k - 1: every sample in the batch at k is
    evaluated in closed form (:func:`_march_samples`); their sums give lamhat_k, mu_k and so
    m_{k+1}, and row k of M_C, whose Cholesky row follows (noise xi = Lc z; the shift of
    :func:`cholesky_shifted`, which is causal); the response samples in the batch at k give
    row k of M_R (:func:`_march_responses`; at b = 1 :func:`_march_responses_full`); then
    rows k + 1 of R, P, Q (:func:`_next_operators`). Writes m, lamhat (n_t,), MC, Lc, MR (n_t, n_t) and the
    unnormalised sums l2_sum, proj, r2_sum. Returns the number of steps completed: n_t,
    or k if a non-finite value appeared at step k (divergence).
    Cost O(n_t^3 + 3 N b n_t^2/2 + n_resp (b n_t)^3/6), about one iteration's.
    """
    n_t = m.shape[0]
    sD = math.sqrt(Delta)
    c, y, h0, th0, S, Z = work[0], work[1], work[2], work[3], work[4], work[5]
    MCrow, MRrow = work[11], work[12]
    R, P, Q = work[14], work[15], work[16]
    if S.shape != (n_t, N) or work[9].shape[0] < n_resp or work[10].shape[0] < N or (
            b >= 1.0 and work[18].shape != (n_t, n_resp)):
        raise ValueError("march: workspace_march was built for another grid (n_t, N, n_resp or b = 1)")
    _draw_all_samples(keys, N, model, rho, Delta, R0, b, p01, p10, c, y, h0, th0, S, Z)
    work[8][:] = 0
    work[7][:, :] = 0.0  # F: Lambda' at the in-batch steps, zero elsewhere
    R[:, :] = 0.0
    Q[:, :] = 0.0
    P[:] = 0.0
    P[0] = 1.0
    MC[:, :] = 0.0
    Lc[:, :] = 0.0
    MR[:, :] = 0.0
    m[0] = m0
    scale = 0.0
    for k in range(n_t):
        MCrow[:k + 1] = 0.0
        MRrow[:k + 1] = 0.0
        l2_sum[k] = proj[k] = r2_sum[k] = 0.0
        _march_samples(k, N, n_resp, work, m, R, P, Q, sD, dt, Delta, loss, model, L, l2_sum,
                       proj, r2_sum)
        if not (math.isfinite(r2_sum[k]) and math.isfinite(proj[k]) and math.isfinite(l2_sum[k])):
            return k
        lamhat[k] = alpha * Delta * l2_sum[k] / N
        if k + 1 < n_t:
            m[k + 1] = m[k] - dt * (lam * m[k] + alpha * proj[k] / N)
        for l in range(k + 1):
            MC[k, l] = MC[l, k] = alpha * Delta * MCrow[l] / N
        scale = max(scale, MC[k, k])  # the shift of cholesky_shifted, causal
        cholesky_row(MC, Lc, k, eps * scale)
        if b < 1.0:
            _march_responses(k, n_resp, work, R, dt, Delta, MRrow)
        else:
            _march_responses_full(k, n_resp, work, R, dt, Delta, MRrow)
        for j in range(k):
            MR[k, j] = alpha * Delta * Delta * MRrow[j] / n_resp
        if k + 1 < n_t:
            _next_operators(k, MR, lamhat, Lc, dt, lam, R, P, Q)
    return n_t
