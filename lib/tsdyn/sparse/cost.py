"""What the chapter's grids cost: operation counts, timed short runs, and a fitted estimate.

The paper-scale cost of the chapter is not typed in but measured: :func:`time_run`
times short runs (a few sweeps or steps) at corners of the paper's grids, on one
core; :func:`fit_cost` fits seconds = a + b * work to them (a: the fixed cost of a
run, b: the cost of one unit of work); :func:`estimate` sums the fitted cost over
every run of a grid (:func:`chapter_runs`).

Work of a run, in multiply-adds over one sample (the cost model of the kernels):

- greedy, two matrices (student support d_s, teacher d): per sweep, N m for the
  inputs, 2 N d m for the teacher's labels, 2 N d_s m for the student's state, and
  2 N d_s moves: a first-layer move updates its hidden unit (m) and the d_s outputs
  it feeds (d_s m), a second-layer move one output (m): N m (d_s^2 + 4 d_s + 2 d + 1).
- greedy, one matrix: N m inputs, N d m labels, N d m state, N d moves of 2 m each:
  N m (4 d + 1) per sweep.
- greedy, validation at each of the ``n_points`` recording times: n_val samples
  through the student, 2 N d_s each (two matrices, n_val = 30) or N d (one
  matrix, n_val = 1024).
- SGD, dense N x N student: per step 2 N^2 m (forward and gradient), N^2 (update),
  N m (d + 1) (inputs and labels).
"""

import time

import numpy as np

from .. import _validate
from .greedy import greedy
from .params import Params, SGDParams
from .sgd import sgd

KINDS = ("two_matrix", "one_matrix", "sgd")


def greedy_work(N, d, m, sweeps, *, d_s=None, model="two_matrix", n_points=0):
    """Work of a greedy run (multiply-adds over one sample; see the module docstring),
    with ``n_points`` validations at the paper's validation sizes."""
    d_s = d if d_s is None else d_s
    if model == "two_matrix":
        return float(sweeps) * N * m * (d_s ** 2 + 4 * d_s + 2 * d + 1) + n_points * 30 * 2 * N * d_s
    if model == "one_matrix":
        return float(sweeps) * N * m * (4 * d + 1) + n_points * 1024 * N * d
    raise ValueError(f"model must be 'two_matrix' or 'one_matrix'; got {model!r}")


def sgd_work(N, d, m, steps):
    """Work of an SGD run of a dense N x N student (see the module docstring)."""
    return float(steps) * (2 * N * N * m + N * N + N * m * (d + 1))


def erf_batch_sizes(N, d, ratios):
    """Mini-batch sizes of the one-matrix runs: m = round(ratio N d), at least 1, without
    repeats, increasing (the counting argument's m_c ~ N d sets the scale)."""
    return sorted({max(1, int(round(r * N * d))) for r in ratios})


def chapter_runs(cfg):
    """Every run of the chapter's grids for a preset ``cfg`` (the dict of
    :func:`tsdyn.presets.load`): a dict section -> list of (kind, keywords, length, copies).

    ``length`` is sweeps (greedy) or steps (SGD); ``copies`` the runs with those
    parameters (seeds). Sections: ``figs_1_3`` (the two-matrix grid and the
    finite-size-scaling grid, and the large-m grid ``big_*`` if given), ``figs_4_5``
    (mismatched supports, and the fine grids ``mm_fss_ms`` of ``mm_fss_pairs`` at the
    sizes ``mm_fss_Ns`` if given, with the longer runs ``mm_fss_long_*`` of the
    first pair at the two largest sizes), ``figs_6_7`` (one matrix),
    ``fig_8`` (SGD learning curves and phase diagram), and ``absorption`` (the runs
    ``abs_*`` stopped at the teacher, if given, each counted at its full budget: an upper
    bound, since a run that reaches the teacher stops early).
    """
    runs = {"figs_1_3": [], "figs_4_5": [], "figs_6_7": [], "fig_8": []}
    if cfg.get("abs_pairs"):
        runs["absorption"] = [("two_matrix", dict(N=N, d=d_t, d_s=d_s, m=m), cfg["abs_budget"], cfg["abs_seeds"])
                              for (d_t, d_s), grid in zip(cfg["abs_pairs"], cfg["abs_ms"])
                              for N in cfg["abs_Ns"] for m in grid]
    for N in cfg["Ns"]:
        for d in cfg["ds"]:
            for m in cfg["ms"]:
                runs["figs_1_3"].append(("two_matrix", dict(N=N, d=d, m=m), cfg["sweeps"], cfg["seeds"]))
    for N in cfg["fss_Ns"]:
        for m in cfg["fss_ms"]:
            runs["figs_1_3"].append(("two_matrix", dict(N=N, d=cfg["fss_d"], m=m), cfg["sweeps"],
                                     cfg["fss_seeds"]))
    for d_t, d_s in cfg["mm_pairs"]:
        for m in cfg["mm_ms"]:
            runs["figs_4_5"].append(("two_matrix", dict(N=cfg["mm_N"], d=d_t, d_s=d_s, m=m), cfg["sweeps"],
                                     cfg["mm_seeds"]))
    for (d_t, d_s), grid in zip(cfg.get("mm_fss_pairs", []), cfg.get("mm_fss_ms", [])):
        for N in cfg["mm_fss_Ns"]:
            for m in grid:
                runs["figs_4_5"].append(("two_matrix", dict(N=N, d=d_t, d_s=d_s, m=m), cfg["mm_fss_sweeps"],
                                         cfg["mm_fss_seeds"]))
    if cfg.get("mm_fss_pairs") and cfg.get("mm_fss_long_ms"):
        d_t, d_s = cfg["mm_fss_pairs"][0]
        for N in cfg["mm_fss_Ns"][-2:]:
            for m in cfg["mm_fss_long_ms"]:
                runs["figs_4_5"].append(("two_matrix", dict(N=N, d=d_t, d_s=d_s, m=m), cfg["mm_fss_long_sweeps"],
                                         cfg["mm_fss_seeds"]))
    for d in cfg.get("big_ds", []):
        for m in cfg["big_ms"]:
            runs["figs_1_3"].append(("two_matrix", dict(N=cfg["big_N"], d=d, m=m), cfg["big_sweeps"],
                                     cfg["big_seeds"]))
    for N in cfg["erf_Ns"]:
        for d in cfg["erf_ds"]:
            for m in erf_batch_sizes(N, d, cfg["erf_ratios"]):
                runs["figs_6_7"].append(("one_matrix", dict(N=N, d=d, m=m), cfg["erf_sweeps"],
                                         cfg["erf_seeds"]))
    seeds = cfg.get("sgd_seeds", 1)
    for m in cfg["sgd_ms"]:
        # each m runs twice: summed and averaged mini-batch loss
        runs["fig_8"].append(("sgd", dict(N=cfg["sgd_N"], d=cfg["sgd_d"], m=m), cfg["sgd_steps"], 2 * seeds))
    for _lr in cfg["sgd_lrs"]:
        for m in cfg["sgd_phase_ms"]:
            runs["fig_8"].append(("sgd", dict(N=cfg.get("sgd_phase_N", cfg["sgd_N"]), d=cfg["sgd_d"], m=m),
                                  cfg["sgd_phase_steps"], seeds))
    return runs


# Recording times of the timed runs and of the chapter's greedy runs (at most 8 in the chapter).
N_POINTS = 8


def work(kind, kw, length):
    """Work of one run of ``kind`` with keywords ``kw`` (N, d, m[, d_s]) and ``length``."""
    if kind == "sgd":
        return sgd_work(kw["N"], kw["d"], kw["m"], length)
    if kind in ("two_matrix", "one_matrix"):
        return greedy_work(kw["N"], kw["d"], kw["m"], length, d_s=kw.get("d_s"), model=kind,
                           n_points=N_POINTS)
    raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")


def time_run(kind, kw, length, *, seed=0, lr=0.01, repeats=2):
    """Seconds one run takes here, in this process (one core): the best of ``repeats``
    runs after a warm-up run that loads the compiled kernels. Greedy runs record
    ``N_POINTS`` times, as the chapter's do; SGD runs use a small learning rate ``lr``
    so that they do not diverge and stop early."""
    _validate.integer("length", length, low=1, doc="sweeps or steps of the timed run")
    _validate.integer("repeats", repeats, low=1, doc="timed repeats")
    if kind == "sgd":
        p = SGDParams(N=kw["N"], d=kw["d"], m=kw["m"], lr=lr)

        def run(n):
            return sgd(p, n, seed=seed, n_points=2)
    elif kind in ("two_matrix", "one_matrix"):
        p = Params(N=kw["N"], d=kw["d"], m=kw["m"], d_s=kw.get("d_s"), model=kind)

        def run(n):
            return greedy(p, n, seed=seed, n_points=min(N_POINTS, n + 1))
    else:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    run(1)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(length)
        best = min(best, time.perf_counter() - t0)
    return best


def fit_cost(works, seconds):
    """Least-squares fit of seconds = a + b * work, weighted by 1 / seconds (relative
    errors), with a, b >= 0. Returns a dict with ``a`` (s per run), ``b`` (s per unit
    of work) and ``max_rel_residual`` (the largest |fit / measured - 1| of the points,
    the accuracy to quote for an estimate)."""
    w, s = np.asarray(works, float), np.asarray(seconds, float)
    if w.shape != s.shape or len(w) < 2:
        raise ValueError(f"works and seconds must have the same length >= 2; got {w.shape}, {s.shape}")
    if np.any(w <= 0) or np.any(s <= 0):
        raise ValueError("works and seconds must be positive")
    A = np.stack([np.ones_like(w), w], 1) / s[:, None]
    a, b = np.linalg.lstsq(A, np.ones_like(s), rcond=None)[0]
    if a < 0:  # no fixed cost: fit through the origin
        a, b = 0.0, float(np.sum(w / s) / np.sum((w / s) ** 2))
    elif b < 0:
        a, b = float(np.mean(s)), 0.0
    pred = a + b * w
    return {"a": float(a), "b": float(b), "max_rel_residual": float(np.max(np.abs(pred / s - 1)))}


def estimate(runs, fits):
    """Core-seconds of every run of ``runs`` (a list from :func:`chapter_runs`) with the
    fitted costs ``fits`` (kind -> :func:`fit_cost` result)."""
    total = 0.0
    for kind, kw, length, copies in runs:
        f = fits["two_matrix" if kind == "two_matrix" else kind]
        total += copies * (f["a"] + f["b"] * work(kind, kw, length))
    return total


def timing_points(cfg):
    """Corners of a preset's grids at which to time short runs: for each kind, the
    smallest and the largest run (by work per sweep or step) and one in between."""
    runs = [r for section in chapter_runs(cfg).values() for r in section]
    out = {}
    for kind in KINDS:
        mine = sorted({(tuple(sorted(kw.items())), kind) for k, kw, _, _ in runs if k == kind},
                      key=lambda x: work(kind, dict(x[0]), 1))
        if mine:
            pick = [mine[0], mine[len(mine) // 2], mine[-1]]
            out[kind] = [dict(p[0]) for p in dict.fromkeys(pick)]
    return out
