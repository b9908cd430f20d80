"""The response of SGD's weights to a small kick, measured in a simulation at finite d.

The DMFT's response R(t, t') (:func:`tsdyn.dmft.solve`) is the mean change of a weight at t
per unit force on it at t' < t. In a simulation it is measured with twins: the same training
set, the same initial weights and the same batches, one copy kicked at t' along a random
direction h (orthogonal to v*, |h|^2 = d), R(t, t') = h.(w_kicked(t) - w(t)) / (kick d).
This module is a simulation; it shares with the theory only :class:`Params`.
"""

import numpy as np
import xarray as xr

from .. import __version__, _seeds, _validate
from . import _kernels
from .model import codes
from .params import check_params
from .simulate import _streams, initial_weights, n_steps_for, training_set


def _batch_path(params, n_steps, n, rng):
    """Indicators of every step, (n_steps, n) int8, drawn as :func:`~tsdyn.dmft.simulate`
    draws them (Bernoulli(b) start, then the chain); all ones for b = 1."""
    if params.b >= 1.0:
        return np.ones((n_steps, n), np.int8)
    p01, p10 = params.switch_probabilities(params.eta, name="eta")
    s = (rng.random(n) < params.b).astype(np.int8)
    path = _kernels.batch_chain(s, rng.random((n_steps, n)), p01, p10)
    return np.concatenate([s[None, :], path[:-1]])


def kicked_response(params, t_obs, *, d, seed, window=2.0, kick=1e-3):
    """Response and correlation of the weights at a late time, from kicked twins.

    SGD (derivation E1, as :func:`~tsdyn.dmft.simulate`) is run to step k = t_obs/eta,
    keeping w at the steps k - L, ..., k (L = window/eta lags). For each lag j = 1..L two
    twins start from w at step k - j + 1 displaced by +kick h and -kick h, with h a Gaussian
    direction orthogonal to v* and |h|^2 = d, and take the same steps with the same batches
    up to k. A displacement after step i is a force impulse at step i (the DMFT's discrete
    process adds dt f_i to theta_{i+1}), so the central difference

        R(k, k - j) = h.(w_+(k) - w_-(k)) / (2 kick d)

    is the response of one weight (R(k, k-1) = 1 exactly) with its error O(kick^2). The
    integrated response and the decorrelation, as in :func:`~tsdyn.dmft.fdr_temperature`:

        chi(t, t - j eta) = eta sum_{i=1..j} R(k, k - i),
        dC = C_perp(t, t) - C_perp(t, t - j eta),  C_perp(t, t') = w(t).w(t')/d - m(t) m(t').

    Returns an xarray.Dataset over ``lag`` (j eta): R, chi, dC; scalars m, C_diag at t_obs,
    T_eff (least-squares slope of dC against chi), diverged; attrs: parameters, d, kick.
    """
    check_params(params)
    _validate.integer("d", d, low=2, doc="dimension")
    _validate.real("kick", kick, low=0.0, low_open=True, doc="size of the kick per weight")
    k = n_steps_for(t_obs, params.eta, name="t_obs")
    _validate.real("window", window, low=params.eta, high=t_obs, doc="lag window, at least eta")
    L = int(np.floor(window / params.eta + 1e-9))
    ss = _seeds.seed_sequence(seed)
    data_ss, init_ss, batch_ss, kick_ss = _streams(ss, 4)
    v_star, X, c, y = training_set(params, d, np.random.default_rng(data_ss))
    w = initial_weights(params, v_star, np.random.default_rng(init_ss))
    n = X.shape[0]
    S = _batch_path(params, k, n, np.random.default_rng(batch_ss))
    h = np.random.default_rng(kick_ss).standard_normal(d)
    h -= (h @ v_star) / d * v_star
    h *= np.sqrt(d) / np.linalg.norm(h)
    loss, model = codes(params)
    rec = [np.empty(k + 1) for _ in range(4)]

    def steps(w_, first, count):
        """``count`` steps from step ``first`` with that step's batches; False if diverged."""
        if count == 0:
            return True
        done = _kernels.sgd_steps(w_, X, y, v_star, S[first:first + count], count, params.eta,
                                  params.lam, loss, model, params.L, *rec, first, True)
        return done == count and np.all(np.isfinite(w_))

    ok = steps(w, 0, k - L)
    kept = [w.copy()]  # w at steps k - L, ..., k
    for i in range(k - L, k):
        ok = ok and steps(w, i, 1)
        kept.append(w.copy())
    R = np.full(L, np.nan)
    if ok:
        for j in range(1, L + 1):
            start = k - j + 1  # the step index of the displaced weights
            twins = [kept[L - j + 1] + sgn * kick * h for sgn in (1.0, -1.0)]
            good = all(steps(wt, start, j - 1) for wt in twins)
            R[j - 1] = h @ (twins[0] - twins[1]) / (2 * kick * d) if good else np.nan
    wk = kept[-1]
    m = np.array([wi @ v_star / d for wi in kept])
    Cp = np.array([wk @ wi / d for wi in kept]) - m[-1] * m
    dC = Cp[-1] - Cp[::-1][1:]  # lags 1..L
    chi = params.eta * np.cumsum(R)
    T_eff = float(dC @ chi / (chi @ chi)) if ok and np.all(np.isfinite(chi)) else float("nan")
    lag = params.eta * np.arange(1, L + 1)
    return xr.Dataset(
        {"R": ("lag", R, {"long_name": "response R(t, t - lag) of one weight"}),
         "chi": ("lag", chi, {"long_name": "integrated response chi(t, t - lag)"}),
         "dC": ("lag", dC, {"long_name": "C_perp(t, t) - C_perp(t, t - lag)"}),
         "m": ((), float(m[-1])), "C_diag": ((), float(wk @ wk / d)), "T_eff": ((), T_eff),
         "diverged": ((), not ok)},
        coords={"lag": ("lag", lag, {"units": "time (steps x eta)"})},
        attrs={**params.attrs(), "kind": "kicked twins", "d": int(d), "t_obs": float(k * params.eta),
               "kick": float(kick), "tsdyn_version": __version__,
               "seed_entropy": str(ss.entropy), "seed_spawn_key": str(ss.spawn_key)})


def kicked_response_point(*, seed, t_obs, d, window=2.0, kick=1e-3, **params):
    """:func:`kicked_response` with the :class:`Params` fields as keywords (for
    :mod:`tsdyn.sweep`)."""
    from .params import Params

    return kicked_response(Params(**params), t_obs, d=d, seed=seed, window=window, kick=kick)
