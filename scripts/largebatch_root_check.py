"""Chapter 2, Sec. 5: one SGD step at the theory's finite-d noise root, column by column of a phase diagram.

He_ell target and student, projected SGD, batch n0 d^mu, start m0 = d^-1/2: at the root in delta of the
theory's one-step growth (``experiments.one_step_root``) ``--samples`` one-step SGD samples measure the mean
growth m'/m0 - 1, which is zero within its error where the theory's root is right. The paper preset's
largest (l = 3) columns have n_b up to 10^6, where the exact-in-law sampler costs about 10 minutes per
column; ``--sampler auto`` (the chapter's sweeps' choice: central limit from ``simulate.GAUSSIAN_MIN_NB`` on)
makes that seconds. Seeds as in the chapter's table (700 + 50 l + the column's index in ``--all-mus``).

    python scripts/largebatch_root_check.py --ell 3 --d 512 --mus 1.25 1.375 1.5 1.625 1.75 1.875 2.0
"""

import argparse

import numpy as np

from tsdyn.largebatch import experiments


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ell", type=int, default=3)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--gamma0", type=float, default=None, help="default: 0.04 for l = 3, 0.15 for l = 2")
    ap.add_argument("--n0", type=float, default=None, help="default: 4 for l = 3, 1 for l = 2")
    ap.add_argument("--mus", type=float, nargs="+", default=[1.5, 1.625, 1.75, 1.875, 2.0])
    ap.add_argument("--all-mus", type=float, nargs="+", default=list(np.arange(0.5, 2.001, 0.125)),
                    help="the preset's columns, for the seeds (paper: 0.5 to 2 in steps of 1/8)")
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--sampler", default="auto")
    args = ap.parse_args()
    gamma0 = args.gamma0 if args.gamma0 is not None else (0.04 if args.ell == 3 else 0.15)
    n0 = args.n0 if args.n0 is not None else (4.0 if args.ell == 3 else 1.0)
    all_mus = [round(m, 6) for m in args.all_mus]
    print("mu     n_b       root delta  SGD growth  s.e.     growth/s.e.  SGD root - theory root")
    for mu in args.mus:
        i = all_mus.index(round(mu, 6))
        r = experiments.one_step_root(seed=700 + 50 * args.ell + i, n_samples=args.samples, d=args.d, ell=args.ell,
                                      mu=mu, gamma0=gamma0, n0=n0, sampler=args.sampler)
        print(f"{mu:<6.3f} {r['n_b']:<9.0f} {r['root_map']:+.4f}     {r['growth']:+.4f}     {r['growth_se']:.4f}   "
              f"{r['growth'] / r['growth_se']:+6.1f}       {r['shift']:+.4f} +- {r['shift_se']:.4f}", flush=True)


if __name__ == "__main__":
    main()
