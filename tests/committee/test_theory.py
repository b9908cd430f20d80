"""The ODEs and their fixed points against the closed-form asymptotics of Goldt et al."""

import numpy as np
import pytest

from tsdyn import committee


def generic_start(K, M, seed):
    rng = np.random.default_rng(seed)
    return dict(Q0=0.5 * np.eye(K) + 0.1, R0=0.1 * rng.standard_normal((K, M)))


@pytest.mark.parametrize("K, M, batch", [(2, 2, 1), (4, 2, 1), (5, 2, 4), (3, 1, 8)])
def test_linear_scm_fixed_point_is_eq12(K, M, batch):
    """Eq. (12) is exact for the linear ODE (it is affine in the overlaps): only the
    integration error is left, set by the fixed-point solver's rtol = 1e-13 and
    divided by the small eps_g* ~ 1e-6 (so ~1e-8 relative); 1e-6 is the issue's bar."""
    p = committee.Params(N=100, M=M, K=K, eta=0.05, sigma=0.01, g="linear", batch=batch)
    fp = committee.fixed_point(p, **generic_start(K, M, K))
    assert float(fp.eg[0]) == pytest.approx(committee.eg_star_linear_scm(p), rel=1e-6)


def test_linear_scm_small_eta_is_eq13():
    """Eq. (13) is eq. (12) to first order in eta: relative gap K eta / (2 B) exactly."""
    p = committee.Params(N=100, M=2, K=3, eta=1e-3, sigma=0.1, g="linear")
    ratio = committee.eg_star_linear_scm(p) / committee.eg_star_linear_scm_small_eta(p)
    assert ratio - 1 == pytest.approx(p.K * p.eta / (2 - p.K * p.eta), rel=1e-12)


def erf_scm_fixed_point(eta, K=4, M=2):
    p = committee.Params(N=100, M=M, K=K, eta=eta, sigma=0.01)
    R0 = np.zeros((K, M))
    R0[:M, :M] = np.eye(M)  # start next to the specialised solution
    Q0 = np.diag([1.0] * M + [1e-3] * (K - M))
    fp = committee.fixed_point(p, Q0=Q0, R0=R0, eg_rtol=1e-7)
    return float(fp.eg[0]) / committee.eg_star_erf_scm_small_eta(p) - 1


def test_erf_scm_fixed_point_approaches_eq11_linearly_in_eta():
    """eq. (11) is the O(eta) term: the relative gap of the ODE fixed point must
    vanish like eta (halving eta halves it, to within 10% for the O(eta^2) rest)."""
    gaps = np.array([erf_scm_fixed_point(eta) for eta in (0.05, 0.025, 0.0125)])
    assert np.all(gaps > 0) and gaps[-1] < 0.02
    np.testing.assert_allclose(gaps[:-1] / gaps[1:], 2.0, rtol=0.1)


def random_teacher(M, seed, N=100):
    w_star = np.random.default_rng(seed).standard_normal((M, N))
    return w_star @ w_star.T / N


@pytest.mark.parametrize("K, M, batch, seed", [(2, 2, 1, 0), (3, 2, 1, 1), (5, 2, 1, 2),
                                               (4, 3, 4, 3), (6, 2, 1, 4)])
def test_eq10_is_the_small_noise_fixed_point_of_the_ode(K, M, batch, seed):
    """Eq. (10) is the first-order term in sigma^2 of the fixed point with the L = K - M
    units switched off. The full ODE, started there and relaxed at sigma = 0.01, must
    land on it up to the next order, O(sigma^2) relative (1.2e-6 measured at sigma =
    0.01, 1.2e-4 at 0.1): 1e-5 leaves room for the solver's eg_rtol = 1e-9. A random
    teacher's T (not I) and B > 1 are included; L = 2, 4 have a singular Jacobian."""
    T = random_teacher(M, seed)
    p = committee.Params(N=100, M=M, K=K, eta=0.05, sigma=0.01, batch=batch)
    R0, Q0 = np.zeros((K, M)), np.full((K, K), 1e-6)  # switched-off units, slightly on
    R0[:M], Q0[:M, :M] = T, T
    Q0[np.diag_indices(K)] += 1e-5
    fp = committee.fixed_point(p, Q0=Q0, R0=R0, T=T, eg_rtol=1e-9)
    assert float(fp.eg[0]) == pytest.approx(committee.eg_star_erf_scm(p, T=T), rel=1e-5)


def test_eq10_approaches_eq11_linearly_in_eta():
    """Eq. (11) is the small-eta limit of eq. (10): the relative gap must vanish like
    eta (halving eta halves it, to 5 % for the O(eta^2) rest: measured 2.0 within 1 %)."""
    for K in (2, 3, 5):
        gaps = [committee.eg_star_erf_scm(committee.Params(N=100, M=2, K=K, eta=eta, sigma=0.1))
                / committee.eg_star_erf_scm_small_eta(committee.Params(N=100, M=2, K=K, eta=eta,
                                                                       sigma=0.1)) - 1
                for eta in (0.02, 0.01, 0.005)]
        assert gaps[-1] > 0
        np.testing.assert_allclose(np.divide(gaps[:-1], gaps[1:]), 2.0, rtol=0.05)


def test_eq10_is_infinite_beyond_the_stability_limit_and_checks_its_input():
    """At eta = 1.5 the switched-off state of K = 3, M = 2 is unstable (an eigenvalue
    of the Jacobian crosses zero between eta = 0.9 and 1.5): no finite eps_g^*."""
    assert committee.eg_star_erf_scm(committee.Params(N=100, M=2, K=3, eta=1.5, sigma=0.1)) == np.inf
    with pytest.raises(ValueError, match="K >= M"):
        committee.eg_star_erf_scm(committee.Params(N=100, M=3, K=2, eta=0.1, sigma=0.1))
    with pytest.raises(ValueError, match="g='erf'"):
        committee.eg_star_erf_scm(committee.Params(N=100, M=2, K=2, eta=0.1, g="linear"))
    with pytest.raises(ValueError, match="T must have shape"):
        committee.eg_star_erf_scm(committee.Params(N=100, M=2, K=2, eta=0.1), T=np.eye(3))


def test_both_layers_fixed_point_approaches_eq15():
    """Denoising solution of M = 1: all K units on the teacher, v_k = v*/K (SM sec. E)."""
    gaps = []
    for eta in (0.05, 0.025):
        K = 3
        p = committee.Params(N=100, M=1, K=K, eta=eta, sigma=0.01, v_star=2.0,
                             train_second_layer=True)
        fp = committee.denoising_fixed_point(p, eg_rtol=1e-7)
        np.testing.assert_allclose(fp.v.values, 2.0 / K, rtol=1e-3)  # v stays at v*/K
        gaps.append(float(fp.eg[0]) / committee.eg_star_erf_both_layers_small_eta(p) - 1)
    assert 0 < gaps[1] < 0.01
    assert gaps[0] / gaps[1] == pytest.approx(2.0, rel=0.1)  # O(eta) correction


def test_mini_batch_divides_noise_term():
    """Mini-batches leave the drift alone and divide the noise terms by B, so the
    linear fixed point is K eta sigma^2 / (2 (2B - K eta)); at B = 8 and eta = 1.5
    (unstable at B = 1, since K eta > 2) it must hold to 1e-6 as eq. (12) does."""
    p = committee.Params(N=100, M=1, K=2, eta=1.5, sigma=0.1, g="linear", batch=8)
    fp = committee.fixed_point(p, **generic_start(2, 1, 0))
    expected = p.K * p.eta * p.sigma ** 2 / (2 * (2 * p.batch - p.K * p.eta))
    assert float(fp.eg[0]) == pytest.approx(expected, rel=1e-6)


def test_ode_divergence_is_an_outcome():
    """A linear SCM diverges for K eta > 2 B: the ODE stops, marks it, no crash."""
    p = committee.Params(N=100, M=2, K=2, eta=1.5, g="linear")
    o = committee.ode(p, 200.0, **generic_start(2, 2, 0), n_points=50)
    assert bool(o.diverged) and 0 < float(o.t_diverged) < 200
    after = o.t > o.t_diverged
    assert np.all(np.isnan(o.eg.values[after])) and np.all(np.isfinite(o.eg.values[~after]))


def test_ode_converges_in_tolerance():
    """Halving rtol changes eps_g(t) by far less than the requested accuracy."""
    p = committee.Params(N=100, M=2, K=2, eta=0.5)
    a = committee.ode(p, 300, **generic_start(2, 2, 1), rtol=1e-7, atol=1e-10)
    b = committee.ode(p, 300, **generic_start(2, 2, 1), rtol=1e-10, atol=1e-13)
    # DOP853's global error is a few times rtol relative to the state (~1).
    np.testing.assert_allclose(a.eg, b.eg, rtol=0, atol=1e-5)
    assert b.attrs["n_rhs"] > a.attrs["n_rhs"]


def test_generalisation_error_matches_network_monte_carlo():
    """eps_g from (Q, R, T, v) equals the average squared error of actual networks."""
    rng = np.random.default_rng(3)
    N, K, M = 50, 3, 2
    for g in ("erf", "linear", "relu"):
        w, ws = rng.standard_normal((K, N)), rng.standard_normal((M, N))
        v, vs = rng.standard_normal(K), rng.standard_normal(M)
        exact = committee.generalisation_error(w @ w.T / N, w @ ws.T / N, ws @ ws.T / N, v, vs, g)
        x = rng.standard_normal((400_000, N))
        from tsdyn.activations import apply
        sq = 0.5 * (apply(g, x @ w.T / np.sqrt(N)) @ v - apply(g, x @ ws.T / np.sqrt(N)) @ vs) ** 2
        # 5 standard errors of the Monte Carlo mean
        assert abs(exact - sq.mean()) < 5 * sq.std() / np.sqrt(len(sq)), g


def test_ode_reports_eg_at_its_resolution():
    """A noiseless K = M run converges to eps_g = 0; below atol the ODE's eps_g is
    integration error (it can be negative) and is reported as the floor atol, so a log
    plot keeps it. Above the floor the values are untouched (compared with floor 0)."""
    p = committee.Params(N=100, M=2, K=2, eta=1.0)
    kw = dict(**generic_start(2, 2, 1), n_points=60, spacing="log", atol=1e-10)
    o = committee.ode(p, 3000.0, **kw)
    raw = committee.ode(p, 3000.0, **kw, eg_floor=0.0)
    assert o.attrs["eg_floor"] == 1e-10
    assert np.all(o.eg.values >= 1e-10)
    assert np.any(raw.eg.values < 1e-10)  # the run does reach the resolution
    above = raw.eg.values >= 1e-10
    np.testing.assert_array_equal(o.eg.values[above], raw.eg.values[above])
    with pytest.raises(ValueError, match="eg_floor"):
        committee.ode(p, 10.0, eg_floor=-1.0)


@pytest.mark.parametrize("K", [2, 5])
def test_linear_ode_fixed_point_approaches_eq13(K):
    """Eq. (13), eps_g* = eta sigma^2 K / 4, is the eta -> 0 limit of the linear ODE's
    fixed point: fp / eq13 - 1 = K eta / (2 - K eta) exactly (eq. 12 over eq. 13), so the
    excess is linear in eta with slope K / 2; only the solver's rtol (1e-13 relative
    to eps_g* ~ 1e-7, i.e. ~1e-6) is left."""
    for eta in (0.01, 0.02):
        p = committee.Params(N=100, M=2, K=K, eta=eta, sigma=0.01, g="linear")
        fp = committee.fixed_point(p, **generic_start(K, 2, K))
        excess = float(fp.eg[0]) / committee.eg_star_linear_scm_small_eta(p) - 1
        assert excess == pytest.approx(K * eta / (2 - K * eta), rel=1e-4)


def test_asymptotic_error_tells_an_imperfect_fixed_point_from_the_noisy_teacher():
    """Two runs of K = 3, M = 2 at the paper's eta and sigma, N = 100: the first start ends
    at a fixed point without a specialised unit, whose error (about 800 times eq. 10)
    survives switching the noise off; the second reaches the teacher, where eq. (10) at
    the run's own T is the ODE's end point to O(sigma^2) = 1e-6 relative, and only the
    noise-free decay of the last window, 5.6e-5 of the error, is left without noise."""
    from numpy.random import SeedSequence

    p = dict(t_max=1e5, N=100, M=2, K=3, eta=0.05, sigma=0.01)
    stuck = committee.asymptotic_error(seed=SeedSequence(200, spawn_key=(1, 0)), **p)
    settled = committee.asymptotic_error(seed=SeedSequence(200, spawn_key=(1, 1)), **p)
    assert stuck["noise_free"] > 0.9 and stuck["ode"] > 100 * stuck["closed"]
    assert settled["noise_free"] < 1e-3
    assert settled["ode"] == pytest.approx(settled["closed"], rel=1e-5)
    # SGD's window mean: 1 % batch-means error at N = 100 (4 standard errors allowed)
    assert settled["sgd"] == pytest.approx(settled["closed"], abs=4 * settled["sgd_se"])
