"""Mini-batch SGD of a two-layer student on a two-layer teacher, at finite N."""

import numpy as np

from .. import _seeds, _validate
from . import _kernels
from ._dataset import overlaps_dataset, times
from .params import Params, check_params
from .sampler import sample_overlaps

# Inputs are drawn in blocks of at most this many numbers (8 MB of float64).
_BLOCK_NUMBERS = 2 ** 20


def _streams(ss):
    """Four independent child seeds (teacher, student, inputs, label noise)."""
    return _seeds.children(ss, 4)


def initial_weights(params, seed):
    """Teacher (w*, shape (M, N)) and student (w, shape (K, N); v, shape (K,)) at t = 0.

    w* ~ N(0, w_star_std^2), w ~ N(0, w_init_std^2) entry-wise, v_k = v_init. The
    streams come from children of ``seed``, so the same seed gives the same
    networks whatever else is asked of the run.
    """
    teacher, student, _, _ = _streams(seed)
    w_star = np.random.default_rng(teacher).standard_normal((params.M, params.N)) * params.w_star_std
    w = np.random.default_rng(student).standard_normal((params.K, params.N)) * params.w_init_std
    v = np.full(params.K, float(params.v_init))
    return w_star, w, v


def simulate(params, t_max, *, seed, n_points=200, spacing="linear", method="network"):
    """Run mini-batch SGD (Goldt et al. eqs. 2-3, gradients averaged over the batch).

    Each step draws ``batch`` fresh inputs x ~ N(0, I_N) (one-pass / online SGD):

        w_k <- w_k - (eta / sqrt N) v_k (1/B) sum_b g'(lambda_k^b) Delta^b x^b - (eta kappa / N) w_k
        v_k <- v_k - (eta_v / N) [(1/B) sum_b g(lambda_k^b) Delta^b + kappa v_k]   (if trained)

    with Delta = phi(x) - y the error of the student on the noisy label.

    Parameters
    ----------
    params : Params
    t_max : float
        Length of the run in SGD steps / N (it uses batch * t_max * N samples).
    seed : int or numpy.random.SeedSequence
        Teacher, student initialisation, inputs and label noise are drawn from
        four independent children of this seed; a given seed gives bit-identical
        results, independent of ``n_points``.
    n_points : int
        Number of recording times (rounded to whole steps, duplicates dropped).
    spacing : {"linear", "log", "log+linear"}
        Recording times evenly spaced in t, log-spaced after t = 0, or the union of
        both (see :func:`tsdyn.committee._dataset.times`).
    method : {"network", "overlaps"}
        "network" trains the N-dimensional weights (the ground truth); "overlaps"
        draws the same process exactly in law on the overlaps at a cost per step
        independent of N (:func:`tsdyn.committee.sampler.sample_overlaps`).

    Returns
    -------
    xarray.Dataset
        ``eg`` (t), ``Q`` (t, k, k2), ``R`` (t, k, m), ``v`` (t, k), ``T`` (m, m2),
        ``diverged`` and ``t_diverged`` (inf if the run did not diverge; values after
        a divergence are NaN). ``eg`` is the exact generalisation error of the
        current weights, eq. (4), a function of the overlaps.
    """
    if method == "overlaps":
        return sample_overlaps(params, t_max, seed=seed, n_points=n_points, spacing=spacing)
    if method != "network":
        raise ValueError(f"method must be 'network' or 'overlaps'; got {method!r}")
    check_params(params)
    _validate.real("t_max", t_max, low=1.0 / params.N,
                   doc=f"length of the run in steps/N, at least one step (1/N = {1.0 / params.N:g})")
    _validate.integer("n_points", n_points, low=2, doc="number of recording times")
    ss = _seeds.seed_sequence(seed)
    w_star, w, v = initial_weights(params, ss)
    _, _, input_ss, noise_ss = _streams(ss)
    rng_x, rng_noise = np.random.default_rng(input_ss), np.random.default_rng(noise_ss)

    N, B = params.N, params.batch
    steps = np.unique(np.round(times(t_max, n_points, spacing) * N).astype(np.int64))
    n_rec = len(steps)
    R = np.full((n_rec, params.K, params.M), np.nan)
    Q = np.full((n_rec, params.K, params.K), np.nan)
    V = np.full((n_rec, params.K), np.nan)
    T = w_star @ w_star.T / N
    v_star = params.v_star_vector()
    steps_per_block = max(1, _BLOCK_NUMBERS // (B * N))
    buffer = np.empty((steps_per_block * B, N))
    zeta = np.empty(steps_per_block * B)
    step, t_diverged = 0, np.inf
    for r, target in enumerate(steps):
        while step < target and np.isinf(t_diverged):
            n = min(target - step, steps_per_block)
            X = rng_x.standard_normal(out=buffer[:n * B])
            z = rng_noise.standard_normal(out=zeta[:n * B])
            done = _kernels.sgd_steps(w, v, w_star, v_star, X, z, params.act, params.eta,
                                      params.eta_second, params.sigma, params.weight_decay,
                                      B, params.train_second_layer)
            step += done
            if done < n:
                t_diverged = (step + 1) / N
        if not np.isinf(t_diverged):
            break
        R[r], Q[r], V[r] = w @ w_star.T / N, w @ w.T / N, v
    return overlaps_dataset(params, steps / N, R, Q, V, T, t_diverged=t_diverged,
                            kind="simulation", attrs={"seed_entropy": str(ss.entropy),
                                                      "seed_spawn_key": str(ss.spawn_key)})


def simulate_point(*, seed, t_max, n_points=50, spacing="linear", method="network", **params):
    """:func:`simulate` with the :class:`Params` fields as keywords.

    This is the form :func:`tsdyn.sweep.run` calls, e.g.
    ``sweep.run(partial(simulate_point, N=500, M=2, K=2, t_max=50.0), {"eta": [0.1, 0.5]})``.
    Keep ``N`` and ``t_max`` fixed along a sweep (or record a fixed time axis with
    ``spacing``/``n_points``) so every point returns the same time axis.
    """
    return simulate(Params(**params), t_max, seed=seed, n_points=n_points, spacing=spacing,
                    method=method)
