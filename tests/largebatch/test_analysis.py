"""The chapter's derived numbers: exponent fits, budget line, phase agreement, giant steps."""

import numpy as np
import pytest

from tsdyn import largebatch as lb
from tsdyn.largebatch import analysis, theory


def test_fit_theta_recovers_a_known_exponent_with_and_without_the_log():
    ds = np.array([64, 128, 256, 512, 1024.0])
    T3 = 5.0 * ds ** 0.7
    assert analysis.fit_theta(ds, T3, ell=3, eta=0.5)["slope"] == pytest.approx(0.7, abs=1e-12)
    T2 = 5.0 * ds ** 0.3 * np.log(0.5 * np.sqrt(ds))
    assert analysis.fit_theta(ds, T2, ell=2, eta=0.5)["slope"] == pytest.approx(0.3, abs=1e-12)
    mid, loc = analysis.local_theta(ds, T2, ell=2, eta=0.5)
    np.testing.assert_allclose(loc, 0.3, atol=1e-12)
    np.testing.assert_allclose(mid, np.sqrt(ds[1:] * ds[:-1]))
    with pytest.raises(ValueError, match="T must be finite"):
        analysis.fit_theta(ds, np.r_[T3[:-1], np.inf], ell=3, eta=0.5)
    with pytest.raises(ValueError, match="must be an integer >= 2"):
        analysis.fit_theta(ds, T3, ell=1, eta=0.5)


def test_budget_line_is_where_the_linear_drift_uses_the_budget():
    d, budget, g0, eta = 128, 800, 0.15, 0.5
    delta = analysis.budget_delta(d, budget, g0, eta)
    gamma = g0 * d ** -delta
    assert np.log(eta * np.sqrt(d)) / (2 * gamma) == pytest.approx(budget)


def test_phase_agreement():
    frac = np.array([[0.0, 0.5], [1.0, 0.34]])
    assert analysis.phase_agreement(frac, [[False, True], [True, True]]) == 0.75
    with pytest.raises(ValueError, match="differ in shape"):
        analysis.phase_agreement(frac, [True])


def test_giant_step_overlap_is_the_theory_map_at_huge_gamma():
    """Correlation loss, d -> infinity map at gamma = 1e8: m' = A / sqrt(A^2 + (d/n_b) E F^2 + B^2)
    and B = E[F lambda] is O(m^2), so the formula holds to O(m^4) at m = 0.05."""
    p = lb.Params(d=64, mu=2.0, gamma0=1e8, target="he2", activation="he2", loss="correlation")
    m = 0.05
    mom = theory.moments(p, np.array([[m]]), np.eye(1))
    pred = analysis.giant_step_overlap(mom["F_nu"][0, 0], p.d / p.n_b * mom["FF"][0, 0])
    got = theory.step_map(p, np.array([[m]]), np.eye(1), finite_d=False)[0][0, 0]
    assert got == pytest.approx(pred, rel=1e-4)
