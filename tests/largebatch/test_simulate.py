"""The simulation: determinism, unit norms, streaming, the samplers, recovery, divergence."""

import importlib

import numpy as np
import pytest

from tsdyn import largebatch as lb
from tsdyn.largebatch.simulate import one_step_overlaps
simmod = importlib.import_module("tsdyn.largebatch.simulate")


@pytest.mark.parametrize("sampler", ["full", "reduced", "gaussian"])
def test_same_seed_gives_bit_identical_runs_whatever_the_recording(sampler):
    p = lb.Params(d=64, mu=0.5, delta=0.5, gamma0=0.3, p=1 if sampler == "gaussian" else 2, noise=0.1)
    a = lb.simulate(p, 40, seed=3, n_points=11, sampler=sampler)
    b = lb.simulate(p, 40, seed=np.random.SeedSequence(3), n_points=11, sampler=sampler)
    c = lb.simulate(p, 40, seed=3, n_points=3, sampler=sampler)  # other block boundaries
    np.testing.assert_array_equal(a.M.values, b.M.values)
    np.testing.assert_array_equal(a.M.values[-1], c.M.values[-1])
    np.testing.assert_array_equal(a.Q.values[-1], c.Q.values[-1])
    d = lb.simulate(p, 40, seed=4, n_points=11, sampler=sampler)
    assert not np.array_equal(a.M.values[-1], d.M.values[-1])


@pytest.mark.parametrize("sampler", ["full", "reduced"])
@pytest.mark.parametrize("loss, algorithm", [("square", "projected"), ("correlation", "projected"),
                                             ("square", "spherical")])
def test_projection_keeps_unit_norms(sampler, loss, algorithm):
    p = lb.Params(d=128, mu=1.0, delta=0.0, gamma0=2.0, p=3, k=2, target="staircase",
                  activation="relu", loss=loss, algorithm=algorithm, noise=0.5)
    ds = lb.simulate(p, 30, seed=0, n_points=7, sampler=sampler)
    # float64 renormalisation: |w| = 1 to a few ulps after every step
    np.testing.assert_allclose(np.diagonal(ds.Q.values, axis1=1, axis2=2), 1.0, atol=1e-13)
    assert ds.M.dims == ("t", "j", "r") and ds.t.attrs["units"] == "SGD steps"
    assert ds.attrs["n_b"] == 128 and ds.attrs["kind"] == "simulation"


def test_batches_larger_than_a_chunk_are_streamed_with_the_same_result(monkeypatch):
    """A chunk of 3 rows (batch of 10 streamed in 4 chunks) gives the same run bit for
    bit: the inputs are drawn in the same order and summed in the same order."""
    p = lb.Params(d=32, n0=10.0, mu=0.0, gamma0=0.2, noise=0.2)
    whole = lb.simulate(p, 12, seed=5, n_points=4)
    monkeypatch.setattr(simmod, "_BLOCK_NUMBERS", 3 * 32)
    streamed = lb.simulate(p, 12, seed=5, n_points=4)
    np.testing.assert_array_equal(whole.M.values, streamed.M.values)
    # the reduced sampler streams its batch too: same draws in the same order (inputs'
    # coordinates in S chunk by chunk, then the orthogonal part), so the same run bit for bit
    monkeypatch.undo()
    in_block = lb.simulate(p, 12, seed=5, n_points=4, sampler="reduced")
    monkeypatch.setattr(simmod, "_BLOCK_NUMBERS", 3 * 2)
    streamed = lb.simulate(p, 12, seed=5, n_points=4, sampler="reduced")
    np.testing.assert_array_equal(in_block.M.values, streamed.M.values)
    np.testing.assert_array_equal(in_block.Q.values, streamed.Q.values)


def _one_step_directions(params, W, Wstar, n, seed, sampler, perturb=None):
    """n independent draws of the batch sum G = sum_b F^b z^b (p, d) from the fixed (W, W*),
    each reduced to the statistics <G_j, w*>, <G_j, w_i>, |G_j|^2 and <G_j, v> for a fixed
    unit v orthogonal to S; shape (n, n_stats). ``perturb`` breaks the reduced sampler on
    purpose: "var" draws the orthogonal part with 15% too much variance, "noproj" does not
    remove its component in S."""
    P, kern = params, simmod._kernels
    p, d, k, nb = P.p, P.d, P.k, P.n_b
    act, tgt = P.activation_code, P.target_code
    loss = simmod.LOSSES.index(P.loss)
    sq = np.sqrt(P.noise)
    rng = np.random.default_rng(seed)
    S = np.vstack([Wstar, W])
    v = rng.standard_normal(d)
    v -= S.T @ np.linalg.lstsq(S.T, v, rcond=None)[0]
    v /= np.linalg.norm(v)
    U, L = np.empty((k + p, d)), np.empty((k + p, k + p))
    r = kern.basis(Wstar, W, U, L)
    G = np.zeros((p, d))
    out = np.empty((n, p * (k + p + 2)))
    for i in range(n):
        xi = rng.standard_normal(nb)
        G[:] = 0.0
        if sampler == "full":
            kern.accumulate_full(W, Wstar, rng.standard_normal((nb, d)), xi, act, tgt, loss, sq, G)
        else:
            Gpar, C = np.zeros((p, k + p)), np.zeros((p, p))
            kern.accumulate_reduced(Wstar, W, L, r, rng.standard_normal((nb, k + p)), xi, act, tgt,
                                    loss, sq, Gpar, C)
            Xi = rng.standard_normal((p, d))
            if perturb is None:
                kern.assemble_reduced(U, r, Gpar, C, Xi, G)
            else:
                chol = np.linalg.cholesky(C + 1e-300 * np.eye(p))
                perp = Xi if perturb == "noproj" else np.sqrt(1.15) * (Xi - (Xi @ U[:r].T) @ U[:r])
                G[:] = Gpar[:, :r] @ U[:r] + chol @ perp
        out[i] = np.concatenate([(G @ Wstar.T).ravel(), (G @ W.T).ravel(), np.sum(G * G, axis=1), G @ v])
    return out


def _max_z(a, b):
    """Largest |z| over the columns of two samples, for the means and for the variances
    (the s.e. of a variance from the fourth central moment)."""
    def mean_var(x):
        n, c = len(x), x - x.mean(0)
        var = np.mean(c ** 2, axis=0)
        return x.mean(0), np.sqrt(var / n), var, np.sqrt((np.mean(c ** 4, axis=0) - var ** 2) / n)
    ma, sa, va, sva = mean_var(a)
    mb, sb, vb, svb = mean_var(b)
    return max(np.max(np.abs(ma - mb) / np.hypot(sa, sb)), np.max(np.abs(va - vb) / np.hypot(sva, svb)))


@pytest.mark.parametrize("p_units, loss", [(1, "square"), (2, "square"), (2, "correlation")])
def test_reduced_sampler_has_the_law_of_the_full_one(p_units, loss):
    """One step's direction G from a fixed (W, W*): 20000 draws with each sampler, the
    means and variances of <G_j, w*>, <G_j, w_i>, |G_j|^2 and <G_j, v> (v orthogonal to S)
    agree within z = 4.5 (up to 2 x 14 statistics: a two-sided normal tail of 7e-6 each, a
    family-wise false-alarm rate below 2e-4; the variances' z uses the fourth moment).
    Power: the same test rejects a sampler with 15% too much orthogonal variance, and one
    that does not project the orthogonal draw off S."""
    # n_b = 64: batch sums of the heavy-tailed F^2 (a degree-6 polynomial for He2) are close
    # enough to Gaussian for the variance z-test to resolve a 15% change with 2e4 draws.
    p = lb.Params(d=48, n0=64.0, mu=0.0, gamma0=0.4, p=p_units, target="he2", activation="he2",
                  m0=0.3, loss=loss, noise=0.1)
    Wstar, W = lb.initial_weights(p, 11)
    n = 20000
    full = _one_step_directions(p, W, Wstar, n, 1, "full")
    z = _max_z(full, _one_step_directions(p, W, Wstar, n, 2, "reduced"))
    print("max z, exact sampler:", z)
    assert z < 4.5
    for perturb in ("var", "noproj"):
        z = _max_z(full, _one_step_directions(p, W, Wstar, n, 2, "reduced", perturb))
        assert z > 4.5, (perturb, z)


def test_recovery_time_matches_the_recorded_crossing():
    p = lb.Params(d=64, mu=1.0, delta=0.0, gamma0=0.3, target="he2", activation="he2", eta=0.5)
    ds = lb.simulate(p, 200, seed=1, n_points=201)
    crossed = ds.t.values[ds.overlap.values >= p.eta]
    assert bool(ds.recovered) and float(ds.t_recovery) == crossed[0]
    rt = lb.recovery_time(p, 200, seed=1, sampler="full")  # same streams, stops at recovery
    assert rt["T"] == crossed[0] and rt["samples"] == crossed[0] * p.n_b and rt["steps_run"] == rt["T"]
    none = lb.recovery_time(p, 2, seed=1, sampler="full")
    assert not none["recovered"] and np.isinf(none["T"])


def test_divergence_is_recorded_not_raised():
    """gamma = 1e200: |w + gamma g|^2 overflows to inf at the first step."""
    p = lb.Params(d=16, gamma0=1e200, target="he4", activation="he4")
    ds = lb.simulate(p, 10, seed=0, n_points=11)
    assert bool(ds.diverged) and float(ds.t_diverged) == 1.0
    assert np.all(np.isnan(ds.M.values[1:])) and np.all(np.isfinite(ds.M.values[0]))
    assert lb.recovery_time(p, 10, seed=0)["diverged"]


def test_initial_overlaps():
    p = lb.Params(d=400, p=3, k=2, target="prod", m0=0.25)
    Wstar, W = lb.initial_weights(p, 0)
    np.testing.assert_allclose(Wstar @ Wstar.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(W @ Wstar.T, [[0.25, 0], [0, 0.25], [0.25, 0]], atol=1e-12)
    q = lb.Params(d=400, p=50, target="he3")
    Wstar, W = lb.initial_weights(q, 0)
    m = W @ Wstar[0]
    assert np.all(m >= 0) and 0.5 < np.sqrt(400) * np.sqrt(np.mean(m ** 2)) < 1.5  # |m| ~ d^-1/2


def test_bad_run_arguments():
    p = lb.Params(d=16)
    with pytest.raises(ValueError, match=r"steps \(number of SGD steps\) must be an integer >= 1"):
        lb.simulate(p, 0, seed=0)
    with pytest.raises(ValueError, match="sampler must be one of"):
        lb.simulate(p, 5, seed=0, sampler="fast")
    with pytest.raises(ValueError, match="seed must be"):
        lb.simulate(p, 5, seed=-1)


def test_one_step_overlaps_is_the_first_step_of_simulate():
    from tsdyn import _seeds
    p = lb.Params(d=32, mu=0.5, gamma0=0.3, target="he3", activation="he3", m0=0.3)
    for sampler in ("full", "reduced"):
        m = one_step_overlaps(p, 3, seed=5, sampler=sampler)
        for i, child in enumerate(_seeds.children(_seeds.seed_sequence(5), 3)):
            ds = lb.simulate(p, 1, seed=child, n_points=2, sampler=sampler)
            np.testing.assert_array_equal(m[i], ds.M.values[-1])


@pytest.mark.parametrize("target, loss, noise", [("he3", "square", 0.0), ("he2", "correlation", 0.3)])
def test_gaussian_sampler_moments_are_one_samples_moments(target, loss, noise):
    """The moments the central-limit sampler draws from: the mean of v = (F zeta_1, F zeta_2, F^2)
    against the theory's own quadrature (E[F nu], E[F^2]: another code path), and mean and
    covariance against a plain numpy tensor-product rule with other nodes (48 per axis, 5 for the
    noise). Both are exact for these polynomials, so they agree to rounding (1e-9 relative)."""
    from tsdyn.largebatch import functions, theory
    p = lb.Params(d=64, target=target, activation=target, loss=loss, noise=noise, m0=0.3)
    Wstar, W = lb.initial_weights(p, 1)
    kern = simmod._kernels
    U, L = np.empty((2, 64)), np.empty((2, 2))
    r = kern.basis(Wstar, W, U, L)
    mean, cov = np.empty(3), np.empty((3, 3))
    nodes = simmod._hermite_rule(simmod._N_NODES)
    noise_nodes = simmod._hermite_rule(3) if noise > 0 else (np.zeros(1), np.ones(1))
    kern.sample_term_moments(L, r, *nodes, *noise_nodes, p.activation_code, p.target_code,
                             simmod.LOSSES.index(loss), np.sqrt(noise), mean, cov)
    mom = theory.moments(p, W @ Wstar.T, np.eye(1))
    np.testing.assert_allclose(mean[[0, 2]], [mom["F_nu"][0, 0], mom["FF"][0, 0]], rtol=1e-9)
    x, w = np.polynomial.hermite_e.hermegauss(48)
    xn, wn = np.polynomial.hermite_e.hermegauss(5)
    z1, z2, xi = np.meshgrid(x, x, xn, indexing="ij")
    wt = np.einsum("a,b,c->abc", w, w, wn) / (w.sum() ** 2 * wn.sum())
    lam = L[1, 0] * z1 + L[1, 1] * z2
    res = functions.numpy_value(p.target_code, z1) + np.sqrt(noise) * xi
    if loss == "square":
        res = res - functions.numpy_value(p.activation_code, lam)
    F = res * functions.numpy_derivative(p.activation_code, lam)
    v = np.stack([F * z1, F * z2, F * F])
    m_ref = np.einsum("abc,iabc->i", wt, v)
    cov_ref = np.einsum("abc,iabc,jabc->ij", wt, v, v) - np.outer(m_ref, m_ref)
    np.testing.assert_allclose(mean, m_ref, rtol=1e-9, atol=1e-12 * np.abs(m_ref).max())
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-9, atol=1e-12 * np.abs(cov_ref).max())


def test_gaussian_sampler_step_has_sgds_mean_and_variance():
    """One step from m0 = 0.3 at n_b = 4096 (He3, square loss, projected, gamma = 0.05, where the
    noise term gamma^2 (d / n_b) E[F^2] is 0.004, of the order it has at the phase diagrams'
    boundaries): the overlap after the step, 4000 runs with each sampler. The central-limit sampler
    draws the batch sums with the exact mean and covariance, so the mean and variance of m' agree
    with the exact sampler's within z = 4 (two statistics; the variance's error from the fourth
    moment). Power: the same comparison with the batch twice as large is rejected.
    (With a noise term of 0.37, gamma = 0.5 here, the dropped skewness shows: the mean of m' then
    differs by 6 standard errors. The paper preset's largest noise terms under "auto", 0.15-0.18,
    come with batches 50-60 times larger; the chapter checks one step there.)"""
    p = lb.Params(d=64, n0=4096.0, mu=0.0, gamma0=0.05, target="he3", activation="he3", m0=0.3)
    exact = one_step_overlaps(p, 4000, seed=1, sampler="reduced")[:, 0, 0]
    clt = one_step_overlaps(p, 4000, seed=2, sampler="gaussian")[:, 0, 0]
    z = _max_z(exact[:, None], clt[:, None])
    print("max z, gaussian against exact:", z)
    assert z < 4
    wrong = one_step_overlaps(lb.Params(**{**p.__dict__, "n0": 8192.0}), 4000, seed=2,
                              sampler="gaussian")[:, 0, 0]
    assert _max_z(exact[:, None], wrong[:, None]) > 4


def test_auto_sampler_and_its_record():
    small = lb.Params(d=64, n0=float(simmod.GAUSSIAN_MIN_NB - 1), gamma0=0.1, target="he2", activation="he2")
    big = lb.Params(d=64, n0=float(simmod.GAUSSIAN_MIN_NB), gamma0=0.1, target="he2", activation="he2")
    two = lb.Params(d=64, n0=float(simmod.GAUSSIAN_MIN_NB), p=2, gamma0=0.1, target="he2", activation="he2")
    assert simmod.resolve_sampler(small, "auto") == "reduced"
    assert simmod.resolve_sampler(big, "auto") == "gaussian"
    assert simmod.resolve_sampler(two, "auto") == "reduced"
    ds = lb.simulate(big, 20, seed=0, n_points=3, sampler="auto")
    assert ds.attrs["sampler"] == "gaussian"
    np.testing.assert_allclose(ds.Q.values, 1.0, atol=1e-13)  # renormalised as by the others
    with pytest.raises(ValueError, match="sampler 'gaussian' needs p = k = 1"):
        lb.simulate(two, 2, seed=0, sampler="gaussian")


def test_gaussian_sampler_refuses_what_its_quadrature_cannot_do():
    """The central-limit sampler's quadrature is exact only for polynomial sigma and h*: "gaussian"
    refuses the others, and "auto" keeps the exact sampler for them at any batch."""
    relu = lb.Params(d=64, n0=float(simmod.GAUSSIAN_MIN_NB), gamma0=0.1, target="relu", activation="relu")
    with pytest.raises(ValueError, match="polynomial activation and target"):
        lb.simulate(relu, 2, seed=0, sampler="gaussian")
    assert simmod.resolve_sampler(relu, "auto") == "reduced"
