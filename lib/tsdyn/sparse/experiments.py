"""Runs in the form :func:`tsdyn.sweep.run` calls: keywords in, fixed-shape results out."""

import itertools
from functools import partial

import numpy as np

from .. import sweep
from .greedy import greedy
from .params import Params, SGDParams
from .sgd import sgd

_TRAJECTORIES = ("val_loss", "val_mse", "batch_loss", "accept_rate", "hamming", "hamming_in",
                 "hamming_out", "tp", "tn")


def greedy_point(*, seed, N, d, m, sweeps, model="two_matrix", d_s=None, a=0.1, n_val=None,
                 n_points=12, schedule="permutation"):
    """:func:`greedy` with the :class:`Params` fields as keywords, without the matrices.

    Returns the trajectories over ``t`` (sweeps), whose shape depends only on
    ``sweeps`` and ``n_points``, so N, d and m can all be sweep axes, e.g.
    ``sweep.run(partial(greedy_point, sweeps=1024), {"d": [3, 4], "N": [50, 100], "m": [...]}, seeds=100)``.
    """
    p = Params(N=N, d=d, m=m, model=model, d_s=d_s, a=a, n_val=n_val)
    ds = greedy(p, sweeps, seed=seed, n_points=n_points, schedule=schedule)
    return ds[list(_TRAJECTORIES)]


def grid_seeds(grid, seeds, seed, select):
    """The seeds :func:`tsdyn.sweep.run` gives the points ``select`` of ``grid``, to re-run them.

    ``grid`` (axis -> values), ``seeds`` and ``seed`` as passed to :func:`tsdyn.sweep.run`;
    ``select`` (axis -> values, a subset of each axis; axes left out: all values). Returns a
    list of (point, SeedSequence), replica fastest, for :func:`tsdyn.sweep.each`: a run with
    other options (say ``schedule="replacement"``) then shares the sweep's teacher, student
    and mini-batches, point for point.
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(int(seed))
    axes = {k: list(v) for k, v in grid.items()}
    for k, v in select.items():
        if k not in axes or any(x not in axes[k] for x in v):
            raise ValueError(f"select[{k!r}] must be values of the grid axis {k!r}; got {v!r}")
    chosen = [[(i, x) for i, x in enumerate(vals) if k not in select or x in select[k]] for k, vals in axes.items()]
    out = []
    for combo in itertools.product(*chosen):
        point = {k: x for k, (_, x) in zip(axes, combo)}
        for r in range(seeds):
            child = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *(i for i, _ in combo), r),
                                           pool_size=root.pool_size)
            out.append((point, child))
    return out


def sgd_point(*, seed, N, d, m, lr, steps, reduction="sum", d_s=None, n_val=1024, n_points=12):
    """:func:`sgd` with the :class:`SGDParams` fields as keywords; validation loss over t."""
    p = SGDParams(N=N, d=d, m=m, lr=lr, reduction=reduction, d_s=d_s, n_val=n_val)
    ds = sgd(p, steps, seed=seed, n_points=n_points)
    return ds[["val_loss", "val_mse", "diverged"]]


def rerun_stored(stored, executor=None):
    """Re-run the first run of a stored :func:`sgd_point` sweep and compare its records.

    ``stored``: a Dataset over (lr, m, seed, t) as ``scripts/sparse_long_sgd.py`` writes it
    (attrs ``N``, ``d``, ``steps``, ``n_points``, ``root_seed``; summed loss). The run at the
    first learning rate, the first mini-batch size and replica 0 is computed again through
    :func:`tsdyn.sweep.run` with the sweep's root seed, so it gets the stored run's seed.
    Returns the largest relative difference between its validation losses and the stored
    ones: 0 on the machine that wrote them, rounding of sums elsewhere.
    """
    a = stored.attrs
    fn = partial(sgd_point, N=int(a["N"]), d=int(a["d"]), steps=int(a["steps"]), n_points=int(a["n_points"]))
    redo = sweep.run(fn, {"lr": [float(stored.lr[0])], "m": [int(stored.m[0])]}, executor, seeds=1,
                     seed=int(a["root_seed"]), progress=False)
    old = stored.val_loss.isel(lr=0, m=0, seed=0).values
    new = redo.val_loss.isel(lr=0, m=0, seed=0).values
    if old.shape != new.shape:
        raise ValueError(f"the stored run has {old.shape[0]} records, the re-run {new.shape[0]}: the file's "
                         "attrs (steps, n_points) do not describe it")
    return float(np.max(np.abs(new / old - 1)))
