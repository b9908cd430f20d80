"""(Persistent) SGD on a Gaussian-mixture training set at finite dimension d."""

import numpy as np
import xarray as xr

from .. import __version__, _seeds, _validate
from . import _kernels
from .model import (ENERGY_ATTRS, cluster_labels, codes, draw_clusters, generalisation_error,
                    train_energy)
from .params import Params, check_params

# Uniforms of the batch chain are drawn in blocks of at most this many numbers.
_BLOCK_NUMBERS = 2 ** 20


def _streams(ss, k):
    """``k`` independent children of ``ss`` (stateless, unlike ``ss.spawn``)."""
    return [np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, i), pool_size=ss.pool_size)
            for i in range(k)]


def n_steps_for(t_max, eta, name="t_max"):
    """Number of steps of length ``eta`` in ``t_max``; ``eta`` must divide ``t_max``."""
    _validate.real(name, t_max, low=0.0, low_open=True, doc="length of the run")
    k = int(round(t_max / eta))
    if k < 1 or abs(k * eta - t_max) > 1e-9 * max(1.0, t_max):
        raise ValueError(f"{name} (length of the run) must be a positive multiple of the time "
                         f"step {eta:g}; got {t_max!r}")
    return k


def training_set(params, d, rng):
    """v* (|v*|^2 = d), inputs X (n, d), clusters c and labels y for one seed."""
    n = int(round(params.alpha * d))
    if n < 1:
        raise ValueError(f"d (dimension) too small for alpha={params.alpha}: n = alpha d < 1")
    v_star = rng.standard_normal(d)
    v_star *= np.sqrt(d) / np.linalg.norm(v_star)
    c = draw_clusters(params, n, rng)
    X = np.sqrt(params.Delta) * rng.standard_normal((n, d))
    X += np.outer(c, v_star) / np.sqrt(d)
    y = X @ v_star / np.sqrt(d) if params.model == "teacher" else cluster_labels(params, c)
    return v_star, X, c, y


def initial_weights(params, v_star, rng, init="fixed"):
    """w(0) = m0 v* + w_perp with w_perp orthogonal to v*.

    ``fixed``: |w_perp|^2 = R0 d exactly (m(0) = m0 and C(0) = m0^2 + R0, as in the DMFT);
    ``random``: w_perp = projected N(0, R0 I).
    """
    d = len(v_star)
    g = rng.standard_normal(d)
    g -= (g @ v_star) / d * v_star
    if init == "fixed":
        norm = np.linalg.norm(g)
        g *= np.sqrt(params.R0 * d) / norm if norm > 0 else 0.0
    elif init == "random":
        g *= np.sqrt(params.R0)
    else:
        raise ValueError(f"init must be 'fixed' or 'random'; got {init!r}")
    return params.m0 * v_star + g


def batch_indicators(params, n_steps, n, *, seed):
    """Paths of ``n`` batch indicators over ``n_steps`` steps of length eta, shape (n_steps+1, n).

    Row 0 is the Bernoulli(b) start; each later row is one move of the two-state chain
    (derivation E3): P(0->1) = eta/tau, P(1->0) = (1-b) eta/(b tau); tau=None gives
    fresh Bernoulli(b) batches at every step.
    """
    check_params(params)
    _validate.integer("n_steps", n_steps, low=1, doc="number of steps")
    _validate.integer("n", n, low=1, doc="number of samples")
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    p01, p10 = params.switch_probabilities(params.eta, name="eta")
    s = (rng.random(n) < params.b).astype(np.int8)
    out = np.empty((n_steps + 1, n), np.int8)
    out[0] = s
    out[1:] = _kernels.batch_chain(s, rng.random((n_steps, n)), p01, p10)
    return out


def simulate(params, t_max, *, d, seed, init="fixed"):
    """Train w on n = alpha d fixed samples with (persistent) SGD (derivation E1, E3).

    w_{k+1} = w_k - eta [lam w_k + sum_mu s_mu^k dLambda/dr(y_mu, r_mu^k) x_mu/sqrt(d)],
    r = w.x/sqrt(d), time t = k eta. b = 1: full-batch GD; ``tau=None``: a fresh
    Bernoulli(b) batch per step; otherwise the persistent two-state chain.

    Parameters
    ----------
    params : Params
    t_max : float
        Length of the run (a multiple of ``params.eta``): t_max/eta steps.
    d : int
        Dimension (n = round(alpha d) samples).
    seed : int or numpy.random.SeedSequence
        Data, initial weights and batches come from three independent children.
    init : {"fixed", "random"}
        See :func:`initial_weights`.

    Returns
    -------
    xarray.Dataset over ``t`` (every step): m, C_diag (= |w|^2/d), eg (exact test error
    of the current w, :func:`~tsdyn.dmft.model.generalisation_error`), train_loss (mean
    per-sample loss, without the ridge), train_acc, train_energy (the talk's normalisation,
    :func:`train_energy`), diverged, t_diverged.
    """
    check_params(params)
    _validate.integer("d", d, low=2, doc="dimension")
    n_steps = n_steps_for(t_max, params.eta)
    ss = _seeds.seed_sequence(seed)
    data_ss, init_ss, batch_ss = _streams(ss, 3)
    v_star, X, c, y = training_set(params, d, np.random.default_rng(data_ss))
    w = initial_weights(params, v_star, np.random.default_rng(init_ss), init)
    rng_b = np.random.default_rng(batch_ss)
    n = X.shape[0]
    loss, model = codes(params)
    p01, p10 = params.switch_probabilities(params.eta, name="eta")
    chain = params.b < 1.0
    s = (rng_b.random(n) < params.b).astype(np.int8) if chain else np.ones(n, np.int8)
    rec = {k: np.full(n_steps + 1, np.nan) for k in ("m", "C", "loss", "acc")}
    block = max(1, _BLOCK_NUMBERS // n)
    S = s[None, :]
    step, t_div = 0, np.inf
    while step < n_steps:
        todo = min(block, n_steps - step)
        if chain:
            # the indicators of steps step .. step+todo-1: the current state, then the
            # path of the same chain as batch_indicators (which the tests check)
            start = s.copy()
            path = _kernels.batch_chain(s, rng_b.random((todo, n)), p01, p10)
            S = np.concatenate([start[None, :], path[:-1]])
        done = _kernels.sgd_steps(w, X, y, v_star, S, todo, params.eta, params.lam,
                                  loss, model, params.L, rec["m"], rec["C"], rec["loss"],
                                  rec["acc"], step, chain)
        step += done
        if done < todo:
            t_div = step * params.eta
            break
    if np.isinf(t_div):
        obs = _kernels.observe(w, X, y, v_star, loss, model, params.L)
        if np.all(np.isfinite(obs)):
            rec["m"][-1], rec["C"][-1], rec["loss"][-1], rec["acc"][-1] = obs
        else:
            t_div = n_steps * params.eta
    t = np.arange(n_steps + 1) * params.eta
    eg = generalisation_error(params, rec["m"], rec["C"])
    return xr.Dataset(
        {
            "m": ("t", rec["m"], {"long_name": "magnetisation w.v*/d"}),
            "C_diag": ("t", rec["C"], {"long_name": "C(t,t) = |w|^2/d"}),
            "eg": ("t", eg, {"long_name": "generalisation error", "units": "1"}),
            "train_loss": ("t", rec["loss"], {"long_name": "mean training loss per sample"}),
            "train_acc": ("t", rec["acc"], {"long_name": "training accuracy", "units": "1"}),
            "train_energy": ("t", train_energy(params, rec["loss"], rec["C"]), ENERGY_ATTRS),
            "diverged": ((), bool(np.isfinite(t_div))),
            "t_diverged": ((), float(t_div), {"units": "time (steps x eta)"}),
        },
        coords={"t": ("t", t, {"units": "time = steps x eta", "steps_per_unit": 1.0 / params.eta})},
        attrs={**params.attrs(), "kind": "simulation", "d": d, "n": n, "init": init,
               "tsdyn_version": __version__, "seed_entropy": str(ss.entropy),
               "seed_spawn_key": str(ss.spawn_key)},
    )


def simulate_point(*, seed, t_max, d, init="fixed", **params):
    """:func:`simulate` with the :class:`Params` fields as keywords (for :mod:`tsdyn.sweep`)."""
    return simulate(Params(**params), t_max, d=d, seed=seed, init=init)
