"""The central-limit ("gaussian") sampler of tsdyn.largebatch against the exact ("reduced") one,
where the law of a step matters most: weak-recovery runs across the noise boundary.

He3 target and student, projected SGD, d = 128, n0 = 4, gamma0 = 0.04 (chapter 2's l = 3 runs),
batches n_b = 2^15 and 2^17, delta = the theory's finite-d noise root + offset, ``--seeds`` runs per
(n_b, offset, sampler), each with its own seed. Writes the sweep's Dataset (T, recovered, delta, ...)
to ``--out``; chapter 2 reads it (book/data/largebatch_clt_check.nc).

    python scripts/largebatch_clt_check.py --seeds 128 --out book/data/largebatch_clt_check.nc
"""

import argparse
import time
from functools import partial

from tsdyn import sweep
from tsdyn.largebatch import experiments

OFFSETS = [-0.04, -0.03, -0.025, -0.02, -0.015, -0.01, 0.1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=128)
    ap.add_argument("--budget", type=int, default=500, help="step budget of a run")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--workers", type=int, default=None)
    a = ap.parse_args()
    fn = partial(experiments.sampler_check_point, d=128, ell=3, max_steps=a.budget, gamma0=0.04, n0=4.0)
    grid = {"n_b": [2 ** 15, 2 ** 17], "offset": OFFSETS, "sampler": ["reduced", "gaussian"]}
    ex = None
    if a.workers:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        ex = ProcessPoolExecutor(a.workers, mp_context=multiprocessing.get_context("spawn"))
    t0 = time.time()
    ds = sweep.run(fn, grid, ex, a.cache, seeds=a.seeds, seed=2024, progress=False)
    ds.attrs.update(d=128, ell=3, gamma0=0.04, n0=4.0, budget=a.budget, wall_seconds=time.time() - t0,
                    command=f"python scripts/largebatch_clt_check.py --seeds {a.seeds} --budget {a.budget}")
    ds.to_netcdf(a.out, engine="h5netcdf")
    print(ds)


if __name__ == "__main__":
    main()
