"""Composite runs returning plain numbers, in the form :func:`tsdyn.sweep.run` calls."""

import numpy as np

from . import theory
from .params import Params
from .simulate import recovery_time

HERMITE = {1: "linear", 2: "he2", 3: "he3", 4: "he4"}


def scaling_params(*, d, ell, mu, variant="projected", gamma0=0.1, n0=1.0, eta=0.5, delta=None,
                   m0_scale=1.0):
    """Params of a weak-recovery run at the best learning rate for (ell, mu).

    Target He_ell / sqrt(ell!) and the same student activation (its ell-th
    coefficient is 1); delta = :func:`theory.best_delta` unless given; the run
    starts at overlap m0 = m0_scale d^-1/2, the typical overlap of a random unit
    vector, so that T is not dominated by the rare runs that start much closer to 0.
    """
    loss, algorithm = {"projected": ("square", "projected"), "correlation": ("correlation", "projected"),
                       "spherical": ("square", "spherical")}[variant]
    if delta is None:
        delta = theory.best_delta(ell, mu, variant)
    return Params(d=d, mu=mu, delta=delta, n0=n0, gamma0=gamma0, target=HERMITE[ell],
                  activation=HERMITE[ell], loss=loss, algorithm=algorithm, eta=eta,
                  m0=m0_scale * d ** -0.5)


def recovery_scaling_point(*, seed, d, ell, mu, max_steps, variant="projected", gamma0=0.1, n0=1.0,
                           eta=0.5, delta=None, m0_scale=1.0, sampler="auto"):
    """Weak-recovery time of one run of :func:`scaling_params` (dict of T, samples, recovered).
    ``sampler`` "auto" (default): exact in law below :data:`simulate.GAUSSIAN_MIN_NB` samples per
    batch, the central-limit sampler from there on (:func:`simulate.simulate`)."""
    p = scaling_params(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0, eta=eta,
                       delta=delta, m0_scale=m0_scale)
    out = recovery_time(p, int(max_steps), seed=seed, sampler=sampler)
    return {"T": out["T"], "samples": out["samples"], "recovered": out["recovered"],
            "n_b": float(p.n_b), "gamma": p.gamma}


def sampler_check_point(*, seed, d, ell, n_b, offset, sampler, max_steps, gamma0=0.04, n0=4.0):
    """One weak-recovery run (:func:`recovery_scaling_point`) at batch ``n_b`` = n0 d^mu and learning-rate
    exponent delta = the theory's finite-d noise root (:func:`noise_boundary_delta`) + ``offset``: the
    check of the central-limit sampler against the exact one where the recovered fraction is most
    sensitive to the law of a step."""
    import math
    mu = math.log(n_b / n0) / math.log(d)
    root = noise_boundary_delta(d=d, ell=ell, mu=mu, gamma0=gamma0, n0=n0)
    out = recovery_scaling_point(seed=seed, d=d, ell=ell, mu=mu, max_steps=max_steps, gamma0=gamma0, n0=n0,
                                 delta=root + offset, sampler=sampler)
    return {"T": out["T"], "recovered": out["recovered"], "delta": root + offset}


def boundary_budget(*, d, ell, mu, variant="projected", gamma0=0.1, eta=0.5, factor=4.0):
    """Step budget of the boundary runs (:func:`boundary_run`): ``factor`` times the drift-only time from
    m0 = d^-1/2 to eta (:func:`analysis.drift_time`) at the asymptotic lower edge
    (:func:`theory.asymptotic_boundary`), so that the budget line lies ln(factor) / ln d above that edge at
    every d and does not decide where the runs stop learning."""
    from .analysis import drift_time
    edge = theory.asymptotic_boundary(ell, mu, variant)
    return int(np.ceil(factor * drift_time(d, gamma0 * d ** -edge, eta, ell)))


def boundary_run(*, seed, d, ell, mu, offset, variant="projected", gamma0=0.1, n0=1.0, eta=0.5, factor=4.0,
                 sampler="auto", clt_min_nb=None):
    """One weak-recovery run at learning-rate exponent delta = the theory's finite-d noise root
    (:func:`noise_boundary_delta`) + ``offset``, within :func:`boundary_budget` steps: one point of the lower
    edge of the (mu, delta) learning region measured at growing d. ``clt_min_nb``: batches of at least
    this many samples take the central-limit sampler (default: :data:`simulate.GAUSSIAN_MIN_NB`, as
    ``sampler="auto"``). Returns a dict of ``recovered``, ``T``, ``delta``, ``root``, ``budget``, ``n_b``."""
    root = noise_boundary_delta(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0)
    budget = boundary_budget(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, eta=eta, factor=factor)
    p = scaling_params(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0, eta=eta, delta=root + offset)
    if clt_min_nb is not None and p.n_b >= clt_min_nb:
        sampler = "gaussian"
    out = recovery_time(p, budget, seed=seed, sampler=sampler)
    return {"recovered": out["recovered"], "T": out["T"], "delta": root + offset, "root": root,
            "budget": float(budget), "n_b": float(p.n_b)}


def theory_recovery_time(*, d, ell, mu, variant="projected", gamma0=0.1, n0=1.0, eta=0.5, delta=None,
                         m0_scale=1.0, max_steps=10 ** 9, fractional=False):
    """The deterministic dynamics' weak-recovery time for the same Params (inf if never);
    ``fractional``: the crossing interpolated between steps (:func:`theory.recovery_time`)."""
    p = scaling_params(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0, eta=eta,
                       delta=delta, m0_scale=m0_scale)
    return theory.recovery_time(p, m0=p.m0, max_steps=max_steps, fractional=fractional)


def giant_step_params(*, d, mu, ell=2, n0=1.0, gamma0=1e8):
    """Params of one giant step: correlation loss, projected SGD, He_ell target and student,
    batch n_b = n0 d^mu, gamma = gamma0 (delta = 0; gamma0 -> infinity makes w' the direction
    of g), from the typical random overlap m0 = d^-1/2."""
    return Params(d=d, mu=mu, n0=n0, gamma0=gamma0, delta=0.0, target=HERMITE[ell], activation=HERMITE[ell],
                  loss="correlation", algorithm="projected", m0=d ** -0.5)


def giant_step_point(*, seed, d, mu, ell=2, n0=1.0, gamma0=1e8, sampler="reduced"):
    """Overlap <w, w*> after one SGD step of :func:`giant_step_params` (simulation)."""
    from .simulate import simulate
    p = giant_step_params(d=d, mu=mu, ell=ell, n0=n0, gamma0=gamma0)
    ds = simulate(p, 1, seed=seed, n_points=2, sampler=sampler)
    return {"m1": float(ds.M.isel(t=-1).values[0, 0]), "n_b": float(p.n_b)}


def giant_step_theory(*, d, mu, ell=2, n0=1.0, gamma0=1e8):
    """Predicted overlap after one giant step (theory only): ``analysis.giant_step_overlap`` of
    A = E[F nu] and the noise (d / n_b) E[F^2] at m0 = d^-1/2, and the theory's finite-d step
    map at the same point (its difference measures the finite-d terms the formula leaves out)."""
    import numpy as np

    from .analysis import giant_step_overlap
    p = giant_step_params(d=d, mu=mu, ell=ell, n0=n0, gamma0=gamma0)
    M0, Q0 = np.array([[p.m0]]), np.eye(1)
    mom = theory.moments(p, M0, Q0)
    pred = float(giant_step_overlap(mom["F_nu"][0, 0], p.d / p.n_b * mom["FF"][0, 0]))
    finite = float(theory.step_map(p, M0, Q0, finite_d=True)[0][0, 0])
    return {"m1": pred, "m1_finite_d": finite, "n_b": float(p.n_b), "m0": float(p.m0)}


def theory_phase_point(*, seed=None, d, ell, mu, delta, budget, variant="projected", gamma0=0.1, n0=1.0,
                       eta=0.5):
    """The theory's verdict at one (mu, delta) point of a phase diagram: whether the deterministic
    finite-d dynamics from m0 = d^-1/2 reach eta within ``budget`` steps, and their time T (inf if
    not within the budget). ``seed`` is ignored (the theory draws nothing); it is there so that
    :func:`tsdyn.sweep.run` can spread the grid over workers."""
    T = theory_recovery_time(d=d, ell=ell, mu=mu, delta=delta, variant=variant, gamma0=gamma0, n0=n0, eta=eta,
                             max_steps=int(budget))
    return {"T": T, "recovers": bool(T <= budget)}


# Batches up to this size take the exact one-step mean in the noise boundary (:func:`start_growth`);
# its Monte Carlo costs n_b per batch, and above it the map's intra-batch error is small (chapter, Sec. 3).
EXACT_MAX_NB = 64
# Monte Carlo batches of the exact one-step mean in the boundary: its standard error in m'/m0 - 1 is
# about 1e-3 at m0 = 128^-1/2, a shift of the root in delta far below the diagrams' grid step.
EXACT_BATCHES = 20000


def _exact_step_mean(p, *, seed):
    """The exact mean of m' after one step from p.m0 and its Monte Carlo error: the quadrature
    :func:`theory.single_sample_step_mean` at n_b = 1 (error 0), :func:`theory.batch_step_mean` over
    :data:`EXACT_BATCHES` batches drawn from ``seed`` above."""
    if p.n_b == 1:
        return theory.single_sample_step_mean(p, p.m0), 0.0
    return theory.batch_step_mean(p, p.m0, n_batches=EXACT_BATCHES, seed=seed)


def start_growth(*, d, ell, mu, delta, variant="projected", gamma0=0.1, n0=1.0, exact=True):
    """m'/m0 - 1: the relative change of the typical start m0 = d^-1/2 in one step (positive: the
    drift beats the noise at the start). With ``exact`` (default), batches of at most
    :data:`EXACT_MAX_NB` samples use the exact one-step mean (:func:`theory.single_sample_step_mean`
    at n_b = 1, :func:`theory.batch_step_mean` above, with fixed random numbers, so that the growth
    is a smooth function of delta), larger ones the theory's finite-d step map; without, the map
    everywhere, which overstates the noise's pull at small batches."""
    import numpy as np
    p = scaling_params(d=d, ell=ell, mu=mu, delta=delta, variant=variant, gamma0=gamma0, n0=n0)
    if exact and p.n_b <= EXACT_MAX_NB and p.algorithm in ("projected", "spherical"):
        return _exact_step_mean(p, seed=0)[0] / p.m0 - 1.0
    M, _ = theory.step_map(p, np.array([[p.m0]]), np.eye(1))
    return float(M[0, 0] / p.m0 - 1.0)


def noise_boundary_delta(*, d, ell, mu, variant="projected", gamma0=0.1, n0=1.0, width=1.0, tol=1e-3,
                         exact=True):
    """The noise boundary at finite d, from the theory alone: the learning-rate exponent delta at
    which one step of the finite-d step map neither grows nor shrinks the typical start m0 = d^-1/2
    (:func:`start_growth` = 0), by bisection on [lo, hi]. Above it the drift wins.

    To leading order the map moves m0 by gamma l m0^(l-1) - gamma^2 (d / n_b) E[F^2] m0 / 2 (He_l
    target and student, E[F^2] at m = 0), so the root is delta_c = l/2 - mu + ln(kappa) / ln d with
    kappa = gamma0 E[F^2] / (2 l n0): the asymptotic line plus an offset that falls like 1/ln d
    (chapter, Sec. 5). Returns -inf if the start grows at every delta in [lo, hi] (the giant-step
    side, mu > l - 1, of the correlation loss and spherical SGD) and nan if it grows at none. With
    ``exact`` (default) batches of at most :data:`EXACT_MAX_NB` samples use the exact one-step mean
    (:func:`start_growth`); ``tol`` (1e-3) is well below the Monte Carlo error of that mean's root.
    """
    lo, hi = ell / 2 - mu - width, ell / 2 - mu + width
    def g(de):
        return start_growth(d=d, ell=ell, mu=mu, delta=de, variant=variant, gamma0=gamma0, n0=n0,
                            exact=exact)

    g_lo, g_hi = g(lo), g(hi)
    if g_hi <= 0:
        return float("nan")
    if g_lo > 0:
        return float("-inf")
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if g(mid) > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def noise_kappa(*, ell, variant="projected", gamma0=0.1, n0=1.0):
    """kappa = gamma0 E[F^2] / (2 l n0), with E[F^2] at m = 0 from the theory's quadrature: the
    prefactor of the noise condition, whose log over ln d is the finite-d offset of the noise
    boundary from delta = l/2 - mu (:func:`noise_boundary_delta`)."""
    import numpy as np
    p = scaling_params(d=64, ell=ell, mu=0.0, delta=0.0, variant=variant, gamma0=gamma0, n0=n0)
    FF = theory.moments(p, np.zeros((1, 1)), np.eye(1))["FF"][0, 0]
    return float(gamma0 * FF / (2 * ell * n0))


def giant_boundary_mu(*, d, ell, variant="correlation", n0=1.0):
    """Batch exponent above which a very large step (gamma^2 (d / n_b) E[F^2] >> 1) still grows the
    typical start m0 = d^-1/2, for the correlation loss and spherical SGD (no O(1) radial part).

    Such a step sends w to the direction of g, so m' ~ A / sqrt((d / n_b) E[F^2]) with
    A ~ l m0^(l-1) (He_l target and student); m' > m0 iff
    mu > l - 1 + ln(E[F^2] / (n0 l^2)) / ln d (chapter, Sec. 5), with E[F^2] at m = 0 from the
    theory's quadrature."""
    import numpy as np
    kappa = noise_kappa(ell=ell, variant=variant, gamma0=1.0, n0=1.0)  # E[F^2] / (2 l)
    return float(ell - 1 + np.log(2 * ell * kappa / (n0 * ell ** 2)) / np.log(d))


def giant_steps_point(*, seed, d, ell, n0, max_steps=1000, sampler="reduced"):
    """Number of giant steps (correlation loss, gamma = 1e8, batch n_b = n0 d^(l-1)) from
    m0 = d^-1/2 to the weak-recovery threshold: one SGD run (dict of T and recovered)."""
    p = giant_step_params(d=d, mu=float(ell - 1), ell=ell, n0=n0)
    out = recovery_time(p, int(max_steps), seed=seed, sampler=sampler)
    return {"T": out["T"], "recovered": out["recovered"]}


def giant_steps_theory(*, d, ell, n0, max_steps=1000):
    """The same number of giant steps from the theory's finite-d step map (deterministic)."""
    p = giant_step_params(d=d, mu=float(ell - 1), ell=ell, n0=n0)
    return theory.recovery_time(p, m0=p.m0, max_steps=max_steps)


def finite_d_params(*, d, n0=1.0):
    """Params of Sec. 3's finite-d check: correlation loss, He2 target and student, batch n0 d
    (mu = 1), gamma = 0.2 (delta = 0), start m0 = 0.2."""
    return Params(d=d, mu=1.0, delta=0.0, gamma0=0.2, n0=n0, loss="correlation", target="he2",
                  activation="he2", m0=0.2)


def finite_d_point(*, d, n0=1.0, runs, seed, steps=60, exact_batches=0, law_batches=0, law_grid=801):
    """The overlap after ``steps`` steps of :func:`finite_d_params`: the mean of ``runs`` SGD runs
    (exact-in-law sampler, seeds ``seed``, ``seed`` + 1, ...) against the theory's recursions from
    the same start.

    Returns ``sim`` and ``sim_se`` (mean and standard error over the runs), ``sim_sd`` (their spread),
    the series recursion with finite-d terms (``finite``), the same without its fluctuation factor
    (``no_factor``), with the spread closure (``finite_closure``), the relative sizes of the factor's
    last kept and first omitted terms at the series' final overlap (``series_kept``, ``series_omitted``:
    :func:`theory.series_terms`) and whether the map keeps the factor there (``series_factor_on``), the
    d -> infinity recursion
    (``infinite``), and, when ``exact_batches`` > 0, the exact one-step mean iterated with the
    closure (``exact``, its Monte Carlo error ``exact_se`` and predicted spread ``exact_sd``; nan
    otherwise), and, when ``law_batches`` > 0, the law of the overlap carried as a Markov chain
    (``theory.dynamics(method="law")``, ``law_batches`` batches per point of a ``law_grid`` grid): its mean
    ``law`` with Monte Carlo error ``law_se``, spread ``law_sd``, mass below zero ``law_neg`` (the mirror
    state of an even target) and spread of the part above zero ``law_sd_pos``, with their Monte Carlo errors
    ``law_neg_se``, ``law_sd_pos_se``; beside them the runs' fraction below zero ``sim_neg`` and spread of
    those above ``sim_sd_pos``. All theory starts from the
    runs' common start."""
    import numpy as np

    from .simulate import simulate
    p = finite_d_params(d=d, n0=n0)
    sims = [simulate(p, steps, seed=seed + s, n_points=2, sampler="reduced") for s in range(int(runs))]
    m = np.array([r.M.values[-1, 0, 0] for r in sims])
    final = lambda **kw: float(theory.dynamics(p, steps, init=sims[0], n_points=2, **kw).M[-1, 0, 0])
    series = final()
    kept, omitted = theory.series_terms(p, np.array([[series]]), np.eye(1))
    out = {"n_b": float(p.n_b), "sim": float(m.mean()), "sim_se": float(m.std(ddof=1) / np.sqrt(m.size)),
           "sim_sd": float(m.std(ddof=1)), "finite": series, "no_factor": final(jensen=False),
           "series_kept": float(kept[0]), "series_omitted": float(omitted[0]),
           "series_factor_on": bool(omitted[0] <= theory.SERIES_RATIO_MAX * kept[0]),
           "finite_closure": final(fluctuations=True), "infinite": final(finite_d=False),
           "exact": np.nan, "exact_se": np.nan, "exact_sd": np.nan, "sim_neg": float(np.mean(m < 0)),
           "sim_sd_pos": float(m[m > 0].std(ddof=1)),
           **dict.fromkeys(("law", "law_se", "law_sd", "law_neg", "law_neg_se", "law_sd_pos", "law_sd_pos_se"),
                           np.nan)}
    if exact_batches:
        ex = theory.dynamics(p, steps, init=sims[0], n_points=2, method="exact", fluctuations=True,
                             n_batches=int(exact_batches), seed=int(seed) + 1)
        out.update(exact=float(ex.M[-1, 0, 0]), exact_se=float(ex.M_mc_se[-1]),
                   exact_sd=float(np.sqrt(ex.M_var[-1])))
    if law_batches:
        lw = theory.dynamics(p, steps, init=sims[0], n_points=2, method="law", n_batches=int(law_batches),
                             grid=int(law_grid), seed=int(seed) + 2)
        x = lw.m.values
        below = (x < 0) + 0.5 * (x == 0)  # the grid point at zero counts half on each side
        laws = np.vstack([lw.law.values[-1], lw.law_groups.values[:, -1]])  # the law, then each group's
        neg = laws @ below
        above = laws * (1 - below)
        mean_above = above @ x / above.sum(axis=1)
        sd_above = np.sqrt(above @ x ** 2 / above.sum(axis=1) - mean_above ** 2)
        groups = np.sqrt(len(laws) - 1)
        out.update(law=float(lw.M[-1, 0, 0]), law_se=float(lw.M_mc_se[-1]), law_sd=float(np.sqrt(lw.M_var[-1])),
                   law_neg=float(neg[0]), law_neg_se=float(neg[1:].std(ddof=1) / groups),
                   law_sd_pos=float(sd_above[0]), law_sd_pos_se=float(sd_above[1:].std(ddof=1) / groups))
    return out


def one_step_params(*, d, ell, mu, delta, gamma0, n0, m0, variant="projected"):
    """Params of a one-step check: He_ell target and student, batch n0 d^mu, gamma0 d^-delta, start m0."""
    from dataclasses import replace
    p = scaling_params(d=d, ell=ell, mu=mu, delta=delta, variant=variant, gamma0=gamma0, n0=n0)
    return replace(p, m0=float(m0))


def one_step_point(*, seed, n_samples, d, ell, mu, delta, gamma0, n0, m0, variant="projected",
                   sampler="reduced", exact_max_nb=EXACT_MAX_NB):
    """The overlap after ONE SGD step from m0, sampled ``n_samples`` times (independent runs, seeds
    derived from ``seed``), against the theory's expected one-step map at the same point.

    Returns the SGD mean ``sim`` of m' and its standard error ``sim_se``, the map's m' (``map``:
    finite-d terms and its fluctuation factor where the map switches it on), the exact one-step mean
    ``exact`` and its Monte Carlo error ``exact_se`` (:func:`theory.single_sample_step_mean` at n_b = 1,
    with ``exact_se`` 0; :func:`theory.batch_step_mean` over :data:`EXACT_BATCHES` batches above; nan
    with label noise, several units or more than ``exact_max_nb`` samples per batch: its cost grows
    with n_b), and all as one-step growth relative to the start, m'/m0 - 1
    (``sim_growth``, ``sim_growth_se``, ``map_growth``, ``exact_growth``, ``exact_growth_se``)."""
    import numpy as np

    from .simulate import one_step_overlaps
    p = one_step_params(d=d, ell=ell, mu=mu, delta=delta, gamma0=gamma0, n0=n0, m0=m0, variant=variant)
    m = one_step_overlaps(p, int(n_samples), seed=seed, sampler=sampler)[:, 0, 0]
    mp = float(theory.step_map(p, np.array([[p.m0]]), np.eye(1))[0][0, 0])
    se = float(m.std(ddof=1) / np.sqrt(m.size))
    exact, exact_se = np.nan, np.nan
    if p.p == p.k == 1 and p.noise == 0 and p.n_b <= exact_max_nb:
        exact, exact_se = _exact_step_mean(p, seed=int(seed) + 1)
    return {"sim": float(m.mean()), "sim_se": se, "map": mp, "exact": exact, "exact_se": exact_se,
            "exact_growth": exact / p.m0 - 1, "exact_growth_se": exact_se / p.m0,
            "sim_growth": float(m.mean()) / p.m0 - 1, "sim_growth_se": se / p.m0, "map_growth": mp / p.m0 - 1,
            "n_b": float(p.n_b), "gamma": p.gamma}



def one_step_root(*, seed, n_samples, d, ell, mu, variant="projected", gamma0=0.1, n0=1.0, sampler="reduced",
                  h=0.01):
    """One-step SGD measured at the theory's noise boundary of one batch exponent.

    Theory: the root ``root_map`` in delta of the theory's one-step growth (:func:`noise_boundary_delta`:
    the exact one-step mean up to :data:`EXACT_MAX_NB` samples per batch, the finite-d step map above),
    where one step leaves the typical start m0 = d^-1/2 unchanged on average, and its slope there, ``slope`` = d(m'/m0 - 1)/d delta (central difference of step h).
    Measurement: the mean one-step growth m'/m0 - 1 of ``n_samples`` SGD steps from m0 at that delta
    (:func:`one_step_point`), ``growth`` and its standard error ``growth_se``: zero within the error
    where the map's boundary is right. To first order the boundary of the SGD mean then lies at
    root_map - growth / slope (``shift`` = -growth / slope, ``shift_se`` = growth_se / slope: the map
    converts a measured growth into a distance in delta, nothing is fitted). nan where the map has no
    root in its bracket."""
    import numpy as np
    root = noise_boundary_delta(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0)
    out = dict(root_map=float(root), n_b=float(scaling_params(d=d, ell=ell, mu=mu, n0=n0).n_b))
    if not np.isfinite(root):
        return {**out, **dict.fromkeys(("slope", "growth", "growth_se", "shift", "shift_se"), np.nan)}
    kw = dict(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0)
    slope = (start_growth(delta=root + h, **kw) - start_growth(delta=root - h, **kw)) / (2 * h)
    r = one_step_point(seed=seed, n_samples=n_samples, delta=root, m0=d ** -0.5, sampler=sampler, **kw)
    g, se = r["sim_growth"], r["sim_growth_se"]
    return {**out, "slope": float(slope), "growth": g, "growth_se": se, "shift": float(-g / slope),
            "shift_se": float(se / slope)}


# The law's grid deposit adds at most h^2 / 4 to the variance of a step (theory._law_recursion); the
# first passage is computed only where that is at most this fraction of the one-step variance s^2 at
# the start, so that the extra diffusion moves the passage probability by far less than the phase
# diagrams' binomial error (at least 0.1 at 12 runs per point).
PASSAGE_GRID_VAR = 0.05


def passage_point(*, d, ell, mu, delta, budget, variant="projected", gamma0=0.1, n0=1.0, eta=0.5,
                  n_batches=8000, grid=801, seed=0, anchors=None, n_chi=24):
    """The probability that a run of :func:`scaling_params` from m0 = d^-1/2 has reached |m| >= eta
    within ``budget`` steps, from the law absorbed at eta (:func:`theory.first_passage`), where the grid
    resolves a step: h^2 / 4 <= :data:`PASSAGE_GRID_VAR` s^2, h = 2 / (grid - 1), s^2 the variance of m'
    after one step from m0 (exact step, 4000 batches).

    Returns a dict: ``n_b``, ``gamma``, ``s2``, ``grid`` (used), ``grid_ok``, ``grid_needed`` (grid points that the
    condition asks for), and where ``grid_ok``: ``passed`` = P(T <= budget) with its Monte Carlo error
    ``passed_se``, the median first passage ``t_median`` with ``t_median_se``, and ``groups_ok``: whether
    the 16 kernel groups' P(T <= budget) average to the whole kernel's within 3 of its errors (the
    condition for those errors to hold, :func:`theory.first_passage`); nan / False otherwise. ``anchors``:
    as :func:`theory.first_passage` (the step computed at that many overlaps and interpolated per batch).
    ``grid`` None: the coarsest grid (at least 801 points, at most :data:`theory.PASSAGE_MAX_GRID`) that
    resolves a step; ``n_chi``: nodes of the chi-square rule (6 give the same probabilities as 24 to three
    decimals at d = 128)."""
    import numpy as np
    p = scaling_params(d=d, ell=ell, mu=mu, delta=delta, variant=variant, gamma0=gamma0, n0=n0, eta=eta)
    mp, mp2 = theory._batch_step_samples(p, (p.m0,), 4000, 24, np.random.default_rng(seed), squares=True)
    s2 = float(mp2.mean() - mp.mean() ** 2)
    need = int(np.ceil(2.0 / np.sqrt(4 * PASSAGE_GRID_VAR * s2))) + 1 if s2 > 0 else np.inf
    if grid is None:  # the coarsest odd grid of at least 801 points that resolves a step, within the limit
        grid = int(max(801, need + (need % 2 == 0))) if need <= theory.PASSAGE_MAX_GRID else 801
    h = 2.0 / (grid - 1)
    out = {"n_b": float(p.n_b), "gamma": p.gamma, "s2": s2, "grid": grid, "grid_ok": bool(h * h / 4 <= PASSAGE_GRID_VAR * s2),
           "grid_needed": need, "passed": np.nan, "passed_se": np.nan, "t_median": np.nan, "t_median_se": np.nan,
           "groups_ok": False}
    if out["grid_ok"]:
        fp = theory.first_passage(p, int(budget), n_batches=n_batches, grid=grid, seed=seed + 1, anchors=anchors,
                                  n_chi=n_chi)
        P, se = float(fp.passed[-1]), float(fp.passed_se[-1])
        out.update(passed=P, passed_se=se, t_median=float(fp.t_median), t_median_se=float(fp.t_median_se),
                   groups_ok=bool(abs(float(fp.passed_groups[:, -1].mean()) - P) <= 3 * se))
    return out
