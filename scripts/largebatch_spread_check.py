"""Chapter 2, Sec. 3: the spread of the runs against the closures' prediction, with enough runs to decide it.

He2 target and student from m0 = 0.2 in the settings of the chapter's panels: (a) square loss, mu = delta = 1/2,
gamma0 = 0.1, 4 sqrt(d) 6 steps; (d) correlation loss, mu = 1, delta = 0 (n_b = d), gamma0 = 0.2, 40 steps. The
standard deviation of ``--runs`` SGD runs (exact-in-law sampler, seeds 20000+) at 10 recorded steps, against the closure of the series recursion (``theory.dynamics(..., fluctuations=True)``, one-step variance
from ``theory.step_variance``) and of the exact one-step recursion (``method="exact"``, one-step variance sampled),
with the means at the last step.

    python scripts/largebatch_spread_check.py --panel d --d 2048 --runs 1024 --batches 4000
"""

import argparse

import numpy as np

from tsdyn import largebatch as lb
from tsdyn.largebatch import theory

PANELS = {"a": dict(mu=0.5, delta=0.5, gamma0=0.1), "d": dict(mu=1.0, delta=0.0, gamma0=0.2, loss="correlation")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panel", choices=sorted(PANELS), default="d")
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--runs", type=int, default=1024)
    ap.add_argument("--batches", type=int, default=4000, help="Monte Carlo batches per step of the exact recursion")
    args = ap.parse_args()
    p = lb.Params(d=args.d, target="he2", activation="he2", m0=0.2, **PANELS[args.panel])
    steps = 40 if args.panel == "d" else int(4 * args.d ** 0.5 * 6)
    runs = [lb.simulate(p, steps, seed=20000 + s, n_points=11, sampler="reduced") for s in range(args.runs)]
    m = np.array([r.M.values[:, 0, 0] for r in runs])
    series = theory.dynamics(p, steps, init=runs[0], fluctuations=True)
    exact = theory.dynamics(p, steps, init=runs[0], method="exact", fluctuations=True, n_batches=args.batches, seed=1)
    rng = np.random.default_rng(0)
    sd = m.std(0, ddof=1)
    boot = np.array([np.std([col[rng.integers(0, col.size, col.size)].std(ddof=1) for _ in range(500)]) for col in m.T])
    print("step:                 ", runs[0].t.values.astype(int).tolist())
    print("runs' spread:         ", np.round(sd, 4).tolist())
    print("  bootstrap error:    ", np.round(boot, 4).tolist())
    print("series closure:       ", np.round(np.sqrt(series.M_var.values), 4).tolist())
    print("exact-step closure:   ", np.round(np.sqrt(exact.M_var.values), 4).tolist())
    print(f"mean at the last step: runs {m[:, -1].mean():.5f} +- {sd[-1] / np.sqrt(args.runs):.5f}, series "
          f"{float(series.M[-1, 0, 0]):.5f}, exact {float(exact.M[-1, 0, 0]):.5f} +- {float(exact.M_mc_se[-1]):.5f}")


if __name__ == "__main__":
    main()
