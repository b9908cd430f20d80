"""Reading absorption times: Kaplan-Meier medians, how tau grows with N, and m_c from it.

The runs of :mod:`.absorption` give, per (m, N), right-censored times tau (sweeps to the
teacher, +inf when not reached within the budget B). Three readings, none of which needs a
success threshold or an observation time:

- the Kaplan-Meier median of tau (Kaplan & Meier 1958) with a percentile-bootstrap interval
  (:func:`km_median_interval`);
- the growth of tau with N, fitted in two forms by censored maximum likelihood: ln tau is
  normal with mean mu(N) and width sigma (a log-normal accelerated-failure-time model),
  mu = a + p ln N (polynomial growth, tau ~ N^p) or mu = a + c N (exponential, tau ~ e^{cN}).
  A censored run contributes ln P(ln tau > ln B). Both forms have three parameters, so the
  difference of their maximised log-likelihoods, Delta = ln L_exp - ln L_pow, is half the
  difference of their Akaike criteria (:func:`compare_growth`);
- m_c, where Delta changes sign from positive (exponential, trapped) to negative (polynomial,
  the teacher is found), and, at larger m, where it turns positive again (the upper edge of
  the window), with bootstrap errors over the runs (:func:`absorption_edges`).
"""

import warnings

import numpy as np
from scipy import optimize, special

from .. import _validate
from ..stats import bootstrap_km_median

FORMS = ("power", "exponential")


def km_median_interval(tau, budget, *, level=0.68, n_boot=1000, seed=0):
    """Kaplan-Meier median of absorption times censored at ``budget``, with its bootstrap interval.

    ``tau`` (runs,) sweeps to the teacher, +inf for a censored run. Returns ``(median, lo,
    hi)`` (:func:`tsdyn.stats.bootstrap_km_median`); the median is +inf when more than half
    of the runs are censored (it then exceeds ``budget``), and ``hi`` is +inf when too many
    resamples have no median.
    """
    tau = np.asarray(tau, float)
    _validate.real("budget", budget, low=0.0, low_open=True, doc="sweeps at which runs were censored")
    if tau.ndim != 1 or len(tau) < 2:
        raise ValueError(f"tau must be 1-d with at least 2 runs; got shape {tau.shape}")
    return bootstrap_km_median([(tau, np.full(len(tau), float(budget)))], level=level, n_boot=n_boot, seed=seed)


def _design(N, form):
    if form == "power":
        return np.log(N)
    if form == "exponential":
        return N.astype(float)
    raise ValueError(f"form must be one of {FORMS}; got {form!r}")


def _negloglik(theta, x, y, hit, log_b):
    a, b, log_s = theta
    s = np.exp(log_s)
    mu = a + b * x
    z_hit = (y[hit] - mu[hit]) / s
    z_cen = (log_b - mu[~hit]) / s
    # log of the normal density of ln tau (the Jacobian 1/tau is the same for both forms) and,
    # for censored runs, log P(ln tau > ln B) = log Phi(-z)
    return -(np.sum(-0.5 * z_hit ** 2 - log_s - 0.5 * np.log(2 * np.pi)) + np.sum(special.log_ndtr(-z_cen)))


def fit_growth(N, tau, budget, form):
    """Censored maximum-likelihood fit of ln tau ~ Normal(mu(N), sigma^2) (module docstring).

    ``N`` and ``tau`` (runs,) one entry per run (censored runs: tau = +inf, censored at
    ``budget``); ``form`` "power" (mu = a + p ln N) or "exponential" (mu = a + c N). Returns a
    dict: ``a``, ``slope`` (p or c), ``slope_se`` (from the inverse Hessian of the
    log-likelihood), ``sigma``, ``loglik``, or None when fewer than two sizes have a run that
    reached the teacher (the slope is then not determined).
    """
    N, tau = np.asarray(N, float), np.asarray(tau, float)
    if N.shape != tau.shape or N.ndim != 1:
        raise ValueError(f"N and tau must be 1-d of one length; got {N.shape}, {tau.shape}")
    hit = np.isfinite(tau)
    if len(np.unique(N[hit])) < 2:
        return None
    x = _design(N, form)
    y = np.log(np.maximum(tau, 0.5))  # tau >= 1 for a run that starts away from the teacher
    log_b = np.log(float(budget))
    y_all = np.where(hit, y, log_b)
    slope0, a0 = np.polyfit(x, y_all, 1)
    s0 = max(np.std(y_all - a0 - slope0 * x), 0.1)
    res = optimize.minimize(_negloglik, [a0, slope0, np.log(s0)], args=(x, y, hit, log_b), method="BFGS")
    a, slope, log_s = res.x
    se = float(np.sqrt(res.hess_inv[1, 1])) if np.isfinite(res.hess_inv[1, 1]) and res.hess_inv[1, 1] > 0 else np.nan
    return {"a": float(a), "slope": float(slope), "slope_se": se, "sigma": float(np.exp(log_s)),
            "loglik": float(-res.fun), "form": form}


def growth_median(fit, N):
    """The median of tau that a :func:`fit_growth` result gives at sizes ``N``: exp(mu(N))."""
    return np.exp(fit["a"] + fit["slope"] * _design(np.asarray(N, float), fit["form"]))


def compare_growth(N, tau, budget):
    """Both forms of :func:`fit_growth` and ``delta`` = ln L_exp - ln L_pow (> 0: exponential
    growth fits better; the Akaike weight of the exponential form is 1 / (1 + e^{-delta})).
    ``delta`` is NaN when fewer than three sizes have a run that reached the teacher (the
    forms then differ in nothing the data constrain)."""
    fits = {form: fit_growth(N, tau, budget, form) for form in FORMS}
    N, tau = np.asarray(N, float), np.asarray(tau, float)
    # the two forms differ in curvature only: with runs at the teacher at two sizes both pass
    # through them and delta says nothing
    if any(f is None for f in fits.values()) or len(np.unique(N[np.isfinite(tau)])) < 3:
        return {"fits": fits, "delta": np.nan, "w_exp": np.nan}
    delta = fits["exponential"]["loglik"] - fits["power"]["loglik"]
    return {"fits": fits, "delta": float(delta), "w_exp": float(special.expit(delta))}


def sign_changes(m, delta):
    """Where ``delta`` (over increasing ``m``) changes sign, interpolated linearly in log m:
    ``(lower, upper)``, the first change from > 0 to < 0 and the first change after it from
    < 0 to > 0 (NaN where there is none). Points with NaN delta are skipped."""
    m, delta = np.asarray(m, float), np.asarray(delta, float)
    ok = np.isfinite(delta)
    m, delta = m[ok], delta[ok]
    lower = upper = np.nan
    for k in range(len(m) - 1):
        d0, d1 = delta[k], delta[k + 1]
        if np.isnan(lower) and d0 > 0 > d1:
            lower = float(np.exp(np.log(m[k]) + d0 / (d0 - d1) * np.log(m[k + 1] / m[k])))
        elif np.isfinite(lower) and d0 < 0 < d1:
            upper = float(np.exp(np.log(m[k]) + d0 / (d0 - d1) * np.log(m[k + 1] / m[k])))
            break
    return lower, upper


def absorption_edges(Ns, ms, tau, budget, *, n_boot=100, seed=0, z=2.0):
    """m_c and the upper edge from the growth of tau with N, with bootstrap errors.

    ``tau`` (m, N, runs) absorption times (+inf: censored at ``budget``) on the grid ``ms``
    x ``Ns``. For every m, :func:`compare_growth` over all runs of every N gives delta(m);
    :func:`sign_changes` reads the lower edge m_c (exponential below, polynomial above) and
    the upper edge from the m whose delta is resolved, ``|delta| >= z`` times its bootstrap
    standard deviation (the others are undecided and skipped; with none resolved on one side
    the edge is NaN). The errors are the standard deviations of the edges over ``n_boot``
    resamples of the runs of each (m, N), read on the same resolved m; ``found_lower`` and
    ``found_upper`` are the fractions of resamples in which the edge exists.

    Returns a dict: ``delta`` (m,), ``delta_err`` (its bootstrap standard deviation),
    ``resolved`` (m,) (the m used for the edges), ``compare`` (list over m of :func:`compare_growth`
    results), ``lower``, ``lower_err``, ``upper``, ``upper_err``, ``found_lower``,
    ``found_upper``.
    """
    Ns, ms, tau = np.asarray(Ns, float), np.asarray(ms, float), np.asarray(tau, float)
    if tau.shape[:2] != (len(ms), len(Ns)) or tau.ndim != 3:
        raise ValueError(f"tau must have shape (m, N, runs) = ({len(ms)}, {len(Ns)}, runs); got {tau.shape}")
    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    n_runs = tau.shape[2]
    N_runs = np.repeat(Ns, n_runs)

    def deltas(t):
        out = [compare_growth(N_runs, t[k].ravel(), budget) for k in range(len(ms))]
        return out, np.array([c["delta"] for c in out])

    compare, delta = deltas(tau)
    rng = np.random.default_rng(seed)
    boot_delta = np.empty((n_boot, len(ms)))
    for b in range(n_boot):
        pick = rng.integers(0, n_runs, size=tau.shape)
        boot_delta[b] = deltas(np.take_along_axis(tau, pick, axis=2))[1]
    with warnings.catch_warnings():  # a delta missing in every resample: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        delta_err = np.nanstd(boot_delta, axis=0, ddof=1)
    resolved = np.abs(delta) >= z * delta_err  # False where delta or its error is NaN
    lower, upper = sign_changes(ms, np.where(resolved, delta, np.nan))
    boot = np.array([sign_changes(ms, np.where(resolved, d_, np.nan)) for d_ in boot_delta])
    err = [float(np.nanstd(boot[:, j], ddof=1)) if np.sum(np.isfinite(boot[:, j])) > 1 else np.nan for j in range(2)]
    return {"delta": delta, "delta_err": delta_err, "resolved": resolved, "compare": compare, "lower": lower,
            "lower_err": err[0], "upper": upper,
            "upper_err": err[1], "found_lower": float(np.mean(np.isfinite(boot[:, 0]))),
            "found_upper": float(np.mean(np.isfinite(boot[:, 1])))}


def quasi_stationary_hamming(t, hamming, tau, *, start=0.5):
    """Mean Hamming distance of the runs not absorbed by the end, over their records at
    t >= ``start`` x (last record), and its standard error over those runs.

    ``hamming`` (..., runs, t) on the recording times ``t``; ``tau`` (..., runs). Returns
    ``(mean, se, n)`` over the leading axes (NaN where fewer than two runs survive). This is
    the quasi-stationary state the teacher has not yet absorbed: near a continuous transition
    it comes down to the teacher as m grows, at a discontinuous one it stays far from it.
    """
    t, hamming, tau = np.asarray(t, float), np.asarray(hamming, float), np.asarray(tau, float)
    if hamming.shape[:-1] != tau.shape or hamming.shape[-1] != len(t):
        raise ValueError(f"hamming must have shape tau.shape + (len(t),) = {tau.shape + (len(t),)}; "
                         f"got {hamming.shape}")
    late = t >= start * t[-1]
    per_run = np.where(np.isinf(tau), hamming[..., late].mean(axis=-1), np.nan)
    n = np.sum(np.isfinite(per_run), axis=-1)
    with warnings.catch_warnings():  # points where no run survives: NaN, set below
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(per_run, axis=-1)
        sd = np.nanstd(per_run, axis=-1, ddof=1)
    return np.where(n >= 2, mean, np.nan), np.where(n >= 2, sd / np.sqrt(np.maximum(n, 1)), np.nan), n
