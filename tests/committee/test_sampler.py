"""The overlap sampler is the full network's SGD process, in law, at finite N.

Three levels of evidence, each against the full simulation (``simulate``, the
N-dimensional weights) or exact closed forms, never against the ODE:

1. t = 0: the sampled initial overlaps have the Wishart moments of the Gaussian
   initial weights.
2. One step from fixed weights at small N (where the 1/N terms, the |x|^2
   fluctuations and the Wishart part of a mini-batch are large): mean and variance
   of every entry of Q', R', v' from the sampler against a large sample of single
   full-network steps from the same weights.
3. Whole trajectories at N = 100: means and seed-to-seed variances of eps_g, Q_11
   and R_11 at four times, 200 seeds per method.
4. Shapes: two-sample KS tests on every entry of the one-step changes of Q and R and
   z-tests on their correlations (B <= K and B > K), and the distribution of escape
   times from the plateau over whole runs; each shown to reject a sampler with the
   wrong batch size at the same level.

Each group is a family of two-sample tests at family-wise level ALPHA = 1e-3,
Bonferroni-corrected: a correct sampler fails one of them with probability < 1e-3.
Power, measured once: a sampler drawing the orthogonal part with N instead of
N - K - M degrees of freedom (a relative error of (K + M) / N in one term) fails
all four one-step tests and both B = 1 trajectory tests.
"""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from tsdyn import committee
from tsdyn.committee import _kernels

ALPHA = 1e-3


def _z_limit(n_tests):
    """Two-sided |z| threshold of one test in a Bonferroni family of ``n_tests`` at ALPHA."""
    return stats.norm.isf(ALPHA / (2 * n_tests))


def test_same_seed_same_bits_whatever_the_recording():
    p = committee.Params(N=300, M=2, K=3, eta=0.5, sigma=0.1, batch=5, g="relu",
                         train_second_layer=True)
    a = committee.sample_overlaps(p, 10.0, seed=3, n_points=11)
    b = committee.simulate(p, 10.0, seed=np.random.SeedSequence(3), n_points=11, method="overlaps")
    c = committee.sample_overlaps(p, 10.0, seed=3, n_points=2)  # other block boundaries
    np.testing.assert_array_equal(a.Q.values, b.Q.values)
    np.testing.assert_array_equal(a.R.values[-1], c.R.values[-1])
    np.testing.assert_array_equal(a.v.values[-1], c.v.values[-1])
    assert a.attrs["kind"] == "overlap sampler"
    assert not np.array_equal(a.Q.values[-1],
                              committee.sample_overlaps(p, 10.0, seed=4, n_points=2).Q.values[-1])


def test_divergence_is_recorded_like_the_network():
    """A linear SCM with K eta > 2B blows up (as in the full simulation's test)."""
    p = committee.Params(N=100, M=2, K=4, eta=1.0, g="linear")
    ds = committee.sample_overlaps(p, 50.0, seed=0, n_points=26)
    assert bool(ds.diverged) and 0 < float(ds.t_diverged) < 50
    assert np.all(np.isnan(ds.eg.values[ds.t.values >= float(ds.t_diverged)]))


def test_bad_input():
    with pytest.raises(ValueError, match="N .*K \\+ M \\+ min"):
        committee.sample_overlaps(committee.Params(N=5, M=2, K=3, eta=0.5), 1.0, seed=0)
    with pytest.raises(ValueError, match="method"):
        committee.simulate(committee.Params(N=60, M=2, K=3, eta=0.5), 1.0, seed=0, method="ode")


def test_initial_overlaps_have_the_wishart_moments():
    """G0 = D Z Z^T D / N with Z (K+M) x N standard Gaussian: E G0 = D^2 and
    Var (G0)_ij = D_i^2 D_j^2 (1 + delta_ij) / N exactly."""
    p = committee.Params(N=30, M=2, K=3, eta=0.5, w_init_std=0.5, w_star_std=1.5)
    n = 4000
    G = np.array([committee.initial_overlaps(p, s) for s in range(n)])
    d2 = np.r_[np.full(p.K, p.w_init_std ** 2), np.full(p.M, p.w_star_std ** 2)]
    mean = np.diag(d2)
    var = np.outer(d2, d2) * (1 + np.eye(len(d2))) / p.N
    iu = np.triu_indices(len(d2))
    z_mean = (G.mean(0) - mean)[iu] / np.sqrt(var[iu] / n)
    # Var of a sample variance: (mu4 - sigma^4) / n, mu4 from the sample itself
    dev = G - G.mean(0)
    z_var = (dev.var(0) - var)[iu] / np.sqrt(((dev ** 4).mean(0) - dev.var(0) ** 2)[iu] / n)
    limit = _z_limit(2 * len(iu[0]))
    assert np.max(np.abs(z_mean)) < limit and np.max(np.abs(z_var)) < limit, (z_mean, z_var)


def _network_one_step(p, w_star, w, v, n_samples, seed):
    """n_samples independent single steps of the full network's kernel from (w, v)."""
    rng = np.random.default_rng(seed)
    B, N, K = p.batch, p.N, p.K
    X = rng.standard_normal((n_samples, B, N))
    zeta = rng.standard_normal((n_samples, B))
    Q, R, V = np.empty((n_samples, K, K)), np.empty((n_samples, K, p.M)), np.empty((n_samples, K))
    v_star = p.v_star_vector()
    for i in range(n_samples):
        w1, v1 = w.copy(), v.copy()
        _kernels.sgd_steps(w1, v1, w_star, v_star, X[i], zeta[i], p.act, p.eta, p.eta_second,
                           p.sigma, p.weight_decay, B, p.train_second_layer)
        Q[i], R[i], V[i] = w1 @ w1.T / N, w1 @ w_star.T / N, v1
    return Q, R, V


ONE_STEP = {
    "erf K=M=2 B=1": committee.Params(N=20, M=2, K=2, eta=1.0),
    "relu K=4 M=2 B=3 noisy": committee.Params(N=20, M=2, K=4, eta=1.0, g="relu", batch=3,
                                               sigma=0.5),
    "erf K=4 M=2 B=8 both layers + decay": committee.Params(
        N=20, M=2, K=4, eta=1.5, batch=8, train_second_layer=True, weight_decay=0.5,
        v_init=0.7, sigma=0.2),
    "linear K=3 M=2 B=2": committee.Params(N=20, M=2, K=3, eta=0.8, g="linear", batch=2),
}


@pytest.mark.parametrize("name", list(ONE_STEP))
def test_one_step_law_matches_the_full_network(name):
    """Mean and variance of every entry of (Q', R', v') after one step, sampler vs network.

    N = 20: the second-order terms (eta^2 |x|^2 / N^2 ~ eta^2 / N) are as large as the
    first-order ones and the |x|^2 and Wishart fluctuations dominate the variances, so
    a wrong number of degrees of freedom or a missing cross term shows. 20 000 steps each.
    """
    p = ONE_STEP[name]
    n = 20_000
    w_star, w, v = committee.initial_weights(p, 11)
    v = v + 0.3 * np.arange(p.K)  # unequal second layer, so c_kb differ between units
    Q0, R0, T = w @ w.T / p.N, w @ w_star.T / p.N, w_star @ w_star.T / p.N
    net = _network_one_step(p, w_star, w, v, n, seed=5)
    smp = committee.one_step(p, Q0, R0, T, v, n, seed=6)
    iu = np.triu_indices(p.K)
    cols = []
    for a, b, base in ((net[0][:, iu[0], iu[1]], smp[0][:, iu[0], iu[1]], Q0[iu]),
                       (net[1].reshape(n, -1), smp[1].reshape(n, -1), R0.ravel()),
                       (net[2], smp[2], v)):
        if p.train_second_layer or a is not net[2]:
            cols.append((a - base, b - base))
    a = np.concatenate([c[0] for c in cols], axis=1)
    b = np.concatenate([c[1] for c in cols], axis=1)
    z_mean = (a.mean(0) - b.mean(0)) / np.sqrt((a.var(0) + b.var(0)) / n)
    da, db = a - a.mean(0), b - b.mean(0)
    se_var = np.sqrt(((da ** 4).mean(0) - da.var(0) ** 2 + (db ** 4).mean(0) - db.var(0) ** 2) / n)
    z_var = (a.var(0) - b.var(0)) / se_var
    limit = _z_limit(2 * a.shape[1])
    assert np.max(np.abs(z_mean)) < limit, z_mean
    assert np.max(np.abs(z_var)) < limit, z_var


TRAJECTORIES = {
    "erf K=M=2 B=1": committee.Params(N=100, M=2, K=2, eta=1.0),
    "erf K=4 M=2 B=1": committee.Params(N=100, M=2, K=4, eta=1.0),
    "erf K=M=2 B=6": committee.Params(N=100, M=2, K=2, eta=2.0, batch=6),
    "relu K=4 M=2 B=3 noisy both layers": committee.Params(
        N=100, M=2, K=4, eta=0.5, g="relu", batch=3, sigma=0.3, train_second_layer=True,
        w_init_std=0.5),
}
TIMES = (0.5, 2.0, 6.0, 15.0)
SEEDS = 200


def _observables(ds):
    """eps_g, Q_11 and R_11 at the TIMES (rows: quantity x time)."""
    at = ds.sel(t=list(TIMES))
    return np.concatenate([at.eg.values, at.Q.values[:, 0, 0], at.R.values[:, 0, 0]])


@pytest.mark.parametrize("name", list(TRAJECTORIES))
def test_trajectories_match_the_full_network_in_distribution(name):
    """Welch t-tests on the means and Brown-Forsythe tests on the seed-to-seed variances
    of eps_g, Q_11, R_11 at t = 0.5, 2, 6, 15 (N = 100, 200 seeds per method, distinct
    seeds); the family of 24 tests at ALPHA, Bonferroni."""
    p = TRAJECTORIES[name]
    t_max, n_points = TIMES[-1], int(TIMES[-1] * 2) + 1  # every 0.5 contains TIMES
    net = np.array([_observables(committee.simulate(p, t_max, seed=s, n_points=n_points))
                    for s in range(SEEDS)])
    smp = np.array([_observables(committee.sample_overlaps(p, t_max, seed=10_000 + s,
                                                           n_points=n_points))
                    for s in range(SEEDS)])
    assert np.all(np.isfinite(net)) and np.all(np.isfinite(smp))
    p_mean = stats.ttest_ind(net, smp, equal_var=False, axis=0).pvalue
    p_var = np.array([stats.levene(net[:, j], smp[:, j], center="median").pvalue
                      for j in range(net.shape[1])])
    level = ALPHA / (2 * net.shape[1])
    assert np.min(p_mean) > level, p_mean
    assert np.min(p_var) > level, p_var


def test_log_plus_linear_spacing_records_both_grids():
    """spacing="log+linear" records on the union of a log and a linear grid; a seed gives
    the same bits at the shared times as a run recorded on the linear grid alone."""
    p = committee.Params(N=50, M=2, K=2, eta=0.5)
    both = committee.simulate(p, 20.0, seed=4, n_points=40, spacing="log+linear", method="overlaps")
    lin = committee.simulate(p, 20.0, seed=4, n_points=20, spacing="linear", method="overlaps")
    assert both.t.values[1] <= 0.02 + 1e-12  # the log part starts early
    common = np.isin(both.t.values, lin.t.values)
    assert common.sum() == len(lin.t)
    np.testing.assert_array_equal(both.eg.values[common], lin.eg.values)


# --- shapes of the one-step law, and the escape from the plateau --------------------------
#
# The moment tests above see the mean and variance of each entry. The tests below compare
# whole distributions: two-sample Kolmogorov-Smirnov tests on every entry of the one-step
# changes of Q and R, and z-tests on every correlation between those changes; then the
# distribution of escape times from the Saad-Solla plateau over whole trajectories, which
# depends on the fluctuations that break the symmetry between the units. Each family is
# Bonferroni-corrected at ALPHA, and each is shown to reject a deliberately wrong sampler
# (the right one run with the wrong batch size) at that same level: the stated power.

SHAPE_N = 20_000
SHAPES = {
    # B <= K: the Wishart part of the batch is c W c^T with W of rank B
    "erf K=3 M=2 B=2 noisy": committee.Params(N=20, M=2, K=3, eta=1.0, batch=2, sigma=0.3),
    # B > K: it is F W_K F^T with F F^T = c c^T (rank K)
    "erf K=2 M=2 B=5 noisy": committee.Params(N=20, M=2, K=2, eta=1.5, batch=5, sigma=0.3),
}


def _one_step_changes(p, n, seed, *, network):
    """(n, entries) one-step changes of the upper triangle of Q and of R, from fixed weights
    (seed 11, unequal second layer); the sampler or the full network."""
    w_star, w, v = committee.initial_weights(p, 11)
    v = v + 0.3 * np.arange(p.K)
    Q0, R0, T = w @ w.T / p.N, w @ w_star.T / p.N, w_star @ w_star.T / p.N
    if network:
        Q, R, _ = _network_one_step(p, w_star, w, v, n, seed=seed)
    else:
        Q, R, _ = committee.one_step(p, Q0, R0, T, v, n, seed=seed)
    iu = np.triu_indices(p.K)
    return np.concatenate([(Q - Q0)[:, iu[0], iu[1]], (R - R0).reshape(n, -1)], axis=1)


def _correlation_z(a, b):
    """z of the difference between the correlation matrices of two independent samples,
    for every pair of columns; the standard error of a sample correlation r is that of its
    influence function x y - r (x^2 + y^2) / 2 (x, y standardised), valid for any law with
    four moments (the changes are far from Gaussian)."""
    def corr_and_var(x):
        z = (x - x.mean(0)) / x.std(0)
        r = z.T @ z / len(z)
        psi = z[:, :, None] * z[:, None, :] - r / 2 * (z[:, :, None] ** 2 + z[:, None, :] ** 2)
        return r, psi.var(0) / len(z)
    (ra, va), (rb, vb) = corr_and_var(a), corr_and_var(b)
    iu = np.triu_indices(a.shape[1], 1)
    return ((ra - rb) / np.sqrt(va + vb))[iu]


def _shape_p_values(a, b):
    """p-values of the KS test of every column and of the z-test of every correlation."""
    p_ks = np.array([stats.ks_2samp(a[:, j], b[:, j]).pvalue for j in range(a.shape[1])])
    p_corr = 2 * stats.norm.sf(np.abs(_correlation_z(a, b)))
    return np.r_[p_ks, p_corr]


@pytest.mark.parametrize("name", list(SHAPES))
def test_one_step_shapes_and_correlations_match_the_full_network(name):
    """KS on each entry of (Q' - Q, R' - R) and z on each correlation between them, sampler
    against 20 000 single steps of the full network at N = 20 (where the |x|^2 and Wishart
    fluctuations shape the law); Bonferroni family at ALPHA.

    Power, asserted: the sampler run with batch size B + 1 (everything else the same) fails
    the same family at the same level. Measured (seeds as here): the right sampler's smallest
    p is 6e-3 (B = 2; 78 tests, level 1.3e-5) and 4e-2 (B = 5; 28 tests, level 3.6e-5); the
    wrong one's is 4e-170 and 1e-24 (its changes have B / (B + 1) of the right variance)."""
    p = SHAPES[name]
    net = _one_step_changes(p, SHAPE_N, 5, network=True)
    smp = _one_step_changes(p, SHAPE_N, 6, network=False)
    p_values = _shape_p_values(net, smp)
    level = ALPHA / len(p_values)
    assert np.min(p_values) > level, np.sort(p_values)[:5]
    wrong = _one_step_changes(dataclasses.replace(p, batch=p.batch + 1), SHAPE_N, 6, network=False)
    assert np.min(_shape_p_values(net, wrong)) < level


ESCAPE_RUNS = 200
ESCAPES = {
    "erf K=M=2 B=1": committee.Params(N=50, M=2, K=2, eta=1.0),
    "erf K=M=2 B=3": committee.Params(N=50, M=2, K=2, eta=1.0, batch=3),
}


def _escape_times(p, method, first_seed, t_max, height):
    """Escape times from the plateau (eps_g below height / 2, on a grid of 400 times; runs
    that do not escape within t_max count as t_max + 1: the KS test only uses their order)."""
    t = np.array([committee.escape_time(committee.simulate(p, t_max, seed=first_seed + s,
                                                           n_points=400, method=method),
                                        height / 2) for s in range(ESCAPE_RUNS)])
    return np.where(np.isfinite(t), t, t_max + 1.0)


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_times_from_the_plateau_match_the_full_network(name):
    """Whole trajectories through the plateau at N = 50, K = M = 2, eta = 1: two-sample KS
    test of the escape times (eps_g below half the height of the symmetric plateau of these
    parameters), 200 network runs against 200 sampler runs (distinct seeds), at level ALPHA.
    The escape is set by the fluctuations that break the symmetry between the two units, so
    this tests the sampler where its noise decides the dynamics.

    Power, asserted for B = 1: 200 sampler runs with batch size 2 (distinct seeds, the same
    threshold) fail the same test at the same level. Measured (seeds as here): medians 54
    (network), 55 (sampler), 44 (batch size 2); p = 0.79 for the sampler, 1.1e-5 for the wrong
    one. At B = 3: medians 54 and 55, p = 0.63."""
    p = ESCAPES[name]
    height = committee.plateau(p)["eg"]
    t_max = 150.0  # the median escape is about 55 at B = 1: nearly every run escapes
    net = _escape_times(p, "network", 0, t_max, height)
    smp = _escape_times(p, "overlaps", 10_000, t_max, height)
    assert np.mean(net < t_max) > 0.9 and np.mean(smp < t_max) > 0.9  # the test sees escapes
    assert stats.ks_2samp(net, smp).pvalue > ALPHA
    if p.batch == 1:
        wrong = _escape_times(dataclasses.replace(p, batch=2), "overlaps", 20_000, t_max, height)
        assert stats.ks_2samp(net, wrong).pvalue < ALPHA
