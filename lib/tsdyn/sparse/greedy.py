"""Greedy zero-temperature Metropolis inference of a sparse +-1 teacher (sec. 3.1, eq. 4)."""

import numpy as np
import xarray as xr

from .. import __version__, _grids
from . import _kernels, _seeds
from .analysis import hamming, tp_tn_rates
from .networks import compact, dense, draw_networks, transpose_lists
from .params import Params

# Mini-batch inputs are drawn in blocks of at most this many numbers (8 MB of float64).
_BLOCK_NUMBERS = 2 ** 20


def record_sweeps(sweeps, n_points, spacing="log", *, name="sweeps", doc="Monte Carlo sweeps"):
    """Sweeps after which a run is recorded: 0, ..., ``sweeps``, at most ``n_points`` of them.

    ``name`` and ``doc`` name the length of the run in error messages (:func:`sgd`
    passes "steps", "SGD steps").
    """
    return _grids.integer_grid(sweeps, n_points, spacing, name=name, doc=doc)


class _Model:
    """The teacher, the student's state in row-list form, and the validation set."""

    def __init__(self, params, seed):
        self.p = params
        self.nets = draw_networks(params, seed=seed)
        N = params.N
        n_val = params.validation_size
        self.X_val = _seeds.rng(seed, "validation").standard_normal((N, n_val))
        if params.model == "two_matrix":
            self.t_in = compact(self.nets.teacher_in, self.nets.teacher_in != 0)
            self.t_out = compact(self.nets.teacher_out, self.nets.teacher_out != 0)
            self.s_in = compact(self.nets.student_in, self.nets.support_in)
            self.s_out = compact(self.nets.student_out, self.nets.support_out)
            self.hid_out, self.hid_slot = transpose_lists(self.s_out[0])
            self.Y_val = self._forward2(*self.t_in, *self.t_out)
        else:
            # hidden unit r reads column r of W: row lists of W^T
            self.t_in = compact(self.nets.teacher_in.T, self.nets.teacher_in.T != 0)
            self.s_in = compact(self.nets.student_in.T, self.nets.support_in.T)
            self.scale = 1.0 / np.sqrt(params.d)
            self.Y_val = self._forward1(*self.t_in)

    def _forward2(self, in_idx, in_w, out_idx, out_w):
        N, n = self.X_val.shape
        H, A, Z, O = (np.empty((N, n)) for _ in range(4))
        _kernels.forward2(in_idx, in_w, out_idx, out_w, self.X_val, self.p.a, H, A, Z, O)
        return O

    def _forward1(self, idx, w):
        N, n = self.X_val.shape
        H, P, O = np.empty((N, n)), np.empty((N, n)), np.empty(n)
        _kernels.forward1(idx, w, self.X_val, self.scale, H, P, O)
        return O

    def validation_mse(self):
        """Mean over validation samples of the loss of one sample, 1/2 |y_hat - y|^2."""
        if self.p.model == "two_matrix":
            O = self._forward2(*self.s_in, *self.s_out)
        else:
            O = self._forward1(*self.s_in)
        return 0.5 * float(np.sum((O - self.Y_val) ** 2)) / self.X_val.shape[1]

    def student_dense(self):
        N = self.p.N
        if self.p.model == "two_matrix":
            return dense(*self.s_in, N), dense(*self.s_out, N)
        return (dense(*self.s_in, N).T,)

    def observables(self):
        """Hamming distance (all matrices, and per matrix) and TP/TN rates of W_in."""
        nets = self.nets
        student = self.student_dense()
        if self.p.model == "two_matrix":
            teacher = (nets.teacher_in, nets.teacher_out)
            support = (nets.support_in, nets.support_out)
        else:
            teacher, support = (nets.teacher_in,), (nets.support_in,)
        h_all = hamming(student, teacher, support)
        h_in = hamming(student[0], teacher[0], support[0])
        h_out = hamming(student[1], teacher[1], support[1]) if len(student) > 1 else np.nan
        tp, tn = tp_tn_rates(student[0], teacher[0], support[0])
        return h_all, h_in, h_out, tp, tn

    def run_sweeps(self, X, order, bits, dl_log):
        n = X.shape[0]
        accepted, batch_loss = np.empty(n, np.int64), np.empty(n)
        if self.p.model == "two_matrix":
            _kernels.greedy2_sweeps(*self.t_in, *self.t_out, *self.s_in, *self.s_out,
                                    self.hid_out, self.hid_slot, X, order, bits, self.p.a,
                                    self.p.mismatched, accepted, batch_loss, dl_log)
        else:
            _kernels.greedy1_sweeps(*self.t_in, *self.s_in, X, order, self.scale, accepted,
                                    batch_loss, dl_log)
        return accepted, batch_loss


SCHEDULES = ("permutation", "replacement")


def sweep_streams(ss):
    """The generators of a run's random sweeps: mini-batches, visiting orders, proposals."""
    return _seeds.rng(ss, "batches"), _seeds.rng(ss, "moves"), _seeds.rng(ss, "proposals")


def sweep_block(params):
    """Sweeps drawn at once: mini-batch inputs of at most ``_BLOCK_NUMBERS`` numbers."""
    return max(1, _BLOCK_NUMBERS // (params.N * params.m))


def draw_sweeps(params, streams, n, schedule):
    """Random numbers of the next ``n`` sweeps from ``streams`` (:func:`sweep_streams`).

    Returns ``X`` (n, N, m) inputs, ``order`` (n, n_weights) the weights each sweep
    visits (a permutation, or draws with replacement) and ``bits`` (n, n_weights) which
    of the two other values a ternary proposal takes. Drawn in blocks or all at once, the
    numbers are the same, so a run does not depend on how its sweeps are split.
    """
    rng_x, rng_moves, rng_bits = streams
    N, m, n_w = params.N, params.m, params.n_weights
    X = rng_x.standard_normal((n, N, m))
    if schedule == "permutation":
        order = rng_moves.permuted(np.broadcast_to(np.arange(n_w, dtype=np.int64), (n, n_w)), axis=1)
    else:
        order = rng_moves.integers(0, n_w, size=(n, n_w), dtype=np.int64)
    bits = (rng_bits.integers(0, 2, size=(n, n_w), dtype=np.int8) if params.mismatched
            else np.zeros((n, n_w), np.int8))
    return X, order, bits


def greedy(params, sweeps, *, seed, n_points=30, spacing="log", log_moves=False, schedule="permutation"):
    """Greedy zero-temperature Metropolis on fresh mini-batches (Marino & Ricci-Tersenghi, eq. 4).

    Every Monte Carlo sweep draws a fresh mini-batch of ``params.m`` samples
    x ~ N(0, I_N) labelled by the teacher, and attempts one move per student
    weight, in a random order: a sign flip (+-1 weights), or a change to one of the
    two other values of {-1, 0, +1} chosen at random (mismatched student). A move
    is accepted iff it does not increase the loss of eq. (2) on the mini-batch,
    Delta L <= 0. Delta L is evaluated incrementally (only the hidden unit and the
    outputs the weight touches), so a sweep costs O(N d^2 m).

    Parameters
    ----------
    params : Params
    sweeps : int
        Number of Monte Carlo sweeps (the paper runs 1024). One sweep is
        ``params.n_weights`` attempted moves (2 N d_s for two matrices, N d for one).
    seed : int or numpy.random.SeedSequence
        Teacher, student, validation set, mini-batches and move order come from
        independent children of this seed: the same seed gives bit-identical runs,
        whatever ``n_points``.
    n_points : int
        Recording times, log-spaced in sweeps by default (0 is always recorded).
    schedule : {"permutation", "replacement"}
        Which weights a sweep visits. ``"permutation"`` (default): every weight exactly
        once, in a fresh random order. ``"replacement"``: ``params.n_weights`` weights
        drawn uniformly at random with replacement, the paper's rule (sec. 3.1), so a
        sweep visits some weights several times and misses about 1/e of them. Both make
        the same number of attempts per sweep, and for one seed they share the teacher,
        the initial student, the validation set, the mini-batches and the proposals:
        only the visiting order differs, so the two schedules can be compared in pairs.
    log_moves : bool
        Also return ``dl`` (sweep, move), the Delta L of every attempted move, and
        ``order`` (sweep, move) (for tests; memory grows like sweeps * n_weights).

    Returns
    -------
    xarray.Dataset
        Over ``t`` (sweeps): ``val_loss`` (validation loss per sample divided by the
        teacher's number of non-zero weights, two_matrix; for one_matrix, the mean of
        (y_hat - y)^2 over the mean of y^2 on the validation set), ``val_mse``
        (1/2 |y_hat - y|^2 averaged over validation samples), ``batch_loss`` (loss
        of eq. 2 on the sweep's mini-batch after the sweep, per sample),
        ``accept_rate`` (fraction of accepted moves in that sweep), ``hamming``,
        ``hamming_in``, ``hamming_out``, ``tp``, ``tn`` (TP/TN rates of W_in); the
        final student matrices ``W_in`` (and ``W_out``) and teacher matrices.
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a sparse.Params; got {type(params).__name__}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule (which weights a sweep visits) must be one of {SCHEDULES}; got {schedule!r}")
    rec = record_sweeps(sweeps, n_points, spacing)
    ss = _seeds.seed_sequence(seed)
    model = _Model(params, ss)
    streams = sweep_streams(ss)
    m, n_w = params.m, params.n_weights
    block = sweep_block(params)
    n_rec = len(rec)
    out = {k: np.full(n_rec, np.nan) for k in
           ("val_mse", "batch_loss", "accept_rate", "hamming", "hamming_in", "hamming_out", "tp", "tn")}
    logs = []
    done = 0
    for r, target in enumerate(rec):
        while done < target:
            n = min(block, target - done)
            X, order, bits = draw_sweeps(params, streams, n, schedule)
            dl_log = np.empty((n, n_w)) if log_moves else np.empty((0, 0))
            accepted, batch_loss = model.run_sweeps(X, order, bits, dl_log)
            if log_moves:
                logs.append((order, dl_log))
            done += n
            out["accept_rate"][r] = accepted[-1] / n_w
            out["batch_loss"][r] = batch_loss[-1] / m
        out["val_mse"][r] = model.validation_mse()
        (out["hamming"][r], out["hamming_in"][r], out["hamming_out"][r],
         out["tp"][r], out["tn"][r]) = model.observables()
    if params.model == "two_matrix":
        val_loss = out["val_mse"] / params.n_teacher_weights
        loss_doc = "validation loss per sample / teacher's non-zero weights (2 N d)"
    else:
        val_loss = 2.0 * out["val_mse"] / float(np.mean(model.Y_val ** 2))
        loss_doc = "validation mean squared error / teacher's mean squared output"
    ds = xr.Dataset(
        {
            "val_loss": ("t", val_loss, {"long_name": loss_doc, "units": "1"}),
            "val_mse": ("t", out["val_mse"], {"long_name": "mean over validation samples of "
                                              "1/2 |y_hat - y|^2", "units": "1"}),
            "batch_loss": ("t", out["batch_loss"], {"long_name": "mini-batch loss after the sweep, "
                                                    "per sample", "units": "1"}),
            "accept_rate": ("t", out["accept_rate"], {"long_name": "accepted fraction of the "
                                                      "moves of the last sweep", "units": "1"}),
            "hamming": ("t", out["hamming"], {"long_name": "normalised Hamming distance, all "
                                              "matrices", "units": "1"}),
            "hamming_in": ("t", out["hamming_in"], {"long_name": "normalised Hamming distance of "
                                                    "W_in", "units": "1"}),
            "hamming_out": ("t", out["hamming_out"], {"long_name": "normalised Hamming distance "
                                                      "of W_out", "units": "1"}),
            "tp": ("t", out["tp"], {"long_name": "true-positive rate of W_in", "units": "1"}),
            "tn": ("t", out["tn"], {"long_name": "true-negative rate of W_in", "units": "1"}),
        },
        coords={"t": ("t", rec.astype(float), {"units": "Monte Carlo sweeps",
                                               "moves_per_unit": n_w, "samples_per_unit": m})},
        attrs={**params.attrs(), "sweeps": sweeps, "kind": "simulation", "algorithm": "greedy",
               "schedule": schedule,
               "tsdyn_version": __version__, "seed_entropy": str(ss.entropy),
               "seed_spawn_key": str(ss.spawn_key)},
    )
    student = model.student_dense()
    ds["W_in"] = (("row", "col"), student[0], {"long_name": "final student W_in"})
    ds["teacher_in"] = (("row", "col"), model.nets.teacher_in, {"long_name": "teacher W_in"})
    if params.model == "two_matrix":
        ds["W_out"] = (("row", "col"), student[1], {"long_name": "final student W_out"})
        ds["teacher_out"] = (("row", "col"), model.nets.teacher_out, {"long_name": "teacher W_out"})
    if log_moves:
        ds["order"] = (("sweep", "move"), np.concatenate([o for o, _ in logs]))
        ds["dl"] = (("sweep", "move"), np.concatenate([d for _, d in logs]),
                    {"long_name": "Delta L of each attempted move"})
    return ds
