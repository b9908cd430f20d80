"""Numba kernels of the committee machine: arithmetic only, no checks, no RNG objects."""

import math

import numpy as np

from .._jit import njit, njit_reduce
from ..activations import dg, g, i2, i3, i4, j2

# A local field or error above this is treated as a blow-up of the run.
DIVERGENCE_THRESHOLD = 1e12

# From this batch size on, sgd_steps does the batch's products as BLAS matrix products
# (K = M = 4, N = 784: BLAS/loop time 1.9 at B = 2, 1.0 at B = 4, 0.7 at B = 8 and 16).
BLAS_BATCH = 8


@njit
def second_layer_step(v, lam, delta, act, eta_v, kappa, N, batch):
    """Second-layer SGD step in place (Goldt et al. eq. 3), shared by both simulations:

        v_k <- v_k - (eta_v / N) [(1/B) sum_b g(lambda_k^b) Delta^b + kappa v_k],

    with lam (K, B) the students' local fields and delta (B,) the errors of the batch.
    """
    for k in range(v.shape[0]):
        grad = 0.0
        for b in range(batch):
            grad += g(act, lam[k, b]) * delta[b]
        v[k] -= eta_v / N * (grad / batch + kappa * v[k])


@njit_reduce
def sgd_steps(w, v, w_star, v_star, X, zeta, act, eta, eta_v, sigma, kappa, batch, train_v):
    """Run len(X) // batch mini-batch SGD steps in place (Goldt et al. eqs. 2-3).

    w (K, N) and v (K,) are updated in place. X (steps * batch, N) holds the
    inputs and zeta (steps * batch,) the label noise, drawn by the caller. Returns
    the number of steps completed: less than len(X) // batch if a step produced a
    non-finite or huge error (the run diverged). Below ``BLAS_BATCH`` the work goes
    to :func:`sgd_steps_loop` (dot products in the loop), from it on to
    :func:`sgd_steps_blas` (the same algorithm with matrix products).
    """
    if batch >= BLAS_BATCH:
        return sgd_steps_blas(w, v, w_star, v_star, X, zeta, act, eta, eta_v, sigma, kappa,
                              batch, train_v)
    return sgd_steps_loop(w, v, w_star, v_star, X, zeta, act, eta, eta_v, sigma, kappa,
                          batch, train_v)


@njit_reduce
def sgd_steps_loop(w, v, w_star, v_star, X, zeta, act, eta, eta_v, sigma, kappa, batch, train_v):
    """:func:`sgd_steps` sample by sample: K + M dot products and K axpys per sample."""
    K, N = w.shape
    M = w_star.shape[0]
    n_steps = X.shape[0] // batch
    inv_sqrt_n = 1.0 / math.sqrt(N)
    lam = np.empty((K, batch))
    delta = np.empty(batch)
    decay = 1.0 - eta * kappa / N
    for s in range(n_steps):
        for b in range(batch):
            x = X[s * batch + b]
            err = -sigma * zeta[s * batch + b]
            for k in range(K):
                acc = 0.0
                for j in range(N):
                    acc += w[k, j] * x[j]
                lam[k, b] = acc * inv_sqrt_n
                err += v[k] * g(act, lam[k, b])
            for m in range(M):
                acc = 0.0
                for j in range(N):
                    acc += w_star[m, j] * x[j]
                err -= v_star[m] * g(act, acc * inv_sqrt_n)
            if not abs(err) < DIVERGENCE_THRESHOLD:  # also catches nan
                return s
            delta[b] = err
        for k in range(K):
            if kappa != 0.0:
                for j in range(N):
                    w[k, j] *= decay
            for b in range(batch):
                coef = -eta * inv_sqrt_n * v[k] * dg(act, lam[k, b]) * delta[b] / batch
                x = X[s * batch + b]
                for j in range(N):
                    w[k, j] += coef * x[j]
        if train_v:
            second_layer_step(v, lam, delta, act, eta_v, kappa, N, batch)
    return n_steps


@njit_reduce
def sgd_steps_blas(w, v, w_star, v_star, X, zeta, act, eta, eta_v, sigma, kappa, batch, train_v):
    """:func:`sgd_steps` with the batch's products as BLAS matrix products.

    Per step, the fields of the batch are one (B, N) x (N, K + M) product and the
    first-layer update one (K, B) x (B, N) product, instead of B (K + M) dot products
    and B K axpys: the same arithmetic up to the order of the sums (reassociation).
    """
    K, N = w.shape
    M = w_star.shape[0]
    n_steps = X.shape[0] // batch
    inv_sqrt_n = 1.0 / math.sqrt(N)
    W = np.empty((K + M, N))  # [w; w*]: one product gives all K + M fields
    W[:K] = w
    W[K:] = w_star
    lam = np.empty((K, batch))
    delta = np.empty(batch)
    coef = np.empty((K, batch))
    decay = 1.0 - eta * kappa / N
    done = n_steps
    for s in range(n_steps):
        Xb = X[s * batch:(s + 1) * batch]
        fields = np.dot(Xb, W.T)  # (B, K + M), not yet scaled by 1/sqrt N
        diverged = False
        for b in range(batch):
            err = -sigma * zeta[s * batch + b]
            for k in range(K):
                lam[k, b] = fields[b, k] * inv_sqrt_n
                err += v[k] * g(act, lam[k, b])
            for m in range(M):
                err -= v_star[m] * g(act, fields[b, K + m] * inv_sqrt_n)
            if not abs(err) < DIVERGENCE_THRESHOLD:  # also catches nan
                diverged = True
                break
            delta[b] = err
        if diverged:
            done = s
            break
        for b in range(batch):
            for k in range(K):
                coef[k, b] = -eta * inv_sqrt_n * v[k] * dg(act, lam[k, b]) * delta[b] / batch
        step = np.dot(coef, Xb)  # (K, N): sum_b coef_kb x^b
        for k in range(K):
            for j in range(N):
                W[k, j] = decay * W[k, j] + step[k, j]
        if train_v:
            second_layer_step(v, lam, delta, act, eta_v, kappa, N, batch)
    w[:, :] = W[:K]
    return done


@njit
def field_covariance(R, Q, T):
    """Covariance of the local fields (lambda_1..K, rho_1..M): [[Q, R], [R^T, T]]."""
    K, M = R.shape
    C = np.empty((K + M, K + M))
    C[:K, :K] = Q
    C[:K, K:] = R
    C[K:, :K] = R.T
    C[K:, K:] = T
    return C


@njit
def generalisation_error(act, Q, R, T, v, v_star):
    """eps_g = 1/2 < (phi - phi*)^2 > as a quadratic form in I2 (Goldt et al. eq. 4)."""
    K = Q.shape[0]
    C = field_covariance(R, Q, T)
    n = C.shape[0]
    c = np.empty(n)
    c[:K] = v
    c[K:] = -v_star
    total = 0.0
    for a in range(n):
        for b in range(n):
            total += c[a] * c[b] * i2(act, C, a, b)
    return 0.5 * total


@njit
def ode_rhs(y, K, M, T, v_star, act, eta, eta_v, sigma2, batch, kappa, train_v, out):
    """Right-hand side of the order-parameter ODEs, written into ``out``.

    State y = (R (K, M), Q (K, K), v (K)) flattened. With Delta = sum_a c_a g(x_a),
    c = (v, -v*) over the K + M fields x = (lambda, rho) (Goldt et al. eq. 9; signs
    for Delta = student - teacher):

        dR_in/dt = -eta v_i <g'(l_i) rho_n Delta> - eta kappa R_in
        dQ_ik/dt = -eta v_i <g'(l_i) l_k Delta> - eta v_k <g'(l_k) l_i Delta>
                   + (eta^2 / B) v_i v_k (<g'(l_i) g'(l_k) Delta^2> + sigma^2 <g'(l_i) g'(l_k)>)
                   - 2 eta kappa Q_ik
        dv_i/dt  = -eta_v <g(l_i) Delta> - eta_v kappa v_i          (if train_v)

    The 1/B on the second-order terms is the mini-batch: the B gradients of a
    batch are independent, so the variance of their mean is 1/B of one gradient's,
    while the drift is unchanged.
    """
    KM = K * M
    R = y[:KM].reshape((K, M))
    Q = y[KM:KM + K * K].reshape((K, K))
    v = y[KM + K * K:]
    C = field_covariance(R, Q, T)
    n = K + M
    c = np.empty(n)
    c[:K] = v
    c[K:] = -v_star
    # A[i, b] = < g'(x_i) x_b Delta >
    A = np.zeros((K, n))
    for i in range(K):
        for b in range(n):
            acc = 0.0
            for a in range(n):
                acc += c[a] * i3(act, C, i, b, a)
            A[i, b] = acc
    dR = out[:KM].reshape((K, M))
    dQ = out[KM:KM + K * K].reshape((K, K))
    dv = out[KM + K * K:]
    for i in range(K):
        for m in range(M):
            dR[i, m] = -eta * v[i] * A[i, K + m] - eta * kappa * R[i, m]
    second = eta * eta / batch
    for i in range(K):
        for k in range(i, K):
            quad = 0.0
            for a in range(n):
                quad += c[a] * c[a] * i4(act, C, i, k, a, a)
                for b in range(a + 1, n):
                    quad += 2.0 * c[a] * c[b] * i4(act, C, i, k, a, b)
            val = (-eta * (v[i] * A[i, k] + v[k] * A[k, i])
                   + second * v[i] * v[k] * (quad + sigma2 * j2(act, C, i, k))
                   - 2.0 * eta * kappa * Q[i, k])
            dQ[i, k] = val
            dQ[k, i] = val
    for i in range(K):
        if train_v:
            acc = 0.0
            for a in range(n):
                acc += c[a] * i2(act, C, i, a)
            dv[i] = -eta_v * acc - eta_v * kappa * v[i]
        else:
            dv[i] = 0.0
    return out
