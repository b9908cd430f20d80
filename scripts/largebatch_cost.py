"""Cost model of a chapter 2 preset: step costs timed here, times the deterministic dynamics'
recovery time T at every point of the preset's sweeps (capped at the step budget in the phase
diagrams), times the runs per point. Prints processor-hours per sweep and the total.

    python scripts/largebatch_cost.py [--scale paper]

The grids, seeds and budgets are read from params/<scale>.yaml; the one-step root check is costed at
``one_step_samples`` exact one-step samples per column. The serial parts of Secs. 3 and 7 and the
theory sweeps are not costed. On a shared machine the timed step costs are upper bounds.
"""

import argparse
import importlib
import time

import numpy as np

from tsdyn import largebatch as lb, presets
from tsdyn.largebatch import experiments as ex

simmod = importlib.import_module("tsdyn.largebatch.simulate")
SIZES = (128, 512, 1024, 2048, 4096)


def step_cost(d, n_b, sampler):
    """Seconds per SGD step of one run (He3 target and student, from m0 = d^-1/2)."""
    p = lb.Params(d=d, n0=float(n_b), mu=0.0, gamma0=0.04, target="he3", activation="he3", m0=d ** -0.5)
    run = simmod._Runner(p, 0, sampler, False)
    run.advance(2)  # compile
    n = max(3, int(2e5 // (n_b + d)))
    t, done = time.perf_counter(), 0
    while done < n:
        done += run.advance(n - done)
    return (time.perf_counter() - t) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="paper")
    cfg = presets.load("largebatch", ap.parse_args().scale)
    c0 = [step_cost(d, 1, "reduced") for d in SIZES]
    c1 = (step_cost(512, 2 ** 16, "reduced") - c0[1]) / 2 ** 16
    cg = [step_cost(d, 2 ** 20, "gaussian") for d in SIZES]
    def table(costs):
        return ", ".join(f"d={d}: {c * 1e6:.1f} us" for d, c in zip(SIZES, costs))
    print(f"per step, exact: {table(c0)}, + {c1 * 1e9:.1f} ns per sample; central limit: {table(cg)}", flush=True)

    def per_step(d, n_b):
        if n_b >= lb.GAUSSIAN_MIN_NB:
            return np.interp(d, SIZES, cg)
        return np.interp(d, SIZES, c0) + c1 * n_b

    total = {}

    def scaling(name, ell, ds, mus, gamma0, n0, variants=("projected",)):
        cost = 0.0
        for v in variants:
            for d in ds:
                for mu in mus:
                    kw = dict(d=int(d), ell=ell, mu=float(mu), gamma0=gamma0, n0=n0, variant=v, eta=cfg["eta"])
                    T = ex.theory_recovery_time(**kw)
                    cost += cfg[seeds_of[name]] * T * per_step(int(d), ex.scaling_params(**kw).n_b)
        total[name] = cost

    def diagram(name, ell, d, mus, deltas, budget, gamma0, n0, variants):
        cost = 0.0
        for v in variants:
            for mu in mus:
                for de in deltas:
                    kw = dict(d=int(d), ell=ell, mu=float(mu), delta=float(de), gamma0=gamma0, n0=n0, variant=v)
                    T = ex.theory_phase_point(budget=budget, eta=cfg["eta"], **kw)["T"]
                    cost += cfg["phase_seeds"] * min(T, budget) * per_step(int(d), ex.scaling_params(**kw).n_b)
        total[name] = cost

    seeds_of = {"l = 2 T(d)": "scaling_seeds", "l = 3 T(d)": "scaling_seeds", "variants": "variant_seeds"}
    scaling("l = 2 T(d)", 2, cfg["l2_ds"], cfg["l2_mus"], cfg["l2_gamma0"], 1.0)
    scaling("l = 3 T(d)", 3, cfg["l3_ds"], cfg["l3_mus"], cfg["l3_gamma0"], cfg["l3_n0"])
    scaling("variants", 3, cfg["variant_ds"], [2.0], cfg["variant_gamma0"], 1.0,
            ("projected", "correlation", "spherical"))
    diagram("l = 2 diagrams", 2, cfg["phase_d"], cfg["phase_mus"], cfg["phase_deltas"], cfg["phase_budget"],
            cfg["l2_gamma0"], 1.0, ("projected", "correlation", "spherical"))
    diagram("l = 3 diagram", 3, cfg["phase3_d"], cfg["phase3_mus"], cfg["phase3_deltas"], cfg["phase3_budget"],
            cfg["l3_gamma0"], cfg["l3_n0"], ("projected",))
    roots = 0.0
    for ell, d, mus, n0 in ((2, cfg["phase_d"], cfg["phase_mus"], 1.0), (3, cfg["phase3_d"], cfg["phase3_mus"], cfg["l3_n0"])):
        for mu in mus:
            n_b = ex.scaling_params(d=int(d), ell=ell, mu=float(mu), n0=n0).n_b
            roots += cfg["one_step_samples"] * (np.interp(d, SIZES, c0) + c1 * n_b)
    total["one-step roots"] = roots
    for name, cost in total.items():
        print(f"{name:>16}: {cost / 3600:6.2f} processor-hours")
    print(f"{'total':>16}: {sum(total.values()) / 3600:6.2f} processor-hours")


if __name__ == "__main__":
    main()
