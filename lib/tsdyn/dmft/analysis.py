"""Turning runs into quoted numbers: means over seeds and deviations from theory."""

from functools import partial

import numpy as np
import xarray as xr

from .. import _seeds, _validate, sweep
from ..stats import bootstrap_median, max_abs_t_quantile_mixed, rms_t_expected, welch_dof
from .simulate import simulate

VARIABLES = ("m", "C_diag", "eg", "train_loss", "train_acc", "train_energy")


def curve_seed(*key):
    """The root SeedSequence of one curve, derived from its ``key`` (any values with a
    stable ``repr``: strings, numbers, tuples, dicts of them).

    Different curves get unrelated seeds, so their Monte Carlo errors are independent and a
    fluctuation of one set of runs is never shared by every curve of a chapter. The
    entropy is the SHA-256 of the key's ``repr`` (dicts sorted by key): the same key gives
    the same runs in every session.
    """
    import hashlib

    def canon(x):
        if isinstance(x, dict):
            return tuple(sorted((str(k), canon(v)) for k, v in x.items()))
        if isinstance(x, (list, tuple)):
            return tuple(canon(v) for v in x)
        if isinstance(x, (float, np.floating)):
            return float(x)
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            return int(x)
        return x

    digest = hashlib.sha256(repr(canon(key)).encode()).digest()
    return np.random.SeedSequence(int.from_bytes(digest[:16], "little"))


def _map(fn, points, executor, cache):
    """``fn(**kw, seed=seed)`` at each ``(kw, seed)`` of ``points``, in order
    (:func:`tsdyn.sweep.each`): serially (``executor=None``) or on a
    ``concurrent.futures``-style executor (:func:`tsdyn.sweep.executor`: local processes or
    a Dask cluster). Every point carries its own seed, so the results do not depend on it.
    With ``cache`` (a directory), each finished run is stored there and found again by a
    later call with the same parameters, seed and code: a paper-scale chapter can be run
    in pieces."""
    return sweep.each(fn, points, sweep.SERIAL if executor is None else executor, cache)


def _solver():
    from .solve import solve  # solve imports this module's siblings; import late

    return solve


def simulate_seeds(params, t_max, *, d, seeds, init="fixed", seed=None, executor=None, cache=None):
    """Mean and standard error over ``seeds`` independent runs (data, init and batches).

    Run ``i`` uses child ``i`` of ``seed`` (default: :func:`curve_seed` of the parameters,
    ``d`` and ``init``, so every curve has its own training sets; pass the same ``seed``
    to two calls to pair them, e.g. the same training sets at another learning rate).
    ``executor`` runs them in parallel and ``cache`` keeps each run on disk (:func:`_map`);
    the result is the same.

    Returns a Dataset with ``<var>`` (mean), ``<var>_se`` and ``<var>_run`` (seed, t), the
    runs themselves, for m, C_diag, eg, train_loss, train_acc, train_energy, and the
    number of diverged runs.
    """
    _validate.integer("seeds", seeds, low=2, doc="independent runs (error bars need two)")
    root = curve_seed("simulation", params.attrs(), d, init) if seed is None else seed
    runs = _map(partial(simulate, params, t_max, d=d, init=init),
                [({}, s) for s in _seeds.children(root, seeds)], executor, cache)
    out = {}
    for v in VARIABLES:
        vals = np.stack([r[v].values for r in runs])
        out[v] = ("t", vals.mean(0), runs[0][v].attrs)
        out[v + "_se"] = ("t", vals.std(0, ddof=1) / np.sqrt(seeds))
        out[v + "_run"] = (("seed", "t"), vals)
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


def solve_seeds(params, t_max, *, seeds, seed=None, executor=None, cache=None, **solve_kw):
    """:func:`tsdyn.dmft.solve` with independent Monte Carlo seeds: mean and standard error.

    Seed ``i`` is child ``i`` of ``seed`` (default: :func:`curve_seed` of the parameters,
    so every curve has its own Monte Carlo samples). The key leaves out ``n_samples``: the
    counter-based samples of a seed are nested, so the same call with 4 ``n_samples``
    reuses the first quarter's samples (paired runs, :func:`bias_check`). ``executor``
    runs the seeds in parallel and ``cache`` keeps each solution on disk (:func:`_map`);
    the result is the same.

    Returns (mean Dataset of the first-order observables, their standard errors, the list
    of solutions).
    """
    _validate.integer("seeds", seeds, low=2, doc="Monte Carlo seeds")
    root = curve_seed("dmft", params.attrs()) if seed is None else seed
    sols = _map(partial(_solver(), params, t_max),
                [(solve_kw, s) for s in _seeds.children(root, seeds)], executor, cache)
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


def log_windows(t_max, n=5):
    """``n`` time windows doubling in length up to ``t_max``: (0, t_max/2^(n-1)], ...,
    (t_max/4, t_max/2], (t_max/2, t_max] (learning curves are read on a log time axis)."""
    _validate.real("t_max", t_max, low=0.0, low_open=True, doc="end of the last window")
    _validate.integer("n", n, low=1, doc="number of windows")
    edges = [0.0] + [t_max / 2 ** k for k in range(n - 1, -1, -1)]
    return list(zip(edges[:-1], edges[1:]))


def _in_window(t, window):
    lo, hi = window
    return (t > lo + 1e-12) & (t <= hi + 1e-12)


def window_deviations(sols, sim, *, windows, variables=("eg", "train_loss")):
    """Simulation minus DMFT, one comparison per time window and variable, at the level
    of independent runs.

    Each simulated run (``sim[var + "_run"]``, :func:`simulate_seeds`) and each DMFT
    Monte Carlo seed (``sols``, :func:`solve_seeds`) is reduced to its time average over
    the window (lo, hi]; the two sets of run averages are independent samples, compared
    by :func:`difference` (Welch). The runs of one curve are shared by its windows, so
    the windows of a curve are correlated; different curves (distinct seeds) are not.

    Returns a list of dicts: ``var``, ``window`` and the fields of :func:`difference`.
    """
    t = sim.t.values
    rows = []
    for v in variables:
        runs = sim[v + "_run"].values
        for w in windows:
            sel = _in_window(t, w)
            if not sel.any():
                raise ValueError(f"windows: {w!r} holds no simulated time point")
            a = runs[:, sel].mean(1)
            b_ = np.array([float(s[v].values[_in_window(s.t.values, w)].mean()) for s in sols])
            rows.append(dict(var=v, window=tuple(w), **difference(a, b_)))
    return rows


def yardstick(results, *, windows, variables=("eg", "train_loss")):
    """Deviations of several simulated curves from their DMFT, per time window
    (:func:`window_deviations`), summarised.

    ``results``: iterable of (DMFT solutions, simulation) pairs (:func:`solve_seeds`'s
    list, :func:`simulate_seeds`). Returns a dict: ``max_z`` and ``rms_z`` (largest and
    root-mean-square deviation in standard errors of the window means), ``z95`` (95%
    quantile of the largest of that many independent |t| variables with the deviations'
    Welch dof, :func:`tsdyn.stats.max_abs_t_quantile_mixed`), ``rms_expected``
    (:func:`tsdyn.stats.rms_t_expected`), ``dof_min``, ``dof_median``, ``n`` and ``rows``
    (every deviation).
    """
    rows = [r for sols, sim in results for r in window_deviations(sols, sim, windows=windows,
                                                                  variables=variables)]
    if not rows:
        raise ValueError("results must hold at least one (solutions, simulation) pair")
    z, dof = np.array([r["z"] for r in rows]), np.array([r["dof"] for r in rows])
    return dict(max_z=float(z.max()), rms_z=float(np.sqrt(np.mean(z ** 2))),
                z95=max_abs_t_quantile_mixed(dof, q=0.95), rms_expected=rms_t_expected(dof),
                dof_min=float(dof.min()), dof_median=float(np.median(dof)), n=int(z.size),
                rows=rows)


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


def bias_check(params, t_max, *, n_samples, seeds, factor=4, n_resp=None, n_resp_alt=None,
               t_from=None, variables=("train_loss", "eg"), seed=None, executor=None, cache=None):
    """Finite-sample bias of the DMFT, from paired solves.

    For each of ``seeds`` Monte Carlo seeds the DMFT is solved three times with the same
    seed: ``n_samples`` effective samples (``n_resp`` of them for the response; default
    that of :func:`~tsdyn.dmft.solve`), ``factor * n_samples`` (the counter-based samples
    are nested: the first ``n_samples`` are the same ones), and ``n_samples`` with
    ``n_resp_alt`` response samples. Each solve is reduced to its time average over
    t >= ``t_from`` (default 3 t_max/4). Pairing removes most of the Monte Carlo noise
    from the differences, so a bias of the finite sample (O(1/n_samples), O(1/n_resp))
    is resolved far below the spread of single solves.

    Returns a dict: ``base``, ``big``, ``resp`` ({var: run averages}), ``d_samples`` and
    ``d_resp`` ({var: (mean, standard error)} of the paired differences big - base and
    resp - base), ``sols_big`` (the ``factor * n_samples`` solutions), ``t_from``,
    ``n_resp``, ``n_resp_alt``. ``executor`` runs the solves in parallel and ``cache``
    keeps them on disk (:func:`_map`).
    """
    _validate.integer("n_samples", n_samples, low=2, doc="Monte Carlo samples")
    _validate.integer("seeds", seeds, low=2, doc="Monte Carlo seeds (error bars need two)")
    _validate.integer("factor", factor, low=2, doc="ratio of the larger sample")
    n_resp = min(n_samples, 1000) if n_resp is None else n_resp
    n_resp_alt = n_samples if n_resp_alt is None else n_resp_alt
    t_from = 0.75 * t_max if t_from is None else t_from
    root = curve_seed("dmft", params.attrs()) if seed is None else seed
    kinds = {"base": dict(n_samples=n_samples, n_resp=n_resp),
             "big": dict(n_samples=factor * n_samples, n_resp=n_resp),
             "resp": dict(n_samples=n_samples, n_resp=n_resp_alt)}
    children = _seeds.children(root, seeds)
    sols = _map(partial(_solver(), params, t_max), [(kw, s) for s in children for kw in kinds.values()],
                executor, cache)
    runs = {k: sols[i::len(kinds)] for i, k in enumerate(kinds)}
    avg = {k: {v: window_means(r, v, t_from) for v in variables} for k, r in runs.items()}
    return dict(**avg, t_from=t_from, n_resp=n_resp, n_resp_alt=n_resp_alt, sols_big=runs["big"],
                d_samples={v: mean_se(avg["big"][v] - avg["base"][v]) for v in variables},
                d_resp={v: mean_se(avg["resp"][v] - avg["base"][v]) for v in variables})


def finite_d_sweep(params, t_max, *, ds, seeds, d_half=None, t_from=None,
                   variables=("train_loss", "eg"), executor=None, cache=None):
    """Simulations at several dimensions, each run reduced to its late time average.

    Every d has its own training sets (:func:`curve_seed`); at ``d_half`` (default the
    first of ``ds``) the same training sets and initial weights are also trained at half
    the learning rate, eta/2, for a paired step-size check. Returns a dict: ``sim``
    ({d: {var: run averages}}), ``half`` ({var: run averages}), ``eta_diff`` ({var: (mean,
    standard error) of the paired difference eta/2 minus eta}) and ``t_from``. ``executor``
    runs the simulations in parallel and ``cache`` keeps them on disk (:func:`_map`); the
    result is the same.
    """
    from dataclasses import replace

    if not isinstance(ds, (list, tuple)) or not ds:
        raise ValueError(f"ds must be a non-empty list of integers; got {ds!r}")
    d_half = ds[0] if d_half is None else d_half
    if d_half not in ds:
        raise ValueError(f"d_half (dimension of the eta/2 runs) must be one of ds={list(ds)}; "
                         f"got {d_half!r}")
    t_from = 0.75 * t_max if t_from is None else t_from

    def reduce(sim):
        t = sim.t.values >= t_from - 1e-12
        return {v: sim[v + "_run"].values[:, t].mean(1) for v in variables}

    sim = {d: reduce(simulate_seeds(params, t_max, d=d, seeds=seeds, executor=executor, cache=cache))
           for d in ds}
    root = curve_seed("simulation", params.attrs(), d_half, "fixed")
    half = reduce(simulate_seeds(replace(params, eta=params.eta / 2), t_max, d=d_half, seeds=seeds,
                                 seed=root, executor=executor, cache=cache))
    return dict(sim=sim, half=half, t_from=t_from,
                eta_diff={v: mean_se(half[v] - sim[d_half][v]) for v in variables})


def crossing_times(values, t, level):
    """First time each run reaches ``level`` from below (inf if it never does).

    ``values``: array (runs, t) (e.g. the magnetisation of each run); ``t``: the times.
    An escape time from an unstable point is heavy-tailed across runs: summarise it with
    :func:`median_ci`, never by a mean (runs that never cross count as censored, inf).
    """
    values = np.atleast_2d(np.asarray(values, float))
    t = np.asarray(t, float)
    if values.shape[1] != t.size:
        raise ValueError(f"values (runs, t) must have {t.size} columns; got shape {values.shape}")
    hit = values >= level
    return np.where(hit.any(1), t[np.argmax(hit, 1)], np.inf)


def escape_times(m, t, level):
    """Escape time of each run from the unstable point m = 0 of a model symmetric under
    w -> -w, and the number of runs that escaped to the negative side.

    The three-cluster loss depends on w only through r^2 (the classifier is
    sign(r^2 - L^2), Mignacco et al. 2020, eq. (3) with Phi(r) = r^2 - L^2), so m and -m
    are the same state and a run started at m0 > 0 may escape towards m < 0. The escape
    time is therefore the first time |m| reaches ``level`` (:func:`crossing_times` of
    |m|), inf for a run that never does; a signed crossing time would count a run that
    escaped to m < 0 as never escaping. ``m``: array (runs, t); ``t``: the times.

    Returns (times, n_flipped), ``n_flipped`` the number of runs with m < 0 at the last
    time (the runs a signed crossing time would have censored, if they escaped).
    """
    m = np.atleast_2d(np.asarray(m, float))
    _validate.real("level", level, low=0.0, low_open=True, doc="escape level of |m|")
    return crossing_times(np.abs(m), t, level), int(np.sum(m[:, -1] < 0))


def median_difference_ci(a, b, *, q=0.95, n_boot=2000, seed=0):
    """Difference of the medians of two independent samples, median(a) - median(b), with a
    percentile bootstrap interval (each sample resampled on its own).

    Infinite values (censored runs) rank above every finite value; a resampled difference
    of two infinite medians is undefined and counts as +inf, so a bound that depends on
    censored runs is reported as inf rather than as a number. Returns (diff, low, high).
    """
    a, b = (np.asarray(x, float) for x in (a, b))
    for name, x in (("a", a), ("b", b)):
        if x.ndim != 1 or x.size < 2:
            raise ValueError(f"{name} (independent values) must be a 1-d array of at least 2; "
                             f"got shape {x.shape}")
    _validate.real("q", q, low=0.0, high=1.0, low_open=True, high_open=True, doc="coverage")
    _validate.integer("n_boot", n_boot, low=100, doc="bootstrap resamples")
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, size=(n_boot, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(n_boot, b.size))], axis=1)
    with np.errstate(invalid="ignore"):
        diff = ma - mb
        point = float(np.median(a) - np.median(b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    lo = np.quantile(diff, (1 - q) / 2, method="lower")
    hi = np.quantile(diff, 1 - (1 - q) / 2, method="higher")
    return (np.inf if np.isnan(point) else point), float(lo), float(hi)


def median_ci(x, *, q=0.95, n_boot=2000, seed=0):
    """Median of ``x`` and a percentile bootstrap interval (resampling the runs).

    Infinite values (censored runs) are kept: they count as above every finite value.
    Returns (median, low, high).
    """
    x = np.asarray(x, float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"x (independent values) must be a 1-d array of at least 2; got shape {x.shape}")
    _validate.real("q", q, low=0.0, high=1.0, low_open=True, high_open=True, doc="coverage")
    return tuple(float(v) for v in bootstrap_median(x, level=q, n_boot=n_boot, seed=seed))


def value_at(runs, t, t_obs):
    """Each run's value at time ``t_obs``, interpolated linearly between the two grid
    times around it (exact when ``t_obs`` is on the grid). ``runs``: array (runs, t)."""
    runs = np.atleast_2d(np.asarray(runs, float))
    t = np.asarray(t, float)
    _validate.real("t_obs", t_obs, low=float(t[0]), high=float(t[-1]) * (1 + 1e-12),
                   doc="observation time within the run")
    return np.array([np.interp(t_obs, t, r) for r in runs])


def paired_ratio(x, ref):
    """mean(x)/mean(ref) - 1 for paired runs (run i of ``x`` and of ``ref`` share their
    random numbers) and its delta-method standard error,
    sd(x - r ref)/(sqrt(n) mean(ref)) with r = mean(x)/mean(ref); zero when x is ref.
    Returns (deviation, se)."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    if x.shape != ref.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"x and ref (paired runs) must be 1-d arrays of the same length >= 2; "
                         f"got shapes {x.shape}, {ref.shape}")
    r = x.mean() / ref.mean()
    se = (x - r * ref).std(ddof=1) / (np.sqrt(x.size) * abs(ref.mean()))
    return float(r - 1.0), float(se)


def fdr_temperature(sol, *, window=1.0, t_obs=None):
    """Effective temperature of the weights' fluctuations from the fluctuation-dissipation
    relation of a DMFT solution (:func:`tsdyn.dmft.solve`), against the batch noise.

    At a late time t (``t_obs``, default the last), for t - window <= t' < t, the
    integrated response chi(t, t') = dt sum_{t' <= s < t} R(t, s) of a weight to a force
    per unit time and the decorrelation dC(t, t') = C_perp(t, t) - C_perp(t, t'), with
    C_perp = C - m m' (the part along v*, deterministic at d -> infinity, is left out). In a
    stationary state driven by a white noise of strength 2T per unit time,
    dC = T chi (the parametric plot is a line of slope 1/T); ``T_eff`` is the least-squares
    slope of dC against chi over the window.

    Prediction (derivation eq. E8 and the discrete process): the white part of the noise
    kernel, W = M_C(t, t) - M_C(t, t - dt) (for plain SGD at dt = eta, alpha Delta
    b (1 - b) <Lambda'^2> in the batch-independent approximation, whose smooth b^2 part is
    the frozen disorder of the training set that gradient descent also has), enters one
    step as eta xi with variance eta^2 W, i.e. 2T = eta W per unit t: ``T_pred`` = eta W/2.
    On the sample clock b t the response per unit b t is b chi, so the temperatures there
    are T/b (``T_eff_sample``, ``T_pred_sample`` = eta (1 - b)/b x M_C(t, t)/2 in that
    approximation: the talk's eta (1 - b)/b times the per-weight gradient variance). For
    gradient descent W = 0 and the weights settle: T_eff -> 0. Needs a stationary state
    (e.g. a ridge lam > 0 and t well beyond 1/lam), and the FDR holds only for lags short
    against the relaxation of the slowest directions; a single solution's ``T_eff``
    carries the Monte Carlo noise of its C, so average several (:func:`solve_seeds`).

    Returns a dict: T_eff, T_pred, T_eff_sample, T_pred_sample, temperature (eta (1 - b)),
    W, grad_var (M_C(t, t)/b = alpha Delta <Lambda'^2> of a sample in the batch, the gradient
    variance of one weight, which depends on the state the weights sit in), chi and dC (the
    parametric plot, lags increasing), t_obs.
    """
    for name in ("C", "R", "M_C", "m"):
        if name not in sol:
            raise ValueError(f"sol (a DMFT solution from dmft.solve) must hold {name!r}")
    t = sol.t.values
    dt = float(t[1] - t[0])
    k = len(t) - 1 if t_obs is None else int(round(t_obs / dt))
    _validate.integer("t_obs / dt", k, low=1, doc="index of the observation time")
    if k > len(t) - 1:
        raise ValueError(f"t_obs (observation time) must be <= {t[-1]:g}; got {t_obs!r}")
    _validate.real("window", window, low=dt, high=float(t[k]), doc="lag window, at least dt")
    m, C, R, MC = sol.m.values, sol.C.values, sol.R.values, sol.M_C.values
    Cp_kk = C[k, k] - m[k] * m[k]
    lags = np.arange(1, int(np.floor(window / dt + 1e-9)) + 1)
    js = k - lags
    chi = np.array([dt * R[k, j:k].sum() for j in js])
    dC = Cp_kk - (C[k, js] - m[k] * m[js])
    T_eff = float(dC @ chi / (chi @ chi))
    W = float(MC[k, k] - MC[k, k - 1])
    eta, b = float(sol.attrs["eta"]), float(sol.attrs["b"])
    T_pred = eta * W / 2.0
    return dict(T_eff=T_eff, T_pred=T_pred, T_eff_sample=T_eff / b, T_pred_sample=T_pred / b,
                temperature=eta * (1.0 - b), W=W, grad_var=float(MC[k, k]) / b, chi=chi, dC=dC,
                t_obs=float(t[k]))
