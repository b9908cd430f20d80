"""Composite runs returning plain numbers, in the form :func:`tsdyn.sweep.run` calls."""

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
                           eta=0.5, delta=None, m0_scale=1.0, sampler="reduced"):
    """Weak-recovery time of one run of :func:`scaling_params` (dict of T, samples, recovered)."""
    p = scaling_params(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0, eta=eta,
                       delta=delta, m0_scale=m0_scale)
    out = recovery_time(p, int(max_steps), seed=seed, sampler=sampler)
    return {"T": out["T"], "samples": out["samples"], "recovered": out["recovered"],
            "n_b": float(p.n_b), "gamma": p.gamma}


def theory_recovery_time(*, d, ell, mu, variant="projected", gamma0=0.1, n0=1.0, eta=0.5, delta=None,
                         m0_scale=1.0, max_steps=10 ** 9):
    """The deterministic dynamics' weak-recovery time for the same Params (inf if never)."""
    p = scaling_params(d=d, ell=ell, mu=mu, variant=variant, gamma0=gamma0, n0=n0, eta=eta,
                       delta=delta, m0_scale=m0_scale)
    return theory.recovery_time(p, m0=p.m0, max_steps=max_steps)
