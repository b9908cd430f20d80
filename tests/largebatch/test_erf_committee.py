"""The two-unit erf network of the exact-asymptotics figure: the overlap sampler is exact in law
(against plain projected SGD in R^d), the map agrees with it where its terms are the whole
story, and the regimes are classified by their exponents."""

import math

import numpy as np
import pytest
from scipy.special import erf

from tsdyn.largebatch import erf_committee as ec


def _full_sgd(Wstar, W, gamma, n_b, noise, steps, rng):
    """Projected SGD on the weights themselves (inputs in R^d), written out independently."""
    p, k = W.shape[0], Wstar.shape[0]
    g = lambda x: erf(x / math.sqrt(2))
    dg = lambda x: math.sqrt(2 / math.pi) * np.exp(-x * x / 2)
    for _ in range(steps):
        Z = rng.standard_normal((n_b, W.shape[1]))
        lam, nu = Z @ W.T, Z @ Wstar.T
        y = g(nu).mean(1) + math.sqrt(noise) * rng.standard_normal(n_b)
        r = y - g(lam).mean(1)
        G = (dg(lam) * r[:, None] / p).T @ Z / n_b
        W = W + gamma * G
        W /= np.linalg.norm(W, axis=1, keepdims=True)
    return np.r_[W, Wstar] @ np.r_[W, Wstar].T


def test_overlap_sampler_has_the_law_of_plain_projected_sgd():
    """Same start, 3 steps at d = 30, n_b = 4, a large step (gamma d / n_b ~ 5, so the
    Wishart part matters): the means and variances of M and Q12 over 600 runs of each agree.

    Tolerance: 4.5 standard errors of the difference (6 compared means, two-sided, Bonferroni
    ~1e-4 overall) for the means; variances within 25% (the relative s.e. of a variance from
    600 runs is sqrt(2/600) = 6%, for the ratio of two ~8%, so 25% is 3 s.e.)."""
    d, p, k, n_b, gamma, noise, steps, runs = 30, 2, 2, 4, 0.7, 0.05, 3, 600
    rng = np.random.default_rng(0)
    Wstar = np.linalg.qr(rng.standard_normal((d, k)))[0].T
    W0 = 0.4 * Wstar + 0.3 * Wstar[::-1] + rng.standard_normal((p, d)) / math.sqrt(d)
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    Om0 = np.r_[W0, Wstar] @ np.r_[W0, Wstar].T
    full = np.array([_full_sgd(Wstar, W0, gamma, n_b, noise, steps, rng) for _ in range(runs)])
    law = [ec.simulate(Om0, p, steps, gamma=gamma, d=d, n_b=n_b, noise=noise, seed=s, n_points=2).isel(t=-1)
           for s in range(runs)]
    lawM = np.array([x.M.values for x in law])
    lawQ = np.array([float(x.Q.values[0, 1]) for x in law])
    a = np.c_[full[:, :p, p:].reshape(runs, -1), full[:, 0, 1]]
    b = np.c_[lawM.reshape(runs, -1), lawQ]
    se = np.sqrt(a.var(0, ddof=1) / runs + b.var(0, ddof=1) / runs)
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4.5 * se), (a.mean(0), b.mean(0), se)
    np.testing.assert_allclose(b.var(0), a.var(0), rtol=0.25)
    # the compared laws are broad (the runs spread by >= 0.03, 10x a mean's s.e.), so the check is not of a frozen chain
    assert np.all(a.std(0) > 0.03) and np.all(b.std(0) > 0.03)


def test_units_stay_normalised_and_seeds_reproduce():
    Om0 = ec.initial_overlaps(2, 2, 1000, 1)
    a = ec.simulate(Om0, 2, 50, gamma=0.1, d=1000, n_b=8, noise=0.01, seed=5, n_points=5)
    b = ec.simulate(Om0, 2, 50, gamma=0.1, d=1000, n_b=8, noise=0.01, seed=5, n_points=3)
    np.testing.assert_array_equal(a.M.values[-1], b.M.values[-1])
    np.testing.assert_allclose(np.diagonal(a.Q.values, axis1=1, axis2=2), 1.0, atol=1e-12)
    assert np.allclose(Om0[:2, 2:], 0) and abs(Om0[0, 1]) < 5 / math.sqrt(1000)


def test_test_error_closed_form_at_the_start_and_at_the_teacher():
    # M = 0, Q = P = I: E f*^2 = E f^2 = (1/4)(2 x (2/pi) asin(1/2)) = 1/6, so eps_g = 1/6.
    assert ec.test_error(np.eye(4), 2) == pytest.approx(1 / 6, rel=1e-12)
    perfect = np.eye(4)
    perfect[:2, 2:] = perfect[2:, :2] = np.eye(2)
    perfect += 1e-9 * np.eye(4)  # keep it positive definite
    assert ec.test_error(perfect, 2) < 1e-8


def test_leading_terms_classify_the_three_regimes():
    assert ec.leading_terms(0.25, 0.125) == (False, True)
    assert ec.leading_terms(0.5, 0.5) == (True, True)
    assert ec.leading_terms(0.5, 1.0) == (True, False)
    for name in ec.REGIMES:
        s = ec.regime_setting(name, 10_000)
        assert s["n_b"] >= 1 and s["gamma"] > 0
    assert ec.regime_setting("noise", 10_000)["n_b"] == 10
    with pytest.raises(ValueError, match="regime"):
        ec.regime_setting("sgd", 100)
    with pytest.raises(ValueError, match="Om"):
        ec.expected_map(np.eye(3) * 2, 2, 5, gamma=0.1, d=100, n_b=1)
    with pytest.raises(ValueError, match="input dimension"):
        ec.simulate(np.eye(4), 2, 5, gamma=0.1, d=5, n_b=1, seed=0)


def test_finite_d_map_tracks_sgd_before_the_plateau_escape():
    """d = 10^4 as in the paper, 16 runs to t = 1000 (before the escape from the unspecialised
    plateau, which the symmetric map cannot make), all three regimes. The finite-d map (every
    term) is within 4 s.e. of the mean over runs (16 runs, ~10 compared times, two-sided) plus
    0.5% of the error (the map starts at Q12 = 0, the runs at Q12 ~ d^-1/2: 0.1% at t = 0).
    The leading-term map misses the O(gamma^2) square of the drift: in the Saad-Solla regime
    (gamma = 0.08) it sits more than 1% below SGD on the plateau (measured 1.4-1.6%)."""
    for regime in ("population", "saad_solla", "noise"):
        runs = ec.regime_runs(regime=regime, d=10_000, steps=1000, runs=16, seed=3, n_points=12)
        full = ec.regime_map(regime=regime, d=10_000, steps=1000, n_points=12, full=True).eg.values
        mean = runs["eg"].mean(0)
        se = runs["eg"].std(0, ddof=1) / 4
        gap = np.abs(mean - full)
        assert np.all(gap <= 4 * se + 0.005 * full), (regime, gap, se)
        if regime == "saad_solla":
            lead = ec.regime_map(regime=regime, d=10_000, steps=1000, n_points=12).eg.values
            assert (mean[-1] - lead[-1]) / lead[-1] > 0.01
            assert full[-1] < 0.2 * full[0]  # it learned: on the plateau, not at the start


def test_erf_only_integrals_equal_the_shared_closed_forms():
    """The theory's erf-only I2, I3, I4, J2 (kept separate for compile time) equal
    tsdyn.activations' erf branch to rounding at a random covariance."""
    from tsdyn import activations as act
    from tsdyn.largebatch import _erf_kernels as k

    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 7))
    C = X @ X.T / 7
    for a in range(4):
        for b in range(4):
            assert k.erf_i2(C, a, b) == pytest.approx(act.i2(act.ERF, C, a, b), abs=1e-14)
            assert k.erf_j2(C, a, b) == pytest.approx(act.j2(act.ERF, C, a, b), abs=1e-14)
            for c in range(4):
                assert k.erf_i3(C, a, b, c) == pytest.approx(act.i3(act.ERF, C, a, b, c), abs=1e-14)
                for e in range(4):
                    assert k.erf_i4(C, a, b, c, e) == pytest.approx(act.i4(act.ERF, C, a, b, c, e), abs=1e-14)
