"""Chapter 2, Sec. 3: the finite-d recursions of the overlap against SGD, with enough runs to resolve them.

Correlation loss, He2 target and student, mu = 1, delta = 0, gamma0 = 0.2, m0 = 0.2: the mean overlap of
``--runs`` SGD runs after 60 steps (exact-in-law sampler, seeds 10000+) against the theory from the same
start (``experiments.finite_d_point``): the series recursion (``theory.step_map`` with its second-order
fluctuation factor, which it leaves out where the factor's cumulant series does not converge), the same with
the closure for the spread of the runs (``fluctuations=True``), and the exact one-step mean iterated with
that closure (``method="exact"``, ``--batches`` Monte Carlo batches per step), and, with ``--law-batches``, the
law of the overlap carried whole as a Markov chain (``method="law"``): its mean, spread, the mass in the mirror
state m < 0 and the spread of the rest, beside the runs'.

    python scripts/largebatch_recursion_gap.py --runs 4096 --batches 100000 --points 128:1 512:0.25 2048:0.25

Each point is d:n0 with n_b = n0 d. Prints every recursion's gap to SGD, in standard errors of the difference.
The chapter's paper-preset check (256 runs from seed 300, the exact mean up to n_b = 1024):

    python scripts/largebatch_recursion_gap.py --runs 256 --seed 300 --batches 20000 --exact-max-nb 1024 \
        --points 64:1 128:1 256:1 512:1 1024:1 2048:1 4096:1
"""

import argparse

import numpy as np

from tsdyn.largebatch import experiments, theory


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4096)
    ap.add_argument("--batches", type=int, default=100_000, help="Monte Carlo batches per step of the exact mean")
    ap.add_argument("--points", nargs="+", default=["128:1", "512:0.25", "2048:0.25"])
    ap.add_argument("--seed", type=int, default=10_000, help="first SGD seed (the paper preset's check uses 300)")
    ap.add_argument("--exact-max-nb", type=int, default=None, help="iterate the exact mean only up to this batch")
    ap.add_argument("--law-batches", type=int, default=0, help="batches per grid point of the law's kernel (0: none)")
    args = ap.parse_args()
    for spec in args.points:
        d, n0 = spec.split(":")
        nb = round(float(n0) * int(d))
        exact = args.batches if args.exact_max_nb is None or nb <= args.exact_max_nb else 0
        r = experiments.finite_d_point(d=int(d), n0=float(n0), runs=args.runs, seed=args.seed, exact_batches=exact,
                                       law_batches=args.law_batches)
        print(f"d={d} n_b={r['n_b']:.0f}: SGD {r['sim']:.5f} +- {r['sim_se']:.5f} (spread {r['sim_sd']:.4f}); "
              f"d->inf {r['infinite']:.5f}; the series' factor: omitted / kept term "
              f"{r['series_omitted'] / r['series_kept']:.2f} (kept where <= {theory.SERIES_RATIO_MAX})", flush=True)
        for name, se in (("finite", 0.0), ("no_factor", 0.0), ("finite_closure", 0.0), ("exact", r["exact_se"]),
                         ("law", r["law_se"])):
            if np.isnan(r[name]):
                continue
            gap = r["sim"] - r[name]
            extra = f" +- {se:.5f} (Monte Carlo), predicted spread {r['exact_sd']:.4f}" if name == "exact" else ""
            if name == "law":
                extra = (f" +- {se:.5f} (Monte Carlo), spread {r['law_sd']:.4f}, mass below 0 {r['law_neg']:.2e} "
                         f"+- {r['law_neg_se']:.1e} (runs {r['sim_neg']:.2e}), spread above 0 "
                         f"{r['law_sd_pos']:.4f} +- {r['law_sd_pos_se']:.4f} (runs {r['sim_sd_pos']:.4f})")
            print(f"    {name:15s} {r[name]:.5f}{extra}; SGD - it = {gap:+.5f} = "
                  f"{gap / np.hypot(r['sim_se'], se):+.1f} se", flush=True)


if __name__ == "__main__":
    main()
