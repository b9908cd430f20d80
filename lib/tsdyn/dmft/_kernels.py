"""Numba kernels of the dmft package: arithmetic only (no checks, no RNG state).

Simulation: :func:`batch_chain`, :func:`sgd_steps`. DMFT: :func:`iteration` (effective
samples drawn chunk by chunk and run one by one in closed form through the linear part
of the process, :func:`causal_operators`), :func:`bulk_response`.
"""

import math

import numba
import numpy as np

from numba import prange

from .._jit import njit, njit_reduce
from .._linalg import cholesky_shifted  # noqa: F401  (used by solve through _kernels)
from ._rng import _GAMMA, _MASK8, _ONE, _S8, ZIG_X, _mix, _to_unit, normal, uniform
from .model import TEACHER, THREE_CLUSTER, TWO_CLUSTER, loss_derivatives, loss_terms


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
def causal_operators(lamhat, MR, Lc, dt, lam, R, P, Q):
    """The linear part of the effective process, once per iteration (O(n_t^3)).

    Writes the bulk response R (strictly lower, the recursion of :func:`bulk_response`,
    advanced a row at a time), the propagator P of theta(0), and Q = dt R Lc, the
    response of theta to the white normals z of the noise xi = Lc z (Q strictly lower).
    The effective process of :func:`_sample_path` is linear in theta with these
    coefficients: with the forcing F_j = dt xi_j - dt sqrt(Delta) s_j Lambda'_j,
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
def _sample_path(full, s, z, cq, yq, h0q, th0q, m, R, P, Q, sD, dt, loss, model, L, B, F, a2,
                 MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum):
    """One effective sample through the process, in closed form (:func:`causal_operators`).

    s (n_t,) its batch path, z (n_t,) its white normals. theta_k = P_k theta(0) +
    sum_{l<k} (Q[k, l] z_l - dt sqrt(Delta) R[k, l] F_l) with the force F = s Lambda'
    (zero out of the batch) is evaluated at the sample's in-batch steps only, the only
    ones at which it enters the kernels, unless ``full``: then r, the loss and the
    correctness are computed at every step (the final pass). r^2 (for divergence
    detection) is summed at the steps evaluated. Accumulates, at in-batch k: Lambda''_k,
    Lambda'_k (c + sqrt(Delta) h0), and M_C[k, :k+1] += Lambda'_k F[:k+1]. Writes the
    in-batch steps to B[:nb], their Lambda'' to a2[:nb] and F; returns nb.
    """
    n_t = m.shape[0]
    ne, nb = 0, 0
    for k in range(n_t):  # the steps to evaluate, without a branch per step
        F[k] = 0.0
        B[ne] = k
        ne += 1 if full else s[k]
    x0 = cq + sD * h0q
    g = dt * sD
    for e in range(ne):
        k = B[e]
        acc = 0.0
        for l in range(k):
            acc += Q[k, l] * z[l] - g * R[k, l] * F[l]
        mk = m[k]
        r = cq * mk + sD * (mk * h0q + P[k] * th0q + acc)
        r2_sum[k] += r * r
        d1, d2 = 0.0, 0.0
        if full:
            val, d1, d2, ok = loss_terms(loss, model, yq, r, L)
            loss_sum[k] += val
            acc_sum[k] += ok
        else:
            d1, d2 = loss_derivatives(loss, model, yq, r, L)
        if s[k] != 0:
            F[k] = d1
            B[nb], a2[nb] = k, d2  # nb <= e: overwrites only entries already used
            nb += 1
            l2_sum[k] += d2
            proj[k] += d1 * x0
            for l in range(k + 1):
                MC_sum[k, l] += d1 * F[l]
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


def workspace(n_t, chunk, groups=None):
    """Buffers for :func:`iteration`, in a fixed number of groups (leading axis).

    Per group: one chunk of effective samples (c, y, h0, theta(0); batch paths S and
    normals Z, time-major), one sample's path, in-batch steps, force and Lambda''
    (s, z, B, F, a2), the response's forward substitution X (n_t, n_t), and the group's
    partial sums (M_C, the response, five (n_t,) sums); shared: R, Q (n_t, n_t) and P.
    O(groups (n_t^2 + chunk n_t)) in all; ``groups`` defaults to :data:`GROUPS`.
    """
    G = GROUPS if groups is None else groups
    vec = tuple(np.empty((G, chunk)) for _ in range(4))  # 0-3: c, y, h0, theta(0)
    # S, Z: rows padded by 8 entries, so that a sample's column (read step by step in
    # :func:`_group`) does not fall into a handful of cache sets (a row of 256 doubles is
    # 2 KiB: a power of two)
    return (*vec, np.empty((G, n_t, chunk + 8), np.int8), np.empty((G, n_t, chunk + 8)),  # 4, 5
            np.empty((G, n_t), np.int8), np.empty((G, n_t)),  # 6, 7: s, z of one sample
            np.empty((G, n_t), np.int64), np.empty((G, n_t)), np.empty((G, n_t)),  # 8-10: B, F, a2
            np.empty((G, n_t, n_t)),  # 11: X
            np.empty((G, n_t, n_t)), np.empty((G, n_t, n_t)), np.empty((G, 5, n_t)),  # 12-14: sums
            np.empty((n_t, n_t)), np.empty((n_t, n_t)), np.empty(n_t))  # 15-17: R, Q, P


# Samples are split into this many groups, each reduced into its own partial sums, which
# are then added in group order: the result is the same whether the groups run one after
# the other or on up to GROUPS threads (bit for bit).
GROUPS = 4


@njit_reduce
def _group(g, G, keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, dt, m,
           full):
    """Group g: chunks g, g + G, g + 2G, ... of the N samples, drawn (:func:`draw_samples`),
    run one by one (:func:`_sample_path`, and :func:`_sample_response` for samples below
    n_resp), reduced into the group's partial sums."""
    c, y, h0, th0, S, Z = work[0][g], work[1][g], work[2][g], work[3][g], work[4][g], work[5][g]
    s, z, B, F, a2, X = work[6][g], work[7][g], work[8][g], work[9][g], work[10][g], work[11][g]
    MC_sum, resp, sums = work[12][g], work[13][g], work[14][g]
    R, Q, P = work[15], work[16], work[17]
    MC_sum[:, :] = 0.0
    resp[:, :] = 0.0
    sums[:, :] = 0.0
    n_t = m.shape[0]
    sD = math.sqrt(Delta)
    chunk = c.shape[0]
    for a0 in range(g * chunk, N, G * chunk):
        nc = min(chunk, N - a0)
        draw_samples(keys, a0, nc, model, rho, Delta, R0, b, p01, p10, c, y, h0, th0, S, Z)
        for q in range(nc):
            for k in range(n_t):
                s[k] = S[k, q]
                z[k] = Z[k, q]
            nb = _sample_path(full, s, z, c[q], y[q], h0[q], th0[q], m, R, P, Q, sD, dt, loss,
                              model, L, B, F, a2, MC_sum, sums[0], sums[1], sums[2], sums[3],
                              sums[4])
            if a0 + q < n_resp:
                _sample_response(nb, B, a2, R, dt, Delta, X, resp)


@njit_reduce
def _reduce_groups(work, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum, resp):
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


def _iteration(keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, lam, dt,
               Lc, m, lamhat, MR, full, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum, resp):
    """One fixed-point iteration of the DMFT: all effective samples with given kernels.

    The kernels fix the linear part of the process (:func:`causal_operators`: R, P and
    Q = dt R Lc, Lc the lower Cholesky factor of M_C, noise xi = Lc z); each sample is
    then drawn (:func:`draw_samples`, chunk by chunk) and run in closed form, its theta
    evaluated only at its in-batch steps (:func:`_sample_path`; at every step if
    ``full``), and for the first n_resp samples its response chi restricted to those
    steps (:func:`_sample_response`). No per-sample path is stored: memory
    O(GROUPS (n_t^2 + chunk n_t)). m, lamhat (n_t,) and MR (n_t, n_t) are the current
    kernels. Outputs (overwritten, sums over samples): MC_sum[k, l] = sum s_k Lambda'_k
    s_l Lambda'_l (l <= k); l2_sum = sum s Lambda'', proj = sum s Lambda'(c + sqrt(Delta)
    h0), r^2 (over the in-batch samples, or all if ``full``), and, only if ``full``, the
    loss and the correctness (else left at 0), each (n_t,); resp[k, j] = sum s_k
    Lambda''_k chi_kj s_j Lambda''_j over the first n_resp samples.
    Cost O(n_t^3 + N (b n_t^2/2 + (b n_t)^2) + n_resp (b n_t)^3/6), with b n_t the
    number of in-batch steps of a sample (``full``: O(N n_t^2/2) for the noise).

    Work is split into the fixed groups of :func:`workspace`: group g takes the chunks
    g, g + G, ..., with its own partial sums (added afterwards in group order). The group
    loop is ``prange``: compiled serially (:data:`iteration`) the groups run one after
    the other, compiled with ``parallel=True`` (:data:`iteration_threads`) on numba's
    threads; the same partial sums are added in the same order, so both give the same bits.
    """
    G = work[0].shape[0]
    causal_operators(lamhat, MR, Lc, dt, lam, work[15], work[17], work[16])
    for g in prange(G):
        _group(g, G, keys, N, n_resp, work, model, loss, rho, L, Delta, R0, b, p01, p10, dt, m,
               full)
    _reduce_groups(work, MC_sum, l2_sum, loss_sum, acc_sum, proj, r2_sum, resp)


# One body, compiled twice: prange runs as range when not compiled with parallel=True.
iteration = njit(_iteration)
# The threaded build is not cached: numba's cache index is keyed by the Python function
# and its signature, not by the parallel flag, so a cached copy of it would share the
# serial build's entries. It is compiled on first use only (solve's default is serial).
iteration_threads = numba.njit(_iteration, parallel=True, error_model="numpy")
