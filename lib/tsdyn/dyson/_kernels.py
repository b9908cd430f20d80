"""Numba kernels of the tanh teacher-student ensemble: arithmetic only, no checks, no RNG objects.

Shapes, for an ensemble of M models: W2 (M, n2, n1) trainable weights, A1 (M, D, n1)
first-hidden-layer activations tanh(W^(1) x) of the data (fixed, since W^(1) is not
trained), Y (M, D) teacher labels, W3 (M, n2) output weights. All models are advanced
in one call (prange over models: they are independent, so the result does not depend
on the number of threads).
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._jit import njit

_FAST = {"reassoc", "contract"}  # see tsdyn._jit: no nnan/ninf, divergence must stay visible


@intrinsic
def _prefetch(typingctx, arr, i, j, l):
    """Hint the processor to fetch the cache line of arr[i, j, l] (llvm.prefetch: read, keep
    in all levels). No effect on results."""
    sig = types.void(arr, i, j, l)

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, value=args[0])
        idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], sig.args[1:])]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(parallel=True, fastmath=_FAST)
def sgd_block(W2, A1, Y, W3, idx, eps, w_max, alive, diverged_at, step0):
    """Run idx.shape[1] SGD steps of every live model, in place (Park et al. eq. 2.28).

    idx (M, n_steps, B) holds the mini-batch sample indices, drawn by the caller.
    For a sample (a, y) with a = tanh(W^(1) x) the student's output is
    y_hat = sum_i W3_i tanh(z_i), z = W2 a, and the gradient of l = (y_hat - y)^2 / 2 is

        dl/dW2_ij = (y_hat - y) W3_i (1 - tanh(z_i)^2) a_j .

    W2 <- W2 - eps * (mean of dl/dW2 over the batch): the B errors are computed with
    the weights before the step, then W2 is updated in one pass. Each model works on
    private contiguous copies (its weights, the batch's gathered activations), written
    back at the end of the block: same arithmetic in the same order as a direct update
    of W2 (bit-identical results), about 1.4x faster. The forward pass and the update take
    four samples of the batch per pass over a row of W2 (the same sums and subtractions in
    the same order, fewer loads and stores; the B mod 4 samples left over take one pass each,
    so |B| = 1 does no padded work), and the activations of the batch two steps ahead are prefetched (the rows
    of A1 are drawn at random: otherwise a cache miss per row, ~0.1 us a step). tanh is
    evaluated as 1 - 2 / (exp(2z) + 1), which the compiler vectorises over the n2 units
    (absolute error ~1e-16, exact limits +-1, NaN propagates). A model whose Frobenius norm
    |W2|_F reaches w_max (or turns non-finite) stops: alive[m] = False and
    diverged_at[m] = step0 + (steps done, counting the failed one).
    """
    M, n2, n1 = W2.shape
    n_steps, B = idx.shape[1], idx.shape[2]
    wm2 = w_max * w_max
    for m in numba.prange(M):
        if not alive[m]:
            continue
        # private contiguous copies: the model's weights, the batch's activations (gathered once
        # per step), the B features/coefficients; the compiler then keeps the loops vectorised
        w = np.empty((n2, n1))
        for i in range(n2):
            for j in range(n1):
                w[i, j] = W2[m, i, j]
        w3 = np.empty(n2)
        for i in range(n2):
            w3[i] = W3[m, i]
        B4 = B - B % 4  # samples in whole blocks of four; the rest one at a time
        ab = np.empty((B, n1))
        zb = np.empty((B, n2))
        e = np.empty(B)
        for s in range(n_steps):
            if s + 2 < n_steps:
                for b in range(B):
                    k = idx[m, s + 2, b]
                    for j in range(0, n1, 8):  # 8 doubles a cache line
                        _prefetch(A1, m, k, j)
            for b in range(B):
                k = idx[m, s, b]
                for j in range(n1):
                    ab[b, j] = A1[m, k, j]
            for b0 in range(0, B4, 4):  # four samples share each load of a row of W2
                a0, a1, a2, a3 = ab[b0], ab[b0 + 1], ab[b0 + 2], ab[b0 + 3]
                for i in range(n2):
                    wi = w[i]
                    z0 = z1 = z2 = z3 = 0.0
                    for j in range(n1):
                        x = wi[j]
                        z0 += x * a0[j]
                        z1 += x * a1[j]
                        z2 += x * a2[j]
                        z3 += x * a3[j]
                    zb[b0, i] = 2.0 * z0
                    zb[b0 + 1, i] = 2.0 * z1
                    zb[b0 + 2, i] = 2.0 * z2
                    zb[b0 + 3, i] = 2.0 * z3
            for b in range(B4, B):
                for i in range(n2):
                    z = 0.0
                    for j in range(n1):
                        z += w[i, j] * ab[b, j]
                    zb[b, i] = 2.0 * z
            for b in range(B):
                for i in range(n2):
                    zb[b, i] = 1.0 - 2.0 / (math.exp(zb[b, i]) + 1.0)  # tanh(z)
                y_hat = 0.0
                for i in range(n2):
                    y_hat += w3[i] * zb[b, i]
                e[b] = eps * (y_hat - Y[m, idx[m, s, b]]) / B
                for i in range(n2):
                    phi = zb[b, i]
                    zb[b, i] = e[b] * (w3[i] * (1.0 - phi * phi))  # the step's coefficient of a_j
            s2 = 0.0
            for i in range(n2):
                wi = w[i]
                for b0 in range(0, B4, 4):
                    c0, c1, c2, c3 = zb[b0, i], zb[b0 + 1, i], zb[b0 + 2, i], zb[b0 + 3, i]
                    a0, a1, a2, a3 = ab[b0], ab[b0 + 1], ab[b0 + 2], ab[b0 + 3]
                    for j in range(n1):
                        wi[j] = (((wi[j] - c0 * a0[j]) - c1 * a1[j]) - c2 * a2[j]) - c3 * a3[j]
                for b in range(B4, B):
                    c = zb[b, i]
                    for j in range(n1):
                        wi[j] -= c * ab[b, j]
                for j in range(n1):
                    s2 += wi[j] * wi[j]
            if not s2 < wm2:  # also catches nan
                alive[m] = False
                diverged_at[m] = step0 + s + 1
                break
        for i in range(n2):
            for j in range(n1):
                W2[m, i, j] = w[i, j]


@njit(parallel=True, fastmath=_FAST)
def gd_block(W2, A1, Y, W3, n_steps, eps, w_max, alive, diverged_at, step0):
    """Run n_steps steps of full-batch gradient descent of every live model, in place.

    W2 <- W2 - eps * (1/D) sum_a (y_hat_a - y_a) W3_i (1 - tanh(z_ai)^2) a_aj over all D training
    samples (Park et al. eq. 2.28 with the mini-batch replaced by the whole training set: no
    sampling, no noise). The gradient is accumulated with the weights before the step. The model's
    weights are held transposed, (n1, n2), so that both the forward pass z = W2 a and the gradient's
    outer product run over the n2 units as contiguous vector updates (no horizontal sums); tanh as
    1 - 2 / (exp(2z) + 1). A model whose |W2|_F reaches w_max (or turns non-finite) stops:
    alive[m] = False, diverged_at[m] = step0 + (steps done, counting the failed one).
    """
    M, n2, n1 = W2.shape
    D = A1.shape[1]
    wm2 = w_max * w_max
    scale = eps / D
    for m in numba.prange(M):
        if not alive[m]:
            continue
        wt = np.empty((n1, n2))
        for i in range(n2):
            for j in range(n1):
                wt[j, i] = W2[m, i, j]
        w3 = np.empty(n2)
        for i in range(n2):
            w3[i] = W3[m, i]
        z = np.empty(n2)
        gt = np.empty((n1, n2))
        for s in range(n_steps):
            for j in range(n1):
                for i in range(n2):
                    gt[j, i] = 0.0
            for k in range(D):
                for i in range(n2):
                    z[i] = 0.0
                for j in range(n1):
                    akj = A1[m, k, j]
                    for i in range(n2):
                        z[i] += akj * wt[j, i]
                y_hat = 0.0
                for i in range(n2):
                    phi = 1.0 - 2.0 / (math.exp(2.0 * z[i]) + 1.0)  # tanh(z)
                    z[i] = phi
                    y_hat += w3[i] * phi
                e = scale * (y_hat - Y[m, k])
                for i in range(n2):
                    phi = z[i]
                    z[i] = e * (w3[i] * (1.0 - phi * phi))  # the gradient's coefficient of a_j
                for j in range(n1):
                    akj = A1[m, k, j]
                    for i in range(n2):
                        gt[j, i] += akj * z[i]
            s2 = 0.0
            for j in range(n1):
                for i in range(n2):
                    wt[j, i] -= gt[j, i]
                    s2 += wt[j, i] * wt[j, i]
            if not s2 < wm2:  # also catches nan
                alive[m] = False
                diverged_at[m] = step0 + s + 1
                break
        for i in range(n2):
            for j in range(n1):
                W2[m, i, j] = wt[j, i]


@njit(parallel=True, fastmath=_FAST)
def features(W2, A1):
    """Features phi = tanh(W2 a) (eq. 2.5) of every sample: shape (M, D, n2)."""
    M, n2, n1 = W2.shape
    D = A1.shape[1]
    out = np.empty((M, D, n2))
    for m in numba.prange(M):
        for k in range(D):
            for i in range(n2):
                z = 0.0
                for j in range(n1):
                    z += W2[m, i, j] * A1[m, k, j]
                out[m, k, i] = math.tanh(z)
    return out


@njit(parallel=True, fastmath=_FAST)
def gradient_moments(W2, A1, Y, W3, U):
    """Full-batch gradient of W2 and the moments of the per-sample gradient of X = W2 W2^T.

    For one sample, dl/dW2 = g a^T with g_i = (y_hat - y) W3_i (1 - phi_i^2), so the
    induced change of X (eq. 4.4), Delta^X = W2 Delta^T + Delta W2^T, is the rank-two
    matrix z g^T + g z^T with z = W2 a. In the basis U[m] (columns: eigenvectors of
    X, ascending eigenvalues) it is p q^T + q p^T with p = U^T z, q = U^T g.

    Returns
    -------
    grad : (M, n2, n1)
        Mean of dl/dW2 over the D samples (the full-batch gradient, eq. 3.3).
    mean : (M, n2, n2)
        Mean over samples of the rotated Delta^X (K = -mean, eq. 4.4).
    var : (M, n2, n2)
        Variance over samples of each element of the rotated Delta^X (V of eq. 4.4).
    gg : (M, n2)
        Mean over samples of (U^T Delta Delta^T U)_ii = |a|^2 q_i^2: the second moment
        behind the O(eps^2) term eps^2 Delta_B Delta_B^T of the change of X.
    """
    M, n2, n1 = W2.shape
    D = A1.shape[1]
    grad = np.zeros((M, n2, n1))
    mean = np.zeros((M, n2, n2))
    var = np.zeros((M, n2, n2))
    gg = np.zeros((M, n2))
    for m in numba.prange(M):
        z = np.empty(n2)
        g = np.empty(n2)
        p = np.empty(n2)
        q = np.empty(n2)
        s1 = np.zeros((n2, n2))
        s2 = np.zeros((n2, n2))
        for k in range(D):
            y_hat = 0.0
            for i in range(n2):
                acc = 0.0
                for j in range(n1):
                    acc += W2[m, i, j] * A1[m, k, j]
                z[i] = acc
                phi = math.tanh(acc)
                y_hat += W3[m, i] * phi
                g[i] = W3[m, i] * (1.0 - phi * phi)
            e = y_hat - Y[m, k]
            a2 = 0.0
            for j in range(n1):
                a2 += A1[m, k, j] * A1[m, k, j]
            for i in range(n2):
                g[i] *= e
                for j in range(n1):
                    grad[m, i, j] += g[i] * A1[m, k, j]
            for i in range(n2):
                pi = 0.0
                qi = 0.0
                for l in range(n2):
                    pi += U[m, l, i] * z[l]
                    qi += U[m, l, i] * g[l]
                p[i] = pi
                q[i] = qi
                gg[m, i] += a2 * qi * qi
            for i in range(n2):
                for l in range(n2):
                    r = p[i] * q[l] + q[i] * p[l]
                    s1[i, l] += r
                    s2[i, l] += r * r
        for i in range(n2):
            for j in range(n1):
                grad[m, i, j] /= D
            for l in range(n2):
                mu = s1[i, l] / D
                mean[m, i, l] = mu
                var[m, i, l] = max(s2[i, l] / D - mu * mu, 0.0)
            gg[m, i] /= D
    return grad, mean, var, gg


# Paths advanced together by level_spacing_em: each path's steps form a chain of dependent
# square roots and divisions (latency-bound one path at a time); interleaving this many
# independent paths keeps the floating-point units busy. Results do not depend on it.
_LANES = 16


@njit
def level_spacing_em(S0, tau_grid, n_sub, K, V, Dc, T, xi, out, linear):
    """Drift-implicit Euler-Maruyama for dS = (K_S + V_S T / S) dtau + sqrt(2 T D_S) dW (eq. 4.8).

    S0 (P,) initial values; tau_grid (n_rec,) recording times (first = 0); n_sub
    (n_rec - 1,) number of equal steps in each interval [tau_r, tau_{r+1}); K, V, Dc
    (P, n_rec) coefficients at the recording times: held at the interval's left-end value
    (``linear`` False) or interpolated linearly in tau between its two ends, each step
    using the value at its start (``linear`` True); xi (P, sum(n_sub)) standard normals,
    one per step; out (P, n_rec).

    The Coulomb term is taken at the new point: S' = S + K h + V T h / S' + sqrt(2 T D h) xi,
    i.e. S' = (b + sqrt(b^2 + 4 V T h)) / 2 with b = S + K h + sqrt(2 T D h) xi, the
    positive root. It keeps S > 0 without reflection and stays stable when S is small
    and the 1/S drift stiff (explicit Euler overshoots there); with V = 0 it is the
    explicit scheme. The noise is additive, so the strong order is 1.

    Paths are advanced ``_LANES`` at a time, step by step (independent chains interleaved);
    with held coefficients K h, 4 V T h and sqrt(2 T D h) are computed once per interval.
    Each path's arithmetic is the same, operation for operation, as one path at a time.
    """
    P, n_rec = out.shape
    W = _LANES
    S = np.empty(W)
    k0, v0, d0 = np.empty(W), np.empty(W), np.empty(W)
    k1, v1, d1 = np.empty(W), np.empty(W), np.empty(W)
    for p0 in range(0, P, W):
        w = min(W, P - p0)
        for q in range(w):
            S[q] = S0[p0 + q]
            out[p0 + q, 0] = S[q]
        n = 0
        for r in range(n_rec - 1):
            m = n_sub[r]
            h = (tau_grid[r + 1] - tau_grid[r]) / m
            for q in range(w):
                k0[q], v0[q], d0[q] = K[p0 + q, r], V[p0 + q, r], Dc[p0 + q, r]
            if not linear:  # k1, v1, d1: the step's K h, 4 V T h and sqrt(2 T D h)
                for q in range(w):
                    k1[q] = k0[q] * h
                    v1[q] = 4.0 * v0[q] * T * h
                    d1[q] = math.sqrt(2.0 * T * d0[q] * h)
                for j in range(m):
                    for q in range(w):
                        b = S[q] + k1[q] + d1[q] * xi[p0 + q, n + j]
                        c = v1[q]
                        root = math.sqrt(b * b + c)
                        S[q] = 0.5 * (b + root) if b >= 0.0 else 0.5 * c / (root - b)
            else:  # k1, v1, d1: the coefficients' change over the interval
                for q in range(w):
                    k1[q] = K[p0 + q, r + 1] - k0[q]
                    v1[q] = V[p0 + q, r + 1] - v0[q]
                    d1[q] = Dc[p0 + q, r + 1] - d0[q]
                for j in range(m):
                    f = j / m
                    for q in range(w):
                        k_ = k0[q] + f * k1[q]
                        v_ = v0[q] + f * v1[q]
                        d_ = d0[q] + f * d1[q]
                        b = S[q] + k_ * h + math.sqrt(2.0 * T * d_ * h) * xi[p0 + q, n + j]
                        c = 4.0 * v_ * T * h
                        root = math.sqrt(b * b + c)
                        S[q] = 0.5 * (b + root) if b >= 0.0 else 0.5 * c / (root - b)
            n += m
            for q in range(w):
                out[p0 + q, r + 1] = S[q]
    return out


@njit
def _sort_levels(a):
    """Sort ``a`` in place by insertion: after one Euler step the levels are almost always
    still in order, so this is O(N) in practice."""
    for i in range(1, len(a)):
        val = a[i]
        j = i - 1
        while j >= 0 and a[j] > val:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = val


@njit
def dyson_em(x0, tau_grid, n_sub, K, V, T, xi, out):
    """Euler-Maruyama for the Dyson Brownian motion of the eigenvalues (Park et al. eq. 4.3):

        dx_i = (K_i + T sum_{j != i} V_ij / (x_i - x_j)) dtau + sqrt(T V_ii) dW_i .

    x0 (P, N) ascending initial eigenvalues; tau_grid (n_rec,); n_sub (n_rec - 1,) equal
    steps per interval; K (P, n_rec, N), V (P, n_rec, N, N) coefficients, constant on each
    interval; xi (P, sum(n_sub), N) standard normals; out (P, n_rec, N). After each step
    the levels are sorted: a crossing can only come from a step too long for the
    Coulomb repulsion, and the dt / dt/2 check in the caller measures that error.
    """
    P, n_rec, N = out.shape
    x = np.empty(N)
    new = np.empty(N)
    for p in range(P):
        x[:] = x0[p]
        out[p, 0] = x
        n = 0
        for r in range(n_rec - 1):
            h = (tau_grid[r + 1] - tau_grid[r]) / n_sub[r]
            for _ in range(n_sub[r]):
                for i in range(N):
                    drift = K[p, r, i]
                    for j in range(N):
                        if j != i:
                            drift += T * V[p, r, i, j] / (x[i] - x[j])
                    new[i] = x[i] + drift * h + math.sqrt(T * V[p, r, i, i] * h) * xi[p, n, i]
                _sort_levels(new)
                x[:] = new
                n += 1
            out[p, r + 1] = x
    return out


@njit
def dyson_sv_em(s0, tau_grid, n_sub, k, v, c, Voff, T, xi, out):
    """Euler-Maruyama for the Dyson equation (4.3) plus the Ito drift, in the singular values s_i = sqrt(x_i).

    Per sample, Delta^X_ij = sqrt(x_i) b_i q_j + sqrt(x_j) b_j q_i in the eigenbasis of X
    (W = U diag(sqrt x) R^T, b = R^T a, q = U^T g), so K_i = sqrt(x_i) k_i and V_ii = x_i v_i:
    the drift and the noise of a level vanish as it approaches 0, and X = W W^T >= 0. With
    dx_i = (K_i + T c_i + T sum_j V_ij / (x_i - x_j)) dtau + sqrt(T V_ii) dW_i (c_i = C_ii)
    and Ito's rule for s = sqrt(x):

        ds_i = [k_i / 2 + A_i / s_i] dtau + (sqrt(T v_i) / 2) dW_i,
        A_i = (T c_i + T sum_{j != i} V_ij / (x_i - x_j) - T v_i / 4) / 2,

    additive noise. Where A_i > 0 (repulsion from 0) the A_i / s_i term is taken at the new point
    (the positive root of a quadratic, as in ``level_spacing_em``); otherwise explicitly, and
    s -> |s| (a singular value). x = s^2 >= 0 whatever the step. The Coulomb displacement
    d_i = T F_i h of a level is replaced by the exact displacement of an isolated pair a gap
    g_i apart (g_i: distance to the nearest level), (sqrt(g_i^2 + 4 g_i |d_i|) - g_i)/2, which
    equals |d_i| to first order in h and stays of order sqrt(T V h) when the explicit step
    would throw a level far past its neighbour (explicit Euler does: at the narrow initial
    spectrum a single near-collision sent a level up by orders of magnitude). Levels are re-sorted
    after each step.

    s0 (P, N) ascending; tau_grid (n_rec,); n_sub (n_rec - 1,) steps per interval; k, v, c
    (P, n_rec, N) and Voff (P, n_rec, N, N) (diagonal ignored) at the recording times,
    interpolated linearly in tau; xi (P, sum(n_sub), N) standard normals; out (P, n_rec, N)
    receives x = s^2.
    """
    P, n_rec, N = out.shape
    s = np.empty(N)
    new = np.empty(N)
    for p in range(P):
        for i in range(N):
            s[i] = s0[p, i]
            out[p, 0, i] = s[i] * s[i]
        n = 0
        for r in range(n_rec - 1):
            m = n_sub[r]
            h = (tau_grid[r + 1] - tau_grid[r]) / m
            for step in range(m):
                f = step / m
                for i in range(N):
                    kk = k[p, r, i] + f * (k[p, r + 1, i] - k[p, r, i])
                    vv = max(v[p, r, i] + f * (v[p, r + 1, i] - v[p, r, i]), 0.0)
                    cc = c[p, r, i] + f * (c[p, r + 1, i] - c[p, r, i])
                    xi_ = s[i] * s[i]
                    coul = 0.0
                    for j in range(N):
                        if j != i:
                            vij = Voff[p, r, i, j] + f * (Voff[p, r + 1, i, j] - Voff[p, r, i, j])
                            coul += vij / (xi_ - s[j] * s[j])
                    # Coulomb step of a close pair solved exactly: for two levels a gap g apart
                    # pushed by d = T F h each, the exact flow g^2 -> g^2 + 4 g |d| gives each level
                    # the displacement (sqrt(g^2 + 4 g |d|) - g) / 2 (-> |d| as h -> 0, and the
                    # correct sqrt(T V h) when the explicit d would overshoot the gap)
                    gap = math.inf
                    if i > 0:
                        gap = xi_ - s[i - 1] * s[i - 1]
                    if i < N - 1:
                        gap = min(gap, s[i + 1] * s[i + 1] - xi_)
                    d = T * abs(coul) * h
                    if d > 1e-3 * gap:  # below, the factor is 1 to 1e-3 relative: keep the explicit value
                        coul = coul * (math.sqrt(gap * gap + 4.0 * gap * d) - gap) / (2.0 * d)
                    A = 0.5 * T * (cc + coul - 0.25 * vv)
                    b = s[i] + 0.5 * kk * h + 0.5 * math.sqrt(T * vv * h) * xi[p, n, i]
                    if A > 0.0:
                        q = 4.0 * A * h
                        root = math.sqrt(b * b + q)
                        new[i] = 0.5 * (b + root) if b >= 0.0 else 0.5 * q / (root - b)
                    else:
                        new[i] = abs(b + A * h / s[i]) if s[i] > 0.0 else abs(b)
                _sort_levels(new)
                for i in range(N):
                    s[i] = new[i]
                n += 1
            for i in range(N):
                out[p, r + 1, i] = s[i] * s[i]
    return out


# ------------------------------------------------------------------ cluster bootstrap of a pooled median

@njit(parallel=True)
def pooled_median_boot(values, owner, counts, out):
    """Median of the pooled values of bootstrap-resampled clusters, without copying them.

    values (R, n): each row ascending (NaN-free); owner (R, n): the cluster of each value;
    counts (B, C): how often resample b draws cluster c. A resample pools every value of
    cluster c counts[b, c] times (total n_b = sum_c counts[b, c] x cluster size), so its
    order statistic at position p is the first sorted value whose running weight exceeds p.
    out (R, B) receives the median as numpy.median defines it (the middle value, or the mean
    of the two middle values when the pooled count is even).
    """
    R, n = values.shape
    B = counts.shape[0]
    for r in numba.prange(R):
        for b in range(B):
            total = 0
            for j in range(n):
                total += counts[b, owner[r, j]]
            lo_pos, hi_pos = (total - 1) // 2, total // 2
            acc, lo, hi = 0, np.nan, np.nan
            for j in range(n):
                acc += counts[b, owner[r, j]]
                if acc > lo_pos and np.isnan(lo):
                    lo = values[r, j]
                if acc > hi_pos:
                    hi = values[r, j]
                    break
            out[r, b] = lo if lo_pos == hi_pos else (lo + hi) / 2.0
