"""Runs in the form :func:`tsdyn.sweep.run` calls: keywords in, fixed-shape results out."""

import itertools
from functools import partial

import numpy as np
import xarray as xr

from .. import _validate, sweep
from .._seeds import child
from ..stats import bootstrap_median, critical_batch, fit_line, log_crossing
from .greedy import greedy
from .params import Params, SGDParams
from .sgd import samples_to_loss, setup, sgd
from .theory import gd_samples_to_loss, stability_batch, top_curvature

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


def _rule_run(*, N, d, lr, batches, level, max_samples, ratio, refine, seed):
    """One run of :func:`scaling_rule_scan` at every batch (a point of :func:`tsdyn.sweep.each`):
    the top curvature at its teacher, population GD's and SGD's samples to ``level``, and SGD's
    loss where it stopped."""
    scale = 1.0 / np.sqrt(d)
    teacher, _, _, W0, _, _ = setup(SGDParams(N=N, d=d, m=1, lr=lr), seed)
    teacher = teacher.astype(float)
    theo, sim, final = (np.full(len(batches), np.inf) for _ in range(3))
    for k, m in enumerate(batches):
        theo[k] = gd_samples_to_loss(W0, teacher, scale, scale, lr, m, level, max_samples)
        sim[k], final[k] = samples_to_loss(SGDParams(N=N, d=d, m=m, lr=lr), level, max_samples,
                                           seed=seed, ratio=ratio, refine=refine)
    return {"gamma": top_curvature(teacher, scale), "theo": theo, "sim": sim, "final": final}


def scaling_rule_scan(*, N, d, lr, batches, seeds=16, level=0.1, max_samples=5e4, seed=0,
                      tolerance=0.1, ratio=1.05, refine=32, executor=None):
    """The linear scaling rule for the dense student at a fixed per-sample rate lambda (chapter 6).

    The summed loss of eq. (2) makes a step of eq. (5) move W by lambda m times the mean
    per-sample gradient: SGD on the population loss with step eta = lambda m and batch B = m,
    noise temperature eta / B = lambda. In the sample clock n = m t its drift per sample,
    -lambda grad L, and its noise covariance per sample, lambda^2 Sigma(W), do not depend on m,
    so at fixed lambda the rule predicts the samples n(m) needed to bring the relative
    validation loss to ``level`` to be the same at every m (Li, Tai & E 2017, first order in
    the step). The step eta = lambda m is what changes with m: gradient descent stops
    converging to the teacher where eta gamma_max = 2, gamma_max = 1/(pi d N)(1 + O(1/N)) the
    top curvature of the population loss there (:func:`tsdyn.sparse.theory.top_curvature`,
    Gauss-Newton matrix by Stein's lemma), so the rule must fail by
    m_s = 2 / (lambda gamma_max) ~= 2 pi d N / lambda (:func:`stability_batch`).

    Theory: gradient descent on the exact population loss with step lambda m from each run's
    start to ``level`` (:func:`tsdyn.sparse.theory.gd_samples_to_loss`): the noise-free part
    of SGD, whose deviation from the rule is the discretisation of the drift alone. Simulation:
    SGD runs that stop at ``level`` or after ``max_samples`` samples
    (:func:`tsdyn.sparse.sgd.samples_to_loss`: the loss is checked on a grid growing by
    ``ratio`` in samples, and the segment that reaches the level is replayed in ``refine``
    pieces; the same procedure at every m). ``executor`` (as for :func:`tsdyn.sweep.run`; None:
    serially) runs the runs in parallel, with the same results.
    Run j has at every m the same teacher, initial student, validation set and stream of input
    samples (paired; only how the stream is cut into mini-batches differs), and the theory
    uses the same teacher and start. The observable is the ratio n_j(m) / n_j(m_0) at the
    smallest batch m_0 of the scan; its median over runs minus 1 is the deviation (68 %
    bootstrap interval of the median; a run that does not reach ``level`` is censored, +inf,
    and ranks above every finished run). Runs whose reference (m_0) SGD run or theory does
    not reach ``level`` are left out of both and counted in ``attrs["runs_left_out"]``.

    What the theory leaves out is the noise's share: in a mode of curvature gamma the
    linearised SGD holds a variance proportional to lambda / (2 - lambda m gamma), which at
    fixed lambda grows with m. Where the loss at ``level`` is set by the noise (low levels,
    large lambda) SGD deviates more than this theory: at N = 16, d = 2 the default level 0.1
    follows it within the errors below m_s, while at 10^-1.5 the simulated deviation is 2-4
    times the theory's and grows with lambda at fixed lambda m.

    Returns
    -------
    xarray.Dataset
        over ``batch`` (m): ``deviation_theory``, ``deviation``, ``deviation_lo``,
        ``deviation_hi``; ``samples`` and ``samples_theory`` (batch, run: the passages, inf if
        censored), ``samples_median`` with ``samples_lo``/``samples_hi``,
        ``samples_theory_median``, ``end_loss`` (batch, run: the relative validation loss where
        the run stopped, inf if it diverged);
        ``gamma_max`` (run). Attrs: ``temperature_symbol``, ``temperature``, ``observable``,
        ``critical_batch_formula``, ``critical_batch_theory`` (the stability batch m_s at the
        median gamma_max), ``critical_batch_theory_tolerance`` (where the theory's |deviation|
        reaches ``tolerance``, nan if not within the scan), ``critical_batch_measured`` with
        ``_lo``/``_hi`` (:func:`tsdyn.stats.critical_batch`; nan: no crossing within the scan),
        ``tolerance``, ``gamma_max``, ``level``, ``max_samples``, ``N``, ``d``, ``runs``,
        ``runs_left_out``.
    """
    _validate.integer("N", N, low=2, doc="inputs = hidden units")
    _validate.integer("d", d, low=1, doc="teacher non-zeros per row and column")
    _validate.real("lr", lr, low=0.0, low_open=True, doc="per-sample learning rate lambda")
    _validate.integer("seeds", seeds, low=4, doc="runs per batch size")
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True,
                   doc="relative validation loss to reach")
    _validate.real("max_samples", max_samples, low=1.0, doc="samples per run at most")
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="relative deviation")
    batches = list(batches)
    for b in batches:
        _validate.integer("batches", b, low=1, doc="mini-batch sizes m")
    if len(batches) < 2 or any(b <= a for a, b in zip(batches, batches[1:])):
        raise ValueError(f"batches (mini-batch sizes m) must be at least two increasing sizes; got {batches}")
    SGDParams(N=N, d=d, m=batches[0], lr=lr)  # validates d <= N
    kw = dict(N=N, d=d, lr=lr, batches=[int(b) for b in batches], level=float(level),
              max_samples=float(max_samples), ratio=ratio, refine=refine)
    done = sweep.each(_rule_run, [(kw, child(seed, j)) for j in range(seeds)],
                      sweep.SERIAL if executor is None else executor)
    gamma = np.array([float(r.gamma) for r in done])
    theo, sim, final = (np.stack([r[k].values for r in done], axis=1) for k in ("theo", "sim", "final"))
    keep = np.isfinite(sim[0]) & np.isfinite(theo[0])
    if keep.sum() < 4:
        raise ValueError(f"level: only {int(keep.sum())} of {seeds} runs reach {level:g} at m = {batches[0]} "
                         f"within max_samples = {max_samples:g}; raise max_samples or the level")
    ratio_sim = sim[:, keep] / sim[0, keep]
    ratio_theo = theo[:, keep] / theo[0, keep]
    med, lo, hi = bootstrap_median(ratio_sim, seed=0)
    dev_theo = np.median(ratio_theo, axis=1) - 1.0
    s_med, s_lo, s_hi = bootstrap_median(sim[:, keep], seed=1)
    dev, dlo, dhi = med - 1.0, lo - 1.0, hi - 1.0
    b_c, b_lo, b_hi = critical_batch(batches, dev, dlo, dhi, tolerance)
    g = float(np.median(gamma))
    return xr.Dataset(
        {
            "deviation_theory": ("batch", dev_theo, {"long_name": "population gradient descent: median "
                                 "n(m)/n(m_0) - 1"}),
            "deviation": ("batch", dev, {"long_name": "SGD: median over runs of n(m)/n(m_0) - 1"}),
            "deviation_lo": ("batch", dlo, {"long_name": "68 % bootstrap interval, low"}),
            "deviation_hi": ("batch", dhi, {"long_name": "68 % bootstrap interval, high"}),
            "samples": (("batch", "run"), sim, {"long_name": "SGD samples to the level (inf: not reached)"}),
            "samples_theory": (("batch", "run"), theo, {"long_name": "population-GD samples to the level"}),
            "samples_median": ("batch", s_med),
            "samples_lo": ("batch", s_lo),
            "samples_hi": ("batch", s_hi),
            "samples_theory_median": ("batch", np.median(theo[:, keep], axis=1)),
            "end_loss": (("batch", "run"), final, {"long_name": "relative validation loss where the run stopped"}),
            "gamma_max": ("run", gamma, {"long_name": "top Gauss-Newton curvature at the teacher"}),
        },
        coords={"batch": ("batch", np.asarray(batches), {"long_name": "mini-batch size m"}),
                "run": np.arange(seeds)},
        attrs={"temperature_symbol": r"\lambda", "temperature": float(lr),
               "observable": f"samples to a relative validation loss of {level:.3g}",
               "critical_batch_formula": r"\frac{2}{\lambda\gamma_{\max}}\simeq\frac{2\pi d N}{\lambda}",
               "critical_batch_theory": float(stability_batch(lr, g)),
               "critical_batch_theory_tolerance": float(log_crossing(batches, np.abs(dev_theo), tolerance)),
               "critical_batch_measured": b_c, "critical_batch_measured_lo": b_lo,
               "critical_batch_measured_hi": b_hi, "tolerance": float(tolerance), "gamma_max": g,
               "level": float(level), "max_samples": float(max_samples), "N": int(N), "d": int(d),
               "runs": int(keep.sum()), "runs_left_out": int(seeds - keep.sum()), "seed": int(seed)
               if not isinstance(seed, np.random.SeedSequence) else str(seed.entropy)},
    )


def critical_batch_vs_lr(*, N, d, lrs, products, seeds=16, level=0.1, clock=5e4, seed=0,
                         tolerance=0.1, ratio=1.05, refine=32, executor=None):
    """The critical batch at several per-sample rates lambda, against the predicted m_c ~ 1/lambda.

    At each lambda of ``lrs``, :func:`scaling_rule_scan` over the batches m = 1 and
    round(p / lambda) for p in ``products`` (the steps eta = lambda m to cover, the same at
    every lambda), with ``clock / lambda`` samples per run at most (the same gradient-flow time
    lambda n for every lambda) and the same seeds (so the same teachers and starts). The theory
    is lambda m_c = const: the stability batch 2/(lambda gamma_max) and the noise-free theory's
    tolerance crossing are both functions of lambda m only. A power law m_c ~ lambda^(-alpha)
    fitted to the measured crossings (weighted least squares in log-log, errors from the 68 %
    intervals) gives alpha with its standard error (nan with fewer than three finite crossings).
    ``executor`` as for :func:`scaling_rule_scan`.

    Returns
    -------
    xarray.Dataset
        over ``lr``: ``critical_batch_measured`` with ``_lo``/``_hi``, ``critical_batch_theory``
        (stability batch), ``critical_batch_theory_tolerance``; over (lr, product):
        ``deviation``, ``deviation_lo``, ``deviation_hi``, ``deviation_theory`` (nan where the
        rounded batch repeats one already scanned); attrs ``exponent``, ``exponent_se``
        (the measured alpha; the theory's is 1) and the scan's settings.
    """
    lrs = [float(x) for x in lrs]
    products = [float(p) for p in products]
    if len(lrs) < 2 or any(b <= a for a, b in zip(lrs, lrs[1:])):
        raise ValueError(f"lrs (per-sample learning rates) must be at least two increasing values; got {lrs}")
    if len(products) < 1 or any(p <= 0 for p in products) or any(b <= a for a, b in zip(products, products[1:])):
        raise ValueError(f"products (steps lambda m to scan) must be positive and increasing; got {products}")
    _validate.real("clock", clock, low=1.0, doc="gradient-flow time lambda n per run")
    keys = ("critical_batch_measured", "critical_batch_measured_lo", "critical_batch_measured_hi",
            "critical_batch_theory", "critical_batch_theory_tolerance")
    per_lr = {k: [] for k in keys}
    table = {k: np.full((len(lrs), len(products)), np.nan)
             for k in ("deviation", "deviation_lo", "deviation_hi", "deviation_theory")}
    for i, lr in enumerate(lrs):
        want = [max(1, int(round(p / lr))) for p in products]
        batches = sorted({1, *want})
        ds = scaling_rule_scan(N=N, d=d, lr=lr, batches=batches, seeds=seeds, level=level,
                               max_samples=clock / lr, seed=seed, tolerance=tolerance, ratio=ratio,
                               refine=refine, executor=executor)
        for k in keys:
            per_lr[k].append(ds.attrs[k])
        seen = set()
        for j, m in enumerate(want):
            if m in seen or m == 1:
                continue
            seen.add(m)
            for k in table:
                table[k][i, j] = float(ds[k].sel(batch=m))
    mc = np.array(per_lr["critical_batch_measured"])
    lo = np.array(per_lr["critical_batch_measured_lo"])
    hi = np.array(per_lr["critical_batch_measured_hi"])
    ok = np.isfinite(mc) & np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    alpha, alpha_se = np.nan, np.nan
    if ok.sum() >= 3:
        err = (np.log(hi[ok]) - np.log(lo[ok])) / 2
        fit = fit_line(np.log(np.asarray(lrs)[ok]), np.log(mc[ok]), err)
        alpha, alpha_se = -float(fit["slope"]), float(fit["slope_se"])
    return xr.Dataset(
        {**{k: ("lr", np.asarray(v, float)) for k, v in per_lr.items()},
         **{k: (("lr", "product"), v) for k, v in table.items()}},
        coords={"lr": ("lr", np.asarray(lrs), {"long_name": "per-sample learning rate lambda"}),
                "product": ("product", np.asarray(products), {"long_name": "step lambda m"})},
        attrs={"exponent": alpha, "exponent_se": alpha_se, "tolerance": float(tolerance), "N": int(N),
               "d": int(d), "seeds": int(seeds), "level": float(level), "clock": float(clock)},
    )
