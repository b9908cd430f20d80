"""Composite runs that return plain numbers, in the form :func:`tsdyn.sweep.run` calls.

Each function simulates SGD, integrates the ODE from the run's own initial
overlaps, and reads the same quantity off both, so a sweep over seeds and
parameters can run on local processes or a Dask cluster.
"""

from .analysis import escape_time
from .params import Params
from .simulate import simulate
from .theory import ode, plateau


def plateau_escape(*, seed, N, K, eta, t_max, n_points=400):
    """Escape time from the Saad-Solla plateau of an erf SCM with K = M, for SGD and its ODE.

    The escape time is the first recorded time at which eps_g falls below half
    the height of the symmetric plateau (:func:`tsdyn.committee.plateau`).

    Returns
    -------
    dict
        ``sgd`` and ``ode``: escape times in steps/N (inf if not within t_max);
        ``plateau``: the plateau height.
    """
    p = Params(N=N, M=K, K=K, eta=eta)
    height = plateau(p)["eg"]
    run = simulate(p, t_max, seed=seed, n_points=n_points)
    return {"sgd": escape_time(run, height / 2), "ode": escape_time(ode(p, init=run), height / 2),
            "plateau": height}
