"""The linear scaling rule in one-pass SGD on a single-index target (chapter 6, from chapter 2).

Is the batch size a temperature? Hold T = gamma / n_b fixed and grow the batch: the theory
(:mod:`.theory`, the deterministic dynamics of the overlap) and the exact-in-law sampler
(:mod:`.simulate`, ``sampler="reduced"``) are compared on the number of samples to weak recovery.
The two meet only in :func:`tsdyn.largebatch.params.fixed_temperature_params`.
"""

import dataclasses
import math

import numpy as np
import xarray as xr

from .. import _seeds, _validate, sweep
from ..stats import bootstrap_median, critical_batch, fit_line
from . import theory
from .params import fixed_temperature_params
from .simulate import recovery_point


def _check_batches(batches):
    try:
        batches = [int(b) for b in batches]
    except (TypeError, ValueError):
        raise ValueError(f"batches (batch sizes) must be whole numbers; got {batches!r}") from None
    if len(batches) < 2 or batches[0] < 1 or any(b <= a for a, b in zip(batches, batches[1:])):
        raise ValueError(f"batches (batch sizes) must be at least two increasing sizes >= 1; got {batches}")
    return batches


def paired_ratio_interval(samples, *, level=0.68, n_boot=2000, seed=0):
    """The median samples per batch (rows) over the runs (columns), the ratio of each median to the first
    batch's, and that ratio's percentile-bootstrap interval, the runs resampled jointly at every batch so
    that run j stays paired with itself across batches (the ratio's error then omits what the batches
    share). +inf (a censored run) ranks above every finite value, and the interval is read from order
    statistics (no interpolation with inf).

    This is the ratio of the *medians*, the observable the deterministic dynamics approximate. The median
    of the per-run ratios is a different quantity: at l = 2 a part of each run's samples (the early random
    walk of m in the sample clock) is shared across batches by the pairing and dilutes the per-run ratio.

    Returns (median, ratio, ratio_lo, ratio_hi), arrays over batches."""
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="coverage")
    _validate.integer("n_boot", n_boot, low=100, doc="bootstrap resamples")
    S = np.asarray(samples, float)
    idx = np.random.default_rng(seed).integers(0, S.shape[1], size=(n_boot, S.shape[1]))
    boot = np.median(S[:, idx], axis=-1)  # (batches, n_boot)
    q = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_boot = boot / boot[:1]
        ratio_boot[np.isnan(ratio_boot)] = np.inf  # both medians censored
        med = np.median(S, axis=1)
        ratio = med / med[0]
        lo = np.quantile(ratio_boot, q, axis=1, method="lower")
        hi = np.quantile(ratio_boot, 1 - q, axis=1, method="higher")
    # a run's samples are whole batches, so at large n_b the medians take few values and a percentile
    # interval of their ratio can stop just short of the estimate itself: widen it to include it
    return med, ratio, np.minimum(lo, ratio), np.maximum(hi, ratio)


def scaling_rule_scan(*, d, ell=2, temperature0=0.15, batches, variant="projected", seeds=64, seed=0,
                      tolerance=0.1, budget=10.0, eta=0.5, n_boot=2000, law_batches=(), law_grid=801,
                      law_n_batches=8000, executor=None):
    """The linear scaling rule at fixed temperature T = gamma / n_b = temperature0 d^(-ell/2): samples to
    weak recovery (|m| >= eta from m0 = d^-1/2) against the batch n_b.

    **Derivation** (chapter 2, eqs. eq-largebatch-map and eq-largebatch-small-m). One step moves a small
    overlap by gamma (A - m B) - (gamma^2 / 2) (d / n_b) E[F^2] m + O(gamma^2) = gamma [(A - m B) -
    (T d / 2) E[F^2] m] + O(gamma^2): on the clock tau = gamma t drift and noise depend on T alone
    (so does the diffusion of m, variance gamma^2 / n_b per step = gamma T per unit tau: the SDE limit),
    and the samples n_b t = tau / T to recovery are the same at every batch. At the chapter's best rate
    T = (gamma0 / n0) d^(-ell/2), so temperature0 = gamma0 / n0 of chapter 2. The remainder is O(gamma) =
    O(T n_b): for ell = 2 a small overlap is multiplied per step by rho(gamma) = (1 + gamma A1) /
    sqrt((1 + gamma B0)^2 + gamma temperature0 E[F^2]) instead of exp(gamma r), so the rule is off by
    r gamma / ln rho(gamma) - 1 (:func:`theory.rule_linear_stage`); projected SGD on the square loss has
    B0 = -ell (its radial step), and the deviation reaches ``tolerance`` at a learning rate gamma_eps of
    order one: n_b* = gamma_eps / T = gamma_eps d^(ell/2) / temperature0. For ell >= 3 the radial step
    divides the tangential move by 1 - ell gamma at every m, a relative O(ell gamma) change of the whole
    search: n_b* ~ eps / (ell T) ~ d^(ell/2) (projected). The correlation loss has no radial step (B0 = 0);
    what is left is the discreteness of the drift, whose relative move per step gamma ell m^(ell-2) is small
    until m ~ (ell gamma)^(-1/(ell-2)); the search time spent above that is a fraction ~ gamma d^(-(ell-2)/2)
    of the whole, so n_b* ~ eps d^((ell-2)/2) / T ~ d^(ell-1) (for ell = 2 both give ~ d).

    **Theory**: :func:`theory.rule_deviation` (the deterministic finite-d dynamics, samples with the
    crossing of eta placed between steps), relative to the smallest batch of ``batches``;
    :func:`theory.rule_critical_batch` for its crossing of ``tolerance`` (bisection on whole batches),
    and for ell = 2 the d -> infinity linear-stage formula above (:func:`theory.rule_linear_stage_gamma`).
    At the batches listed in ``law_batches`` the theory also gives the median samples from the law of the
    overlap across runs (:func:`theory.rule_law_samples`, exact one-step kernel on ``law_grid`` points,
    ``law_n_batches`` batches each; costly, grid x batches x n_b force evaluations): at gamma of order one
    a step moves the small overlap by a random amount as large as itself, and the median run leaves the
    deterministic dynamics (``samples_law``, ``samples_law_se``; nan at the other batches).

    **Simulation**: ``seeds`` runs per batch of the exact-in-law sampler (:func:`simulate.recovery_time`,
    ``sampler="reduced"``), each with a budget of ``budget`` times the theory's samples at the smallest
    batch (a run past it is censored, +inf, and ranks above every finished one). *Paired*: run j uses the
    same seed at every batch, hence the same teacher, the same start and the same stream of in-plane
    input coordinates (sample nu has the same coordinates on span(w, w*) whatever the batch it falls in);
    only the out-of-plane part, drawn once per step, differs. The deviation is the ratio of the median
    samples at n_b to the median at the smallest batch, minus 1, with a 68 % percentile bootstrap over
    the runs resampled jointly across batches (:func:`paired_ratio_interval`). Recovery times at l >= 3
    from m0 = d^-1/2 are heavy-tailed at small d: use >= 128 runs there. ``executor`` (as for
    :func:`tsdyn.sweep.run`; None: serially) runs them in parallel, with the same results.

    Returns
    -------
    xarray.Dataset over ``batch`` (n_b): ``deviation_theory``, ``deviation``, ``deviation_lo``,
    ``deviation_hi``; the raw observables ``samples_theory`` (deterministic dynamics), ``samples``
    (median of the runs), ``samples_lo``/``samples_hi`` (its 68 % bootstrap interval), ``censored``
    (runs past the budget), ``gamma``; ``samples_runs`` (batch, run). attrs: the chapter-6 contract
    (temperature_symbol, temperature, observable, critical_batch_formula, critical_batch_theory,
    critical_batch_measured(_lo, _hi), tolerance), ``critical_batch_formula_value`` (the ell = 2
    linear-stage formula; nan otherwise), ``gamma_eps``, ``samples_rule_theory`` (the gamma -> 0
    limit) and ``reference_offset_theory`` (the smallest batch's theory samples over that limit,
    minus 1: how far the reference itself is from the rule).
    """
    batches = _check_batches(batches)
    _validate.integer("seeds", seeds, low=4, doc="runs per batch size")
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="relative deviation")
    _validate.real("budget", budget, low=1.0, low_open=True, doc="sample budget per run, in units of "
                   "the theory's samples at the smallest batch")
    kw = dict(d=d, ell=ell, temperature0=temperature0, variant=variant, eta=eta)
    params = [fixed_temperature_params(n_b=b, **kw) for b in batches]  # validates d, ell, T, variant
    # theory
    s_theory = np.array([theory.rule_samples(p) for p in params])
    if not np.isfinite(s_theory[0]):
        raise ValueError(f"batches: the smallest batch {batches[0]} does not recover in the theory at "
                         f"temperature0 = {temperature0}: the temperature is past the noise line")
    dev_theory = s_theory / s_theory[0] - 1.0
    law = np.full((2, len(batches)), np.nan)
    for b in law_batches:
        if int(b) not in batches:
            raise ValueError(f"law_batches must be a subset of batches {batches}; got {b!r}")
        i = batches.index(int(b))
        law[:, i] = theory.rule_law_samples(params[i], grid=law_grid, n_batches=law_n_batches, seed=seed)
    limit = theory.rule_limit_samples(**kw)
    b_theory = theory.rule_critical_batch(tolerance=tolerance, reference=batches[0], **kw)
    T = temperature0 * d ** (-ell / 2)
    if ell == 2:
        g_eps = theory.rule_linear_stage_gamma(ell=ell, temperature0=temperature0, tolerance=tolerance,
                                               variant=variant)
        formula = (r"n_b^*=\frac{\gamma_\epsilon}{\gamma/n_b},\quad \frac{r\,\gamma_\epsilon}{\ln\rho(\gamma_\epsilon)}"
                   r"=1+\epsilon,\quad \rho(\gamma)=\frac{1+\gamma A_1}{\sqrt{(1+\gamma B_0)^2+\gamma\tau_0\mathbb E[F^2]}}")
    else:
        g_eps = float("nan")
        formula = (r"n_b^*\sim\frac{\epsilon}{\ell\,\gamma/n_b}\propto d^{\ell/2}" if variant == "projected"
                   else r"n_b^*\sim\frac{\epsilon\,d^{(\ell-2)/2}}{\gamma/n_b}\propto d^{\ell-1}")
    # simulation: paired seeds across batches
    max_samples = budget * s_theory[0]
    # one exact-in-law run per (batch, seed); recovery_time's samples are +inf past the budget
    points = [({**dataclasses.asdict(p), "max_steps": int(math.ceil(max_samples / p.n_b)), "sampler": "reduced"},
               _seeds.child(seed, j)) for p in params for j in range(seeds)]
    done = sweep.each(recovery_point, points, sweep.SERIAL if executor is None else executor)
    runs = np.array([float(r.samples) for r in done]).reshape(len(batches), seeds)
    med, ratio, r_lo, r_hi = paired_ratio_interval(runs, n_boot=n_boot, seed=seed)
    _, s_lo, s_hi = bootstrap_median(runs, n_boot=n_boot, seed=seed)
    dev, lo, hi = ratio - 1.0, r_lo - 1.0, r_hi - 1.0
    b_c, b_lo, b_hi = critical_batch(batches, dev, lo, hi, tolerance)
    return xr.Dataset(
        {"deviation_theory": ("batch", dev_theory), "deviation": ("batch", dev),
         "deviation_lo": ("batch", lo), "deviation_hi": ("batch", hi),
         "samples_theory": ("batch", s_theory, {"long_name": "samples to weak recovery, deterministic dynamics"}),
         "samples": ("batch", med, {"long_name": "median samples to weak recovery over the runs"}),
         "samples_lo": ("batch", s_lo), "samples_hi": ("batch", s_hi),
         "censored": ("batch", np.isinf(runs).sum(axis=1)),
         "samples_law": ("batch", law[0], {"long_name": "median samples, law of the overlap (theory)"}),
         "samples_law_se": ("batch", law[1]),
         "gamma": ("batch", np.array([p.gamma for p in params])),
         "samples_runs": (("batch", "run"), runs)},
        coords={"batch": batches, "run": np.arange(seeds)},
        attrs={"temperature_symbol": r"\gamma/n_b", "temperature": float(T),
               "temperature0": float(temperature0),
               "observable": "samples to weak recovery",
               "critical_batch_formula": formula, "critical_batch_theory": float(b_theory),
               "critical_batch_formula_value": float(g_eps / T), "gamma_eps": float(g_eps),
               "critical_batch_measured": b_c, "critical_batch_measured_lo": b_lo,
               "critical_batch_measured_hi": b_hi, "tolerance": float(tolerance),
               "samples_rule_theory": float(limit), "reference_offset_theory": float(s_theory[0] / limit - 1),
               "d": int(d), "ell": int(ell), "variant": variant, "eta": float(eta), "seeds": int(seeds),
               "budget": float(budget), "sampler": "reduced",
               "seed": int(seed) if not isinstance(seed, np.random.SeedSequence) else str(seed.entropy)})


def batch_scale(d, ell, variant="projected"):
    """The predicted scale of the critical batch at fixed temperature0: d^(ell/2) for projected SGD
    (n_b* = gamma_eps / T with gamma_eps of order one), d^(ell-1) for the correlation loss."""
    return float(d) ** (ell / 2 if variant == "projected" else ell - 1)


_SCAN_ATTRS = ("critical_batch_theory", "critical_batch_formula_value", "critical_batch_measured",
               "critical_batch_measured_lo", "critical_batch_measured_hi", "reference_offset_theory")


def _scan_attrs(*, seed, **kw):
    """The crossings of one :func:`scaling_rule_scan` (a point of :func:`tsdyn.sweep.each`)."""
    scan = scaling_rule_scan(**kw, seed=seed)
    return {k: float(scan.attrs[k]) for k in _SCAN_ATTRS}


def critical_batch_scan(*, ds, ell=2, temperature0=0.15, batch_units, variant="projected", seeds=64, seed=0,
                        tolerance=0.1, budget=10.0, eta=0.5, executor=None):
    """The critical batch against d: :func:`scaling_rule_scan` at each d of ``ds`` with the batches
    n_b = round(u s(d)) for u in ``batch_units``, s(d) = :func:`batch_scale` (d^(ell/2) for projected SGD,
    d^(ell-1) for the correlation loss), so that every d sees the same learning rates gamma = T n_b; the
    same ``seed`` at every d. The smallest unit sets the reference batch: keep it in the rule's regime
    (its ``reference_offset_theory`` is returned per d). ``executor`` (as for :func:`tsdyn.sweep.run`;
    None: serially) runs the values of d in parallel, with the same results.

    Returns an xarray.Dataset over ``d``: ``critical_batch_theory`` (the recursion's crossing),
    ``critical_batch_formula_value`` (ell = 2: gamma_eps d / temperature0), ``critical_batch_measured`` and
    its ``_lo``/``_hi``, ``reference_offset_theory``; attrs ``theory_exponent`` (slope of ln n_b* in ln d,
    least squares over ``ds``), ``measured_exponent`` and ``measured_exponent_se`` (the same for the measured
    crossings, weighted by their intervals' half-widths in ln n_b; nan with fewer than 3 finite ones),
    ``predicted_exponent`` (ell / 2 projected, ell - 1 correlation)."""
    ds = [int(d) for d in ds]
    if len(ds) < 2 or any(b <= a for a, b in zip(ds, ds[1:])):
        raise ValueError(f"ds (input dimensions) must be at least two increasing sizes; got {ds}")
    units = [float(u) for u in batch_units]
    if len(units) < 2 or min(units) <= 0 or any(b <= a for a, b in zip(units, units[1:])):
        raise ValueError(f"batch_units (batches over the predicted scale) must be increasing and > 0; got {units}")
    points = [(dict(d=d, ell=ell, temperature0=temperature0, variant=variant, seeds=seeds, tolerance=tolerance,
                    budget=budget, eta=eta,
                    batches=sorted({max(1, int(round(u * batch_scale(d, ell, variant)))) for u in units})), seed)
              for d in ds]
    done = sweep.each(_scan_attrs, points, sweep.SERIAL if executor is None else executor)
    rows = {k: [float(r[k]) for r in done] for k in _SCAN_ATTRS}
    th = np.array(rows["critical_batch_theory"])
    slope = float(np.polyfit(np.log(ds), np.log(th), 1)[0]) if np.all(np.isfinite(th)) else float("nan")
    pred = ell / 2 if variant == "projected" else ell - 1.0
    meas, lo, hi = (np.array(rows[k]) for k in ("critical_batch_measured", "critical_batch_measured_lo",
                                                "critical_batch_measured_hi"))
    fit = {"slope": float("nan"), "slope_se": float("nan")}
    ok = np.isfinite(meas) & np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    if ok.sum() >= 3:  # weighted by the half-width of each crossing's interval in ln n_b
        fit = fit_line(np.log(np.array(ds, float)[ok]), np.log(meas[ok]), (np.log(hi[ok]) - np.log(lo[ok])) / 2)
    return xr.Dataset({k: ("d", np.array(v, float)) for k, v in rows.items()}, coords={"d": ds},
                      attrs={"theory_exponent": slope, "measured_exponent": float(fit["slope"]),
                             "measured_exponent_se": float(fit["slope_se"]),
                             "predicted_exponent": float(pred), "ell": int(ell),
                             "variant": variant, "temperature0": float(temperature0),
                             "tolerance": float(tolerance), "seeds": int(seeds)})
