"""A chapter run on a real Dask cluster gives the glued numbers of a local run, bit for bit.

Seeds are spawned by grid index in ``tsdyn.sweep.run``, so where the points are computed
cannot change a result. The chapter is run twice through papermill, with small parameter
overrides (CI time; the full quick scale adds nothing to what is tested): once with its
local process pool, once with ``dask_scheduler`` set to the address of a
``dask.distributed.LocalCluster`` (two worker processes on 127.0.0.1). Every glued value
must be equal, except those measured from the clock.
"""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402

# The chapter and its small overrides (any chapter with a `dask_scheduler` parameter
# whose sweeps go through tsdyn.sweep; rename here if the chapter's parameters change).
CHAPTER = ROOT / "book" / "05_sparse.ipynb"
SMALL = {
    "Ns": [16, 32], "ds": [2, 3], "ms": [2, 4, 8, 16], "sweeps": 32, "seeds": 2,
    "fss_Ns": [16, 32], "fss_ms": [6, 8, 10], "fss_seeds": 2,
    "mm_N": 16, "mm_pairs": [[2, 2], [2, 3]], "mm_ms": [2, 8, 32], "mm_seeds": 2,
    "mm_fss_Ns": [16, 32], "mm_fss_pairs": [[2, 3]], "mm_fss_ms": [[6, 8, 10]], "mm_fss_sweeps": 64,
    "mm_fss_seeds": 2, "mm_fss_long_ms": [8], "mm_fss_long_sweeps": 128,
    "big_N": 16, "big_ds": [2], "big_ms": [8, 32], "big_sweeps": 64, "big_seeds": 2,
    "abs_pairs": [[2, 3]], "abs_Ns": [8, 12, 16], "abs_ms": [[6, 8, 32]], "abs_budget": 128, "abs_seeds": 2,
    "erf_Ns": [16], "erf_ds": [2], "erf_ratios": [0.1, 0.3, 0.7], "erf_sweeps": 32, "erf_seeds": 2,
    "sgd_N": 8, "sgd_phase_N": 8, "sgd_seeds": 2, "sgd_ms": [1, 16], "sgd_steps": 500,
    "sgd_lrs": [0.1, 1.0], "sgd_phase_ms": [1, 16], "sgd_phase_steps": 200,
}
# glued values that measure wall-clock time (the run's duration, cost estimates)
CLOCK = re.compile(r"runtime|wall|hours|cost|seconds")
MIN_COMPARED = 10  # the comparison must cover the chapter's results, not a handful


@pytest.mark.slow
def test_chapter_on_a_dask_cluster_glues_the_numbers_of_a_local_run(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    local = chapters.read_glue(chapters.execute(CHAPTER, tmp_path / "local.ipynb", SMALL,
                                                execution_timeout=chapters.QUICK_CELL_TIMEOUT_S))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask = chapters.read_glue(chapters.execute(
            CHAPTER, tmp_path / "dask.ipynb", {**SMALL, "dask_scheduler": cluster.scheduler_address},
            execution_timeout=chapters.QUICK_CELL_TIMEOUT_S))
        # the sweeps ran on the cluster (tsdyn.sweep submits `_evaluate` tasks, whose
        # key prefix the scheduler records without the leading underscore)
        assert "evaluate" in cluster.scheduler.task_prefixes
        worker_count = len(cluster.scheduler.workers)
    assert worker_count == 2
    assert set(dask) == set(local)
    compared = sorted(name for name in local if not CLOCK.search(name))
    assert len(compared) >= MIN_COMPARED, compared
    differ = {name: (local[name], dask[name]) for name in compared if dask[name] != local[name]}
    assert not differ, f"glued values differ between the local pool and Dask: {differ}"
