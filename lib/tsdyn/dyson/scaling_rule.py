"""The linear scaling rule in the tanh teacher-student ensemble: is |B| a temperature, and where
does it stop being one? (the book's chapter 6). Glues the paired SGD ensembles of
:func:`tsdyn.dyson.linear_scaling` to the finite-step stability theory of :mod:`tsdyn.dyson.stability`.
"""

import numbers
from functools import partial

import numpy as np
import xarray as xr

from .. import _seeds, _validate, sweep
from . import analysis, stability
from .edge import loss_onset
from .experiments import CRITERIA, PUBLISHED, linear_scaling, phase_point
from .params import Params
from .simulate import train_ensemble

CRITICAL_BATCH_FORMULA = (r"T = T_c(\epsilon{=}T B_c),\quad "
                          r"T_c(\epsilon)^{-1} = "
                          r"\rho\!\left[D_\epsilon^{-1/2}(M-\Lambda\otimes\Lambda)D_\epsilon^{-1/2}\right],"
                          r"\ D_\epsilon = \lambda_i+\lambda_j-\epsilon\lambda_i\lambda_j;\quad "
                          r"B_c \to 2/(T\lambda_{\max})\ \text{as}\ T\to 0")


def _check_batches(batches, n_train=4000):
    if isinstance(batches, (str, bytes)) or not hasattr(batches, "__len__") or len(batches) < 2:
        raise ValueError(f"batches must be a list of at least two mini-batch sizes |B|; got {batches!r}")
    for b in batches:
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or not 1 <= b <= n_train:
            raise ValueError(f"batches (mini-batch sizes |B|) must be integers in [1, n_train = {n_train}]; "
                             f"got {b!r} in {list(batches)!r}")
    if any(b2 <= b1 for b1, b2 in zip(batches[:-1], batches[1:])):
        raise ValueError(f"batches must be strictly increasing (the first is the rule's reference); "
                         f"got {list(batches)!r}")
    return [int(b) for b in batches]


def _crossing_batch(batches, dev, tolerance):
    """First |B| where |dev| reaches ``tolerance`` (log-|B| interpolation); NaN if it does not."""
    return analysis.crossing(np.asarray(batches, float), np.abs(dev), tolerance, log_x=True)


def scaling_rule_scan(T, inv_sigma_w, batches, *, tau_f, n_models, seed=0, tolerance=0.1, n_points=3,
                      n_boot=2000, n_teachers=16, rank=16, theory_samples=4000, sharpness_samples=1000,
                      stability_tau=32.0, perturbation=0.01):
    """Paired ensembles at one temperature T = eps/|B| over batch sizes |B| (eps = T |B|), against
    the theory of the linear scaling rule and its finite-step break.

    **Rule.** The chapter's Langevin equation (eq-dyson-langevin), dW/dtau = -E[Delta] +
    sqrt(T V[Delta]) xi with tau = eps t, has drift and diffusion that depend on (eps, |B|) only
    through T (one step moves W by -eps Delta_B, whose mean is -eps E[Delta] and covariance
    eps^2 V[Delta]/|B| = eps T V[Delta]: per unit tau, drift E[Delta] and diffusion T V[Delta]);
    so does the Dyson equation (eq-dyson-dbm) with its Ito term T C. At equal tau (equal samples,
    tau/T) the law of every observable is then the same at every |B|: ``deviation_theory`` is
    exactly 0 at every batch.
    **Break.** The step also moves X = W W^T by eps^2 E[Delta_B] E[Delta_B]^T, a term of order eps
    per unit tau that is not a function of T. Near the zero-loss teacher minimum it makes the
    second-moment map of SGD I - eps D_eps + eps T Q (:mod:`tsdyn.dyson.stability`), marginal at
    T_c(eps) with 1/T_c(eps) = rho(D_eps^{-1/2} Q D_eps^{-1/2}), D_eps = lambda_i + lambda_j -
    eps lambda_i lambda_j (lambda: curvatures of the loss at the teacher). The critical batch
    B_c solves T = T_c(T B_c): beyond it the minimum that the Langevin equation reaches at every
    |B| repels SGD. At small T it is the curvature bound eps lambda_max = 2, B_c ~ 2/(T lambda_max).

    **Simulation** (:func:`tsdyn.dyson.linear_scaling`): ``n_models`` networks at 1/sigma_W =
    ``inv_sigma_w``, each with the same teacher, training data, initial student at every |B|
    (paired; only the mini-batches differ), trained for tau_f / eps steps (the same tau_f and
    the same tau_f / T samples at every |B|). Observable: the final test loss, summarised by its
    geometric mean over networks. ``deviation`` = exp(mean over networks of ln L(|B|) - ln L(|B|_0))
    - 1 against the smallest batch |B|_0 (the rule's prediction: the run nearest the Langevin
    limit); 68 % interval from ``n_boot`` bootstrap resamples of the networks (the same
    resample at every |B|, keeping the pairing). A network whose weights diverge at any |B| is
    dropped from every |B| and counted (``n_diverged``). The mechanism is measured too: ``sharpness``,
    the largest Gauss-Newton curvature lambda_max of the trained networks at tau_f (median over
    networks, first ``sharpness_samples`` training samples, bootstrap 68 %), and ``step_sharpness``
    = eps lambda_max / 2, which reads 1 where SGD sits at gradient descent's stability edge;
    attrs ``critical_batch_state`` = 2 / (T lambda_max) at the smallest batch's trained networks
    (the curvature bound at the state the rule-exact run reaches, a simulation reading).
    **The theory's B_c tested on the network** (:func:`minimum_stability_check`, skipped with
    ``stability_tau=None``): the same networks started at their teacher plus a perturbation of scale
    ``perturbation`` and trained for tau = ``stability_tau``: ``repelled`` (fraction whose loss grew,
    68 % Clopper-Pearson ``_lo``, ``_hi``) against the theory's ``unstable_theory`` (= 1 -
    ``stable_fraction``); attrs ``critical_batch_repelled`` (+ ``_lo``, ``_hi``), where half are
    repelled.
    **Theory** (:mod:`tsdyn.dyson.stability`): its own ``n_teachers`` teachers (``theory_samples``
    fresh inputs each, the top ``rank`` curvature directions); it meets the simulation only in
    the widths, T and the batches. Per batch: ``Tc_step`` T_c(eps = T|B|) (median over teachers,
    16-84 % spread), ``step_curvature`` eps lambda_max / 2 (median), ``stable_fraction`` (teachers
    whose minimum is mean-square stable at this |B|). ``critical_batch_theory``: median over
    teachers of B_c; ``critical_batch_gd``: median of 2/(T lambda_max).

    Returns an xarray.Dataset over ``batch`` (data_vars above, plus ``loss_gmean`` and its
    ``_lo``, ``_hi``, ``eps``, ``steps``, ``n_diverged``), ``model`` (``loss`` per network and
    batch) and ``tau`` (the ``n_points`` - 1 recording times tau > 0, linear: ``deviation_tau``
    (batch, tau), the same reading at each time, and ``critical_batch_measured_tau``), with
    float/str attrs: temperature_symbol, temperature, observable, tolerance, critical_batch_formula,
    critical_batch_theory (+ ``_lo``, ``_hi``: 16-84 % over teachers), critical_batch_gd,
    critical_batch_state, critical_batch_repelled (+ ``_lo``, ``_hi``), critical_batch_measured
    (+ ``_lo``, ``_hi``: bootstrap; NaN where |deviation| does not reach ``tolerance`` inside the
    scan, or in fewer than 90 % of resamples), Tc_langevin (T_c(0), median over teachers),
    lambda_max (median over teachers), inv_sigma_w, tau_f, n_models.
    """
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature eps/|B|")
    _validate.real("inv_sigma_w", inv_sigma_w, low=0.0, low_open=True, doc="disorder 1/sigma_w")
    _validate.real("tau_f", tau_f, low=0.0, low_open=True, doc="Langevin time tau = eps t of every run")
    _validate.integer("n_models", n_models, low=2, doc="networks per batch size (paired)")
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="|deviation| that marks the break")
    _validate.integer("n_boot", n_boot, low=0, doc="bootstrap resamples")
    _validate.integer("n_points", n_points, low=2, doc="recording times per run")
    batches = _check_batches(batches)
    Params.from_temperature(T, inv_sigma_w, batch=batches[-1])  # eps = T |B| checked by the parameter object

    # --- simulation: paired ensembles at equal tau
    _validate.integer("sharpness_samples", sharpness_samples, low=2, doc="samples for the sharpness")
    sim = linear_scaling(float(T), float(inv_sigma_w), batches, float(tau_f), seed=seed, n_models=n_models,
                         n_points=n_points, sharpness_samples=sharpness_samples)
    loss = sim.loss.values  # (batch, model)
    bad = ~np.all(np.isfinite(loss) & (loss > 0), axis=0)
    n_div = (~np.isfinite(loss)).sum(axis=1)
    lnL = np.log(loss[:, ~bad])
    if lnL.shape[1] < 2:
        raise ValueError(f"fewer than two networks stayed finite at every |B| ({int(bad.sum())} of {n_models} "
                         f"diverged): lower T or the largest batch")
    d = lnL - lnL[0]
    dev = np.expm1(d.mean(axis=1))
    gm = np.exp(lnL.mean(axis=1))
    n = lnL.shape[1]
    rng = np.random.default_rng(_seeds.child(seed, 7, 1))
    idx = rng.integers(0, n, (n_boot, n))
    boot_dev = np.expm1(d[:, idx].mean(axis=2))  # (batch, n_boot)
    boot_gm = np.exp(lnL[:, idx].mean(axis=2))
    q = (lambda a: np.quantile(a, [0.16, 0.84], axis=1)) if n_boot else (lambda a: np.full((2, a.shape[0]), np.nan))
    dev_lo, dev_hi = q(boot_dev)
    gm_lo, gm_hi = q(boot_gm)
    # the same reading at every recording time (tau > 0): how the break moves with the length of the run
    lt = sim.loss_tau.values[:, 1:][..., ~bad]  # (batch, tau, model)
    dt = np.log(lt) - np.log(lt[:1])
    dev_tau = np.expm1(dt.mean(axis=2))
    b_tau = np.array([_crossing_batch(batches, dev_tau[:, k], tolerance) for k in range(dev_tau.shape[1])])
    b_meas = _crossing_batch(batches, dev, tolerance)
    b_lo = b_hi = float("nan")
    if n_boot:
        bb = np.array([_crossing_batch(batches, boot_dev[:, k], tolerance) for k in range(n_boot)])
        if np.mean(np.isfinite(bb)) >= 0.9:
            b_lo, b_hi = (float(v) for v in np.nanquantile(bb, [0.16, 0.84]))

    sh = sim.sharpness.values[:, ~bad]
    sh_med = np.median(sh, axis=1)
    sh_lo, sh_hi = q(np.median(sh[:, idx], axis=2)) if n_boot else (np.full(len(batches), np.nan),) * 2

    # --- theory: Langevin (rule exact) and the finite-step stability of the teacher minimum
    layers = tuple(Params.from_temperature(T, inv_sigma_w).layers)
    mom = stability.minimum_moments(layers, seed=_seeds.child(seed, 7, 2), n_teachers=n_teachers,
                                    n_samples=theory_samples, rank=rank)
    eps = np.array([float(T) * b for b in batches])
    tc = np.array([stability.stability_temperature(mom, e) for e in eps])  # (batch, teacher)
    bc = stability.critical_batch(mom, float(T))
    bgd = 2.0 / (float(T) * mom.lam_max)
    tc0 = stability.stability_temperature(mom, 0.0)
    med = lambda a, ax=None: np.median(a, axis=ax)  # noqa: E731
    spread = lambda a, ax=None: np.quantile(a, [0.16, 0.84], axis=ax)  # noqa: E731
    tc_lo, tc_hi = spread(tc, 1)
    bc_lo, bc_hi = spread(bc)

    extra, extra_attrs = {}, {}
    if stability_tau is not None:
        chk = minimum_stability_check(T, batches, tau_f=float(stability_tau), n_models=n_models, seed=seed,
                                      perturbation=perturbation, mom=mom)
        extra = {k: (("batch",), chk[k].values) for k in ("repelled", "repelled_lo", "repelled_hi")}
        extra_attrs = {k: chk.attrs[k] for k in ("critical_batch_repelled", "critical_batch_repelled_lo",
                                                 "critical_batch_repelled_hi")}
        extra_attrs.update(stability_tau=float(stability_tau), perturbation=float(perturbation))

    dims = ("batch",)
    return xr.Dataset(
        {
            **extra,
            "unstable_theory": (dims, 1.0 - np.mean(float(T) < tc, axis=1)),
            "deviation_theory": (dims, np.zeros(len(batches)),
                                 {"long_name": "Langevin limit: exactly 0 (drift and diffusion depend on T only)"}),
            "deviation": (dims, dev, {"long_name": "geometric-mean final test loss / that at the smallest |B| - 1"}),
            "deviation_lo": (dims, dev_lo), "deviation_hi": (dims, dev_hi),
            "loss_gmean": (dims, gm, {"long_name": "geometric mean over networks of the final test loss (2.6)"}),
            "loss_gmean_lo": (dims, gm_lo), "loss_gmean_hi": (dims, gm_hi),
            "loss": (("batch", "model"), loss, {"long_name": "final test loss per network (paired across |B|)"}),
            "Tc_step": (dims, med(tc, 1), {"long_name": "T_c(eps = T|B|): mean-square stability of the teacher "
                                                        "minimum at this step (theory, median over teachers)"}),
            "Tc_step_lo": (dims, tc_lo), "Tc_step_hi": (dims, tc_hi),
            "step_curvature": (dims, med(eps[:, None] * mom.lam_max[None, :] / 2.0, 1),
                               {"long_name": "eps lambda_max / 2 at the teacher minimum (theory, median)"}),
            "stable_fraction": (dims, np.mean(float(T) < tc, axis=1),
                                {"long_name": "fraction of theory teachers whose minimum is mean-square stable"}),
            "sharpness": (dims, sh_med, {"long_name": "largest Gauss-Newton curvature of the trained networks "
                                                      "(median over networks)"}),
            "sharpness_lo": (dims, sh_lo), "sharpness_hi": (dims, sh_hi),
            "step_sharpness": (dims, eps * sh_med / 2.0,
                               {"long_name": "eps lambda_max / 2 of the trained networks (1: stability edge)"}),
            "eps": (dims, eps), "steps": (dims, sim.steps.values), "n_diverged": (dims, n_div),
            "deviation_tau": (("batch", "tau"), dev_tau,
                              {"long_name": "deviation read at each recording time tau (same definition)"}),
            "critical_batch_measured_tau": (("tau",), b_tau,
                                            {"long_name": "|B| where |deviation_tau| first reaches the tolerance"}),
        },
        coords={"batch": batches, "model": sim.model.values, "tau": sim.tau.values[1:]},
        attrs={
            "temperature_symbol": r"\epsilon/|\mathcal{B}|", "temperature": float(T),
            "observable": "final test loss at equal Langevin time (geometric mean over networks)",
            "tolerance": float(tolerance),
            "critical_batch_formula": CRITICAL_BATCH_FORMULA,
            "critical_batch_theory": float(med(bc)), "critical_batch_theory_lo": float(bc_lo),
            "critical_batch_theory_hi": float(bc_hi), "critical_batch_gd": float(med(bgd)),
            "critical_batch_state": float(2.0 / (float(T) * sh_med[0])),
            "critical_batch_measured": float(b_meas), "critical_batch_measured_lo": b_lo,
            "critical_batch_measured_hi": b_hi,
            "Tc_langevin": float(med(tc0)), "lambda_max": float(med(mom.lam_max)),
            "inv_sigma_w": float(inv_sigma_w), "tau_f": float(tau_f), "n_models": int(n_models),
            "n_teachers": int(n_teachers), "rank": int(rank), "n_boot": int(n_boot), **extra_attrs,
        })


def critical_batch_measured(ds, tolerance):
    """The measured critical batch of a :func:`scaling_rule_scan` result at another ``tolerance``:
    (|B| where |deviation| first reaches it, lo, hi) with the scan's bootstrap redone (seed 0,
    2000 resamples of the stored per-network losses; NaN where it does not cross)."""
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="|deviation| that marks the break")
    lnL = np.log(ds.loss.values)
    lnL = lnL[:, np.all(np.isfinite(lnL), axis=0)]
    d = lnL - lnL[0]
    b = ds.batch.values
    est = _crossing_batch(b, np.expm1(d.mean(1)), tolerance)
    rng = np.random.default_rng(0)
    bb = np.array([_crossing_batch(b, np.expm1(d[:, rng.integers(0, d.shape[1], d.shape[1])].mean(1)), tolerance)
                   for _ in range(2000)])
    if np.mean(np.isfinite(bb)) < 0.9:
        return est, float("nan"), float("nan")
    lo, hi = np.nanquantile(bb, [0.16, 0.84])
    return est, float(lo), float(hi)


def tau_point(*, seed, T, inv_sigma_w, tau_f, n_models, batch=4, **kw):
    """:func:`tsdyn.dyson.phase_point` on the Langevin clock: round(tau_f / (T |B|)) SGD steps (at
    least 1), so that every (T, |B|) covers the Langevin time tau = eps t = ``tau_f`` and uses the
    same tau_f / T samples (except where one step already exceeds it). The per-model summary, with
    ``steps`` (a scalar) added; the gradient moments are measured at the end only (the batch-resolved
    scans read the end of training), so ``grad_norm0`` is NaN. The form :func:`tsdyn.sweep.run` calls."""
    _validate.real("tau_f", tau_f, low=0.0, low_open=True, doc="Langevin time eps t per run")
    n = max(1, int(round(float(tau_f) / (float(T) * int(batch)))))
    s = phase_point(seed=seed, T=T, inv_sigma_w=inv_sigma_w, steps=n, n_models=n_models, batch=batch,
                    **{"moments": "end", **kw})
    return s.assign(steps=n)


PASS_READINGS = (*CRITERIA, PUBLISHED)  # readings of the criterion (4.15) kept by the batch-resolved scans


def _quantiles(v):
    """16 and 84 % quantiles over axis 0, NaN in a column where fewer than 90 % of the values are finite."""
    ok = (np.mean(np.isfinite(v), axis=0) >= 0.9) if len(v) else np.zeros(v.shape[1:], bool)
    q = np.full((2, *v.shape[1:]), np.nan)
    if ok.any():
        q[:, ok] = np.nanquantile(v[:, ok], [0.16, 0.84], axis=0)
    return q[0], q[1]


def _level_crossings(Ts, logL, n_boot, seed):
    """The common-level reading of a paired (batch, T, model) scan of log10 losses: the level is
    half-way between the mean at the lowest and at the highest T of the first batch (its T_1/2);
    per batch, the first T where the mean crosses that level (log-T interpolation). Bootstrap: at
    each T the same resample of the networks at every batch (they are paired), the level
    recomputed. Returns (crossings, lo, hi, ratio_lo, ratio_hi, level): 16-84 % intervals of the
    crossings and of their ratios to the first batch's."""
    x = np.asarray(Ts, float)

    def estimate(a):  # (batch, T, model) -> (batch,)
        m = np.nanmean(a, axis=2)
        lev = 0.5 * (m[0, 0] + m[0, -1])
        return np.array([analysis.crossing(x, mb, lev) for mb in m]), lev

    est, level = estimate(logL)
    rng = np.random.default_rng(_seeds.child(seed, 7, 6))
    n = logL.shape[2]
    boot = np.array([estimate(np.take_along_axis(logL, rng.integers(0, n, logL.shape[1:])[None], 2))[0]
                     for _ in range(n_boot)]).reshape(n_boot, len(est))
    lo, hi = _quantiles(boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        rlo, rhi = _quantiles(boot / boot[:, :1])
    return est, lo, hi, rlo, rhi, float(level)


def batch_phase_boundary(Ts, batches, inv_sigma_w, *, n_models, steps=None, tau_f=None, seed=0, n_boot=1000,
                         onset=1.0, pass_level=0.68, n_teachers=16, rank=16, theory_samples=4000, **kw):
    """The phase boundary T_c against |B|: for each batch size a temperature scan at 1/sigma_W =
    ``inv_sigma_w`` (:func:`tsdyn.dyson.phase_point`, ``n_models`` networks per point), read as
    the chapter reads its transition: T_1/2, where the mean of log10 of the final test loss crosses
    half-way between its values at the lowest and highest T (:func:`analysis.halfway_crossing`,
    16-84 % bootstrap over networks). The clock is either ``steps`` SGD steps at every point or
    the Langevin time ``tau_f`` (:func:`tau_point`: round(tau_f / (T |B|)) steps, at least 1: equal
    tau and equal samples at every |B|); give one. Temperature k uses the seed child k of ``seed``
    at every |B|: network m has the same teacher, data and start at every |B| (paired).

    Each batch's T_1/2 sits half-way between its own ends, and its hot end moves with |B|; so also
    ``T_level``: where the mean log10 loss crosses the *first* batch's half-way level (the same
    loss at every |B|; equal to T_1/2 at the first batch), with a paired bootstrap (the same
    resample of networks at every |B|), and ``T_level_ratio`` = T_level / T_level(first batch)
    with its interval: 1 where T = eps/|B| is the temperature.

    Also the onset ``T_onset``: the first T where the geometric-mean final loss exceeds its value
    at the lowest T by the factor 1 + ``onset`` (log-T interpolation; the same bootstrap), i.e.
    where the loss leaves its low-temperature plateau. Beside both the theory's T_c(|B|)
    (:func:`stability.critical_temperature`: mean-square stability of the teacher minimum at step
    eps = T_c |B|; median and 16-84 % spread over its own teachers) and its Langevin limit T_c(0)
    (attrs ``Tc_langevin``). T_c(|B|) is where the zero-loss minimum starts to repel SGD, which the
    onset reads; T_1/2, where the loss at the end of the run is half-way up, is a different,
    higher temperature.

    The criterion (4.15) per |B|: the pass flags of its readings :data:`PASS_READINGS` and
    ``T_pass`` (``reading``, ``batch``), the first T where the fraction of networks passing falls
    through ``pass_level`` (the paper's 68 % contour on this column; :func:`analysis.fraction_crossing`,
    with ``_lo``, ``_hi``; NaN where it is below the level from the lowest T, or never falls).

    Returns a Dataset over ``batch`` (``T_half``, ``T_level``, ``T_onset``, each with ``_lo``,
    ``_hi``; ``T_level_ratio_lo``, ``_hi``; ``Tc_theory``, ``Tc_theory_lo``, ``Tc_theory_hi``),
    (``reading``, ``batch``) (``T_pass`` and its ``_lo``, ``_hi``), (``batch``, ``T``) (``steps``),
    (``batch``, ``T``, ``model``) (``log10_loss``) and (``reading``, ``batch``, ``T``, ``model``)
    (``passes``); attrs ``level`` (the common log10 loss level), ``pass_level``, ``Tc_langevin``,
    ``lambda_max`` (median over the theory's teachers), ``n_teachers``. ``kw`` goes to :func:`phase_point` (e.g.
    ``moment_samples``); with its ``sharpness_samples`` (``teacher_distance``) the Dataset also holds
    ``sharpness`` (``teacher_dist``) over (``batch``, ``T``, ``model``) at the end of each run, for
    :mod:`tsdyn.dyson.edge`.
    """
    _validate.integer("n_models", n_models, low=2, doc="networks per point")
    _validate.real("inv_sigma_w", inv_sigma_w, low=0.0, low_open=True, doc="disorder 1/sigma_w")
    if (steps is None) == (tau_f is None):
        raise ValueError("give exactly one clock: steps (SGD steps per run) or tau_f (Langevin time eps t)")
    if steps is not None:
        _validate.integer("steps", steps, low=1, doc="SGD steps per run")
    else:
        _validate.real("tau_f", tau_f, low=0.0, low_open=True, doc="Langevin time eps t per run")
    Ts = [float(t) for t in Ts]
    if len(Ts) < 3 or any(not (t > 0) for t in Ts) or any(b <= a for a, b in zip(Ts[:-1], Ts[1:])):
        raise ValueError(f"Ts must be at least three increasing temperatures > 0; got {Ts!r}")
    batches = _check_batches(batches)
    _validate.real("onset", onset, low=0.0, low_open=True, doc="relative rise of the loss that marks the onset")
    _validate.real("pass_level", pass_level, low=0.0, high=1.0, low_open=True, high_open=True,
                   doc="fraction of networks passing the criterion")
    rows, flags, n_steps = [], [], []
    extra = {k: [] for k in ("sharpness", "teacher_dist")}
    out = {k: [] for k in ("T_half", "T_half_lo", "T_half_hi", "T_onset", "T_onset_lo", "T_onset_hi")}
    x = np.array(Ts)

    for b in batches:
        points = [tau_point(seed=_seeds.child(seed, k), T=T, inv_sigma_w=float(inv_sigma_w), tau_f=tau_f,
                            n_models=n_models, batch=b, **kw) if steps is None else
                  phase_point(seed=_seeds.child(seed, k), T=T, inv_sigma_w=float(inv_sigma_w), steps=steps,
                              n_models=n_models, batch=b, **kw).assign(steps=steps)
                  for k, T in enumerate(Ts)]
        logL = np.array([np.log10(s.loss.values) for s in points])
        rows.append(logL)
        flags.append([[s[r].values for s in points] for r in PASS_READINGS])
        n_steps.append([int(s.steps) for s in points])
        for k in extra:
            if k in points[0]:
                extra[k].append([s[k].values for s in points])
        half = analysis.halfway_crossing(x, logL, n_boot=n_boot, seed=_seeds.child(seed, 7, 3))
        first = loss_onset(x, logL, onset=onset, n_boot=n_boot, seed=_seeds.child(seed, 7, 4))
        for key, v in zip(out, (*half, *first)):
            out[key].append(v)
    rows, flags = np.array(rows), np.array(flags, bool).transpose(1, 0, 2, 3)  # (reading, batch, T, model)
    lev, lev_lo, lev_hi, ratio_lo, ratio_hi, level = _level_crossings(Ts, rows, n_boot, seed)
    T_pass = np.array([[analysis.fraction_crossing(x, f, pass_level, n_boot=n_boot, seed=_seeds.child(seed, 7, 7))
                        for f in per_reading] for per_reading in flags])  # (reading, batch, 3)
    mom = stability.minimum_moments(tuple(Params(eps=1.0).layers), seed=_seeds.child(seed, 7, 2),
                                    n_teachers=n_teachers, n_samples=theory_samples, rank=rank)
    tc = np.array([stability.critical_temperature(mom, b) for b in batches])
    lo, hi = np.quantile(tc, [0.16, 0.84], axis=1)
    rd = ("reading", "batch")
    return xr.Dataset(
        {**{k: (("batch",), np.array(v)) for k, v in out.items()},
         "T_level": (("batch",), lev), "T_level_lo": (("batch",), lev_lo), "T_level_hi": (("batch",), lev_hi),
         "T_level_ratio_lo": (("batch",), ratio_lo), "T_level_ratio_hi": (("batch",), ratio_hi),
         "Tc_theory": (("batch",), np.median(tc, axis=1)), "Tc_theory_lo": (("batch",), lo),
         "Tc_theory_hi": (("batch",), hi),
         "T_pass": (rd, T_pass[..., 0]), "T_pass_lo": (rd, T_pass[..., 1]), "T_pass_hi": (rd, T_pass[..., 2]),
         "steps": (("batch", "T"), np.array(n_steps)),
         "log10_loss": (("batch", "T", "model"), rows),
         "passes": (("reading", "batch", "T", "model"), flags),
         **{k: (("batch", "T", "model"), np.array(v)) for k, v in extra.items() if v}},
        coords={"batch": batches, "T": Ts, "reading": list(PASS_READINGS)},
        attrs={"inv_sigma_w": float(inv_sigma_w), "n_models": int(n_models),
               "clock": f"steps = {steps}" if steps is not None else f"tau_f = {tau_f:g}",
               "Tc_langevin": float(np.median(stability.stability_temperature(mom, 0.0))),
               "lambda_max": float(np.median(mom.lam_max)), "onset": float(onset), "level": level,
               "pass_level": float(pass_level), "n_boot": int(n_boot), "n_teachers": int(n_teachers),
               "observable": "T_1/2: half-way temperature of the mean log10 final test loss; T_level: where it "
                             "crosses the first batch's half-way level; T_onset: where the geometric-mean loss "
                             "first exceeds its lowest-T value by 1 + onset"})


def batch_phase_diagram(Ts, inv_sigma_ws, batches, *, tau_f, n_models, seed=0, executor="serial", cache=None,
                        **kw):
    """The (T, 1/sigma_W) phase diagram at each batch size, on the Langevin clock: one ensemble of
    ``n_models`` networks per (|B|, T, 1/sigma_W), trained for round(tau_f / (T |B|)) steps
    (:func:`tau_point`). The grid point (i, j) gets the sweep's seed child (i, j) at every |B|: the
    same teachers, data and starts (paired across |B|). ``executor``, ``cache``: as
    :func:`tsdyn.sweep.run`; ``kw`` goes to :func:`phase_point`.

    Returns a Dataset over (``batch``, ``T``, ``inv_sigma_w``, ``model``): ``loss`` and the pass
    flags of the criterion (4.15)'s readings :data:`PASS_READINGS`; ``steps`` (``batch``, ``T``,
    ``inv_sigma_w``); attrs ``tau_f``, ``n_models``.
    """
    batches = _check_batches(batches)
    _validate.integer("n_models", n_models, low=1, doc="networks per point")
    _validate.real("tau_f", tau_f, low=0.0, low_open=True, doc="Langevin time eps t per run")
    grid = {"T": [float(t) for t in Ts], "inv_sigma_w": [float(s) for s in inv_sigma_ws]}
    parts = []
    for b in batches:
        fn = partial(tau_point, tau_f=float(tau_f), n_models=int(n_models), batch=b, **kw)
        ds = sweep.run(fn, grid, executor=executor, cache=cache, seed=seed, progress=False).isel(seed=0, drop=True)
        parts.append(ds[["loss", *PASS_READINGS, "steps"]])
    return xr.concat(parts, dim="batch").assign_coords(batch=batches).assign_attrs(
        tau_f=float(tau_f), n_models=int(n_models))


def minimum_stability_check(T, batches, *, tau_f, n_models, seed=0, perturbation=0.01, n_teachers=16, rank=16,
                            theory_samples=4000, mom=None):
    """Does the teacher minimum repel SGD where the theory says? The test of
    :mod:`tsdyn.dyson.stability` on the full network.

    For each |B| (eps = T |B|), ``n_models`` networks start at their teacher's W̄^(2) plus a
    perturbation N(0, ``perturbation``^2 / n1) (the same perturbation, teacher and data at every
    |B|: paired) and are trained for round(tau_f / eps) SGD steps (at least 1). A network is
    *repelled* if its test loss at the end exceeds that at the start. Measured: the repelled
    fraction with its 68 % Clopper-Pearson interval, and the median of log10 L(end)/L(0).
    Theory: the fraction of its own teachers whose minimum is mean-square unstable at this step,
    T >= T_c(eps) (:func:`stability.stability_temperature`). The criterion is mean-square and
    linear: a network near the boundary may go either way, and the measured fraction counts
    typical paths, so the two are compared as fractions, not network by network.

    ``mom``: theory moments already drawn (:func:`stability.minimum_moments`), else drawn here.
    Returns a Dataset over ``batch``: ``repelled``, ``repelled_lo``, ``repelled_hi``,
    ``unstable_theory``, ``log10_loss_ratio`` (median), ``eps``, ``steps``; and over (``batch``,
    ``model``) the flags ``repelled_model``; attrs ``critical_batch_repelled`` (+ ``_lo``, ``_hi``):
    the |B| where the repelled fraction crosses 1/2 (log-|B| interpolation; bootstrap over networks,
    the same resample at every |B|), the measured counterpart of the theory's median B_c.
    """
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature eps/|B|")
    _validate.real("tau_f", tau_f, low=0.0, low_open=True, doc="Langevin time eps t of every run")
    _validate.integer("n_models", n_models, low=1, doc="networks per batch size")
    _validate.real("perturbation", perturbation, low=0.0, low_open=True, doc="scale of the start's offset "
                   "from the teacher")
    batches = _check_batches(batches)
    rows, flags = [], []
    for b in batches:
        p = Params.from_temperature(T, 1.0 / float(perturbation), batch=b)
        steps = max(1, int(round(tau_f / p.eps)))
        ds = train_ensemble(p, steps, seed=seed, n_models=n_models, n_points=2, moment_samples=2, moments="ends",
                            init="teacher")
        L0, L1 = ds.loss.values[0], ds.loss.values[-1]
        grew = ~(L1 <= L0)  # a diverged network (NaN) counts as repelled
        rows.append((grew.sum(), np.nanmedian(np.log10(L1 / L0)), p.eps, steps))
        flags.append(grew)
    k = np.array([r[0] for r in rows])
    lo, hi = analysis.clopper_pearson(k, n_models)
    flags = np.array(flags, dtype=float)  # (batch, model)
    bx = np.array(batches, float)
    b_rep = analysis.crossing(bx, flags.mean(1), 0.5)
    rng = np.random.default_rng(_seeds.child(seed, 7, 5))
    boot = np.array([analysis.crossing(bx, flags[:, rng.integers(0, n_models, n_models)].mean(1), 0.5)
                     for _ in range(1000)])
    b_lo, b_hi = (np.nanquantile(boot, [0.16, 0.84]) if np.mean(np.isfinite(boot)) >= 0.9
                  else (float("nan"), float("nan")))
    if mom is None:
        mom = stability.minimum_moments(Params(eps=1.0).layers, seed=_seeds.child(seed, 7, 2),
                                        n_teachers=n_teachers, n_samples=theory_samples, rank=rank)
    unstable = [np.mean(float(T) >= stability.stability_temperature(mom, float(T) * b)) for b in batches]
    dims = ("batch",)
    return xr.Dataset({"repelled": (dims, k / n_models), "repelled_lo": (dims, lo), "repelled_hi": (dims, hi),
                       "unstable_theory": (dims, np.array(unstable)),
                       "log10_loss_ratio": (dims, np.array([r[1] for r in rows])),
                       "eps": (dims, np.array([r[2] for r in rows])), "steps": (dims, np.array([r[3] for r in rows])),
                       "repelled_model": (("batch", "model"), flags.astype(bool))},
                      coords={"batch": batches, "model": np.arange(n_models)},
                      attrs={"T": float(T), "tau_f": float(tau_f), "n_models": int(n_models),
                             "perturbation": float(perturbation), "n_teachers": int(mom.n_teachers),
                             "critical_batch_repelled": float(b_rep), "critical_batch_repelled_lo": float(b_lo),
                             "critical_batch_repelled_hi": float(b_hi)})
