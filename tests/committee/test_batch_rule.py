"""The linear scaling rule in the committee machine: at a fixed noise temperature x = eta / B,
does the batch size drop out of the dynamics counted in samples?"""

import numpy as np
import pytest

from tsdyn import committee


def test_the_ode_depends_on_eta_over_b_only_in_the_sample_clock():
    """Drift O(eta) per step, noise O(eta^2 / B) per step: per sample, (eta / B) and (eta / B)^2.
    Three batch sizes at the same eta / B, from the same overlaps, give the same eps_g against
    samples / N = B t, plateau and escape included."""
    rng = np.random.default_rng(0)
    R0 = 1e-3 * rng.standard_normal((2, 2))  # off the symmetric plateau, so that it escapes
    s = np.linspace(0.0, 60.0, 121)  # samples / N: through the plateau and the escape
    curves = []
    for B in (1, 4, 16):
        p = committee.Params(N=1000, M=2, K=2, eta=0.5 * B, batch=B, sigma=0.1)
        curves.append(committee.ode(p, t_eval=s / B, R0=R0, rtol=1e-10, atol=1e-12).eg.values)
    assert np.ptp(curves[0]) > 0.1  # the curve does move: the comparison is not of constants
    # integration accuracy: rtol 1e-10 amplified by the escape's instability (about e^10 here)
    for other in curves[1:]:
        np.testing.assert_allclose(other, curves[0], rtol=1e-5, atol=1e-8)


def test_the_rule_breaks_at_finite_n_as_b_over_n_predicts():
    """Linear SCM at N = 64, x = eta / B = 0.4: the exact finite-N mean step predicts a
    deviation from the rule of K x (B + 1) / N / (2 - K x - K x (B + 1) / N), 2 % at B = 1 and
    about 60 % at B = 32. The exact overlap sampler, 16 runs per batch size, measures it."""
    N, K, x, sigma, n_runs = 64, 2, 0.4, 0.5, 16
    for B in (1, 32):
        p = committee.Params(N=N, M=K, K=K, eta=x * B, g="linear", sigma=sigma, batch=B)
        t_max = 200.0 / B  # 200 samples per input dimension: the error relaxes at rate ~1 per sample/N
        ends = []
        for seed in range(n_runs):
            run = committee.sample_overlaps(p, t_max, seed=1000 * B + seed, n_points=400)
            ends.append(float(run.eg.where(run.t >= t_max / 4).mean()))
        rule = committee.eg_star_linear_scm(p)  # N -> infinity: depends on x only
        measured = np.mean(ends) / rule - 1
        se = np.std(ends, ddof=1) / np.sqrt(n_runs) / rule
        predicted = committee.rule_deviation_linear_scm(K, x, N, B)
        assert abs(measured - predicted) < 3 * se  # statistical: 3 standard errors over 16 runs
        if B == 32:
            assert measured > 10 * se  # the rule's breakdown is resolved, not a fluctuation


def test_the_critical_batch_grows_with_n():
    for N in (64, 256, 1024):
        B_c = committee.critical_batch_linear_scm(2, 0.4, N, tolerance=0.1)
        assert committee.rule_deviation_linear_scm(2, 0.4, N, 1) < 0.1
        # B_c is where the deviation crosses the tolerance: check it on the continuous formula
        excess = 2 * 0.4 * (B_c + 1) / N
        assert excess / (2 - 0.8 - excess) == pytest.approx(0.1, rel=1e-12)
    assert committee.critical_batch_linear_scm(2, 0.4, 1024) / committee.critical_batch_linear_scm(
        2, 0.4, 64) == pytest.approx((0.1 * 1.2 * 1024 / 0.88 - 1) / (0.1 * 1.2 * 64 / 0.88 - 1))


@pytest.mark.parametrize("kwargs, message", [
    (dict(K=2, x=1.0, N=64, batch=1), r"K x = 2 must be < 2"),
    (dict(K=2, x=-0.1, N=64, batch=1), r"x"),
    (dict(K=2, x=0.4, N=0, batch=1), r"N"),
    (dict(K=2, x=0.4, N=64, batch=0), r"batch"),
])
def test_bad_input_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        committee.rule_deviation_linear_scm(**kwargs)


def test_the_scan_measures_the_predicted_deviation_and_critical_batch():
    """The chapter's scan at N = 64, x = 0.4: five batch sizes across the predicted critical
    batch B_c = 0.1 (2 - K x) N / (1.1 K x) - 1 = 7.7 (10 % deviation)."""
    scan = committee.scaling_rule_scan(N=64, K=2, x=0.4, batches=[1, 4, 8, 16, 32], seeds=12,
                                       samples=150.0)
    se = (scan.deviation_hi - scan.deviation_lo).values / 2
    # statistical: each batch size within 3.5 standard errors of the exact finite-N deviation
    # (five comparisons; 12 runs each)
    np.testing.assert_array_less(np.abs(scan.deviation - scan.deviation_theory).values, 3.5 * se)
    assert scan.deviation.values[-1] > 20 * se[-1]  # the break is resolved, far beyond the noise
    assert scan.attrs["critical_batch_theory"] == pytest.approx(0.1 * 1.2 * 64 / 0.88 - 1)
    # the measured crossing (log interpolation between grid points) against the theory's
    # crossing interpolated on the same grid: equal up to the interval from +-1 s.e.
    from tsdyn.stats import log_crossing
    on_grid = log_crossing(scan.batch.values, np.abs(scan.deviation_theory.values), 0.1)
    lo, hi = scan.attrs["critical_batch_measured_lo"], scan.attrs["critical_batch_measured_hi"]
    width = hi - lo
    assert lo - width <= on_grid <= hi + width  # two interval widths: the interval is +-1 s.e.


def test_the_scan_refuses_a_batch_past_the_finite_n_limit():
    # K x (1 + (B + 1) / N) = 0.8 (1 + 101 / 64) > 2: the finite-N theory says it diverges
    with pytest.raises(ValueError, match="batch|diverged"):
        committee.scaling_rule_scan(N=64, K=2, x=0.4, batches=[1, 100], seeds=2, samples=20.0)


def test_the_scan_refuses_unordered_batches():
    with pytest.raises(ValueError, match="batches"):
        committee.scaling_rule_scan(N=64, K=2, x=0.4, batches=[4, 1], seeds=2)


def test_the_gradient_noise_scale_is_measured_from_per_sample_gradients():
    """B_noise = tr(Sigma) / |G|^2 from 200,000 per-sample gradients of a linear SCM at the
    stationary distance D* = K x sigma^2 / (2 - K x), against 2 N / (K x) + 1."""
    N, K, x, sigma, n = 50, 2, 0.4, 0.5, 200_000
    D = K * x * sigma ** 2 / (2 - K * x)
    rng = np.random.default_rng(3)
    delta = rng.standard_normal(N)
    delta *= np.sqrt(D * N) / np.linalg.norm(delta)  # |W - W*|^2 / N = D
    X = rng.standard_normal((n, N))
    e = X @ delta / np.sqrt(N) + sigma * rng.standard_normal(n)
    grads = e[:, None] * X / np.sqrt(N)  # one unit's gradient per sample
    G2 = np.sum((delta / N) ** 2)  # the exact mean gradient: E[x x^T] = I
    trace = np.sum(grads.var(axis=0, ddof=1))
    # statistical: tr(Sigma) from 2e5 samples of a quartic variable, relative error about
    # sqrt(Var(e^2 |x|^2) / n) / E ~ 2e-3 (kurtosis of order 3); 1 % is five standard errors
    assert trace / G2 == pytest.approx(committee.gradient_noise_scale_linear_scm(K, x, N), rel=0.01)
    # and the critical batch is a fixed fraction of it
    B_c = committee.critical_batch_linear_scm(K, x, N, tolerance=0.1)
    assert B_c + 1 == pytest.approx(0.1 / 1.1 * (1 - K * x / 2) * (2 * N / (K * x)))
