"""scripts/sparse_long_sgd.py: the stored Fig. 8 runs of chapter 5 are made, and resumed, by it."""

import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import sparse_long_sgd  # noqa: E402


def _run(tmp_path, lrs, seeds):
    out = tmp_path / f"rows_{len(lrs)}_{seeds}.nc"
    sparse_long_sgd.main(["--N", "8", "--lrs", *map(str, lrs), "--ms", "1", "2", "--steps", "50", "--seeds",
                          str(seeds), "--seed", "7", "--n-points", "6", "--cache", str(tmp_path / "cache"),
                          "--out", str(out)])
    return xr.open_dataset(out, engine="h5netcdf").load()


def test_rows_are_written_and_extend_without_changing_earlier_runs(tmp_path):
    one = _run(tmp_path, [0.1], 2)
    assert dict(one.sizes) == {"lr": 1, "m": 2, "seed": 2, "t": one.sizes["t"]}
    assert one.attrs["steps"] == 50 and one.attrs["n_points"] == 6 and one.attrs["root_seed"] == 7
    # appending a learning rate and a replica keeps the seeds, and so the runs, of the first row
    more = _run(tmp_path, [0.1, 1.0], 3)
    assert dict(more.sizes)["lr"] == 2 and dict(more.sizes)["seed"] == 3
    np.testing.assert_array_equal(more.val_loss.isel(lr=[0], seed=[0, 1]).values, one.val_loss.values)
    # the sweep computed the first row once: its runs came back from the cache
    assert len(list((tmp_path / "cache").glob("*.nc"))) == 2 * 2 * 3


def test_rerun_stored_reproduces_the_first_run_and_catches_a_changed_file(tmp_path):
    from tsdyn import sparse, sweep

    stored = _run(tmp_path, [0.1], 2)
    assert sparse.rerun_stored(stored, executor=sweep.SERIAL) == 0.0
    tampered = stored.copy(deep=True)
    tampered["val_loss"][0, 0, 0, -1] *= 1.001
    # |new / old - 1| with old 1.001 times the true record
    assert sparse.rerun_stored(tampered, executor=sweep.SERIAL) == pytest.approx(1 - 1 / 1.001, rel=1e-9)


def test_cuda_backend_shares_the_cpu_runs_setup_and_resumes(tmp_path):
    """--backend cuda (numba's simulator here): same seeds as the cpu backend, so the same t = 0 records;
    a time limit saves the state and exits with 3, and the same command finishes the grid."""
    args = ["--N", "4", "--lrs", "0.2", "--ms", "1", "3", "--steps", "12", "--seeds", "2", "--seed", "7",
            "--n-points", "4", "--n-val", "16"]
    cpu = tmp_path / "cpu.nc"
    assert sparse_long_sgd.main(args + ["--cache", str(tmp_path / "cache"), "--out", str(cpu)]) is None
    out, ck = tmp_path / "cuda.nc", tmp_path / "ck"
    gpu_args = args + ["--backend", "cuda", "--lanes", "2", "--checkpoint", str(ck), "--out", str(out)]
    assert sparse_long_sgd.main(gpu_args + ["--time-limit", "0"]) == 3 and not out.exists()
    assert sparse_long_sgd.main(gpu_args) == 0
    a = xr.open_dataset(cpu, engine="h5netcdf").load()
    b = xr.open_dataset(out, engine="h5netcdf").load()
    assert b.attrs["backend"] == "numba.cuda" and "--backend cuda" in b.attrs["command"]
    np.testing.assert_allclose(b.val_loss.isel(t=0).values, a.val_loss.isel(t=0).values, rtol=1e-12)
    # later records differ: other mini-batches
    assert not np.allclose(b.val_loss.isel(t=-1).values, a.val_loss.isel(t=-1).values, rtol=1e-6)
