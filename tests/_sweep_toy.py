"""Cheap functions for ``tests/test_sweep.py``, importable by worker processes.

They live in their own module (not the test module) so that spawned processes
and Dask workers can unpickle them by reference.
"""

import numpy as np
import xarray as xr

CALLS = []  # (params, spawn key) of every call made in this process
FAIL_AT = {}  # tests set this to make ``noisy`` raise at one point


def noisy(a, b, *, seed):
    """A scalar and a length-3 vector, both drawn from ``seed``."""
    CALLS.append(({"a": a, "b": b}, seed.spawn_key))
    if FAIL_AT == {"a": a, "b": b}:
        raise RuntimeError("toy failure")
    rng = np.random.default_rng(seed)
    return {"x": a + rng.standard_normal(), "path": b * rng.standard_normal(3)}


def uniform(*, seed):
    """One uniform number, for a grid without axes."""
    return {"u": np.random.default_rng(seed).random()}


def trajectory(a, *, seed):
    """A Dataset on a fixed time axis, with units and per-point attrs."""
    t = np.linspace(0.0, 1.0, 4)
    y = a * t + np.random.default_rng(seed).standard_normal(t.size)
    return xr.Dataset({"y": ("t", y, {"units": "m"})},
                      coords={"t": ("t", t, {"units": "SGD steps / N"})}, attrs={"a": a})


def fragile(a, *, seed):
    """Fails at a = 2 with the error a model would raise for a bad parameter."""
    if a == 2:
        raise ValueError("eta (learning rate) must be > 0")
    return {"a": a}


def moving_times(a, *, seed):
    """A time axis that depends on the point: cannot be stacked."""
    return xr.Dataset({"y": ("t", np.zeros(2))}, coords={"t": [0.0, a]})


def clashing(a, *, seed):
    """A variable named like a grid axis."""
    return {"a": 1.0}


def not_a_result(a, *, seed):
    return [a]


def every_dtype(a, *, seed):
    """One variable per dtype a result may hold, with awkward values (for the cache)."""
    f64 = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1 / 3, a])
    return xr.Dataset({
        "f64": ("i", f64, {"units": "SGD steps / N", "n": 3}),
        "f32": ("i", f64.astype(np.float32)),
        "f16": ("i", f64.astype(np.float16)),
        "c128": ("j", np.array([1 + 2j, complex(np.nan, -0.0), a * 1j])),
        "c64": ("j", np.array([1 + 2j, complex(np.inf, -0.0), a * 1j], np.complex64)),
        **{f"i{b}": ("j", np.array([np.iinfo(f"int{b}").min, a, np.iinfo(f"int{b}").max], f"int{b}"))
           for b in (8, 16, 32, 64)},
        **{f"u{b}": ("j", np.array([0, a, np.iinfo(f"uint{b}").max], f"uint{b}")) for b in (8, 16, 32, 64)},
        "diverged": ((), np.bool_(a == 2)),
        "flags": ("j", np.array([True, False, a == 1])),
        "label": ("j", np.array(["erf", "relu", "é" * a])),
        "raw": ("j", np.array([b"ab", b"", b"x" * a])),
        "when": ("j", np.array(["2026-01-01T00:00:00.000000001", "NaT", "1970-01-01"], "datetime64[ns]")),
        "lag": ("j", np.array([1, -a, 0], "timedelta64[ns]")),
    }, coords={"i": ("i", np.arange(8.0), {"units": "index"})})


def object_strings(a, *, seed):
    """Strings in an object array: netCDF would hand them back as fixed-width strings."""
    return {"names": np.array(["x", "yy"], dtype=object)}


def threads(k, *, seed):
    """The threads this process's BLAS libraries and numba's parallel loops would use."""
    import numba
    import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS too)
    import threadpoolctl

    blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    return {"blas": max(blas), "numba": numba.get_num_threads()}  # max: raises if no BLAS is found
