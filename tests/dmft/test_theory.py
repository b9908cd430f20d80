"""DMFT solver against exact results: the square-loss GD solution (random-matrix spectrum)."""

import numpy as np
import pytest

from tsdyn import dmft

# teacher model, square loss + ridge, full-batch GD: the exact solution of derivation 8.2
EXACT = dmft.Params(alpha=2.0, Delta=1.0, lam=0.1, b=1.0, eta=0.1, loss="square", model="teacher",
                    R0=0.5, m0=0.1)
T_MAX = 3.0


@pytest.mark.parametrize("alpha, Delta", [(2.0, 1.0), (0.5, 0.3)])
def test_marchenko_pastur_moments(alpha, Delta):
    """Moments of S = X^T X/d: <1> = 1, <s> = alpha Delta, <s^2> = Delta^2 alpha(1 + alpha)."""
    s, w = dmft.marchenko_pastur(alpha, Delta, n_quad=200)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert (w * s).sum() == pytest.approx(alpha * Delta, rel=1e-12)
    assert (w * s ** 2).sum() == pytest.approx(Delta ** 2 * alpha * (1 + alpha), rel=1e-12)


def test_exact_solution_matches_finite_d_gd():
    """The spectral formula against GD at d = 400 (4 seeds): within 4 standard errors plus
    the O(1/d) bias of the spectral average (1/d = 0.0025 relative)."""
    ex = dmft.exact_square_gd(EXACT, T_MAX)
    runs = [dmft.simulate(EXACT, T_MAX, d=400, seed=s) for s in range(4)]
    for v in ("m", "C_diag", "train_loss"):
        vals = np.array([r[v].values for r in runs])
        mean, se = vals.mean(0), vals.std(0, ddof=1) / 2
        gap = np.abs(mean - ex[v].values)[1:]
        assert np.all(gap < 4 * se[1:] + 0.0025 * np.abs(ex[v].values[1:]) + 1e-12), v


def test_dmft_response_and_correlation_are_exact_for_square_gd():
    """Square loss, b = 1: Lambda'' = 1, so lamhat = alpha Delta, chi and M_R are
    deterministic and the bulk response must equal R(k, j) = <p^(k-j-1)> exactly
    (p = 1 - eta(lam + s)); only float rounding remains."""
    th = dmft.solve(EXACT, T_MAX, n_samples=200, tol=1e-12)
    s, w = dmft.marchenko_pastur(EXACT.alpha, EXACT.Delta)
    p = 1 - EXACT.eta * (EXACT.lam + s)
    n_t = len(th.t)
    k, j = np.tril_indices(n_t, -1)
    R_exact = np.zeros((n_t, n_t))
    R_exact[k, j] = (w[None, :] * p[None, :] ** (k - j - 1)[:, None]).sum(1)
    np.testing.assert_allclose(th.R.values, R_exact, atol=1e-10)
    np.testing.assert_allclose(th.lamhat.values, EXACT.alpha * EXACT.Delta, rtol=1e-12)


def test_dmft_matches_exact_square_gd():
    """DMFT at dt = eta against the exact solution: no discretisation error (derivation
    Sec. 7), so the gap is Monte Carlo error; 4 standard errors over 6 independent seeds
    of the effective samples (plus 1e-9 for the fixed-point tolerance). With 6 seeds the
    estimated standard error has 5 degrees of freedom: P(|t_5| > 4) is about 1% per time
    point (with 3 seeds, P(|t_2| > 4) is 6%, too fragile for a test)."""
    ex = dmft.exact_square_gd(EXACT, T_MAX)
    n_seeds = 6
    sols = [dmft.solve(EXACT, T_MAX, n_samples=1500, seed=s, tol=1e-9) for s in range(n_seeds)]
    assert all(bool(s.converged) for s in sols)
    for v in ("m", "C_diag", "eg", "train_loss"):
        vals = np.array([s[v].values for s in sols])
        mean, se = vals.mean(0), vals.std(0, ddof=1) / np.sqrt(n_seeds)
        gap = np.abs(mean - ex[v].values)
        assert np.all(gap < 4 * se + 1e-9), (v, gap.max(), se.max())
    # and the MC error is small in absolute terms: a few percent of the curves at n = 1500
    assert np.max(np.abs(sols[0].m.values - ex.m.values)) < 0.05


def test_two_time_correlation_against_exact():
    """C(t, t') = <a_k a_l + R0 p^(k+l)> off the diagonal too (Monte Carlo error only).

    Mean over 6 seeds of the effective samples, within 4 standard errors of the seed
    spread (5 degrees of freedom), plus 1e-9 for float rounding where C is deterministic
    (C(0, 0) = m0^2 + R0). A single seed is not enough: its error reaches 4% of C at
    early times (seed spread of the n = 1500 estimate)."""
    n_seeds = 6
    Cs = np.array([dmft.solve(EXACT, T_MAX, n_samples=1500, seed=s, tol=1e-9).C.values
                   for s in range(n_seeds)])
    s, w = dmft.marchenko_pastur(EXACT.alpha, EXACT.Delta)
    n_t = Cs.shape[1]
    pk = (1 - EXACT.eta * (EXACT.lam + s))[None, :] ** np.arange(n_t)[:, None]
    a = EXACT.m0 * pk + s / (EXACT.lam + s) * (1 - pk)
    C_exact = np.einsum("ks,ls,s->kl", a, a, w) + EXACT.R0 * np.einsum("ks,ls,s->kl", pk, pk, w)
    mean, se = Cs.mean(0), Cs.std(0, ddof=1) / np.sqrt(n_seeds)
    gap = np.abs(mean - C_exact)
    assert np.all(gap < 4 * se + 1e-9), (gap / (se + 1e-9)).max()


def test_non_convergence_raises_with_history():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2)
    with pytest.raises(dmft.ConvergenceError, match=r"did not converge: residual .* after max_iter=3") as info:
        dmft.solve(p, 4.0, n_samples=200, max_iter=3, tol=1e-12, method="iterate")
    assert len(info.value.residuals) == 3
    assert not bool(info.value.result.converged)
    assert np.all(np.isfinite(info.value.residuals))


def test_solver_is_deterministic_and_converges_geometrically():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2)
    a = dmft.solve(p, 4.0, n_samples=300, seed=5, method="iterate")
    b = dmft.solve(p, 4.0, n_samples=300, seed=5, method="iterate")
    np.testing.assert_array_equal(a.m.values, b.m.values)
    assert bool(a.converged) and a.residual.values[-1] < 1e-6
    # the same random numbers at every iteration: the residual reaches tol, it does not
    # stall at the Monte Carlo level
    assert a.residual.values[-1] < 1e-3 * a.residual.values[2]


@pytest.mark.parametrize("b, model", [(1.0, "two-cluster"), (0.3, "two-cluster"),
                                      (1.0, "three-cluster"), (0.2, "three-cluster")])
def test_march_is_the_fixed_point_of_the_iteration(b, model):
    """The marched solution and the iteration run to tol = 1e-11 on the same samples agree
    to 1e-7 relative (the iteration's remaining distance, about 1e-11 times the few-hundred
    iterations' contraction factor; the march itself checks to float rounding), and the
    march's check pass finds a residual at float rounding (1e-12)."""
    kw = dict(alpha=2.0, eta=0.2, b=b, lam=0.05)
    if model == "three-cluster":
        p = dmft.Params(**kw, Delta=0.05, R0=1.0, model=model, L=0.7, m0=0.05)
    else:
        p = dmft.Params(**kw, Delta=0.5, R0=0.01)
    a = dmft.solve(p, 10.0, n_samples=600, n_resp=200, seed=7)
    it = dmft.solve(p, 10.0, n_samples=600, n_resp=200, seed=7, method="iterate", tol=1e-11,
                    max_iter=1000)
    assert a.attrs["method"] == "march" and int(a.n_iter) == 0
    assert float(a.residual[-1]) < 1e-12 and bool(a.converged)
    for v in ("m", "lamhat", "M_C", "M_R", "C", "eg", "train_loss", "train_acc"):
        x, y = np.nan_to_num(a[v].values), np.nan_to_num(it[v].values)
        assert np.max(np.abs(x - y)) <= 1e-7 * max(np.max(np.abs(y)), 1e-12), v


def test_iteration_history_reaches_the_march():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=1.0, eta=0.2, R0=0.01)
    h = dmft.iteration_history(p, 6.0, n_samples=300, seed=2)
    # the first iterate (from zero kernels) is far from the march; at the iteration's tol =
    # 1e-6 the remaining distance is about tol / (1 - contraction), contraction ~0.5 per
    # pass here: 1e-5 leaves a factor 5 for a slower contraction
    assert h.distance.values[0] > 0.1 and h.distance.values[-1] < 1e-5
    assert h.residual.values[-1] < h.attrs["tol"] and h.attrs["n_iter"] == h.sizes["iteration"]


def test_dmft_divergence_is_an_outcome():
    """Square loss with eta far above 2/lambda_max (as in the simulation's test): the
    effective process blows up (C grows about 200-fold a step and overflows after ~130
    steps); the solve records diverged = True and the time, and the curves are NaN from
    there on, never silently infinite; for both methods."""
    p = dmft.Params(alpha=2.0, Delta=1.0, loss="square", model="teacher", eta=3.0, R0=1.0)
    r = dmft.solve(p, 600.0, n_samples=200)
    it = dmft.solve(p, 600.0, n_samples=200, method="iterate")
    assert bool(it.diverged) and np.isfinite(float(it.t_diverged))
    assert bool(r.diverged) and np.isfinite(float(r.t_diverged))
    late = r.t.values >= float(r.t_diverged)
    assert np.all(np.isnan(r.m.values[late])) and np.all(np.isnan(r.train_loss.values[late]))
    assert np.all(np.isfinite(r.m.values[~late]))
