"""Activation functions and their Gaussian integrals.

For jointly Gaussian local fields x = (x_1, ..., x_n) with zero mean and
covariance C, the order-parameter ODEs of two-layer networks need four kinds of
averages (Saad & Solla 1995, PRE 52, 4225; Goldt et al. 2020, SM sec. B):

    I2(a, b)       = < g(x_a) g(x_b) >
    I3(a, b, c)    = < g'(x_a) x_b g(x_c) >
    I4(a, b, c, d) = < g'(x_a) g'(x_b) g(x_c) g(x_d) >
    J2(a, b)       = < g'(x_a) g'(x_b) >

Closed forms are implemented for

- ``"erf"``: g(x) = erf(x / sqrt 2) (Saad & Solla's sigmoid, on the scale
  where g'(0) = sqrt(2/pi)); all four integrals;
- ``"linear"``: g(x) = x; all four integrals (moments of a Gaussian);
- ``"relu"``: g(x) = max(x, 0); I2 (the arc-cosine kernel), I3 and J2 in closed
  form. I4 is a Gaussian orthant moment E[x_c x_d 1{x_a, x_b, x_c, x_d > 0}];
  repeated Gaussian integration by parts reduces it to orthant probabilities of
  up to four variables, all closed-form except the four-variable one, which is a
  one-dimensional integral (Plackett's identity) done by Gauss-Legendre
  quadrature to ~1e-12.

The integrals are numba functions taking the activation code (``ERF``,
``LINEAR``, ``RELU``), the covariance matrix and indices into it, so the ODE
kernels can call them in their inner loops.
"""

import math

import numpy as np

from ._jit import njit

ERF, LINEAR, RELU = 0, 1, 2
NAMES = ("erf", "linear", "relu")
_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def code(name):
    """Integer code of the activation called ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"g (activation) must be one of {NAMES}; got {name!r}")
    return NAMES.index(name)


# --- the functions themselves, element-wise -------------------------------------


@njit
def g(act, x):
    """Activation g(x) for the activation code ``act``."""
    if act == ERF:
        return math.erf(x / _SQRT2)
    if act == LINEAR:
        return x
    return x if x > 0.0 else 0.0


@njit
def dg(act, x):
    """Derivative g'(x) (for ReLU, the step function with g'(0) = 0)."""
    if act == ERF:
        return _SQRT_2_OVER_PI * math.exp(-0.5 * x * x)
    if act == LINEAR:
        return 1.0
    return 1.0 if x > 0.0 else 0.0


def apply(name, x):
    """Vectorised g(x) for an array ``x`` (convenience for plots and tests)."""
    act = code(name)
    return np.vectorize(lambda u: g(act, u), otypes=[float])(np.asarray(x, float))


def apply_derivative(name, x):
    """Vectorised g'(x) for an array ``x``."""
    act = code(name)
    return np.vectorize(lambda u: dg(act, u), otypes=[float])(np.asarray(x, float))


# --- Gaussian integrals ------------------------------------------------------------


@njit
def _clip_unit(x):
    return min(1.0, max(-1.0, x))


@njit
def _orthant2(c11, c12, c22):
    """P(x_1 > 0, x_2 > 0) for a centred bivariate Gaussian (Sheppard's formula)."""
    return 0.25 + math.asin(_clip_unit(c12 / math.sqrt(c11 * c22))) / (2.0 * math.pi)


@njit
def i2(act, C, a, b):
    """I2 = < g(x_a) g(x_b) >."""
    caa, cab, cbb = C[a, a], C[a, b], C[b, b]
    if act == ERF:
        return (2.0 / math.pi) * math.asin(cab / math.sqrt((1.0 + caa) * (1.0 + cbb)))
    if act == LINEAR:
        return cab
    # ReLU: arc-cosine kernel of degree one (Cho & Saul 2009).
    det = max(caa * cbb - cab * cab, 0.0)
    rho = _clip_unit(cab / math.sqrt(caa * cbb))
    return (math.sqrt(det) + cab * (math.pi - math.acos(rho))) / (2.0 * math.pi)


@njit
def i3(act, C, a, b, c):
    """I3 = < g'(x_a) x_b g(x_c) >."""
    caa, cab, cac, cbc, ccc = C[a, a], C[a, b], C[a, c], C[b, c], C[c, c]
    if act == ERF:
        lam3 = (1.0 + caa) * (1.0 + ccc) - cac * cac
        return (2.0 / math.pi) * (cbc * (1.0 + caa) - cab * cac) / ((1.0 + caa) * math.sqrt(lam3))
    if act == LINEAR:
        return cbc
    # ReLU, by Gaussian integration by parts over x_b:
    # <x_b h> = C_ba <d_a h> + C_bc <d_c h>, h = Theta(x_a) relu(x_c).
    det = max(caa * ccc - cac * cac, 0.0)
    boundary = cab * math.sqrt(det) / (2.0 * math.pi * caa)
    return boundary + cbc * _orthant2(caa, cac, ccc)


@njit
def i4(act, C, a, b, c, d):
    """I4 = < g'(x_a) g'(x_b) g(x_c) g(x_d) >."""
    if act == LINEAR:
        return C[c, d]
    if act == RELU:
        # g'(x) g(x) = g(x) and g(x)^2 = x^2 Theta(x): a moment over the orthant of
        # the distinct fields among a, b, c, d.
        idx = np.empty(4, np.int64)
        n = 0
        for u in (a, b, c, d):
            seen = False
            for q in range(n):
                seen = seen or idx[q] == u
            if not seen:
                idx[n] = u
                n += 1
        local = np.empty((n, n))  # work on the covariance of the distinct fields only
        for p in range(n):
            for q in range(n):
                local[p, q] = C[idx[p], idx[q]]
        lc = ld = 0
        for q in range(n):
            if idx[q] == c:
                lc = q
            if idx[q] == d:
                ld = q
        return _orthant_moment2(local, np.arange(n), lc, ld)
    # erf (Saad & Solla 1995, eq. (A8) in their notation, indices 1..4 = a, b, c, d).
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
    return (4.0 / (math.pi ** 2 * math.sqrt(lam4))) * math.asin(
        _clip_unit(lam0 / math.sqrt(lam1 * lam2)))


@njit
def j2(act, C, a, b):
    """J2 = < g'(x_a) g'(x_b) >."""
    caa, cab, cbb = C[a, a], C[a, b], C[b, b]
    if act == ERF:
        return (2.0 / math.pi) / math.sqrt((1.0 + caa) * (1.0 + cbb) - cab * cab)
    if act == LINEAR:
        return 1.0
    return _orthant2(caa, cab, cbb)


# --- Gaussian orthant moments (ReLU I4) ---------------------------------------------
#
# For centred Gaussian x with covariance C and a set S of indices, write
# P(S) = P(x_s > 0 for s in S), M1(S; j) = E[x_j 1_S] and M2(S; a, b) = E[x_a x_b 1_S]
# (j, a, b in S). Integration by parts, E[x_a h(x)] = sum_l C_al E[d_l h(x)], with
# d_l Theta(x_l) = delta(x_l), gives
#
#   M1(S; j)    = sum_{l in S} C_jl p_l(0) P(S - l | x_l = 0)
#   M2(S; a, b) = C_ab P(S) + sum_{l in S, l != b} C_al p_l(0) M1(S - l; b | x_l = 0)
#
# where p_l(0) = 1 / sqrt(2 pi C_ll) and "| x_l = 0" replaces C by its Schur
# complement (the conditional mean stays zero). Orthant probabilities of up to
# three variables are closed-form; four variables need one quadrature.

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)


@njit
def _condition(C, l):
    """Covariance of x given x_l = 0 (Schur complement; row and column l become 0)."""
    return C - np.outer(C[:, l], C[l, :]) / C[l, l]


@njit
def _without(idx, l):
    out = np.empty(len(idx) - 1, np.int64)
    q = 0
    for u in idx:
        if u != l:
            out[q] = u
            q += 1
    return out


@njit
def _density0(var):
    return 1.0 / math.sqrt(2.0 * math.pi * var)


@njit
def _orthant(C, idx):
    """P(x_s > 0 for s in idx), up to four variables."""
    n = len(idx)
    if n == 0:
        return 1.0
    if n == 1:
        return 0.5
    if n == 2:
        return _orthant2(C[idx[0], idx[0]], C[idx[0], idx[1]], C[idx[1], idx[1]])
    if n == 3:
        total = 0.125
        for p in range(3):
            for q in range(p + 1, 3):
                i, j = idx[p], idx[q]
                total += math.asin(_clip_unit(C[i, j] / math.sqrt(C[i, i] * C[j, j]))) / (4.0 * math.pi)
        return total
    return _orthant4(C, idx)


@njit
def _orthant4(C, idx):
    """Four-variable orthant probability by Plackett's identity.

    Along R(s) = I + s (R - I) from independent variables (P = 1/16) to the
    correlation matrix R, dP/d rho_ij = phi_2(0, 0; rho_ij) P(x_k, x_l > 0 | x_i = x_j = 0).
    With u = asin(s r_ij) each pair's term is a smooth integral over u in
    [0, asin r_ij], done by 24-point Gauss-Legendre quadrature.
    """
    R = np.empty((4, 4))
    for p in range(4):
        for q in range(4):
            R[p, q] = C[idx[p], idx[q]] / math.sqrt(C[idx[p], idx[p]] * C[idx[q], idx[q]])
    total = 1.0 / 16.0
    for i in range(4):
        for j in range(i + 1, 4):
            r = _clip_unit(R[i, j])
            if r == 0.0:
                continue
            k, l = [q for q in range(4) if q != i and q != j]
            half = 0.5 * math.asin(r)
            acc = 0.0
            for node, weight in zip(_GL_NODES, _GL_WEIGHTS):
                s = math.sin(half * (node + 1.0)) / r
                # covariance of (x_k, x_l) given x_i = x_j = 0 under R(s)
                a = s * R[i, j]
                det = 1.0 - a * a
                bki, bkj, bli, blj = s * R[k, i], s * R[k, j], s * R[l, i], s * R[l, j]
                ckk = 1.0 - (bki * bki - 2 * a * bki * bkj + bkj * bkj) / det
                cll = 1.0 - (bli * bli - 2 * a * bli * blj + blj * blj) / det
                ckl = s * R[k, l] - (bki * bli - a * (bki * blj + bkj * bli) + bkj * blj) / det
                acc += weight * _orthant2(ckk, ckl, cll)
            total += half * acc / (2.0 * math.pi)
    return total


@njit
def _orthant_moment1(C, idx, j):
    """E[x_j 1{x_s > 0 for s in idx}], j in idx."""
    total = 0.0
    for l in idx:
        if C[j, l] != 0.0:
            total += C[j, l] * _density0(C[l, l]) * _orthant(_condition(C, l), _without(idx, l))
    return total


@njit
def _orthant_moment2(C, idx, a, b):
    """E[x_a x_b 1{x_s > 0 for s in idx}], a and b in idx (a == b allowed)."""
    total = C[a, b] * _orthant(C, idx)
    for l in idx:
        if l != b and C[a, l] != 0.0:
            total += C[a, l] * _density0(C[l, l]) * _orthant_moment1(_condition(C, l), _without(idx, l), b)
    return total
