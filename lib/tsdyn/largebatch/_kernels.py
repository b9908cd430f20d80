"""Numba kernels of large-batch one-pass SGD: arithmetic only, no checks, no RNG objects.

Two ways of drawing the same step (see :mod:`tsdyn.largebatch.simulate`):

- ``full``: the n_b inputs z in R^d are given (drawn by the caller in chunks); a
  step costs O(n_b d (p + k)).
- ``reduced``: only the projections of the inputs on S = span(W, W*) are drawn,
  and the component of the gradient orthogonal to S is drawn directly from its
  exact conditional law; a step costs O(n_b (p + k)^2 + d (p + k)^2).

And one that is not exact (``gaussian``, p = k = 1): the batch sums that ``reduced``
accumulates over n_b samples are drawn from their central-limit Gaussian, whose mean and
covariance are n_b times one sample's, by quadrature; a step costs O(d + n_nodes^2), whatever
n_b.
"""

import math

import numpy as np

from .._jit import njit, njit_reduce
from .._linalg import cholesky_shifted
from .functions import derivative, target, value

SQUARE, CORRELATION = 0, 1
PROJECTED, SPHERICAL = 0, 1


@njit_reduce
def accumulate(Wl, Wn, Z, n_cols, xi, act, tgt, loss, sqrt_noise, G, C):
    """The batch sums of one step, shared by the two exact samplers (Arnaboldi et al., "Setting", g_j).

    For each row z of Z (its first ``n_cols`` entries) the fields are lambda = Wl z and
    nu = Wn z, and F_j = r sigma'(lambda_j) / p is minus the gradient of the loss w.r.t.
    lambda_j, with the residual r = y - f for the square loss (y - f)^2 / 2 and r = y for the
    correlation loss 1 - y f, y = h*(nu) + sqrt(noise) xi, f = (1/p) sum_j sigma(lambda_j).
    Then G (p, >= n_cols) += F z and C (p, p) += F F^T unless C is empty. (The residual is
    written inline and the rows indexed in place: with a called function that numba did not
    inline and a row view per sample, the loop took 56 ns per sample at p = k = 1, now 15.)
    Full sampler: Wl = W, Wn = W*, z in R^d. Reduced sampler: Wl, Wn = the coordinates of W, W*
    in the basis of S, z = zeta in R^r.
    """
    p, k = Wl.shape[0], Wn.shape[0]
    lam, nu, F = np.empty(p), np.empty(k), np.empty(p)
    with_C = C.shape[0] > 0
    for b in range(Z.shape[0]):
        for j in range(p):
            acc = 0.0
            for i in range(n_cols):
                acc += Wl[j, i] * Z[b, i]
            lam[j] = acc
        for r in range(k):
            acc = 0.0
            for i in range(n_cols):
                acc += Wn[r, i] * Z[b, i]
            nu[r] = acc
        res = target(tgt, nu) + sqrt_noise * xi[b]
        if loss == SQUARE:
            f = 0.0
            for j in range(p):
                f += value(act, lam[j])
            res -= f / p
        for j in range(p):
            F[j] = res * derivative(act, lam[j]) / p
        for j in range(p):
            c = F[j]
            for i in range(n_cols):
                G[j, i] += c * Z[b, i]
            if with_C:
                for m in range(p):
                    C[j, m] += c * F[m]


@njit
def accumulate_full(W, Wstar, Z, xi, act, tgt, loss, sqrt_noise, G):
    """G (p, d) += sum over the rows z of Z of F(z) z."""
    accumulate(W, Wstar, Z, Z.shape[1], xi, act, tgt, loss, sqrt_noise, G, np.empty((0, 0)))


@njit_reduce
def overlap_norm(W, Wstar):
    """||W W*^T||_F."""
    total = 0.0
    for j in range(W.shape[0]):
        for r in range(Wstar.shape[0]):
            acc = 0.0
            for i in range(W.shape[1]):
                acc += W[j, i] * Wstar[r, i]
            total += acc * acc
    return math.sqrt(total)


@njit_reduce
def apply_step(W, G, scale, gamma, algorithm):
    """w_j <- (w_j + gamma g_j) / ||.||, with g_j = scale * G_j; spherical SGD first removes
    the radial part, g_j <- g_j - <g_j, w_j> w_j. Returns False if a norm is not finite
    and positive (the run diverged)."""
    p, d = W.shape
    for j in range(p):
        radial = 0.0
        if algorithm == SPHERICAL:
            for i in range(d):
                radial += G[j, i] * W[j, i]
            radial *= scale
        norm2 = 0.0
        for i in range(d):
            w = W[j, i] + gamma * (scale * G[j, i] - radial * W[j, i])
            W[j, i] = w
            norm2 += w * w
        if not (norm2 > 0.0 and norm2 < math.inf):
            return False
        inv = 1.0 / math.sqrt(norm2)
        for i in range(d):
            W[j, i] *= inv
    return True


@njit
def finish_step(W, Wstar, G, n_b, gamma, algorithm, eta, s, first):
    """Step s (0-based) of a block, the batch sum G given: w <- the step with g = G / n_b
    (:func:`apply_step`), then the first recovery noted. Returns (diverged, first), with first set
    to s + 1 if ||W W*^T||_F reached ``eta`` at this step and not before (-1 while it has not)."""
    if not apply_step(W, G, 1.0 / n_b, gamma, algorithm):
        return True, first
    if first < 0 and overlap_norm(W, Wstar) >= eta:
        first = s + 1
    return False, first


@njit
def full_steps(W, Wstar, Z, xi, n_b, act, tgt, loss, algorithm, gamma, sqrt_noise, eta,
               stop_at_recovery, G):
    """len(Z) // n_b whole SGD steps in place.

    Returns (steps done, diverged, first recovery): the number of steps after which
    ||W W*^T||_F first reached ``eta`` in this block, or -1."""
    n_steps = Z.shape[0] // n_b
    first = -1
    for s in range(n_steps):
        G[:] = 0.0
        accumulate_full(W, Wstar, Z[s * n_b:(s + 1) * n_b], xi[s * n_b:(s + 1) * n_b], act, tgt,
                        loss, sqrt_noise, G)
        diverged, first = finish_step(W, Wstar, G, n_b, gamma, algorithm, eta, s, first)
        if diverged:
            return s, True, first
        if stop_at_recovery and first == s + 1:
            return s + 1, False, first
    return n_steps, False, first


@njit_reduce
def basis(Wstar, W, U, L):
    """Orthonormal basis U (r, d) of span(W*, W) by Gram-Schmidt (twice, for stability), and
    the coordinates L (k + p, r) of the rows of [W*; W] in it. Returns r."""
    k, d = Wstar.shape
    p = W.shape[0]
    r = 0
    L[:] = 0.0
    for a in range(k + p):
        v = Wstar[a] if a < k else W[a - k]
        u = v.copy()
        for _ in range(2):
            for b in range(r):
                c = 0.0
                for i in range(d):
                    c += U[b, i] * u[i]
                for i in range(d):
                    u[i] -= c * U[b, i]
        norm = 0.0
        for i in range(d):
            norm += u[i] * u[i]
        norm = math.sqrt(norm)
        if norm > 1e-10:
            for i in range(d):
                U[r, i] = u[i] / norm
            r += 1
        for b in range(r):
            c = 0.0
            for i in range(d):
                c += U[b, i] * v[i]
            L[a, b] = c
    return r


@njit
def accumulate_reduced(Wstar, W, L, r, zeta, xi, act, tgt, loss, sqrt_noise, Gpar, C):
    """Gpar (p, k + p) += sum_b F^b zeta^b and C (p, p) += sum_b F^b F^b^T over the rows of zeta,
    the coordinates of the inputs in the basis of S (see :func:`reduced_steps`); L's rows are
    the coordinates of [W*; W]."""
    k = Wstar.shape[0]
    accumulate(L[k:], L[:k], zeta, r, xi, act, tgt, loss, sqrt_noise, Gpar, C)


@njit_reduce
def assemble_reduced(U, r, Gpar, C, Xi, G):
    """G (p, d) = Gpar U + chol(C) Xi_perp: the batch sum of F z, drawn in law (Xi: (p, d))."""
    p, d = G.shape
    chol = cholesky_shifted(C, 0.0)  # no shift: the exact factor of the PSD C (zero pivots kept)
    proj = np.empty(r)
    G[:] = 0.0
    for j in range(p):
        for c in range(r):
            g = Gpar[j, c]
            for i in range(d):
                G[j, i] += g * U[c, i]
    for m in range(p):
        x = Xi[m]
        for c in range(r):  # projection of x on S, removed below
            acc = 0.0
            for i in range(d):
                acc += U[c, i] * x[i]
            proj[c] = acc
        for j in range(m, p):
            lc = chol[j, m]
            if lc == 0.0:
                continue
            for i in range(d):
                G[j, i] += lc * x[i]
            for c in range(r):
                q = lc * proj[c]
                for i in range(d):
                    G[j, i] -= q * U[c, i]


@njit
def reduced_steps(W, Wstar, zeta, xi, Xi, n_b, act, tgt, loss, algorithm, gamma, sqrt_noise, eta,
                  stop_at_recovery, G):
    """len(zeta) // n_b SGD steps in place, drawing each step's gradient in law.

    For the current S = span(W*, W) with orthonormal basis U (r rows), an input is
    z = U^T zeta + z_perp with zeta ~ N(0, I_r) and z_perp independent of it. The
    fields, hence the factors F_j, depend on zeta only, and given the batch's zetas
    sum_b F_j^b z_perp^b is Gaussian in the complement of S with covariance
    C_jl = sum_b F_j^b F_l^b. So the step's sum_b F^b z^b equals in law
    (sum_b F^b zeta^b) U + chol(C) Xi_perp, with Xi (p, d) standard normal projected
    on the complement. zeta: (steps * n_b, k + p) normals (columns beyond r unused);
    Xi: (steps * p, d) normals. Returns as :func:`full_steps`.
    """
    p, d = W.shape
    k = Wstar.shape[0]
    n_steps = zeta.shape[0] // n_b
    U = np.empty((k + p, d))
    L = np.empty((k + p, k + p))
    Gpar = np.empty((p, k + p))
    C = np.empty((p, p))
    first = -1
    for s in range(n_steps):
        r = basis(Wstar, W, U, L)
        Gpar[:] = 0.0
        C[:] = 0.0
        accumulate_reduced(Wstar, W, L, r, zeta[s * n_b:(s + 1) * n_b], xi[s * n_b:(s + 1) * n_b],
                           act, tgt, loss, sqrt_noise, Gpar, C)
        assemble_reduced(U, r, Gpar, C, Xi[s * p:(s + 1) * p], G)
        diverged, first = finish_step(W, Wstar, G, n_b, gamma, algorithm, eta, s, first)
        if diverged:
            return s, True, first
        if stop_at_recovery and first == s + 1:
            return s + 1, False, first
    return n_steps, False, first


@njit_reduce
def sample_term_moments(L, r, nodes, weights, noise_nodes, noise_weights, act, tgt, loss, sqrt_noise,
                        mean, cov):
    """Mean (3,) and covariance (3, 3) of one sample's terms v = (F zeta_1, F zeta_2, F^2) in the
    batch sums of :func:`reduced_steps` at p = k = 1, by Gauss-Hermite quadrature over
    zeta ~ N(0, I_r) and the label noise xi ~ N(0, 1) (``nodes``, ``weights``: probabilists'
    nodes and weights summing to 1; ``noise_nodes`` a single 0 without noise).

    nu = L[0, 0] zeta_1 and lambda = L[1] . zeta (rows of L: coordinates of w*, w in the basis of
    S, w* first); F = r sigma'(lambda) with r as in :func:`accumulate`. Exact for polynomial
    sigma and h* when 2 len(nodes) - 1 >= 4 deg F (and 3 noise nodes: F is linear in xi). With
    r = 1 (w = +-w*) the second coordinate does not exist and v_2 = 0."""
    n2 = nodes.shape[0] if r == 2 else 1
    second = np.zeros((3, 3))
    mean[:] = 0.0
    v = np.empty(3)
    for a in range(nodes.shape[0]):
        z1 = nodes[a]
        for b in range(n2):
            z2 = nodes[b] if r == 2 else 0.0
            w_ab = weights[a] * (weights[b] if r == 2 else 1.0)
            lam = L[1, 0] * z1 + (L[1, 1] * z2 if r == 2 else 0.0)
            base = value(tgt, L[0, 0] * z1)
            if loss == SQUARE:
                base -= value(act, lam)
            slope = derivative(act, lam)
            for c in range(noise_nodes.shape[0]):
                F = (base + sqrt_noise * noise_nodes[c]) * slope
                v[0], v[1], v[2] = F * z1, F * z2, F * F
                w = w_ab * noise_weights[c]
                for i in range(3):
                    mean[i] += w * v[i]
                    for j in range(3):
                        second[i, j] += w * v[i] * v[j]
    for i in range(3):
        for j in range(3):
            cov[i, j] = second[i, j] - mean[i] * mean[j]


@njit
def gaussian_steps(W, Wstar, normals, Xi, n_b, nodes, weights, noise_nodes, noise_weights, act, tgt,
                   loss, algorithm, gamma, sqrt_noise, eta, stop_at_recovery, G):
    """len(normals) SGD steps in place at p = k = 1, each step's batch sums drawn from their
    central-limit law (NOT exact: the sums' third and higher cumulants are dropped).

    :func:`reduced_steps` needs, per step, the sums over the batch of v = (F zeta_1, F zeta_2,
    F^2): the first two give the step inside S, the third the variance of the part orthogonal to
    S. Here they are n_b E[v] + sqrt(n_b) chol(Cov v) x with x = a row of ``normals`` (3 standard
    normals; moments by :func:`sample_term_moments` at the current overlap), the third clipped at 0;
    the orthogonal part is then drawn as there (``Xi``: (steps, d) normals). Mean and covariance
    of the step are those of SGD; the sums' skewness, of relative order n_b^-1/2, is not.
    Returns as :func:`full_steps`."""
    d = W.shape[1]
    U, L = np.empty((2, d)), np.empty((2, 2))
    mean, cov = np.empty(3), np.empty((3, 3))
    Gpar, C, sums = np.empty((1, 2)), np.empty((1, 1)), np.empty(3)
    root = math.sqrt(n_b)
    first = -1
    for s in range(normals.shape[0]):
        r = basis(Wstar, W, U, L)
        sample_term_moments(L, r, nodes, weights, noise_nodes, noise_weights, act, tgt, loss, sqrt_noise,
                            mean, cov)
        chol = cholesky_shifted(cov, 0.0)
        for i in range(3):
            acc = n_b * mean[i]
            for j in range(i + 1):
                acc += root * chol[i, j] * normals[s, j]
            sums[i] = acc
        Gpar[0, 0], Gpar[0, 1], C[0, 0] = sums[0], sums[1], max(sums[2], 0.0)
        assemble_reduced(U, r, Gpar, C, Xi[s:s + 1], G)
        diverged, first = finish_step(W, Wstar, G, n_b, gamma, algorithm, eta, s, first)
        if diverged:
            return s, True, first
        if stop_at_recovery and first == s + 1:
            return s + 1, False, first
    return normals.shape[0], False, first
