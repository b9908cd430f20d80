"""Chapter 5, Fig. 8 at the paper's length: dense-student SGD runs of 10^6 steps, kept for the chapter.

The chapter's quick build cannot afford the paper's 10^6 SGD steps at m up to 256 (at m = 256,
about 6 minutes of one processor per run at N = 32, 13 at N = 64), so these runs are made once
and read from ``book/data``, as chapter 4 does with its long column. This script runs
:func:`tsdyn.sparse.sgd_point` (summed mini-batch loss, eq. 2 as written) on the grid
(lr, m) with ``--seeds`` replicas per point through :func:`tsdyn.sweep.run`.

- Every finished run is kept in ``--cache``; the same command, run again after a stop,
  computes only what is missing (as long as the code of ``tsdyn.sparse`` is unchanged:
  the cache key holds its hash).
- After each learning rate (a row of the paper's diagram) the rows finished so far are
  written to ``--out`` (netCDF), so a stopped run keeps its complete rows.
- Learning rates are indices of the sweep's ``lr`` axis in the order given, and the seeds
  of a point depend only on its indices: a later call with more learning rates appended,
  or more ``--seeds``, keeps every earlier run (and its cache entry).

With ``--backend cuda`` the whole grid runs at once on a GPU through
:func:`tsdyn.sparse.sgd_cuda.sgd_sweep_cuda` (numba.cuda, N <= 64): each run has the
teacher, initial student and validation set its CPU twin would have (same root seed,
same indices), and mini-batches drawn on the device. ``--checkpoint`` and
``--time-limit`` replace the cache: a call that runs out of time saves its state and
exits with status 3, and the same command continues from it.

Example (the chapter's stored learning curves)::

    python scripts/sparse_long_sgd.py --N 32 --lrs 0.1 --ms 1 4 16 64 256 --seeds 8 \\
        --seed 310 --cache CACHE --out book/data/sparse_sgd_long_N32.nc
"""

import argparse
import sys
import time
from functools import partial

from tsdyn import sparse, sweep


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--N", type=int, required=True, help="hidden units = inputs (paper: 32 curves, 64 diagram)")
    p.add_argument("--d", type=int, default=2, help="teacher non-zeros per row and column (paper: 2)")
    p.add_argument("--lrs", type=float, nargs="+", required=True, help="learning rates, in sweep order")
    p.add_argument("--ms", type=int, nargs="+", required=True, help="mini-batch sizes")
    p.add_argument("--steps", type=int, default=10 ** 6, help="SGD steps per run (paper: 10^6)")
    p.add_argument("--seeds", type=int, required=True, help="runs per (lr, m) point")
    p.add_argument("--seed", type=int, required=True, help="root seed of the sweep")
    p.add_argument("--n-points", type=int, default=40, help="log-spaced recording times per run")
    p.add_argument("--n-val", type=int, default=1024, help="validation samples per run (paper: 1024)")
    p.add_argument("--backend", choices=("cpu", "cuda"), default="cpu", help="cpu: numba on processes; "
                   "cuda: numba.cuda on one GPU")
    p.add_argument("--cache", help="sweep cache directory (resume; cpu backend, required there)")
    p.add_argument("--checkpoint", help="directory to save the state in and resume from (cuda backend)")
    p.add_argument("--time-limit", type=float, help="seconds after which to save the checkpoint and exit "
                   "(cuda backend)")
    p.add_argument("--lanes", type=int, default=8, help="sample lanes per run (cuda backend)")
    p.add_argument("--records-only", action="store_true", help="cuda backend: compute nothing, write the "
                   "records the checkpoint holds (a stopped run's first records; attrs finished = 0)")
    p.add_argument("--out", required=True, help="netCDF file for the finished rows")
    return p.parse_args(argv)


def command(argv):
    return "python scripts/sparse_long_sgd.py " + " ".join(sys.argv[1:] if argv is None else argv)


def main_cuda(a, argv):
    from tsdyn.sparse import sgd_cuda

    t0 = time.monotonic()

    def log(k, n, t, failed):
        print(f"record {k} of {n}: step {t:,}, {failed} runs diverged, {time.monotonic() - t0:.0f} s", flush=True)

    ds = sgd_cuda.sgd_sweep_cuda(N=a.N, d=a.d, lrs=a.lrs, ms=a.ms, steps=a.steps, seeds=a.seeds, seed=a.seed,
                                 n_points=a.n_points, n_val=a.n_val, lanes=a.lanes, checkpoint=a.checkpoint,
                                 time_limit=a.time_limit, log=log, records_only=a.records_only)
    if ds is None:
        print(f"time limit reached: state saved to {a.checkpoint}; run the same command again", flush=True)
        return 3
    ds = ds.drop_vars("W", errors="ignore")
    ds.attrs.update(command=command(argv))
    ds.to_netcdf(a.out, engine="h5netcdf")
    print(f"all {len(a.lrs)} rows, {ds.attrs['steps_done']:,} of {a.steps:,} steps, written to {a.out} "
          f"({time.monotonic() - t0:.0f} s)", flush=True)
    return 0


def main(argv=None):
    a = parse(argv)
    if a.backend == "cuda":
        if (a.time_limit is not None or a.records_only) and a.checkpoint is None:
            raise SystemExit("--time-limit and --records-only need --checkpoint")
        return main_cuda(a, argv)
    if a.cache is None:
        raise SystemExit("--cache is required with the cpu backend")
    if a.checkpoint or a.time_limit is not None or a.records_only or a.lanes != 8:
        raise SystemExit("--checkpoint, --time-limit, --records-only and --lanes belong to the cuda backend")
    run = partial(sparse.sgd_point, N=a.N, d=a.d, steps=a.steps, n_points=a.n_points, n_val=a.n_val)
    for k in range(1, len(a.lrs) + 1):
        rows = sweep.run(run, {"lr": a.lrs[:k], "m": a.ms}, cache=a.cache, seeds=a.seeds, seed=a.seed,
                         progress=False)
        rows.attrs.update(N=a.N, d=a.d, steps=a.steps, n_points=a.n_points, reduction="sum", root_seed=a.seed,
                          command=command(argv))
        rows.to_netcdf(a.out, engine="h5netcdf")
        print(f"lr={a.lrs[k - 1]}: {k} of {len(a.lrs)} rows written to {a.out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
