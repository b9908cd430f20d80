"""Composite runs for sweeps (:func:`tsdyn.sweep.run`) and for the chapter."""

from functools import partial

import numpy as np
import xarray as xr

from .. import sweep
from .analysis import summary
from .params import Params
from .simulate import train_ensemble


def phase_point(*, seed, T, inv_sigma_w, steps, n_models, batch=4, n_points=8, moment_samples=None,
                n_train=4000, n_test=100, w_max=1e6):
    """One point of the T - 1/sigma_w phase diagram: the per-model :func:`summary` of an ensemble.

    eps = T * batch, sigma_w = 1 / inv_sigma_w; ``steps`` SGD steps. The form
    :func:`tsdyn.sweep.run` calls (a grid over ``T`` and ``inv_sigma_w``). The gradient
    moments are measured at t = 0 and t_f only: all that the summary needs.
    """
    p = Params.from_temperature(T, inv_sigma_w, batch=batch, n_train=n_train, n_test=n_test, w_max=w_max)
    ds = train_ensemble(p, steps, seed=seed, n_models=n_models, n_points=n_points,
                        moment_samples=moment_samples, moments="ends")
    return summary(ds)


def phase_diagram(Ts, inv_sigma_ws, *, steps, n_models, seed=0, executor=None, cache=None,
                  progress=False, **kw):
    """Sweep :func:`phase_point` over the grid (T, inv_sigma_w): one ensemble per point.

    Returns the stacked Dataset (T, inv_sigma_w, model) (the sweep's replica axis, of
    length 1, is dropped) with attrs ``steps``, ``n_models``. Runs on local processes,
    serially (``executor="serial"``) or on a Dask cluster (``client.get_executor()``).
    """
    fn = partial(phase_point, steps=int(steps), n_models=int(n_models), **kw)
    ds = sweep.run(fn, {"T": [float(t) for t in Ts], "inv_sigma_w": [float(s) for s in inv_sigma_ws]},
                   executor=executor, cache=cache, seed=seed, progress=progress)
    ds = ds.isel(seed=0, drop=True)
    ds.attrs.update(steps=int(steps), n_models=int(n_models))
    return ds


def linear_scaling(T, inv_sigma_w, batches, tau_f, *, seed, n_models, n_points=17):
    """Ensembles at the same temperature T = eps/|B| with different (eps, |B|) (linear scaling rule).

    For each batch size B: eps = T B and steps = tau_f / eps, so every run covers the
    same Langevin time tau = eps * steps (and uses the same number of samples,
    tau_f / T). All runs share ``seed``: model m has the same teacher, data and
    initial student for every B (a paired comparison); only the batches differ.
    Recording times are linear in tau, common to all B.

    Returns
    -------
    xarray.Dataset
        ``loss`` (batch, model) at tau_f; ``S`` (batch, tau, model); ``steps`` (batch).
    """
    plan = []
    for B in batches:
        p = Params.from_temperature(T, inv_sigma_w, batch=int(B))
        steps = tau_f / p.eps
        if abs(steps - round(steps)) > 1e-9 * steps or round(steps) % (n_points - 1) or steps < 1:
            raise ValueError(f"tau_f / (T |B|) = {steps:g} steps at |B| = {B}: it must be a whole "
                             f"multiple of n_points - 1 = {n_points - 1}, so that every run records "
                             f"at the same tau")
        plan.append((p, int(round(steps))))
    runs = [train_ensemble(p, steps, seed=seed, n_models=n_models, n_points=n_points, spacing="linear",
                           moment_samples=2, moments="ends") for p, steps in plan]
    tau = runs[0].tau.values
    return xr.Dataset({
        "loss": (("batch", "model"), np.stack([ds.loss.values[-1] for ds in runs])),
        "S": (("batch", "tau", "model"), np.stack([ds.S.values for ds in runs])),
        "steps": (("batch",), [int(ds.attrs["steps"]) for ds in runs]),
    }, coords={"batch": list(batches), "tau": tau, "model": runs[0].model.values},
        attrs={"T": float(T), "inv_sigma_w": float(inv_sigma_w), "tau_f": float(tau_f)})
