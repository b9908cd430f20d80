"""The absorption time: greedy runs stopped when the student equals the teacher.

With noiseless labels the teacher is an absorbing state of the greedy dynamics (eq. 4): at
the teacher the mini-batch loss is zero and every move raises it, so no move is accepted.
The time to reach it, tau (in sweeps), is defined without a success threshold and without
an observation time: a run of ``budget`` sweeps either reaches the teacher at tau <= budget
or is right-censored there (tau > budget). How tau grows with N separates the phases of the
mismatched-support model (Marino & Ricci-Tersenghi, sec. 4.2): polynomially where the
teacher is found, exponentially where the student is trapped (:mod:`.survival` reads it).
"""

import numpy as np
import xarray as xr

from .. import __version__, _validate
from . import _kernels, _seeds
from .greedy import SCHEDULES, _Model, draw_sweeps, record_sweeps, sweep_block, sweep_streams
from .params import Params


def _targets(model):
    """The teacher's values at the positions of the student's row lists (in, out)."""
    nets = model.nets
    t_in = np.take_along_axis(nets.teacher_in.astype(float), model.s_in[0], axis=1)
    t_out = np.take_along_axis(nets.teacher_out.astype(float), model.s_out[0], axis=1)
    return np.ascontiguousarray(t_in), np.ascontiguousarray(t_out)


def absorption_time(params, budget, *, seed, n_points=16, schedule="permutation"):
    """Greedy run (:func:`.greedy`, eq. 4) stopped after the first sweep that ends at the teacher.

    The run is the one :func:`.greedy` makes with the same ``params``, ``seed`` and
    ``schedule``, sweep for sweep (same teacher, initial student, mini-batches and moves),
    until it reaches the teacher; the student is compared with the teacher after every
    sweep, so tau is exact, not read off the recording times.

    Parameters
    ----------
    params : Params
        A two-matrix model (``model="two_matrix"``); the mismatched case (``d_s > d``) is the
        one with a transition in tau.
    budget : int
        Largest number of sweeps; a run that has not reached the teacher by then is censored.
    seed : int or numpy.random.SeedSequence
    n_points : int
        Recording times of the Hamming distance, log-spaced in 0..``budget``; after tau the
        recorded distance is 0 (the teacher is absorbing).
    schedule : {"permutation", "replacement"}
        As in :func:`.greedy`.

    Returns
    -------
    xarray.Dataset
        ``tau`` (sweeps to the teacher; +inf if censored), ``absorbed`` (bool),
        ``hamming`` (t): the normalised Hamming distance on the student's support (as
        :func:`.hamming` with the student's support) at the recording times ``t`` (sweeps).
        attrs: the parameters, ``budget``, ``schedule``, seed and version.
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a sparse.Params; got {type(params).__name__}")
    if params.model != "two_matrix":
        raise ValueError(f"params.model must be 'two_matrix' (the absorption time needs a reachable "
                         f"teacher); got {params.model!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule (which weights a sweep visits) must be one of {SCHEDULES}; got {schedule!r}")
    _validate.integer("budget", budget, low=1, doc="largest number of sweeps of an absorption run")
    rec = record_sweeps(budget, n_points, "log", name="budget", doc="largest number of sweeps")
    ss = _seeds.seed_sequence(seed)
    model = _Model(params, ss)
    target_in, target_out = _targets(model)
    streams = sweep_streams(ss)
    block = sweep_block(params)
    n_w = params.n_weights
    hamming = np.zeros(len(rec))
    wrong = int(np.sum(model.s_in[1] != target_in) + np.sum(model.s_out[1] != target_out))
    done, tau = 0, np.inf
    for r, target in enumerate(rec):
        while done < target and np.isinf(tau):
            n = min(block, target - done)
            X, order, bits = draw_sweeps(params, streams, n, schedule)
            accepted, batch_loss = np.empty(n, np.int64), np.empty(n)
            made, wrong = _kernels.greedy2_until_teacher(
                *model.t_in, *model.t_out, *model.s_in, *model.s_out, model.hid_out, model.hid_slot,
                X, order, bits, params.a, params.mismatched, target_in, target_out, accepted, batch_loss)
            done += made
            if wrong == 0:
                tau = float(done)
        if np.isinf(tau) and wrong == 0:  # started at the teacher
            tau = 0.0
        hamming[r] = wrong / n_w  # 0 from tau on: the run stopped at the teacher
    return xr.Dataset(
        {
            "tau": ((), tau, {"long_name": "sweeps to reach the teacher (inf: not within the budget)",
                              "units": "Monte Carlo sweeps"}),
            "absorbed": ((), bool(np.isfinite(tau)), {"long_name": "reached the teacher within the budget"}),
            "hamming": ("t", hamming, {"long_name": "normalised Hamming distance on the student's support",
                                       "units": "1"}),
        },
        coords={"t": ("t", rec.astype(float), {"units": "Monte Carlo sweeps", "moves_per_unit": n_w,
                                               "samples_per_unit": params.m})},
        attrs={**params.attrs(), "budget": budget, "kind": "simulation", "algorithm": "greedy until absorbed",
               "schedule": schedule, "tsdyn_version": __version__, "seed_entropy": str(ss.entropy),
               "seed_spawn_key": str(ss.spawn_key)},
    )


def absorption_point(*, seed, N, d, m, budget, d_s=None, a=0.1, n_points=16, schedule="permutation"):
    """:func:`absorption_time` with the :class:`Params` fields as keywords, in the form
    :func:`tsdyn.sweep.run` calls (``tau``, ``absorbed`` and ``hamming`` over ``t``, whose
    length depends only on ``budget`` and ``n_points``)."""
    return absorption_time(Params(N=N, d=d, m=m, d_s=d_s, a=a), budget, seed=seed, n_points=n_points,
                           schedule=schedule)
