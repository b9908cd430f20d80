"""Controls that vary one mechanism at a time (DMFT and simulations side by side).

:func:`matched_step_runs` and :func:`step_or_noise` separate the two things a smaller batch
changes on the clock of sample visits, b t: the noise of the batch and the step. SGD at
batch fraction b and learning rate eta moves b t by b eta per step (the gradient is summed
over the batch, Mignacco et al. 2020, eq. (2)), so it is compared with gradient descent at
the matched step b eta, which has the same clock and the same number of steps but no batch
noise. What SGD does beyond that control is the effect of the noise.
"""

import math
from dataclasses import replace

import numpy as np
import xarray as xr

from .. import _validate
from ..stats import log_crossing
from .analysis import (_map as _map_points, curve_seed, difference, escape_times, fdr_temperature,
                       mean_se, median_ci, median_difference_ci, paired_ratio, simulate_seeds,
                       solve_seeds, value_at)
from .params import Params, check_params


def matched_step_gd(params):
    """Full-batch gradient descent at the step ``b * eta`` of SGD at (b, eta): on the b t
    clock (t = steps x eta) the two advance by the same b eta per step."""
    return replace(params, b=1.0, eta=params.b * params.eta, tau=None)


def matched_step_runs(params, t_max, *, d, seeds, dmft_seeds, n_samples, n_resp=None,
                      executor=None, cache=None):
    """DMFT and simulations of :func:`matched_step_gd` of ``params`` up to time
    ``b * t_max``, which is the b t reached by SGD at (b, eta) at time ``t_max``, with the
    same number of steps.

    The DMFT is solved at dt = b eta (the large-d limit of the discrete algorithm, no
    time-step error), ``dmft_seeds`` independent Monte Carlo seeds
    (:func:`~tsdyn.dmft.solve_seeds`); ``seeds`` training sets at dimension ``d``
    (:func:`~tsdyn.dmft.simulate_seeds`). Both take their seeds from the gradient-descent
    parameters, so the control has random numbers of its own, independent of the SGD
    curve's. Returns a dict: ``params``, ``t_max`` (= b t_max), ``sols`` (the solutions)
    and ``sim``.
    """
    gd = matched_step_gd(params)
    t_gd = params.b * t_max
    kw = dict(n_samples=n_samples) if n_resp is None else dict(n_samples=n_samples, n_resp=n_resp)
    _, _, sols = solve_seeds(gd, t_gd, seeds=dmft_seeds, executor=executor, cache=cache, **kw)
    sim = simulate_seeds(gd, t_gd, d=d, seeds=seeds, executor=executor, cache=cache)
    return dict(params=gd, t_max=t_gd, sols=sols, sim=sim)


def _runs(sols, sim, var):
    """The runs of one curve as (runs, t) arrays: DMFT solutions, simulated training sets."""
    return {"DMFT": np.stack([s[var].values for s in sols]), "simulation": sim[var + "_run"].values}


def step_or_noise(b, sgd_sols, sgd_sim, gd_sols, gd_sim, *, full_sols=None, full_sim=None, level=None,
                  q=0.95, n_boot=2000, seed=0):
    """SGD at (b, eta) against gradient descent at the step b eta, on the b t clock: the
    escape from m = 0 and the lowest test error, each as SGD minus the control with its
    error, for the DMFT and for the simulations separately.

    ``sgd_sols``/``sgd_sim``: the SGD curve (:func:`~tsdyn.dmft.solve_seeds` solutions,
    :func:`~tsdyn.dmft.simulate_seeds`) on its t grid; ``gd_sols``/``gd_sim``: the control
    (:func:`matched_step_runs`) on its own grid, which is b t. The escape time of a run is
    the first b t at which |m| reaches ``level`` (:func:`escape_times`; default: half the
    final m of the SGD curve's mean DMFT solution, the chapter's escape level), summarised
    by the median with a percentile bootstrap interval (:func:`median_ci`; censored runs
    rank last) and the difference of medians by :func:`median_difference_ci`. The lowest
    test error is each run's minimum of eps_g over the common range, b t <= b t_max;
    mean, standard error and the Welch difference (:func:`difference`).

    Returns a dict with ``level`` and, under "DMFT" and "simulation", a dict: ``esc_sgd``,
    ``esc_gd`` ((median, low, high) each), ``esc_diff`` ((diff, low, high)), ``flipped_sgd``,
    ``flipped_gd`` (runs ending at m < 0), ``censored_sgd``, ``censored_gd`` (runs that never
    reach the level), ``min_sgd``, ``min_gd`` ((mean, se)), ``min_diff`` (:func:`difference`)
    and ``min_interior`` (1 if the mean SGD curve's minimum lies before the end of the
    range, 0 if it is still falling there).

    With ``full_sols``/``full_sim``, gradient descent at the full step eta (b = 1, whose t is
    its b t), the shift that the matched step is to explain is measured too: ``esc_full``
    (its escape over its whole run), ``shift`` (:func:`median_difference_ci` of the SGD
    escape minus it), ``min_full`` and ``min_shift`` (its lowest test error over the common
    range b t <= b t_max and :func:`difference` of SGD minus it).
    """
    t_sgd = b * sgd_sim.t.values
    t_gd = gd_sim.t.values
    if not np.isclose(t_sgd[-1], t_gd[-1], rtol=1e-9, atol=1e-9):
        raise ValueError(f"the control must end at the SGD curve's b t = {t_sgd[-1]!r}; "
                         f"got {t_gd[-1]!r}")
    if level is None:
        level = 0.5 * float(np.mean([s.m.values[-1] for s in sgd_sols]))
    m_sgd, m_gd = _runs(sgd_sols, sgd_sim, "m"), _runs(gd_sols, gd_sim, "m")
    e_sgd, e_gd = _runs(sgd_sols, sgd_sim, "eg"), _runs(gd_sols, gd_sim, "eg")
    t_th = {"DMFT": (b * sgd_sols[0].t.values, gd_sols[0].t.values),
            "simulation": (t_sgd, t_gd)}
    out = {"level": level}
    for src in ("DMFT", "simulation"):
        ts, tg = t_th[src]
        es, fs = escape_times(m_sgd[src], ts, level)
        eg_, fg = escape_times(m_gd[src], tg, level)
        mins_s, mins_g = e_sgd[src].min(1), e_gd[src].min(1)
        out[src] = dict(
            esc_sgd=median_ci(es, q=q, n_boot=n_boot, seed=seed),
            esc_gd=median_ci(eg_, q=q, n_boot=n_boot, seed=seed + 1),
            esc_diff=median_difference_ci(es, eg_, q=q, n_boot=n_boot, seed=seed + 2),
            flipped_sgd=fs, flipped_gd=fg,
            censored_sgd=int(np.sum(~np.isfinite(es))), censored_gd=int(np.sum(~np.isfinite(eg_))),
            min_sgd=mean_se(mins_s), min_gd=mean_se(mins_g), min_diff=difference(mins_s, mins_g),
            min_interior=int(np.argmin(e_sgd[src].mean(0)) < e_sgd[src].shape[1] - 1))
        if full_sols is not None:
            t_f = {"DMFT": full_sols[0].t.values, "simulation": full_sim.t.values}[src]
            ef, _ = escape_times(_runs(full_sols, full_sim, "m")[src], t_f, level)
            mins_f = _runs(full_sols, full_sim, "eg")[src][:, t_f <= ts[-1] + 1e-9].min(1)
            out[src].update(esc_full=median_ci(ef, q=q, n_boot=n_boot, seed=seed + 3),
                            shift=median_difference_ci(es, ef, q=q, n_boot=n_boot, seed=seed + 4),
                            min_full=mean_se(mins_f), min_shift=difference(mins_s, mins_f))
    return out


# The talk's two-cluster problem (chapter 3, Fig. 1): the default model of the scan.
RULE_MODEL = Params(alpha=2.0, Delta=0.5, rho=0.5, lam=0.0, R0=0.01, loss="logistic",
                    model="two-cluster")
# Quick batch fractions at T = 0.2, u = 4.8: b/(1-b) = 1/8 ... 8, so that the matched step
# h = T b/(1-b) = 0.025 ... 1.6 divides u (no interpolation between steps); 24/29 and 6/7
# (h = 0.96, 1.2) refine the break, which lies between them.
RULE_QUICK_BATCHES = (1 / 9, 1 / 5, 1 / 3, 1 / 2, 2 / 3, 4 / 5, 24 / 29, 6 / 7, 8 / 9)
RULE_OBSERVABLES = {"train_loss": "training loss per sample at a fixed sample time b t",
                    "eg": "test error at a fixed sample time b t",
                    "train_energy": "training loss per dimension at a fixed sample time b t"}


def scaling_rule_scan(temperature, batches, *, sample_time, params=None, observable="train_loss",
                      d=400, seeds=32, dmft_seeds=16, n_samples=8000, n_resp=1000, seed=0,
                      tolerance=0.1, matched_gd=True, executor=None, cache=None):
    """The linear scaling rule at fixed batch-noise temperature: DMFT and SGD across batch
    fractions, on the clock of sample visits u = b t.

    Derivation (appendix ``dmft_derivation``, eqs. E1, E3 and the discrete process): with
    the gradient summed over a Bernoulli(b) batch, s = b + (s - b), one step of length eta
    is a drift b eta (gradient of the full training loss) plus a noise of covariance
    eta^2 b (1 - b) sum_mu g_mu g_mu^T. In the DMFT every drift term carries b eta per step
    (the force b sqrt(Delta) Lambda', lamhat = alpha Delta b <Lambda''>, the b^2 part of
    M_R and of M_C, dm/dt), while every stochastic term, the diagonal b (1 - b) part of
    M_C (alpha Delta b (1 - b) <Lambda'^2> delta_kl, white) and the sample's own batch
    fluctuation (s - b) sqrt(Delta) Lambda', has per-step variance eta^2 b (1 - b). On
    the clock u = b t, advanced by h = b eta per step, the equations are therefore those of
    gradient descent with step h plus a white noise of strength T = eta (1 - b) per unit u
    (:attr:`Params.temperature`). As h -> 0 at fixed T they tend to a Langevin-type limit
    that depends on (eta, b) through T alone: the linear scaling rule. The pairs it equates
    are eta = T/(1 - b) (:meth:`Params.eta_at_temperature`), i.e. in this summed convention
    the same eta at every small b (the batch-averaged rate b n eta grows with the batch).
    What the limit drops is the step: h = T b/(1 - b) grows with b, and the rule breaks at
    the critical fraction b_c = h_c/(T + h_c), where h_c is the gradient-descent step at
    which the observable at fixed u departs from its h -> 0 value by ``tolerance`` (beyond
    it lies the stability limit of gradient descent, h ~ 2/lambda_max of the Hessian).

    The rule's prediction at each b is the observable at the smallest fraction of the scan,
    ``batches[0]`` (the reference, deviation exactly 0). The theory is the DMFT at dt = eta
    (:func:`~tsdyn.dmft.solve`, the d -> infinity limit of the discrete algorithm), the
    simulation SGD at dimension ``d`` (:func:`~tsdyn.dmft.simulate`); they meet only in the
    parameters. Each curve is run for the least number of steps that reaches
    u = ``sample_time`` and read there (linear interpolation between steps when u is not
    on the grid u_k = k b eta).

    Pairing: across batch fractions the simulations share their training sets, initial
    weights and batch random streams (child ``i`` of one root seed for all b; the chain's
    path differs because b does), and the DMFT solutions share their Monte Carlo samples
    (clusters, h0, initial fields, noise normals). Each deviation is the paired ratio
    mean(obs_b)/mean(obs_ref) - 1 with its delta-method standard error
    (:func:`~tsdyn.dmft.paired_ratio`), so what is common to all fractions cancels.

    Parameters
    ----------
    temperature : float
        T = eta (1 - b), held fixed: eta = T/(1 - b) at each b (plain SGD).
    batches : sequence of float
        Batch fractions, increasing, in (0, 1); the first is the reference.
    sample_time : float
        u = b t at which the observable is read.
    params : Params, optional
        The model (its b, eta and tau are replaced); default :data:`RULE_MODEL`.
    observable : "train_loss", "eg" or "train_energy"
    d, seeds : simulation dimension and training sets per fraction (>= 2).
    dmft_seeds, n_samples, n_resp : DMFT solutions per fraction and their samples.
    seed : int
        Root of both sets of random numbers (independent streams for theory and simulation).
    tolerance : float
        |deviation| at which the rule counts as broken.
    matched_gd : bool
        Also solve the DMFT of gradient descent at each matched step h = b eta (no batch
        noise; :func:`matched_step_gd`), with the same Monte Carlo samples, to split the
        theory's deviation into the step and the noise: step_deviation_theory =
        GD(h_b)/GD(h_ref) - 1 (the step alone) and noise_theory = SGD(b)/GD(h_b) - 1 (what
        the temperature adds at this b; the rule says it is the same at every b). Its own
        crossing of ``tolerance`` gives h_c and b_c = h_c/(T + h_c) from gradient descent
        alone (critical_batch_gd_theory).
    executor, cache : as in :func:`~tsdyn.dmft.simulate_seeds`.

    Returns
    -------
    xarray.Dataset over ``batch`` (b): deviation_theory, deviation_theory_se, deviation,
    deviation_se, deviation_lo, deviation_hi (+- 1 s.e.), observable_theory (+ _se, over the
    DMFT solutions), observable_sim (+ _se, over training sets), eta, sample_step (b eta),
    with attrs temperature_symbol, temperature, observable, sample_time,
    critical_batch_formula, critical_batch_theory (the DMFT deviation's crossing of
    ``tolerance``, interpolated in log b), critical_sample_step_theory (h_c there),
    critical_batch_measured (+ _lo, _hi: the crossings of the far and the near end of the
    +- 1 s.e. interval), tolerance, and the model's parameters.
    """
    base = RULE_MODEL if params is None else params
    check_params(base)
    _validate.real("temperature", temperature, low=0.0, low_open=True,
                   doc="batch-noise temperature eta (1 - b)")
    _validate.real("sample_time", sample_time, low=0.0, low_open=True, doc="sample time b t")
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="relative deviation")
    if observable not in RULE_OBSERVABLES:
        raise ValueError(f"observable must be one of {tuple(RULE_OBSERVABLES)}; got {observable!r}")
    try:
        batches = [float(b) for b in batches]
    except (TypeError, ValueError):
        raise ValueError(f"batches (batch fractions) must be a sequence of numbers; got {batches!r}")
    if len(batches) < 2:
        raise ValueError(f"batches (batch fractions) must hold at least 2 values; got {batches!r}")
    for b in batches:
        _validate.real("batches", b, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="batch fraction; 1 has no temperature")
    if any(b2 <= b1 for b1, b2 in zip(batches, batches[1:])):
        raise ValueError(f"batches (batch fractions) must be strictly increasing; got {batches!r}")
    _validate.integer("seeds", seeds, low=2, doc="training sets per batch fraction")
    _validate.integer("dmft_seeds", dmft_seeds, low=2, doc="DMFT solutions per batch fraction")
    _validate.integer("seed", seed, low=0, doc="root seed")
    key = ("scaling rule", base.attrs(), float(temperature), float(sample_time), int(seed))
    theory_root, sim_root = curve_seed("dmft", *key), curve_seed("simulation", *key, int(d))
    rows = []
    for b in batches:
        p = replace(base, b=b, eta=Params.eta_at_temperature(temperature, b), tau=None)
        steps = max(1, math.ceil(sample_time / p.sample_step - 1e-9))
        t_max = steps * p.eta
        _, _, sols = solve_seeds(p, t_max, seeds=dmft_seeds, seed=theory_root, executor=executor,
                                 cache=cache, n_samples=n_samples, n_resp=n_resp)
        th = np.array([value_at(s[observable].values, b * s.t.values, sample_time)[0]
                       for s in sols])
        sim = simulate_seeds(p, t_max, d=d, seeds=seeds, seed=sim_root, executor=executor,
                             cache=cache)
        si = value_at(sim[observable + "_run"].values, b * sim.t.values, sample_time)
        if matched_gd:
            gd = matched_step_gd(p)
            _, _, gsols = solve_seeds(gd, steps * gd.eta, seeds=dmft_seeds, seed=theory_root,
                                      executor=executor, cache=cache, n_samples=n_samples,
                                      n_resp=n_resp)
            gth = np.array([value_at(s[observable].values, s.t.values, sample_time)[0]
                            for s in gsols])
        else:
            gth = None
        rows.append((p, th, si, gth))
    th_ref, si_ref = rows[0][1], rows[0][2]
    dev_th = np.array([paired_ratio(r[1], th_ref) for r in rows])
    dev_si = np.array([paired_ratio(r[2], si_ref) for r in rows])
    ms_th = np.array([mean_se(r[1]) for r in rows])
    ms_si = np.array([mean_se(r[2]) for r in rows])
    lo, hi = dev_si[:, 0] - dev_si[:, 1], dev_si[:, 0] + dev_si[:, 1]
    near = np.where(lo * hi <= 0, 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    far = np.maximum(np.abs(lo), np.abs(hi))
    b_th = log_crossing(batches, np.abs(dev_th[:, 0]), tolerance)
    attrs = {**base.attrs(), "kind": "scaling rule scan",
             "temperature_symbol": r"\eta(1-b)", "temperature": float(temperature),
             "observable": RULE_OBSERVABLES[observable], "observable_var": observable,
             "sample_time": float(sample_time), "reference_batch": batches[0],
             "critical_batch_formula": (r"b_c=\frac{h_c}{T+h_c},\quad T=\eta(1-b),\quad "
                                        r"h_c=b_c\eta_c:\ |\delta(h_c)|=\mathrm{tol}"),
             "critical_batch_theory": b_th,
             "critical_sample_step_theory": (float(temperature * b_th / (1 - b_th))
                                             if np.isfinite(b_th) else float("nan")),
             "critical_batch_measured": log_crossing(batches, np.abs(dev_si[:, 0]), tolerance),
             "critical_batch_measured_lo": log_crossing(batches, far, tolerance),
             "critical_batch_measured_hi": log_crossing(batches, near, tolerance),
             "tolerance": float(tolerance), "d": int(d), "seeds": int(seeds),
             "dmft_seeds": int(dmft_seeds), "n_samples": int(n_samples), "n_resp": int(n_resp),
             "seed": int(seed),
             "pairing": "simulations: same training sets, initial weights and batch streams "
                        "at every b; DMFT: same Monte Carlo samples at every b"}
    bvar = "batch"
    extra = {}
    if matched_gd:
        step = np.array([paired_ratio(r[3], rows[0][3]) for r in rows])
        noise = np.array([paired_ratio(r[1], r[3]) for r in rows])
        ms_gd = np.array([mean_se(r[3]) for r in rows])
        extra = {"step_deviation_theory": (bvar, step[:, 0]),
                 "step_deviation_theory_se": (bvar, step[:, 1]),
                 "noise_theory": (bvar, noise[:, 0]), "noise_theory_se": (bvar, noise[:, 1]),
                 "observable_gd_theory": (bvar, ms_gd[:, 0]),
                 "observable_gd_theory_se": (bvar, ms_gd[:, 1])}
        b_gd = log_crossing(batches, np.abs(step[:, 0]), tolerance)
        attrs["critical_batch_gd_theory"] = b_gd
        attrs["critical_sample_step_gd_theory"] = (float(temperature * b_gd / (1 - b_gd))
                                                   if np.isfinite(b_gd) else float("nan"))
    return xr.Dataset(
        {"deviation_theory": (bvar, dev_th[:, 0]), "deviation_theory_se": (bvar, dev_th[:, 1]),
         "deviation": (bvar, dev_si[:, 0]), "deviation_se": (bvar, dev_si[:, 1]),
         "deviation_lo": (bvar, lo), "deviation_hi": (bvar, hi),
         "observable_theory": (bvar, ms_th[:, 0]), "observable_theory_se": (bvar, ms_th[:, 1]),
         "observable_sim": (bvar, ms_si[:, 0]), "observable_sim_se": (bvar, ms_si[:, 1]),
         "eta": (bvar, np.array([r[0].eta for r in rows])),
         "sample_step": (bvar, np.array([r[0].sample_step for r in rows])), **extra},
        coords={bvar: (bvar, np.array(batches), {"long_name": "batch fraction b"})},
        attrs=attrs)



FDR_MODEL = dict(alpha=2.0, Delta=0.5, R0=0.01)  # the two-cluster model, with a ridge for a stationary state


def fdr_check(*, b, eta, lam=0.5, t_max=30.0, seeds=8, n_samples=4000, n_resp=1000, window=2.0, seed=None,
              executor=None, cache=None):
    """The effective temperature of SGD's noise from the fluctuation-dissipation relation of the
    DMFT, against the white part of the batch noise (:func:`~tsdyn.dmft.fdr_temperature`).

    ``seeds`` DMFT solutions of the two-cluster model (:data:`FDR_MODEL`) with ridge ``lam`` at
    batch fraction ``b`` and step ``eta``, read at ``t_max`` over lags up to ``window``
    (``executor`` and ``cache`` as in :func:`solve_seeds`: the same solutions). In a
    stationary state driven by white noise of strength 2T per unit time the decorrelation is
    dC = T chi (chi the integrated response); the white part of the batch noise predicts
    T = eta W / 2 (W the diagonal jump of the noise kernel). A discrete step adds a correction of
    order eta (times the curvature), so the ratio should tend to 1 as eta -> 0 at fixed b.

    Returns a dict: ``ratio`` (mean T_eff over mean T_pred) and its ``ratio_se`` over the
    solutions, ``T_eff`` (and ``T_eff_se``), ``T_pred``, their sample-clock values (divided by
    b), ``temperature`` (eta (1 - b)), ``grad_var`` (and ``grad_var_se``: the gradient variance
    of one weight, :func:`~tsdyn.dmft.fdr_temperature`), the mean parametric plot ``chi``,
    ``dC`` (lags increasing) with ``dC_se``, and the solutions ``sols``.
    """
    p = Params(**FDR_MODEL, lam=lam, eta=eta, b=b)
    _, _, sols = solve_seeds(p, t_max, seeds=seeds, seed=seed, n_samples=n_samples, n_resp=n_resp,
                             executor=executor, cache=cache)
    res = [fdr_temperature(s, window=window) for s in sols]
    T_eff = np.array([r["T_eff"] for r in res])
    T_pred = np.array([r["T_pred"] for r in res])
    g2 = np.array([r["grad_var"] for r in res])
    dC = np.stack([r["dC"] for r in res])
    return {"ratio": float(T_eff.mean() / T_pred.mean()),
            "ratio_se": float(T_eff.std(ddof=1) / np.sqrt(len(res)) / T_pred.mean()),
            "T_eff": float(T_eff.mean()), "T_eff_se": float(T_eff.std(ddof=1) / np.sqrt(len(res))),
            "T_pred": float(T_pred.mean()),
            "T_eff_sample": float(T_eff.mean() / b), "T_pred_sample": float(T_pred.mean() / b),
            "temperature": float(eta * (1.0 - b)),
            "grad_var": float(g2.mean()), "grad_var_se": float(g2.std(ddof=1) / np.sqrt(len(res))),
            "chi": np.mean([r["chi"] for r in res], axis=0), "dC": dC.mean(0),
            "dC_se": dC.std(0, ddof=1) / np.sqrt(len(res)), "sols": sols}


# Candidate temperatures of SGD per unit of the sample clock b t, as functions of (eta, b),
# with eta the learning rate of the summed gradient (eq. E1): the exponents (of eta, 1 - b, b).
FDR_CANDIDATES = {"eta (1 - b)": (1.0, 1.0, 0.0), "eta (1 - b) / b": (1.0, 1.0, -1.0)}


def fdr_scan(bs, etas, *, lam=0.5, t_max=30.0, seeds=8, n_samples=4000, n_resp=1000, window=2.0,
             seed=0, executor=None, cache=None):
    """The fluctuation-dissipation temperature of SGD over a grid of batch fractions and steps,
    and the law it follows (:func:`fdr_check` at every (b, eta), with ``executor`` and ``cache``).

    The slope T_eff of the DMFT's parametric plot (per unit t) is turned into the temperature
    per unit of the sample clock b t, T_s = T_eff/b, and divided by half the gradient variance
    of one weight, g^2/2 (``grad_var``, measured in the same solutions): theta = T_s/(g^2/2)
    is the temperature with the state of the weights divided out (with the gradient summed
    over the batch the stationary state depends on b: the drift is eta[lam w + b grad], an
    effective ridge lam/b). The white batch noise predicts theta = eta (1 - b) (up to O(eta)
    for the discrete step). A weighted least-squares fit of

        ln theta = c + a ln eta + p ln(1 - b) + q ln b

    (errors from the solutions' spread, scaled by sqrt(chi^2/dof) if that exceeds 1) gives
    the exponents; eta (1 - b) is (a, p, q) = (1, 1, 0), the talk's eta (1 - b)/b with this
    eta is (1, 1, -1). Each candidate of :data:`FDR_CANDIDATES`, with a free constant, is also
    fitted: its chi^2 per degree of freedom and the spread max/min of theta over the candidate.

    Returns (xarray.Dataset over (b, eta), {(b, eta): the :func:`fdr_check` dict without its
    solutions}). The Dataset: T_eff, T_eff_se, T_pred, grad_var, grad_var_se, ratio, ratio_se,
    theta, theta_se; attrs: exponent_eta, exponent_1mb, exponent_b (+ _se), constant, and per
    candidate ``chi2_<k>`` and ``spread_<k>`` (k = 0, 1 in the order of
    :data:`FDR_CANDIDATES`), candidates (their names), lam, t_max, window, seeds.
    """
    bs, etas = [float(b) for b in bs], [float(e) for e in etas]
    if len(bs) < 2 or len(etas) < 2:
        raise ValueError(f"bs and etas (the grid) must hold at least 2 values each; got {bs!r}, {etas!r}")
    for b in bs:
        _validate.real("bs", b, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="batch fraction; b = 1 has no batch noise")
    _validate.integer("seed", seed, low=0, doc="root seed")
    shape = (len(bs), len(etas))
    out = {k: np.empty(shape) for k in ("T_eff", "T_eff_se", "T_pred", "grad_var", "grad_var_se",
                                        "ratio", "ratio_se")}
    checks = {}
    for i, b in enumerate(bs):
        for j, eta in enumerate(etas):
            r = fdr_check(b=b, eta=eta, lam=lam, t_max=t_max, seeds=seeds, n_samples=n_samples,
                          n_resp=n_resp, window=window, executor=executor, cache=cache,
                          seed=curve_seed("fdr scan", b, eta, lam, t_max, seed))
            for k in out:
                out[k][i, j] = r[k]
            checks[(b, eta)] = {k: v for k, v in r.items() if k != "sols"}
    B, E = np.meshgrid(bs, etas, indexing="ij")
    theta = out["T_eff"] / B / (out["grad_var"] / 2)
    # relative errors of T_eff and g^2 from the same solutions, combined (conservative: the
    # two are positively correlated across solutions)
    rel = np.hypot(out["T_eff_se"] / out["T_eff"], out["grad_var_se"] / out["grad_var"])
    y, err = np.log(theta).ravel(), rel.ravel()
    A = np.stack([np.ones(y.size), np.log(E).ravel(), np.log(1 - B).ravel(), np.log(B).ravel()], 1)

    def wls(A, y):
        w = 1.0 / err ** 2
        cov = np.linalg.inv(A.T @ (A * w[:, None]))
        coef = cov @ A.T @ (w * y)
        dof = y.size - A.shape[1]
        chi2 = float(np.sum(w * (y - A @ coef) ** 2)) / dof if dof > 0 else float("nan")
        return coef, cov * max(chi2, 1.0) if np.isfinite(chi2) else cov, chi2

    coef, cov, _ = wls(A, y)
    se = np.sqrt(np.diag(cov))
    attrs = {"exponent_eta": float(coef[1]), "exponent_eta_se": float(se[1]),
             "exponent_1mb": float(coef[2]), "exponent_1mb_se": float(se[2]),
             "exponent_b": float(coef[3]), "exponent_b_se": float(se[3]),
             "constant": float(np.exp(coef[0])), "candidates": list(FDR_CANDIDATES),
             "lam": float(lam), "t_max": float(t_max), "window": float(window), "seeds": int(seeds),
             "n_samples": int(n_samples)}
    for k, (a, p_, q) in enumerate(FDR_CANDIDATES.values()):
        cand = E ** a * (1 - B) ** p_ * B ** q
        _, _, chi2 = wls(np.ones((y.size, 1)), y - np.log(cand).ravel())
        ratio = theta / cand
        attrs[f"chi2_{k}"] = chi2
        attrs[f"spread_{k}"] = float(ratio.max() / ratio.min())
    dims = ("b", "eta")
    data = {k: (dims, v) for k, v in out.items()}
    data.update(theta=(dims, theta), theta_se=(dims, theta * rel))
    return xr.Dataset(data, coords={"b": ("b", np.array(bs)), "eta": ("eta", np.array(etas))},
                      attrs=attrs), checks


def kicked_fdr_check(*, b, eta, d, seeds, lam=0.5, t_max=30.0, window=2.0, kick=1e-3, dmft_seeds=8,
                     n_samples=4000, n_resp=1000, seed=0, executor=None, cache=None):
    """The fluctuation-dissipation plot measured in simulations (kicked twins,
    :func:`~tsdyn.dmft.response.kicked_response`) against the DMFT's (:func:`fdr_check`), at one
    (b, eta) of the two-cluster model with ridge ``lam`` (:data:`FDR_MODEL`).

    ``seeds`` training sets at dimension ``d`` (each with its own kick direction) and
    ``dmft_seeds`` DMFT solutions, independent random numbers. Per lag: the integrated
    response chi and the decorrelation dC, mean and standard error over runs and over
    solutions, and their differences in standard errors; and the slopes T_eff of the two
    parametric plots (:func:`difference` of the per-run slopes).

    Returns a dict: ``lag``; ``sim`` and ``dmft``, each a dict of chi, chi_se, dC, dC_se
    (arrays over lags) and T_eff (mean, se); ``chi_z`` and ``dC_z`` (arrays over lags, nan
    where both are exact, chi at the first lag),
    ``T_diff`` (:func:`difference`, simulation minus DMFT), ``n_diverged``.
    """
    from .. import _seeds
    from .response import kicked_response_point

    _validate.integer("seeds", seeds, low=2, doc="training sets (error bars need two)")
    p = Params(**FDR_MODEL, lam=lam, eta=eta, b=b)
    root = curve_seed("kicked twins", p.attrs(), d, t_max, window, kick, seed)
    kw = dict(**{k: v for k, v in p.attrs().items() if k != "algorithm"}, t_obs=t_max, d=d,
              window=window, kick=kick)
    kw["tau"] = None
    runs = _map_points(kicked_response_point, [(kw, s) for s in _seeds.children(root, seeds)],
                       executor, cache)
    runs = [r for r in runs if not bool(r.diverged)]
    th = fdr_check(b=b, eta=eta, lam=lam, t_max=t_max, seeds=dmft_seeds, n_samples=n_samples,
                   n_resp=n_resp, window=window, seed=curve_seed("kicked twins dmft", seed),
                   executor=executor, cache=cache)
    res = [fdr_temperature(s, window=window) for s in th["sols"]]
    out = {"lag": runs[0].lag.values, "n_diverged": seeds - len(runs)}
    T = {}
    for src, chis, dCs, Ts in (("sim", [r.chi.values for r in runs], [r.dC.values for r in runs],
                                [float(r.T_eff) for r in runs]),
                               ("dmft", [r["chi"] for r in res], [r["dC"] for r in res],
                                [r["T_eff"] for r in res])):
        chis, dCs = np.stack(chis), np.stack(dCs)
        n = len(chis)
        out[src] = {"chi": chis.mean(0), "chi_se": chis.std(0, ddof=1) / np.sqrt(n),
                    "dC": dCs.mean(0), "dC_se": dCs.std(0, ddof=1) / np.sqrt(n),
                    "T_eff": mean_se(Ts)}
        T[src] = np.asarray(Ts)
    s_, d_ = out["sim"], out["dmft"]
    with np.errstate(divide="ignore", invalid="ignore"):
        for v in ("chi", "dC"):
            se = np.hypot(s_[v + "_se"], d_[v + "_se"])
            z = np.abs(s_[v] - d_[v]) / se
            # chi at the first lag is eta R(t, t - eta) = eta in both, exactly: no comparison
            out[v + "_z"] = np.where(se > 1e-9 * np.abs(d_[v]), z, np.nan)
    out["T_diff"] = difference(T["sim"], T["dmft"])
    return out

def _main(argv=None):
    """``python -m tsdyn.dmft.experiments scaling-rule [--T 0.2] [--batches ...] ...``:
    run :func:`scaling_rule_scan` and print its table and critical batches."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tsdyn.dmft.experiments")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sr = sub.add_parser("scaling-rule", help="the linear scaling rule at fixed temperature")
    sr.add_argument("--T", type=float, default=0.2, help="temperature eta (1 - b)")
    sr.add_argument("--batches", type=float, nargs="+",
                    default=list(RULE_QUICK_BATCHES))
    sr.add_argument("--sample-time", type=float, default=4.8)
    sr.add_argument("--d", type=int, default=400)
    sr.add_argument("--seeds", type=int, default=32)
    sr.add_argument("--dmft-seeds", type=int, default=16)
    sr.add_argument("--n-samples", type=int, default=8000)
    sr.add_argument("--n-resp", type=int, default=1000)
    sr.add_argument("--seed", type=int, default=0)
    sr.add_argument("--tolerance", type=float, default=0.1)
    sr.add_argument("--out", help="write the Dataset to this netCDF file")
    a = ap.parse_args(argv)
    ds = scaling_rule_scan(a.T, a.batches, sample_time=a.sample_time, d=a.d, seeds=a.seeds,
                           dmft_seeds=a.dmft_seeds, n_samples=a.n_samples, n_resp=a.n_resp,
                           seed=a.seed, tolerance=a.tolerance)
    cols = ["eta", "sample_step", "deviation_theory", "deviation_theory_se", "deviation",
            "deviation_se", "step_deviation_theory", "noise_theory", "noise_theory_se"]
    print(ds[cols].to_dataframe().to_string(float_format=lambda x: f"{x:.5f}"))
    for k, v in ds.attrs.items():
        if k.startswith("critical") or k in ("temperature", "tolerance", "observable"):
            print(f"{k}: {v}")
    if a.out:
        ds.to_netcdf(a.out)


if __name__ == "__main__":
    _main()
