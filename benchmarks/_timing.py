"""Timing shared by the benchmarks: ratios of best times, measured in one run."""

import time

import numpy as np


def best_of(fns, repeats=5):
    """Best wall time of each callable over ``repeats`` interleaved rounds.

    Interleaving (a, b, c, a, b, c, ...) exposes every callable to the same load on
    a shared machine, so the ratios of the best times are what a benchmark reports.
    """
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best
