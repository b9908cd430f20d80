"""Controls that vary one mechanism at a time (DMFT and simulations side by side).

:func:`matched_step_runs` and :func:`step_or_noise` separate the two things a smaller batch
changes on the clock of sample visits, b t: the noise of the batch and the step. SGD at
batch fraction b and learning rate eta moves b t by b eta per step (the gradient is summed
over the batch, Mignacco et al. 2020, eq. (2)), so it is compared with gradient descent at
the matched step b eta, which has the same clock and the same number of steps but no batch
noise. What SGD does beyond that control is the effect of the noise.
"""

from dataclasses import replace

import numpy as np

from .analysis import (difference, escape_times, mean_se, median_ci, median_difference_ci,
                       simulate_seeds, solve_seeds)


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
