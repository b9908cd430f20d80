"""The dense-student SGD of :func:`tsdyn.sparse.sgd` on a GPU: many runs at once (numba.cuda).

:func:`sgd_sweep_cuda` trains every run of an (lr, m) grid with ``seeds`` replicas in
one kernel launch per recording interval, one thread block per run
(``_cuda_kernels.py``). A run gets the seed :func:`tsdyn.sweep.run` would give it, and
:func:`tsdyn.sparse.sgd.setup` draws its teacher, initial student and validation set
from that seed exactly as :func:`sgd` does. Only the mini-batch inputs differ: the
CPU code draws them from numpy's generator on the run's "batches" stream, this code
from xoroshiro128+ generators on the device (one per hidden unit, seeded from the
same stream). A run here is therefore the CPU run with other mini-batches: the same
law, not the same numbers.

Import this module only where numba.cuda can run: on a CUDA GPU, or in numba's
simulator (``NUMBA_ENABLE_CUDASIM=1``, as the tests do; slow, for small sizes).
"""

import os
import time

import numpy as np
import xarray as xr
from numba import cuda
from numba.cuda.random import create_xoroshiro128p_states

from .. import __version__, _validate
from . import _cuda_kernels, _seeds
from .greedy import record_sweeps
from .params import REDUCTIONS, SGDParams
from .sgd import setup

NMAX, PMAX = _cuda_kernels.NMAX, _cuda_kernels.PMAX


def run_layout(lrs, ms, seeds):
    """The runs of the grid as (i_lr, i_m, replica), the largest mini-batches first.

    A launch has one block per run; the runs with the most work start first so that
    the slowest blocks do not start last.
    """
    runs = [(i, j, k) for i in range(len(lrs)) for j in range(len(ms)) for k in range(seeds)]
    return sorted(runs, key=lambda t: -ms[t[1]])


def _check(N, d, lrs, ms, steps, seeds, reduction, n_val, lanes, chunk):
    if not (isinstance(lanes, (int, np.integer)) and 1 <= lanes <= PMAX):
        raise ValueError(f"lanes (sample lanes per run) must be an integer in [1, {PMAX}]; got {lanes!r}")
    if not (isinstance(N, (int, np.integer)) and 1 <= N <= NMAX):
        raise ValueError(f"N (inputs = hidden units) must be an integer in [1, {NMAX}] on the GPU "
                         f"(one thread per hidden unit, W in shared memory); got {N!r}")
    if not len(lrs) or not len(ms):
        raise ValueError("lrs and ms (learning rates and mini-batch sizes) must be non-empty")
    if len(set(lrs)) != len(lrs) or len(set(ms)) != len(ms):
        raise ValueError(f"lrs and ms must not repeat a value; got lrs={list(lrs)}, ms={list(ms)}")
    _validate.integer("steps", steps, low=1, doc="SGD steps per run")
    _validate.integer("seeds", seeds, low=1, doc="runs per (lr, m) point")
    _validate.integer("chunk", chunk, low=1, doc="most steps per kernel launch")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}; got {reduction!r}")
    # every (lr, m) point is validated as the CPU code validates it (d, lr > 0, m >= 1)
    return [[SGDParams(N=N, d=d, m=int(m), lr=float(lr), reduction=reduction, n_val=n_val) for m in ms]
            for lr in lrs]


def _states(seeds_of_runs, n):
    """xoroshiro128+ states, n per run (one per thread), seeded from each run's "batches" stream."""
    parts = []
    for ss in seeds_of_runs:
        s = int(_seeds.stream(ss, "batches").generate_state(1, np.uint64)[0] >> np.uint64(1))  # < 2^63
        parts.append(create_xoroshiro128p_states(n, seed=s).copy_to_host())
    return np.concatenate(parts)


def sgd_sweep_cuda(*, N, d, lrs, ms, steps, seeds, seed, reduction="sum", n_val=1024, n_points=40,
                   lanes=PMAX, chunk=20_000, checkpoint=None, time_limit=None, save_every=60.0, X=None,
                   log=None, records_only=False):
    """SGD of :func:`tsdyn.sparse.sgd` (eq. 5, loss of eq. 2) for every (lr, m, replica), on the GPU.

    Parameters
    ----------
    N, d : int
        Inputs = hidden units (at most ``NMAX`` = 64) and teacher non-zeros per row and column.
    lrs, ms : sequences
        Learning rates and mini-batch sizes: the grid's axes, in the order
        :func:`tsdyn.sweep.run` would get them (a point's seed depends on its indices).
    steps, seeds, seed : int
        SGD steps per run, replicas per point, root seed of the sweep.
    reduction, n_val, n_points
        As :func:`tsdyn.sparse.sgd_point` (summed loss; 1024 validation samples;
        log-spaced records).
    lanes : int
        Sample lanes per run (1 to ``PMAX``): a run's block has N x lanes threads and
        each lane takes every lanes-th sample of a mini-batch. The device's draws, so a
        run's numbers (not its law), depend on it.
    chunk : int
        Largest number of steps per kernel launch.
    checkpoint : path or None
        A directory: if given, the state is saved there (``state.npz``, with the sweep's
        arguments, and the students in the ``.npy`` file it names) every 4 records, every
        ``save_every`` seconds and at the time limit; a call that finds it continues from
        it (the same arguments are required and checked).
    time_limit : float or None
        Seconds after which the call saves its checkpoint and returns None.
    save_every : float
        Seconds between saves inside a recording interval.
    log : callable or None
        Called after each record as ``log(k, n_records, step, n_diverged)``.
    records_only : bool
        Compute nothing: return the records that ``checkpoint`` holds (a stopped
        sweep's first records, for every run), with ``attrs["steps_done"]`` the last of
        them and ``attrs["finished"]`` 0, and no ``W``.
    X : array (R, steps * max(ms), N) or None
        Given inputs (tests): run j of :func:`run_layout` reads sample s of its step q
        at X[j, q * m + s]; None draws them on the device.

    Returns
    -------
    xarray.Dataset over (lr, m, seed, t), as :func:`tsdyn.sweep.run` of
    :func:`tsdyn.sparse.sgd_point` returns it (``val_loss``, ``val_mse``, ``diverged``),
    plus ``t_diverged`` (the step that left a non-finite weight, 1-based; inf if none)
    and ``W`` (final students); ``attrs["steps"]`` is ``steps``, ``attrs["steps_done"]`` the
    last record and ``attrs["finished"]`` 1 when they agree. None if ``time_limit`` ran out first.
    The device's normals are numba's xoroshiro128+ Box-Muller draws (from float32 uniforms,
    about 1e-7 relative precision).
    """
    grid = _check(N, d, lrs, ms, steps, seeds, reduction, n_val, lanes, chunk)
    t0 = time.monotonic()
    rec = record_sweeps(steps, n_points, "log", name="steps", doc="SGD steps")
    root = _seeds.seed_sequence(seed)
    layout = run_layout(lrs, ms, seeds)
    R = len(layout)
    sss = [_seeds.child(root, i, j, k) for i, j, k in layout]
    params = [grid[i][j] for i, j, _ in layout]
    parts = [setup(p, ss) for p, ss in zip(params, sss)]
    _, t_idx, t_w, W, X_val, Y_val = (np.stack(a) for a in zip(*parts))
    t_idx, t_w = t_idx.astype(np.int64), t_w.astype(np.float64)
    y2 = np.mean(Y_val ** 2, axis=1)
    m = np.array([p.m for p in params], np.int64)
    eta = np.array([p.lr / (p.m if reduction == "mean" else 1) for p in params])
    t_scale, s_scale = 1.0 / np.sqrt(d), params[0].student_scale
    mse = np.full((R, len(rec)), np.nan)
    fail = np.full(R, -1, np.int64)
    k0, q0 = 0, 0
    sweep_id = dict(N=N, d=d, lrs=np.asarray(lrs, float), ms=np.asarray(ms, np.int64), steps=steps, seeds=seeds,
                    seed_entropy=str(root.entropy), seed_spawn_key=np.asarray(root.spawn_key, np.int64),
                    reduction=reduction, n_val=n_val, n_points=n_points, lanes=lanes)
    if checkpoint is not None and os.path.exists(os.path.join(checkpoint, "state.npz")):
        with np.load(os.path.join(checkpoint, "state.npz")) as z:
            differ = [key for key, v in sweep_id.items() if key not in z or not np.array_equal(z[key], v)]
            if differ:
                raise ValueError(f"checkpoint {checkpoint} is from another sweep: {', '.join(differ)} differ")
            mse, fail, k0, q0, states_h = z["mse"], z["fail"], int(z["k"]), int(z["q"]), z["states"]
            W = np.load(os.path.join(checkpoint, str(z["w_file"])))
        if records_only:
            seen = np.where(fail + 1 <= rec[k0 - 1], fail, -1)  # failures after the last record: not seen yet
            return _dataset(None, mse[:, :k0], seen, y2, rec[:k0], layout, lrs, ms, seeds, steps, n_points, lanes,
                            params[0], root)
    elif records_only:
        raise ValueError(f"records_only needs a checkpoint directory with state.npz; got {checkpoint!r}")
    else:
        states_h = _states(sss, lanes * N)
    use_X = X is not None
    if use_X and np.shape(X) != (R, steps * max(ms), N):
        raise ValueError(f"X (given inputs) must have shape (runs, steps * max(ms), N) = {(R, steps * max(ms), N)}; "
                         f"got {np.shape(X)}")
    X_d = cuda.to_device(np.ascontiguousarray(X, np.float64) if use_X else np.zeros((1, 1, 1)))
    W_d, fail_d, states_d = cuda.to_device(W), cuda.to_device(fail), cuda.to_device(states_h)
    args = (cuda.to_device(t_idx), cuda.to_device(t_w), cuda.to_device(m), cuda.to_device(eta), t_scale, s_scale)
    Xv_d, Yv_d, out_d = cuda.to_device(X_val), cuda.to_device(Y_val), cuda.device_array(R)

    def late():
        return time_limit is not None and time.monotonic() - t0 > time_limit

    last_save = [time.monotonic()]

    def save(k, q):
        if checkpoint is not None:
            _save(checkpoint, W_d.copy_to_host(), mse=mse, fail=fail_d.copy_to_host(), k=k, q=q,
                  states=states_d.copy_to_host(), **sweep_id)
            last_save[0] = time.monotonic()

    for k in range(k0, len(rec)):
        q = q0 if k == k0 else int(rec[k - 1])
        while q < rec[k]:
            q1 = int(min(rec[k], q + chunk))
            _cuda_kernels.sgd_steps[R, (N, lanes)](W_d, *args, q, q1, states_d, X_d, use_X, fail_d)
            cuda.synchronize()
            q = q1
            if q < rec[k] and late():
                save(k, q)
                return None
            if q < rec[k] and time.monotonic() - last_save[0] > save_every:
                save(k, q)
        _cuda_kernels.val_mse[R, N](W_d, Xv_d, Yv_d, s_scale, out_d)
        fail = fail_d.copy_to_host()
        mse[:, k] = np.where(fail < 0, out_d.copy_to_host(), np.nan)
        if log is not None:
            log(k + 1, len(rec), int(rec[k]), int(np.sum(fail >= 0)))
        done, stop = k + 1 == len(rec), late()  # one reading of the clock: a stop always saves first
        if stop or done or k % 4 == 3:
            save(k + 1, int(rec[k]))
        if stop and not done:
            return None
    return _dataset(W_d.copy_to_host(), mse, fail, y2, rec, layout, lrs, ms, seeds, steps, n_points, lanes,
                    params[0], root)


def _save(directory, W, **state):
    """The checkpoint: the students in ``W-<k>-<q>.npy`` and the rest, which names that file, in
    ``state.npz``. Each is written to a temporary name and renamed, W first, and the older W
    files are removed last, so a stop at any moment leaves a consistent pair."""
    os.makedirs(directory, exist_ok=True)
    w_file = f"W-{state['k']}-{state['q']}.npy"
    for name, write in ((w_file, lambda f: np.save(f, W)),
                        ("state.npz", lambda f: np.savez(f, w_file=w_file, **state))):
        tmp = os.path.join(directory, "tmp-" + name)
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, os.path.join(directory, name))
    for old in os.listdir(directory):
        if old.startswith("W-") and old.endswith(".npy") and old != w_file:
            os.remove(os.path.join(directory, old))


def _dataset(W, mse, fail, y2, rec, layout, lrs, ms, seeds, steps, n_points, lanes, p, root):
    """Runs in layout order -> a Dataset over (lr, m, seed, t)."""
    shape = (len(lrs), len(ms), seeds)
    g_mse = np.full((*shape, len(rec)), np.nan)
    g_loss = np.full_like(g_mse, np.nan)
    g_tdiv = np.full(shape, np.inf)
    g_W = np.full((*shape, p.N, p.N), np.nan)
    for j, (a, b, c) in enumerate(layout):
        g_mse[a, b, c] = mse[j]
        g_loss[a, b, c] = 2.0 * mse[j] / y2[j]
        g_tdiv[a, b, c] = fail[j] + 1.0 if fail[j] >= 0 else np.inf
        if W is not None:
            g_W[a, b, c] = W[j]
    dims = ("lr", "m", "seed")
    ds = xr.Dataset(
        {
            "val_loss": (dims + ("t",), g_loss, {"long_name": "validation mean squared error / "
                                                 "teacher's mean squared output", "units": "1"}),
            "val_mse": (dims + ("t",), g_mse, {"long_name": "mean over validation samples of "
                                               "1/2 (y_hat - y)^2", "units": "1"}),
            "diverged": (dims, np.isfinite(g_tdiv)),
            "t_diverged": (dims, g_tdiv, {"units": "SGD steps"}),
            "W": (dims + ("row", "col"), g_W, {"long_name": "final student W (input i, hidden r)"}),
        },
        coords={"lr": ("lr", np.asarray(lrs, float)), "m": ("m", np.asarray(ms, np.int64)),
                "seed": ("seed", np.arange(seeds)), "t": ("t", rec.astype(float), {"units": "SGD steps"})},
        attrs={"N": p.N, "d": p.d, "steps": steps, "steps_done": int(rec[-1]), "finished": int(rec[-1] == steps),
               "n_points": n_points, "n_val": p.n_val,
               "reduction": p.reduction, "root_seed": int(root.entropy), "kind": "simulation",
               "algorithm": "sgd", "backend": "numba.cuda", "lanes": lanes,
               "batches": "xoroshiro128+ on the device, one generator per thread; Box-Muller normals "
                          "from float32 uniforms (numba.cuda.random)",
               "tsdyn_version": __version__},
    )
    return ds if W is not None else ds.drop_vars("W")
