"""One layout for the results of the simulation and of the theory (same variables, same axes)."""

import numpy as np
import xarray as xr

from .. import __version__
from . import _kernels


def times(t_max, n_points, spacing):
    """Recording times in steps/N: ``n_points`` values from 0 to ``t_max``.

    ``spacing``: "linear" (evenly spaced), "log" (0, then log-spaced from
    min(0.01, t_max / 10)), or "log+linear": the union of a log grid and a linear
    grid of ``n_points // 2`` points each (about ``n_points`` in all), for a run drawn
    on a log time axis whose late part is also averaged over evenly spaced times.
    """
    if spacing == "linear":
        return np.linspace(0.0, t_max, n_points)
    if spacing == "log":
        first = min(1e-2, t_max / 10.0)
        return np.concatenate([[0.0], np.geomspace(first, t_max, n_points - 1)])
    if spacing == "log+linear":
        half = max(n_points // 2, 2)
        return np.union1d(times(t_max, half, "log"), times(t_max, half, "linear"))
    raise ValueError(f"spacing must be 'linear', 'log' or 'log+linear'; got {spacing!r}")


def overlaps_dataset(params, t, R, Q, v, T, *, t_diverged, kind, attrs=None):
    """Dataset over ``t`` with eg, Q, R, v, T, diverged, t_diverged.

    ``eg`` is the exact generalisation error of networks with these overlaps
    (Goldt et al. eq. 4, without the label noise); entries after a divergence are
    NaN and flagged by ``diverged``.
    """
    eg = np.full(len(t), np.nan)
    v_star = params.v_star_vector()
    for n in range(len(t)):
        if np.all(np.isfinite(Q[n])):
            eg[n] = _kernels.generalisation_error(params.act, Q[n], R[n], T, v[n], v_star)
    ds = xr.Dataset(
        {
            "eg": (("t",), eg, {"long_name": "generalisation error", "units": "1"}),
            "Q": (("t", "k", "k2"), Q, {"long_name": "student-student overlap w_i.w_k/N"}),
            "R": (("t", "k", "m"), R, {"long_name": "student-teacher overlap w_i.w*_n/N"}),
            "v": (("t", "k"), v, {"long_name": "student second-layer weights"}),
            "T": (("m", "m2"), T, {"long_name": "teacher-teacher overlap w*_n.w*_m/N"}),
            "diverged": ((), bool(np.isfinite(t_diverged))),
            "t_diverged": ((), float(t_diverged), {"units": "SGD steps / N"}),
        },
        coords={
            "t": ("t", np.asarray(t, float), {"units": "SGD steps / N",
                                              "samples_per_unit": params.batch * params.N}),
            "k": np.arange(params.K), "k2": np.arange(params.K),
            "m": np.arange(params.M), "m2": np.arange(params.M),
        },
        attrs={**params.attrs(), "kind": kind, "tsdyn_version": __version__, **(attrs or {})},
    )
    return ds
