"""DMFT against finite-d simulations, and persistent SGD approaching SGD."""

import numpy as np
import pytest

from tsdyn import dmft


def _mean_se(runs, v):
    vals = np.array([r[v].values for r in runs])
    return vals.mean(0), vals.std(0, ddof=1) / np.sqrt(len(runs))


def test_dmft_matches_simulation_two_cluster_logistic_sgd():
    """Two-cluster, logistic loss, SGD with b = 0.3 at eta = dt = 0.2 (the DMFT is then the
    d -> infinity limit of this very algorithm). Simulations: d = 400, 6 seeds; DMFT: 3
    Monte Carlo seeds. Every 5th time point, |sim - DMFT| must be below 4.5 combined
    standard errors (the largest of ~6 |t|-like deviations with 5 degrees of freedom
    exceeds 4.5 with probability about 3%), plus the finite-d bias of the means, O(1/d) =
    0.0025 relative."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
    t_max = 6.0
    sims = [dmft.simulate(p, t_max, d=400, seed=s) for s in range(6)]
    sols = [dmft.solve(p, t_max, n_samples=2000, seed=s) for s in range(3)]
    for v in ("m", "C_diag", "eg", "train_loss", "train_acc"):
        ms, ss = _mean_se(sims, v)
        md, sd = _mean_se(sols, v)
        sl = slice(5, None, 5)
        z = np.abs(ms - md)[sl] / (np.hypot(ss, sd)[sl] + 0.0025 * np.abs(md[sl]) / 4.5)
        assert np.all(z < 4.5), (v, z)


@pytest.mark.parametrize("model, extra", [("two-cluster", {}), ("three-cluster", dict(L=0.7))])
def test_gradient_flow_dmft_matches_simulation_square_loss(model, extra):
    """Full-batch GD with the square loss (three-cluster: non-convex in w), d = 300, 4 seeds,
    DMFT 2 seeds: 4.5 combined standard errors plus 1/d relative bias (as above)."""
    p = dmft.Params(alpha=2.0, Delta=0.2, b=1.0, eta=0.1, loss="square", model=model, R0=0.5,
                    m0=0.1, **extra)
    t_max = 3.0
    sims = [dmft.simulate(p, t_max, d=300, seed=s) for s in range(4)]
    sols = [dmft.solve(p, t_max, n_samples=1500, seed=s) for s in range(2)]
    for v in ("m", "C_diag", "train_loss"):
        ms, ss = _mean_se(sims, v)
        md, sd = _mean_se(sols, v)
        sl = slice(5, None, 5)
        z = np.abs(ms - md)[sl] / (np.hypot(ss, sd)[sl] + np.abs(md[sl]) / 300 / 4.5)
        assert np.all(z < 4.5), (v, z)


def test_persistent_sgd_approaches_sgd_as_tau_decreases():
    """DMFT of the stochastic gradient flow (dt = eta/4) with persistence tau, against
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
        ps = dmft.solve(dmft.Params(**base, tau=tau), t_max, dt=eta / 4, n_samples=1500, seed=0)
        gaps.append(np.max(np.abs(ps.train_loss.values[::4] - sgd.train_loss.values)))
    ref = np.max(np.abs(gd.train_loss.values - sgd.train_loss.values))
    assert gaps[0] > gaps[1] > gaps[2], gaps
    assert gaps[2] < 0.25 * ref, (gaps, ref)


def test_persistent_sgd_dmft_matches_simulation():
    """Persistent SGD (tau = 2, b = 0.4) at eta = dt = 0.1: simulation at d = 300 (4 seeds)
    against the DMFT (2 seeds), same criterion as above."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.4, tau=2.0, eta=0.1, R0=0.01)
    t_max = 4.0
    sims = [dmft.simulate(p, t_max, d=300, seed=s) for s in range(4)]
    sols = [dmft.solve(p, t_max, n_samples=1500, seed=s) for s in range(2)]
    for v in ("m", "C_diag", "train_loss"):
        ms, ss = _mean_se(sims, v)
        md, sd = _mean_se(sols, v)
        sl = slice(5, None, 5)
        z = np.abs(ms - md)[sl] / (np.hypot(ss, sd)[sl] + np.abs(md[sl]) / 300 / 4.5)
        assert np.all(z < 4.5), (v, z)


def test_dmft_matches_simulation_three_cluster_logistic_sgd():
    """Three-cluster model (labels by |c|, not linearly separable; loss non-convex in w),
    logistic loss, SGD with b = 0.3 at eta = dt = 0.2, the talk's Delta = 0.05, L = 0.7,
    R0 = 1, from m0 = 0.05 (m = 0 is a fixed point). Simulations: d = 300, 6 seeds; DMFT: 4
    Monte Carlo seeds (m grows from m0 at a rate the Monte Carlo noise of the samples
    perturbs, so a single seed's error bar is not enough). Every 5th time point up to
    t = 6 (while m grows from 0.05 to ~0.4), |sim - DMFT| below 4.5 combined standard
    errors plus the O(1/d) relative bias of the means (as for the two-cluster test)."""
    p = dmft.Params(alpha=2.0, Delta=0.05, b=0.3, eta=0.2, R0=1.0, model="three-cluster", L=0.7,
                    m0=0.05)
    t_max = 6.0
    sims = [dmft.simulate(p, t_max, d=300, seed=s) for s in range(6)]
    sols = [dmft.solve(p, t_max, n_samples=1500, seed=s) for s in range(4)]
    assert all(bool(s.converged) for s in sols)
    # the curves move: m grows several-fold and eg drops, so agreement is not trivial
    assert sols[0].m.values[-1] > 3 * p.m0
    for v in ("m", "C_diag", "eg", "train_loss", "train_acc"):
        ms, ss = _mean_se(sims, v)
        md, sd = _mean_se(sols, v)
        sl = slice(5, None, 5)
        z = np.abs(ms - md)[sl] / (np.hypot(ss, sd)[sl] + np.abs(md[sl]) / 300 / 4.5)
        assert np.all(z < 4.5), (v, z)
