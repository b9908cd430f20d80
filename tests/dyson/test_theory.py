"""Theory: Marchenko-Pastur against sampled matrices, p(phi), the level-spacing SDE
against exact solutions, the coefficients (B.7, B.9), the Wigner surmise."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from tsdyn.dyson import theory as th


# ------------------------------------------------------------------ Marchenko-Pastur

@pytest.mark.parametrize("sigma_w, r", [(0.125, 0.5), (1.7, 0.5), (256.0, 0.5), (1.0, 0.2), (0.8, 1.0)])
def test_mp_density_is_normalised_with_the_right_moments(sigma_w, r):
    lo, hi = th.marchenko_pastur_edges(sigma_w, r)
    assert lo == pytest.approx(sigma_w ** 2 * (1 - math.sqrt(r)) ** 2, rel=1e-14)
    mom = [integrate.quad(lambda x, k=k: x ** k * th.marchenko_pastur(x, sigma_w, r), lo, hi,
                          limit=200)[0] for k in range(3)]
    # quadrature of a square-root edge singularity: ~1e-8 relative
    assert mom[0] == pytest.approx(1.0, rel=1e-7)
    assert mom[1] == pytest.approx(sigma_w ** 2, rel=1e-7)
    assert mom[2] == pytest.approx(sigma_w ** 4 * (1 + r), rel=1e-7)
    assert th.marchenko_pastur(lo * 0.99, sigma_w, r) == 0 and th.marchenko_pastur(hi * 1.01, sigma_w, r) == 0


def test_mp_for_wide_x_integrates_to_one_over_r():
    """r > 1: X has n2 - n1 zero eigenvalues, outside the continuous part."""
    lo, hi = th.marchenko_pastur_edges(1.3, 2.0)
    assert integrate.quad(lambda x: th.marchenko_pastur(x, 1.3, 2.0), lo, hi)[0] == pytest.approx(0.5, rel=1e-7)


def test_mp_edges_and_moments_against_sampled_matrices():
    """Large W (n2, n1) = (400, 800) with entries N(0, sigma^2/n1), as in eq. (2.11)."""
    rng = np.random.default_rng(0)
    n2, n1, s, reps = 400, 800, 1.7, 10
    xs = []
    for _ in range(reps):
        W = rng.standard_normal((n2, n1)) * s / np.sqrt(n1)
        xs.append(np.linalg.eigvalsh(W @ W.T))
    xs = np.array(xs)
    lo, hi = th.marchenko_pastur_edges(s, n2 / n1)
    # Extreme eigenvalues fluctuate on the Tracy-Widom scales of G G^T (Johnstone 2001; soft
    # lower edge for n2 < n1), divided by n1 and times s^2:
    # (sqrt n1 +- sqrt n2)(1/sqrt n2 +- 1/sqrt n1)^(1/3) / n1 (~0.9% of x_+ and ~3% of x_-).
    # TW_1 has mean -1.2 and s.d. 1.3: 6 widths leave room for the mean shift and the tails.
    a, b = math.sqrt(n1), math.sqrt(n2)
    tw_hi = s ** 2 * (a + b) * (1 / b + 1 / a) ** (1 / 3) / n1
    tw_lo = s ** 2 * (a - b) * (1 / b - 1 / a) ** (1 / 3) / n1
    assert np.all(np.abs(xs.max(axis=1) - hi) < 6 * tw_hi)
    assert np.all(np.abs(xs.min(axis=1) - lo) < 6 * tw_lo)
    # Moments: mean exact at any size; second moment sigma^4 (1 + r + 1/n1) at finite n1.
    m1, m2 = xs.mean(axis=1), (xs ** 2).mean(axis=1)
    assert abs(m1.mean() - s ** 2) < 4 * m1.std(ddof=1) / np.sqrt(reps)
    assert abs(m2.mean() - s ** 4 * (1 + n2 / n1 + 1 / n1)) < 4 * m2.std(ddof=1) / np.sqrt(reps)
    # Bulk: the empirical distribution is within O(1/n2) of the MP law (eigenvalue rigidity).
    emp = (np.arange(n2) + 0.5) / n2
    for x in xs:
        assert np.max(np.abs(th.marchenko_pastur_cdf(x, s, n2 / n1) - emp)) < 5 / n2


def test_mp_cdf_matches_quadrature():
    x = np.array([0.3, 1.0, 2.5])
    expect = [integrate.quad(lambda u: th.marchenko_pastur(u, 1.2, 0.5), 0, xi, limit=200)[0] for xi in x]
    np.testing.assert_allclose(th.marchenko_pastur_cdf(x, 1.2, 0.5), expect, rtol=1e-8)


def test_initial_spacing_bound_is_eq_4_14():
    assert th.initial_spacing_bound(2.0, 32, 16) == pytest.approx(4 * 4 * math.sqrt(0.5) / 15, rel=1e-14)
    # (4.15)'s left side is T over that bound
    assert th.convergence_lhs(0.3, 2.0) == pytest.approx(0.3 / th.initial_spacing_bound(2.0, 32, 16))


def test_mp_bad_input():
    with pytest.raises(ValueError, match=r"sigma_w \(initial weight scale\) must be a finite number in \(0"):
        th.marchenko_pastur_edges(0.0, 0.5)
    with pytest.raises(ValueError, match=r"r \(aspect ratio n2/n1\)"):
        th.marchenko_pastur(1.0, 1.0, -0.5)


# ------------------------------------------------------------------ p(phi)

@pytest.mark.parametrize("s2", [0.2, 0.5, 2.0])
def test_feature_density_against_sampled_tanh(s2):
    """Histogram of tanh(z), z ~ N(0, s2), against bin integrals of eq. (2.21): chi^2 test."""
    rng = np.random.default_rng(1)
    phi = np.tanh(rng.standard_normal(200_000) * np.sqrt(s2))
    edges = np.linspace(-1, 1, 41)
    counts = np.histogram(phi, edges)[0]
    probs = np.array([integrate.quad(th.feature_density, a, b, args=(s2,))[0] for a, b in zip(edges[:-1], edges[1:])])
    assert probs.sum() == pytest.approx(1.0, abs=1e-8)
    keep = probs * len(phi) > 20
    chi2 = np.sum((counts[keep] - len(phi) * probs[keep]) ** 2 / (len(phi) * probs[keep]))
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3


def test_single_to_double_well_at_one_half():
    assert th.feature_peaks(0.49) == 0.0 and th.feature_peaks(0.5) == 0.0
    assert 0 < th.feature_peaks(0.55) < th.feature_peaks(1.0) < th.feature_peaks(4.0) < 1
    for s2 in (0.3, 0.7, 2.0):
        p = th.feature_peaks(s2)
        if p > 0:
            assert p == pytest.approx(np.tanh(2 * s2 * p), abs=1e-12)
            assert th.feature_density(p, s2) > th.feature_density(0.0, s2)
    # small-phi expansion, eq. (2.22), to O(phi^6)
    phi = 1e-2
    for s2 in (0.3, 1.0):
        series = (1 / (2 * s2) - 1) * phi ** 2 + (1 / (3 * s2) - 0.5) * phi ** 4
        assert th.feature_potential(phi, s2) == pytest.approx(series, rel=1e-7)


def test_first_layer_q_against_monte_carlo():
    rng = np.random.default_rng(2)
    n = 2_000_000
    v = np.tanh(np.sum(rng.standard_normal((n, 3)) * rng.standard_normal((n, 3)), axis=1) / np.sqrt(3)) ** 2
    assert abs(th.first_layer_q(3) - v.mean()) < 4 * v.std() / np.sqrt(n)
    assert th.jamming_boundary(3) == pytest.approx(math.sqrt(2 * th.first_layer_q(3)))


@pytest.mark.parametrize("sigma_w", [0.5, 1.0])
def test_mixture_density_is_normalised_and_wider_tailed(sigma_w):
    """The mixture over |x| has the same mean variance q sigma_w^2 of z as eq. (2.21), but a
    spread of variances, so more mass near phi = +-1 in the single-well regime (sigma_z^2 =
    0.09, 0.34): P(phi > 0.95) is 500x and 2.3x that of (2.21). (Deep in the double well,
    sigma_w >~ 2, both laws pile up at +-1 and the comparison flips.)"""
    assert integrate.quad(th.feature_density_mixture, -1, 1, args=(sigma_w,))[0] == pytest.approx(1.0, abs=1e-7)
    s2 = th.sigma_z2(sigma_w)
    tail_mix = integrate.quad(th.feature_density_mixture, 0.95, 1, args=(sigma_w,))[0]
    tail_gauss = integrate.quad(th.feature_density, 0.95, 1, args=(s2,))[0]
    assert tail_mix > 2 * tail_gauss
    with pytest.raises(ValueError, match=r"sigma_w \(initial weight scale\) must be a finite number in \(0"):
        th.feature_density_mixture(0.0, -1.0)


# ------------------------------------------------------------------ level-spacing SDE

def test_sde_without_repulsion_is_brownian_motion_with_drift():
    """V_S = 0, constant K_S, D_S: S(tau) = S0 + K_S tau + sqrt(2 T D_S) W(tau) exactly
    (S stays > 20 standard deviations from 0)."""
    tau = np.linspace(0, 2.0, 5)
    P, T, K, D = 20_000, 0.5, 0.7, 0.3
    r = th.level_spacing_sde(10.0, tau, K_S=K, V_S=0.0, D_S=D, T=T, dt=0.1, seed=3, n_paths=P)
    S = r.S.values
    var = 2 * T * D * tau
    assert np.all(np.abs(S.mean(axis=1) - (10 + K * tau)) <= 4 * np.sqrt(var / P) + 1e-12)
    # sample variance: relative standard error sqrt(2/P)
    np.testing.assert_allclose(S[1:].var(axis=1, ddof=1), var[1:], rtol=4 * np.sqrt(2 / P))
    assert r.attrs["strong_error"] < 1e-12  # additive noise, constant drift: EM is exact


def test_sde_second_moment_without_drift():
    """K_S = 0: by Ito, d E[S^2] / dtau = 2 T (V_S + D_S) exactly (Bessel-like process,
    never reaching 0 since V_S >= D_S)."""
    tau = np.array([0.0, 1.0, 2.0, 4.0])
    P, T, V, D = 20_000, 0.5, 1.0, 0.3
    r = th.level_spacing_sde(1.0, tau, K_S=0.0, V_S=V, D_S=D, T=T, dt=0.002, seed=4, n_paths=P)
    S2 = r.S.values ** 2
    expect = 1.0 + 2 * T * (V + D) * tau
    # statistical error of the mean over paths; the O(dt) weak bias (~1e-3) is far below it
    assert np.all(np.abs(S2.mean(axis=1) - expect) <= 4 * S2.std(axis=1) / np.sqrt(P) + 1e-12)


def test_sde_reaches_the_gamma_stationary_law():
    """K_S < 0: the long-time ensemble is Gamma(V_S/D_S + 1, T D_S/|K_S|) (zero-flux Fokker-Planck)."""
    K, V, D, T = -0.5, 1.0, 0.3, 0.5
    P = 4000
    tau = np.array([0.0, 30.0])  # relaxation time ~ 1/|K| * O(1): 30 is many of them
    r = th.level_spacing_sde(1.0, tau, K_S=K, V_S=V, D_S=D, T=T, dt=0.005, seed=5, n_paths=P)
    final = r.S.values[-1]
    shape, scale = V / D + 1, T * D / -K
    assert stats.kstest(final, stats.gamma(shape, scale=scale).cdf).pvalue > 1e-3
    grid = np.linspace(0.01, 5, 500)
    np.testing.assert_allclose(th.level_spacing_stationary(grid, K, V, D, T),
                               stats.gamma(shape, scale=scale).pdf(grid), rtol=1e-10)


def test_sde_strong_error_shrinks_linearly_with_dt():
    """Additive noise: Euler-Maruyama has strong order 1. The reported error estimate
    (dt against dt/2 on the same Brownian path) should halve when dt halves."""
    tau = np.linspace(0, 5, 11)
    dts = (0.01, 0.005, 0.0025)
    errs = [th.level_spacing_sde(1.0, tau, K_S=-0.5, V_S=4.0, D_S=0.3, T=0.5, dt=dt, seed=6,
                                 n_paths=2000).attrs["strong_error"] for dt in dts]
    order = np.polyfit(np.log(dts), np.log(errs), 1)[0]
    assert 0.8 < order < 1.2  # the fit is over three same-path estimates


def test_sde_stays_positive_and_stable_near_zero():
    """V_S < D_S: the exact process reaches S ~ 0 often; the implicit Coulomb step keeps
    S > 0 and the dt / dt/2 estimates agree (explicit Euler overshoots to huge S there)."""
    tau = np.linspace(0, 300, 11)  # relaxation time T D_S / K_S^2 = 25
    r = th.level_spacing_sde(0.01, tau, K_S=-0.1, V_S=0.05, D_S=0.5, T=0.5, dt=0.005, seed=9, n_paths=500)
    assert np.all(r.S.values > 0) and np.all(r.S_half.values > 0)
    assert r.attrs["strong_error"] < 0.05  # step-size error (the scale of S is ~3, dt = 0.005)
    # stationary mean T (V + D) / |K| still holds when the process touches 0 (zero-flux law)
    late = r.S.values[-1]
    assert abs(late.mean() - 0.5 * 0.55 / 0.1) < 4 * late.std() / np.sqrt(500)


def test_sde_same_seed_same_paths_and_per_path_coefficients():
    tau = np.linspace(0, 1, 4)
    K = np.array([[-1.0, -1.0, -1.0, -1.0], [0.5, 0.5, 0.5, 0.5]])
    a = th.level_spacing_sde([1.0, 2.0], tau, K_S=K, V_S=[0.1, 0.2], D_S=0.05, T=0.3, dt=0.01, seed=7)
    b = th.level_spacing_sde([1.0, 2.0], tau, K_S=K, V_S=[0.1, 0.2], D_S=0.05, T=0.3, dt=0.01, seed=7)
    np.testing.assert_array_equal(a.S.values, b.S.values)
    assert a.S.shape == (4, 2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(T=0.0), r"T \(temperature\) must be a finite number in \(0"),
    (dict(dt=-1.0), r"dt \(time step\)"),
    (dict(S0=0.0), r"S0 \(initial level spacing\) must be finite and > 0"),
    (dict(tau=[1.0, 2.0]), r"tau must be an increasing 1-D array"),
    (dict(K_S=np.zeros((3, 3))), r"K_S must be a scalar, shape \(2,\)"),
    (dict(D_S=-1.0), r"V_S and D_S \(variances\) must be >= 0"),
    (dict(seed=-1), r"seed must be a non-negative integer or a numpy SeedSequence; got -1"),
    (dict(S0=1.0, n_paths=0), r"n_paths \(number of SDE paths\) must be an integer >= 1; got 0"),
    (dict(n_paths=3), r"n_paths = 3 but S0 has 2 values"),
    (dict(interpolate="cubic"), r"interpolate must be 'hold' or 'linear'; got 'cubic'"),
])
def test_sde_bad_input(kwargs, message):
    args = dict(S0=[1.0, 1.0], tau=[0.0, 1.0], K_S=0.0, V_S=0.1, D_S=0.1, T=0.5, dt=0.1, seed=0)
    with pytest.raises(ValueError, match=message):
        th.level_spacing_sde(**{**args, **kwargs})


def test_spacing_coefficients_by_hand():
    """N = 3: K_S = (K3 - K1)/2, D_S = (V11 + V33)/8, V_S = 2 V31/4 + (V32 + V12)/2 (B.7, B.9)."""
    K = np.array([-3.0, 1.0, 2.0])
    V = np.array([[1.0, 2.0, 3.0], [2.0, 5.0, 7.0], [3.0, 7.0, 11.0]])
    K_S, V_S, D_S = th.spacing_coefficients(K, V)
    assert K_S == 2.5 and D_S == 12 / 8 and V_S == 2 * 3 / 4 + (7 + 2) / 2
    # broadcasting over leading axes
    K_S, V_S, D_S = th.spacing_coefficients(np.stack([K, K]), np.stack([V, V]))
    assert K_S.shape == (2,)
    with pytest.raises(ValueError, match=r"K must have shape \(..., N\) and V \(..., N, N\)"):
        th.spacing_coefficients(K, V[:2, :2])


def test_spacing_coefficients_ito_term_by_hand():
    K = np.array([-3.0, 1.0, 2.0])
    V = np.eye(3)
    C = np.array([1.0, 9.0, 4.0])
    K_S, _, _ = th.spacing_coefficients(K, V, C=C, T=0.5)
    assert K_S == 2.5 + 0.5 * (4.0 - 1.0) / 2
    with pytest.raises(ValueError, match=r"C \(gradient covariance\) and T \(temperature\) go together"):
        th.spacing_coefficients(K, V, C=C)


def test_sde_linear_interpolation_of_the_coefficients():
    """D_S = V_S = 0 and K_S going linearly from K0 to K1 over one interval: the exact
    solution S0 + K0 tau + (K1 - K0) tau^2 / (2 tau_f); Euler with m steps using the
    left value of each step is short by (K1 - K0) tau_f / (2 m)."""
    tau, K0, K1, m = np.array([0.0, 2.0]), 1.0, 3.0, 400
    K = np.array([[K0, K1]])
    r = th.level_spacing_sde([5.0], tau, K_S=K, V_S=np.zeros((1, 2)), D_S=np.zeros((1, 2)), T=1.0,
                             dt=2.0 / m, seed=0, interpolate="linear")
    exact = 5.0 + K0 * 2.0 + (K1 - K0) * 2.0 / 2
    assert r.S.values[-1, 0] == pytest.approx(exact - (K1 - K0) * 2.0 / (2 * m), rel=1e-12)
    held = th.level_spacing_sde([5.0], tau, K_S=K, V_S=np.zeros((1, 2)), D_S=np.zeros((1, 2)), T=1.0,
                                dt=2.0 / m, seed=0)
    assert held.S.values[-1, 0] == pytest.approx(5.0 + K0 * 2.0, rel=1e-12)


def test_convergence_criterion():
    # lhs = 15 / (4 sqrt(1/2)) * T / sigma^2
    lhs = th.convergence_lhs(1.0, 1.0)
    assert lhs == pytest.approx(15 / (4 * math.sqrt(0.5)))
    assert th.converged(1.0, 1.0, K_S=-1.01 * lhs, V_S=1.0)
    assert not th.converged(1.0, 1.0, K_S=-0.99 * lhs, V_S=1.0)
    assert not th.converged(1.0, 1.0, K_S=0.5, V_S=1.0)  # no restoring force


# ------------------------------------------------------------------ Wigner surmise

def test_wigner_surmise_is_exact_for_2x2_goe():
    s_norm = integrate.quad(th.wigner_surmise, 0, np.inf)[0]
    s_mean = integrate.quad(lambda s: s * th.wigner_surmise(s), 0, np.inf)[0]
    assert s_norm == pytest.approx(1.0, abs=1e-10) and s_mean == pytest.approx(1.0, abs=1e-10)
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 20_000))
    c = rng.standard_normal(20_000) / np.sqrt(2)
    s = np.sqrt((a - b) ** 2 + 4 * c ** 2)  # spacing of [[a, c], [c, b]], GOE
    assert stats.kstest(s / s.mean(), th.wigner_cdf).pvalue > 1e-3


# ------------------------------------------------------------------ full Dyson equation

def test_dyson_two_levels_against_exact_moments():
    """N = 2, K = (k1, k2), V = [[D, W], [W, D]]: the centre c = (x1 + x2)/2 is Brownian with
    drift (k1 + k2)/2 and variance T D tau / 2; the gap u = x2 - x1 has, by Ito,
    with k1 = k2 = k, d(u^2) = (4 T W + 2 T D) dtau + noise, so E[u^2] = u0^2 + (4 T W + 2 T D) tau."""
    P, T, D, W, k = 10_000, 0.5, 0.3, 1.0, 0.2
    tau = np.array([0.0, 1.0, 2.0])
    x0 = np.tile([0.0, 1.0], (P, 1))
    r = th.dyson_sde(x0, tau, K=np.full((P, 2), k), V=np.tile([[D, W], [W, D]], (P, 1, 1)), T=T, dt=0.004, seed=10)
    x = r.x.values
    c, u = x.mean(axis=2), x[..., 1] - x[..., 0]
    assert np.all(np.abs(c.mean(axis=1) - (0.5 + k * tau)) <= 4 * np.sqrt(T * D * tau / 2 / P) + 1e-12)
    u2 = u ** 2
    # statistical error of the mean, plus the O(dt) weak bias of Euler-Maruyama (~dt)
    assert np.all(np.abs(u2.mean(axis=1) - (1 + (4 * T * W + 2 * T * D) * tau)) <= 4 * u2.std(axis=1) / np.sqrt(P) + 1e-2)
    assert r.attrs["strong_error"] < 0.01 and np.all(np.diff(x, axis=2) > 0)


def test_dyson_bad_input():
    with pytest.raises(ValueError, match=r"x0 must have shape \(paths, N >= 2\) with finite, strictly ascending"):
        th.dyson_sde(np.array([[1.0, 0.5]]), [0.0, 1.0], K=np.zeros((1, 2)), V=np.ones((1, 2, 2)), T=1.0, dt=0.1, seed=0)
    with pytest.raises(ValueError, match=r"K must have shape \(1, 2, 2\) or \(1, 2\)"):
        th.dyson_sde(np.array([[0.0, 1.0]]), [0.0, 1.0], K=np.zeros(3), V=np.ones((1, 2, 2)), T=1.0, dt=0.1, seed=0)
    with pytest.raises(ValueError, match=r"seed must be a non-negative integer or a numpy SeedSequence; got -1"):
        th.dyson_sde(np.array([[0.0, 1.0]]), [0.0, 1.0], K=np.zeros((1, 2)), V=np.ones((1, 2, 2)), T=1.0, dt=0.1,
                     seed=-1)


@pytest.mark.parametrize("c, check_var", [(0.75, True), (0.25, False)])
def test_dyson_wishart_levels_are_squared_bessel_processes(c, check_var):
    """Without Coulomb coupling and drift, dx = T c dtau + sqrt(T v x) dW: a squared Bessel process of
    dimension 4c/v in units of T v / 4. E[x] = x0 + T c tau and Var[x] = T v x0 tau + T^2 v c tau^2 / 2
    (from d(x^2) = (2 x T c + T v x) dtau + noise). c = v/4 (dimension 1) hits 0 and must reflect
    there, staying >= 0, with the same mean."""
    P, T, v = 20_000, 0.5, 1.0
    tau = np.array([0.0, 0.5, 1.0])
    x0 = np.tile([0.2, 50.0], (P, 1))  # the upper level never comes near the lower one
    n = len(tau)
    x_ref = np.broadcast_to(x0[:, None, :], (P, n, 2))
    V = np.zeros((P, n, 2, 2))
    V[..., 0, 0], V[..., 1, 1] = v * x_ref[..., 0], v * x_ref[..., 1]
    r = th.dyson_sde_wishart(x0, tau, x_ref=x_ref, K=np.zeros((P, n, 2)), V=V, C=np.full((P, n, 2), c), T=T,
                             dt=0.005, seed=3)
    x, xh = r.x.values[..., 0], r.x_half.values[..., 0]  # (tau, path), the lower level, at dt and dt/2
    assert np.all(x >= 0)
    mean, var = 0.2 + T * c * tau, T * v * 0.2 * tau + T ** 2 * v * c * tau ** 2 / 2
    # The weak bias at dt, estimated by halving the step on the same Brownian paths: for a
    # first-order scheme bias(dt) = c dt, so bias(dt) = 2 (E x_dt - E x_dt/2) (Richardson);
    # measured, not assumed. Tolerance: 4 standard errors of the mean plus that bias (plus 1e-12:
    # rounding of x = s^2 at tau = 0, where the standard error is 0).
    bias_mean = 2 * np.abs(x.mean(axis=1) - xh.mean(axis=1)) + 1e-12
    assert np.all(np.abs(x.mean(axis=1) - mean) <= 4 * np.sqrt(var / P) + bias_mean)
    if check_var:  # variance: 4 standard errors (sd of the sample variance ~ var sqrt(2/P) for near-Gaussian
        # fluctuations, doubled for the skewness of the Bessel law) plus the bias estimated the same way
        bias_var = 2 * np.abs(x.var(axis=1) - xh.var(axis=1)) + 1e-12
        assert np.all(np.abs(x.var(axis=1) - var) <= 4 * 2 * var * np.sqrt(2 / P) + bias_var)


def test_dyson_wishart_bad_input():
    ok = dict(x_ref=np.ones((1, 2, 2)), K=np.zeros((1, 2, 2)), V=np.ones((1, 2, 2, 2)), C=np.zeros((1, 2, 2)),
              T=1.0, dt=0.1, seed=0)
    with pytest.raises(ValueError, match="x0 must have shape .* positive, strictly ascending"):
        th.dyson_sde_wishart(np.array([[0.0, 1.0]]), [0.0, 1.0], **ok)
    with pytest.raises(ValueError, match=r"C must be finite with shape \(1, 2, 2\)"):
        th.dyson_sde_wishart(np.array([[0.5, 1.0]]), [0.0, 1.0], **{**ok, "C": np.zeros(3)})


def test_dyson_wishart_near_collision_does_not_throw_a_level_away():
    """Two levels 1e-8 apart repel with T V / gap = 1e8: an explicit step of 0.01 would move one
    by 1e6. The pair step keeps them at their exact separation u with u^2 = u0^2 + 4 T V_12 tau
    (0.63 at tau = 0.1; noise and drifts off; V_13 = V_23 = 0, so the third level does not
    couple), within 0.05: the pair step's O(h) error in the separation."""
    P, n = 50, 2
    x0 = np.tile([1.0, 1.0 + 1e-8, 3.0], (P, 1))
    x_ref = np.broadcast_to(x0[:, None, :], (P, n, 3))
    V = np.zeros((P, n, 3, 3))
    V[..., 0, 1] = V[..., 1, 0] = 1.0
    r = th.dyson_sde_wishart(x0, [0.0, 0.1], x_ref=x_ref, K=np.zeros((P, n, 3)), V=V, C=np.zeros((P, n, 3)),
                             T=1.0, dt=0.01, seed=0)
    x = r.x.values[-1]
    assert np.all(x < 3.5) and np.all(np.abs(x[:, 1] - x[:, 0] - np.sqrt(0.4)) < 0.05)
    assert r.attrs["strong_error"] < 0.05


def _integrators(P=7, N=3, n=4):
    """The three Euler-Maruyama integrators on P paths with different coefficients per path and record."""
    rng = np.random.default_rng(3)
    tau = np.array([0.0, 0.3, 0.7, 1.0])
    x0 = np.sort(rng.uniform(0.5, 3.0, (P, N)), axis=1)
    x_ref = x0[:, None, :] * rng.uniform(0.8, 1.2, (P, n, N))
    K = rng.normal(0.0, 0.3, (P, n, N))
    A = rng.normal(size=(P, n, N, N))
    V = 0.1 * np.abs(A + A.transpose(0, 1, 3, 2))
    C = rng.uniform(0.0, 0.2, (P, n, N))
    return {
        "spacing": lambda: th.level_spacing_sde(x0[:, 1] - x0[:, 0], tau, K_S=K[..., 0], V_S=V[..., 0, 1],
                                                D_S=V[..., 0, 0], T=0.3, dt=0.01, seed=5, interpolate="linear"),
        "dyson": lambda: th.dyson_sde(x0, tau, K=K, V=V, T=0.3, dt=0.01, seed=5),
        "wishart": lambda: th.dyson_sde_wishart(x0, tau, x_ref=x_ref, K=K, V=V, C=C, T=0.3, dt=0.01, seed=5),
    }


@pytest.mark.parametrize("name", ["spacing", "dyson", "wishart"])
def test_paths_in_blocks_give_the_paths_integrated_at_once(name, monkeypatch):
    """The normals are held for a block of paths at a time (memory at the paper preset): blocks of one
    path and of three (seven paths: an uneven last block) give the same numbers, bit for bit, as all
    paths at once, at both steps, and the same strong error."""
    run = _integrators()[name]
    whole = run()
    per_path = 8 * 1.5 * (2 * 100) * (1 if name == "spacing" else 3)  # bytes: 2 x 100 half steps of dt/2
    for paths in (1, 3):
        monkeypatch.setattr(th, "_NORMALS_BYTES", int(paths * per_path))
        blocks = run()
        for var in whole.data_vars:
            np.testing.assert_array_equal(blocks[var].values, whole[var].values)
        assert blocks.attrs["strong_error"] == whole.attrs["strong_error"]
