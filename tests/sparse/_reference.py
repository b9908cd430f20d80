"""Plain-NumPy reference networks: the loss of eq. (2) computed from scratch, dense matrices."""

import numpy as np
from scipy.special import erf


def leaky(x, a):
    return np.where(x >= 0, x, a * x)


def loss_two_matrix(W_in, W_out, T_in, T_out, X, a):
    """1/2 sum over samples and outputs of (psi(W_out phi(W_in x)) - y)^2, X (N, m)."""
    y = leaky(T_out @ leaky(T_in @ X, a), a)
    out = leaky(W_out @ leaky(W_in @ X, a), a)
    return 0.5 * np.sum((out - y) ** 2)


def output_one_matrix(W, X, d):
    """Eq. (7)/(8): (1/N) sum_r erf((W^T x)_r / sqrt(2 d)), X (N, m) -> (m,)."""
    return erf((W.T @ X) / np.sqrt(2 * d)).mean(0)


def loss_one_matrix(W, T, X, d):
    return 0.5 * np.sum((output_one_matrix(W, X, d) - output_one_matrix(T, X, d)) ** 2)
