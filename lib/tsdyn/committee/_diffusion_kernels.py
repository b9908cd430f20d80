"""Numba kernels of the finite-N diffusion of the overlaps: arithmetic only, no checks, no RNG objects.

State y = (R (K, M), Q (K, K), v (K)) flattened, the layout of :func:`._kernels.ode_rhs`.
"""

import math

import numpy as np

from .._jit import njit
from ..activations import dg, g
from ._kernels import field_covariance, ode_rhs
from ._sampler_kernels import chol_psd

# The diffusion is stopped (and marked diverged) when an order parameter exceeds this
# (the ODE's own bound, theory._DIVERGENCE_BOUND).
DIVERGENCE_BOUND = 1e8


@njit
def increment(y, K, M, L, v_star, a, zeta, act, eta, eta_v, sigma, batch, train_v, work, out):
    """One sample's update psi of the overlaps, per unit time, as N -> infinity.

    With the fields (lambda, rho) = L a (L L^T = [[Q, R], [R^T, T]], a ~ N(0, I_{K+M}))
    and the error Delta = sum_k v_k g(lambda_k) - sum_m v*_m g(rho_m) - sigma zeta,

        psi_R[k, m] = -eta v_k g'(lambda_k) Delta rho_m,
        psi_Q[i, k] = -eta Delta (v_i g'(lambda_i) lambda_k + v_k g'(lambda_k) lambda_i)
                      + (eta^2 / B) v_i v_k g'(lambda_i) g'(lambda_k) Delta^2,
        psi_v[k]    = -eta_v g(lambda_k) Delta                       (if train_v, else 0).

    One SGD step of a batch of B samples moves the overlaps by (1/N) times the mean of
    B such psi (Goldt et al. eqs. 2-3 with w_k . x / N -> lambda_k, |x|^2 / N -> 1); its
    mean is the ODE's right-hand side without weight decay (Goldt et al. eq. 9).
    ``work`` (3, max(K, M)) is scratch space.
    """
    KM = K * M
    lam, gp, rho = work[0], work[1], work[2]
    err = -sigma * zeta
    for p in range(K + M):
        acc = 0.0
        for j in range(p + 1):
            acc += L[p, j] * a[j]
        if p < K:
            lam[p] = acc
            err += y[KM + K * K + p] * g(act, acc)
        else:
            rho[p - K] = acc
            err -= v_star[p - K] * g(act, acc)
    for k in range(K):
        gp[k] = y[KM + K * K + k] * dg(act, lam[k])  # v_k g'(lambda_k)
    second = eta * eta / batch * err * err
    for k in range(K):
        for m in range(M):
            out[k * M + m] = -eta * gp[k] * err * rho[m]
    for i in range(K):
        for k in range(i, K):
            val = -eta * err * (gp[i] * lam[k] + gp[k] * lam[i]) + second * gp[i] * gp[k]
            out[KM + i * K + k] = val
            out[KM + k * K + i] = val
    for k in range(K):
        out[KM + K * K + k] = -eta_v * g(act, lam[k]) * err if train_v else 0.0
    return out


@njit
def _undecayed(f, y, K, M, eta, eta_v, kappa, train_v):
    """The ODE's right-hand side f without the weight-decay terms: the mean of psi."""
    f0 = f.copy()
    n_rq = K * M + K * K
    for j in range(K * M):
        f0[j] += eta * kappa * y[j]
    for j in range(K * M, n_rq):
        f0[j] += 2.0 * eta * kappa * y[j]
    if train_v:
        for k in range(K):
            f0[n_rq + k] += eta_v * kappa * y[n_rq + k]
    return f0


@njit
def moments(y, K, M, T, v_star, A, zeta, act, eta, eta_v, sigma, batch, kappa, train_v, psi_out):
    """psi (:func:`increment`) for every row of A (rows a ~ N(0, I_{K+M})) and zeta; returns f.

    ``psi_out`` (n, len(y)) receives the samples; the return value is the ODE's
    right-hand side f at y (closed form, :func:`._kernels.ode_rhs`).
    """
    C = field_covariance(y[:K * M].reshape((K, M)), y[K * M:K * M + K * K].reshape((K, K)), T)
    L = np.zeros((K + M, K + M))
    chol_psd(C, L)
    work = np.empty((3, max(K, M)))
    for j in range(A.shape[0]):
        increment(y, K, M, L, v_star, A[j], zeta[j], act, eta, eta_v, sigma, batch, train_v,
                  work, psi_out[j])
    return ode_rhs(y, K, M, T, v_star, act, eta, eta_v, sigma * sigma, batch, kappa, train_v,
                   np.empty_like(y))


@njit
def _rhs(y, K, M, T, v_star, act, eta, eta_v, sigma, batch, kappa, train_v):
    return ode_rhs(y, K, M, T, v_star, act, eta, eta_v, sigma * sigma, batch, kappa, train_v,
                   np.empty_like(y))


@njit
def em_steps(y, K, M, T, v_star, A, zeta, z, act, eta, eta_v, sigma, batch, kappa, train_v, N, dt):
    """Run len(A) steps of the diffusion in place; return the steps completed.

    One step of length dt (steps/N), Euler-Maruyama in the noise and a fourth-order
    Runge-Kutta step in the drift:

        y <- RK4_f(y, dt) + sqrt(dt / (N B n)) sum_j (psi_j - f0(y)) z_j,

    f the ODE's right-hand side (Goldt et al. eq. 9), f0 = E psi the same without
    weight decay, psi_j (j < n) independent one-sample increments at y (:func:`increment`;
    fields from ``A[s, j]`` (K + M normals), label noise ``zeta[s, j]``) and z_j
    independent N(0, 1) (``z[s, j]``). Given the psi_j the noise is Gaussian with
    covariance (dt / (N B)) S, S = (1/n) sum_j (psi_j - f0)(psi_j - f0)^T, whose mean is
    Cov(psi) = B Sigma: the increment has mean f dt + O(dt^5) and covariance
    Sigma dt / N (weak order 1 in the noise). The Runge-Kutta drift keeps the
    discretisation error of the mean path at O(dt^4), far below the N^(-1/2) fluctuations
    that the diffusion is for (an Euler drift would leave an N-independent O(dt) bias).
    Fewer steps are completed if an order parameter leaves (-1e8, 1e8) or is not finite.
    """
    n_y = y.shape[0]
    n_noise = A.shape[1]
    KM = K * M
    psi = np.empty((n_noise, n_y))
    C = np.empty((K + M, K + M))
    L = np.zeros((K + M, K + M))
    work = np.empty((3, max(K, M)))
    amp = math.sqrt(dt / (N * batch * n_noise))
    args = (K, M, T, v_star, act, eta, eta_v, sigma, batch, kappa, train_v)
    for s in range(A.shape[0]):
        C[:, :] = field_covariance(y[:KM].reshape((K, M)), y[KM:KM + K * K].reshape((K, K)), T)
        chol_psd(C, L)
        k1 = _rhs(y, *args)
        f0 = _undecayed(k1, y, K, M, eta, eta_v, kappa, train_v)
        for j in range(n_noise):
            increment(y, K, M, L, v_star, A[s, j], zeta[s, j], act, eta, eta_v, sigma, batch,
                      train_v, work, psi[j])
        k2 = _rhs(y + 0.5 * dt * k1, *args)
        k3 = _rhs(y + 0.5 * dt * k2, *args)
        k4 = _rhs(y + dt * k3, *args)
        ok = True
        for i in range(n_y):
            noise = 0.0
            for j in range(n_noise):
                noise += (psi[j, i] - f0[i]) * z[s, j]
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) + amp * noise
            if not abs(y[i]) < DIVERGENCE_BOUND:  # also catches nan
                ok = False
        if not ok:
            return s
    return A.shape[0]
