"""The chapter's derived numbers: exponent fits, budget line, phase agreement, giant steps."""

import numpy as np
import pytest

from tsdyn import largebatch as lb
from tsdyn.largebatch import analysis, experiments, theory


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


def test_optimal_batch_is_the_edge_of_the_plateau():
    nb = [1.0, 32.0, 1024.0, 32768.0]
    # plateau over the first three batches (within 2x of the minimum), then 30x more samples
    out = analysis.optimal_batch(nb, [1.3e4, 1.0e4, 1.1e4, 3.3e5], [5e2, 5e2, 5e2, 2e4])
    assert out["n_b"] == 1024.0 and out["index"] == 2 and out["resolved"]
    assert out["ratio_next"] == pytest.approx(33.0)
    # a point outside the factor stops the plateau even if a later one is back inside
    assert analysis.optimal_batch(nb, [1.0, 3.0, 1.0, 1.0], [0.1] * 4)["n_b"] == 1.0
    # the end of the grid: a lower bound only, never "resolved"
    out = analysis.optimal_batch(nb, [1.0, 1.1, 1.2, 1.3], [0.01] * 4)
    assert out["n_b"] == 32768.0 and out["ratio_next"] == np.inf and not out["resolved"]
    # a ratio within 2 s.e. of the factor is not resolved
    assert not analysis.optimal_batch(nb, [1.0, 1.9, 50, 60], [0.1, 0.1, 1, 1])["resolved"]
    with pytest.raises(ValueError, match="factor"):
        analysis.optimal_batch(nb, [1.0] * 4, [0.1] * 4, factor=1.0)
    with pytest.raises(ValueError, match="n_b must increase"):
        analysis.optimal_batch(nb[::-1], [1.0] * 4, [0.1] * 4)


def test_giant_step_simulation_matches_prediction_past_d_to_the_ell():
    """One step at gamma = 1e8 from m0 = d^-1/2 (d = 64, He2, correlation loss) with
    n_b = d^2.5: the overlap jumps from 0.125 to ~0.97. The measured mean over 16 runs is within
    4 s.e. (statistics) plus |pred - finite-d map| (the finite-d terms the d -> infinity formula
    leaves out, computed by the theory) of the prediction."""
    th = experiments.giant_step_theory(d=64, mu=2.5)
    m1 = np.array([experiments.giant_step_point(seed=s, d=64, mu=2.5)["m1"] for s in range(16)])
    se = m1.std(ddof=1) / np.sqrt(m1.size)
    assert th["m0"] == 0.125 and th["m1"] > 0.9
    assert abs(m1.mean() - th["m1"]) <= 4 * se + abs(th["m1"] - th["m1_finite_d"])
    # ... and a small batch n_b = d leaves the overlap at O(d^-1/2)
    assert experiments.giant_step_theory(d=64, mu=1.0)["m1"] < 0.2


def test_budget_line_for_ell_3_is_where_the_cubic_drift_uses_the_budget():
    """dm/dt = 3 gamma m^2 from m0 = d^-1/2 to eta takes (sqrt d - 1/eta) / (3 gamma) steps."""
    d, budget, g0, eta = 128, 500, 0.04, 0.5
    gamma = g0 * d ** -analysis.budget_delta(d, budget, g0, eta, ell=3)
    assert (np.sqrt(d) - 1 / eta) / (3 * gamma) == pytest.approx(budget)


def test_phase_sides_and_edges():
    deltas = [0.0, 0.25, 0.5, 0.75]
    ok = np.array([[False, True, True, False], [False, False, True, True]])
    frac = np.array([[0.0, 1.0, 2 / 3, 1 / 3], [1 / 3, 0.0, 2 / 3, 1.0]])
    s = analysis.phase_sides(frac, ok)
    # decided: row 0 none inside (each True has a False neighbour), delta=0 is outside only if its
    # upper neighbour agrees (it does not); row 1: delta=0 outside (edge + False above), delta=0.75
    # inside (True below, edge above)
    assert (s["n_inside"], s["n_outside"]) == (1, 1)
    assert s["inside"] == 1.0 and s["outside"] == pytest.approx(1 / 3)
    assert s["agree"] == 1.0  # every verdict (fraction >= 1/2) matches
    lo, hi = analysis.phase_edges(ok, deltas)
    np.testing.assert_array_equal(lo, [0.25, 0.5])
    np.testing.assert_array_equal(hi, [0.5, 0.75])
    off = analysis.edge_offsets(frac, ok, deltas)  # measured (>= 1/2): rows [.25, .5], [.5, .75]
    assert (off["lower"], off["upper"]) == (0.0, 0.0)
    np.testing.assert_array_equal(off["lower_signed"], [0.0, 0.0])
    off = analysis.edge_offsets(np.array([[0, 0, 0, 0], [1, 1, 1, 1.0]]), ok, deltas)
    assert off["lower"] == np.inf  # row 0: measured nothing, theory something
    np.testing.assert_array_equal(off["one_sided"], [-1, 0])  # row 0: the theory's region only
    # row 1: measured [0, 0.75] against theory [0.5, 0.75]: signed -0.5 and 0; row 0 nan
    np.testing.assert_array_equal(off["lower_signed"], [np.nan, -0.5])
    np.testing.assert_array_equal(off["upper_signed"], [np.nan, 0.0])
    # measured lower edges 0.25 and 0.5 against roots 0.3 and -inf (no root: nan)
    np.testing.assert_allclose(analysis.edge_minus_root(frac, deltas, [0.3, -np.inf]), [-0.05, np.nan])
    with pytest.raises(ValueError, match="root"):
        analysis.edge_minus_root(frac, deltas, [0.3])
    with pytest.raises(ValueError, match="equal 2-d grids"):
        analysis.phase_sides(frac, ok[0])
    with pytest.raises(ValueError, match="n_delta"):
        analysis.phase_edges(ok, deltas[:3])


@pytest.mark.parametrize("ell, mu, variant, g0, n0", [(3, 1.0, "projected", 0.04, 4.0),
                                                       (2, 0.5, "correlation", 0.15, 1.0),
                                                       (2, 0.5, "spherical", 0.15, 1.0)])
def test_finite_d_noise_boundary_tends_to_the_line_with_a_log_offset(ell, mu, variant, g0, n0):
    """The root of the theory's one-step growth at m0 = d^-1/2 is l/2 - mu + ln(kappa)/ln d to
    leading order (kappa from E[F^2] at m = 0): at d = 1e6 the rescaled offset is ln kappa up to
    the next order (measured <= 0.01), and the offset itself shrinks with d."""
    lnk = np.log(experiments.noise_kappa(ell=ell, variant=variant, gamma0=g0, n0=n0))
    offs = {d: experiments.noise_boundary_delta(d=d, ell=ell, mu=mu, variant=variant, gamma0=g0, n0=n0)
            - (ell / 2 - mu) for d in (128, 10 ** 6)}
    assert offs[10 ** 6] * np.log(1e6) == pytest.approx(lnk, abs=0.02)
    assert abs(offs[10 ** 6]) < abs(offs[128])
    # the root is a sign change of the growth
    dc = experiments.noise_boundary_delta(d=128, ell=ell, mu=mu, variant=variant, gamma0=g0, n0=n0)
    kw = dict(d=128, ell=ell, mu=mu, variant=variant, gamma0=g0, n0=n0)
    assert experiments.start_growth(delta=dc - 0.01, **kw) < 0 < experiments.start_growth(delta=dc + 0.01, **kw)


@pytest.mark.parametrize("variant", ["correlation", "spherical"])
@pytest.mark.parametrize("d", [128, 10 ** 4])
def test_giant_step_boundary_is_where_a_huge_step_stops_growing_the_start(variant, d):
    """At gamma = 0.15 d^2 the theory's step map grows m0 = d^-1/2 iff mu > mu_c (the formula)."""
    mc = experiments.giant_boundary_mu(d=d, ell=2, variant=variant)
    kw = dict(d=d, ell=2, delta=-2.0, variant=variant, gamma0=0.15)
    assert experiments.start_growth(mu=mc - 0.05, **kw) < 0 < experiments.start_growth(mu=mc + 0.05, **kw)


def test_noise_boundary_sides():
    # correlation loss past mu = l - 1: the start grows at every delta (giant-step side)
    assert experiments.noise_boundary_delta(d=128, ell=2, mu=1.5, variant="correlation", gamma0=0.15) == -np.inf
    p = experiments.theory_phase_point(d=64, ell=2, mu=1.0, delta=0.0, budget=200, gamma0=0.15)
    assert p["recovers"] and p["T"] <= 200


def test_censored_median_is_defined_only_when_more_than_half_finish():
    T = np.array([[5, 1, 3, 100, 100], [5, 1, 100, 100, 100], [2, 4, 6, 8, 100]], float)
    rec = np.array([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    med, bound = analysis.censored_median(T, rec, budget=100)
    # 3 of 5 finished: the median is the third smallest, 5; 2 of 5: only "> budget"
    np.testing.assert_array_equal(med, [5, 100, 6])
    np.testing.assert_array_equal(bound, [False, True, False])
    # even number of runs: half finished is not enough (the middle pair contains a censored run)
    med, bound = analysis.censored_median([1, 2, 9, 9], [1, 1, 0, 0], budget=9)
    assert bound and med == 9
    with pytest.raises(ValueError, match="shape of T"):
        analysis.censored_median(T, rec[:, :2])


def test_median_interval_covers_the_true_median_at_its_level():
    """Percentile bootstrap of the median of 32 exponential times: the 68% interval contains the
    true median ln 2 in 68% of 300 independent data sets (binomial s.e. 0.027; bootstrap intervals
    of a median with n = 32 are slightly conservative, so the check is 0.60 to 0.80)."""
    rng = np.random.default_rng(1)
    data = rng.exponential(size=(300, 32))
    out = analysis.median_interval(data, level=0.68, n_boot=500, seed=2)
    cover = np.mean((out["lo"] <= np.log(2)) & (np.log(2) <= out["hi"]))
    assert 0.60 <= cover <= 0.80
    np.testing.assert_allclose(out["median"], np.median(data, axis=1))
    # censoring: with 3 of 4 runs censored the median is undefined and the upper end infinite
    c = analysis.median_interval([[1.0, 7, 7, 7]], [[1, 0, 0, 0]], n_boot=200)
    assert np.isnan(c["median"][0]) and np.isinf(c["hi"][0]) and c["finished"][0] == 0.25


def test_fit_theta_median_recovers_the_exponent_with_calibrated_errors():
    """Heavy-tailed times T = 3 d^0.6 (1 + Exp) at 5 sizes, 32 runs each: over 60 data sets the
    fitted slope scatters around 0.6 with the spread its bootstrap error predicts (the z-scores'
    standard deviation within 0.7 to 1.4: its sampling error with 60 sets is ~0.09, plus the
    bootstrap's own small-sample bias)."""
    rng = np.random.default_rng(3)
    ds = np.array([32, 64, 128, 256, 512.0])
    z = []
    for _ in range(60):
        T = np.round(3 * ds[:, None] ** 0.6 * (1 + rng.exponential(size=(5, 32))))
        f = analysis.fit_theta_median(ds, T, ell=3, eta=0.5, n_boot=300, seed=int(rng.integers(1 << 30)))
        z.append((f["slope"] - 0.6) / f["slope_se"])
    z = np.array(z)
    assert abs(z.mean()) < 3 / np.sqrt(60) * 1.4
    assert 0.7 <= z.std() <= 1.4
    with pytest.raises(ValueError, match="more than half"):
        analysis.fit_theta_median(ds, T, np.arange(T.size).reshape(T.shape) % 32 < 10, ell=3, eta=0.5)


def test_one_step_point_agrees_with_the_map_at_a_large_batch():
    """At n_b = d (d = 128, He2, gamma = 0.15 d^-1/4) from m0 = d^-1/2 the expected map is the mean of
    one SGD step: 1000 samples, within 4 standard errors (one comparison, false alarm 6e-5)."""
    r = experiments.one_step_point(seed=3, n_samples=1000, d=128, ell=2, mu=1.0, delta=0.25, gamma0=0.15, n0=1.0,
                                   m0=128 ** -0.5)
    assert r["n_b"] == 128 and r["sim_growth"] > 0
    assert abs(r["sim"] - r["map"]) <= 4 * r["sim_se"]
    p = experiments.one_step_params(d=128, ell=2, mu=1.0, delta=0.25, gamma0=0.15, n0=1.0, m0=128 ** -0.5)
    assert r["map"] == theory.step_map(p, np.array([[p.m0]]), np.eye(1))[0][0, 0]


def test_fit_min_samples_recovers_the_plateau_exponent():
    """Heavy-tailed times T = 3 d^max(2 - mu, 1/2) (1 + Exp) (l = 3 projected SGD at the best learning
    rate) on mu = 0.5..2 at 5 sizes, 32 runs each, n_b = d^mu: the smallest n_b T over the batches
    grows like d^2 = d^(l-1). Over 40 data sets the slope scatters around 2 with the spread its
    bootstrap error predicts (z-scores' mean within 3 sampling errors, 1.4 x for the bootstrap's
    small-sample bias; standard deviation 0.6 to 1.5: three batches share the plateau, so the minimum's
    bias is not exactly d-independent)."""
    rng = np.random.default_rng(5)
    ds = np.array([32, 64, 128, 256, 512.0])
    mus = np.array([0.5, 1.0, 1.5, 2.0])
    nb = ds[None, :] ** mus[:, None]
    z = []
    for _ in range(40):
        T = np.round(3 * ds[None, :, None] ** np.maximum(2 - mus, 0.5)[:, None, None]
                     * (1 + rng.exponential(size=(4, 5, 32))))
        f = analysis.fit_min_samples(ds, nb, T, ell=3, eta=0.5, n_boot=200, seed=int(rng.integers(1 << 30)))
        z.append((f["slope"] - 2.0) / f["slope_se"])
        assert np.all(f["argmin"] <= 2)  # never the batch past the plateau
    z = np.array(z)
    assert abs(z.mean()) < 3 / np.sqrt(40) * 1.4
    assert 0.6 <= z.std() <= 1.5
    with pytest.raises(ValueError, match="n_mu, n_d, runs"):
        analysis.fit_min_samples(ds, nb[:, :3], T, ell=3, eta=0.5)


def test_one_step_root_measures_sgd_at_the_maps_root():
    """At the map's noise root of d = 64, He2, mu = 1 (n_b = 64), where the map agrees with one-step SGD
    (previous test), 1000 one-step samples give a mean growth within 4 standard errors of zero; the
    returned root is the map's (the start neither grows nor shrinks there) and the shift is the growth
    converted by the map's slope."""
    r = experiments.one_step_root(seed=11, n_samples=1000, d=64, ell=2, mu=1.0, gamma0=0.15, n0=1.0)
    assert r["n_b"] == 64 and r["slope"] > 0
    assert abs(experiments.start_growth(d=64, ell=2, mu=1.0, delta=r["root_map"], gamma0=0.15)) < 1e-3
    assert abs(r["growth"]) <= 4 * r["growth_se"]
    assert r["shift"] == pytest.approx(-r["growth"] / r["slope"]) and r["shift_se"] == pytest.approx(r["growth_se"] / r["slope"])


def test_boundary_shift_measures_a_known_shift_with_a_calibrated_error():
    """Recovery drawn from logistic laws across a fine delta grid (6 points, 128 runs each): a shift of
    0.005 of delta_half between two samples is recovered within 4 bootstrap errors, decreasing
    recovery (the other direction of the trend) too; with no shift, 20 repeats give z = shift / se with
    a standard deviation between 0.5 and 1.7 (a calibrated error; 20 repeats estimate it to +-16%)."""
    rng = np.random.default_rng(3)
    deltas = np.linspace(-0.04, 0.0, 6)

    def sample(half, sign=1.0):
        prob = 1.0 / (1.0 + np.exp(-sign * (deltas - half) / 0.005))
        return rng.random((deltas.size, 128)) < prob[:, None]

    for sign in (1.0, -1.0):
        r = analysis.boundary_shift(deltas, sample(-0.02, sign), sample(-0.015, sign), n_boot=300)
        assert abs(r["shift"] - 0.005) < 4 * r["se"] and r["se"] < 0.002
    z = [analysis.boundary_shift(deltas, sample(-0.02), sample(-0.02), n_boot=200, seed=i) for i in range(20)]
    z = np.array([x["shift"] / x["se"] for x in z])
    assert 0.5 < z.std() < 1.7
    with pytest.raises(ValueError, match="recovered must have shape"):
        analysis.half_recovery_delta(deltas, np.ones((5, 10), bool))
    assert np.isnan(analysis.half_recovery_delta(deltas, np.ones((6, 10), bool), n_boot=2)[0])  # never crosses 1/2
