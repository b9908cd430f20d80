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
- ``"relu"``: g(x) = max(x, 0); I2 (the arc-cosine kernel), I3 (by Gaussian
  integration by parts) and J2 (a bivariate orthant probability). I4 for ReLU
  needs a four-dimensional orthant probability and is not implemented.

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
    """I4 = < g'(x_a) g'(x_b) g(x_c) g(x_d) > (erf and linear only)."""
    if act == LINEAR:
        return C[c, d]
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
