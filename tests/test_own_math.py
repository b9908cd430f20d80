"""Our own erf (tsdyn.activations.erf_g, erf_g_dg) against references over its whole range.

Tolerances are in ulp (units in the last place of the reference): the fits' truncation is
below 0.1 ulp (tsdyn._erf_fit), so what remains is the rounding of their evaluation in
double precision, a few ulp; a wrong coefficient or interval would be off by many orders
more. The kernels call the functions inlined in fast-math context (contracted multiply-adds),
so both contexts are measured.
"""

import math

import numba
import numpy as np
import pytest
from scipy.special import erf

from tsdyn import _erf_fit, activations


def _evaluate(fastmath):
    @numba.njit(fastmath={"reassoc", "contract"} if fastmath else False)
    def run(xs):
        g, d, g1 = np.empty_like(xs), np.empty_like(xs), np.empty_like(xs)
        for i in range(xs.size):
            g[i], d[i] = activations.erf_g_dg(xs[i])
            g1[i] = activations.erf_g(xs[i])
        return g, d, g1
    return run


def _ulp_error(value, ref):
    return np.abs(value - ref) / np.spacing(np.abs(ref))


def test_tables_are_the_derived_ones():
    small, dg_small, tail = _erf_fit.derive()
    assert activations._ERF_SMALL == tuple(small)
    assert activations._DG_SMALL == tuple(dg_small)
    np.testing.assert_array_equal(activations._ERF_TAIL, np.array(tail))


@pytest.mark.parametrize("fastmath", [False, True])
def test_erf_against_an_80_digit_reference(fastmath):
    rng = np.random.default_rng(0)
    # both regions densely, the interval ends of the tail table, and far out
    xs = np.concatenate([rng.uniform(-2, 2, 2500), rng.uniform(-9, 9, 1500),
                         np.arange(2.0, 8.51, 0.5), np.nextafter(np.arange(2.0, 8.51, 0.5), 0),
                         [1e-300, 5e-324, 1e-8, 12.0, 40.0]])
    xs = np.concatenate([xs, -xs])
    g, d, g1 = _evaluate(fastmath)(xs)
    ref = np.array([float(_erf_fit.reference(x)) for x in xs])
    err = _ulp_error(g, ref)
    assert err.max() <= 2.0, xs[err.argmax()]  # measured: 2 ulp at most, 0.4 on average
    assert err.mean() < 0.6
    assert np.max(_ulp_error(g1, ref)) <= 2.0
    # g' = sqrt(2/pi) exp(-x^2/2): within 4 ulp of the same expression in numpy where it is a
    # polynomial (|x| < 2), equal to it where it takes exp (x^2 rounds before exp in both)
    ref_d = np.sqrt(2 / np.pi) * np.exp(-0.5 * xs * xs)
    inner = np.abs(xs) < 2
    assert np.max(_ulp_error(d[inner], ref_d[inner])) <= 4.0
    np.testing.assert_allclose(d[~inner], ref_d[~inner], rtol=4e-16, atol=0)


def test_erf_against_scipy_and_math_over_the_whole_range():
    """A dense grid, every double's neighbourhood from 1e-300 to beyond 8.5, against scipy's
    erf and math.erf of x / sqrt 2 (whose own argument rounding adds up to ~1 ulp)."""
    xs = np.concatenate([np.linspace(-10, 10, 200_001), np.geomspace(1e-300, 10, 20_001)])
    g, _, _ = _evaluate(False)(xs)
    for ref in (erf(xs / np.sqrt(2)), np.array([math.erf(x / math.sqrt(2)) for x in xs])):
        nonzero = ref != 0
        assert np.max(_ulp_error(g[nonzero], ref[nonzero])) <= 4.0
    assert np.all(g[np.abs(xs) >= 8.5] == np.sign(xs[np.abs(xs) >= 8.5]))


def test_erf_special_values():
    xs = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
    g, d, g1 = _evaluate(False)(xs)
    assert np.isnan(g[0]) and np.isnan(d[0]) and np.isnan(g1[0])
    np.testing.assert_array_equal(g[1:], [1.0, -1.0, 0.0, -0.0])
    np.testing.assert_array_equal(d[1:3], [0.0, 0.0])
    np.testing.assert_allclose(d[3:], np.sqrt(2 / np.pi), rtol=2.3e-16, atol=0)  # 1 ulp


def test_g_fit_dispatches_like_g():
    @numba.njit
    def both(act, xs):
        out = np.empty((4, xs.size))
        for i in range(xs.size):
            out[0, i] = activations.g_fit(act, xs[i])
            out[1, i], out[2, i] = activations.g_dg_fit(act, xs[i])
            out[3, i] = activations.dg(act, xs[i])
        return out
    xs = np.linspace(-3, 3, 101)
    for name in ("linear", "relu"):
        out = both(activations.code(name), xs)
        np.testing.assert_array_equal(out[0], activations.apply(name, xs))
        np.testing.assert_array_equal(out[1], out[0])
        np.testing.assert_array_equal(out[2], out[3])
    out = both(activations.code("erf"), xs)
    np.testing.assert_allclose(out[0], erf(xs / np.sqrt(2)), rtol=5e-16, atol=0)

