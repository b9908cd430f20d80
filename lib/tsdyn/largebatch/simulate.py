"""One-pass SGD with large batches at finite d (Arnaboldi et al. 2024, "Setting").

Inputs are drawn in chunks of at most ``_BLOCK_NUMBERS`` numbers into one reused
buffer, so the memory of a run does not grow with the batch size: a batch larger
than a chunk is streamed, its gradient summed chunk by chunk before the step.
"""

import math

import numpy as np
import xarray as xr

from .. import __version__, _seeds, _validate
from . import _kernels, functions
from .params import ALGORITHMS, LOSSES, Params, record_steps

# One input chunk: 2**18 float64 = 2 MiB, small enough to stay in cache between the
# pass that computes the fields and the pass that adds F z to the gradient.
_BLOCK_NUMBERS = 2 ** 18
SAMPLERS = ("full", "reduced", "gaussian", "auto")
# "auto": the exact "reduced" sampler below this batch size, the central-limit "gaussian" one at
# and above it (p = k = 1, polynomial sigma and h*). The Gaussian drops the batch sums' skewness,
# n_b^-1/2 times a single sample's, and that is large (He3, square loss, m = 0.3: -36 for F zeta_1,
# 572 for F^2, by quadrature), so the threshold is set by measurement (chapter 2, "The central-limit
# sampler"; scripts/largebatch_clt_check.py): across the l = 3 noise boundary at d = 128 the delta
# where half of the runs recover moves by about -0.001 at n_b = 2^17 (1% of the phase diagrams' grid
# step) and several times as much at 2^15, where the runs near the boundary also recover faster;
# one step at the paper preset's largest noise terms under "auto" matches the exact sampler. Below
# it an exact step (35 ns per sample) is cheap enough for the paper preset.
GAUSSIAN_MIN_NB = 2 ** 17
# Gauss-Hermite nodes of the "gaussian" sampler's moments: exact for polynomial sigma, h* with
# 4 deg F <= 2 * 32 - 1 (deg F <= 15; the polynomials of functions.DEGREE give deg F <= 7). For
# other functions the rule is not exact (relu: moments off by about 3%, a bias that does not fall
# with n_b), so the sampler refuses them.
_N_NODES = 32


def _hermite_rule(n):
    """Probabilists' Gauss-Hermite nodes and weights, the weights summing to 1."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


def _clt_allowed(params):
    """Why the central-limit sampler cannot run these params ('' if it can)."""
    if not params.p == params.k == 1:
        return f"p = k = 1 (one student unit, one teacher direction); got p={params.p}, k={params.k}"
    if params.activation not in functions.DEGREE or params.target not in functions.DEGREE:
        return (f"a polynomial activation and target (one of {tuple(functions.DEGREE)}: its quadrature "
                f"is exact only for them); got activation={params.activation!r}, target={params.target!r}")
    return ""


def resolve_sampler(params, sampler):
    """The sampler a run uses: ``sampler`` itself, or for ``"auto"`` ``"gaussian"`` when
    n_b >= :data:`GAUSSIAN_MIN_NB`, p = k = 1 and sigma, h* are polynomials, ``"reduced"``
    otherwise."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}; got {sampler!r}")
    if sampler == "auto":
        big = params.n_b >= GAUSSIAN_MIN_NB and not _clt_allowed(params)
        return "gaussian" if big else "reduced"
    if sampler == "gaussian" and _clt_allowed(params):
        raise ValueError(f"sampler 'gaussian' needs {_clt_allowed(params)}")
    return sampler


def _streams(ss):
    """Five independent children (teacher, student, inputs, label noise, orthogonal part),
    built from ``ss``'s entropy and spawn key so that they do not depend on ss's state."""
    return _seeds.children(ss, 5)


def initial_weights(params, seed):
    """Teacher W* (k, d) with orthonormal rows and student W (p, d) with unit rows at t = 0.

    With ``m0`` None each w_j is uniform on the sphere (overlaps of order d^-1/2),
    its sign chosen so that <w_j, w*_1> >= 0: for an odd information exponent the
    drift cannot change the sign of the overlap, and a negative start would leave
    the run to the noise (Ben Arous et al. 2021 condition on the same event). With
    ``m0`` given, w_j = m0 w*_{j mod k} + sqrt(1 - m0^2) u_j with u_j a random unit
    vector orthogonal to W* (a warm start, for comparisons with the theory).
    """
    teacher, student, *_ = _streams(seed)
    d, p, k = params.d, params.p, params.k
    q, _ = np.linalg.qr(np.random.default_rng(teacher).standard_normal((d, k)))
    Wstar = np.ascontiguousarray(q.T)
    W = np.random.default_rng(student).standard_normal((p, d))
    if params.m0 is None:
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        W *= np.where(W @ Wstar[0] < 0, -1.0, 1.0)[:, None]
    else:
        W -= (W @ Wstar.T) @ Wstar
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        W = params.m0 * Wstar[np.arange(p) % k] + math.sqrt(1 - params.m0 ** 2) * W
    return Wstar, np.ascontiguousarray(W)


class _Runner:
    """The SGD chain of one run: weights, random streams, buffers and the samplers."""

    def __init__(self, params, seed, sampler, stop_at_recovery):
        if not isinstance(params, Params):
            raise ValueError(f"params must be a largebatch.Params; got {type(params).__name__}")
        sampler = resolve_sampler(params, sampler)
        self.p, self.ss = params, _seeds.seed_sequence(seed)
        self.Wstar, self.W = initial_weights(params, self.ss)
        _, _, inputs, noise, perp = _streams(self.ss)
        self.rng_x, self.rng_noise = np.random.default_rng(inputs), np.random.default_rng(noise)
        self.rng_perp = np.random.default_rng(perp)
        self.sampler, self.stop = sampler, bool(stop_at_recovery)
        P = params
        self.args = (P.activation_code, P.target_code, LOSSES.index(P.loss),
                     ALGORITHMS.index(P.algorithm), P.gamma, math.sqrt(P.noise), P.eta)
        self.G = np.zeros((P.p, P.d))
        width = P.d if sampler == "full" else P.k + P.p
        self.rows = max(1, _BLOCK_NUMBERS // width)  # input rows per chunk
        self.buffer = np.empty((self.rows, width))
        self.xi = np.zeros(self.rows)
        self.step, self.first_recovery, self.diverged_at = 0, np.inf, np.inf
        if sampler == "gaussian":
            self.nodes = _hermite_rule(_N_NODES)
            self.noise_nodes = _hermite_rule(3) if params.noise > 0 else (np.zeros(1), np.ones(1))

    def _draw(self, n_rows):
        X = self.rng_x.standard_normal(out=self.buffer[:n_rows])
        xi = self.xi[:n_rows]
        if self.p.noise > 0:
            self.rng_noise.standard_normal(out=xi)
        return X, xi

    def _perp(self, n_steps):
        return self.rng_perp.standard_normal((n_steps * self.p.p, self.p.d))

    def advance(self, n):
        """Run up to n steps (fewer at a divergence, or at recovery when stopping there)."""
        P = self.p
        act, tgt, loss, algo, gamma, sqrt_noise, eta = self.args
        if self.sampler == "gaussian":  # three normals for the batch sums, d for the rest
            n = max(1, min(n, _BLOCK_NUMBERS // P.d))
            done, diverged, first = _kernels.gaussian_steps(
                self.W, self.Wstar, self.rng_x.standard_normal((n, 3)), self._perp(n), P.n_b,
                *self.nodes, *self.noise_nodes, act, tgt, loss, algo, gamma, sqrt_noise, eta, self.stop,
                self.G)
        elif P.n_b <= self.rows:  # whole steps per call
            n = min(n, self.rows // P.n_b)
            if self.sampler == "reduced":  # its orthogonal draws: p d numbers per step
                n = max(1, min(n, _BLOCK_NUMBERS // (P.p * P.d)))
            X, xi = self._draw(n * P.n_b)
            if self.sampler == "full":
                done, diverged, first = _kernels.full_steps(
                    self.W, self.Wstar, X, xi, P.n_b, act, tgt, loss, algo, gamma, sqrt_noise, eta,
                    self.stop, self.G)
            else:
                done, diverged, first = _kernels.reduced_steps(
                    self.W, self.Wstar, X, xi, self._perp(n), P.n_b, act, tgt, loss, algo, gamma,
                    sqrt_noise, eta, self.stop, self.G)
        else:  # one step, its batch streamed in chunks
            self.G[:] = 0.0
            if self.sampler == "reduced":
                U, L = np.empty((P.k + P.p, P.d)), np.empty((P.k + P.p, P.k + P.p))
                r = _kernels.basis(self.Wstar, self.W, U, L)
                Gpar, C = np.zeros((P.p, P.k + P.p)), np.zeros((P.p, P.p))
            left = P.n_b
            while left > 0:
                X, xi = self._draw(min(left, self.rows))
                if self.sampler == "full":
                    _kernels.accumulate_full(self.W, self.Wstar, X, xi, act, tgt, loss, sqrt_noise,
                                             self.G)
                else:
                    _kernels.accumulate_reduced(self.Wstar, self.W, L, r, X, xi, act, tgt, loss,
                                                sqrt_noise, Gpar, C)
                left -= len(X)
            if self.sampler == "reduced":
                _kernels.assemble_reduced(U, r, Gpar, C, self._perp(1), self.G)
            diverged = not _kernels.apply_step(self.W, self.G, 1.0 / P.n_b, gamma, algo)
            done = 0 if diverged else 1
            first = 1 if not diverged and _kernels.overlap_norm(self.W, self.Wstar) >= eta else -1
        if first > 0 and np.isinf(self.first_recovery):
            self.first_recovery = self.step + first
        self.step += done
        if diverged:
            self.diverged_at = self.step + 1
        return done

    @property
    def halted(self):
        return np.isfinite(self.diverged_at) or (self.stop and np.isfinite(self.first_recovery))


def simulate(params, steps, *, seed, n_points=100, spacing="linear", sampler="full"):
    """Run one-pass SGD with batch n_b and learning rate gamma for ``steps`` steps.

    Arnaboldi et al. (2024), "Setting": each step draws n_b fresh samples and moves
    every unit along g_j = (1/n_b) sum_nu F_j^nu z^nu, F_j = r sigma'(lambda_j) / p (minus
    the loss gradient; r = y - f for the square loss, r = y for the correlation loss):

        projected:  w_j <- (w_j + gamma g_j) / ||w_j + gamma g_j||
        spherical:  w_j <- (w_j + gamma (g_j - <g_j, w_j> w_j)) / ||...||

    Parameters
    ----------
    params : Params
    steps : int
        Number of SGD steps (the run uses steps * n_b samples).
    seed : int or numpy.random.SeedSequence
        Teacher, student, inputs, label noise and (``reduced``) the orthogonal
        draws come from independent children of it; a seed gives bit-identical
        results whatever ``n_points``.
    n_points : int
        Number of recording times (rounded to whole steps, duplicates dropped).
    spacing : {"linear", "log"}
    sampler : {"full", "reduced", "gaussian", "auto"}
        ``"full"`` draws every input z in R^d (cost O(n_b d (p + k)) per step, the
        batch streamed in chunks of 2 MiB). ``"reduced"`` draws the same Markov
        chain in law from the inputs' projections on span(W, W*) and the exact
        Gaussian law of the rest of the gradient (see
        :func:`tsdyn.largebatch._kernels.reduced_steps`); cost O((n_b + d)(p + k)^2).
        The tests check that both give the same distribution of the overlaps.
        ``"gaussian"`` (p = k = 1, polynomial sigma and h*) is not exact: it draws the batch sums of ``reduced``
        from their central-limit law, with SGD's mean and covariance but no skewness
        (:func:`tsdyn.largebatch._kernels.gaussian_steps`); cost O(d + 32^2) per step
        whatever n_b. ``"auto"``: ``"gaussian"`` from n_b = :data:`GAUSSIAN_MIN_NB` on, else
        ``"reduced"`` (the Dataset's ``sampler`` attribute names the one used).

    Returns
    -------
    xarray.Dataset
        ``M`` (t, j, r) = W W*^T, ``Q`` (t, j, j2) = W W^T, ``overlap`` (t) = ||M||_F;
        scalars ``t_recovery`` (first step with ||M||_F >= eta; inf if none),
        ``recovered``, ``diverged``, ``t_diverged``. Time in SGD steps.
    """
    _validate.integer("steps", steps, low=1, doc="number of SGD steps")
    _validate.integer("n_points", n_points, low=2, doc="number of recording times")
    run = _Runner(params, seed, sampler, stop_at_recovery=False)
    record = record_steps(steps, n_points, spacing)
    P = params
    M = np.full((len(record), P.p, P.k), np.nan)
    Q = np.full((len(record), P.p, P.p), np.nan)
    for i, target in enumerate(record):
        while run.step < target and not run.halted:
            run.advance(target - run.step)
        if run.halted:
            break
        M[i], Q[i] = run.W @ run.Wstar.T, run.W @ run.W.T
    return _dataset(P, record, M, Q, run, run.sampler)


def _dataset(P, record, M, Q, run, sampler):
    return xr.Dataset(
        {
            "M": (("t", "j", "r"), M, {"long_name": "student-teacher overlaps <w_j, w*_r>"}),
            "Q": (("t", "j", "j2"), Q, {"long_name": "student-student overlaps <w_j, w_l>"}),
            "overlap": (("t",), np.sqrt(np.nansum(M ** 2, axis=(1, 2))) * np.where(np.isnan(M[:, 0, 0]), np.nan, 1.0),
                        {"long_name": "||W W*^T||_F"}),
            "t_recovery": ((), float(run.first_recovery), {"units": "SGD steps",
                                                           "long_name": f"first step with ||M||_F >= {P.eta}"}),
            "recovered": ((), bool(np.isfinite(run.first_recovery))),
            "diverged": ((), bool(np.isfinite(run.diverged_at))),
            "t_diverged": ((), float(run.diverged_at), {"units": "SGD steps"}),
        },
        coords={"t": ("t", record.astype(float), {"units": "SGD steps", "samples_per_step": P.n_b}),
                "j": np.arange(P.p), "j2": np.arange(P.p), "r": np.arange(P.k)},
        attrs={**P.attrs(), "kind": "simulation", "sampler": sampler, "tsdyn_version": __version__,
               "seed_entropy": str(run.ss.entropy), "seed_spawn_key": str(run.ss.spawn_key)},
    )


def recovery_time(params, max_steps, *, seed, sampler="reduced"):
    """Weak-recovery time T = min{t : ||W_t W*^T||_F >= eta} of one run, in SGD steps.

    Arnaboldi et al. (2024), "High dimensional limit". The run stops at recovery,
    after ``max_steps`` steps, or at a divergence.

    Returns
    -------
    dict
        ``T`` (inf if not recovered within max_steps), ``recovered`` (bool),
        ``diverged`` (bool), ``steps_run``, ``samples`` = T n_b (inf if not recovered),
        ``overlap_end`` (||M||_F when the run stopped).
    """
    _validate.integer("max_steps", max_steps, low=1, doc="step budget")
    run = _Runner(params, seed, sampler, stop_at_recovery=True)
    while run.step < max_steps and not run.halted:
        run.advance(max_steps - run.step)
    T = float(run.first_recovery)
    return {"T": T, "recovered": bool(np.isfinite(T)), "diverged": bool(np.isfinite(run.diverged_at)),
            "steps_run": run.step, "samples": T * params.n_b,
            "overlap_end": float(_kernels.overlap_norm(run.W, run.Wstar))}


def recovery_point(*, seed, max_steps, sampler="reduced", **params):
    """:func:`recovery_time` with the :class:`Params` fields as keywords (for :func:`tsdyn.sweep.run`)."""
    return recovery_time(Params(**params), max_steps, seed=seed, sampler=sampler)


def one_step_overlaps(params, n_samples, *, seed, sampler="reduced"):
    """Overlaps M = W W*^T after ONE SGD step of ``n_samples`` independent runs (child seeds
    0..n_samples-1 of ``seed``), each started as :func:`simulate` starts it: the same chain as
    ``simulate(params, 1, seed=child)`` without building a Dataset per run.

    Returns an array (n_samples, p, k); a run that diverges in its step gives nan.
    """
    _validate.integer("n_samples", n_samples, low=2, doc="number of one-step samples")
    out = np.full((n_samples, params.p, params.k), np.nan)
    for i, child in enumerate(_seeds.children(_seeds.seed_sequence(seed), n_samples)):
        run = _Runner(params, child, sampler, stop_at_recovery=False)
        if run.advance(1) == 1:
            out[i] = run.W @ run.Wstar.T
    return out
