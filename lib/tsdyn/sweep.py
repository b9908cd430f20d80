"""Map a function over a parameter grid, on local processes or a Dask cluster.

:func:`run` evaluates ``fn`` at every point of a Cartesian grid, ``seeds``
times each with independent seeds, and stacks the results into one
``xarray.Dataset`` (DESIGN.md, Sec. 6). Seeds are spawned by grid index, so a
sweep gives bit-identical results whatever the executor and worker count.
Finished points can be cached on disk as netCDF files keyed on the point, its
seed and the source code that computes it (:func:`code_hash`).
"""

import ast
import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import itertools
import json
import multiprocessing
import numbers
import os
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
        return f"point ({point}), replica {self.replica} (seed spawn key {self.seed.spawn_key})"


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
        Directory in which each finished point is stored as one netCDF file
        (``<key>.nc``, written with h5netcdf), so an interrupted sweep
        re-computes only the missing points. The key is a hash of fn's
        qualified name (with a ``functools.partial``'s bound arguments), the
        point's parameters, the replica, its seed (root seed and spawn key),
        ``tsdyn.__version__`` and :func:`code_hash` of fn: the source of fn's
        module and of every tsdyn module it imports, transitively. Editing any
        of that code therefore misses the cache (old files stay, unused), while
        editing an unrelated sub-package does not. The hash reads the source
        files when ``run`` is called: a session that imported an older version
        must be restarted before its sweeps are trusted. Each file holds the
        point's Dataset (every dtype and bit round-trips; a result that netCDF
        cannot store exactly, such as an object array, raises ``TypeError``)
        and its key in the attribute ``tsdyn_cache_key``, so a cache can be
        shared and opened with any netCDF reader without trusting it.
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
    results = _evaluate_cached(fn, name, tasks, executor, cache, progress)
    attrs = {"fn": name, "seeds": seeds, "seed_entropy": str(root.entropy),
             "seed_spawn_key": str(root.spawn_key), "tsdyn_version": __version__}
    return _stack(results, tasks, axes, seeds, attrs)


def each(fn, points, executor=None, cache=None, *, progress=False):
    """Evaluate ``fn`` at a list of points, each with its own seed, and return the results as a list.

    The unstacked companion of :func:`run`, for results that cannot share one array: a
    solver's iteration history, say, whose length differs from seed to seed. Each
    Dataset comes back as ``fn`` returned it, attrs included, in the order of ``points``.

    Parameters
    ----------
    fn : callable
        Called as ``fn(**params, seed=seed)``; it must return an ``xarray.Dataset`` (or
        a dict, as for :func:`run`) and be picklable by reference to run on processes.
    points : sequence of (dict, seed)
        Keyword arguments of one evaluation and its seed (a non-negative int or a
        ``numpy.random.SeedSequence``). The seeds are the caller's: pass children of one
        root (:func:`tsdyn._seeds.children`) for independent replicas.
    executor, cache, progress
        As for :func:`run`. A cached point is keyed exactly as a point of :func:`run`
        with these keyword values and seed (replica 0), so an interrupted list of
        evaluations re-computes only the missing ones.

    Returns
    -------
    list of xarray.Dataset

    Raises
    ------
    TypeError, ValueError
        ``points`` is not a sequence of (dict, seed) pairs, or as for :func:`run`.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    name = _fn_name(fn)
    _check_executor(executor)
    tasks = []
    for params, seed in _point_pairs(points):
        tasks.append(_Task(len(tasks), params, 0, _root_seed(seed)))
    return _evaluate_cached(fn, name, tasks, executor, cache, progress)


def _point_pairs(points):
    """``points`` checked as a list of (keyword dict, seed) pairs."""
    try:
        pairs = [tuple(p) for p in points]
    except TypeError:
        raise TypeError(f"points must be a sequence of (params dict, seed) pairs; got "
                        f"{type(points).__name__}") from None
    for i, pair in enumerate(pairs):
        if len(pair) != 2 or not isinstance(pair[0], Mapping):
            raise TypeError(f"points[{i}] must be a (params dict, seed) pair; got {pair!r}")
        arrays = [k for k, v in pair[0].items() if isinstance(v, np.ndarray)]
        if arrays:  # the cache key holds a value's repr, which NumPy shortens and rounds
            raise TypeError(f"points[{i}]: pass {arrays} as plain Python values (lists, floats), not arrays")
    return [(dict(params), seed) for params, seed in pairs]


def _evaluate_cached(fn, name, tasks, executor, cache, progress):
    """Every task's result Dataset, in task order: read from ``cache`` where it holds
    one, else computed (on ``executor``) and stored there."""
    code = None
    if cache is not None:
        cache = os.fspath(cache)
        os.makedirs(cache, exist_ok=True)
        code = code_hash(fn)
    keys = [_cache_key(name, code, task) for task in tasks]
    results = [_load(cache, key) for key in keys]
    todo = [task for task, result in zip(tasks, results) if result is None]
    with (tqdm(total=len(tasks), initial=len(tasks) - len(todo), disable=not progress,
               unit="point", desc=name) as bar,
          contextlib.closing(_evaluate_all(fn, todo, executor)) as finished):
        for task, result in finished:
            result = _as_dataset(result, task)
            _store(cache, keys[task.position], result, task)
            results[task.position] = result
            bar.update()
    return results


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
        return _local_pool(max_workers or os.cpu_count())
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


def _local_pool(workers):
    """A ``ProcessPoolExecutor`` of ``workers`` spawned processes, each running its BLAS and
    numba's parallel loops on one thread (:func:`_one_thread_each`)."""
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_one_thread_each)


def _one_thread_each():
    """Initializer of a local worker: one thread for BLAS, OpenMP and numba's ``prange``.

    The pool already runs one worker per core; a worker whose BLAS also starts a thread per
    core oversubscribes the machine (idle BLAS threads spin): on two cores chapter 1 spent
    7 % more processor time and wall time without this. Dask's nanny sets the same limits on
    its workers. The library's ``prange`` loops run over independent models or resamples, so
    their results do not depend on the thread count, and every chapter glues the same
    numbers either way. The variables reach libraries loaded later in the worker;
    threadpoolctl limits those already loaded.
    """
    import numba
    import threadpoolctl

    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    threadpoolctl.threadpool_limits(1)
    numba.set_num_threads(1)


def _evaluate(fn, task):
    """Run fn at one task (in a worker); an exception gets a note naming the point."""
    try:
        return fn(**task.params, seed=task.seed)
    except Exception as exc:
        exc.add_note(f"tsdyn.sweep: {_fn_name(fn)} raised at {task.describe()}")
        raise


def _evaluate_all(fn, tasks, executor):
    """Yield ``(task, result)`` as evaluations finish; cancel the rest on exit."""
    if executor == SERIAL or not tasks:
        for task in tasks:
            yield task, _evaluate(fn, task)
        return
    owned = executor is None
    if owned:
        executor = _local_pool(min(os.cpu_count(), len(tasks)))
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


# ----------------------------------------------------------------------- the cache

_CODE_ROOT = "tsdyn"  # the package whose imports code_hash follows


def code_hash(fn):
    """SHA-256 of the source code that computes ``fn``: the cache's code key.

    Covers the module that defines ``fn`` (for a ``functools.partial``: its
    function and every callable among its bound arguments) and every module of
    the ``tsdyn`` package that those modules import, transitively (``import``
    and ``from ... import`` statements anywhere in a module, found by parsing
    it, relative imports resolved; importing a module also counts its parent
    packages' ``__init__``). Modules outside tsdyn are followed only as the
    roots: numpy's or scipy's code is represented by the library versions a
    user pins, not hashed.

    Why not the whole library's source: a paper-scale sweep split over days
    through the cache would be invalidated by an edit to an unrelated chapter's
    package; following the imports invalidates exactly the sweeps whose code
    changed. Its one blind spot is an import by computed name
    (``importlib.import_module(f"tsdyn.{x}")``), which tsdyn does not use.
    A function without a source file (e.g. one typed at the prompt) is keyed
    on its own source or bytecode.
    """
    digest = hashlib.sha256()
    for module, source in sorted(_code_closure(fn).items()):
        digest.update(f"{module}\0{len(source)}\0".encode())
        digest.update(source)
    return digest.hexdigest()


def _roots(fn):
    """The callables whose code a sweep of ``fn`` runs: fn, or a partial's function and callable arguments."""
    if isinstance(fn, functools.partial):
        bound = [*fn.args, *fn.keywords.values()]
        return [*_roots(fn.func), *(r for arg in bound if callable(arg) for r in _roots(arg))]
    return [fn]


def _code_closure(fn):
    """{module name: source bytes} of fn's modules and the tsdyn modules they import."""
    sources, queue = {}, []
    for root in _roots(fn):
        module = getattr(root, "__module__", None)
        if module and _module_path(module):
            queue.append(module)
        else:  # no file: key on the callable's own code
            sources[f"{module}:{getattr(root, '__qualname__', repr(root))}"] = _own_code(root)
    while queue:
        module = queue.pop()
        if module in sources:
            continue
        path = _module_path(module)
        sources[module] = b"" if path is None else _read(path)
        if _in_root(module):  # importing a.b.c runs a/__init__ and a/b/__init__
            parts = module.split(".")
            queue += [".".join(parts[:i]) for i in range(1, len(parts))]
        if path is not None and path.endswith(".py"):
            is_package = os.path.basename(path) == "__init__.py"
            queue += [name for name in _imports(sources[module], module, is_package)
                      if _in_root(name)]
    return sources


def _in_root(module):
    return module == _CODE_ROOT or module.startswith(_CODE_ROOT + ".")


def _module_path(module):
    """The file a module is loaded from, or None (not found, built in, ``__main__``)."""
    if module == "__main__":
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return origin if origin and os.path.isfile(origin) else None


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _own_code(fn):
    """Source of a callable without a module file, else its bytecode and constants."""
    try:
        return inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return code.co_code + repr(code.co_consts).encode() if code else repr(fn).encode()


def _imports(source, module, is_package):
    """Absolute names of the modules (or candidate modules) that ``source`` imports."""
    package = module if is_package else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module
            names.append(base)
            # ``from pkg import name``: name may be a submodule of pkg
            names += [f"{base}.{alias.name}" for alias in node.names
                      if alias.name != "*" and _is_module(f"{base}.{alias.name}")]
    return names


def _is_module(name):
    if not _in_root(name):
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _cache_key(name, code, task):
    """The cache key of one task: a SHA-256 hex digest, and the JSON it hashes."""
    key = {"fn": name, "params": task.params, "replica": task.replica,
           "seed_entropy": str(task.seed.entropy), "spawn_key": list(task.seed.spawn_key),
           "pool_size": task.seed.pool_size, "tsdyn_version": __version__, "code": code}
    # json writes floats with repr (exact round trip); other values fall back to
    # repr, which at worst makes an unstable key, i.e. a cache miss, never a wrong hit.
    text = json.dumps(key, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest(), text


_KEY_ATTR = "tsdyn_cache_key"
_ENGINE = "h5netcdf"


def _cache_path(cache, key):
    return os.path.join(cache, key[0] + ".nc")


def _load(cache, key):
    """The cached result for ``key``, or None without a cache or a file."""
    if cache is None or not os.path.exists(path := _cache_path(cache, key)):
        return None
    result = xr.load_dataset(path, engine=_ENGINE).drop_encoding()
    result.attrs.pop(_KEY_ATTR, None)
    return result


def _store(cache, key, result, task):
    """Write ``result`` atomically as netCDF, after checking that it reads back identical.

    The file is written to a temporary name in the cache directory, read back and
    compared with ``result`` (values, dtypes, coordinates, attributes), then
    renamed over the final name with ``os.replace``: a sweep killed mid-write
    leaves at most a stray ``.tmp-*`` file, never a truncated or inexact entry.
    """
    if cache is None:
        return
    for name, var in result.variables.items():
        if var.dtype == object:
            raise TypeError(f"cannot cache the result at {task.describe()}: variable {name!r} has "
                            f"dtype object, which netCDF does not store exactly; return a numeric, "
                            f"bool or fixed-width string ('U') array")
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".tmp-", suffix=".nc")
    os.close(fd)
    try:
        stored = result.copy()
        stored.attrs[_KEY_ATTR] = key[1]
        # no fill values: xarray would otherwise mask stored values equal to them
        try:
            stored.to_netcdf(tmp, engine=_ENGINE,
                             encoding={name: {"_FillValue": None} for name in stored.variables})
        except (TypeError, ValueError) as exc:  # e.g. an attribute netCDF has no type for
            raise TypeError(f"cannot cache the result at {task.describe()} as netCDF: {exc}") from exc
        back = xr.load_dataset(tmp, engine=_ENGINE)
        back.attrs.pop(_KEY_ATTR, None)
        if not _same(back, result):
            raise TypeError(f"cannot cache the result at {task.describe()}: it does not read back "
                            f"identical from netCDF (dtypes or attributes netCDF cannot hold)")
        os.replace(tmp, _cache_path(cache, key))
    except BaseException:
        os.unlink(tmp)
        raise


def _same(a, b):
    """Equal values (NaN = NaN), dtypes, coordinates and attributes."""
    return a.identical(b) and all(a[name].dtype == b[name].dtype for name in b.variables)


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
