"""Mini-batch SGD of a dense real-valued student on a sparse erf teacher (sec. 4.4, eq. 5)."""

import numpy as np
import xarray as xr

from .. import __version__, _validate
from . import _kernels, _seeds
from .greedy import record_sweeps
from .networks import compact, draw_networks
from .params import Params, SGDParams

# Inputs are drawn in blocks of at most this many numbers (8 MB of float64).
_BLOCK_NUMBERS = 2 ** 20


def setup(params, ss):
    """What a run draws before its first step, from its SeedSequence ``ss``.

    Returns the teacher W* (N, N) of eq. (7), its column lists ``t_idx, t_w``
    (hidden unit r reads inputs t_idx[r] with weights t_w[r]), the initial student
    W (N, N), the validation inputs X_val (n_val, N) and their labels Y_val. Shared by
    :func:`sgd` and :func:`tsdyn.sparse.sgd_cuda.sgd_sweep_cuda`, so a run's teacher,
    initial student and validation set depend only on its seed.
    """
    N, d = params.N, params.d
    teacher = draw_networks(Params(N=N, d=d, m=1, model="one_matrix"), seed=ss).teacher_in
    t_idx, t_w = compact(teacher.T, teacher.T != 0)
    W = _seeds.rng(ss, "dense_init").uniform(params.w_init_low, params.w_init_high, (N, N))
    X_val = _seeds.rng(ss, "validation").standard_normal((params.n_val, N))
    Y_val = np.empty(params.n_val)
    _kernels.teacher1_outputs(t_idx, t_w, X_val, 1.0 / np.sqrt(d), Y_val)
    return teacher, t_idx, t_w, W, X_val, Y_val


def sgd(params, steps, *, seed, n_points=30, spacing="log"):
    """Train a dense student on the one-matrix sparse teacher by mini-batch SGD (ST-DS-1M-MC).

    Teacher: eq. (7), y = (1/N) sum_r phi((W*^T x)_r / sqrt d), phi(t) = erf(t / sqrt 2),
    W* with d non-zeros +-1 per row and column (the same teacher as
    :func:`greedy` with ``model="one_matrix"`` and the same seed). Student: the same
    form with a dense real W, initialised uniformly in [w_init_low, w_init_high], and
    1/sqrt(d_s) in place of the teacher's 1/sqrt(d) when ``params.d_s`` is set.
    Each step draws m fresh samples and applies W <- W - lr grad L (eq. 5), with L
    the mini-batch loss of eq. (2) (summed, or averaged with ``reduction="mean"``).

    Parameters
    ----------
    params : SGDParams
    steps : int
        Number of SGD steps (gradient evaluations); the paper runs 10^6.
    seed : int or numpy.random.SeedSequence
        Same seed, bit-identical run (whatever ``n_points``).
    n_points : int
        Recording times, log-spaced in steps by default (0 always recorded).

    Returns
    -------
    xarray.Dataset
        Over ``t`` (SGD steps): ``val_loss`` (validation mean squared error over the
        teacher's mean squared output: 0 is perfect, about 1 for a student that
        outputs 0), ``val_mse`` (mean over validation samples of 1/2 (y_hat - y)^2);
        ``diverged``, ``t_diverged`` (inf if not); final ``W`` and ``teacher``.
    """
    if not isinstance(params, SGDParams):
        raise ValueError(f"params must be a sparse.SGDParams; got {type(params).__name__}")
    rec = record_sweeps(steps, n_points, spacing, name="steps", doc="SGD steps")
    ss = _seeds.seed_sequence(seed)
    N, m = params.N, params.m
    teacher, t_idx, t_w, W, X_val, Y_val = setup(params, ss)
    scale, s_scale = 1.0 / np.sqrt(params.d), params.student_scale
    y2 = float(np.mean(Y_val ** 2))
    rng_x = _seeds.rng(ss, "batches")
    block = max(1, _BLOCK_NUMBERS // (N * m))
    mse = np.full(len(rec), np.nan)
    done, t_div = 0, np.inf
    for r, target in enumerate(rec):
        while done < target and np.isinf(t_div):
            n = min(block, target - done)
            X = rng_x.standard_normal((n * m, N))
            Y = np.empty(n * m)
            _kernels.teacher1_outputs(t_idx, t_w, X, scale, Y)
            k = _kernels.sgd_steps(W, X, Y, m, params.lr, s_scale, params.reduction == "mean")
            done += k
            if k < n:
                t_div = float(done + 1)
        if np.isfinite(t_div):
            break
        mse[r] = _kernels.dense_loss(W, X_val, Y_val, s_scale)
    return xr.Dataset(
        {
            "val_loss": ("t", 2.0 * mse / y2, {"long_name": "validation mean squared error / "
                                               "teacher's mean squared output", "units": "1"}),
            "val_mse": ("t", mse, {"long_name": "mean over validation samples of "
                                   "1/2 (y_hat - y)^2", "units": "1"}),
            "diverged": ((), bool(np.isfinite(t_div))),
            "t_diverged": ((), t_div, {"units": "SGD steps"}),
            "W": (("row", "col"), W, {"long_name": "final student W (input i, hidden r)"}),
            "teacher": (("row", "col"), teacher, {"long_name": "teacher W*"}),
        },
        coords={"t": ("t", rec.astype(float), {"units": "SGD steps", "samples_per_unit": m})},
        attrs={**params.attrs(), "steps": steps, "kind": "simulation", "algorithm": "sgd",
               "tsdyn_version": __version__, "seed_entropy": str(ss.entropy),
               "seed_spawn_key": str(ss.spawn_key)},
    )


def effective_time(t, lr, m, reduction="sum"):
    """SGD time in units of one step of the mean per-sample gradient: lr m t for the
    summed mini-batch loss, lr t for the averaged one.

    Eq. (5) with the loss of eq. (2) summed over the mini-batch moves W by lr times m
    times the mean per-sample gradient, so when the mini-batch noise is small the
    validation loss depends on (lr, m, t) only through this product (gradient flow).
    """
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be one of ('sum', 'mean'); got {reduction!r}")
    t = np.asarray(t, float)
    return lr * t * (m if reduction == "sum" else 1)


def samples_to_loss(params, level, max_samples, *, seed, ratio=1.05, refine=32):
    """Samples n = m t that one SGD run (eq. 5, as :func:`sgd`) needs to bring its relative
    validation loss to ``level``; the run stops there.

    The validation loss is checked after each segment of a geometric grid in samples (n_k about
    ``ratio`` times n_(k-1), rounded up to whole steps; at most 2^20 numbers of inputs per
    segment). When a check falls to ``level`` or below, the segment is replayed from the saved
    weights on the same inputs in ``refine`` pieces, and the passage is interpolated linearly in
    (log n, log loss) inside the first piece that reaches it: a resolution of about
    (ratio - 1) / refine in n, whatever m. +inf if ``level`` is not reached within
    ``max_samples`` (censored) or the weights blow up first.

    With the same ``seed`` a run at any m has the same teacher, initial student and validation
    set as :func:`sgd`, and sees the same stream of input samples (drawn in order from one
    generator, m per step), so runs at different m are paired sample for sample.

    Returns
    -------
    (float, float)
        the passage in samples (inf if none) and the relative validation loss where the run
        stopped (inf if it diverged).
    """
    if not isinstance(params, SGDParams):
        raise ValueError(f"params must be a sparse.SGDParams; got {type(params).__name__}")
    _validate.real("level", level, low=0.0, low_open=True, doc="relative validation loss to reach")
    _validate.real("max_samples", max_samples, low=1.0, doc="samples per run at most")
    _validate.real("ratio", ratio, low=1.0, low_open=True, doc="growth of the check grid in samples")
    _validate.integer("refine", refine, low=1, doc="pieces a segment is replayed in")
    ss = _seeds.seed_sequence(seed)
    N, m = params.N, params.m
    _, t_idx, t_w, W, X_val, Y_val = setup(params, ss)
    scale, s_scale = 1.0 / np.sqrt(params.d), params.student_scale
    mean = params.reduction == "mean"
    norm = 2.0 / float(np.mean(Y_val ** 2))
    rng_x = _seeds.rng(ss, "batches")
    total = int(np.ceil(max_samples / m))
    cap = max(1, _BLOCK_NUMBERS // (N * m))
    done = 0
    loss = norm * _kernels.dense_loss(W, X_val, Y_val, s_scale)
    if loss <= level:
        return 0.0, float(loss)
    while done < total:
        n_steps = min(total - done, cap, max(1, int(np.ceil(max(done, 1) * (ratio - 1)))))
        X = rng_x.standard_normal((n_steps * m, N))
        Y = np.empty(n_steps * m)
        _kernels.teacher1_outputs(t_idx, t_w, X, scale, Y)
        W_saved = W.copy()
        k = _kernels.sgd_steps(W, X, Y, m, params.lr, s_scale, mean)
        new = norm * _kernels.dense_loss(W, X_val, Y_val, s_scale) if k == n_steps else np.inf
        if new <= level or k < n_steps:
            # replay the segment in pieces from the saved weights
            W[:] = W_saved
            edges = np.unique(np.linspace(0, n_steps, min(refine, n_steps) + 1).round().astype(int))
            prev_n, prev_l = done * m, loss
            for a, b in zip(edges[:-1], edges[1:]):
                kk = _kernels.sgd_steps(W, X[a * m:b * m], Y[a * m:b * m], m, params.lr, s_scale, mean)
                if kk < b - a:
                    return np.inf, np.inf
                cur = norm * _kernels.dense_loss(W, X_val, Y_val, s_scale)
                n_cur = (done + b) * m
                if cur <= level:
                    if prev_n == 0:
                        return float(n_cur), float(cur)
                    f = (np.log(prev_l) - np.log(level)) / (np.log(prev_l) - np.log(cur))
                    return float(np.exp(np.log(prev_n) + f * (np.log(n_cur) - np.log(prev_n)))), float(cur)
                prev_n, prev_l = n_cur, cur
            return np.inf, np.inf  # the replay diverged without reaching the level
        done += n_steps
        loss = new
    return np.inf, float(loss)
