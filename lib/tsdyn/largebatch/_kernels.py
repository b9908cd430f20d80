"""Numba kernels of large-batch one-pass SGD: arithmetic only, no checks, no RNG objects.

Two ways of drawing the same step (see :mod:`tsdyn.largebatch.simulate`):

- ``full``: the n_b inputs z in R^d are given (drawn by the caller in chunks); a
  step costs O(n_b d (p + k)).
- ``reduced``: only the projections of the inputs on S = span(W, W*) are drawn,
  and the component of the gradient orthogonal to S is drawn directly from its
  exact conditional law; a step costs O(n_b (p + k)^2 + d (p + k)^2).
"""

import math

import numpy as np

from .. import activations
from .._jit import njit, njit_reduce
from .._linalg import cholesky_shifted
from .functions import derivative, target, value

SQUARE, CORRELATION = 0, 1
PROJECTED, SPHERICAL = 0, 1


@njit
def residual_factors(lam, nu, xi_b, act, tgt, loss, sqrt_noise, F):
    """F_j = r sigma'(lambda_j) / p, minus the gradient of the loss w.r.t. the field lambda_j.

    r = y - f for the square loss (y - f)^2 / 2 and r = y for the correlation loss
    1 - y f; y = h*(nu) + sqrt(noise) xi. The SGD direction of unit j is F_j z.
    """
    p = lam.shape[0]
    y = target(tgt, nu) + sqrt_noise * xi_b
    r = y
    if loss == SQUARE:
        f = 0.0
        for j in range(p):
            f += value(act, lam[j])
        r = y - f / p
    for j in range(p):
        F[j] = r * derivative(act, lam[j]) / p


@njit_reduce
def accumulate(Wl, Wn, Z, n_cols, xi, act, tgt, loss, sqrt_noise, G, C):
    """The batch sums of one step, shared by both samplers (Arnaboldi et al., "Setting", g_j).

    For each row z of Z (its first ``n_cols`` entries) the fields are lambda = Wl z and
    nu = Wn z, the factors F = :func:`residual_factors`, and G (p, >= n_cols) += F z;
    C (p, p) += F F^T unless C is empty. Full sampler: Wl = W, Wn = W*, z in R^d. Reduced
    sampler: Wl, Wn = the coordinates of W, W* in the basis of S, z = zeta in R^r.
    """
    p, k = Wl.shape[0], Wn.shape[0]
    lam, nu, F = np.empty(p), np.empty(k), np.empty(p)
    with_C = C.shape[0] > 0
    for b in range(Z.shape[0]):
        z = Z[b]
        for j in range(p):
            acc = 0.0
            for i in range(n_cols):
                acc += Wl[j, i] * z[i]
            lam[j] = acc
        for r in range(k):
            acc = 0.0
            for i in range(n_cols):
                acc += Wn[r, i] * z[i]
            nu[r] = acc
        residual_factors(lam, nu, xi[b], act, tgt, loss, sqrt_noise, F)
        for j in range(p):
            c = F[j]
            for i in range(n_cols):
                G[j, i] += c * z[i]
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
        if not apply_step(W, G, 1.0 / n_b, gamma, algorithm):
            return s, True, first
        if first < 0 and overlap_norm(W, Wstar) >= eta:
            first = s + 1
            if stop_at_recovery:
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
        if not apply_step(W, G, 1.0 / n_b, gamma, algorithm):
            return s, True, first
        if first < 0 and overlap_norm(W, Wstar) >= eta:
            first = s + 1
            if stop_at_recovery:
                return s + 1, False, first
    return n_steps, False, first


# --- two-layer erf network on the overlaps (exact asymptotics section) ----------------------
#
# Student f = (1/p) sum_j g(lambda_j), target f* = (1/k) sum_r g(nu_r), g(x) = erf(x / sqrt 2)
# (tsdyn.activations' "erf"). The state is the Gram matrix Om of the p student rows (first)
# and the k teacher rows (students of unit norm, teachers orthonormal).


@njit
def erf_overlap_steps(Om, A, xi, chi2, off, n_b, p, gamma, sqrt_noise):
    """Projected SGD on the two-layer erf network, one step per row of ``chi2``, drawn in law on
    the overlaps Om (n, n), n = p + k, students first; updated in place.

    With L the Cholesky factor of Om (the coordinates of the n rows in an orthonormal basis E of
    their span), an input is z = E^T a + z_perp, a ~ N(0, I_n). The fields are h = L a, and the
    step's U_j = gamma (1/n_b) sum_nu c_j^nu z^nu, c_j = g'(lambda_j)(y - f)/p, has in-span
    coordinates gamma S_j (S_j = (1/n_b) sum_nu c_j^nu a^nu) and a perpendicular part whose Gram
    matrix is, given the batch, Wishart_p(d - n, C) with C = (1/n_b^2) sum_nu c^nu c^nu^T
    (drawn as F B B^T F^T, F F^T = C, B the Bartlett factor: diag sqrt(chi2), below it ``off``).
    Then <row_i, U_j> = gamma L_i . S_j, <U_j, U_l> = gamma^2 (S_j . S_l + perp_jl), and the
    projection divides each student row by its new norm. A: (steps * n_b, n) normals; xi:
    (steps * n_b,) label-noise normals; chi2: (steps, p) with d - n - i degrees of freedom in
    column i; off: (steps, p (p - 1) / 2) normals.
    """
    n = Om.shape[0]
    k = n - p
    h = np.empty(n)
    c = np.empty(p)
    S = np.empty((p, n))
    C = np.empty((p, p))
    B = np.zeros((p, p))
    FB = np.empty((p, p))
    perp = np.empty((p, p))
    V = np.empty((n, p))
    new = np.empty((n, n))
    for s in range(chi2.shape[0]):
        Lc = cholesky_shifted(Om, 0.0)
        S[:] = 0.0
        C[:] = 0.0
        for b in range(n_b):
            a = A[s * n_b + b]
            for i in range(n):
                acc = 0.0
                for m in range(i + 1):
                    acc += Lc[i, m] * a[m]
                h[i] = acc
            r = sqrt_noise * xi[s * n_b + b]
            for i in range(p, n):
                r += activations.g(activations.ERF, h[i]) / k
            for j in range(p):
                r -= activations.g(activations.ERF, h[j]) / p
            for j in range(p):
                c[j] = activations.dg(activations.ERF, h[j]) * r / p
            for j in range(p):
                for m in range(n):
                    S[j, m] += c[j] * a[m]
                for l in range(p):
                    C[j, l] += c[j] * c[l]
        for j in range(p):
            for m in range(n):
                S[j, m] /= n_b
            for l in range(p):
                C[j, l] /= n_b * n_b
        # perpendicular Gram F B B^T F^T
        F = cholesky_shifted(C, 0.0)
        t = 0
        for i in range(p):
            B[i, i] = math.sqrt(chi2[s, i])
            for j in range(i):
                B[i, j] = off[s, t]
                t += 1
        for i in range(p):
            for j in range(p):
                acc = 0.0
                for m in range(p):
                    acc += F[i, m] * B[m, j]
                FB[i, j] = acc
        for i in range(p):
            for j in range(p):
                acc = 0.0
                for m in range(p):
                    acc += FB[i, m] * FB[j, m]
                perp[i, j] = acc
        for i in range(n):
            for j in range(p):
                acc = 0.0
                for m in range(n):
                    acc += Lc[i, m] * S[j, m]
                V[i, j] = gamma * acc
        new[:] = Om
        for j in range(p):
            for l in range(p):
                uu = perp[j, l]
                for m in range(n):
                    uu += S[j, m] * S[l, m]
                new[j, l] = Om[j, l] + V[j, l] + V[l, j] + gamma * gamma * uu
            for r2 in range(p, n):
                new[j, r2] = Om[j, r2] + V[r2, j]
                new[r2, j] = new[j, r2]
        for j in range(p):
            if not (new[j, j] > 0.0 and new[j, j] < math.inf):
                return s, True
        for j in range(p):
            for l in range(n):
                scale = math.sqrt(new[j, j]) if l >= p else math.sqrt(new[j, j] * new[l, l])
                Om[j, l] = new[j, l] / scale
                Om[l, j] = Om[j, l]
    return chi2.shape[0], False


@njit
def erf_error_weights(p, n):
    """w_a = -1/p for the students, +1/k for the teachers: f* - f = sum_a w_a g(h_a)."""
    w = np.empty(n)
    for a in range(n):
        w[a] = -1.0 / p if a < p else 1.0 / (n - p)
    return w


@njit
def erf_test_error(Om, p):
    """eps_g = E[(f - f*)^2] / 2 = (1/2) sum_ab w_a w_b I2(a, b), closed form for erf."""
    n = Om.shape[0]
    w = erf_error_weights(p, n)
    out = 0.0
    for a in range(n):
        for b in range(n):
            out += w[a] * w[b] * activations.i2(activations.ERF, Om, a, b)
    return 0.5 * out


@njit
def erf_expected_map_steps(Om, n_steps, p, gamma, ratio, noise, drift, noise_term, square_drift, n_b):
    """``n_steps`` steps of the expected projected map on the overlaps Om (in place).

    Arnaboldi et al. (2024), "Exact low-dimensional asymptotic dynamics": with
    E1_ji = E[g'(h_j) h_i (f* - f)] (an I3 sum) and E2_jl = E[g'(h_j) g'(h_l) (f* - f)^2] + noise
    E[g'(h_j) g'(h_l)] (I4 and J2 sums, Saad & Solla's closed forms),
        dM_jr = (gamma/p) E1_j,p+r,
        dQ_jl = (gamma/p) (E1_jl + E1_lj)  +  (gamma/p)^2 (d/n_b) E2_jl,
    the first ("drift") and second ("noise") kept as flagged. ``square_drift`` adds the mean
    squared norm of the batch-mean gradient beyond its single-sample part, (gamma/p)^2 (1 - 1/n_b)
    E1_j^T Om^-1 E1_l (the vector E[c_j z] lies in the span and has overlaps E1_j / p with its rows;
    the paper's "off-diagonal I4" term, O(gamma^2), dropped in the limit). Then each row is renormalised:
    M'_jr = (M + dM)_jr / sqrt(1 + dQ_jj), Q'_jl = (Q + dQ)_jl / sqrt((1 + dQ_jj)(1 + dQ_ll)).
    Returns False if a norm left (0, inf)."""
    n = Om.shape[0]
    w = erf_error_weights(p, n)
    E1 = np.empty((p, n))
    new = np.empty((n, n))
    eta = gamma / p
    for _ in range(n_steps):
        new[:] = Om
        if drift or square_drift:
            for j in range(p):
                for i in range(n):
                    acc = 0.0
                    for a in range(n):
                        acc += w[a] * activations.i3(activations.ERF, Om, j, i, a)
                    E1[j, i] = acc
        if drift:
            for j in range(p):
                for l in range(p):
                    new[j, l] += eta * (E1[j, l] + E1[l, j])
                for r in range(p, n):
                    new[j, r] += eta * E1[j, r]
                    new[r, j] = new[j, r]
        if square_drift:
            X = np.linalg.solve(Om, np.ascontiguousarray(E1.T))  # (n, p): Om^-1 E1_l
            for j in range(p):
                for l in range(p):
                    acc = 0.0
                    for i in range(n):
                        acc += E1[j, i] * X[i, l]
                    new[j, l] += eta * eta * (1.0 - 1.0 / n_b) * acc
        if noise_term:
            for j in range(p):
                for l in range(p):
                    acc = noise * activations.j2(activations.ERF, Om, j, l)
                    for a in range(n):
                        for b in range(n):
                            acc += w[a] * w[b] * activations.i4(activations.ERF, Om, j, l, a, b)
                    new[j, l] += eta * eta * ratio * acc
        for j in range(p):
            if not (new[j, j] > 0.0 and new[j, j] < math.inf):
                return False
        for j in range(p):
            for l in range(n):
                scale = math.sqrt(new[j, j]) if l >= p else math.sqrt(new[j, j] * new[l, l])
                Om[j, l] = new[j, l] / scale
                Om[l, j] = Om[j, l]
    return True
