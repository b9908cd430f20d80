"""The finite-d recursion of chapter 2 against SGD where its fluctuation factor is kept and where it is not.

Correlation loss, He2 target and student, mu = 1, delta = 0, gamma0 = 0.2, m0 = 0.2: the mean overlap of
``--runs`` SGD runs after 60 steps (exact-in-law sampler) against the finite-d recursion, and whether the
recursion keeps its second-order fluctuation factor (``theory._jensen_factor``; it is left out, step by step,
where its cumulant series does not converge, and then moves nothing).

    python scripts/largebatch_recursion_gap.py --runs 4096 --points 128:1 128:4 128:0.25 512:0.25 2048:0.25

Each point is d:n0 with n_b = n0 d. Prints SGD (mean and standard error), the recursion and what the
factor moves it by, the d -> infinity recursion, and the gap SGD - recursion in standard errors.
"""

import argparse

import numpy as np

from tsdyn import largebatch as lb
from tsdyn.largebatch import theory


def point(d, n0, runs, steps=60, seed=10_000):
    p = lb.Params(d=d, mu=1.0, delta=0.0, gamma0=0.2, n0=n0, loss="correlation", target="he2",
                  activation="he2", m0=0.2)
    sims = [lb.simulate(p, steps, seed=seed + s, n_points=2, sampler="reduced") for s in range(runs)]
    m = np.array([r.M.values[-1, 0, 0] for r in sims])
    final = {name: float(theory.dynamics(p, steps, init=sims[0], n_points=2, **kw).M[-1, 0, 0])
             for name, kw in (("finite", {}), ("no_factor", {"jensen": False}), ("infinite", {"finite_d": False}))}
    return p.n_b, m.mean(), m.std(ddof=1) / np.sqrt(runs), final


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4096)
    ap.add_argument("--points", nargs="+", default=["128:1", "128:4", "128:0.25", "512:0.25", "2048:0.25"])
    args = ap.parse_args()
    for spec in args.points:
        d, n0 = spec.split(":")
        n_b, mean, se, th = point(int(d), float(n0), args.runs)
        print(f"d={d} n_b={n_b}: SGD {mean:.5f} +- {se:.5f}; recursion {th['finite']:.5f} (the factor "
              f"moves it by {th['finite'] - th['no_factor']:+.5f}), d->inf {th['infinite']:.5f}; "
              f"gap {mean - th['finite']:+.5f} = {(mean - th['finite']) / se:+.1f} se", flush=True)


if __name__ == "__main__":
    main()
