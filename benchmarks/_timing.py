"""Timing shared by the benchmarks: ratios of best times, measured in one run.

``TSDYN_BENCH_SMOKE=1`` (``make bench-smoke``, run by CI) selects the smoke mode: every
benchmark runs its whole code path at tiny sizes with one repeat, in seconds, so that
none can rot; its ratios then mean nothing and are not judged (:func:`verdict`).
"""

import os
import time

import numpy as np

SMOKE = os.environ.get("TSDYN_BENCH_SMOKE", "") not in ("", "0")


def smoke(full, small):
    """``small`` in smoke mode, else ``full`` (a benchmark's size or list of sizes)."""
    return small if SMOKE else full


def verdict(ok, missed="MISSED"):
    """What a benchmark prints after a target: "ok" or ``missed`` at full sizes; in smoke
    mode, where the sizes are too small for any target to mean something, that it is not
    judged."""
    if SMOKE:
        return "smoke sizes: target not judged"
    return "ok" if ok else missed


def best_of(fns, repeats=5):
    """Best wall time of each callable over ``repeats`` interleaved rounds (one when smoking).

    Interleaving (a, b, c, a, b, c, ...) exposes every callable to the same load on
    a shared machine, so the ratios of the best times are what a benchmark reports.
    """
    repeats = smoke(repeats, 1)
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best
