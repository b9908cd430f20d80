"""Turning runs into quoted numbers: means over seeds and deviations from theory."""

import numpy as np
import xarray as xr

from .. import _validate
from ..stats import max_abs_t_quantile_mixed, rms_t_expected, welch_dof
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


def deviations(sim, theory, theory_se, *, n_theory, variables=("eg", "train_loss"), every=5,
               t_until=None):
    """|simulation mean - DMFT mean| / combined standard error, and each one's Welch
    degrees of freedom (:func:`tsdyn.stats.welch_dof`), over every ``every``-th simulation time after
    t = 0 (and before ``t_until``, if given) and ``variables``; points with a zero
    standard error are left out.

    ``sim`` from :func:`simulate_seeds` (its ``seeds`` attribute is its number of runs),
    ``theory``/``theory_se`` from :func:`solve_seeds` with ``n_theory`` Monte Carlo seeds.
    """
    t = sim.t.values[every::every]
    if t_until is not None:
        _validate.real("t_until", t_until, low=0.0, low_open=True, doc="end of the time window")
        t = t[t < t_until]
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


def yardstick(results, *, n_theory, variables=("eg", "train_loss"), every=5, t_until=None):
    """Deviations of several simulated curves from their DMFT, pooled (:func:`deviations`).

    ``results``: iterable of (theory mean, theory standard error, simulation) triples
    (:func:`solve_seeds`, :func:`simulate_seeds`), the theory with ``n_theory`` seeds.
    Returns a dict: ``max_z`` and ``rms_z`` (largest and root-mean-square deviation in
    combined standard errors), ``z95`` (95% quantile of the largest of that many
    independent |t| variables with the deviations' Welch dof,
    :func:`tsdyn.stats.max_abs_t_quantile_mixed`), ``rms_expected`` (:func:`tsdyn.stats.rms_t_expected`),
    ``dof_min``, ``dof_median`` and ``n`` (number of deviations).
    """
    zs, dofs = [], []
    for th, th_se, sim in results:
        z, dof = deviations(sim, th, th_se, n_theory=n_theory, variables=variables, every=every,
                            t_until=t_until)
        zs.append(z)
        dofs.append(dof)
    z, dof = np.concatenate(zs), np.concatenate(dofs)
    if z.size == 0:
        raise ValueError(f"t_until (end of the time window) {t_until!r} leaves no deviation to measure")
    return dict(max_z=float(z.max()), rms_z=float(np.sqrt(np.mean(z ** 2))),
                z95=max_abs_t_quantile_mixed(dof, q=0.95), rms_expected=rms_t_expected(dof),
                dof_min=float(dof.min()), dof_median=float(np.median(dof)), n=int(z.size))


def mean_se(x):
    """Mean and standard error of the mean of independent values (ddof = 1)."""
    x = np.asarray(x, float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"x (independent values) must be a 1-d array of at least 2; got shape {x.shape}")
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size))


def difference(a, b):
    """Difference of the means of two independent samples of run averages, a - b.

    Returns a dict: ``diff``, ``se`` (combined standard error), ``z`` = |diff|/se,
    ``dof`` (:func:`tsdyn.stats.welch_dof`) and ``p`` (two-sided Student t p-value of z at that dof).
    """
    from scipy.stats import t as student

    (ma, sa), (mb, sb) = mean_se(a), mean_se(b)
    se = float(np.hypot(sa, sb))
    dof = float(welch_dof(sa, len(a), sb, len(b)))
    z = abs(ma - mb) / se
    return dict(diff=ma - mb, se=se, z=float(z), dof=dof, p=float(2 * student.sf(z, dof)))


def late_gap_sweep(params, t_max, *, n_samples, ds, seeds, d_ref, n_samples_ref, k_sim, k_th,
                   t_from=None, variables=("train_loss", "eg")):
    """Late-time plateau of the simulations against the DMFT, over d and n_samples.

    Each run (a training set at dimension d in ``ds``; a DMFT Monte Carlo seed at each
    number of samples in ``n_samples``; ``seeds`` runs per point, seeds 0, 1, ...) is
    reduced to its time average over t >= ``t_from`` (default 3 t_max / 4,
    :func:`window_means`). The simulations are also run at half the step (eta/2, the
    same training sets and initial weights) at ``d_ref``. At (``d_ref``,
    ``n_samples_ref``) the runs are split into the first ``k_sim`` training sets / ``k_th``
    Monte Carlo seeds (e.g. those of a figure made with the same seeds) and the others,
    which are independent of them.

    Returns a dict with ``th`` {n_samples: {var: run averages}}, ``sim`` {d: {var: ...}},
    ``half`` {var: ...} (eta/2 at d_ref); and, per variable, ``gaps[var][(d, ns)]``,
    ``first[var]``, ``rest[var]``, ``all[var]`` (each a :func:`difference`, simulation
    minus DMFT), ``eta_diff[var]`` (mean and standard error of the paired difference
    eta/2 minus eta, same training sets), ``th_spread``/``sim_spread`` (largest minus
    smallest mean over n_samples / over d) and ``th_se``/``sim_se`` (largest standard error).
    """
    from dataclasses import replace

    from .simulate import simulate as _sim

    for name, vals in (("n_samples", n_samples), ("ds", ds)):
        if not isinstance(vals, (list, tuple)) or not vals:
            raise ValueError(f"{name} must be a non-empty list of integers; got {vals!r}")
    _validate.integer("seeds", seeds, low=4, doc="runs per point (two groups of at least 2)")
    if d_ref not in ds:
        raise ValueError(f"d_ref (dimension of the split and of the eta/2 runs) must be one of ds={list(ds)}; got {d_ref!r}")
    if n_samples_ref not in n_samples:
        raise ValueError(f"n_samples_ref (DMFT samples of the split) must be one of n_samples={list(n_samples)}; "
                         f"got {n_samples_ref!r}")
    for name, k in (("k_sim", k_sim), ("k_th", k_th)):
        _validate.integer(name, k, low=2, doc="runs in the first group")
        if k > seeds - 2:
            raise ValueError(f"{name} (runs in the first group) must be <= seeds - 2 = {seeds - 2} "
                             f"(the other group needs two); got {k!r}")
    t_from = 0.75 * t_max if t_from is None else t_from

    def reduce(runs):
        return {v: window_means(runs, v, t_from) for v in variables}

    th = {ns: reduce(solve_seeds(params, t_max, seeds=seeds, n_samples=ns)[2]) for ns in n_samples}
    sim = {d: reduce([_sim(params, t_max, d=d, seed=s) for s in range(seeds)]) for d in ds}
    half_p = replace(params, eta=params.eta / 2)
    half = reduce([_sim(half_p, t_max, d=d_ref, seed=s) for s in range(seeds)])
    out = dict(th=th, sim=sim, half=half, t_from=t_from, gaps={}, first={}, rest={}, all={},
               eta_diff={}, th_spread={}, sim_spread={}, th_se={}, sim_se={})
    for v in variables:
        out["gaps"][v] = {(d, ns): difference(sim[d][v], th[ns][v]) for ns in n_samples for d in ds}
        a, b = sim[d_ref][v], th[n_samples_ref][v]
        out["first"][v] = difference(a[:k_sim], b[:k_th])
        out["rest"][v] = difference(a[k_sim:], b[k_th:])
        out["all"][v] = difference(a, b)
        out["eta_diff"][v] = mean_se(half[v] - sim[d_ref][v])
        th_means = [mean_se(th[ns][v])[0] for ns in n_samples]
        sim_means = [mean_se(sim[d][v])[0] for d in ds]
        out["th_spread"][v] = max(th_means) - min(th_means)
        out["sim_spread"][v] = max(sim_means) - min(sim_means)
        out["th_se"][v] = max(mean_se(th[ns][v])[1] for ns in n_samples)
        out["sim_se"][v] = max(mean_se(sim[d][v])[1] for d in ds)
    return out
