"""Finite-N fluctuations of the overlaps: the ODE's drift plus a diffusion of strength N^(-1/2).

One SGD step of a batch of B fresh samples moves the overlaps theta = (R, Q, v) by
(1/N) xi, with xi the mean of B one-sample increments psi (:func:`increments`). Over a
time dt (N dt steps) the moves add up to a mean f(theta) dt, f the right-hand side of
the ODE (Goldt et al. 2020, eq. 9; :func:`tsdyn.committee.ode`), and a covariance
Sigma(theta) dt / N with

    Sigma(theta) = Cov(psi) / B,                                         (D1)

so at large N the overlaps follow the diffusion

    d theta = f(theta) dt + N^(-1/2) Sigma(theta)^(1/2) dW.              (D2)

This is the van Kampen / diffusion approximation of the Markov chain on the overlaps
(:mod:`tsdyn.committee.sampler`); the ODE is its N -> infinity limit. It keeps what the ODE
drops: the noise that SGD keeps injecting, which is what decides when a run leaves an
unstable fixed point such as the Saad-Solla plateau, and which way. It leaves out the
O(1/N) corrections to the drift and the O(N^(-1/2)) ones to Sigma (|x|^2 / N = 1 + O(N^(-1/2)),
and the products x^b . x^b' / N of two samples of a batch), so it is meant for B << N;
the exact sampler stays the reference at finite N. For the same reason it does not contain the
finite-N departure from the linear scaling rule at fixed eta / B, an O(1/N) shift of the mean
((B + 1) / N for the linear SCM, :func:`tsdyn.committee.rule_deviation_linear_scm`): with a
linear activation f is affine in the overlaps, so the diffusion's mean follows the ODE exactly.

Sigma has no closed form for erf units: its entries are Gaussian averages of products of
up to four activations with two fields and Delta^4 (the eta^4 term of Q's variance). It
is estimated from samples of psi (:func:`step_covariance`); the simulation of (D2)
(:func:`diffuse`) never forms it: each step draws a few psi and uses their centred,
Gaussian-weighted sum as the noise, whose covariance is Sigma dt / N exactly (Euler-Maruyama
in the noise, a Runge-Kutta step in the drift; see
:func:`tsdyn.committee._diffusion_kernels.em_steps`). A step costs the same at every N.
"""

import numpy as np

from .. import _seeds, _validate
from . import _diffusion_kernels
from ._dataset import overlaps_dataset, times
from .params import check_params
from .sampler import initial_overlaps
from .theory import _check_state, _pack, _unpack

# Random numbers drawn per block (per stream) in diffuse(), 2 MB of float64.
_BLOCK_NUMBERS = 2 ** 18


def _streams(ss):
    """Independent child seeds: field normals, label noise, noise weights (indices 20-22,
    apart from the sampler's 10-14 and the network's 0-3)."""
    return [_seeds.child(ss, 20 + i) for i in range(3)]


def _args(params, T):
    return (params.K, params.M, np.ascontiguousarray(T, float), params.v_star_vector())


def coordinates(params):
    """Names of the independent order parameters, in the order of :func:`step_covariance`:
    R (row-major), the upper triangle of Q, then v if the second layer is trained."""
    check_params(params)
    K, M = params.K, params.M
    names = [f"R[{k},{m}]" for k in range(K) for m in range(M)]
    names += [f"Q[{i},{k}]" for i in range(K) for k in range(i, K)]
    if params.train_second_layer:
        names += [f"v[{k}]" for k in range(K)]
    return names


def _selection(params):
    """Indices of :func:`coordinates` in the packed state (R, Q, v)."""
    K, M = params.K, params.M
    upper = [K * M + i * K + k for i in range(K) for k in range(i, K)]
    sel = list(range(K * M)) + upper
    if params.train_second_layer:
        sel += list(range(K * M + K * K, K * M + K * K + K))
    return np.array(sel)


def increments(params, Q, R, T, v, n_samples, *, seed):
    """``n_samples`` independent one-sample increments psi at the overlaps (Q, R, T, v).

    psi is the update of one sample per unit time as N -> infinity
    (:func:`tsdyn.committee._diffusion_kernels.increment`): E psi is the ODE's f without
    weight decay, Cov(psi) / B is Sigma of (D1). Returns (f, psi): f of shape (d,), psi of
    shape (n_samples, d), over the packed state (R, Q, v) of :func:`tsdyn.committee.ode`,
    d = K M + K^2 + K.
    """
    check_params(params)
    _validate.integer("n_samples", n_samples, low=2, doc="number of increments")
    Q, R, T, v = _check_state(params, Q, R, T, v)
    ss = _seeds.seed_sequence(seed)
    a_ss, noise_ss, _ = _streams(ss)
    A = np.random.default_rng(a_ss).standard_normal((n_samples, params.K + params.M))
    zeta = np.random.default_rng(noise_ss).standard_normal(n_samples)
    y = _pack(R, Q, v)
    psi = np.empty((n_samples, len(y)))
    f = _diffusion_kernels.moments(
        y, *_args(params, T), A, zeta, params.act, params.eta, params.eta_second, params.sigma,
        params.batch, params.weight_decay, params.train_second_layer, psi)
    return f, psi


def step_covariance(params, Q, R, T, v, *, n_samples=200_000, seed=0):
    """The diffusion matrix Sigma(theta) of (D2) at the overlaps (Q, R, T, v), with its error.

    Sigma = Cov(psi) / B (eq. D1), estimated from ``n_samples`` one-sample increments psi
    (:func:`increments`) over the independent order parameters (:func:`coordinates`).
    Per unit time, the overlaps of SGD at input dimension N then have covariance
    Sigma / N (for one step: Sigma / N^2). The mean of the same samples, ``mean``, is an
    independent check of the ODE's drift ``drift`` (closed form, Goldt et al. eq. 9; equal
    without weight decay).

    Returns
    -------
    dict
        ``names`` (d'), ``drift`` (d'), ``mean`` and ``mean_se`` (d'), ``Sigma`` and
        ``Sigma_se`` (d', d'): the estimate and the standard error of each entry (from the
        sample variance of the centred products).
    """
    f, psi = increments(params, Q, R, T, v, n_samples, seed=seed)
    sel = _selection(params)
    psi, f = psi[:, sel], f[sel]
    n, B = len(psi), params.batch
    c = psi - psi.mean(0)
    cov = c.T @ c / (n - 1)
    # standard error of each entry: the spread of the products c_i c_j over the samples
    cov_se = np.sqrt(np.maximum((c * c).T @ (c * c) / n - cov ** 2, 0.0) / n)
    return {"names": coordinates(params), "drift": f, "mean": psi.mean(0),
            "mean_se": psi.std(0, ddof=1) / np.sqrt(n), "Sigma": cov / B, "Sigma_se": cov_se / B}


def diffuse(params, t_max, *, seed, dt=0.05, n_noise=4, n_points=200, spacing="linear",
            Q0=None, R0=None, T=None, v0=None):
    """One path of the diffusion (D2) of the overlaps at input dimension ``params.N``.

    Euler-Maruyama in the noise and fourth-order Runge-Kutta in the drift, step ``dt``
    (steps/N); the noise of each step is built from
    ``n_noise`` one-sample increments (see the module docstring and
    :func:`tsdyn.committee._diffusion_kernels.em_steps`), so Sigma is never formed and a
    step costs the same at every N. By default the path starts from overlaps drawn with
    the law of random Gaussian weights at this N (:func:`tsdyn.committee.initial_overlaps`,
    the same draw as :func:`tsdyn.committee.sample_overlaps` with the same ``seed``, so a
    path and a sampled run can share their start); ``Q0``, ``R0``, ``T``, ``v0`` give
    another (all four, or none).

    Returns
    -------
    xarray.Dataset
        The variables of :func:`tsdyn.committee.simulate` (eg, Q, R, v, T, diverged,
        t_diverged) on the recording times, ``kind`` "diffusion"; attrs ``dt``, ``n_noise``.
    """
    check_params(params)
    _validate.real("t_max", t_max, low=0.0, low_open=True, doc="length of the path in steps/N")
    _validate.real("dt", dt, low=0.0, low_open=True, high=t_max,
                   doc="Euler-Maruyama step in steps/N, at most t_max")
    _validate.integer("n_noise", n_noise, low=1, doc="increments per step that make its noise")
    _validate.integer("n_points", n_points, low=2, doc="number of recording times")
    ss = _seeds.seed_sequence(seed)
    given = [x is not None for x in (Q0, R0, T, v0)]
    if any(given) and not all(given):
        raise ValueError("give all of Q0, R0, T, v0 or none of them")
    K, M = params.K, params.M
    if not any(given):
        G = initial_overlaps(params, ss)
        Q0, R0, T, v0 = G[:K, :K], G[:K, K:], G[K:, K:], params.v_init
    Q0, R0, T, v0 = _check_state(params, Q0, R0, T, v0)
    t_rec = times(t_max, n_points, spacing)
    steps = np.unique(np.round(t_rec / dt).astype(np.int64))
    a_ss, noise_ss, z_ss = _streams(ss)
    rng_a, rng_noise, rng_z = (np.random.default_rng(s) for s in (a_ss, noise_ss, z_ss))
    y = _pack(R0, Q0, v0)
    Y = np.full((len(steps), len(y)), np.nan)
    n_f = K + M
    per_block = max(1, _BLOCK_NUMBERS // (n_noise * n_f))
    zeta = np.zeros((per_block, n_noise))  # stays zero (and undrawn) without label noise
    step, t_diverged = 0, np.inf
    args = _args(params, T)
    for i, target in enumerate(steps):
        while step < target and np.isinf(t_diverged):
            m = min(target - step, per_block)
            A = rng_a.standard_normal((m, n_noise, n_f))
            if params.sigma > 0:
                rng_noise.standard_normal(out=zeta[:m])
            z = rng_z.standard_normal((m, n_noise))
            done = _diffusion_kernels.em_steps(
                y, *args, A, zeta[:m], z, params.act, params.eta, params.eta_second,
                params.sigma, params.batch, params.weight_decay, params.train_second_layer,
                params.N, dt)
            step += done
            if done < m:
                t_diverged = (step + 1) * dt
        if not np.isinf(t_diverged):
            break
        Y[i] = y
    R, Q, v = (np.stack(a) for a in zip(*(_unpack(params, row) for row in Y)))
    return overlaps_dataset(params, steps * dt, R, Q, v, T, t_diverged=t_diverged,
                            kind="diffusion",
                            attrs={"dt": dt, "n_noise": n_noise,
                                   "seed_entropy": str(ss.entropy),
                                   "seed_spawn_key": str(ss.spawn_key)})


# E[-ln|Z|] and the standard deviation and skewness of -ln|Z| for Z ~ N(0, 1): half the
# mean, root-variance and minus the skewness of ln chi^2_1 (digamma and polygamma at 1/2).
LOG_GAUSS_MEAN = 0.5 * (np.euler_gamma + np.log(2.0))  # 0.6352
LOG_GAUSS_STD = np.pi / (2.0 * np.sqrt(2.0))  # 1.1107
# skewness 14 zeta(3) / psi'(1/2)^(3/2) = 1.5351
LOG_GAUSS_SKEW = 14.0 * 1.2020569031595942 / (np.pi ** 2 / 2.0) ** 1.5


def linear_escape_cdf(t, lambda_max, t_mean):
    """The law of the escape time from a plateau with one unstable direction, at large N.

    On the plateau the amplitude u of the unstable mode (rate ``lambda_max``, the largest
    eigenvalue of the ODE's Jacobian there, :func:`tsdyn.committee.plateau`) follows the
    linearised diffusion (D2), du = lambda u dt + N^(-1/2) s dW, from a start of order
    N^(-1/2) (the random initial weights). Then e^(-lambda t) u(t) tends to N^(-1/2) a Z,
    Z ~ N(0, 1), a^2 the variance of the start plus s^2 / (2 lambda), and the run leaves
    the plateau when |u| reaches a fixed level:

        t_esc = t_0 + ln(N) / (2 lambda) - ln|Z| / lambda,                  (D3)

    so its mean grows by 1 / (2 lambda) per unit of ln N while its spread and shape do not
    depend on N: standard deviation pi / (2 sqrt 2 lambda) = 1.111 / lambda, skewness 1.535,
    a long tail of late escapes (runs whose start and early noise nearly cancel). The
    location is not given by the linear theory (it depends on the level and on the
    approach to the plateau); it is passed as the mean ``t_mean``. Returns
    P(t_esc <= t) = 2 (1 - Phi(exp(-lambda (t - t_mean) - E[-ln|Z|]))).
    """
    from scipy.stats import norm

    _validate.real("lambda_max", lambda_max, low=0.0, low_open=True, doc="escape rate")
    x = -lambda_max * (np.asarray(t, float) - t_mean) - LOG_GAUSS_MEAN
    return 2.0 * norm.sf(np.exp(x))


def fastest_rate(params, Q, R, T, v):
    """The fastest relaxation rate of the ODE at the overlaps (Q, R, T, v): the largest modulus
    of an eigenvalue of the Jacobian of its right-hand side f (Goldt et al. eq. 9; central
    differences, step 1e-6, over the packed state (R, Q, v)).

    It bounds the step of :func:`diffuse`: a step dt resolves the fastest mode when
    lambda_fast dt is well below 1, and the fourth-order Runge-Kutta drift is stable up to
    lambda_fast dt ~ 2.8 (for a real eigenvalue); the Euler-Maruyama noise of such a mode has a
    stationary variance too large by a relative O(lambda_fast dt). The overlaps need not form
    an exactly positive semi-definite Gram matrix (a diffusion path's are so only up to its
    O(dt) discretisation; a switched-off unit has Q_kk near 0), so only their shapes are checked.
    """
    check_params(params)
    K, M = params.K, params.M
    Q, R, T = (np.asarray(a, float) for a in (Q, R, T))
    v = np.broadcast_to(np.asarray(v, float), (K,)).copy()
    if Q.shape != (K, K) or R.shape != (K, M) or T.shape != (M, M):
        raise ValueError(f"Q, R, T must have shapes {(K, K)}, {(K, M)}, {(M, M)}; got {Q.shape}, "
                         f"{R.shape}, {T.shape}")
    args = _args(params, T) + (params.act, params.eta, params.eta_second, params.sigma,
                                params.batch, params.weight_decay, params.train_second_layer)
    y = _pack(R, Q, v)
    n, h = len(y), 1e-6
    J = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        J[:, i] = (_diffusion_kernels._rhs(y + e, *args) - _diffusion_kernels._rhs(y - e, *args)) / (2 * h)
    return float(np.max(np.abs(np.linalg.eigvals(J))))
