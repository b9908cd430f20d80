"""Observables derived from a trained ensemble (a :func:`train_ensemble` Dataset)."""

import json

import numpy as np
import xarray as xr

from . import theory


def lambda_bar(ds):
    """Time-averaged rate of the average level spacing, (1/t) log(S(t)/S(0)) (eq. 4.7).

    t in SGD steps, as in the paper's Fig. 7. Returns a DataArray (t, model) with NaN at t = 0.
    """
    S = ds.S
    t = ds.t.where(ds.t > 0)
    return (np.log(S / S.isel(t=0)) / t).rename("lambda_bar")


def spacing_coefficients(ds):
    """K_S, V_S, D_S (eqs. B.7, B.9) from the recorded gradient moments, per time and model."""
    K_S, V_S, D_S = theory.spacing_coefficients(ds.K.values, ds.V.values)
    dims = ("t", "model")
    return xr.Dataset({"K_S": (dims, K_S), "V_S": (dims, V_S), "D_S": (dims, D_S)},
                      coords={"t": ds.t, "model": ds.model})


def summary(ds):
    """Per-model end-of-training numbers of one ensemble: a Dataset over ``model``.

    loss, grad_norm, G0, align, lambda_bar at t_f; grad_norm0 at t = 0; S0, S_f;
    K_S, V_S, D_S at t_f; ``converged``: criterion (4.15) at t_f; diverged, t_diverged.
    """
    ds = ds.drop_vars("tau")
    end = ds.isel(t=-1, drop=True)
    coef = spacing_coefficients(ds).isel(t=-1, drop=True)
    T, sigma_w = float(ds.attrs["T"]), float(ds.attrs["sigma_w"])
    n1, n2 = json.loads(ds.attrs["layers"])[1], ds.sizes["eig"]
    ok = theory.converged(T, sigma_w, coef.K_S.values, coef.V_S.values, n1=n1, n2=n2)
    return xr.Dataset({
        "loss": end.loss, "grad_norm": end.grad_norm, "G0": end.G0, "align": end.align,
        "lambda_bar": lambda_bar(ds).isel(t=-1, drop=True),
        "grad_norm0": ds.grad_norm.isel(t=0, drop=True), "S0": ds.S.isel(t=0, drop=True), "S_f": end.S,
        "K_S": coef.K_S, "V_S": coef.V_S, "D_S": coef.D_S,
        "converged": ("model", ok & ~ds.diverged.values),
        "diverged": ds.diverged, "t_diverged": ds.t_diverged,
    }, attrs={"t_f": float(ds.t.values[-1])})


def unfolded_spacings(x, *, degree=3, drop=1):
    """Nearest-neighbour spacings of each spectrum, unfolded to unit mean density.

    x : array (..., N), ascending eigenvalues of each model. Each model's staircase
    N(x) is fitted with a polynomial of ``degree`` (its smooth part), the levels are
    mapped through it and the spacings are normalised to mean 1; ``drop`` spacings at
    each edge (where the fit is worst) are discarded. Returns a flat array.
    """
    x = np.asarray(x, float).reshape(-1, np.shape(x)[-1])
    out = []
    for levels in x:
        if not np.all(np.isfinite(levels)):
            continue
        n = len(levels)
        scale = levels[-1] - levels[0]
        u = (levels - levels[0]) / scale
        smooth = np.polyval(np.polyfit(u, np.arange(n), degree), u)
        s = np.diff(smooth)[drop:n - 1 - drop]
        out.append(s / s.mean())
    return np.concatenate(out) if out else np.array([])


def crossing(x, y, level, *, log_x=True):
    """First x where y crosses ``level`` (linear interpolation, in log x if ``log_x``); NaN if none."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    u = np.log(x) if log_x else x
    above = y >= level
    for i in range(len(y) - 1):
        if above[i] != above[i + 1] and np.isfinite(y[i]) and np.isfinite(y[i + 1]):
            f = (level - y[i]) / (y[i + 1] - y[i])
            v = u[i] + f * (u[i + 1] - u[i])
            return float(np.exp(v) if log_x else v)
    return float("nan")
