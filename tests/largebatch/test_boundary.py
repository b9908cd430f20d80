"""The lower edge of the learning region at growing d: the asymptotic edge, the drift time that sets the
runs' budget, and one measured edge against the theory's finite-d noise root."""

import numpy as np
import pytest

from tsdyn.largebatch import analysis, experiments, theory


def test_asymptotic_edge_is_the_noise_line_or_locality():
    assert theory.asymptotic_boundary(3, 1.0) == 0.5  # noise line above locality
    assert theory.asymptotic_boundary(3, 1.75) == 0.0  # locality above the noise line -1/4
    assert theory.asymptotic_boundary(3, 1.75, "correlation") == -0.25  # no locality for the correlation loss
    assert theory.asymptotic_boundary(3, 2.25, "spherical") == -np.inf  # giant steps: every delta learns
    with pytest.raises(ValueError, match="variant must be"):
        theory.asymptotic_boundary(3, 1.0, "adam")
    with pytest.raises(ValueError, match="must be an integer >= 2"):
        theory.asymptotic_boundary(1, 1.0)


def test_drift_time_is_the_noise_free_recursion_without_the_normaliser():
    """At a batch of d^3 samples (noise term gamma^2 d / n_b ~ 1e-12) and a small step the deterministic
    recursion is the drift alone, dm/dt = l gamma m^(l-1) (1 - m^2): its time to eta is drift_time plus
    the normaliser's share artanh(eta) / (l gamma) (l = 3). The discrete map differs from that ODE by
    O(gamma) relative (gamma ~ 1e-3 here): 0.5% allows five times that."""
    d, eta = 1024, 0.5
    p = experiments.scaling_params(d=d, ell=3, mu=3.0, delta=1.0, variant="correlation", gamma0=1.0, eta=eta)
    T = theory.recovery_time(p, m0=p.m0, fractional=True, max_steps=10 ** 5)
    pred = analysis.drift_time(d, p.gamma, eta, 3) + np.arctanh(eta) / (3 * p.gamma)
    assert abs(T - pred) / pred < 0.005
    # the budget line is where drift_time uses up the budget (its inverse)
    de = analysis.budget_delta(d, 700, 0.04, eta, 3)
    assert analysis.drift_time(d, 0.04 * d ** -de, eta, 3) == pytest.approx(700)
    with pytest.raises(ValueError, match="gamma"):
        analysis.drift_time(d, 0.0, eta, 3)


@pytest.mark.parametrize("d", [512, 8192])
def test_boundary_budget_keeps_the_budget_line_above_the_asymptotic_edge(d):
    """The budget is factor x the drift time at the asymptotic edge, so its budget line lies
    ln(factor) / ln d above that edge (up to the rounding of the budget to whole steps)."""
    for mu, factor in ((1.5, 2.0), (1.75, 4.0), (1.0, 2.0)):
        b = experiments.boundary_budget(d=d, ell=3, mu=mu, gamma0=0.04, factor=factor)
        line = analysis.budget_delta(d, b, 0.04, 0.5, 3)
        assert line - theory.asymptotic_boundary(3, mu) == pytest.approx(np.log(factor) / np.log(d),
                                                                         abs=np.log1p(1 / b) / np.log(d))


def test_sgd_lower_edge_lies_just_below_the_theory_root():
    """Projected SGD, He3, mu = 7/4, d = 2048 (central-limit sampler, n_b = 2.5e6): the delta at which
    half of the runs recover (logistic fit over 10 offsets x 12 runs) lies below the theory's noise root
    (fluctuations carry runs over the barrier), by less than the width ln(3)/ln d = 0.14 of that blur;
    measured -0.03 +- 0.005 (chapter, quick preset). The bounds are the blur's and 0 plus 3 bootstrap
    errors."""
    offsets = np.round(np.arange(-0.09, 0.001, 0.01), 3)
    rec = np.array([[experiments.boundary_run(seed=100 * i + s, d=2048, ell=3, mu=1.75, offset=float(o), gamma0=0.04,
                                              n0=4.0, clt_min_nb=2 ** 15)["recovered"] for s in range(12)]
                    for i, o in enumerate(offsets)])
    r = experiments.boundary_run(seed=0, d=2048, ell=3, mu=1.75, offset=0.0, gamma0=0.04, n0=4.0, clt_min_nb=2 ** 15)
    assert r["n_b"] > 2 ** 15 and r["delta"] == r["root"]
    half, reps = analysis.half_recovery_delta(r["root"] + offsets, rec, n_boot=200)
    se = np.nanstd(reps, ddof=1)
    assert r["root"] - np.log(3) / np.log(2048) - 3 * se < half < r["root"] + 3 * se


def test_half_recovery_edge_error_covers_an_unresolved_step():
    """A transition sharper than the grid (none recover at one delta, all at the next): resampling the runs
    cannot move the fit, so the error is the grid's, h / sqrt(12); a transition spread over several grid
    points (logistic of width 3h, 40 runs per point) keeps the bootstrap error alone, and its half point lies
    within 3 of those errors of the true one (false alarm ~3e-3)."""
    deltas = np.arange(0.0, 0.1, 0.01)
    sharp = np.zeros((deltas.size, 8), bool)
    sharp[5:] = True
    r = analysis.half_recovery_edge(deltas, sharp, n_boot=100)
    assert r["se_grid"] == pytest.approx(0.01 / np.sqrt(12)) and r["se"] >= r["se_grid"]
    assert 0.04 <= r["half"] <= 0.05
    rng = np.random.default_rng(3)
    p = 1 / (1 + np.exp(-(deltas - 0.047) / 0.03))
    smooth = rng.random((deltas.size, 40)) < p[:, None]
    r = analysis.half_recovery_edge(deltas, smooth, n_boot=300, seed=1)
    assert r["se_grid"] == 0.0 and r["se"] == r["se_boot"] > 0
    assert abs(r["half"] - 0.047) < 3 * r["se"]
