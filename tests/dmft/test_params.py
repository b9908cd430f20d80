"""Bad input raises a ValueError naming the parameter, its value and the allowed range."""

import numpy as np
import pytest

from tsdyn import dmft

BASE = dict(alpha=2.0, Delta=0.5)


@pytest.mark.parametrize("field, value, match", [
    ("alpha", 0.0, r"alpha \(samples per dimension n/d\) must be a finite number in \(0.0, inf\]; got 0.0"),
    ("alpha", -1.0, r"alpha .* got -1.0"),
    ("Delta", 0.0, r"Delta \(cluster noise variance\) must be .* got 0.0"),
    ("b", 0.0, r"b \(mean batch fraction\) must be a finite number in \(0.0, 1.0\]; got 0.0"),
    ("b", 1.5, r"b \(mean batch fraction\) .* got 1.5"),
    ("tau", 0.0, r"tau \(persistence time\) must be .* got 0.0"),
    ("tau", -2.0, r"tau .* got -2.0"),
    ("eta", 0.0, r"eta \(learning rate\) .* got 0.0"),
    ("rho", 1.0, r"rho \(cluster weight\) .* got 1.0"),
    ("lam", -0.1, r"lam \(ridge regularisation\) .* got -0.1"),
    ("loss", "hinge", r"loss must be one of \('logistic', 'square'\); got 'hinge'"),
    ("model", "four-cluster", r"model must be one of .*; got 'four-cluster'"),
    ("L", 0.0, r"L \(three-cluster threshold\) .* got 0.0"),
    ("R0", -1.0, r"R0 \(initial weight variance\) .* got -1.0"),
])
def test_bad_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        dmft.Params(**{**BASE, field: value})


def test_chain_needs_small_step():
    # P(1->0) = (1-b) eta/(b tau) = 1.08 > 1 with the talk's 1/tau = 0.6, eta = 0.2, b = 0.1
    with pytest.raises(ValueError, match=r"eta \(time step\) must be <= min\(tau, b tau/\(1-b\)\)"):
        dmft.Params(**BASE, b=0.1, tau=1 / 0.6, eta=0.2)


def test_teacher_needs_square_loss():
    with pytest.raises(ValueError, match="model 'teacher' has real labels and needs loss 'square'"):
        dmft.Params(**BASE, model="teacher", loss="logistic")


def test_rates_and_sgd_convention():
    p = dmft.Params(**BASE, b=0.25, tau=2.0, eta=0.1)
    enter, leave = p.rates
    assert enter == pytest.approx(0.5) and leave == pytest.approx(0.75 / 0.5)
    assert p.correlation_time == pytest.approx(0.5)
    # plain SGD is the chain with tau = eta/b: P(0->1) = b, P(1->0) = 1 - b
    sgd = dmft.Params(**BASE, b=0.25, eta=0.1)
    assert sgd.switch_probabilities(0.1) == pytest.approx((0.25, 0.75))
    assert sgd.algorithm == "sgd" and p.algorithm == "psgd"


def test_time_step_must_divide_t_max():
    p = dmft.Params(**BASE, eta=0.2)
    with pytest.raises(ValueError, match=r"t_max \(length of the run\) must be a positive multiple of the time step 0.2"):
        dmft.simulate(p, 1.1, d=10, seed=0)
    with pytest.raises(ValueError, match=r"t_max .* multiple of the time step 0.3"):
        dmft.solve(p, 1.0, dt=0.3, n_samples=10)
    with pytest.raises(ValueError, match=r"dt \(time step\) must be a finite number in \(0.0, inf\]; got -0.1"):
        dmft.solve(p, 1.0, dt=-0.1, n_samples=10)


def test_other_bad_arguments():
    p = dmft.Params(**BASE)
    with pytest.raises(ValueError, match=r"d \(dimension\) must be an integer >= 2; got 1"):
        dmft.simulate(p, 1.0, d=1, seed=0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        dmft.simulate(p, 1.0, d=10, seed=-3)
    with pytest.raises(ValueError, match=r"n_samples \(Monte Carlo samples\) must be an integer >= 2; got 1"):
        dmft.solve(p, 1.0, n_samples=1)
    with pytest.raises(ValueError, match=r"damping \(damping\) must be a finite number in \[0.0, 1.0\); got 1.0"):
        dmft.solve(p, 1.0, n_samples=10, damping=1.0)
    with pytest.raises(ValueError, match=r"threads \(numba threads\) must be an integer >= 1; got 0"):
        dmft.solve(p, 1.0, n_samples=10, threads=0)
    with pytest.raises(ValueError, match="params must be a dmft.Params"):
        dmft.solve({"alpha": 2}, 1.0)
    # the chain at the DMFT's step dt must be valid too
    q = dmft.Params(**BASE, b=0.5, tau=0.2, eta=0.1)
    with pytest.raises(ValueError, match=r"dt \(time step\) must be <= min\(tau, b tau/\(1-b\)\) = 0.2"):
        dmft.solve(q, 1.0, dt=0.5, n_samples=10)


def test_talk_convention_of_the_persistence_time():
    """The talk's tau is the mean time *in* the batch, b tau/(1 - b) in our convention:
    tau_for_time_in_batch inverts it, and the simulated chain's leave probability per step
    is eta / (time in batch) (mean sojourn in the batch time_in_batch; 4 binomial errors)."""
    tau = dmft.Params.tau_for_time_in_batch(1 / 0.6, 0.3)
    p = dmft.Params(**BASE, b=0.3, tau=tau, eta=0.2)
    assert tau == pytest.approx(0.7 / 0.3 / 0.6)
    assert p.time_in_batch == pytest.approx(1 / 0.6)
    s = dmft.batch_indicators(p, 400, 2000, seed=1)
    here = s[:-1] == 1
    est = (here & (s[1:] == 0)).sum() / here.sum()
    assert abs(est - 0.2 * 0.6) < 4 * np.sqrt(0.12 * 0.88 / here.sum())
    assert dmft.Params(**BASE, b=1.0).time_in_batch == np.inf
    with pytest.raises(ValueError, match=r"b \(mean batch fraction \(a persistent chain needs b < 1\)\) must"):
        dmft.Params.tau_for_time_in_batch(1.0, 1.0)
    with pytest.raises(ValueError, match=r"time_in \(mean time in the batch\) must"):
        dmft.Params.tau_for_time_in_batch(0.0, 0.5)


def test_training_loss_in_the_talks_normalisation():
    """train_energy = alpha <l> + lam C/2 = (total training loss + ridge)/d, the talk's e(t):
    at t = 0 against the loss summed directly over the simulation's training set."""
    import sys

    import tsdyn.dmft.simulate  # noqa: F401

    sim_mod = sys.modules["tsdyn.dmft.simulate"]
    p = dmft.Params(**{**BASE, "lam": 0.2}, R0=0.5, m0=0.3)
    d = 60
    r = dmft.simulate(p, 0.2, d=d, seed=4)
    data_ss, init_ss, _ = sim_mod._streams(np.random.SeedSequence(4), 3)
    v, X, c, y = sim_mod.training_set(p, d, np.random.default_rng(data_ss))
    w = sim_mod.initial_weights(p, v, np.random.default_rng(init_ss))
    total = np.sum(np.log1p(np.exp(-y * (X @ w) / np.sqrt(d)))) + 0.5 * p.lam * w @ w
    assert float(r.train_energy[0]) == pytest.approx(total / d, rel=1e-12)
    th = dmft.solve(p, 1.0, n_samples=200)
    np.testing.assert_allclose(th.train_energy, p.alpha * th.train_loss + 0.1 * th.C_diag, rtol=1e-12)
