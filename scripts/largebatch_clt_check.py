"""The central-limit ("gaussian") sampler of tsdyn.largebatch against the exact ("reduced") one.

1. Where the law of a step matters most, weak-recovery runs across the noise boundary: He3 target
   and student, projected SGD, d = 128, n0 = 4, gamma0 = 0.04 (chapter 2's l = 3 runs), batches
   n_b = 2^15 and 2^17, delta = the theory's finite-d noise root + offset (the transition lies below
   the root), ``--seeds`` runs per (n_b, offset, sampler), each with its own seed.
2. One step from m0 = d^-1/2 at the points of the paper preset where sampler "auto" takes the
   central limit with the largest noise term gamma^2 (d / n_b) E[F^2]: the l = 3 diagram's corner
   (d = 512, mu = 1.75, delta = -0.5), the three variants of Sec. 6 at d = 512 (n_b = d^2,
   delta = -1/2 for the correlation loss and spherical SGD, 0 for projected SGD) and the l = 2 T(d)
   run at d = 4096, mu = 1.5; ``--one-step`` samples per point and sampler: mean and standard error
   of m'.

Writes both Datasets to ``--out`` (netCDF groups "recovery" and "one_step"); chapter 2 reads it
(book/data/largebatch_clt_check.nc).

    python scripts/largebatch_clt_check.py --seeds 128 --one-step 4000 --workers 2 --out book/data/largebatch_clt_check.nc
"""

import argparse
import time
from functools import partial

import xarray as xr

from tsdyn import sweep
from tsdyn.largebatch import experiments

OFFSETS = [-0.05, -0.045, -0.04, -0.035, -0.03, -0.025, -0.02, -0.015, -0.01, 0.1]
# (label, experiments.one_step_point keywords): the largest noise terms where "auto" takes the central limit
ONE_STEP = [
    ("l3 diagram, mu=1.75, delta=-0.5", dict(d=512, ell=3, mu=1.75, delta=-0.5, gamma0=0.04, n0=4.0)),
    ("projected, n_b=d^2", dict(d=512, ell=3, mu=2.0, delta=0.0, gamma0=0.04, n0=1.0, variant="projected")),
    ("correlation, n_b=d^2", dict(d=512, ell=3, mu=2.0, delta=-0.5, gamma0=0.04, n0=1.0, variant="correlation")),
    ("spherical, n_b=d^2", dict(d=512, ell=3, mu=2.0, delta=-0.5, gamma0=0.04, n0=1.0, variant="spherical")),
    ("l2 T(d), d=4096, mu=1.5", dict(d=4096, ell=2, mu=1.5, delta=0.0, gamma0=0.15, n0=1.0)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=128)
    ap.add_argument("--budget", type=int, default=500, help="step budget of a run")
    ap.add_argument("--one-step", type=int, default=4000, help="one-step samples per point and sampler")
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
    ds.attrs.update(d=128, ell=3, gamma0=0.04, n0=4.0, budget=a.budget, wall_seconds=time.time() - t0)
    t1 = time.time()
    steps = []
    for i, (label, kw) in enumerate(ONE_STEP):
        m0 = kw["d"] ** -0.5
        one = sweep.run(partial(experiments.one_step_point, n_samples=a.one_step, m0=m0, exact_max_nb=0, **kw),
                        {"sampler": ["reduced", "gaussian"]}, ex, a.cache, seeds=1, seed=3000 + i, progress=False)
        steps.append(one.isel(seed=0, drop=True).expand_dims(point=[label]))
    one = xr.concat(steps, "point")
    one.attrs.update(n_samples=a.one_step, wall_seconds=time.time() - t1)
    command = (f"python scripts/largebatch_clt_check.py --seeds {a.seeds} --budget {a.budget} "
               f"--one-step {a.one_step}")
    for x in (ds, one):
        x.attrs["command"] = command
    ds.to_netcdf(a.out, engine="h5netcdf", group="recovery")
    one.to_netcdf(a.out, engine="h5netcdf", group="one_step", mode="a")
    print(ds, one)


if __name__ == "__main__":
    main()
