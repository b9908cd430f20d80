"""Exact-in-law sampler of online / mini-batch SGD on the overlaps, at a cost independent of N.

Why it is exact. Stack the weights W = [w; w*] (K + M rows of length N) and let
G = W W^T / N = [[Q, R], [R^T, T]]. Take an orthonormal frame E (n x N, n = K + M)
whose span contains the rows of W; then W / sqrt N = L E for some n x n matrix L
with L L^T = G, and L can be taken to be the Cholesky factor (E is then fixed
by W). A fresh input x ~ N(0, I_N) splits into a = E x ~ N(0, I_n) and the part
x_perp orthogonal to span E, which is independent of a and isotropic in the
N - n remaining dimensions. The fields are (lambda, rho) = W x / sqrt N = L a, so the
errors Delta^b and the update coefficients

    c_kb = -(eta / (N B)) v_k g'(lambda_k^b) Delta^b         (Goldt et al. eq. 2)

are functions of (G, v, a, label noise) only. The update
w_k / sqrt N <- d w_k / sqrt N + sum_b c_kb x^b (d = 1 - eta kappa / N) gives

    Q' = d^2 Q + d (c Lambda^T + Lambda c^T) + c (A^T A) c^T + c (X_perp X_perp^T) c^T
    R' = d R + c P^T,         T' = T,

with Lambda, P the student and teacher fields of the batch and A the (n, B)
projections. Given everything else, X_perp X_perp^T is a B x B Wishart matrix with
N - n degrees of freedom, and c X_perp has i.i.d. N(0, c c^T) columns, so the last
term equals in law F W_r F^T with F F^T = c c^T, W_r ~ Wishart_r(N - n, I) and
r = min(B, K) (F = c itself when B <= K); W_r is drawn by the Bartlett
decomposition. The second layer (eq. 3) needs only the fields. The next step
again sees only (G, v): online SGD is a Markov chain on the overlaps and this
kernel is its transition law, with O(B (K + M)^2 + K^3) work per step.

The initial overlaps are drawn with the law of :func:`initial_weights`: the Gram
matrix of n i.i.d. standard Gaussian vectors in R^N is Wishart_n(N, I) (Bartlett
again), rows scaled by the teacher's and the student's weight scales.
"""

import numpy as np

from .. import _seeds, _validate
from . import _sampler_kernels
from ._dataset import overlaps_dataset, times
from .params import check_params

# Random numbers drawn per block (per stream), 2 MB of float64.
_BLOCK_NUMBERS = 2 ** 18


def _streams(ss):
    """Independent child seeds: initial overlaps, in-span inputs, Wishart chi^2, Wishart
    off-diagonal, label noise. Indices 10-14, apart from :func:`simulate`'s streams."""
    return [_seeds.child(ss, 10 + i) for i in range(5)]


def _rank(params):
    return min(params.batch, params.K)


def check_sampler_size(params):
    """The frame of the span plus the new directions must fit in R^N."""
    n = params.K + params.M
    low = n + _rank(params)
    if params.N < low:
        raise ValueError(f"N (input dimension) must be an integer >= K + M + min(batch, K) = {low} "
                         f"for the overlap sampler; got {params.N!r}")


def initial_overlaps(params, seed):
    """Overlaps G (K + M, K + M; students first) at t = 0, with the law of :func:`initial_weights`.

    G = D L L^T D / N with L the Bartlett factor of Wishart_{K+M}(N, I) and
    D = diag(w_init_std (K times), w_star_std (M times)).
    """
    check_params(params)
    check_sampler_size(params)
    ss = _seeds.seed_sequence(seed)
    rng = np.random.default_rng(_streams(ss)[0])
    n = params.K + params.M
    chi2 = rng.chisquare(params.N - np.arange(n))
    off = rng.standard_normal(n * (n - 1) // 2)
    L = _sampler_kernels.bartlett(chi2, off, np.zeros((n, n)))
    scale = np.r_[np.full(params.K, params.w_init_std), np.full(params.M, params.w_star_std)]
    C = scale[:, None] * L
    return C @ C.T / params.N


def _frame(Q, R, T):
    """Teacher-first frame of span{w*, w}: LT (LT LT^T = T), X = R LT^{-T}, S = Q - X X^T."""
    LT = np.linalg.cholesky(T)
    X = np.linalg.solve(LT, R.T).T
    return LT, X, Q - X @ X.T


def one_step(params, Q, R, T, v, n_samples, *, seed):
    """``n_samples`` independent SGD steps of the sampler, all from the overlaps (Q, R, T, v).

    Returns (Q', R', v') with a leading axis of length ``n_samples``: draws from the
    transition law of the Markov chain on the overlaps (module docstring), e.g. to
    compare the one-step moments with closed forms or with the full network.
    """
    check_params(params)
    check_sampler_size(params)
    _validate.integer("n_samples", n_samples, low=1, doc="number of independent steps")
    K, M, B = params.K, params.M, params.batch
    Q, R, T = (np.array(a, float) for a in (Q, R, T))
    if Q.shape != (K, K) or R.shape != (K, M) or T.shape != (M, M):
        raise ValueError(f"Q, R, T must have shapes ({K}, {K}), ({K}, {M}), ({M}, {M}); "
                         f"got {Q.shape}, {R.shape}, {T.shape}")
    LT, X, S = _frame(Q, R, T)
    ss = _seeds.seed_sequence(seed)
    _, a_ss, chi_ss, off_ss, noise_ss = _streams(ss)
    n, r = K + M, _rank(params)
    A = np.random.default_rng(a_ss).standard_normal((n_samples, B * n))
    chi2 = np.random.default_rng(chi_ss).chisquare(
        np.broadcast_to(params.N - n - np.arange(r, dtype=float), (n_samples, r)))
    off = np.random.default_rng(off_ss).standard_normal((n_samples, r * (r - 1) // 2))
    zeta = np.random.default_rng(noise_ss).standard_normal((n_samples, B))
    X_out, S_out = np.empty((n_samples, K, M)), np.empty((n_samples, K, K))
    v_out = np.empty((n_samples, K))
    _sampler_kernels.independent_steps(
        X, S, LT, np.array(v, float), params.v_star_vector(), A, chi2, off, zeta, params.act,
        params.eta, params.eta_second, params.sigma, params.weight_decay, params.N, B,
        params.train_second_layer, X_out, S_out, v_out)
    Q_out = S_out + np.einsum("ikm,ilm->ikl", X_out, X_out)
    return Q_out, X_out @ LT.T, v_out


def sample_overlaps(params, t_max, *, seed, n_points=200, spacing="linear"):
    """Mini-batch SGD of :func:`simulate`, sampled exactly in law on the overlaps (module docstring).

    Same arguments and the same Dataset as :func:`tsdyn.committee.simulate` (``kind`` is
    "overlap sampler"); the cost per step does not depend on N. Requires
    N >= K + M + min(batch, K). A given seed gives bit-identical results, independent
    of ``n_points``; the random streams are not those of :func:`simulate`, so the two
    agree in distribution, not path by path.
    """
    check_params(params)
    check_sampler_size(params)
    _validate.real("t_max", t_max, low=1.0 / params.N,
                   doc=f"length of the run in steps/N, at least one step (1/N = {1.0 / params.N:g})")
    _validate.integer("n_points", n_points, low=2, doc="number of recording times")
    ss = _seeds.seed_sequence(seed)
    G = initial_overlaps(params, ss)
    _, a_ss, chi_ss, off_ss, noise_ss = _streams(ss)
    rng_a, rng_chi = np.random.default_rng(a_ss), np.random.default_rng(chi_ss)
    rng_off, rng_noise = np.random.default_rng(off_ss), np.random.default_rng(noise_ss)

    N, B, K, M = params.N, params.batch, params.K, params.M
    n, r = K + M, _rank(params)
    dof = (N - n - np.arange(r)).astype(float)
    v = np.full(K, float(params.v_init))
    v_star = params.v_star_vector()
    steps = np.unique(np.round(times(t_max, n_points, spacing) * N).astype(np.int64))
    n_rec = len(steps)
    R = np.full((n_rec, K, M), np.nan)
    Q = np.full((n_rec, K, K), np.nan)
    V = np.full((n_rec, K), np.nan)
    T = G[K:, K:].copy()
    LT, X, S = _frame(G[:K, :K], G[:K, K:], T)
    steps_per_block = max(1, _BLOCK_NUMBERS // (B * n))
    a_buf = np.empty((steps_per_block, B * n))
    off_buf = np.empty((steps_per_block, r * (r - 1) // 2))
    zeta = np.zeros((steps_per_block, B))  # stays zero (and undrawn) without label noise
    step, t_diverged = 0, np.inf
    for i, target in enumerate(steps):
        while step < target and np.isinf(t_diverged):
            m = min(target - step, steps_per_block)
            A = rng_a.standard_normal(out=a_buf[:m])
            if r == 1:
                chi2 = rng_chi.chisquare(dof[0], size=(m, 1))
            else:
                chi2 = rng_chi.chisquare(np.broadcast_to(dof, (m, r)))
            off = rng_off.standard_normal(out=off_buf[:m])
            if params.sigma > 0:
                rng_noise.standard_normal(out=zeta[:m])
            done = _sampler_kernels.overlap_steps(
                X, S, LT, v, v_star, A, chi2, off, zeta[:m], params.act, params.eta,
                params.eta_second, params.sigma, params.weight_decay, N, B,
                params.train_second_layer)
            step += done
            if done < m:
                t_diverged = (step + 1) / N
        if not np.isinf(t_diverged):
            break
        Q[i], R[i], V[i] = S + X @ X.T, X @ LT.T, v
    return overlaps_dataset(params, steps / N, R, Q, V, T, t_diverged=t_diverged,
                            kind="overlap sampler",
                            attrs={"seed_entropy": str(ss.entropy),
                                   "seed_spawn_key": str(ss.spawn_key)})
