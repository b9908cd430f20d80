"""Named one-dimensional functions used as student activations and targets.

Each name has an integer code so the numba kernels can evaluate it in their inner
loops (:func:`value`, :func:`derivative`), and a numpy version for the theory's
Gaussian quadrature (:func:`numpy_value`, :func:`numpy_derivative`). The Hermite
polynomials are normalised, ``"he3"`` is He_3(x) / sqrt(3!), so that a target has
E[h*(x)^2] = 1.

Targets of k > 1 directions (``Params.k``): a one-dimensional name g gives
h*(nu) = sum_r g(nu_r) / sqrt(k); ``"prod"`` is nu_1 nu_2 ... nu_k (leap exponent k)
and ``"staircase"`` is nu_1 + nu_1 nu_2 + ... + nu_1...nu_k, normalised (leap 1).

``"linear"`` and ``"relu"`` are :mod:`tsdyn.activations`' functions (called from
there). ``"erf"`` here is erf(x) itself, the paper's convention, and NOT
:mod:`tsdyn.activations`' ``"erf"``, which is erf(x / sqrt 2) (Saad & Solla's scale):
the two differ by the scale of x (c_1 = 2 / sqrt(3 pi) here, 1 / sqrt(pi) there).
"""

import math

import numpy as np

from .. import activations
from .._jit import njit

NAMES = ("linear", "he2", "he3", "he4", "square", "cube", "relu", "abs", "tanh", "sign", "erf")
MULTI_INDEX = ("prod", "staircase")
# Functions whose derivative vanishes almost everywhere cannot be a student activation.
NOT_ACTIVATIONS = ("sign",)
KINKS = {"relu": (0.0,), "abs": (0.0,), "sign": (0.0,)}
PROD, STAIRCASE = 100, 101
# Polynomial degree of the polynomial functions (None: not a polynomial); the theory
# chooses exact quadratures from it.
DEGREE = {"linear": 1, "he2": 2, "he3": 3, "he4": 4, "square": 2, "cube": 3}
_S2, _S6, _S24 = math.sqrt(2.0), math.sqrt(6.0), math.sqrt(24.0)


def activation_code(name):
    """Integer code of a student activation (any of :data:`NAMES` but ``"sign"``)."""
    allowed = tuple(n for n in NAMES if n not in NOT_ACTIVATIONS)
    if name not in allowed:
        raise ValueError(f"activation (student sigma) must be one of {allowed}; got {name!r}")
    return NAMES.index(name)


def target_code(name, k=1):
    """Integer code of a target: a name of :data:`NAMES`, or for k >= 2 one of :data:`MULTI_INDEX`."""
    if name in NAMES:
        return NAMES.index(name)
    if name in MULTI_INDEX and k >= 2:
        return PROD if name == "prod" else STAIRCASE
    allowed = NAMES + (MULTI_INDEX if k >= 2 else ())
    raise ValueError(f"target (h*) must be one of {allowed} for k={k}; got {name!r}")


@njit
def value(code, x):
    """The function with integer ``code`` at x."""
    if code == 0:
        return activations.g(activations.LINEAR, x)
    if code == 1:
        return (x * x - 1.0) / _S2
    if code == 2:
        return (x * x * x - 3.0 * x) / _S6
    if code == 3:
        x2 = x * x
        return (x2 * x2 - 6.0 * x2 + 3.0) / _S24
    if code == 4:
        return x * x
    if code == 5:
        return x * x * x
    if code == 6:
        return activations.g(activations.RELU, x)
    if code == 7:
        return abs(x)
    if code == 8:
        return math.tanh(x)
    if code == 9:
        return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
    return math.erf(x)


@njit
def derivative(code, x):
    """Derivative of the function with integer ``code`` at x (0 at a kink's point)."""
    if code == 0:
        return activations.dg(activations.LINEAR, x)
    if code == 1:
        return 2.0 * x / _S2
    if code == 2:
        return (3.0 * x * x - 3.0) / _S6
    if code == 3:
        return (4.0 * x * x * x - 12.0 * x) / _S24
    if code == 4:
        return 2.0 * x
    if code == 5:
        return 3.0 * x * x
    if code == 6:
        return activations.dg(activations.RELU, x)
    if code == 7:
        return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
    if code == 8:
        t = math.tanh(x)
        return 1.0 - t * t
    if code == 9:
        return 0.0
    return 2.0 / math.sqrt(math.pi) * math.exp(-x * x)


@njit
def target(code, nu):
    """h*(nu) for the k target fields nu (see module docstring)."""
    k = nu.shape[0]
    if code == PROD:
        out = 1.0
        for r in range(k):
            out *= nu[r]
        return out
    if code == STAIRCASE:
        out, term = 0.0, 1.0
        for r in range(k):
            term *= nu[r]
            out += term
        return out / math.sqrt(k)
    out = 0.0
    for r in range(k):
        out += value(code, nu[r])
    return out / math.sqrt(k)


def numpy_value(code, x):
    """Vectorised :func:`value` (for the theory's quadrature and for users)."""
    return _NUMPY[code][0](x)


def numpy_derivative(code, x):
    """Vectorised :func:`derivative`."""
    return _NUMPY[code][1](x)


def numpy_target(code, nu):
    """Vectorised :func:`target`; ``nu`` has shape (..., k)."""
    k = nu.shape[-1]
    if code == PROD:
        return np.prod(nu, axis=-1)
    if code == STAIRCASE:
        return np.cumprod(nu, axis=-1).sum(axis=-1) / math.sqrt(k)
    return _NUMPY[code][0](nu).sum(axis=-1) / math.sqrt(k)


def _erf(x):
    from scipy.special import erf
    return erf(x)


_NUMPY = {
    0: (lambda x: x, lambda x: np.ones_like(x)),
    1: (lambda x: (x * x - 1.0) / _S2, lambda x: 2.0 * x / _S2),
    2: (lambda x: (x ** 3 - 3.0 * x) / _S6, lambda x: (3.0 * x * x - 3.0) / _S6),
    3: (lambda x: (x ** 4 - 6.0 * x * x + 3.0) / _S24, lambda x: (4.0 * x ** 3 - 12.0 * x) / _S24),
    4: (lambda x: x * x, lambda x: 2.0 * x),
    5: (lambda x: x ** 3, lambda x: 3.0 * x * x),
    6: (lambda x: np.maximum(x, 0.0), lambda x: (x > 0).astype(float)),
    7: (np.abs, np.sign),
    8: (np.tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    9: (np.sign, np.zeros_like),
    10: (_erf, lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x)),
}


def by_name(name):
    """The numpy function called ``name`` (one of :data:`NAMES`), for Hermite tables."""
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES}; got {name!r}")
    return _NUMPY[NAMES.index(name)][0]
