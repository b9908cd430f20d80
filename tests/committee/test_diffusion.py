"""The finite-N diffusion of the overlaps (tsdyn.committee.diffusion) against the exact sampler.

Three levels, each against the exact-in-law overlap sampler or an independent closed form:

1. One step: the mean of the one-sample increments is the ODE's closed-form drift, and
   their covariance Sigma (eq. D1) is the covariance of N times one sampled SGD step at
   large N (erf and ReLU, label noise, mini-batches, trained second layer); the same
   comparison with the wrong batch size fails (power).
2. Whole runs through the Saad-Solla plateau (K = M = 2, eta = 1): the distribution of
   escape times of the diffusion and of the sampler at two N (two-sample KS, mean and
   standard deviation); the diffusion at the wrong N fails the same KS test (power).
3. What the linear theory of the escape (eq. D3) says: the mean grows by 1/(2 lambda)
   per unit of ln N, the spread does not shrink; and the Euler-Maruyama step does not
   move the escape times (step-size control).

Families of tests at family-wise level ALPHA = 1e-3, Bonferroni-corrected, as in
test_sampler.py.
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from tsdyn import committee
from tsdyn.committee import diffusion

ALPHA = 1e-3

CASES = {
    "erf, B=1, label noise": dict(N=20000, M=2, K=2, eta=1.0, sigma=0.2),
    "erf, B=3, both layers": dict(N=20000, M=2, K=3, eta=0.5, sigma=0.1, batch=3,
                                  train_second_layer=True, v_init=0.7),
    "relu, B=1": dict(N=20000, M=1, K=2, eta=0.3, g="relu", sigma=0.1),
}


def _z_limit(n_tests):
    """Two-sided |z| threshold of one test in a Bonferroni family of ``n_tests`` at ALPHA."""
    return stats.norm.isf(ALPHA / (2 * n_tests))


def _start(p, seed=1):
    G = committee.initial_overlaps(p, seed)
    K = p.K
    return G[:K, :K], G[:K, K:], G[K:, K:], np.full(K, p.v_init)


@pytest.mark.parametrize("name", list(CASES))
def test_mean_increment_is_the_ode_drift(name):
    """E psi = f (Goldt et al. eq. 9): the samples' mean against the closed-form drift."""
    p = committee.Params(**CASES[name])
    out = committee.step_covariance(p, *_start(p), n_samples=100_000, seed=2)
    z = (out["mean"] - out["drift"]) / out["mean_se"]
    assert np.max(np.abs(z)) < _z_limit(len(z))


def _sampled_covariance(p, Q, R, T, v, n, seed):
    """Covariance (and its standard errors) of N times one sampled step, on the coordinates
    of step_covariance."""
    Qs, Rs, vs = committee.one_step(p, Q, R, T, v, n, seed=seed)
    iu = np.triu_indices(p.K)
    cols = [Rs.reshape(n, -1), Qs[:, iu[0], iu[1]]]
    x0 = [R.ravel(), Q[iu]]
    if p.train_second_layer:
        cols.append(vs)
        x0.append(v)
    d = (np.concatenate(cols, axis=1) - np.concatenate(x0)) * p.N
    c = d - d.mean(0)
    cov = c.T @ c / (n - 1)
    se = np.sqrt(np.maximum((c * c).T @ (c * c) / n - cov ** 2, 0.0) / n)
    return cov, se


@pytest.mark.parametrize("name", list(CASES))
def test_step_covariance_is_the_samplers_at_large_N(name):
    """Sigma = Cov(psi) / B against N^2 Cov(one step) of the exact sampler.

    At N = 20000 the finite-N corrections to the covariance (|x|^2 / N - 1 and the
    x^b . x^b' / N of a batch) are relative O(eta^2 / N) ~ 1e-5, far below the
    statistical errors (~1% of an entry with 2e5 samples each), which alone set the limit.
    """
    p = committee.Params(**CASES[name])
    state = _start(p)
    n = 200_000
    out = committee.step_covariance(p, *state, n_samples=n, seed=3)
    cov, se = _sampled_covariance(p, *state, n, seed=4)
    iu = np.triu_indices(len(cov))
    z = ((cov - out["Sigma"]) / np.hypot(se, out["Sigma_se"]))[iu]
    limit = _z_limit(len(z))
    assert np.max(np.abs(z)) < limit
    # power: the diffusion matrix of the wrong batch size is rejected by the same test
    wrong = committee.step_covariance(dataclasses.replace(p, batch=p.batch + 1), *state,
                                      n_samples=n, seed=3)
    z_wrong = ((cov - wrong["Sigma"]) / np.hypot(se, wrong["Sigma_se"]))[iu]
    assert np.max(np.abs(z_wrong)) > limit


_HEIGHT = {}


def _escapes(method, N, runs, seed, t_max=300.0, dt=0.25):
    """Escape times from the plateau (K = M = 2, eta = 1) of ``runs`` sampled runs or diffusion
    paths, recorded at every unit of t (as in plateau_fluctuations, without its ODEs)."""
    p = committee.Params(N=N, M=2, K=2, eta=1.0)
    if 1.0 not in _HEIGHT:
        _HEIGHT[1.0] = committee.plateau(p)["eg"]
    n_points = int(t_max) + 1
    out = []
    for i in range(runs):
        ss = np.random.SeedSequence(seed, spawn_key=(i,))
        run = (committee.diffuse(p, t_max, seed=ss, n_points=n_points, dt=dt) if method == "diffusion"
               else committee.sample_overlaps(p, t_max, seed=ss, n_points=n_points))
        out.append(committee.escape_time(run, _HEIGHT[1.0] / 2))
    out = np.array(out)
    assert np.all(np.isfinite(out)), "a run did not leave the plateau within t_max"
    return out


@pytest.mark.slow
def test_escape_times_match_the_sampler_at_two_N():
    """The distribution of plateau escape times, diffusion against sampler, at N = 300 and
    3000 (K = M = 2, eta = 1, no label noise): a two-sample KS test per N (family of 2 at
    ALPHA), and the means and standard deviations within the Bonferroni z of their
    errors (family of 4). The diffusion at N / 10 fails the KS test (power: the mean escape
    shifts by ln(10) / (2 lambda) = 19, about one standard deviation)."""
    Ns, n_s, n_d = (300, 3000), 100, 300
    runs = {N: (_escapes("overlaps", N, n_s, 11 + i), _escapes("diffusion", N, n_d, 21 + i))
            for i, N in enumerate(Ns)}
    for N, (s, d) in runs.items():
        assert stats.ks_2samp(s, d).pvalue > ALPHA / 2, N
        z_mean = (s.mean() - d.mean()) / math.hypot(s.std(ddof=1) / math.sqrt(n_s),
                                                     d.std(ddof=1) / math.sqrt(n_d))
        # standard error of a standard deviation from the fourth moment (skewed law)
        def sd_se(x):
            m2, m4 = np.mean((x - x.mean()) ** 2), np.mean((x - x.mean()) ** 4)
            return math.sqrt((m4 - m2 ** 2) / len(x)) / (2 * math.sqrt(m2))
        z_sd = (s.std(ddof=1) - d.std(ddof=1)) / math.hypot(sd_se(s), sd_se(d))
        assert abs(z_mean) < _z_limit(4) and abs(z_sd) < _z_limit(4), (N, z_mean, z_sd)
    wrong = _escapes("diffusion", 300, n_d, 31)
    assert stats.ks_2samp(runs[3000][0], wrong).pvalue < ALPHA / 2


@pytest.mark.slow
def test_mean_escape_grows_like_ln_N_and_the_spread_does_not_shrink():
    """Eq. (D3) from the diffusion alone at N = 10^3, 10^4.5, 10^6: the fitted slope of the
    mean escape time on ln N is 1 / (2 lambda_max) of the plateau's linearised ODE (an
    independent code path: finite differences of the ODE's right-hand side), within 3.3
    standard errors; and the standard deviation at 10^6 is not below that at 10^3 by more
    than its errors allow (it does not shrink like N^(-1/2), which would be a factor 32)."""
    lam = committee.plateau(committee.Params(N=1000, M=2, K=2, eta=1.0))["lambda_max"]
    Ns = [1000, 31623, 1_000_000]
    esc = [_escapes("diffusion", N, 200, 40 + i, t_max=450.0) for i, N in enumerate(Ns)]
    means = np.array([e.mean() for e in esc])
    ses = np.array([e.std(ddof=1) / math.sqrt(len(e)) for e in esc])
    from tsdyn.stats import fit_line
    fit = fit_line(np.log(Ns), means, ses)
    assert abs(fit["slope"] - 1 / (2 * lam)) < 3.3 * fit["slope_se"]
    sd = np.array([e.std(ddof=1) for e in esc])
    # a standard deviation from 200 runs of a law with skewness 1.5: relative error ~ 8%
    assert sd[-1] > 0.7 * sd[0]


@pytest.mark.slow
def test_escape_times_do_not_depend_on_the_step():
    """Step-size control of the integration scheme: dt = 0.5 and 0.1 at N = 1000 give
    the same escape-time distribution (KS, and the means within 3.3 standard errors)."""
    a = _escapes("diffusion", 1000, 200, 51, dt=0.5)
    b = _escapes("diffusion", 1000, 200, 52, dt=0.1)
    assert stats.ks_2samp(a, b).pvalue > ALPHA
    assert abs(a.mean() - b.mean()) < 3.3 * math.hypot(a.std(ddof=1), b.std(ddof=1)) / math.sqrt(200)


def test_linear_escape_law_has_the_stated_moments():
    """The CDF of eq. (D3): mean t_mean, standard deviation pi / (2 sqrt 2 lambda), skewness
    1.535 (quadrature of the density on a fine grid; accuracy 1e-4 of the grid)."""
    lam, t_mean = 0.25, 10.0
    t = np.linspace(t_mean - 40 / lam, t_mean + 120 / lam, 400_001)
    pdf = np.gradient(committee.linear_escape_cdf(t, lam, t_mean), t)
    dt = t[1] - t[0]
    m = np.sum(t * pdf) * dt
    sd = math.sqrt(np.sum((t - m) ** 2 * pdf) * dt)
    skew = np.sum((t - m) ** 3 * pdf) * dt / sd ** 3
    assert abs(m - t_mean) < 1e-3 / lam
    assert abs(sd * lam - math.pi / (2 * math.sqrt(2))) < 1e-3
    assert abs(skew - diffusion.LOG_GAUSS_SKEW) < 1e-2


def test_path_starts_where_the_sampler_starts_and_is_reproducible():
    p = committee.Params(N=500, M=2, K=3, eta=0.5, sigma=0.1, batch=2, train_second_layer=True)
    a = committee.diffuse(p, 5.0, seed=7, n_points=6)
    b = committee.diffuse(p, 5.0, seed=7, n_points=6)
    s = committee.sample_overlaps(p, 5.0, seed=7, n_points=6)
    np.testing.assert_array_equal(a.Q.values, b.Q.values)
    # the same draw; the sampler rebuilds Q and R from its frame (rounding, 1e-16)
    np.testing.assert_allclose(a.Q.values[0], s.Q.values[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.R.values[0], s.R.values[0], rtol=1e-12, atol=1e-14)
    assert a.attrs["kind"] == "diffusion" and not bool(a.diverged)
    assert not np.array_equal(a.Q.values[-1], committee.diffuse(p, 5.0, seed=8, n_points=6).Q.values[-1])


def test_divergence_is_recorded():
    """A linear SCM with K eta > 2 blows up, in the diffusion as in the sampler."""
    p = committee.Params(N=100, M=2, K=4, eta=1.0, g="linear")
    ds = committee.diffuse(p, 50.0, seed=0, n_points=26)
    assert bool(ds.diverged) and 0 < float(ds.t_diverged) < 50


def test_bad_input():
    p = committee.Params(N=500, M=2, K=2, eta=0.5)
    with pytest.raises(ValueError, match=r"dt \(Euler-Maruyama step"):
        committee.diffuse(p, 5.0, seed=0, dt=0.0)
    with pytest.raises(ValueError, match=r"dt \(Euler-Maruyama step"):
        committee.diffuse(p, 5.0, seed=0, dt=6.0)
    with pytest.raises(ValueError, match=r"n_noise .* must be an integer >= 1"):
        committee.diffuse(p, 5.0, seed=0, n_noise=0)
    with pytest.raises(ValueError, match="all of Q0, R0, T, v0 or none"):
        committee.diffuse(p, 5.0, seed=0, Q0=np.eye(2))
    with pytest.raises(ValueError, match=r"n_samples .* must be an integer >= 2"):
        committee.step_covariance(p, *_start(p), n_samples=1)
    with pytest.raises(ValueError, match=r"lambda_max \(escape rate\)"):
        committee.linear_escape_cdf(1.0, -1.0, 0.0)
    with pytest.raises(ValueError, match="windows must be pairs"):
        committee.plateau_fluctuations(seed=0, N=300, K=2, eta=1.0, t_max=10.0, windows=[(5, 1)])
    with pytest.raises(ValueError, match="windows must lie within"):
        committee.plateau_fluctuations(seed=0, N=300, K=2, eta=1.0, t_max=10.0, windows=[(0, 20)])
    with pytest.raises(ValueError, match="gaps must have shape"):
        committee.gap_exponents([100, 300, 1000], np.ones((3, 1, 2)))


def test_gap_exponents_recovers_a_power_law():
    """Synthetic gaps c N^a times a run-to-run factor: the fitted exponent is a within
    3.3 standard errors, per window."""
    rng = np.random.default_rng(0)
    Ns = np.array([100, 1000, 10000, 100000])
    a = np.array([-0.5, 0.0])
    gaps = Ns[:, None, None] ** a * rng.lognormal(0.0, 0.5, size=(4, 64, 2))
    slope, se = committee.gap_exponents(Ns, gaps)
    assert np.all(np.abs(slope - a) < 3.3 * se)


# --- arrangements of Fig. 3 (both layers trained): paths from a run's start, and the test --------


def _synthetic_arrangements(rng, n, P, law_runs, n_cat=3):
    """n starts with their own law over n_cat arrangements (Dirichlet), P paths each from that
    law, one run each from ``law_runs(q)``, and the ODE's arrangement (the likeliest)."""
    q = rng.dirichlet(np.full(n_cat, 0.7), size=n)
    draw = lambda qi, size: rng.choice(n_cat, size=size, p=qi)
    paths = np.stack([draw(qi, P) for qi in q])[..., None]
    runs = np.array([draw(law_runs(qi), 1)[0] for qi in q])[:, None]
    ode = q.argmax(1)[:, None]
    return runs, paths, ode


def test_arrangement_test_is_exact_and_rejects_the_ode_alone():
    """Runs drawn from the paths' own law pass at about the nominal rate (the test is exact under
    exchangeability: at most 5% + 3 binomial s.e. of 60 data sets below p = 0.05); runs that always
    end on the ODE's arrangement (the ODE alone as the model) fail when the paths often do not."""
    rng = np.random.default_rng(5)
    same = [committee.arrangement_test(*_synthetic_arrangements(rng, 32, 2, lambda q: q), n_perm=400,
                                       seed=k)["p"] for k in range(60)]
    assert np.mean(np.array(same) < 0.05) < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 60)
    one_hot = lambda q: np.eye(len(q))[q.argmax()]
    runs, paths, ode = _synthetic_arrangements(rng, 64, 4, one_hot)
    out = committee.arrangement_test(runs, paths, ode, n_perm=2000, seed=1)
    assert out["m_run"] == 1.0 and out["m_path"] < 0.8
    assert out["p"] < 1e-3


def test_arrangement_probabilities_cover_at_the_stated_level():
    """95% intervals: one outcome per start (Wilson) and several correlated paths per start (Wilson
    at the effective number of draws) cover the true probability in 95% +- 3 binomial s.e. of
    400 data sets."""
    rng = np.random.default_rng(6)
    cats = np.array([[0], [1], [2]])
    base = np.array([0.6, 0.3, 0.1])
    for P in (1, 3):
        hits = []
        for _ in range(400):
            q = rng.dirichlet(20 * base, size=40)  # per-start laws around the common one
            x = np.stack([rng.choice(3, size=P, p=qi) for qi in q])[..., None]
            p, lo, hi = committee.arrangement_probabilities(x, cats)
            hits.append((lo <= base) & (base <= hi))
        cover = np.mean(hits, 0)
        assert np.all(np.abs(cover - 0.95) < 3 * math.sqrt(0.05 * 0.95 / 400) + 0.01), (P, cover)


def test_diffusion_arrangements_start_from_the_runs_start():
    """A path with the noise switched off (noise_N = 1e15) from the start of run j of a sweep ends
    where the ODE from that run's start ends, and the fastest rate it reports is that of the ODE
    at its end (so the start is the run's, and the rate is read at the path's end)."""
    p3 = dict(N=100, M=2, K=3, eta=0.1, sigma=0.01, v_star=4.0, v_init=0.1)
    root = np.random.SeedSequence(400, spawn_key=(1,))
    p = committee.Params(**p3, train_second_layer=True)
    for j in (0, 1):
        run = committee.simulate(p, 0.01, seed=np.random.SeedSequence(400, spawn_key=(1, j)),
                                 n_points=2, method="overlaps")
        theory = committee.ode(p, init=run, t_eval=[0.0, 2000.0])
        end = theory.isel(t=-1)
        out = committee.diffusion_arrangements(seed=7, start=j, start_seed=root, **p3, t_max=2000.0,
                                               paths=1, dt=1.0, noise_N=10 ** 15)
        assert tuple(out["arr"][0]) == committee.unit_arrangement(end.R.values, end.v.values)
        rate = committee.fastest_rate(p, end.Q.values, end.R.values, theory.T.values, end.v.values)
        assert out["rate"][0] == pytest.approx(rate, rel=1e-3)
    with pytest.raises(ValueError, match="paths"):
        committee.diffusion_arrangements(seed=7, start=0, start_seed=root, **p3, t_max=10.0, paths=0)
