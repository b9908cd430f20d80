"""The named functions: numba and numpy versions agree, derivatives match finite differences."""

import math

import numpy as np
import pytest

from tsdyn import activations
from tsdyn.largebatch import functions

X = np.concatenate([np.linspace(-3.1, 3.1, 57), [-0.7, 0.3, 1.9]])


@pytest.mark.parametrize("name", functions.NAMES)
def test_numba_and_numpy_versions_agree(name):
    code = functions.NAMES.index(name)
    nb_v = np.array([functions.value(code, x) for x in X])
    nb_d = np.array([functions.derivative(code, x) for x in X])
    np.testing.assert_allclose(functions.numpy_value(code, X), nb_v, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(functions.numpy_derivative(code, X), nb_d, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name", functions.NAMES)
def test_derivative_is_the_finite_difference(name):
    """Central differences with h = 1e-5 (error h^2 f''' / 6 ~ 1e-9, rounding 1e-16 / h ~ 1e-11),
    away from the kinks at 0 (|x| >= 0.05 > h)."""
    code = functions.NAMES.index(name)
    x = X[np.abs(X) >= 0.05]
    h = 1e-5
    fd = (functions.numpy_value(code, x + h) - functions.numpy_value(code, x - h)) / (2 * h)
    np.testing.assert_allclose(functions.numpy_derivative(code, x), fd, rtol=1e-7, atol=1e-7)


def test_shared_functions_and_the_erf_convention():
    """linear and relu are tsdyn.activations' functions; erf here is erf(x), activations'
    erf is erf(x / sqrt 2) (documented in the module docstring)."""
    for x in X:
        assert functions.value(0, x) == activations.g(activations.LINEAR, x)
        assert functions.value(6, x) == activations.g(activations.RELU, x)
        assert functions.value(10, x) == pytest.approx(math.erf(x), abs=1e-15)
        assert functions.value(10, x) == pytest.approx(activations.g(activations.ERF, math.sqrt(2) * x),
                                                       abs=1e-15)


def test_targets_of_several_directions():
    nu = np.array([0.3, -1.2, 2.0])
    assert functions.target(functions.PROD, nu) == pytest.approx(np.prod(nu))
    assert functions.numpy_target(functions.STAIRCASE, nu[None]) == pytest.approx(
        (0.3 + 0.3 * -1.2 + 0.3 * -1.2 * 2.0) / math.sqrt(3))
    assert functions.target(1, nu) == pytest.approx(np.sum((nu ** 2 - 1) / math.sqrt(2)) / math.sqrt(3))
