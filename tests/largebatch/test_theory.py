"""The low-dimensional dynamics: Gaussian averages in closed form, and against SGD at finite d."""

import numpy as np
import pytest

from tsdyn import largebatch as lb
from tsdyn.largebatch import experiments, theory


def test_moments_at_zero_overlap_in_closed_form():
    """He2 student, He2 target, square loss, m = 0 (lambda, nu independent), with
    F = (y - f) sqrt(2) lambda, y = He2(nu)/sqrt2, f = He2(lambda)/sqrt2:
    E[F lambda] = -E[(lambda^2 - 1) lambda^2] = -2, E[F nu] = 0,
    E[F^2] = 2 E[y^2] + E[(lambda^2 - 1)^2 lambda^2] = 2 + 10 = 12,
    E[F^2 (lambda^2 + nu^2)] = 96 (expanding the Gaussian moments by hand)."""
    p = lb.Params(d=200, mu=0.5, gamma0=0.3, target="he2", activation="he2")
    m = theory.moments(p, np.zeros((1, 1)), np.eye(1))
    assert m["r"] == 2
    np.testing.assert_allclose([m["F_lam"][0, 0], m["F_nu"][0, 0], m["FF"][0, 0], m["FF_z2"][0, 0]],
                               [-2.0, 0.0, 12.0, 96.0], atol=1e-10)  # quadrature exact for polynomials
    # the d -> infinity map: m' = m / sqrt(1 - 4 gamma + gamma^2 (12 d / n_b + 4))
    eps, g = 1e-4, p.gamma
    M, Q = theory.step_map(p, np.array([[eps]]), np.eye(1), finite_d=False)
    expected = eps / np.sqrt(1 - 4 * g + g * g * (12 * p.d / p.n_b + 4))
    assert abs(M[0, 0] / expected - 1) < 1e-6  # O(eps^2) terms of the map
    assert Q[0, 0] == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("loss", ["square", "correlation"])
def test_moments_against_monte_carlo(loss):
    """At M = [[0.6], [0.2]], Q12 = 0.3 (p = 2, ReLU student, He3 target, label noise):
    quadrature vs 4e5 Monte Carlo samples, within 5 standard errors (statistics only: the
    rule is split at the two kink planes and exact to rounding, see the next tests)."""
    p = lb.Params(d=100, p=2, target="he3", activation="relu", loss=loss, noise=0.3)
    M, Q = np.array([[0.6], [0.2]]), np.array([[1.0, 0.3], [0.3, 1.0]])
    mom = theory.moments(p, M, Q)
    rng = np.random.default_rng(0)
    Om = theory.covariance(M, Q, 1)
    u = rng.multivariate_normal(np.zeros(3), Om, size=400_000)
    lam, nu = u[:, :2], u[:, 2]
    y = (nu ** 3 - 3 * nu) / np.sqrt(6) + np.sqrt(0.3) * rng.standard_normal(len(nu))
    r = y - np.maximum(lam, 0).mean(1) if loss == "square" else y
    F = r[:, None] * (lam > 0) / 2
    for name, samples in [("F_nu", F * nu[:, None]), ("F_lam00", F[:, :1] * lam[:, :1]),
                          ("F_lam10", F[:, 1:] * lam[:, :1]), ("FF01", F[:, :1] * F[:, 1:]),
                          ("FF11", F[:, 1:] ** 2)]:
        value = {"F_nu": mom["F_nu"][:, 0], "F_lam00": mom["F_lam"][0, 0], "F_lam10": mom["F_lam"][1, 0],
                 "FF01": mom["FF"][0, 1], "FF11": mom["FF"][1, 1]}[name]
        mc = samples.mean(0).ravel()
        se = samples.std(0).ravel() / np.sqrt(len(samples))
        assert np.all(np.abs(np.ravel(value) - mc) < 5 * se), (name, value, mc, se)


CASES = {
    # l = 2 on the learning side of the noise boundary: gamma d / n_b = 0.1 < 1/3
    "projected, square loss, mu=delta=1/2": dict(d=512, mu=0.5, delta=0.5, gamma0=0.1, steps=600),
    # large batch, O(1) learning rate: relaxes to m = 1 in a few tens of steps
    "projected, square loss, mu=1, delta=0": dict(d=256, mu=1.0, delta=0.0, gamma0=0.15, steps=40),
    # correlation loss: stationary overlap set by the noise
    "correlation loss, mu=1, delta=0": dict(d=256, mu=1.0, delta=0.0, gamma0=0.2, loss="correlation",
                                            steps=40),
    "spherical, mu=1, delta=0": dict(d=256, mu=1.0, delta=0.0, gamma0=0.3, algorithm="spherical",
                                     steps=40),
}


@pytest.mark.parametrize("name", CASES)
def test_recursion_is_the_mean_of_sgd(name):
    """Mean overlap of 32 SGD runs (full sampler) against the recursion from the same
    start, at every recorded step: within 4 standard errors (Bonferroni over ~10 times
    at a ~1e-3 false-alarm rate) plus 1/d, the order of the fluctuation terms of
    E[g(m)] - g(E m) that the recursion drops (Var m accumulates to O(1/d) over
    the ~1/(gamma rate) steps of memory of the dynamics)."""
    kw = dict(CASES[name])
    steps = kw.pop("steps")
    p = lb.Params(target="he2", activation="he2", m0=0.2, **kw)
    runs = [lb.simulate(p, steps, seed=s, n_points=11) for s in range(32)]
    m = np.array([r.M.values[:, 0, 0] for r in runs])
    mean, se = m.mean(0), m.std(0, ddof=1) / np.sqrt(len(m))
    th = theory.dynamics(p, steps, init=runs[0]).M.values[:, 0, 0]
    assert np.all(np.abs(mean - th) <= 4 * se + 1.0 / p.d), np.max(np.abs(mean - th) - 4 * se)
    assert th[-1] > 0.5  # it learns (the test is not about a run that stays at zero)


def test_ode_limit_agrees_with_the_recursion_for_small_steps():
    """gamma = 0.1 / sqrt(512): one step moves m by ~1e-3, so the ODE and the recursion
    differ by O(step) ~ 1e-3 along the whole curve."""
    p = lb.Params(d=512, mu=0.5, delta=0.5, gamma0=0.1, target="he2", activation="he2", m0=0.2)
    rec = theory.dynamics(p, 600, n_points=7)
    ode = theory.dynamics(p, 600, n_points=7, method="ode")
    np.testing.assert_allclose(ode.M.values, rec.M.values, atol=3e-3)


def test_noise_boundary_from_the_linear_rate():
    """l = 2 on delta = 1 - mu (gamma d / n_b = gamma0 / n0 fixed): the small-overlap
    growth rate changes sign at gamma0 / n0 ~ 2 E[...] / E[F^2] = 1/3 in the d -> inf map
    (rate ~ gamma (2 - 6 gamma d / n_b) from the closed-form moments above)."""
    rates = [theory.linear_rate(lb.Params(d=4096, mu=0.5, delta=0.5, gamma0=g0, target="he2",
                                          activation="he2"), finite_d=False) for g0 in (0.3, 0.36)]
    assert rates[0] > 0 > rates[1]


def test_exponents():
    assert theory.theta(2, 0.0) == 1 and theory.theta(2, 1.0) == 0 and theory.theta(2, 2.0) == 0
    assert theory.theta(3, 0.0) == 2 and theory.theta(3, 1.5) == 0.5 and theory.theta(3, 2.5) == 0.5
    assert theory.theta(3, 2.0, "correlation") == 0 and theory.theta(4, 1.0, "spherical") == 2
    assert theory.best_delta(3, 1.5) == 0 and theory.best_delta(3, 2.0, "correlation") == -0.5
    assert theory.delta_noise(3, 1.0) == 0.5
    with pytest.raises(ValueError, match="variant must be"):
        theory.theta(2, 0.5, "adam")
    for bad in (0, 1):  # ell = 1 has no search phase: the exponents are for ell >= 2
        with pytest.raises(ValueError, match=r"ell \(information exponent; the exponents need ell >= 2\) "
                                             r"must be an integer >= 2"):
            theory.theta(bad, 0.5)
        with pytest.raises(ValueError, match="must be an integer >= 2"):
            theory.delta_noise(bad, 0.5)
        with pytest.raises(ValueError, match="must be an integer >= 2"):
            theory.best_delta(bad, 0.5)


def test_bad_initial_state():
    p = lb.Params(d=64, p=2)
    with pytest.raises(ValueError, match="unit diagonal"):
        theory.dynamics(p, 5, M0=np.zeros((2, 1)), Q0=2 * np.eye(2))
    with pytest.raises(ValueError, match="positive semi-definite"):
        theory.dynamics(p, 5, M0=np.full((2, 1), 0.9), Q0=np.array([[1, -0.9], [-0.9, 1]]))
    with pytest.raises(ValueError, match="give M0"):
        theory.dynamics(p, 5)


def test_fluctuation_closure_predicts_the_spread_and_the_mean():
    """He2, d = 256, mu = delta = 1/2, gamma0 = 0.1 (Sec. 3 (a)): 96 runs (exact-in-law
    sampler). The closure's mean is within 4 s.e. + 1/d of the runs' mean at every
    recorded step, and its predicted standard deviation within 25% of the runs' (the
    relative s.e. of a standard deviation from 96 runs is ~7%, so 25% is > 3 of them)."""
    p = lb.Params(d=256, mu=0.5, delta=0.5, gamma0=0.1, target="he2", activation="he2", m0=0.2)
    runs = [lb.simulate(p, 300, seed=700 + s, n_points=7, sampler="reduced") for s in range(96)]
    m = np.array([r.M.values[:, 0, 0] for r in runs])
    th = theory.dynamics(p, 300, init=runs[0], fluctuations=True)
    mean, se = m.mean(0), m.std(0, ddof=1) / np.sqrt(len(m))
    assert np.all(np.abs(mean - th.M.values[:, 0, 0]) <= 4 * se + 1 / p.d)
    np.testing.assert_allclose(np.sqrt(th.M_var.values[1:]), m.std(0, ddof=1)[1:], rtol=0.25)


@pytest.mark.parametrize("act, tgt, loss", [("he2", "he2", "square"), ("he3", "he3", "correlation"),
                                            ("he4", "he4", "square"), ("square", "he3", "square")])
def test_exact_quadrature_for_polynomials(act, tgt, loss):
    """The degree-based node count gives the same moments as a rule with many more nodes
    (both exact for polynomials, so equal to rounding), including the third cumulant of Y, of degree up
    to 6 deg F."""
    p = lb.Params(d=100, target=tgt, activation=act, loss=loss, noise=0.2)
    n = theory._exact_nodes(p)
    a = theory.moments(p, np.array([[0.4]]), np.eye(1))
    b = theory.moments(p, np.array([[0.4]]), np.eye(1), n_nodes=n + 12)
    for key in ("F_lam", "F_nu", "FF", "FF_z2"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-10, atol=1e-12)
    for key in ("F2", "F4", "kappa3_Y"):
        np.testing.assert_allclose(a["jensen"][key], b["jensen"][key], rtol=1e-10)
    assert theory._exact_nodes(lb.Params(d=10, target="relu", activation="he2")) is None


def test_label_noise_rule_is_exact(monkeypatch):
    """The normaliser's moments average the label noise xi with a 4-node Gauss-Hermite rule, exact to
    degree 7 (Y^3 has degree 6 in xi): an 8-node rule gives the same moments to rounding."""
    from numpy.polynomial.hermite_e import hermegauss
    p = lb.Params(d=100, target="he3", activation="he2", loss="square", noise=0.5, gamma0=0.3)
    a = theory.moments(p, np.array([[0.4]]), np.eye(1))["jensen"]
    x, w = hermegauss(8)
    monkeypatch.setattr(theory, "_noise_rule", lambda noise: (x, w / w.sum()))
    b = theory.moments(p, np.array([[0.4]]), np.eye(1))["jensen"]
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-10, atol=1e-14)


def test_jensen_switch_off_gives_the_plain_ratio_of_means():
    """jensen=False is the ratio of the expected numerators; the correction is small, of
    relative order gamma^2 E[F^2] / n_b (E[F^2] = 12 at m = 0 for He2: ~1e-3 here, 2.4e-4 measured;
    the bound allows 2x for the m-dependence of the moments)."""
    p = lb.Params(d=256, mu=1.0, gamma0=0.15, target="he2", activation="he2")
    M0 = np.array([[0.3]])
    on = theory.step_map(p, M0, np.eye(1))[0][0, 0]
    off = theory.step_map(p, M0, np.eye(1), jensen=False)[0][0, 0]
    assert on != off and abs(on / off - 1) < 2 * 12 * p.gamma ** 2 / p.n_b


def test_normaliser_fluctuations_against_sampled_batches():
    """Var q and Cov(num, q) of one projected step (theory._q_fluctuations) against 20000 sampled
    batches, at n_b = d = 512, gamma = 0.2, correlation loss, He2 target and student, m = 0.83: there
    gamma E[F lambda] = 0.28, and the in-plane part of the gradient's fluctuation beside its part along
    w adds 40% to Var q (leaving it out gave Var q 31% low, 28 se, with 40000 batches). F = (nu^2 - 1) lambda
    (normalised He2) is written out here, apart from the library. Tolerance: 4 standard errors of the
    sampled moments, plus 3% for the terms of second order in the batch's fluctuation that the
    formulas leave out: the in-plane gamma^2 |dG_S|^2 alone adds 1-2% to Var q here (sampled: 3% of
    the in-plane part), and sampled Var q 3.3% +- 1.1% above the formula in 40000 batches."""
    d, m, g = 512, 0.83, 0.2
    p = lb.Params(d=d, mu=1.0, gamma0=g, target="he2", activation="he2", loss="correlation")
    rng = np.random.default_rng(8)
    num, q = [], []
    for _ in range(10):
        z1, z2 = rng.standard_normal((2, 2000, d))
        lam, nu = z1, m * z1 + np.sqrt(1 - m * m) * z2
        F = (nu ** 2 - 1) * lam  # He2(nu) He2'(lambda), He2(x) = (x^2 - 1) / sqrt 2
        beta, alpha, f2 = (F * z1).mean(1), (F * z2).mean(1), (F * F).sum(1) / d ** 2
        num.append(m * (1 + g * beta) + np.sqrt(1 - m * m) * g * alpha)
        q.append((1 + g * beta) ** 2 + (g * alpha) ** 2 + g * g * f2 * rng.chisquare(d - 2, beta.size))
    num, q = np.concatenate(num), np.concatenate(q)
    mom = theory.moments(p, np.array([[m]]), np.eye(1))
    var_q, cov = theory._q_fluctuations(p, mom)
    dq, dn = q - q.mean(), num - num.mean()
    for theory_value, products in ((var_q[0], dq * dq), (cov[0, 0], dn * dq)):
        se = products.std() / np.sqrt(products.size)
        assert abs(theory_value - products.mean()) <= 4 * se + 0.03 * abs(theory_value)


def test_unknown_spacing_raises():
    p = lb.Params(d=16, m0=0.2)
    with pytest.raises(ValueError, match="spacing must be one of"):
        theory.dynamics(p, 5, spacing="quadratic")
    with pytest.raises(ValueError, match="spacing must be one of"):
        lb.simulate(p, 5, seed=0, spacing="quadratic")


@pytest.mark.parametrize("m", [0.0, 0.3, -0.7, 0.95])
def test_polar_rule_at_relu_kinks_against_arc_cosine_closed_forms(m):
    """r = 2 with kinks: the polar rule split at the kink lines. Correlation loss, ReLU target
    and student: F = relu(nu) 1{lambda > 0}, so E[F lambda] = E[relu(u) relu(v)] =
    (sin t + (pi - t) cos t) / (2 pi) and E[F nu] = E[v^2 1{u>0} 1{v>0}] = (pi - t + sin t cos t) / (2 pi),
    cos t = m (arc-cosine kernels). Tolerance 1e-12: rounding over ~1e4 nodes (the rule's own
    error is below it: doubling the nodes changes every moment by < 1e-13)."""
    p = lb.Params(d=100, target="relu", activation="relu", loss="correlation")
    mom = theory.moments(p, np.array([[m]]), np.eye(1))
    t = np.arccos(m)
    assert mom["r"] == 2
    assert mom["F_lam"][0, 0] == pytest.approx((np.sin(t) + (np.pi - t) * np.cos(t)) / (2 * np.pi), abs=1e-12)
    assert mom["F_nu"][0, 0] == pytest.approx((np.pi - t + np.sin(t) * np.cos(t)) / (2 * np.pi), abs=1e-12)


@pytest.mark.parametrize("target, p_units", [("abs", 1), ("sign", 1), ("relu", 1), ("he3", 2), ("tanh", 2)])
def test_polar_rule_converged(target, p_units, monkeypatch):
    """Square loss, ReLU student (one unit, or two: r = 3), label noise, every moment (kappa_3 of Y
    included): doubling the radial and angular nodes and the Gauss-Hermite nodes on the smooth
    direction of a non-polynomial target (tanh, r = 3) changes nothing above 1e-12 (relative)."""
    p = lb.Params(d=100, p=p_units, target=target, activation="relu", loss="square", noise=0.3)
    M, Q = np.full((p_units, 1), 0.37), np.array([[1.0, 0.2], [0.2, 1.0]])[:p_units, :p_units]

    def flat(mom):
        parts = [np.ravel(v) for k, v in mom.items() if k not in ("r", "jensen")]
        return np.concatenate(parts + [np.ravel(v) for v in mom["jensen"].values()])
    a = flat(theory.moments(p, M, Q))
    monkeypatch.setattr(theory, "_POLAR_RADIAL", 2 * theory._POLAR_RADIAL)
    monkeypatch.setattr(theory, "_POLAR_ANGULAR", 2 * theory._POLAR_ANGULAR)
    monkeypatch.setattr(theory, "_SPLIT_HERMITE", 2 * theory._SPLIT_HERMITE)
    b = flat(theory.moments(p, M, Q))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("q12", [0.0, 0.4, -0.6])
def test_split_rule_two_relu_units_against_the_orthant_probability(q12):
    """r = 3: two ReLU units with overlap Q12 and a linear target orthogonal to both (M = 0), correlation
    loss: F_j = nu 1{lambda_j > 0} / 2, so E[F_1 F_2] = E[nu^2] P(lambda_1 > 0, lambda_2 > 0) / 4
    = (pi - t) / (8 pi), cos t = Q12, and E[F_1^2] = 1/8. The split rule (polar in the plane of the
    kink normals x Gauss-Hermite along nu) is exact to rounding (1e-12)."""
    p = lb.Params(d=100, p=2, target="linear", activation="relu", loss="correlation")
    mom = theory.moments(p, np.zeros((2, 1)), np.array([[1.0, q12], [q12, 1.0]]))
    assert mom["r"] == 3
    assert mom["FF"][0, 1] == pytest.approx((np.pi - np.arccos(q12)) / (8 * np.pi), abs=1e-12)
    assert mom["FF"][0, 0] == pytest.approx(1 / 8, abs=1e-12)


def test_time_regimes_of_the_time_batch_diagram():
    # projected SGD: power law down to the plateau l/2 - 1 at the optimal batch d^(l/2)
    assert theory.time_regime(3, 1.0) == (1.0, "power law")
    assert theory.time_regime(3, 1.5) == (0.5, "plateau")
    assert theory.time_regime(2, 3.0) == (0.0, "plateau")
    # correlation loss / spherical: power law to mu = l - 1, polylog to mu = l, then one step
    assert theory.time_regime(3, 1.0, "correlation") == (1.0, "power law")
    assert theory.time_regime(3, 2.0, "spherical") == (0.0, "polylog")
    assert theory.time_regime(3, 2.9, "correlation") == (0.0, "polylog")
    assert theory.time_regime(3, 3.0, "correlation") == (0.0, "one step")
    assert theory.time_regime(2, 1.0, "correlation") == (0.0, "polylog")
    assert theory.expansion_validity_mu(3) == 2.0
    with pytest.raises(ValueError):
        theory.time_regime(3, 1.0, "adam")


@pytest.mark.parametrize("ell, delta, gamma0, m0, variant", [(2, 0.5, 0.15, 128 ** -0.5, "projected"),
                                                             (2, 0.5, 0.15, 128 ** -0.5, "spherical"),
                                                             (3, 0.0, 0.3, 0.3, "projected")])
def test_single_sample_step_mean_is_the_mean_of_one_sgd_step(ell, delta, gamma0, m0, variant):
    """n_b = 1: the exact one-step mean against 3000 one-step SGD samples (within 3.5 s.e.; three
    comparisons), where the expected map is off (He2: by ~12 s.e.; He3: by a factor ~50). The
    quadrature has converged: 200 and 300 nodes per axis agree to a quarter of the s.e."""
    from tsdyn.largebatch import experiments
    r = experiments.one_step_point(seed=21, n_samples=3000, d=128 if ell == 2 else 64, ell=ell, mu=0.0, delta=delta,
                                   gamma0=gamma0, n0=1.0, m0=m0, variant=variant)
    assert abs(r["exact"] - r["sim"]) <= 3.5 * r["sim_se"]
    assert abs(r["map"] - r["sim"]) > 5 * r["sim_se"]
    p = experiments.one_step_params(d=128 if ell == 2 else 64, ell=ell, mu=0.0, delta=delta, gamma0=gamma0, n0=1.0,
                                    m0=m0, variant=variant)
    assert abs(theory.single_sample_step_mean(p, m0, n_zeta=300) - r["exact"]) <= 0.25 * r["sim_se"]
    with pytest.raises(ValueError, match="n_b = 1"):
        theory.single_sample_step_mean(lb.Params(d=64, mu=1.0), 0.1)


@pytest.mark.parametrize("d, ell, mu, delta, gamma0, m0, variant", [
    (64, 3, 0.5, 0.0, 0.3, 0.3, "projected"),  # n_b = 8: the map gives 0.012, SGD 0.18
    (128, 2, 0.5, 0.25, 0.1, 128 ** -0.5, "projected"),  # n_b = 11, near the noise boundary
    (128, 2, 0.5, 0.25, 0.1, 128 ** -0.5, "spherical"),
    (64, 3, 0.0, 0.0, 0.3, 0.3, "projected")])  # n_b = 1: also against the quadrature
def test_batch_step_mean_is_the_mean_of_one_sgd_step(d, ell, mu, delta, gamma0, m0, variant):
    """Any n_b: the exact one-step mean (Monte Carlo in the 2 n_b in-plane coordinates, the chi-square
    by quadrature) against 3000 one-step SGD samples in R^d: within 3.5 combined standard errors
    (four comparisons). At n_b = 1 it agrees with the two-dimensional quadrature within 3 of its own
    standard errors; where the expected map is far off (He3, n_b = 8) the test says so."""
    from tsdyn.largebatch import experiments
    r = experiments.one_step_point(seed=23, n_samples=3000, d=d, ell=ell, mu=mu, delta=delta, gamma0=gamma0,
                                   n0=1.0, m0=m0, variant=variant)
    p = experiments.one_step_params(d=d, ell=ell, mu=mu, delta=delta, gamma0=gamma0, n0=1.0, m0=m0, variant=variant)
    exact, se = theory.batch_step_mean(p, m0, n_batches=40000, seed=5)
    assert se < 0.5 * r["sim_se"]
    assert abs(exact - r["sim"]) <= 3.5 * np.hypot(se, r["sim_se"])
    if p.n_b == 1:
        assert abs(exact - theory.single_sample_step_mean(p, m0)) <= 3 * se
    if ell == 3 and p.n_b == 8:
        assert abs(r["map"] - r["sim"]) > 20 * r["sim_se"]
    with pytest.raises(ValueError, match="p = k = 1"):
        theory.batch_step_mean(lb.Params(d=64, mu=1.0, p=2, k=2), 0.1)


def test_fractional_recovery_time_lies_between_the_steps_around_the_crossing():
    """The interpolated crossing lies in (T - 1, T] of the whole-step time, and it removes the integer
    jumps: over d = 1024..65536 at l = 2, mu = 1.25 (T ~ 10-15 steps), its local exponents vary smoothly
    (successive differences below 0.02, against up to 0.1 for whole steps)."""
    from tsdyn.largebatch import analysis, experiments
    ds = [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    kw = dict(ell=2, mu=1.25, gamma0=0.15, n0=1.0, eta=0.5)
    T = np.array([experiments.theory_recovery_time(d=d, **kw) for d in ds])
    Tf = np.array([experiments.theory_recovery_time(d=d, fractional=True, **kw) for d in ds])
    assert np.all((Tf > T - 1) & (Tf <= T))
    loc_f = analysis.local_theta(ds, Tf, ell=2, eta=0.5)[1]
    assert np.max(np.abs(np.diff(loc_f))) < 0.02


def test_exact_step_mean_is_finite_at_large_d():
    """The Gamma((d - 2)/2) rule of the exact one-step mean is built without forming Gamma(shape),
    which overflows past d ~ 344 (the paper preset's diagrams are at d = 512 and 1024): it matches
    scipy's generalised Gauss-Laguerre rule where that one works (to rounding), has the law's mean
    and variance (both equal to the shape) at d = 1024, and the step mean there is finite and
    converged in the number of nodes."""
    from scipy.special import gammaln, roots_genlaguerre
    y, w = theory._gamma_rule(24, 31.0)
    y_ref, w_ref = roots_genlaguerre(24, 30.0)
    np.testing.assert_allclose(y, y_ref, rtol=1e-12)
    np.testing.assert_allclose(w, w_ref * np.exp(-gammaln(31.0)), atol=1e-13)
    y, w = theory._gamma_rule(40, 511.0)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert (w * y).sum() == pytest.approx(511.0, rel=1e-12)
    assert (w * y * y).sum() - (w * y).sum() ** 2 == pytest.approx(511.0, rel=1e-9)
    p = experiments.scaling_params(d=1024, ell=2, mu=0.0, delta=0.5, gamma0=0.15)
    a = theory.single_sample_step_mean(p, p.m0)
    assert np.isfinite(a) and a == pytest.approx(theory.single_sample_step_mean(p, p.m0, n_chi=80), rel=1e-10)


def test_law_of_the_overlap_against_sgd_where_the_runs_split():
    """Sec. 3's finite-d point at d = 128, n_b = 32: about 4% of the runs flip to the mirror state m < 0
    (even target), so the runs' law has two modes and no closure in its first two moments holds. The
    law carried as a Markov chain on a grid (method="law": kernel sampled, 8000 batches per grid point
    in 16 groups) against 1024 SGD runs after 60 steps: the mean, the mass below zero and the spread,
    each within 4 combined standard errors (SGD's: the mean's, binomial, bootstrap; the law's Monte Carlo
    error from its 16 independent kernels, 15 degrees of freedom). SGD's errors dominate (0.008, 0.006,
    0.019 against the law's few thousandths), so the comparison is limited by the runs; 4 standard errors
    keep a false alarm below 1e-4 per assertion. 401 grid points: h^2 / 6 = 4e-6 against a one-step
    variance of order 1e-3 here."""
    from tsdyn.largebatch import experiments
    p = experiments.finite_d_params(d=128, n0=0.25)
    runs = [lb.simulate(p, 60, seed=900 + s, n_points=2, sampler="reduced") for s in range(1024)]
    m = np.array([r.M.values[-1, 0, 0] for r in runs])
    law = theory.dynamics(p, 60, init=runs[0], method="law", n_batches=8000, grid=401, seed=5)
    assert law.law.values[-1].sum() == pytest.approx(1.0, abs=1e-9)
    assert abs(float(law.M[-1, 0, 0]) - m.mean()) <= 4 * np.hypot(m.std(ddof=1) / np.sqrt(m.size),
                                                                 float(law.M_mc_se[-1]))
    x = law.m.values
    below = (x < 0) + 0.5 * (x == 0)
    groups = law.law_groups.values[:, -1]  # (group, grid) at the last step
    neg, neg_g = float(law.law.values[-1] @ below), groups @ below
    mc = neg_g.std(ddof=1) / np.sqrt(len(groups))
    assert 0.01 < neg < 0.2
    assert abs(np.mean(m < 0) - neg) <= 4 * np.hypot(np.sqrt(neg * (1 - neg) / m.size), mc)
    sd_g = np.sqrt(groups @ x ** 2 - (groups @ x) ** 2)
    rng = np.random.default_rng(0)
    boot = np.std([m[rng.integers(0, m.size, m.size)].std(ddof=1) for _ in range(300)])
    assert abs(np.sqrt(float(law.M_var[-1])) - m.std(ddof=1)) <= 4 * np.hypot(boot, sd_g.std(ddof=1)
                                                                                / np.sqrt(len(groups)))


def test_law_rejects_what_it_cannot_carry():
    from tsdyn.largebatch import experiments
    p = experiments.finite_d_params(d=64, n0=0.25)
    with pytest.raises(ValueError, match="p = k = 1"):
        theory.dynamics(lb.Params(d=64, mu=1.0, p=2, k=2, m0=0.1), 5, method="law", n_batches=64)
    with pytest.raises(ValueError, match="n_batches"):
        theory.dynamics(p, 5, method="law", n_batches=16)
    with pytest.raises(ValueError, match="grid"):
        theory.dynamics(p, 5, method="law", n_batches=64, grid=10 ** 5)
    with pytest.raises(ValueError, match="fluctuations=True"):
        theory.dynamics(p, 5, method="law", n_batches=64, fluctuations=True)
    with pytest.raises(ValueError, match="not finite"):
        theory._deposit(np.array([0.1, np.nan]), np.ones(2), 11)


def test_deposit_keeps_mass_and_mean():
    """The law's grid deposit shares each point between its two neighbours: total weight and mean are
    kept to rounding, also at the ends of [-1, 1]."""
    v = np.array([-1.0, -0.3337, 0.0, 0.52, 0.99999, 1.0])
    w = np.array([0.1, 0.2, 0.05, 0.3, 0.15, 0.2])
    P = theory._deposit(v, w, 101)
    x = np.linspace(-1, 1, 101)
    assert P.sum() == pytest.approx(w.sum(), abs=1e-14) and P @ x == pytest.approx(w @ v, abs=1e-14)


def test_exact_recursion_is_the_mean_of_sgd_and_the_series_is_off_by_its_next_term():
    """Correlation loss, He2, mu = 1, delta = 0, gamma0 = 0.2, d = n_b = 128 (Sec. 3's finite-d point).
    The exact one-step mean with the spread closure (method="exact") is the mean of 1024 SGD runs after
    60 steps within 3.5 combined standard errors (SGD's and the recursion's own Monte Carlo error,
    propagated). The series recursion is a truncated expansion in the normaliser's fluctuations; at this
    batch its error is not negligible (after 60 steps it sits 0.005 above the runs, 5 se of 1024), and
    one step of it is off from the exact one-step mean by no more than its first omitted term
    (theory.series_terms; measured: about a sixth of it at m = 0.83), plus 4 Monte Carlo se.
    (The exact closure's predicted spread of the runs, 0.029, is below these 1024 runs' 0.031 +- 0.001,
    bootstrap, which have a heavy left tail, skewness -0.95; the 4096 runs of the chapter's table and the
    part above zero of method="law"'s law both give 0.029, so it is a fluctuation of these runs. The mean
    is what is asserted.)"""
    from tsdyn.largebatch import experiments
    p = experiments.finite_d_params(d=128, n0=1.0)
    runs = [lb.simulate(p, 60, seed=500 + s, n_points=2, sampler="reduced") for s in range(1024)]
    m = np.array([r.M.values[-1, 0, 0] for r in runs])
    mean, se = m.mean(), m.std(ddof=1) / np.sqrt(m.size)
    ex = theory.dynamics(p, 60, init=runs[0], method="exact", fluctuations=True, n_batches=10000, seed=3)
    mc_se = float(ex.M_mc_se[-1])
    assert 0 < mc_se < se
    assert abs(float(ex.M[-1, 0, 0]) - mean) <= 3.5 * np.hypot(se, mc_se)
    for m1 in (0.5, 0.83):
        M1 = np.array([[m1]])
        series = float(theory.step_map(p, M1, np.eye(1))[0][0, 0])
        exact, exact_se = theory.batch_step_mean(p, m1, n_batches=50000, seed=4)
        kept, omitted = theory.series_terms(p, M1, np.eye(1))
        assert omitted[0] <= 0.5 * kept[0]  # the factor is on at this batch
        assert abs(series - exact) <= 4 * exact_se + omitted[0] * series
    with pytest.raises(ValueError, match="p = k = 1"):
        theory.dynamics(lb.Params(d=64, mu=1.0, p=2, k=2, m0=0.1), 5, method="exact")
    with pytest.raises(ValueError, match="method must be"):
        theory.dynamics(p, 5, method="exakt")
