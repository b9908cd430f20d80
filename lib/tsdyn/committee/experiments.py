"""Composite runs that return plain numbers, in the form :func:`tsdyn.sweep.run` calls.

Each function simulates SGD, integrates the ODE from the run's own initial
overlaps, and reads the same quantity off both, so a sweep over seeds and
parameters can run on local processes or a Dask cluster.
"""

import math

from .analysis import growth_rate, max_gap, plateau_stats
from .params import Params
from .simulate import simulate
from .theory import linear_scm_growth_rate, max_stable_eta_linear_scm, ode, plateau


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


def sgd_ode_gap(*, seed, t_max, n_points=41, method="network", **params):
    """sup_t |eps_g^SGD - eps_g^ODE| of one run against the ODE from its own start.

    The quantity bounded by C(T) / sqrt(N) in Theorem 1 of Goldt et al.;
    ``params`` are the :class:`Params` fields, ``method`` that of :func:`simulate`
    ("network", or "overlaps" for the exact-in-law overlap sampler).
    """
    p = Params(**params)
    run = simulate(p, t_max, seed=seed, n_points=n_points, method=method)
    return {"gap": max_gap(run, ode(p, init=run))}


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
