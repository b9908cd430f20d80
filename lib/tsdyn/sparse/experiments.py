"""Runs in the form :func:`tsdyn.sweep.run` calls: keywords in, fixed-shape results out."""

from .greedy import greedy
from .params import Params, SGDParams
from .sgd import sgd

_TRAJECTORIES = ("val_loss", "val_mse", "batch_loss", "accept_rate", "hamming", "hamming_in",
                 "hamming_out", "tp", "tn")


def greedy_point(*, seed, N, d, m, sweeps, model="two_matrix", d_s=None, a=0.1, n_val=None,
                 n_points=12):
    """:func:`greedy` with the :class:`Params` fields as keywords, without the matrices.

    Returns the trajectories over ``t`` (sweeps), whose shape depends only on
    ``sweeps`` and ``n_points``, so N, d and m can all be sweep axes, e.g.
    ``sweep.run(partial(greedy_point, sweeps=1024), {"d": [3, 4], "N": [50, 100], "m": [...]}, seeds=100)``.
    """
    p = Params(N=N, d=d, m=m, model=model, d_s=d_s, a=a, n_val=n_val)
    ds = greedy(p, sweeps, seed=seed, n_points=n_points)
    return ds[list(_TRAJECTORIES)]


def sgd_point(*, seed, N, d, m, lr, steps, reduction="sum", d_s=None, n_val=1024, n_points=12):
    """:func:`sgd` with the :class:`SGDParams` fields as keywords; validation loss over t."""
    p = SGDParams(N=N, d=d, m=m, lr=lr, reduction=reduction, d_s=d_s, n_val=n_val)
    ds = sgd(p, steps, seed=seed, n_points=n_points)
    return ds[["val_loss", "val_mse", "diverged"]]
