"""Turning runs into quoted numbers: means over seeds and deviations from theory."""

import numpy as np
import xarray as xr

from .. import _validate
from .simulate import simulate

VARIABLES = ("m", "C_diag", "eg", "train_loss", "train_acc")


def simulate_seeds(params, t_max, *, d, seeds, init="fixed"):
    """Mean and standard error over ``seeds`` independent runs (data, init and batches).

    Returns a Dataset with ``<var>`` (mean) and ``<var>_se`` for m, C_diag, eg,
    train_loss, train_acc, and the number of diverged runs.
    """
    _validate.integer("seeds", seeds, low=2, doc="independent runs (error bars need two)")
    runs = [simulate(params, t_max, d=d, seed=s, init=init) for s in range(seeds)]
    out = {}
    for v in VARIABLES:
        vals = np.stack([r[v].values for r in runs])
        out[v] = ("t", vals.mean(0), runs[0][v].attrs)
        out[v + "_se"] = ("t", vals.std(0, ddof=1) / np.sqrt(seeds))
    out["n_diverged"] = ((), sum(bool(r.diverged) for r in runs))
    return xr.Dataset(out, coords={"t": runs[0].t},
                      attrs={**runs[0].attrs, "kind": "simulation mean", "seeds": seeds})


def z_scores(sim, theory, variables=("eg", "train_loss"), every=5, theory_se=None):
    """All |simulation mean - theory| / standard error, over times and variables (1-d).

    ``sim`` from :func:`simulate_seeds`; ``theory`` a Dataset on a grid containing the
    simulation's times (every ``every``-th simulation time after t = 0 is used);
    ``theory_se``, optional Dataset of the theory's Monte Carlo standard errors, added in
    quadrature. Points with a zero standard error are left out.
    """
    t = sim.t.values[every::every]
    out = []
    for v in variables:
        s = sim[v].sel(t=t, method="nearest").values
        se = sim[v + "_se"].sel(t=t, method="nearest").values
        th = theory[v].sel(t=t, method="nearest").values
        if theory_se is not None:
            se = np.hypot(se, theory_se[v].sel(t=t, method="nearest").values)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs(s - th) / se
        out.append(z[np.isfinite(z)])
    return np.concatenate(out) if out else np.zeros(0)


def max_z(sim, theory, variables=("eg", "train_loss"), every=5, theory_se=None):
    """Largest of :func:`z_scores` (0 if there is none)."""
    z = z_scores(sim, theory, variables, every, theory_se)
    return float(z.max()) if len(z) else 0.0


def solve_seeds(params, t_max, *, seeds, **solve_kw):
    """:func:`tsdyn.dmft.solve` with independent Monte Carlo seeds: mean and standard error.

    Returns (mean Dataset of the first-order observables, their standard errors, the list
    of solutions).
    """
    from .solve import solve

    _validate.integer("seeds", seeds, low=2, doc="Monte Carlo seeds")
    sols = [solve(params, t_max, seed=s, **solve_kw) for s in range(seeds)]
    stack = xr.concat([s[list(VARIABLES)] for s in sols], dim="seed")
    return stack.mean("seed"), stack.std("seed", ddof=1) / np.sqrt(seeds), sols
