"""tsdyn.sweep.run: result layout, determinism across executors, the cache, errors."""

import concurrent.futures as cf
import functools
import importlib
import json
import multiprocessing
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from tsdyn import __version__, sweep

# Worker processes unpickle the toy functions by reference, so they live in an
# importable module next to this file (spawned workers inherit sys.path).
sys.path.insert(0, str(Path(__file__).parent))
import _sweep_toy as toy  # noqa: E402

GRID = {"a": [1.0, 2.0, 3.0], "b": [10, 20]}
N_TASKS = 3 * 2 * 2  # grid points x replicas (seeds=2)


def sweep_noisy(executor="serial", **kwargs):
    return sweep.run(toy.noisy, GRID, executor, seeds=2, seed=5, progress=False, **kwargs)


@pytest.fixture
def calls():
    """The toy's call log, emptied before and after the test."""
    toy.CALLS.clear()
    yield toy.CALLS
    toy.CALLS.clear()


def spawn_pool(workers):
    return cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def test_dict_results_are_stacked_on_grid_and_seed_dims():
    ds = sweep_noisy()
    assert ds.x.dims == ("a", "b", "seed")
    assert ds.path.dims == ("a", "b", "seed", "path_dim_0")
    assert ds.path.shape == (3, 2, 2, 3)
    np.testing.assert_array_equal(ds.a, GRID["a"])
    np.testing.assert_array_equal(ds.b, GRID["b"])
    np.testing.assert_array_equal(ds.seed, [0, 1])
    assert ds.attrs == {"fn": "_sweep_toy.noisy", "seeds": 2, "seed_entropy": "5",
                        "seed_spawn_key": "()", "tsdyn_version": __version__}
    # point (a=2, b=20), replica 1 has axis indices (1, 1) and gets spawn key (1, 1, 1)
    alone = toy.noisy(a=2.0, b=20, seed=np.random.SeedSequence(5, spawn_key=(1, 1, 1)))
    assert ds.x.sel(a=2.0, b=20, seed=1).item() == alone["x"]
    np.testing.assert_array_equal(ds.path.sel(a=2.0, b=20, seed=1), alone["path"])
    assert len(np.unique(ds.x)) == ds.x.size  # every replica of every point has its own seed


def test_dataset_results_keep_their_dims_coords_and_units():
    ds = sweep.run(toy.trajectory, {"a": [1.0, 2.0]}, "serial", seeds=3, progress=False)
    assert ds.y.dims == ("a", "seed", "t")
    np.testing.assert_array_equal(ds.t, np.linspace(0.0, 1.0, 4))
    assert ds.t.attrs["units"] == "SGD steps / N" and ds.y.attrs["units"] == "m"
    assert "a" not in ds.attrs  # per-point attrs are dropped: a is a coordinate now


def test_empty_grid_is_one_point():
    ds = sweep.run(toy.uniform, {}, "serial", seeds=2, progress=False)
    assert ds.u.dims == ("seed",) and ds.u.shape == (2,)


@pytest.mark.parametrize("executor", [1, 2, None], ids=["pool-1", "pool-2", "default-pool"])
def test_process_pools_give_bit_identical_results(executor):
    reference = sweep_noisy()
    if executor is None:
        result = sweep_noisy(None)
    else:
        with spawn_pool(executor) as pool:
            result = sweep_noisy(pool)
    xr.testing.assert_identical(result, reference)  # exact equality of every value


def test_dask_cluster_gives_bit_identical_results():
    distributed = pytest.importorskip("dask.distributed")
    reference = sweep_noisy()
    with (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None) as cluster,
          distributed.Client(cluster) as client):
        result = sweep_noisy(client.get_executor())
    xr.testing.assert_identical(result, reference)


def test_other_root_seed_gives_other_results():
    other = sweep.run(toy.noisy, GRID, "serial", seeds=2, seed=6, progress=False)
    assert not np.any(other.x.values == sweep_noisy().x.values)


def cache_files(cache):
    return sorted(p.name for p in cache.iterdir())


def test_interrupted_sweep_resumes_computing_only_missing_points(tmp_path, monkeypatch, calls):
    uncached = sweep_noisy()
    monkeypatch.setattr(toy, "FAIL_AT", {"a": 2.0, "b": 10})
    with pytest.raises(RuntimeError, match="toy failure"):
        sweep_noisy(cache=tmp_path)
    # serial runs go in grid order: the 2 points with a = 1 (x 2 replicas) finished first
    assert len(cache_files(tmp_path)) == 4
    assert all(name.endswith(".nc") and not name.startswith(".tmp") for name in cache_files(tmp_path))

    monkeypatch.setattr(toy, "FAIL_AT", {})
    calls.clear()
    resumed = sweep_noisy(cache=tmp_path)
    assert len(calls) == N_TASKS - 4
    assert all(params["a"] != 1.0 for params, _ in calls)
    xr.testing.assert_identical(resumed, uncached)
    assert len(cache_files(tmp_path)) == N_TASKS  # and no temporary file left behind

    calls.clear()
    xr.testing.assert_identical(sweep_noisy(cache=tmp_path), uncached)
    assert calls == []


def test_deleted_cache_entries_are_recomputed_and_parallel_runs_fill_the_cache(tmp_path, calls):
    with spawn_pool(2) as pool:
        first = sweep_noisy(pool, cache=tmp_path)  # computed in workers, stored here
    assert calls == [] and len(cache_files(tmp_path)) == N_TASKS
    for name in cache_files(tmp_path)[:3]:
        (tmp_path / name).unlink()
    xr.testing.assert_identical(sweep_noisy(cache=tmp_path), first)
    assert len(calls) == 3


def test_cache_is_keyed_by_seed_and_more_replicas_reuse_the_old_ones(tmp_path, calls):
    two = sweep_noisy(cache=tmp_path)
    calls.clear()
    three = sweep.run(toy.noisy, GRID, "serial", tmp_path, seeds=3, seed=5, progress=False)
    assert len(calls) == 6 and {key[-1] for _, key in calls} == {2}  # only replica 2 is new
    xr.testing.assert_identical(three.isel(seed=[0, 1]).drop_attrs(), two.drop_attrs())
    calls.clear()
    sweep.run(toy.noisy, GRID, "serial", tmp_path, seeds=2, seed=7, progress=False)
    assert len(calls) == N_TASKS


def test_each_returns_unstacked_results_in_order_and_caches_them(tmp_path, calls):
    """sweep.each: fn(**kw, seed=seed) per point, results of different shapes kept apart
    with their attrs, the same numbers on processes, and a second call read from the cache."""
    points = [({"a": a}, np.random.SeedSequence(9, spawn_key=(i,))) for i, a in enumerate((0.5, 2.0, 3.0))]
    out = sweep.each(toy.moving_times, points, "serial", tmp_path)
    assert [float(r.t[-1]) for r in out] == [0.5, 2.0, 3.0]  # unstackable: different time axes
    traj = sweep.each(toy.trajectory, points, "serial", tmp_path)
    assert [r.attrs["a"] for r in traj] == [0.5, 2.0, 3.0]
    alone = toy.trajectory(a=2.0, seed=np.random.SeedSequence(9, spawn_key=(1,)))
    xr.testing.assert_identical(traj[1], alone)
    assert len(cache_files(tmp_path)) == 6
    calls.clear()
    with spawn_pool(2) as pool:
        again = sweep.each(toy.noisy, [({"a": 1.0, "b": 2}, 4)], pool, tmp_path)
    with pytest.raises(TypeError, match=r"points\[0\] must be a \(params dict, seed\) pair"):
        sweep.each(toy.trajectory, [(2.0, 1)])
    with pytest.raises(TypeError, match=r"points\[0\]: pass \['a'\] as plain Python values"):
        sweep.each(toy.trajectory, [({"a": np.arange(3.0)}, 1)])  # a repr would round it in the key
    for r, s in zip(sweep.each(toy.trajectory, points, "serial", tmp_path), traj):
        xr.testing.assert_identical(r, s)
    assert calls == []  # every point came from the cache (the pool's call ran in a worker)
    assert sweep.each(toy.noisy, [({"a": 1.0, "b": 2}, 4)], "serial", tmp_path)[0].identical(again[0])
    assert calls == []


def test_cache_files_are_netcdf_holding_the_point_and_its_key(tmp_path):
    sweep.run(toy.trajectory, {"a": [2.0]}, "serial", tmp_path, seed=3, progress=False)
    (name,) = cache_files(tmp_path)
    point = xr.load_dataset(tmp_path / name, engine="h5netcdf")  # any netCDF reader opens it
    assert point.t.attrs["units"] == "SGD steps / N" and point.y.attrs["units"] == "m"
    key = json.loads(point.attrs["tsdyn_cache_key"])
    assert key["fn"] == "_sweep_toy.trajectory" and key["params"] == {"a": 2.0}
    assert key["code"] == sweep.code_hash(toy.trajectory) and len(key["code"]) == 64
    alone = toy.trajectory(a=2.0, seed=np.random.SeedSequence(3, spawn_key=(0, 0)))
    np.testing.assert_array_equal(point.y, alone.y)


def test_every_dtype_round_trips_exactly_through_the_cache(tmp_path):
    """Values (NaN, inf, -0.0, subnormals, integer extremes), dtypes and attrs read back as written."""
    computed = sweep.run(toy.every_dtype, {"a": [1, 2]}, "serial", tmp_path, progress=False)
    cached = sweep.run(toy.every_dtype, {"a": [1, 2]}, "serial", tmp_path, progress=False)
    xr.testing.assert_identical(cached, computed)
    alone = toy.every_dtype(a=2, seed=None)
    for name, var in alone.data_vars.items():
        assert cached[name].dtype == var.dtype, name
        got = cached[name].sel(a=2, seed=0).values
        # bit patterns, not values: -0.0 and NaN payloads must survive too
        assert got.tobytes() == var.values.tobytes(), name
    assert cached.f64.attrs == {"units": "SGD steps / N", "n": 3}


def test_results_netcdf_cannot_hold_exactly_are_refused_not_cached(tmp_path):
    with pytest.raises(TypeError, match=r"cannot cache the result at point \(a=1\), replica 0 "
                                        r"\(seed spawn key \(0, 0\)\): variable 'names' has dtype object"):
        sweep.run(toy.object_strings, {"a": [1]}, "serial", tmp_path, progress=False)
    assert cache_files(tmp_path) == []  # nothing stored, no temporary file left
    sweep.run(toy.object_strings, {"a": [1]}, "serial", progress=False)  # fine without a cache


@pytest.fixture
def toy_package(tmp_path, monkeypatch):
    """A package ``codetoy`` on sys.path, followed by code_hash in place of tsdyn.

    ``point.f`` uses ``helper.OFFSET`` (imported relatively); ``unrelated`` is not imported.
    Returns a function that rewrites one of its modules and reloads it.
    """
    pkg = tmp_path / "src" / "codetoy"
    pkg.mkdir(parents=True)
    files = {
        "__init__.py": "",
        "point.py": """
            from . import helper

            CALLS = []

            def f(a, *, seed):
                CALLS.append(a)
                return {"x": a + helper.OFFSET}
            """,
        "helper.py": "OFFSET = 1.0\n",
        "unrelated.py": "X = 0\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # reload reads the edited source
    monkeypatch.syspath_prepend(str(pkg.parent))
    monkeypatch.setattr(sweep, "_CODE_ROOT", "codetoy")
    importlib.import_module("codetoy.point")

    def edit(module, text):
        (pkg / f"{module}.py").write_text(textwrap.dedent(text))
        return importlib.reload(importlib.import_module(f"codetoy.{module}"))

    yield edit
    for name in [m for m in sys.modules if m == "codetoy" or m.startswith("codetoy.")]:
        del sys.modules[name]


def test_changed_code_misses_the_cache(tmp_path, toy_package):
    point = sys.modules["codetoy.point"]

    def sweep_f():
        point.CALLS.clear()
        ds = sweep.run(sys.modules["codetoy.point"].f, {"a": [1.0, 2.0]}, "serial", tmp_path / "cache",
                       progress=False)
        return ds.x.values.ravel().tolist(), list(sys.modules["codetoy.point"].CALLS)

    assert sweep_f() == ([2.0, 3.0], [1.0, 2.0])
    assert sweep_f() == ([2.0, 3.0], [])  # cached
    # an imported module changes (a transitive dependency of f): the cache misses
    toy_package("helper", "OFFSET = 10.0\n")
    assert sweep_f() == ([11.0, 12.0], [1.0, 2.0])
    # a module that f's code does not import changes: still cached
    toy_package("unrelated", "X = 1\n")
    assert sweep_f() == ([11.0, 12.0], [])
    # f's own code changes
    point = toy_package("point", """
        from . import helper

        CALLS = []

        def f(a, *, seed):
            CALLS.append(a)
            return {"x": 2 * a + helper.OFFSET}
        """)
    assert sweep_f() == ([12.0, 14.0], [1.0, 2.0])
    # and going back to the old code finds the old entries again
    toy_package("helper", "OFFSET = 1.0\n")
    point = toy_package("point", """
        from . import helper

        CALLS = []

        def f(a, *, seed):
            CALLS.append(a)
            return {"x": a + helper.OFFSET}
        """)
    assert sweep_f() == ([2.0, 3.0], [])


def test_code_hash_follows_tsdyn_imports_only_within_the_sub_package():
    from tsdyn import committee, sparse
    from tsdyn.sweep import _code_closure

    closure = _code_closure(functools.partial(sparse.greedy_point, sweeps=4))
    assert {"tsdyn", "tsdyn.sparse", "tsdyn.sparse.experiments", "tsdyn.sparse._kernels",
            "tsdyn._seeds"} <= set(closure)
    assert not any(m.startswith("tsdyn.committee") for m in closure)
    assert sweep.code_hash(sparse.greedy_point) != sweep.code_hash(committee.plateau_escape)
    # a partial's bound arguments change the name in the key, not the code hash
    assert sweep.code_hash(functools.partial(sparse.greedy_point, sweeps=4)) == \
        sweep.code_hash(sparse.greedy_point)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"grid": {"a": []}}, ValueError, "grid axis 'a' is empty"),
    ({"grid": {"a": [[1.0, 2.0]]}}, ValueError, r"grid axis 'a' must be 1-D; got shape \(1, 2\)"),
    ({"grid": {"a": 1.0}}, ValueError, r"grid axis 'a' must be 1-D; got shape \(\)"),
    ({"grid": {"seed": [1, 2]}}, ValueError, "grid axis 'seed' is reserved"),
    ({"grid": [1.0, 2.0]}, TypeError, "grid must be a dict"),
    ({"grid": {"a": [1.0], "c": [1.0]}}, TypeError,
     r"fn _sweep_toy.fragile cannot be called as fn\(\*\*point, seed=...\) .*'c'"),
    ({"fn": 3}, TypeError, "fn must be callable; got int"),
    ({"seeds": 0}, ValueError, r"seeds \(number of replicas per grid point\) must be an integer >= 1"),
    ({"seed": -1}, ValueError, "seed .* must be a non-negative integer or a numpy SeedSequence"),
    ({"executor": "threads"}, ValueError, "executor must be None, 'serial' or a concurrent"),
    ({"executor": 4}, TypeError, "executor must be None, 'serial' or a concurrent.*got int"),
    ({"bogus": 1}, TypeError, "unexpected keyword argument 'bogus'"),
])
def test_bad_input_raises_naming_the_argument(kwargs, error, match):
    call = {"fn": toy.fragile, "grid": {"a": [1.0]}, "executor": "serial", "progress": False}
    with pytest.raises(error, match=match):
        sweep.run(**(call | kwargs))


@pytest.mark.parametrize("fn, error, match", [
    (toy.not_a_result, TypeError, r"fn must return a dict or an xarray.Dataset; got list at "
                                  r"point \(a=1.0\), replica 0"),
    (toy.moving_times, ValueError, r"other coordinates at point \(a=2.0\), replica 0"),
    (toy.clashing, ValueError, r"names \['a'\] that are grid axes"),
])
def test_results_that_cannot_be_stacked_are_rejected(fn, error, match):
    with pytest.raises(error, match=match):
        sweep.run(fn, {"a": [1.0, 2.0]}, "serial", progress=False)


@pytest.mark.parametrize("workers", [None, 2], ids=["serial", "pool-2"])
def test_an_error_in_fn_propagates_naming_the_point(workers):
    grid = {"a": [1, 2, 3]}
    # pytest matches the message and the notes (PEP 678) of the exception
    match = r"must be > 0(.|\n)*_sweep_toy.fragile raised at point \(a=2\), replica [01]"
    if workers is None:
        with pytest.raises(ValueError, match=match):
            sweep.run(toy.fragile, grid, "serial", seeds=2, progress=False)
    else:
        with spawn_pool(workers) as pool, pytest.raises(ValueError, match=match):
            sweep.run(toy.fragile, grid, pool, seeds=2, progress=False)


def test_partial_functions_have_a_stable_cache_name():
    """functools.partial is named by its function and bound arguments, not its address."""
    from tsdyn.sweep import _fn_name

    a = functools.partial(np.add, 1, where=True)
    b = functools.partial(np.add, 1, where=True)
    c = functools.partial(np.add, 2, where=True)
    assert _fn_name(a) == _fn_name(b) != _fn_name(c)
    assert "0x" not in _fn_name(a)


@pytest.mark.parametrize("own_pool", [True, False])
def test_local_workers_run_blas_and_numba_on_one_thread(own_pool):
    """One worker per core, each on one thread: numpy's and scipy's OpenBLAS and numba's
    prange loops in a local worker use one thread, in the chapters' long-lived executor and
    in the pool ``run`` makes when given none."""
    if own_pool:
        ds = sweep.run(toy.threads, {"k": [0, 1]}, None, progress=False)
    else:
        pool = sweep.executor(max_workers=2)
        try:
            ds = sweep.run(toy.threads, {"k": [0, 1]}, pool, progress=False)
        finally:
            pool.shutdown()
    assert (ds.blas == 1).all() and (ds.numba == 1).all()


def test_executor_local_pool_and_bad_scheduler():
    pool = sweep.executor(max_workers=1)
    try:
        assert isinstance(pool, cf.ProcessPoolExecutor)
    finally:
        pool.shutdown()
    with pytest.raises(ValueError, match="dask_scheduler"):
        sweep.executor("")
    with pytest.raises(ValueError, match="max_workers"):
        sweep.executor(max_workers=0)
