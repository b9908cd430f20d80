"""Map a function over a parameter grid, on local processes or a Dask cluster.

:func:`run` evaluates ``fn`` at every point of a Cartesian grid, ``seeds``
times each with independent seeds, and stacks the results into one
``xarray.Dataset`` (DESIGN.md, Sec. 6). Seeds are spawned by grid index, so a
sweep gives bit-identical results whatever the executor and worker count.
"""

import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import hashlib
import inspect
import itertools
import json
import multiprocessing
import numbers
import os
import pickle
import tempfile
from collections.abc import Mapping

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from . import __version__, _validate

SERIAL = "serial"
_REPLICA_DIM = "seed"


@dataclasses.dataclass(frozen=True)
class _Task:
    """One evaluation of ``fn``: a grid point, a replica and its seed."""

    position: int  # place in the flattened (grid..., seed) result
    params: dict  # axis name -> plain Python value
    replica: int
    seed: np.random.SeedSequence

    def describe(self):
        point = ", ".join(f"{name}={value!r}" for name, value in self.params.items())
        return f"point ({point}), replica {self.replica}"


def run(fn, grid, executor=None, cache=None, *, seeds=1, seed=0, progress=True):
    """Evaluate ``fn`` on a parameter grid and stack the results.

    The sweep visits the Cartesian product of the grid axes, ``seeds`` replicas
    per point. Replica ``r`` of the point with axis indices ``(i_1, ..., i_n)``
    gets ``SeedSequence(root.entropy, spawn_key=(*root.spawn_key, i_1, ..., i_n, r))``
    with ``root = SeedSequence(seed)``: results are bit-identical for any
    executor, worker count or completion order, and adding values at the end of
    an axis, or more replicas, leaves the seeds of the existing points unchanged.

    Parameters
    ----------
    fn : callable
        Called as ``fn(**point, seed=seed_sequence)``, with one keyword per grid
        axis (a plain Python value) and a ``numpy.random.SeedSequence``. It must
        be picklable by reference (a module-level function of an importable
        module) to run on processes or Dask, and must return either

        - a dict ``{name: scalar or ndarray}``; an array's dimensions are named
          ``{name}_dim_0``, ``{name}_dim_1``, ...; or
        - an ``xarray.Dataset``, whose dimensions and coordinates (e.g. ``t``)
          are kept.

        Every point must return the same variables with the same dimensions,
        shapes and coordinates (put results on a common time axis).
    grid : dict of {str: 1-D sequence}
        Axis name -> values, in the order of the result's dimensions. An empty
        dict is one point with no parameters.
    executor : None, "serial" or concurrent.futures.Executor
        None: a local ``ProcessPoolExecutor`` with ``os.cpu_count()`` workers
        and the "spawn" start method (safe with numba and threads), created and
        shut down here. "serial": run in this process, in grid order (for
        debugging). Any ``concurrent.futures.Executor``, e.g.
        ``dask.distributed.Client(...).get_executor()`` for a cluster (its
        workers must be able to import tsdyn and fn's module); it is left
        running. All missing points are submitted at once.
    cache : None or path-like
        Directory in which each finished point is stored as one file, so an
        interrupted sweep re-computes only the missing points. The file name is
        a hash of fn's qualified name, the point's parameters, the replica, its
        seed (root seed and spawn key) and ``tsdyn.__version__``; nothing else
        (e.g. fn's code) invalidates it, so clear it when fn changes. Files are
        pickles: only use caches you wrote yourself.
    seeds : int
        Number of replicas per grid point (>= 1), the length of dimension ``seed``.
    seed : int or numpy.random.SeedSequence
        Root of all per-point seeds.
    progress : bool
        Show a ``tqdm`` progress bar over points.

    Returns
    -------
    xarray.Dataset
        One variable per result variable, with dims (grid axes..., ``seed``,
        the result's own dims...); coordinates: the axis values, ``seed`` =
        0..seeds-1 and the result's coordinates. Variable and coordinate attrs
        (units) come from the first point; per-point Dataset attrs are dropped.
        attrs: ``fn``, ``seeds``, ``seed_entropy``, ``seed_spawn_key`` (the root
        seed) and ``tsdyn_version``.

    Raises
    ------
    TypeError
        ``grid`` is not a dict, ``fn`` is not callable or does not accept the
        grid axes and ``seed``, ``executor`` has the wrong type, or fn returns
        something other than a dict or a Dataset.
    ValueError
        An axis is empty, not 1-D or named "seed"; ``seeds`` < 1; a bad
        ``seed``; or results that cannot be stacked (other variables, shapes or
        coordinates than at the first point).
    Exception
        Whatever fn raises, unchanged but for a note naming the point and
        replica (shown in the traceback).
    """
    axes = _grid_axes(grid)
    name = _check_fn(fn, axes)
    _check_executor(executor)
    _validate.integer("seeds", seeds, low=1, doc="number of replicas per grid point")
    root = _root_seed(seed)
    tasks = _tasks(axes, seeds, root)
    if cache is not None:
        cache = os.fspath(cache)
        os.makedirs(cache, exist_ok=True)
    results = [_load(_cache_file(cache, name, task)) for task in tasks]
    todo = [task for task, result in zip(tasks, results) if result is None]
    with (tqdm(total=len(tasks), initial=len(tasks) - len(todo), disable=not progress,
               unit="point", desc=name) as bar,
          contextlib.closing(_evaluate_all(fn, todo, executor)) as finished):
        for task, result in finished:
            result = _as_dataset(result, task)
            _store(_cache_file(cache, name, task), result)
            results[task.position] = result
            bar.update()
    attrs = {"fn": name, "seeds": seeds, "seed_entropy": str(root.entropy),
             "seed_spawn_key": str(root.spawn_key), "tsdyn_version": __version__}
    return _stack(results, tasks, axes, seeds, attrs)


def executor(dask_scheduler=None, *, max_workers=None):
    """A long-lived executor for a chapter's sweeps (pass it as ``executor=`` to :func:`run`).

    ``dask_scheduler=None`` gives a local ``ProcessPoolExecutor`` ("spawn" start
    method, ``max_workers`` or ``os.cpu_count()`` workers) that the caller reuses
    across sweeps, so worker start-up and numba's compilation are paid once. A
    scheduler address (``"tcp://host:8786"``) gives the executor of a
    ``dask.distributed.Client`` connected to it; its workers must import tsdyn.
    Results do not depend on the choice (seeds are spawned by grid index).
    """
    if dask_scheduler is None:
        if max_workers is not None:
            _validate.integer("max_workers", max_workers, low=1, doc="local worker processes")
        return cf.ProcessPoolExecutor(max_workers=max_workers or os.cpu_count(),
                                      mp_context=multiprocessing.get_context("spawn"))
    if not isinstance(dask_scheduler, str) or not dask_scheduler:
        raise ValueError(f"dask_scheduler must be None (local processes) or a scheduler address "
                         f"such as 'tcp://127.0.0.1:8786'; got {dask_scheduler!r}")
    from dask.distributed import Client

    return Client(dask_scheduler).get_executor()


def _grid_axes(grid):
    """The grid as {axis name: 1-D ndarray}, checked."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict {{axis name: 1-D values}}; got {type(grid).__name__}")
    axes = {}
    for axis, values in grid.items():
        if not isinstance(axis, str):
            raise TypeError(f"grid axis names must be strings (keywords of fn); got {axis!r}")
        if axis == _REPLICA_DIM:
            raise ValueError("grid axis 'seed' is reserved for the replica dimension; "
                             "rename it (e.g. 'teacher_seed') or use seeds=")
        values = np.asarray(values)
        if values.ndim != 1:
            raise ValueError(f"grid axis {axis!r} must be 1-D; got shape {values.shape}")
        if values.size == 0:
            raise ValueError(f"grid axis {axis!r} is empty; give it at least one value")
        axes[axis] = values
    return axes


def _fn_name(fn):
    """Qualified name of fn (its cache identity); repr for callables without one.

    A ``functools.partial`` is named by its function and its bound arguments, so
    that ``partial(simulate_point, N=100)`` keeps its cache between sessions.
    """
    if isinstance(fn, functools.partial):
        bound = [repr(a) for a in fn.args] + [f"{k}={v!r}" for k, v in sorted(fn.keywords.items())]
        return f"{_fn_name(fn.func)}({', '.join(bound)})"
    qualname = getattr(fn, "__qualname__", None)
    return f"{fn.__module__}.{qualname}" if qualname else repr(fn)


def _check_fn(fn, axes):
    """fn must accept one keyword per axis plus ``seed``; returns its name."""
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    name = _fn_name(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have no signature to check
        return name
    try:
        signature.bind(**dict.fromkeys(axes), seed=None)
    except TypeError as exc:
        raise TypeError(f"fn {name} cannot be called as fn(**point, seed=...) with the grid "
                        f"axes {list(axes)}: {exc}") from exc
    return name


def _check_executor(executor):
    if isinstance(executor, str) and executor != SERIAL:
        raise ValueError(f"executor must be None, {SERIAL!r} or a concurrent.futures.Executor; "
                         f"got {executor!r}")
    if not (executor is None or isinstance(executor, (str, cf.Executor))):
        raise TypeError(f"executor must be None, {SERIAL!r} or a concurrent.futures.Executor; "
                        f"got {type(executor).__name__}")


def _root_seed(seed):
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed))
    raise ValueError(f"seed (root of the per-point seeds) must be a non-negative integer or a "
                     f"numpy SeedSequence; got {seed!r}")


def _tasks(axes, seeds, root):
    """All evaluations in result order: grid in C order, replica fastest."""
    values = {axis: v.tolist() for axis, v in axes.items()}
    indices = itertools.product(*(range(len(v)) for v in values.values()))
    tasks = []
    for index, replica in itertools.product(indices, range(seeds)):
        child = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *index, replica),
                                       pool_size=root.pool_size)
        params = {axis: values[axis][i] for axis, i in zip(values, index)}
        tasks.append(_Task(len(tasks), params, replica, child))
    return tasks


def _evaluate(fn, task):
    """Run fn at one task (in a worker); an exception gets a note naming the point."""
    try:
        return fn(**task.params, seed=task.seed)
    except Exception as exc:
        exc.add_note(f"tsdyn.sweep.run: {_fn_name(fn)} raised at {task.describe()}")
        raise


def _evaluate_all(fn, tasks, executor):
    """Yield ``(task, result)`` as evaluations finish; cancel the rest on exit."""
    if executor == SERIAL or not tasks:
        for task in tasks:
            yield task, _evaluate(fn, task)
        return
    owned = executor is None
    if owned:
        executor = cf.ProcessPoolExecutor(max_workers=min(os.cpu_count(), len(tasks)),
                                          mp_context=multiprocessing.get_context("spawn"))
    futures = {executor.submit(_evaluate, fn, task): task for task in tasks}
    try:
        for future in cf.as_completed(futures):
            yield futures[future], future.result()
    finally:
        for future in futures:
            future.cancel()
        if owned:
            executor.shutdown(wait=True, cancel_futures=True)


def _as_dataset(result, task):
    if isinstance(result, xr.Dataset):
        return result
    if isinstance(result, Mapping):
        return xr.Dataset({name: ([f"{name}_dim_{i}" for i in range(np.ndim(value))], np.asarray(value))
                           for name, value in result.items()})
    raise TypeError(f"fn must return a dict or an xarray.Dataset; got {type(result).__name__} "
                    f"at {task.describe()}")


def _cache_file(cache, name, task):
    """Path of the task's cache file (None without a cache)."""
    if cache is None:
        return None
    key = {"fn": name, "params": task.params, "replica": task.replica,
           "seed_entropy": str(task.seed.entropy), "spawn_key": list(task.seed.spawn_key),
           "pool_size": task.seed.pool_size, "tsdyn_version": __version__}
    # json writes floats with repr (exact round trip); other values fall back to
    # repr, which at worst makes an unstable key, i.e. a cache miss, never a wrong hit.
    text = json.dumps(key, sort_keys=True, default=repr)
    return os.path.join(cache, hashlib.sha256(text.encode()).hexdigest() + ".pkl")


# Cache format: a pickle of ``Dataset.to_dict(data="array")``, i.e. only builtins
# and numpy arrays. It keeps every dtype and bit exactly, needs no optional I/O
# backend (netCDF would need netCDF4/h5netcdf and loses some dtypes) and does not
# depend on xarray's pickling of its own objects across versions.

def _load(path):
    """The cached result at ``path``, or None if there is none."""
    if path is None or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return xr.Dataset.from_dict(pickle.load(f))


def _store(path, result):
    """Write atomically: a temporary file in the same directory, then ``os.replace``.

    A sweep killed mid-write leaves at most a stray ``.tmp-*`` file, never a
    truncated cache entry.
    """
    if path is None:
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(result.to_dict(data="array"), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _check_layout(result, first, task):
    """Every point must return the variables, shapes and coordinates of the first."""
    if set(result.data_vars) != set(first.data_vars):
        raise ValueError(f"fn returned variables {sorted(result.data_vars)} at {task.describe()} "
                         f"but {sorted(first.data_vars)} at the first point")
    for name, var in result.data_vars.items():
        if var.dims != first[name].dims or var.shape != first[name].shape:
            raise ValueError(f"variable {name!r} has dims {var.dims} and shape {var.shape} at "
                             f"{task.describe()} but {first[name].dims} and {first[name].shape} "
                             f"at the first point")
    if not result.coords.equals(first.coords):
        raise ValueError(f"fn returned other coordinates at {task.describe()} than at the first "
                         f"point; return every point on the same axes (e.g. the same times t)")


def _check_names(first, axes):
    """Result variables and dims must not reuse the grid axes or ``seed``."""
    taken = (set(first.variables) | set(first.dims)) & (set(axes) | {_REPLICA_DIM})
    if taken:
        raise ValueError(f"fn returned names {sorted(taken)} that are grid axes or 'seed'; "
                         f"rename them")


def _stack(results, tasks, axes, seeds, attrs):
    """One Dataset with dims (grid axes..., seed, result dims...)."""
    first = results[0]
    _check_names(first, axes)
    for result, task in zip(results, tasks):
        _check_layout(result, first, task)
    outer_dims = (*axes, _REPLICA_DIM)
    outer_shape = (*(len(v) for v in axes.values()), seeds)
    data_vars = {
        name: ((*outer_dims, *var.dims),
               np.stack([r[name].values for r in results]).reshape(outer_shape + var.shape),
               var.attrs)
        for name, var in first.data_vars.items()}
    coords = {**axes, _REPLICA_DIM: np.arange(seeds), **first.coords}
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)
