"""The DMFT chapter runs at quick scale and its glued agreement figures hold."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402

NOTEBOOK = ROOT / "book" / "03_dmft.ipynb"


@pytest.fixture(scope="module")
def glued(tmp_path_factory):
    out = tmp_path_factory.mktemp("dmft") / "03_dmft.ipynb"
    chapters.execute(NOTEBOOK, out, {"scale": "quick"})
    return chapters.read_glue(out)


@pytest.mark.slow
def test_chapter_agreement_figures(glued):
    g = glued
    # DMFT vs simulations (both Monte Carlo errors combined): below the 95% quantile of the
    # largest |t| of that many deviations, plus 1 for the O(1/d) bias at d = 400.
    assert g["two_max_z"] < g["two_z95"] + 1
    assert g["three_max_z"] < g["three_z95"] + 1
    # The yardstick's degrees of freedom are those of the less precise error bar: with at
    # least 6 DMFT seeds and 6 training sets, 5. The root-mean-square deviation of the
    # two-cluster curves is that of t variables (sqrt(5/3) = 1.29 for 5 dof), within a
    # factor 2 (sampling spread of an rms over correlated time points, plus O(1/d) bias).
    assert g["two_dof"] >= 5
    assert g["two_rms_z"] < 2 * g["rms_t_expected"]
    # Persistent SGD -> SGD: the gap shrinks monotonically as tau decreases, and at
    # tau = eta/b it is below a third of the longest-persistence gap.
    assert g["tau_monotone"] == 1
    assert g["tau_gap_smallest"] < g["tau_gap_largest"] / 3
    # Square loss: DMFT vs exact is Monte Carlo error only (dt = eta): at n_samples = 1500,
    # ~4 standard errors of m and C (about 1% of values of order 1, see test_theory).
    assert g["square_dmft_vs_exact"] < 0.05
    # GD at d = 400 vs the exact solution: within the 95% quantile of the largest of ~16
    # |t| deviations with 5 degrees of freedom (about 4.8).
    assert g["square_sim_max_z"] < 4.8
    # The solver's numerical error is below the plotted differences between batch sizes.
    assert g["conv_gap_dt"] < g["conv_gap_b"] / 3
    assert g["conv_gap_ns"] < g["conv_gap_b"] / 3


@pytest.mark.slow
def test_chapter_runtime_at_quick_scale(glued):
    """DESIGN: a chapter at quick scale runs in at most 3 minutes on 2 cores (with the rest
    of the test suite running beside it, allow 2x)."""
    assert glued["runtime_s"] < 2 * 180


def test_bad_parameter_fails_in_the_first_cells(tmp_path):
    import papermill

    with pytest.raises(papermill.PapermillExecutionError,
                       match=r"b \(mean batch fraction\) must be a finite number in \(0.0, 1.0\]; got 1.5") as info:
        chapters.execute(NOTEBOOK, tmp_path / "bad.ipynb", {"two_bs": [1.5]})
    assert info.value.exec_count <= 3  # the parameters, the injected ones, the checks
