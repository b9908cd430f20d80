"""Finite-d simulation: determinism, initial state, the batch-indicator process."""

import numpy as np
import pytest

from tsdyn import dmft


def test_same_seed_bit_identical_and_initial_state():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, tau=1.0, eta=0.2, R0=0.3, m0=0.2)
    a = dmft.simulate(p, 2.0, d=100, seed=7)
    b = dmft.simulate(p, 2.0, d=100, seed=7)
    c = dmft.simulate(p, 2.0, d=100, seed=8)
    for v in ("m", "C_diag", "train_loss", "train_acc"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
    assert not np.array_equal(a.m.values, c.m.values)
    # "fixed" initialisation: m(0) = m0 and C(0) = m0^2 + R0 exactly (float rounding)
    assert a.m.values[0] == pytest.approx(0.2, abs=1e-12)
    assert a.C_diag.values[0] == pytest.approx(0.04 + 0.3, abs=1e-12)
    assert len(a.t) == 11 and a.t.values[-1] == pytest.approx(2.0)
    assert not bool(a.diverged)


def test_divergence_is_an_outcome():
    # square loss, eta far above 2/lambda_max of the Hessian: GD blows up
    p = dmft.Params(alpha=2.0, Delta=1.0, loss="square", model="teacher", eta=3.0, R0=1.0)
    r = dmft.simulate(p, 600.0, d=50, seed=0)
    assert bool(r.diverged) and np.isfinite(float(r.t_diverged))
    assert np.isnan(r.m.values[-1])


@pytest.mark.parametrize("b, tau, eta", [(0.3, 2.0, 0.1), (0.7, 0.5, 0.05), (0.2, None, 0.1)])
def test_batch_indicator_mean_and_correlation(b, tau, eta):
    """<s> = b and <s_k s_k+l> - b^2 = b(1-b)(1 - eta/(b tau))^l (derivation E3)."""
    p = dmft.Params(alpha=1.0, Delta=1.0, b=b, tau=tau, eta=eta)
    n, steps = 4000, 200
    s = dmft.batch_indicators(p, steps, n, seed=3).astype(float)
    # mean over n * (steps+1) correlated draws: the n chains are independent, so the
    # standard error comes from the spread of the per-chain time averages.
    per_chain = s.mean(axis=0)
    se = per_chain.std(ddof=1) / np.sqrt(n)
    assert abs(per_chain.mean() - b) < 4 * se
    x = s - b
    decay = 1.0 - eta / (b * p.tau_eff)
    for lag in (1, 3, 10):
        prod = (x[:-lag] * x[lag:]).mean(axis=0)  # per-chain lagged products
        est, err = prod.mean(), prod.std(ddof=1) / np.sqrt(n)
        # 4 standard errors of the estimate (b itself is known, not estimated)
        assert abs(est - b * (1 - b) * decay ** lag) < 4 * err
    # leave probabilities per step (mean time out of the batch tau, in it b tau/(1-b)):
    # the maximum-likelihood estimate, transitions / steps spent in the state, has the
    # binomial variance p(1-p)/visits for a Markov chain; 4 standard errors.
    if tau is not None:
        for state, p_leave in ((0.0, eta / tau), (1.0, (1 - b) * eta / (b * tau))):
            here = s[:-1] == state
            visits = here.sum()
            est = (here & (s[1:] != state)).sum() / visits
            assert abs(est - p_leave) < 4 * np.sqrt(p_leave * (1 - p_leave) / visits)


def test_full_batch_is_gradient_descent():
    """b = 1: every sample always in the batch; the run is deterministic given the data."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=1.0, eta=0.1)
    s = dmft.batch_indicators(p, 10, 50, seed=0)
    assert s.min() == 1


@pytest.mark.parametrize("b, tau, lam", [(0.3, 2.0, 0.0), (0.4, None, 0.05), (1.0, None, 0.0)])
def test_simulate_uses_the_tested_batch_chain(b, tau, lam, monkeypatch):
    """simulate's steps are those of a plain NumPy SGD loop driven by the paths of
    :func:`dmft.batch_indicators` (the chain tested above) drawn from simulate's batch
    stream: the simulation has no batch logic of its own. Small blocks (7 steps) so that
    the chain is carried across blocks. Equal up to float rounding (1e-12 relative)."""
    import tsdyn.dmft.simulate  # noqa: F401
    import sys

    sim_mod = sys.modules["tsdyn.dmft.simulate"]
    p = dmft.Params(alpha=1.5, Delta=0.5, b=b, tau=tau, eta=0.1, lam=lam, R0=0.3, m0=0.1)
    d, steps, seed = 40, 23, 5
    monkeypatch.setattr(sim_mod, "_BLOCK_NUMBERS", 7 * int(round(p.alpha * d)))
    got = dmft.simulate(p, steps * p.eta, d=d, seed=seed)
    data_ss, init_ss, batch_ss = sim_mod._streams(np.random.SeedSequence(seed), 3)
    v, X, c, y = sim_mod.training_set(p, d, np.random.default_rng(data_ss))
    w = sim_mod.initial_weights(p, v, np.random.default_rng(init_ss))
    n = X.shape[0]
    S = dmft.batch_indicators(p, steps, n, seed=batch_ss) if b < 1 else np.ones((steps + 1, n))
    m = []
    for k in range(steps):
        r = X @ w / np.sqrt(d)
        m.append(w @ v / d)
        grad = X.T @ (S[k] * (-y / (1 + np.exp(y * r)))) / np.sqrt(d)  # logistic loss
        w = w - p.eta * (p.lam * w + grad)
    m.append(w @ v / d)
    np.testing.assert_allclose(got.m.values, m, rtol=1e-12, atol=1e-14)
    assert np.ptp(m) > 1e-3  # the weights moved
