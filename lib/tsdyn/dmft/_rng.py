"""Counter-based random numbers for the DMFT effective samples (numba, no state).

The solver re-uses the same Monte Carlo samples at every fixed-point iteration (common
random numbers) but never stores their paths: each number is a pure function of
(key, index), recomputed when needed. ``index = (sample << 32) | time step``, so a
sample's noise path does not depend on the grid length, the chunk it is processed in,
or the order of evaluation: the same seed gives bit-identical samples.

* :func:`uniform`: the ``index``-th output of a SplitMix64 sequence started at ``key``
  (Steele, Lea, Flood 2014: state += golden gamma, then a 64-bit finaliser), 53 random
  bits in (0, 1).
* :func:`normal`: a standard normal by the ziggurat method (Marsaglia and Tsang 2000,
  256 layers): one 64-bit word gives the layer, the sign and the abscissa; the ~1.5% of
  draws that fall in a wedge or the tail continue a SplitMix64 stream seeded with that
  word. The layer table is computed below from the defining recursion.
"""

import math

import numpy as np

from .._jit import njit

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11, _S8, _S32 = (np.uint64(s) for s in (30, 27, 31, 11, 8, 32))
_ONE = np.uint64(1)
_MASK8 = np.uint64(255)
_TWO53 = 1.0 / 9007199254740992.0


def _ziggurat_table(n=256, r=3.6541528853610088, v=0.00492867323399):
    """Layer edges x_0 > x_1 = r > ... > x_n = 0 of the ziggurat under f(x) = exp(-x^2/2).

    Every layer (rectangle i of width x_i between heights f(x_i) and f(x_{i+1}); layer 0
    is the base strip plus the tail beyond r, of pseudo-width x_0 = v/f(r)) has area v:
    x_{i+1} = sqrt(-2 ln(v/x_i + f(x_i))).
    """
    x = np.zeros(n + 1)
    x[0] = v / math.exp(-0.5 * r * r)
    x[1] = r
    for i in range(1, n - 1):
        x[i + 1] = math.sqrt(-2.0 * math.log(v / x[i] + math.exp(-0.5 * x[i] * x[i])))
    return x, np.exp(-0.5 * x * x)


ZIG_X, ZIG_F = _ziggurat_table()
ZIG_R = float(ZIG_X[1])


@njit(inline="always")
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always")
def _to_unit(z):
    """Top 53 bits of z as a float in (0, 1)."""
    return ((z >> _S11) + 0.5) * _TWO53


@njit(inline="always")
def uniform(key, index):
    """Uniform in (0, 1): the index-th SplitMix64 output of the sequence seeded by key."""
    return _to_unit(_mix(key + (index + _ONE) * _GAMMA))


@njit
def _normal_slow(z, i, x):
    """Wedge or tail of the ziggurat (rare): continue a SplitMix64 stream seeded with z."""
    state = z
    while True:
        if i == 0:  # tail beyond r (Marsaglia 1964)
            while True:
                state += _GAMMA
                u1 = _to_unit(_mix(state))
                state += _GAMMA
                u2 = _to_unit(_mix(state))
                t = -math.log(u1) / ZIG_R
                if -2.0 * math.log(u2) > t * t:
                    return ZIG_R + t
        state += _GAMMA
        u = _to_unit(_mix(state))
        if ZIG_F[i] + u * (ZIG_F[i + 1] - ZIG_F[i]) < math.exp(-0.5 * x * x):
            return x
        # rejected: a fresh draw of layer and abscissa from the stream
        state += _GAMMA
        w = _mix(state)
        i = int(w & _MASK8)
        x = _to_unit(w) * ZIG_X[i]
        if x < ZIG_X[i + 1]:
            return x


@njit(inline="always")
def normal(key, index):
    """Standard normal, a pure function of (key, index) (ziggurat, see module docstring)."""
    z = _mix(key + (index + _ONE) * _GAMMA)
    i = int(z & _MASK8)
    sign = 1.0 if (z >> _S8) & _ONE else -1.0
    x = _to_unit(z) * ZIG_X[i]
    if x < ZIG_X[i + 1]:
        return sign * x
    return sign * _normal_slow(z, i, x)


@njit
def fill_normals(key, first, out):
    """out[j] = normal(key, first + j) (for tests of the distribution)."""
    for j in range(out.shape[0]):
        out[j] = normal(key, np.uint64(first + j))
