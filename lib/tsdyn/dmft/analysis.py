"""Turning runs into quoted numbers: means over seeds and deviations from theory."""

import numpy as np
import xarray as xr

from .. import _validate
from .simulate import simulate

VARIABLES = ("m", "C_diag", "eg", "train_loss", "train_acc", "train_energy")


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


def welch_dof(se_a, n_a, se_b, n_b):
    """Welch-Satterthwaite degrees of freedom of (mean_a - mean_b) / hypot(se_a, se_b).

    se_a, se_b: standard errors of two means from n_a and n_b independent runs. Between
    min(n_a, n_b) - 1 (one error bar dominates) and n_a + n_b - 2 (equal variances).
    """
    va, vb = np.asarray(se_a, float) ** 2, np.asarray(se_b, float) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))


def deviations(sim, theory, theory_se, *, n_theory, variables=("eg", "train_loss"), every=5):
    """|simulation mean - DMFT mean| / combined standard error, and each one's Welch
    degrees of freedom (:func:`welch_dof`), over every ``every``-th simulation time after
    t = 0 and ``variables``; points with a zero standard error are left out.

    ``sim`` from :func:`simulate_seeds` (its ``seeds`` attribute is its number of runs),
    ``theory``/``theory_se`` from :func:`solve_seeds` with ``n_theory`` Monte Carlo seeds.
    """
    t = sim.t.values[every::every]
    n_sim = int(sim.attrs["seeds"])
    zs, dofs = [], []
    for v in variables:
        s = sim[v].sel(t=t, method="nearest").values
        se_s = sim[v + "_se"].sel(t=t, method="nearest").values
        th = theory[v].sel(t=t, method="nearest").values
        se_t = theory_se[v].sel(t=t, method="nearest").values
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs(s - th) / np.hypot(se_s, se_t)
        dof = welch_dof(se_s, n_sim, se_t, n_theory)
        ok = np.isfinite(z) & np.isfinite(dof)
        zs.append(z[ok])
        dofs.append(dof[ok])
    return np.concatenate(zs), np.concatenate(dofs)


def max_abs_t_quantile_mixed(dofs, q=0.95):
    """Quantile ``q`` of the largest of independent |t| variables with degrees of freedom
    ``dofs`` (one each): the x with prod_i P(|t_dof_i| < x) = q (root of a monotone function)."""
    from scipy.optimize import brentq
    from scipy.stats import t as student

    dofs = np.asarray(dofs, float)
    _validate.real("q", q, low=0.0, high=1.0, low_open=True, high_open=True, doc="quantile")
    if dofs.size == 0 or np.any(dofs <= 0):
        raise ValueError(f"dofs (degrees of freedom) must be a non-empty list of positive numbers; got {dofs!r}")

    def f(x):
        return np.sum(np.log1p(-2.0 * student.sf(x, dofs))) - np.log(q)

    return float(brentq(f, 1e-6, 1e3))


def rms_t_expected(dofs):
    """Root-mean-square of independent t variables with these degrees of freedom
    (each has variance dof/(dof - 2); needs every dof > 2)."""
    dofs = np.asarray(dofs, float)
    if dofs.size == 0 or np.any(dofs <= 2):
        raise ValueError(f"dofs (degrees of freedom) must all be > 2 for a finite variance; got {dofs!r}")
    return float(np.sqrt(np.mean(dofs / (dofs - 2))))


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


def window_means(runs, var, t_from):
    """Each run's time average of ``var`` over t >= ``t_from`` (one number per run).

    A late-time plateau is a single number per run: its points are strongly correlated in
    time, so its error bar must come from the spread of these run averages over
    independent runs, not from the per-time error bars. Returns an array (len(runs),).
    """
    _validate.real("t_from", t_from, low=0.0, doc="start of the time window")
    out = np.array([float(r[var].sel(t=slice(t_from, None)).mean()) for r in runs])
    if not np.all(np.isfinite(out)):
        raise ValueError(f"t_from (start of the time window) {t_from!r} leaves no finite "
                         f"values of {var!r} in some run")
    return out
