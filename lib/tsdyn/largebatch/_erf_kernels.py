"""Numba kernels of the two-layer erf network under projected SGD (:mod:`.erf_committee`):
arithmetic only, no checks, no RNG objects.

Student f = (1/p) sum_j g(lambda_j), target f* = (1/k) sum_r g(nu_r), g(x) = erf(x / sqrt 2). The
state is the Gram matrix Om of the p student rows (first) and the k teacher rows (students of
unit norm, teachers orthonormal).

The simulation (:func:`erf_overlap_steps`) evaluates g and g' only. The theory
(:func:`erf_expected_map_steps`) needs Saad & Solla's (1995, PRE 52, 4225) closed forms of the
Gaussian averages I2, I3, I4 and J2 for this g. :mod:`tsdyn.activations` has them behind an
activation switch whose ReLU branch (orthant moments) makes every kernel that calls it take
~20 s to compile; the erf-only forms below compile in ~2 s and are pinned to
:mod:`tsdyn.activations`' to rounding by ``tests/largebatch/test_erf_committee.py``.
"""

import math

import numpy as np

from .. import activations
from .._jit import njit
from .._linalg import cholesky_shifted


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
def _clip_unit(x):
    return min(1.0, max(-1.0, x))


@njit
def erf_i2(C, a, b):
    """< g(x_a) g(x_b) > (Saad & Solla 1995)."""
    return (2.0 / math.pi) * math.asin(C[a, b] / math.sqrt((1.0 + C[a, a]) * (1.0 + C[b, b])))


@njit
def erf_i3(C, a, b, c):
    """< g'(x_a) x_b g(x_c) > (Saad & Solla 1995)."""
    caa, cab, cac, cbc, ccc = C[a, a], C[a, b], C[a, c], C[b, c], C[c, c]
    lam3 = (1.0 + caa) * (1.0 + ccc) - cac * cac
    return (2.0 / math.pi) * (cbc * (1.0 + caa) - cab * cac) / ((1.0 + caa) * math.sqrt(lam3))


@njit
def erf_i4(C, a, b, c, d):
    """< g'(x_a) g'(x_b) g(x_c) g(x_d) > (Saad & Solla 1995, eq. (A8))."""
    c11, c12, c13, c14 = C[a, a], C[a, b], C[a, c], C[a, d]
    c22, c23, c24 = C[b, b], C[b, c], C[b, d]
    c33, c34, c44 = C[c, c], C[c, d], C[d, d]
    lam4 = (1.0 + c11) * (1.0 + c22) - c12 * c12
    lam0 = (lam4 * c34 - c23 * c24 * (1.0 + c11) - c13 * c14 * (1.0 + c22)
            + c12 * c13 * c24 + c12 * c14 * c23)
    lam1 = (lam4 * (1.0 + c33) - c23 * c23 * (1.0 + c11) - c13 * c13 * (1.0 + c22)
            + 2.0 * c12 * c13 * c23)
    lam2 = (lam4 * (1.0 + c44) - c24 * c24 * (1.0 + c11) - c14 * c14 * (1.0 + c22)
            + 2.0 * c12 * c14 * c24)
    return (4.0 / (math.pi ** 2 * math.sqrt(lam4))) * math.asin(_clip_unit(lam0 / math.sqrt(lam1 * lam2)))


@njit
def erf_j2(C, a, b):
    """< g'(x_a) g'(x_b) >."""
    return (2.0 / math.pi) / math.sqrt((1.0 + C[a, a]) * (1.0 + C[b, b]) - C[a, b] * C[a, b])


@njit
def erf_error_weights(p, n):
    """w_a = -1/p for the students, +1/k for the teachers: f* - f = sum_a w_a g(h_a)."""
    w = np.empty(n)
    for a in range(n):
        w[a] = -1.0 / p if a < p else 1.0 / (n - p)
    return w


@njit
def erf_test_error(Om, p):
    """eps_g = E[(f - f*)^2] / 2 = (1/2) sum_ab w_a w_b I2(a, b)."""
    n = Om.shape[0]
    w = erf_error_weights(p, n)
    out = 0.0
    for a in range(n):
        for b in range(n):
            out += w[a] * w[b] * erf_i2(Om, a, b)
    return 0.5 * out


@njit
def _spd_solve(A, B):
    """X = A^-1 B for a symmetric positive definite A (Cholesky, plain loops)."""
    Lc = cholesky_shifted(A, 0.0)
    n, m = B.shape
    X = B.copy()
    for c in range(m):
        for i in range(n):
            acc = X[i, c]
            for k in range(i):
                acc -= Lc[i, k] * X[k, c]
            X[i, c] = acc / Lc[i, i]
        for i in range(n - 1, -1, -1):
            acc = X[i, c]
            for k in range(i + 1, n):
                acc -= Lc[k, i] * X[k, c]
            X[i, c] = acc / Lc[i, i]
    return X


@njit
def erf_expected_map_steps(Om, n_steps, p, gamma, ratio, noise, drift, noise_term, square_drift, n_b):
    """``n_steps`` steps of the expected projected map on the overlaps Om (in place).

    Arnaboldi et al. (2024), "Exact low-dimensional asymptotic dynamics": with
    E1_ji = E[g'(h_j) h_i (f* - f)] (an I3 sum) and E2_jl = E[g'(h_j) g'(h_l) (f* - f)^2] + noise
    E[g'(h_j) g'(h_l)] (I4 and J2 sums),
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
                        acc += w[a] * erf_i3(Om, j, i, a)
                    E1[j, i] = acc
        if drift:
            for j in range(p):
                for l in range(p):
                    new[j, l] += eta * (E1[j, l] + E1[l, j])
                for r in range(p, n):
                    new[j, r] += eta * E1[j, r]
                    new[r, j] = new[j, r]
        if square_drift:
            X = _spd_solve(Om, np.ascontiguousarray(E1.T))  # (n, p): Om^-1 E1_l
            for j in range(p):
                for l in range(p):
                    acc = 0.0
                    for i in range(n):
                        acc += E1[j, i] * X[i, l]
                    new[j, l] += eta * eta * (1.0 - 1.0 / n_b) * acc
        if noise_term:
            for j in range(p):
                for l in range(p):
                    acc = noise * erf_j2(Om, j, l)
                    for a in range(n):
                        for b in range(n):
                            acc += w[a] * w[b] * erf_i4(Om, j, l, a, b)
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
