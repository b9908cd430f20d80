"""DMFT against finite-d simulations, and persistent SGD approaching SGD."""

import numpy as np
import pytest

from tsdyn import dmft


def _agree(p, t_max, *, d, sim_seeds, dmft_seeds, n_samples, variables, z_max=4.5):
    """Simulations at dimension d (sim_seeds training sets) against the DMFT (dmft_seeds
    Monte Carlo seeds), every 5th time point: |sim - DMFT| below ``z_max`` combined standard
    errors plus the finite-d bias of the means, O(1/d) relative (allowed as |DMFT|/d on
    top of z_max standard errors). Returns the deviations in combined standard errors and
    their Welch degrees of freedom."""
    sim = dmft.simulate_seeds(p, t_max, d=d, seeds=sim_seeds)
    th, th_se, sols = dmft.solve_seeds(p, t_max, seeds=dmft_seeds, n_samples=n_samples)
    assert all(bool(s.converged) for s in sols)
    sl = slice(5, None, 5)
    for v in variables:
        ms, ss, md, sd = sim[v].values, sim[v + "_se"].values, th[v].values, th_se[v].values
        z = np.abs(ms - md)[sl] / (np.hypot(ss, sd)[sl] + np.abs(md[sl]) / d / z_max)
        assert np.all(z < z_max), (v, z)
    return (*dmft.deviations(sim, th, th_se, n_theory=dmft_seeds, variables=variables), th)


def test_dmft_matches_simulation_two_cluster_logistic_sgd():
    """Two-cluster, logistic loss, SGD with b = 0.3 at eta = dt = 0.2 (the DMFT is then the
    d -> infinity limit of this very algorithm). Simulations: d = 400, 6 seeds; DMFT: 3
    Monte Carlo seeds. 4.5 combined standard errors: the largest of ~30 |t|-like
    deviations with 2 to 7 Welch degrees of freedom exceeds it with probability of a
    few percent; plus the O(1/d) bias."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
    _agree(p, 6.0, d=400, sim_seeds=6, dmft_seeds=3, n_samples=2000,
           variables=("m", "C_diag", "eg", "train_loss", "train_acc"))


@pytest.mark.parametrize("model, extra", [("two-cluster", {}), ("three-cluster", dict(L=0.7))])
def test_gradient_flow_dmft_matches_simulation_square_loss(model, extra):
    """Full-batch GD with the square loss (three-cluster: non-convex in w), d = 300, 4 seeds,
    DMFT 2 seeds: 4.5 combined standard errors plus 1/d relative bias (as above)."""
    p = dmft.Params(alpha=2.0, Delta=0.2, b=1.0, eta=0.1, loss="square", model=model, R0=0.5,
                    m0=0.1, **extra)
    _agree(p, 3.0, d=300, sim_seeds=4, dmft_seeds=2, n_samples=1500,
           variables=("m", "C_diag", "train_loss"))


def test_persistent_sgd_approaches_sgd_as_tau_decreases():
    """DMFT of persistent SGD (dt = eta/2, as in the chapter) with persistence tau, against
    discrete SGD at eta (dt = eta): the gap in eg and in the training loss shrinks as tau
    decreases to eta/b (where the chain has the correlation time eta of fresh batches),
    and there it is a small fraction of the SGD-vs-full-batch difference. Same Monte Carlo
    seed for all solves (common random numbers: differences are not MC noise)."""
    b, eta, t_max = 0.3, 0.2, 6.0
    base = dict(alpha=2.0, Delta=0.5, b=b, eta=eta, R0=0.01)
    sgd = dmft.solve(dmft.Params(**base), t_max, n_samples=1500, seed=0)
    gd = dmft.solve(dmft.Params(**{**base, "b": 1.0}), t_max, dt=eta, n_samples=1500, seed=0)
    gaps = []
    for factor in (8.0, 3.0, 1.0):
        tau = factor * eta / b
        ps = dmft.solve(dmft.Params(**base, tau=tau), t_max, dt=eta / 2, n_samples=1500, seed=0)
        gaps.append(np.max(np.abs(ps.train_loss.values[::2] - sgd.train_loss.values)))
    ref = np.max(np.abs(gd.train_loss.values - sgd.train_loss.values))
    assert gaps[0] > gaps[1] > gaps[2], gaps
    assert gaps[2] < 0.25 * ref, (gaps, ref)


def test_persistent_sgd_at_dt_eta_is_discrete_sgd():
    """At tau = eta/b and dt = eta the persistent chain leaves the batch with probability
    (1-b) eta/(b tau) = 1 - b and enters it with probability b per step: each step's batch
    is a fresh Bernoulli(b), i.e. plain SGD. Both the simulation and the DMFT give the same
    numbers for (tau = eta/b) and (tau = None) up to float rounding of the probabilities."""
    base = dict(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
    sgd, ps = dmft.Params(**base), dmft.Params(**base, tau=0.2 / 0.3)
    a, b = dmft.simulate(sgd, 4.0, d=100, seed=1), dmft.simulate(ps, 4.0, d=100, seed=1)
    np.testing.assert_allclose(a.train_loss.values, b.train_loss.values, rtol=1e-12)
    sa, sb = dmft.solve(sgd, 4.0, n_samples=300), dmft.solve(ps, 4.0, n_samples=300)
    np.testing.assert_allclose(sa.train_loss.values, sb.train_loss.values, rtol=1e-9)


def test_persistent_sgd_dmft_matches_simulation():
    """Persistent SGD (tau = 2, b = 0.4) at eta = dt = 0.1: simulation at d = 300 (4 seeds)
    against the DMFT (2 seeds), same criterion as above."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.4, tau=2.0, eta=0.1, R0=0.01)
    _agree(p, 4.0, d=300, sim_seeds=4, dmft_seeds=2, n_samples=1500,
           variables=("m", "C_diag", "train_loss"))


def test_dmft_matches_simulation_three_cluster_logistic_sgd():
    """Three-cluster model (labels by |c|, not linearly separable; loss non-convex in w),
    logistic loss, SGD with b = 0.3 at eta = dt = 0.2, the talk's Delta = 0.05, L = 0.7,
    R0 = 1, from m0 = 0.05 (m = 0 is a fixed point), up to the chapter's t_max = 20 (the
    quick preset), while m grows from 0.05 to ~2 and eg falls to its plateau.
    Simulations: d = 300, 6 seeds; DMFT: 6 Monte Carlo seeds (m grows from m0 at a rate the
    Monte Carlo noise of the samples perturbs, so a single seed's error bar is not enough).
    Every 5th time point: 4.5 combined standard errors plus the O(1/d) bias (as for the
    two-cluster test); and the root-mean-square deviation, in combined standard errors,
    within twice that of pure statistical error (t variables with the points' Welch
    degrees of freedom; the factor 2 covers the sampling spread of an rms over strongly
    correlated time points, and the O(1/d) bias), as the chapter asserts for Section 1."""
    p = dmft.Params(alpha=2.0, Delta=0.05, b=0.3, eta=0.2, R0=1.0, model="three-cluster", L=0.7,
                    m0=0.05)
    z, dof, th = _agree(p, 20.0, d=300, sim_seeds=6, dmft_seeds=6, n_samples=1500,
                        variables=("m", "C_diag", "eg", "train_loss", "train_acc"))
    # the curves move: m grows several-fold and eg drops, so agreement is not trivial
    assert th.m.values[-1] > 10 * p.m0
    assert np.sqrt(np.mean(z ** 2)) < 2 * dmft.rms_t_expected(dof), (np.sqrt(np.mean(z ** 2)), dof)
