"""Hermite coefficients against closed forms, information and leap exponents, bad input."""

import math

import numpy as np
import pytest
from scipy.special import erf

from tsdyn import largebatch as lb
from tsdyn.largebatch import functions

PHI0 = 1 / math.sqrt(2 * math.pi)
K_MAX = 10
# The issue asks for 1e-6; the quadrature's target accuracy is 1e-10 per moment, so
# 1e-8 is a check with two orders of magnitude to spare.
TOL = 1e-8


def he_at_zero(n):
    """He_n(0) = (-1)^(n/2) (n-1)!! for even n, 0 for odd n."""
    return 0.0 if n % 2 else (-1) ** (n // 2) * float(np.prod(np.arange(n - 1, 0, -2)))


def norm(k):
    return math.sqrt(math.factorial(k))


def relu_closed(k):
    # E[relu He_k] = He_{k-2}(0) phi(0) for k >= 2 (integrate x He_k phi by parts twice)
    return [PHI0, 0.5][k] if k < 2 else he_at_zero(k - 2) * PHI0 / norm(k)


def abs_closed(k):
    return 2 * relu_closed(k) - (k == 1)  # |x| = 2 relu(x) - x


def sign_closed(k):
    # E[sign He_k] = 2 He_{k-1}(0) phi(0) for k >= 1
    return 0.0 if k == 0 else 2 * he_at_zero(k - 1) * PHI0 / norm(k)


@pytest.mark.parametrize("j", range(7))
def test_hermite_polynomials_have_unit_coefficient(j):
    he = lambda x: lb.hermite_he(j, x)[j]
    c = lb.hermite_coefficients(he, K_MAX)
    expected = np.zeros(K_MAX + 1)
    expected[j] = norm(j)  # E[He_j He_j] / sqrt(j!) = sqrt(j!)
    np.testing.assert_allclose(c, expected, atol=TOL * norm(j))


@pytest.mark.parametrize("name, closed", [("relu", relu_closed), ("abs", abs_closed),
                                          ("sign", sign_closed)])
def test_kinked_functions_against_closed_forms(name, closed):
    c = lb.hermite_coefficients(functions.by_name(name), K_MAX)
    np.testing.assert_allclose(c, [closed(k) for k in range(K_MAX + 1)], rtol=0, atol=TOL)


def test_kink_away_from_the_breakpoints_is_found_by_bisection():
    """|x - 0.3| with no breakpoint there: same result as with the split (to 1e-8),
    and the shift formula c_1 = E[sign(x - 0.3)] = 1 - 2 Phi(0.3)."""
    f = lambda x: np.abs(x - 0.3)
    blind = lb.hermite_coefficients(f, 6, breakpoints=())
    split = lb.hermite_coefficients(f, 6, breakpoints=(0.3,))
    np.testing.assert_allclose(blind, split, atol=TOL)
    assert abs(blind[1] - (1 - 2 * (0.5 * (1 + erf(0.3 / math.sqrt(2)))))) < TOL


def test_scalar_only_callables_are_accepted():
    c = lb.hermite_coefficients(math.tanh, 5)
    np.testing.assert_allclose(c, lb.hermite_coefficients(np.tanh, 5), atol=1e-12)
    assert abs(c[0]) < TOL and abs(c[2]) < TOL  # odd function


TABLE = {"he2": 2, "he3": 3, "he4": 4, "relu": 1, "abs": 2, "tanh": 1, "sign": 1, "erf": 1,
         "square": 2, "linear": 1}


@pytest.mark.parametrize("name", TABLE)
def test_information_exponents(name):
    assert lb.information_exponent(functions.by_name(name)) == TABLE[name]


def test_parseval_for_a_smooth_target():
    """sum_k c_k^2 = E[f^2]: for tanh the tail beyond k = 25 is below 1e-6."""
    c = lb.hermite_coefficients(np.tanh, 25)
    second_moment = lb.hermite_coefficients(lambda x: np.tanh(x) ** 2, 0)[0]
    assert abs(np.sum(c ** 2) - second_moment) < 1e-6


@pytest.mark.parametrize("f, k, leap", [
    (lambda a, b: a * b, 2, 2),
    (lambda a, b: a + a * b, 2, 1),  # staircase
    (lambda a, b, c: a + a * b * c, 3, 2),
    (lambda a, b: (a * a - 1) + (a * a - 1) * (b ** 3 - 3 * b), 2, 3),
    (lambda a, b: a ** 3 - 3 * a + 0 * b, 2, 3),
])
def test_leap_exponents(f, k, leap):
    assert lb.leap_exponent(f, k) == leap


def test_leap_of_single_index_is_information_exponent():
    for name in ("he2", "he3", "relu", "abs"):
        f = functions.by_name(name)
        assert lb.leap_exponent(f, 1, degree=6) == lb.information_exponent(f)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # log of negatives, exp overflow: on purpose
@pytest.mark.parametrize("f, match", [
    (3.0, "must be callable"),
    (lambda x: np.log(x), "finite values"),
    (lambda x: np.exp(x ** 2), "finite values"),
    (lambda x: "a", "real number"),
])
def test_bad_targets(f, match):
    with pytest.raises(ValueError, match=match):
        lb.hermite_coefficients(f, 4)
    with pytest.raises(ValueError, match=match):
        lb.information_exponent(f)


def test_bad_orders_and_zero_targets():
    with pytest.raises(ValueError, match=r"k_max \(highest Hermite order\) must be an integer in \[0, 30\]; got -1"):
        lb.hermite_coefficients(np.tanh, -1)
    with pytest.raises(ValueError, match="no Hermite coefficient above"):
        lb.information_exponent(lambda x: np.ones_like(x))
    with pytest.raises(ValueError, match="tol"):
        lb.information_exponent(np.tanh, tol=0.0)


@pytest.mark.parametrize("name, closed", [("relu", relu_closed), ("abs", abs_closed), ("sign", sign_closed)])
def test_library_closed_forms(name, closed):
    """The library's closed forms (He_n(0) by the recursion) against the ones above ((n-1)!!)."""
    np.testing.assert_allclose(lb.closed_form_coefficients(name, K_MAX), [closed(k) for k in range(K_MAX + 1)],
                               atol=1e-15)
    with pytest.raises(ValueError, match="name must be one of"):
        lb.closed_form_coefficients("tanh", 4)
