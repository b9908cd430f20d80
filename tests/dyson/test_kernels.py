"""The vectorised kernels compute the gradients of the loss: checked against finite differences."""

import numpy as np
import pytest

from tsdyn import dyson
from tsdyn.dyson import _kernels


def batch_loss(W2, A1, y, W3):
    """Plain-NumPy loss (2.6) of one model on samples (A1, y): mean of (y_hat - y)^2 / 2."""
    y_hat = np.tanh(A1 @ W2.T) @ W3
    return 0.5 * np.mean((y_hat - y) ** 2)


def fd_gradient(W2, A1, y, W3, h=1e-6):
    """Central finite differences of batch_loss in every element of W2."""
    G = np.empty_like(W2)
    for idx in np.ndindex(W2.shape):
        Wp, Wm = W2.copy(), W2.copy()
        Wp[idx] += h
        Wm[idx] -= h
        G[idx] = (batch_loss(Wp, A1, y, W3) - batch_loss(Wm, A1, y, W3)) / (2 * h)
    return G


@pytest.fixture(scope="module")
def net():
    return dyson.networks(dyson.Params(eps=0.1, sigma_w=1.5, n_train=64, n_test=8), seed=3, n_models=3)


def test_sgd_step_is_minus_eps_times_the_batch_gradient(net):
    """One kernel step with batch B moves W2 by -eps * gradient of the batch loss."""
    eps, B = 0.01, 5
    M = net["W2"].shape[0]
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 64, size=(M, 1, B), dtype=np.int32)
    W2 = net["W2"].copy()
    alive, div = np.ones(M, bool), np.full(M, -1, np.int64)
    _kernels.sgd_block(W2, net["A1_train"], net["y_train"], net["W3"], idx, eps, 1e6, alive, div, 0)
    for m in range(M):
        k = idx[m, 0]
        fd = fd_gradient(net["W2"][m], net["A1_train"][m, k], net["y_train"][m, k], net["W3"][m])
        step = (net["W2"][m] - W2[m]) / eps
        # central differences with h = 1e-6: truncation O(h^2 f''') ~ 1e-12, rounding
        # O(1e-16 / h) ~ 1e-10 relative to O(1) loss values
        np.testing.assert_allclose(step, fd, atol=1e-8, rtol=1e-6)
    assert alive.all() and (div == -1).all()


def test_full_batch_gradient_and_moments_of_delta_x(net):
    """gradient_moments: full-batch gradient against finite differences; mean and variance
    of the per-sample Delta^X = W Delta^T + Delta W^T (eq. 4.4) in a rotated basis against
    a direct NumPy computation."""
    W2, A1, y, W3 = net["W2"], net["A1_train"], net["y_train"], net["W3"]
    M, n2, n1 = W2.shape
    rng = np.random.default_rng(1)
    U = np.linalg.qr(rng.standard_normal((M, n2, n2)))[0]
    grad, mean, var, gg = _kernels.gradient_moments(W2, A1, y, W3, np.ascontiguousarray(U))
    for m in range(M):
        np.testing.assert_allclose(grad[m], fd_gradient(W2[m], A1[m], y[m], W3[m]), atol=1e-8, rtol=1e-6)
        phi = np.tanh(A1[m] @ W2[m].T)
        e = phi @ W3[m] - y[m]
        per_sample = (e[:, None] * W3[m] * (1 - phi ** 2))[:, :, None] * A1[m][:, None, :]  # (D, n2, n1)
        dX = W2[m] @ per_sample.transpose(0, 2, 1) + per_sample @ W2[m].T
        rot = U[m].T @ dX @ U[m]
        # same sums in another order: rounding only
        np.testing.assert_allclose(mean[m], rot.mean(axis=0), atol=1e-13, rtol=1e-9)
        np.testing.assert_allclose(var[m], rot.var(axis=0), atol=1e-13, rtol=1e-8)
        rg = np.einsum("li,dlj->dij", U[m], per_sample)  # U^T Delta per sample
        np.testing.assert_allclose(gg[m], np.mean(np.sum(rg ** 2, axis=2), axis=0), rtol=1e-10)


def test_divergence_bound_stops_a_model(net):
    """A model whose weights pass w_max (Frobenius norm) stops and reports the step; the others go on."""
    W2 = net["W2"].copy()
    W2[1] *= 50.0  # above the bound after any step
    M = W2.shape[0]
    idx = np.zeros((M, 10, 2), dtype=np.int32)
    alive, div = np.ones(M, bool), np.full(M, -1, np.int64)
    bound = 2.0 * np.sqrt((net["W2"] ** 2).sum(axis=(1, 2))).max()  # bound on |W2|_F
    _kernels.sgd_block(W2, net["A1_train"], net["y_train"], net["W3"], idx, 0.01, bound, alive, div, 100)
    assert list(alive) == [True, False, True]
    assert div[1] == 101 and div[0] == -1 and div[2] == -1
