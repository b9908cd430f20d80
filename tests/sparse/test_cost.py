"""The cost model of the chapter's grids: work counts, the fit, the estimate."""

import numpy as np
import pytest

from tsdyn import presets, sparse
from tsdyn.sparse import cost


def test_work_counts():
    # two matrices, d = d_s = 2: N m (4 + 8 + 4 + 1) per sweep
    assert cost.greedy_work(10, 2, 3, 5) == 5 * 10 * 3 * 17
    # mismatched d = 2, d_s = 3: N m (9 + 12 + 4 + 1)
    assert cost.greedy_work(10, 2, 3, 5, d_s=3) == 5 * 10 * 3 * 26
    assert cost.greedy_work(10, 2, 3, 5, model="one_matrix") == 5 * 10 * 3 * 9
    # validations: n_val 30 through 2 N d_s weights, or 1024 through N d
    assert cost.greedy_work(10, 2, 3, 5, n_points=4) == 5 * 10 * 3 * 17 + 4 * 30 * 2 * 10 * 2
    assert cost.greedy_work(10, 2, 3, 5, model="one_matrix", n_points=4) == 5 * 10 * 3 * 9 + 4 * 1024 * 10 * 2
    assert cost.sgd_work(4, 2, 8, 10) == 10 * (2 * 16 * 8 + 16 + 4 * 8 * 3)
    with pytest.raises(ValueError, match="model must be"):
        cost.greedy_work(10, 2, 3, 5, model="dense")


def test_erf_batch_sizes():
    assert cost.erf_batch_sizes(16, 2, [0.01, 0.1, 0.12, 0.5]) == [1, 3, 4, 16]


def test_fit_recovers_a_known_cost_and_estimates_a_grid():
    works = np.array([1e5, 1e6, 1e7, 3e7])
    fit = cost.fit_cost(works, 0.05 + 2e-8 * works)
    assert fit["a"] == pytest.approx(0.05) and fit["b"] == pytest.approx(2e-8)
    assert fit["max_rel_residual"] < 1e-9
    runs = [("two_matrix", dict(N=10, d=2, m=3), 5, 4), ("sgd", dict(N=4, d=2, m=8), 10, 2)]
    fits = {"two_matrix": fit, "sgd": {"a": 1.0, "b": 0.0}}
    expected = 4 * (0.05 + 2e-8 * cost.work("two_matrix", dict(N=10, d=2, m=3), 5)) + 2 * 1.0
    assert cost.estimate(runs, fits) == pytest.approx(expected)
    with pytest.raises(ValueError, match="same length >= 2"):
        cost.fit_cost([1.0], [1.0])


def test_chapter_runs_count_every_run_of_the_quick_preset():
    cfg = presets.load("sparse", "quick", {})
    runs = cost.chapter_runs(cfg)
    n = {k: sum(r[3] for r in v) for k, v in runs.items()}
    assert n["figs_1_3"] == (len(cfg["Ns"]) * len(cfg["ds"]) * len(cfg["ms"]) * cfg["seeds"]
                             + len(cfg["fss_Ns"]) * len(cfg["fss_ms"]) * cfg["fss_seeds"]
                             + len(cfg["big_ds"]) * len(cfg["big_ms"]) * cfg["big_seeds"])
    n_fine = sum(len(g) for g in cfg["mm_fss_ms"][:len(cfg["mm_fss_pairs"])])
    assert n["figs_4_5"] == (len(cfg["mm_pairs"]) * len(cfg["mm_ms"]) * cfg["mm_seeds"]
                             + len(cfg["mm_fss_Ns"]) * n_fine * cfg["mm_fss_seeds"]
                             + len(cfg["mm_fss_Ns"][-2:]) * len(cfg["mm_fss_long_ms"]) * cfg["mm_fss_seeds"])
    n_erf = sum(len(cost.erf_batch_sizes(N, d, cfg["erf_ratios"])) for N in cfg["erf_Ns"] for d in cfg["erf_ds"])
    assert n["figs_6_7"] == n_erf * cfg["erf_seeds"]
    seeds = cfg.get("sgd_seeds", 1)
    assert n["fig_8"] == (2 * len(cfg["sgd_ms"]) + len(cfg["sgd_lrs"]) * len(cfg["sgd_phase_ms"])) * seeds
    points = cost.timing_points(cfg)
    assert set(points) == {"two_matrix", "one_matrix", "sgd"}


def test_time_run_is_positive_and_grows_with_the_length():
    # The long run does ~500x the work of the short one (~0.1 s against the ~10 ms fixed
    # cost of a run), so the order holds even on a loaded machine; at N = 20, m = 4 the
    # fixed cost dominated both and the order was left to timing noise.
    kw = dict(N=50, d=4, m=32)
    short = cost.time_run("two_matrix", kw, 2, repeats=3)
    long = cost.time_run("two_matrix", kw, 1000, repeats=3)
    assert 0 < short < long
    with pytest.raises(ValueError, match="kind must be one of"):
        cost.time_run("dense", kw, 2)
