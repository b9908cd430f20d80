"""The linear scaling rule (chapter 6) in the tanh ensemble: the finite-step stability theory of the
teacher minimum against exact one-step moments, and the paired scan at fixed T = eps/|B|."""

import numbers

import numpy as np
import pytest

from tsdyn import dyson
from tsdyn.dyson import scaling_rule as sr
from tsdyn.dyson import stability as st


# ------------------------------------------------------------------ theory: the one-step map (*)

@pytest.fixture(scope="module")
def mom():
    return st.minimum_moments((3, 16, 8, 1), seed=3, n_teachers=4, n_samples=2000, rank=12)


def _direct_second_moment(J, Sigma, eps, batch):
    """E[(1 - eps H_B) Sigma (1 - eps H_B)] for mini-batches of ``batch`` samples drawn with
    replacement from the rows of J, written out with the per-sample matrices (no Q, no basis)."""
    n = len(J)
    H = J.T @ J / n
    HaSHa = np.einsum("ap,aq,qr,ar,as->ps", J, J, Sigma, J, J) / n  # mean_a J_a J_a^T Sigma J_a J_a^T
    second = (1 - 1 / batch) * H @ Sigma @ H + HaSHa / batch
    return Sigma - eps * (H @ Sigma + Sigma @ H) + eps ** 2 * second


def test_map_on_symmetric_matrices_equals_the_direct_one_step_moment():
    """The theory's svec form I - eps D_eps + eps T Q against the direct expectation over batches,
    on random per-sample gradients with all directions kept: equal to rounding (1e-10)."""
    rng = np.random.default_rng(0)
    J = rng.standard_normal((60, 4)) * np.array([2.0, 1.0, 0.5, 0.2])
    lam, Q, _, U = st._gradient_moments(J, 4)
    i, j, w = st._sym_index(4)
    A = rng.standard_normal((4, 4))
    Sigma = A @ A.T
    for eps, batch in ((0.1, 1), (0.3, 4), (0.05, 32)):
        T = eps / batch
        S = U.T @ Sigma @ U
        svec = S[i, j] * w
        theory = (1 - eps * (lam[i] + lam[j]) + eps ** 2 * lam[i] * lam[j]) * svec + eps * T * Q @ svec
        direct = U.T @ _direct_second_moment(J, Sigma, eps, batch) @ U
        assert np.allclose(theory, direct[i, j] * w, rtol=1e-10, atol=1e-10 * np.abs(direct).max())


def test_one_step_moment_against_monte_carlo_sgd():
    """The direct moment itself against linear SGD steps with batches drawn with replacement:
    E[delta' delta'^T] from 40000 independent steps, within 5 Monte Carlo standard errors."""
    rng = np.random.default_rng(1)
    J = rng.standard_normal((30, 3)) * np.array([1.5, 1.0, 0.4])
    delta = np.array([0.7, -0.4, 1.1])
    eps, batch, reps = 0.4, 3, 40000
    idx = rng.integers(0, 30, (reps, batch))
    Jb = J[idx]  # (reps, batch, P)
    HB = np.einsum("rbp,rbq->rpq", Jb, Jb) / batch
    d1 = delta - eps * HB @ delta
    outer = d1[:, :, None] * d1[:, None, :]
    exact = _direct_second_moment(J, np.outer(delta, delta), eps, batch)
    se = outer.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(outer.mean(axis=0) - exact) < 5 * se + 1e-12)


def test_stability_temperature_is_where_the_growth_factor_is_one(mom):
    """The closed form 1/T_c = rho(D^-1/2 Q D^-1/2) against the spectral radius of the one-step map,
    computed without it: 1 at T_c (to 1e-9), above 1 just above T_c and below just below."""
    for eps in (0.05, 0.3):
        tc = st.stability_temperature(mom, eps)
        for k, t in enumerate(tc):
            assert st.growth_factor(mom, float(t), eps)[k] == pytest.approx(1.0, abs=1e-9)
            assert st.growth_factor(mom, float(t) * 1.05, eps)[k] > 1.0
            assert st.growth_factor(mom, float(t) * 0.95, eps)[k] < 1.0


def test_finite_step_lowers_the_boundary_and_gd_bound_caps_it(mom):
    tcs = np.array([st.stability_temperature(mom, e) for e in (0.0, 0.1, 0.3, 0.6)])
    assert np.all(np.diff(tcs, axis=0) < 0)  # the eps H Sigma H term only destabilises
    assert np.all(st.stability_temperature(mom, float(2.0 / mom.lam_max.min()) * 1.001)
                  [mom.lam_max == mom.lam_max.min()] == 0.0)
    # B_c <= 2/(T lambda_max) (noise only destabilises), and -> it as T -> 0: at T = 1e-6 the noise term
    # eps T Q shifts the root by O(T) relative
    T = 0.03
    assert np.all(st.critical_batch(mom, T) <= 2.0 / (T * mom.lam_max) * (1 + 1e-9))
    assert np.allclose(st.critical_batch(mom, 1e-6) * 1e-6, 2.0 / mom.lam_max, rtol=1e-4)


def test_critical_temperature_and_batch_are_one_boundary(mom):
    """T_c(|B|) solves T = T_c(T |B|), and the critical batch at that T is |B| again (root tolerances)."""
    for B in (1, 8):
        tc = st.critical_temperature(mom, B)
        assert np.allclose(tc, [st.stability_temperature(mom, float(t) * B)[k] for k, t in enumerate(tc)],
                           rtol=1e-7)
        assert np.allclose([st.critical_batch(mom, float(t))[k] for k, t in enumerate(tc)], B, rtol=1e-6)
    assert np.all(st.critical_batch(mom, 10.0) == 0.0)  # above T_c(0) no batch is stable


def test_langevin_limit_is_the_small_step_limit_of_the_discrete_rate(mom):
    """At fixed T, (rho - 1)/eps of the one-step map tends to the top eigenvalue of the Langevin
    generator -D_0 + T Q as eps -> 0, with a positive O(eps) gap (first-order perturbation by the
    eps Lambda (x) Lambda term, v^T (Lambda (x) Lambda) v > 0): halving eps halves the gap (ratio 2 +- 0.1:
    the second-order terms)."""
    T = 0.1
    i, j, _ = st._sym_index(mom.rank)
    lam, Q = mom.lam[0], mom.Q[0]
    gen = np.linalg.eigvalsh(-np.diag(lam[i] + lam[j]) + T * Q)[-1]
    gaps = [(st.growth_factor(mom, T, e)[0] - 1) / e - gen for e in (4e-3, 2e-3)]
    assert gaps[0] > 0 and gaps[0] / gaps[1] == pytest.approx(2.0, abs=0.1)


# ------------------------------------------------------------------ the paired scan

@pytest.fixture(scope="module")
def scan():
    # T = 2^-5 at 1/sigma_W = 8 (the chapter's ordered phase), tau = 256, 16 networks: ~5-20 s
    return dyson.scaling_rule_scan(2.0 ** -5, 8.0, [1, 4, 32, 128], tau_f=256.0, n_models=16, seed=0, n_boot=500,
                                   n_teachers=6, n_points=3, sharpness_samples=500)


def test_scan_contract(scan):
    assert list(scan.batch.values) == [1, 4, 32, 128]
    for k in ("deviation_theory", "deviation", "deviation_lo", "deviation_hi"):
        assert scan[k].dims == ("batch",)
    for k in ("temperature_symbol", "temperature", "observable", "critical_batch_formula", "critical_batch_theory",
              "critical_batch_measured", "critical_batch_measured_lo", "critical_batch_measured_hi", "tolerance"):
        assert isinstance(scan.attrs[k], (float, str)) and not isinstance(scan.attrs[k], bool), k
    assert scan.attrs["temperature"] == 2.0 ** -5
    assert np.all(scan.deviation_theory.values == 0.0)  # the Langevin equation: T alone
    assert scan.deviation.values[0] == 0.0  # the smallest batch is the rule's reference
    assert np.allclose(scan.eps.values, 2.0 ** -5 * scan.batch.values)
    assert np.all(scan.steps.values * scan.eps.values == 256.0)  # equal tau (hence equal samples)


def test_rule_holds_at_small_step_and_breaks_beyond_the_critical_batch(scan):
    """|B| = 4 (eps = 1/8, eps lambda_max/2 ~ 0.15): the paired deviation is bounded by 0.1 with an
    interval of width < 0.1 (16 networks; bootstrap 68 %), in agreement with the Langevin theory's 0
    within 3 of its standard errors. Beyond B_c (theory ~ 24) it is resolved and grows: at 32 and 128
    the lower ends exceed 0.3 and 5, and the intervals are ordered (deviation rises with |B|)."""
    dev, lo, hi = (scan[k].sel(batch=4).item() for k in ("deviation", "deviation_lo", "deviation_hi"))
    assert hi - lo < 0.1 and abs(dev) < 0.1
    assert abs(dev - scan.deviation_theory.sel(batch=4).item()) < 3 * (hi - lo) / 2
    assert scan.deviation_lo.sel(batch=32) > 0.3 and scan.deviation_lo.sel(batch=128) > 5
    assert scan.deviation_lo.sel(batch=32) > scan.deviation_hi.sel(batch=4)
    assert scan.deviation_lo.sel(batch=128) > scan.deviation_hi.sel(batch=32)


def test_critical_batches_theory_and_measured(scan):
    """Theory at T = 2^-5 (6 teachers): B_c between 10 and 40 and below the gradient-descent bound
    2/(T lambda_max) (noise only destabilises). Measured (tolerance 0.1, tau = 256): inside the scan,
    between 4 and 32, and below the theory's B_c: short runs break before the minimum's stability limit
    (the larger step lags along the way)."""
    a = scan.attrs
    assert 10 < a["critical_batch_theory"] < 40
    assert a["critical_batch_theory"] <= a["critical_batch_gd"] * (1 + 1e-9)
    assert 4 < a["critical_batch_measured"] < 32
    assert a["critical_batch_measured"] < a["critical_batch_theory"]
    est, lo, hi = dyson.critical_batch_measured(scan, 1.0)  # the same scan read at deviation = 1
    assert 4 < est < 128 and (np.isnan(lo) or lo <= hi)


def test_trained_networks_sit_at_the_stability_edge_beyond_the_break(scan):
    """The mechanism, measured on the trained networks: at |B| = 1 the largest curvature is far inside
    gradient descent's bound (eps lambda_max / 2 < 0.2); at |B| = 128 (eps = 4, far beyond B_c) SGD has
    left the sharp teacher region and sits at the edge, eps lambda_max / 2 = 1 within 0.2 (median of 16
    networks; their spread at tau = 256 is ~0.1), with lambda_max below 2/eps (not at the teacher's ~3)."""
    assert scan.step_sharpness.sel(batch=1) < 0.2
    assert scan.step_sharpness.sel(batch=128) == pytest.approx(1.0, abs=0.2)
    assert scan.sharpness.sel(batch=128) < scan.sharpness_lo.sel(batch=1)


def test_teacher_minimum_repels_sgd_where_the_theory_says(scan):
    """The same networks started at their teacher (+ a 1 % perturbation), tau = 32: the fraction whose loss
    grows against the fraction of the theory's own teachers (6 here) that are mean-square unstable at this
    step. |B| = 1, 4 (eps lambda_max/2 < 0.3): at most 2 of 16 repelled; |B| = 128: at least 13 of 16, and
    the theory says all. At |B| = 32, near B_c: the two fractions agree within 3 combined binomial
    standard errors (16 networks, 6 teachers)."""
    assert scan.repelled.sel(batch=1) <= 2 / 16 and scan.repelled.sel(batch=4) <= 2 / 16
    assert scan.repelled.sel(batch=128) >= 13 / 16 and scan.unstable_theory.sel(batch=128) == 1.0
    p = 0.5 * (scan.repelled.sel(batch=32).item() + scan.unstable_theory.sel(batch=32).item())
    se = np.sqrt(max(p * (1 - p), 0.05) * (1 / 16 + 1 / 6))
    assert abs(scan.repelled.sel(batch=32).item() - scan.unstable_theory.sel(batch=32).item()) < 3 * se
    assert 4 < scan.attrs["critical_batch_repelled"] < 128


def test_teacher_start_is_the_teacher_plus_the_perturbation():
    from tsdyn.dyson.simulate import networks
    p = dyson.Params(eps=0.1, sigma_w=1e-3)
    rand, near = (networks(p, seed=4, n_models=2, init=i) for i in ("random", "teacher"))
    assert np.allclose(near["W2"] - near["W2_teacher"], rand["W2"], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="init"):
        networks(p, seed=4, n_models=1, init="zero")


def test_sharpness_is_the_top_eigenvalue_of_the_gauss_newton_matrix():
    from tsdyn.dyson.simulate import _sharpness, networks
    net = networks(dyson.Params(eps=0.1, sigma_w=0.5), seed=2, n_models=1)
    W, A, W3 = net["W2"][0], net["A1_train"][0][:300], net["W3"][0]
    g = W3 * (1 - np.tanh(A @ W.T) ** 2)
    J = (g[:, :, None] * A[:, None, :]).reshape(len(A), -1)
    assert _sharpness(W, A, W3) == pytest.approx(np.linalg.eigvalsh(J.T @ J / len(A))[-1], rel=1e-7)  # Lanczos tol


def test_batch_phase_boundary_runs_and_theory_falls_with_batch():
    ds = dyson.batch_phase_boundary([0.03125, 1.0, 32.0], [1, 4], 8.0, n_models=4, tau_f=8.0, n_boot=0,
                                    n_teachers=3)
    assert ds.log10_loss.shape == (2, 3, 4)
    assert np.all(np.isfinite(ds.log10_loss.values))
    assert ds.Tc_theory.sel(batch=4) < ds.Tc_theory.sel(batch=1) < ds.attrs["Tc_langevin"]
    # the loss leaves its plateau (doubles) and is half-way up inside the scanned range, onset first
    assert 0.03125 < ds.T_onset.sel(batch=1) <= ds.T_half.sel(batch=1) < 32.0
    # the common-level reading is the first batch's own half-way crossing there (the same level)
    assert float(ds.T_level.sel(batch=1)) == float(ds.T_half.sel(batch=1))
    assert ds.passes.dims == ("reading", "batch", "T", "model") and ds.passes.shape == (4, 2, 3, 4)
    assert list(ds.reading.values) == list(dyson.PASS_READINGS)
    # the Langevin clock: round(tau_f / (T |B|)) steps, at least one
    np.testing.assert_array_equal(ds.steps.values, [[256, 8, 1], [64, 2, 1]])


def test_level_crossings_paired_bootstrap_by_hand():
    """_level_crossings on a constructed scan: batch 2 is batch 1 shifted down in T by a factor 2 (the
    same networks: paired), so its crossing of batch 1's half-way level is half of batch 1's and the
    ratio's interval is tight around 1/2 (the shift is exact in every resample; only the level moves)."""
    rng = np.random.default_rng(0)
    Ts = 2.0 ** np.arange(-4, 5)  # 9 temperatures, factor 2 apart
    noise = rng.normal(0.0, 0.3, (len(Ts) + 1, 64))
    curve = np.tanh(np.log2(np.concatenate([Ts, [Ts[-1] * 2]])))[:, None] + noise  # (T + 1, model)
    logL = np.stack([curve[:-1], curve[1:]])  # batch 2 at T equals batch 1 at 2T
    est, lo, hi, rlo, rhi, level = sr._level_crossings(Ts, logL, 400, seed=1)
    m = logL.mean(axis=2)
    assert level == pytest.approx(0.5 * (m[0, 0] + m[0, -1]))
    assert est[1] / est[0] == pytest.approx(0.5, rel=0.02)  # log-T interpolation of shifted data: exact but
    # for the one grid cell where the shifted copy's end points differ (2 %: well inside)
    assert lo[0] <= est[0] <= hi[0] and rlo[0] == rhi[0] == 1.0
    assert 0.45 < rlo[1] <= rhi[1] < 0.55


def test_batch_phase_diagram_is_paired_across_batches():
    """Each grid point has the same teachers, data and starts at every |B|: the initial spacing S0 of
    every network is identical across batch sizes, while the trained losses differ."""
    ds = dyson.batch_phase_diagram([0.25, 1.0], [1.0, 8.0], [1, 4], tau_f=4.0, n_models=3, seed=2,
                                   moment_samples=50)
    assert ds.loss.dims == ("batch", "T", "inv_sigma_w", "model") and ds.loss.shape == (2, 2, 2, 3)
    np.testing.assert_array_equal(ds.steps.values[:, :, 0], [[16, 4], [4, 1]])
    assert all(r in ds for r in dyson.PASS_READINGS)
    p = dyson.tau_point(seed=np.random.SeedSequence(2, spawn_key=(1, 0, 0)), T=1.0, inv_sigma_w=1.0, tau_f=4.0,
                        n_models=3, batch=4, moment_samples=50)
    np.testing.assert_array_equal(p.loss.values, ds.loss.sel(batch=4, T=1.0, inv_sigma_w=1.0).values)
    s0 = [dyson.tau_point(seed=np.random.SeedSequence(2, spawn_key=(0, 1, 0)), T=0.25, inv_sigma_w=8.0, tau_f=4.0,
                          n_models=3, batch=b, moment_samples=50) for b in (1, 4)]
    np.testing.assert_array_equal(s0[0].S0.values, s0[1].S0.values)
    assert not np.array_equal(s0[0].loss.values, s0[1].loss.values)
    with pytest.raises(ValueError, match="tau_f"):
        dyson.batch_phase_diagram([0.25, 1.0], [8.0], [1, 4], tau_f=0.0, n_models=2)
    with pytest.raises(ValueError, match="batches"):
        dyson.batch_phase_diagram([0.25, 1.0], [8.0], [4], tau_f=1.0, n_models=2)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("kw, match", [
    (dict(T=0.0), "T"),
    (dict(inv_sigma_w=-1.0), "inv_sigma_w"),
    (dict(batches=[4]), "batches"),
    (dict(batches=[4, 1]), "increasing"),
    (dict(batches=[0, 4]), "batches"),
    (dict(batches=[1, 8000]), "batches"),
    (dict(tolerance=0.0), "tolerance"),
    (dict(n_models=1), "n_models"),
    (dict(tau_f=-1.0), "tau_f"),
    (dict(tau_f=3.1), "whole"),  # tau_f / (T |B|) = 99.2 steps: not a whole number
])
def test_scan_bad_input(kw, match):
    args = dict(T=2.0 ** -5, inv_sigma_w=8.0, batches=[1, 4], tau_f=8.0, n_models=2)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        dyson.scaling_rule_scan(args.pop("T"), args.pop("inv_sigma_w"), args.pop("batches"), **args)


def test_theory_bad_input(mom):
    with pytest.raises(ValueError, match="eps"):
        st.stability_temperature(mom, -0.1)
    with pytest.raises(ValueError, match="T"):
        st.critical_batch(mom, 0.0)
    with pytest.raises(ValueError, match="batch"):
        st.critical_temperature(mom, 0)
    with pytest.raises(ValueError, match="rank"):
        st.minimum_moments(seed=0, rank=10 ** 4)
    with pytest.raises(ValueError, match="MinimumMoments"):
        st.critical_batch({"lam": 1}, 0.1)
    with pytest.raises(ValueError, match="clock"):
        dyson.batch_phase_boundary([0.1, 1.0, 2.0], [1, 4], 8.0, n_models=2)
    with pytest.raises(ValueError, match="Ts"):
        dyson.batch_phase_boundary([1.0, 0.1, 2.0], [1, 4], 8.0, n_models=2, steps=10)
    assert isinstance(mom.rank, numbers.Integral)
