"""Composite runs that return plain numbers, in the form :func:`tsdyn.sweep.run` calls.

Each function simulates SGD, integrates the ODE from the run's own initial
overlaps, and reads the same quantity off both, so a sweep over seeds and
parameters can run on local processes or a Dask cluster.
"""

import dataclasses
import math

import numpy as np
import xarray as xr

from .. import _seeds, _validate
from ..stats import critical_batch
from .analysis import (escape_time, growth_rate, log_binned_mean, max_gap, plateau_stats,
                       stationary_error, unit_arrangement, weight_imbalance)
from .diffusion import diffuse, fastest_rate
from .params import Params
from .sampler import initial_overlaps, sample_overlaps
from .simulate import simulate
from .theory import (ODE_STARTS, critical_batch_linear_scm, eg_star_erf_scm, eg_star_linear_scm,
                     linear_scm_growth_rate, max_stable_eta_linear_scm, ode, paper_start, plateau,
                     rule_deviation_linear_scm)


def plateau_escape(*, seed, N, K, eta, t_max=None, n_points=400, method="network"):
    """Escape from the Saad-Solla plateau of an erf SCM with K = M, for SGD and its ODE.

    Both are measured with :func:`tsdyn.committee.plateau_stats` against the height
    of the symmetric plateau (:func:`tsdyn.committee.plateau`). ``t_max`` defaults
    to three times the predicted escape time ln N / (2 lambda_max) plus 100 / eta.
    ``method`` is that of :func:`simulate` ("network", or "overlaps" for the
    exact-in-law overlap sampler, whose cost per step does not grow with N).

    Returns
    -------
    dict
        ``sgd`` and ``ode``: escape times in steps/N (inf if not within t_max);
        ``sgd_height`` and ``ode_height``: the measured plateau heights;
        ``plateau``: the height of the symmetric fixed point.
    """
    p = Params(N=N, M=K, K=K, eta=eta)
    fixed = plateau(p)
    if t_max is None:
        t_max = 3 * math.log(N) * fixed["log_n_slope"] + 100 / eta
    run = simulate(p, t_max, seed=seed, n_points=n_points, method=method)
    sgd = plateau_stats(run, fixed["eg"])
    theory = plateau_stats(ode(p, init=run), fixed["eg"])
    return {"sgd": sgd[0], "ode": theory[0], "sgd_height": sgd[1], "ode_height": theory[1],
            "plateau": fixed["eg"]}


def plateau_fluctuations(*, seed, N, K, eta, t_max, windows, method="overlaps", dt=0.1,
                         n_noise=4, height=None):
    """One run through the Saad-Solla plateau (K = M, erf, no label noise) against the ODE from
    its start: the escape times and the largest distance between the two in time windows.

    ``method``: "overlaps" (the exact-in-law sampler, :func:`tsdyn.committee.sample_overlaps`),
    "network" (:func:`tsdyn.committee.simulate`), or "diffusion": a path of the finite-N
    diffusion (D2) of :mod:`tsdyn.committee.diffusion` (Euler-Maruyama step ``dt``, noise
    from ``n_noise`` increments), from the same random start as the sampler's run with this
    seed. Recorded at every unit of t. Escape: the first recorded time with eps_g below half
    the height of the symmetric plateau (:func:`tsdyn.committee.plateau`), inf if none.

    Parameters
    ----------
    windows : sequence of (t_a, t_b)
        Time windows (steps/N) within [0, t_max] over which sup |eps_g^run - eps_g^ODE| is taken.
    height : float, optional
        The plateau height (default: computed by :func:`tsdyn.committee.plateau`; pass it to
        save that computation in a sweep over seeds).

    Returns
    -------
    dict
        ``run``, ``ode``: escape times of the run and of the ODE from its start;
        ``gap`` (len(windows)): sup over each window of |eps_g^run - eps_g^ODE|.
    """
    windows = np.asarray(windows, float)
    if windows.ndim != 2 or windows.shape[1] != 2 or np.any(windows[:, 1] <= windows[:, 0]):
        raise ValueError(f"windows must be pairs (t_a, t_b) with t_a < t_b; got {windows.tolist()}")
    if windows.min() < 0 or windows.max() > t_max:
        raise ValueError(f"windows must lie within [0, t_max = {t_max:g}]; got {windows.tolist()}")
    p = Params(N=N, M=K, K=K, eta=eta)
    if height is None:
        height = plateau(p)["eg"]
    n_points = int(math.ceil(t_max)) + 1
    if method == "diffusion":
        run = diffuse(p, t_max, seed=seed, n_points=n_points, dt=dt, n_noise=n_noise)
    else:
        run = simulate(p, t_max, seed=seed, n_points=n_points, method=method)
    theory = ode(p, init=run)
    t, gap = run.t.values, np.abs(run.eg.values - theory.eg.values)
    sup = [float(np.max(gap[(t >= a) & (t <= b)])) for a, b in windows]
    return {"run": escape_time(run, height / 2), "ode": escape_time(theory, height / 2),
            "gap": np.array(sup)}


def sgd_ode_gap(*, seed, t_max, n_points=41, method="network", **params):
    """sup_t |eps_g^SGD - eps_g^ODE| of one run against the ODE from its own start.

    The quantity bounded by C(T) / sqrt(N) in Theorem 1 of Goldt et al.;
    ``params`` are the :class:`Params` fields, ``method`` that of :func:`simulate`
    ("network", or "overlaps" for the exact-in-law overlap sampler).
    """
    run, theory = run_with_ode(Params(**params), t_max, seed, n_points=n_points, method=method)
    return {"gap": max_gap(run, theory)}


def linear_growth_rate(*, seed, N, K, x, batch, n_points=9):
    """Growth rate of ln eps_g of a noiseless linear SCM at eta = x 2B/K, from one run.

    The run lasts t = 2/B; rates are returned divided by 4B, the unit in which
    lambda / (4B) = x (x - 1) for every batch size as N -> infinity
    (:func:`tsdyn.committee.linear_scm_growth_rate`).

    Returns
    -------
    dict
        ``sgd``: the rate of one run; ``exact``: the rate of the mean distance at
        this N; ``typical_shift``: 4 x^2 (x - 1)^2 / N, the leading amount by which
        the rate of ln d in one run lies below the rate of its mean. (Per step d
        changes by the factor 1 + xi with xi = (lambda / N) u2, where u2, the batch
        mean of u^2 / d, has mean 1 and variance 2 / B; E ln(1 + xi) is lower than
        ln E(1 + xi) by Var(xi) / 2, i.e. by lambda^2 / (B N) per unit t.)
    """
    eta = x * max_stable_eta_linear_scm(K, batch)
    p = Params(N=N, M=K, K=K, eta=eta, g="linear", batch=batch)
    run = simulate(p, 2.0 / batch, seed=seed, n_points=n_points)
    scale = 4.0 * batch
    return {"sgd": growth_rate(run) / scale,
            "exact": linear_scm_growth_rate(p, finite_size=True) / scale,
            "typical_shift": 4.0 * (x * (x - 1.0)) ** 2 / N}


def _spare_norm(ds, n_spare):
    """Largest squared norm Q_aa among the ``n_spare`` student units with the smallest
    overlap max_n |R_an| with the teacher at the end of ``ds`` (0: all switched off)."""
    if n_spare == 0:
        return 0.0
    end = ds.isel(t=-1)
    spare = np.argsort(np.abs(end.R.values).max(axis=1))[:n_spare]
    return float(np.diag(end.Q.values)[spare].max())


def asymptotic_error(*, seed, t_max, n_points=400, later=10.0, extend=100.0, n_bins=10,
                     method="overlaps", **params):
    """The error an SCM with label noise settles at: one run, its ODE, and the closed form.

    The run and the ODE from its own start are averaged over the second half, t in
    [t_max / 2, t_max] (batch-means error for the run). The closed form is evaluated at
    the run's own teacher overlaps T: eq. (10) of Goldt et al. (first order in sigma^2,
    :func:`eg_star_erf_scm`) for erf, the exact finite-N eq. (12)
    (:func:`eg_star_linear_scm`) for linear networks. Stationarity is measured twice: the
    run's means over [t/2, 3t/4) and [3t/4, t] in units of their batch-means errors, and
    the ODE's value at ``later`` times t_max relative to its window mean.

    The approach is also returned on a logarithmic time axis, relative to the closed
    form: the run's eps_g averaged over ``n_bins`` geometric bins from t_max / 100 to
    t_max (:func:`log_binned_mean`), and the ODE from the run's start continued to
    ``extend`` times t_max (Fig. 2a at late times, where the noiseless fixed point is
    degenerate and the approach is slow).

    Returns
    -------
    dict
        ``sgd``, ``sgd_se``, ``ode``, ``closed``; ``sgd_drift_z`` (second window minus
        first, in standard errors), ``ode_drift`` (relative change between the ODE's two
        windows), ``ode_later`` (ODE at later * t_max over its window mean, minus 1);
        ``spare_sgd``, ``spare_ode``: the largest squared norm of the K - M units least
        aligned with the teacher at the end (0 when they are switched off);
        ``noise_free``: eps_g of the ODE continued from its end state for t_max without
        label noise, over its window mean (near 1 for an imperfect fixed point whose
        error the noise does not cause; near 0 when the error is the noise's);
        ``curve_t``, ``curve_sgd``: bin centres and the run's bin means of eps_g over
        the closed form; ``ode_t``, ``curve_ode``: a log grid from t_max / 100 to
        extend * t_max and the ODE's eps_g over the closed form on it.
    """
    if not later > 1.0:
        raise ValueError(f"later must be > 1 (a multiple of t_max), got {later}")
    if not extend >= 1.0:
        raise ValueError(f"extend must be >= 1 (a multiple of t_max), got {extend}")
    _validate.integer("n_bins", n_bins, low=1, doc="number of log-time bins of the run")
    p = Params(**params)
    run = simulate(p, t_max, seed=seed, n_points=n_points, method=method)
    theory = ode(p, init=run)
    half, three_quarters = t_max / 2, 0.75 * t_max
    sgd, sgd_se = stationary_error(run, half)
    first, first_se = stationary_error(run.sel(t=slice(None, three_quarters)), half)
    second, second_se = stationary_error(run, three_quarters)
    ode_mean = stationary_error(theory, half)[0]
    ode_first = stationary_error(theory.sel(t=slice(None, three_quarters)), half)[0]
    ode_second = stationary_error(theory, three_quarters)[0]
    closed = (eg_star_erf_scm(p, T=run.T.values) if p.g == "erf"
              else eg_star_linear_scm(p, finite_size=True))
    end = theory.isel(t=-1)
    from_end = {"Q0": end.Q.values, "R0": end.R.values, "T": theory.T.values, "v0": end.v.values}
    ode_later = float(ode(p, t_eval=[0.0, (later - 1.0) * t_max], **from_end).eg[-1])
    # continued without label noise: what is left is not the noise's
    noise_free = float(ode(dataclasses.replace(p, sigma=0.0), t_eval=[0.0, t_max], **from_end).eg[-1])
    n_spare = max(p.K - p.M, 0)
    curve_t, curve_sgd = log_binned_mean(run.t.values, run.eg.values,
                                         np.geomspace(t_max / 100, t_max, n_bins + 1))
    # the ODE from the run's start again, on a log grid far past the run (cheap: LSODA)
    ode_t = np.geomspace(t_max / 100, extend * t_max, 20 * max(int(round(math.log10(extend))), 1) + 41)
    curve_ode = ode(p, init=run, t_eval=np.r_[0.0, ode_t]).eg.values[1:]
    return {"curve_t": curve_t, "curve_sgd": curve_sgd / closed, "ode_t": ode_t,
            "curve_ode": curve_ode / closed,
            "sgd": sgd, "sgd_se": sgd_se, "ode": ode_mean, "closed": closed,
            "sgd_drift_z": (second - first) / math.hypot(first_se, second_se),
            "ode_drift": ode_second / ode_first - 1, "ode_later": ode_later / ode_mean - 1,
            "spare_sgd": _spare_norm(run, n_spare), "spare_ode": _spare_norm(theory, n_spare),
            "noise_free": noise_free / ode_mean}


def run_with_ode(params, t_max, seed, *, n_points=200, spacing="linear", method="overlaps",
                 atol=1e-10):
    """One SGD run and the ODE integrated from its own initial overlaps, on its time axis.

    For ``executor.map`` over seeds (a module-level function, so local processes and
    Dask workers can run it). Returns ``(run, theory)``: the Datasets of :func:`simulate`
    and :func:`ode`.
    """
    run = simulate(params, t_max, seed=seed, n_points=n_points, spacing=spacing, method=method)
    return run, ode(params, init=run, atol=atol)


def both_layers_run(*, seed, N, M, K, eta, sigma, v_star, v_init, t_max, n_points=200,
                    method="overlaps", off=0.05):
    """One run with both layers trained (Goldt et al. Fig. 3) against the ODE from its start.

    Simulates SGD on a log-and-linear time grid (:func:`simulate`, ``spacing``
    "log+linear"), integrates the ODE (eq. 9) from the run's own initial overlaps,
    and reads off both: eps_g over the second half of the run (time average over the
    evenly spaced late records, with its batch-means standard error for SGD) and the
    final arrangement of the student units (:func:`tsdyn.committee.unit_arrangement`,
    coded as M + 1 integers: active units per teacher unit, sorted, then units off).

    Returns
    -------
    dict
        ``eg_sgd``, ``eg_ode``: eps_g on the time grid; ``t``: that grid; ``win_sgd``,
        ``win_sgd_se``, ``win_ode``: the window means; ``arr_sgd``, ``arr_ode``: the
        final arrangements; ``imb_sgd``, ``imb_ode``: the final imbalance of the
        second-layer weights sharing a teacher unit
        (:func:`tsdyn.committee.weight_imbalance`).
    """
    p = Params(N=N, M=M, K=K, eta=eta, sigma=sigma, v_star=v_star, v_init=v_init,
               train_second_layer=True)
    run = simulate(p, t_max, seed=seed, n_points=n_points, spacing="log+linear", method=method)
    theory = ode(p, init=run)
    lin = np.linspace(0.0, t_max, max(n_points // 2, 2))  # the linear part of the grid
    late = lin[lin >= t_max / 2]  # (recorded at whole steps: nearest recorded times)
    sgd_mean, sgd_se = stationary_error(run.sel(t=late, method="nearest"), 0.0)
    ode_mean = float(theory.eg.sel(t=late, method="nearest").mean())
    end_s, end_o = run.isel(t=-1), theory.isel(t=-1)
    return {"t": run.t.values, "eg_sgd": run.eg.values, "eg_ode": theory.eg.values,
            "win_sgd": sgd_mean, "win_sgd_se": sgd_se, "win_ode": ode_mean,
            "arr_sgd": np.array(unit_arrangement(end_s.R.values, end_s.v.values, off=off)),
            "arr_ode": np.array(unit_arrangement(end_o.R.values, end_o.v.values, off=off)),
            "imb_sgd": weight_imbalance(end_s.R.values, end_s.v.values, off=off),
            "imb_ode": weight_imbalance(end_o.R.values, end_o.v.values, off=off)}


def both_layers_ode_limit(*, seed, N, M, K, eta, sigma, v_star, v_init, t_max, n_points=61,
                          off=0.05, start="random", perturbation=1e-9):
    """eps_g of the ODE (eq. 9) integrated from a given start, and how far it is from its limit.

    ``start`` chooses the initial overlaps (T = I in every case):

    * ``"random"``: the law of SGD's initial overlaps at input dimension ``N``
      (:func:`tsdyn.committee.initial_overlaps`: Q, R from Gaussian weights, the
      teacher vectors then orthonormalised so that T = I) with second-layer weights
      ``v_init``. This is *not* the start of Goldt et al. Fig. 3c: it is a protocol of
      this book, a random start whose asymmetries are of order N^(-1/2).
    * ``"paper"`` and ``"paper_small"``: the nearly symmetric starts of the authors' ODE
      code (:func:`tsdyn.committee.paper_start`): Q = I, R = 0, v = 1, or Q = I / 2000,
      R = 0, v = 1 / 2000, each perturbed by ``perturbation`` times standard Gaussians
      (``N`` and ``v_init`` are then not used).

    The ODE runs to ``t_max`` on a log grid (integrated at atol 1e-12, well below the
    errors of order sigma^2 eta measured here).

    Returns
    -------
    dict
        ``eg``: eps_g at t_max; ``eg_decade``: at t_max / 10; ``rel_change``: their
        relative difference (eg_decade - eg) / eg, the convergence criterion (how much
        eps_g still moved over the last decade of time); ``arr``: the final arrangement
        of the units (:func:`tsdyn.committee.unit_arrangement`).
    """
    if start not in ODE_STARTS:
        raise ValueError(f"start must be one of {ODE_STARTS}; got {start!r}")
    p = Params(N=N, M=M, K=K, eta=eta, sigma=sigma, v_star=v_star, v_init=v_init,
               train_second_layer=True)
    if start == "random":
        G = initial_overlaps(p, seed)
        # orthonormalise the teacher vectors (Gram-Schmidt): T = I, as the theory assumes
        R0 = np.linalg.solve(np.linalg.cholesky(G[K:, K:]), G[K:, :K]).T
        init = {"Q0": G[:K, :K], "R0": R0, "v0": v_init}
    else:
        init = paper_start(p, start, seed=seed, perturbation=perturbation)
    theory = ode(p, t_max, **init, n_points=n_points, spacing="log", atol=1e-12)
    eg = float(theory.eg.values[-1])
    eg_decade = float(theory.eg.interp(t=t_max / 10).values)
    end = theory.isel(t=-1)
    return {"eg": eg, "eg_decade": eg_decade, "rel_change": (eg_decade - eg) / eg,
            "arr": np.array(unit_arrangement(end.R.values, end.v.values, off=off))}


def scaling_rule_scan(*, N, K, x, batches, seeds, sigma=0.5, samples=200.0, seed=0, tolerance=0.1):
    """The linear scaling rule in a linear SCM: final error at a fixed noise temperature x = eta / B.

    For every batch size B the learning rate is eta = x B, and each run sees the same number
    of samples, ``samples`` N (t_max = samples / B steps / N). Per step the drift of
    d = |W - W*|^2 / N is O(K eta) and its noise O((K eta)^2 / B); per sample both depend on
    x only, so as N -> infinity the final error eps_g^*(x) = K x sigma^2 / (2 (2 - K x))
    (:func:`eg_star_linear_scm`, Goldt et al. eq. 12) is the rule's prediction at every B.
    The exact finite-N mean step adds (B + 1) / N to the noise term; the theory's deviation
    from the rule is :func:`rule_deviation_linear_scm`, and the critical batch, where it
    reaches ``tolerance``, is :func:`critical_batch_linear_scm`, proportional to N.

    Simulation: the exact-in-law overlap sampler (:func:`sample_overlaps`), ``seeds`` runs
    per B; run j starts from the same overlaps at every B (paired starts; the batches, and so
    the step noise, differ). Each run's error is its time average over the last three
    quarters of its samples; its mean over runs, over the rule's value, minus 1, is the
    measured deviation, with +- 1 standard error.

    Returns
    -------
    xarray.Dataset
        ``deviation_theory``, ``deviation``, ``deviation_lo``, ``deviation_hi``,
        ``eg`` and ``eg_se`` (simulated final error), ``eg_theory`` (exact finite-N) over
        ``batch``; attrs as described in :mod:`tsdyn` chapter 6 (temperature, critical batches).
    """
    _validate.integer("seeds", seeds, low=2, doc="runs per batch size")
    _validate.real("samples", samples, low=1.0, doc="samples per input dimension of each run")
    batches = [int(b) for b in batches]
    if len(batches) < 2 or any(b <= a for a, b in zip(batches, batches[1:])):
        raise ValueError(f"batches must be at least two increasing sizes; got {batches}")
    rule = eg_star_linear_scm(Params(N=N, M=K, K=K, eta=x, g="linear", sigma=sigma, batch=1))
    eg, eg_se, theory, exact = [], [], [], []
    for B in batches:
        theory.append(rule_deviation_linear_scm(K, x, N, B))  # validates K, x, N, B
        if not math.isfinite(theory[-1]):
            raise ValueError(f"batches: B = {B} is past the finite-N stability limit at x = {x:g}, "
                             f"N = {N} (K x (1 + (B + 1) / N) must be < 2)")
        p = Params(N=N, M=K, K=K, eta=x * B, g="linear", sigma=sigma, batch=B)
        exact.append(eg_star_linear_scm(p, finite_size=True))
        t_max = samples / B
        ends = []
        for j in range(seeds):
            run = sample_overlaps(p, t_max, seed=_seeds.child(seed, j), n_points=400)
            ends.append(float(run.eg.where(run.t >= t_max / 4).mean()))
        ends = np.array(ends)
        if not np.all(np.isfinite(ends)):
            raise ValueError(f"runs at B = {B} diverged: eta = x B = {x * B:g} is past the finite-N limit")
        eg.append(ends.mean())
        eg_se.append(ends.std(ddof=1) / math.sqrt(seeds))
    eg, eg_se = np.array(eg), np.array(eg_se)
    dev = eg / rule - 1.0
    lo, hi = dev - eg_se / rule, dev + eg_se / rule
    b_c, b_lo, b_hi = critical_batch(batches, dev, lo, hi, tolerance)
    return xr.Dataset(
        {"deviation_theory": ("batch", np.array(theory)), "deviation": ("batch", dev),
         "deviation_lo": ("batch", lo), "deviation_hi": ("batch", hi),
         "eg": ("batch", eg), "eg_se": ("batch", eg_se), "eg_theory": ("batch", np.array(exact))},
        coords={"batch": batches},
        attrs={"temperature_symbol": r"\eta/B", "temperature": float(x),
               "observable": "final generalisation error", "rule": float(rule),
               "critical_batch_formula": r"\frac{\epsilon(2-Kx)N}{(1+\epsilon)Kx}-1",
               "critical_batch_theory": float(critical_batch_linear_scm(K, x, N, tolerance)),
               "critical_batch_measured": b_c, "critical_batch_measured_lo": b_lo,
               "critical_batch_measured_hi": b_hi, "tolerance": float(tolerance),
               "N": int(N), "K": int(K), "sigma": float(sigma), "seeds": int(seeds),
               "samples": float(samples)})


def diffusion_arrangements(*, seed, start, start_seed, N, M, K, eta, sigma, v_star, v_init, t_max,
                           paths=1, dt=1.0, n_noise=4, noise_N=None, off=0.05):
    """Final arrangements of paths of the diffusion (D2) from the start of one run of Fig. 3.

    The start is the one of :func:`both_layers_run` with seed ``child(start_seed, start)``
    (a sweep's replica ``start`` of root ``start_seed``): the overlaps of random Gaussian
    weights at input dimension ``N`` (:func:`tsdyn.committee.initial_overlaps`, the draw the
    exact sampler makes with that seed) and second-layer weights ``v_init``. From it,
    ``paths`` independent paths of the finite-N diffusion of the overlaps,

        d theta = f(theta) dt + N^(-1/2) Sigma(theta)^(1/2) dW                 (D2)

    (:func:`tsdyn.committee.diffuse`; f the ODE's drift, Goldt et al. eq. 9, Sigma the
    one-step covariance, eq. D1), run with both layers trained to ``t_max`` with step ``dt``;
    path r draws its noise from ``child(seed, r)``. The final arrangement of each path is read
    as in :func:`both_layers_run` (:func:`tsdyn.committee.unit_arrangement`).

    ``noise_N`` (default ``N``) sets the N of the noise term alone, the start held: a control
    that changes the strength of the fluctuations and nothing else (``noise_N`` -> infinity is
    the ODE from the same start).

    Returns
    -------
    dict
        ``arr`` (paths, M + 1): the final arrangements (active units per teacher unit, sorted,
        then units off; -1 for a path that diverged); ``diverged`` (paths,): 1 where a path
        stopped at the divergence bound; ``rate`` (paths,): the fastest relaxation rate of the
        ODE at the path's end (:func:`tsdyn.committee.fastest_rate`), against which ``dt`` is
        judged (NaN for a diverged path).
    """
    _validate.integer("paths", paths, low=1, doc="diffusion paths from the start")
    _validate.integer("start", start, low=0, doc="replica index of the start")
    p = Params(N=N, M=M, K=K, eta=eta, sigma=sigma, v_star=v_star, v_init=v_init,
               train_second_layer=True)
    noise_N = N if noise_N is None else noise_N
    p_noise = dataclasses.replace(p, N=noise_N)  # validates noise_N
    G = initial_overlaps(p, _seeds.child(start_seed, start))
    init = {"Q0": G[:K, :K], "R0": G[:K, K:], "T": G[K:, K:], "v0": np.full(K, float(v_init))}
    arr = np.empty((paths, M + 1), dtype=np.int64)
    diverged = np.zeros(paths, dtype=np.int64)
    rate = np.full(paths, np.nan)
    for r in range(paths):
        path = diffuse(p_noise, t_max, seed=_seeds.child(seed, r), dt=dt, n_noise=n_noise,
                       n_points=2, **init)
        diverged[r] = int(bool(path.diverged))
        if diverged[r]:
            arr[r] = -1
            continue
        end = path.isel(t=-1)
        arr[r] = unit_arrangement(end.R.values, end.v.values, off=off)
        rate[r] = fastest_rate(p, end.Q.values, end.R.values, init["T"], end.v.values)
    return {"arr": arr, "diverged": diverged, "rate": rate}
