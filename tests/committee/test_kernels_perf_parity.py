"""The fast paths of the SGD kernels compute the same thing as the plain ones.

``sgd_steps`` sends a batch of ``BLAS_BATCH`` or more to ``sgd_steps_blas`` (matrix
products) and smaller ones to ``sgd_steps_loop`` (dot products). Given the same inputs
they do the same arithmetic except for the order of the sums, so they agree to
floating-point reassociation: each field is a sum of N = 300 products and each update
a sum of B terms, whose rounding differs by a few 1e-16 relative between orders;
over 60 steps at eta <= 0.5 (an update of relative size eta / sqrt N per step) such
differences are carried, not amplified, so 1e-12 relative on the weights leaves a
margin of ~100 over the measured 1e-14 and would still catch any real change of
the algorithm (one wrong term moves the weights by ~eta / N ~ 1e-3).
"""

import numpy as np
import pytest
from scipy.special import erf

from tsdyn.activations import code
from tsdyn.committee import _kernels

N, K, M, STEPS = 300, 3, 2, 60
RTOL = 1e-12  # reassociation only, see the module docstring


def _problem(batch, seed=0):
    rng = np.random.default_rng(seed)
    w_star = rng.standard_normal((M, N))
    w = rng.standard_normal((K, N))
    v, v_star = rng.uniform(0.5, 1.5, K), rng.uniform(0.5, 1.5, M)
    X = rng.standard_normal((STEPS * batch, N))
    zeta = rng.standard_normal(STEPS * batch)
    return w_star, w, v, v_star, X, zeta


def _run(kernel, batch, act, *, eta=0.5, sigma=0.1, kappa=0.05, train_v=True, seed=0):
    w_star, w, v, v_star, X, zeta = _problem(batch, seed)
    done = kernel(w, v, w_star, v_star, X, zeta, act, eta, 0.7 * eta, sigma, kappa, batch, train_v)
    return done, w, v


@pytest.mark.parametrize("batch", [1, 8, 64])
@pytest.mark.parametrize("g", ["erf", "linear", "relu"])
@pytest.mark.parametrize("train_v", [False, True])
def test_blas_path_equals_loop_path(batch, g, train_v):
    act = code(g)
    eta = 0.5 if g != "linear" else 0.2  # the linear SCM stays stable at K eta = 0.6
    done_l, w_l, v_l = _run(_kernels.sgd_steps_loop, batch, act, eta=eta, train_v=train_v)
    done_b, w_b, v_b = _run(_kernels.sgd_steps_blas, batch, act, eta=eta, train_v=train_v)
    done_d, w_d, v_d = _run(_kernels.sgd_steps, batch, act, eta=eta, train_v=train_v)
    assert done_l == done_b == done_d == STEPS
    np.testing.assert_allclose(w_b, w_l, rtol=RTOL, atol=RTOL * np.abs(w_l).max())
    np.testing.assert_allclose(v_b, v_l, rtol=RTOL)
    # the dispatcher is bit for bit the path it chose
    chosen = (w_b, v_b) if batch >= _kernels.BLAS_BATCH else (w_l, v_l)
    np.testing.assert_array_equal(w_d, chosen[0])
    np.testing.assert_array_equal(v_d, chosen[1])
    # and the weights moved (a kernel that did nothing would pass the comparisons above)
    assert np.abs(w_l - _problem(batch)[1]).max() > 1e-3


@pytest.mark.parametrize("batch", [8, 64])
def test_blas_path_matches_a_numpy_reference(batch):
    """Goldt et al. eqs. 2-3 written in NumPy, erf, label noise, weight decay, both layers."""
    w_star, w, v, v_star, X, zeta = _problem(batch, seed=1)
    eta, eta_v, sigma, kappa = 0.5, 0.35, 0.1, 0.05
    done, w_k, v_k = _run(_kernels.sgd_steps_blas, batch, code("erf"), eta=eta, sigma=sigma,
                          kappa=kappa, seed=1)
    g = lambda x: erf(x / np.sqrt(2))  # noqa: E731
    for s in range(STEPS):
        x = X[s * batch:(s + 1) * batch]
        lam, rho = x @ w.T / np.sqrt(N), x @ w_star.T / np.sqrt(N)
        delta = g(lam) @ v - g(rho) @ v_star - sigma * zeta[s * batch:(s + 1) * batch]
        dg = np.sqrt(2 / np.pi) * np.exp(-lam ** 2 / 2)
        grad_w = (dg * delta[:, None] * v).T @ x / batch
        grad_v = (g(lam) * delta[:, None]).mean(0)
        w = (1 - eta * kappa / N) * w - eta / np.sqrt(N) * grad_w
        v = v - eta_v / N * (grad_v + kappa * v)
    assert done == STEPS
    np.testing.assert_allclose(w_k, w, rtol=RTOL, atol=RTOL * np.abs(w).max())
    np.testing.assert_allclose(v_k, v, rtol=RTOL)


@pytest.mark.parametrize("batch", [1, 64])
def test_both_paths_stop_at_the_same_diverging_step(batch):
    """A linear SCM far beyond its stability limit: both stop at the same step, with
    the weights of the last finite step (a reassociation cannot move a blow-up of
    ~1e12 by a whole step)."""
    eta = 20.0 * batch
    done_l, w_l, _ = _run(_kernels.sgd_steps_loop, batch, code("linear"), eta=eta, sigma=0.0,
                          kappa=0.0, train_v=False)
    done_b, w_b, _ = _run(_kernels.sgd_steps_blas, batch, code("linear"), eta=eta, sigma=0.0,
                          kappa=0.0, train_v=False)
    assert 0 < done_l < STEPS and done_b == done_l
    np.testing.assert_allclose(w_b, w_l, rtol=1e-9)



def _sampler_state(K, M, seed):
    """A generic frame: LT lower triangular with a positive diagonal, X, and S = F F^T."""
    rng = np.random.default_rng(seed)
    LT = np.linalg.cholesky(np.eye(M) + 0.3 * np.ones((M, M)))
    X = 0.3 * rng.standard_normal((K, M))
    F = rng.standard_normal((K, K))
    return LT, X, 0.5 * F @ F.T / K + 0.1 * np.eye(K)


@pytest.mark.parametrize("g", ["erf", "linear", "relu"])
@pytest.mark.parametrize("train_v", [False, True])
def test_online_sampler_step_equals_the_batch_sampler_step_at_b1(g, train_v):
    """The sampler's B = 1 kernel and its general mini-batch kernel (Bartlett factor of a
    1 x 1 Wishart, i.e. sqrt(chi^2)) are two codings of the same transition: given the same
    draws they agree to reassociation. 2000 steps at eta = 0.5, N = 50 (updates of relative
    size eta / N per step, carried but not amplified): 1e-11 relative covers the measured
    ~1e-15 and is far below the 1e-2 that one wrong term would move the overlaps."""
    from tsdyn.committee import _sampler_kernels as sk

    K, M, N, steps = 3, 2, 50, 2000
    LT, X0, S0 = _sampler_state(K, M, 5)
    rng = np.random.default_rng(6)
    A = rng.standard_normal((steps, K + M))
    chi2 = rng.chisquare(N - K - M, size=(steps, 1))
    off = np.empty((steps, 0))
    zeta = rng.standard_normal((steps, 1))
    v_star = np.array([1.0, 0.7])
    eta = 0.5 if g != "linear" else 0.2
    outs = []
    for kernel in (sk.online_steps, sk.batch_steps):
        X, S, v = X0.copy(), S0.copy(), np.array([0.9, 1.1, 1.0])
        extra = (A, chi2, zeta) if kernel is sk.online_steps else (A, chi2, off, zeta)
        tail = (N, train_v) if kernel is sk.online_steps else (N, 1, train_v)
        done = kernel(X, S, LT, v, v_star, *extra, code(g), eta, 0.7 * eta, 0.1, 0.05, *tail)
        assert done == steps
        outs.append((X, S, v))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * np.abs(b).max())
    assert np.abs(outs[0][0] - X0).max() > 1e-2  # the overlaps moved
