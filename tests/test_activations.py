"""Closed-form Gaussian integrals against Monte Carlo on random covariance matrices."""

import numpy as np
import pytest
from scipy.special import erf

from tsdyn import activations as A

FUNCS = {
    "erf": (lambda u: erf(u / np.sqrt(2)), lambda u: np.sqrt(2 / np.pi) * np.exp(-u * u / 2)),
    "linear": (lambda u: u, lambda u: np.ones_like(u)),
    "relu": (lambda u: np.maximum(u, 0), lambda u: (u > 0).astype(float)),
}
N_MC = 1_000_000
# An MC mean of n samples has standard error s / sqrt(n): 5 of them leave a
# false-alarm chance below 1e-6 per comparison.
Z = 5.0


def random_covariance(rng, n=4):
    X = rng.standard_normal((n, n + 2))
    return X @ X.T / (n + 2) + 0.1 * np.eye(n)


def mc_check(exact, samples):
    se = samples.std() / np.sqrt(len(samples))
    assert abs(exact - samples.mean()) < Z * se + 1e-12, (exact, samples.mean(), se)


@pytest.mark.parametrize("name", A.NAMES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_integrals_match_monte_carlo(name, seed):
    rng = np.random.default_rng(seed)
    C = random_covariance(rng)
    x = np.linalg.cholesky(C) @ rng.standard_normal((4, N_MC))
    G, D = FUNCS[name]
    act = A.code(name)
    mc_check(A.i2(act, C, 0, 1), G(x[0]) * G(x[1]))
    mc_check(A.i2(act, C, 2, 2), G(x[2]) ** 2)
    mc_check(A.i3(act, C, 0, 1, 2), D(x[0]) * x[1] * G(x[2]))
    mc_check(A.i3(act, C, 1, 1, 1), D(x[1]) * x[1] * G(x[1]))
    mc_check(A.i3(act, C, 0, 3, 0), D(x[0]) * x[3] * G(x[0]))
    mc_check(A.j2(act, C, 0, 1), D(x[0]) * D(x[1]))
    mc_check(A.i4(act, C, 0, 1, 2, 3), D(x[0]) * D(x[1]) * G(x[2]) * G(x[3]))
    mc_check(A.i4(act, C, 0, 0, 1, 1), D(x[0]) ** 2 * G(x[1]) ** 2)
    mc_check(A.i4(act, C, 0, 1, 0, 1), D(x[0]) * D(x[1]) * G(x[0]) * G(x[1]))
    mc_check(A.i4(act, C, 0, 1, 2, 2), D(x[0]) * D(x[1]) * G(x[2]) ** 2)
    mc_check(A.i4(act, C, 3, 3, 3, 3), D(x[3]) ** 2 * G(x[3]) ** 2)


@pytest.mark.parametrize("name", A.NAMES)
def test_elementwise_functions(name):
    x = np.linspace(-3, 3, 13)
    G, D = FUNCS[name]
    np.testing.assert_allclose(A.apply(name, x), G(x), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(A.apply_derivative(name, x), D(x), rtol=1e-14, atol=1e-15)


def test_unknown_activation_is_rejected():
    with pytest.raises(ValueError, match=r"g \(activation\) must be one of"):
        A.code("tanh")


def test_four_variable_orthant_probability_known_values():
    """Independent: 1/16; equicorrelated rho = 1/2: 1/(d+1) = 1/5 (exact results);
    the 24-node quadrature of a smooth integrand is good to ~1e-12."""
    idx = np.arange(4)
    assert A._orthant4(np.eye(4), idx) == pytest.approx(1 / 16, abs=1e-14)
    assert A._orthant4(0.5 * np.eye(4) + 0.5, idx) == pytest.approx(1 / 5, abs=1e-12)
    # three variables through the closed form, four with one variable independent:
    # P4 = P3 / 2 exactly
    C = np.eye(4)
    C[:3, :3] = [[1.0, 0.3, -0.2], [0.3, 1.0, 0.6], [-0.2, 0.6, 1.0]]
    assert A._orthant4(C, idx) == pytest.approx(A._orthant(C, idx[:3]) / 2, abs=1e-12)
