"""The large-batch chapter runs at quick scale and its glued agreement figures hold."""

import pytest

from _chapter import assert_fails_in_first_cells, assert_quick_runtime, glued_fixture

glued = glued_fixture("02_largebatch")


@pytest.mark.slow
def test_chapter_agreement_figures(glued):
    g = glued
    # Hermite coefficients of ReLU, |x|, sign against closed forms: the 1e-6.
    assert g["hermite_max_err"] < 1e-6
    # SGD mean vs the closure within a Student-t quantile (1% family-wise) x s.e. + 1/d at
    # every recorded step of every panel.
    assert g["dyn_worst_ratio"] < 1
    # Finite-d recursion: within 4 s.e. at every d (5 sizes, Bonferroni ~1e-3 each).
    assert g["finite_max_z"] < 4
    # ... and the d -> infinity form is visibly off at the smallest d (the effect shown).
    assert g["finite_inf_z_small_d"] > g["finite_max_z"]
    # Time exponents: within 3 standard errors of the prediction, plus the distance from
    # the prediction of the same fit made to the theory's own T(d) on the same sizes (the
    # pre-asymptotic part at these d, which the simulation shares; nothing is fitted to SGD).
    fits = [k[len("theta_fit_"):] for k in g if k.startswith("theta_fit_")]
    assert len(fits) >= 10  # 4 + 3 batch exponents and 3 variants at quick scale
    for tag in fits:
        fit, se = g[f"theta_fit_{tag}"], g[f"theta_se_{tag}"]
        pred, ode = g[f"theta_pred_{tag}"], g[f"theta_ode_{tag}"]
        assert abs(fit - pred) <= 3 * se + abs(ode - pred), tag
    # Phase diagram: simulations and finite-d dynamics agree away from the blurred
    # boundaries; at d = 128 with 3 runs per point at least 80% of the grid.
    assert g["phase_agree"] >= 0.8


@pytest.mark.slow
def test_chapter_runtime_at_quick_scale(glued):
    assert_quick_runtime(glued)


def test_bad_parameter_fails_in_the_first_cells(tmp_path):
    assert_fails_in_first_cells("02_largebatch", tmp_path, {'dyn_d': 1},
                                r"d \(input dimension\) must be an integer >= 2; got 1")


def test_bad_parameter_fails_in_the_first_cells_2(tmp_path):
    assert_fails_in_first_cells("02_largebatch", tmp_path, {'eta': 1.5},
                                r"eta \(weak-recovery threshold\) must be a finite number in \(0.0, 1.0\)")
