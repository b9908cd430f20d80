"""Statistics of tsdyn.dyson.analysis that the chapter quotes: each against a case with a
known answer."""

import math

import numpy as np
import pytest

from tsdyn import dyson
from tsdyn.dyson import analysis as an


def test_total_variation_known_cases():
    w = 0.5
    box_a, box_b = np.array([2.0, 0.0]), np.array([0.0, 2.0])  # densities on two bins of width 0.5
    assert an.total_variation(box_a, box_a, w) == 0.0
    assert an.total_variation(box_a, box_b, w) == pytest.approx(1.0)
    assert an.total_variation(box_a, np.array([1.0, 1.0]), w) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"width \(bin width\)"):
        an.total_variation(box_a, box_b, 0.0)


def test_clopper_pearson_closed_forms_and_coverage():
    n = 10
    lo, hi = an.clopper_pearson(0, n, level=0.68)
    # k = 0: upper limit solves (1 - p)^n = 0.16
    assert lo == 0.0 and hi == pytest.approx(1 - 0.16 ** (1 / n), rel=1e-10)
    lo, hi = an.clopper_pearson(n, n, level=0.68)
    assert hi == 1.0 and lo == pytest.approx(0.16 ** (1 / n), rel=1e-10)
    lo, hi = an.clopper_pearson(5, n)
    assert lo == pytest.approx(1 - hi, rel=1e-10)  # symmetric at k = n/2
    # exact interval: coverage >= the nominal level for every p (checked by summing the binomial)
    from scipy import stats
    ks = np.arange(n + 1)
    lo_k, hi_k = an.clopper_pearson(ks, n, level=0.68)
    for p in (0.05, 0.3, 0.5, 0.8):
        cover = np.sum(stats.binom.pmf(ks, n, p) * ((lo_k <= p) & (p <= hi_k)))
        assert cover >= 0.68 - 1e-12
    with pytest.raises(ValueError, match="0 <= k <= n"):
        an.clopper_pearson(11, 10)


def test_log_gap_and_paired_z_by_hand():
    meas = np.array([[1.0, 1.0], [math.e, math.e ** 3]])  # (t, model)
    pred = np.array([[1.0, 1.0, 1.0], [1.0, math.e ** 2, math.e ** 4]])
    gap, z = an.log_gap(meas, pred)
    assert gap[0] == 0 and z[0] == 0  # identical, no spread
    # means of ln S: 2 and 2 -> gap 0 at t = 1 as well
    assert gap[1] == pytest.approx(0.0)
    gap, z = an.log_gap(meas * math.e, meas)
    assert gap == pytest.approx([1.0, 1.0])
    se = math.sqrt(2 * np.var([1.0, 3.0], ddof=1) / 2)
    assert z[1] == pytest.approx(1.0 / se) and z[0] == math.inf
    a, b = np.array([1.0, 2.0, 4.0]), np.array([0.0, 1.0, 2.0])
    d = a - b
    assert an.paired_z(a, b) == pytest.approx(d.mean() / (d.std(ddof=1) / math.sqrt(3)))
    with pytest.raises(ValueError, match="same length >= 2"):
        an.paired_z([1.0], [2.0])


def test_paired_ks_detects_a_shift_and_is_uniform_under_the_null():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(16)  # the model's own part, shared by both runs
    D, p = an.paired_ks(base + 0.1 * rng.standard_normal(16), base + 5 + 0.1 * rng.standard_normal(16),
                        n_perm=500, seed=1)
    assert D == 1.0 and p < 0.01
    # Under the null the p-value is (super-)uniform: P(p <= 0.1) <= 0.1 up to binomial error
    # (200 replicates: s.e. 0.021, so 0.1 + 3 s.e. = 0.164).
    ps = []
    for i in range(200):
        base = rng.standard_normal(16)
        ps.append(an.paired_ks(base + rng.standard_normal(16), base + rng.standard_normal(16),
                               n_perm=99, seed=i)[1])
    assert np.mean(np.array(ps) <= 0.1) < 0.164
    with pytest.raises(ValueError, match=r"n_perm \(permutations\)"):
        an.paired_ks(base, base, n_perm=0)


def test_spacing_ratio_goe_3x3_and_poisson():
    """For 3x3 GOE matrices the ratio has exactly the surmise law, mean 4 - 2 sqrt 3;
    for independent exponential spacings (Poisson levels) the mean is 2 ln 2 - 1."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((20_000, 3, 3))
    x = np.linalg.eigvalsh(A + A.transpose(0, 2, 1))
    m, se = an.mean_spacing_ratio(x, n_boot=200, seed=0)
    assert abs(m - dyson.MEAN_R_GOE) < 4 * se
    levels = np.cumsum(rng.exponential(size=(5000, 12)), axis=1)
    m, se = an.mean_spacing_ratio(levels, n_boot=200, seed=0)
    assert abs(m - dyson.MEAN_R_POISSON) < 4 * se
    # the bootstrap s.e. over matrices is the standard error of the per-matrix means (within 20%,
    # the bootstrap's own sampling error at 200 resamples is ~5%)
    per = an.spacing_ratios(levels).mean(axis=1)
    assert se == pytest.approx(per.std(ddof=1) / math.sqrt(len(per)), rel=0.2)
    # a 16 x 32 Wishart matrix repels: its <r> is far above Poisson, near the GOE values
    r_w, se_w = an.wishart_spacing_ratio(16, 32, n_matrices=500, seed=0)
    assert r_w - dyson.MEAN_R_POISSON > 20 * se_w and abs(r_w - 0.53) < 0.02
    with pytest.raises(ValueError, match="at least 3 levels"):
        an.spacing_ratios(np.zeros((4, 2)))


def test_halfway_crossing_and_its_bootstrap():
    x = np.geomspace(0.1, 10.0, 9)
    truth = 1.0
    curve = np.tanh(np.log(x / truth))  # crosses the half-way level 0 at x = 1 exactly (a grid point)
    rng = np.random.default_rng(4)
    samples = curve[:, None] + 0.3 * rng.standard_normal((9, 40))
    xc, lo, hi = an.halfway_crossing(x, np.repeat(curve[:, None], 3, axis=1))
    assert xc == pytest.approx(truth, rel=1e-12) and math.isnan(lo)
    xc, lo, hi = an.halfway_crossing(x, samples, n_boot=400, seed=0)
    assert lo < xc < hi
    # the noise (0.3 / sqrt 40 = 0.047 on a slope ~1 per e-fold) moves the crossing by ~5%:
    # within 4 such widths of the truth, and the 16-84% range is of that size
    assert abs(math.log(xc / truth)) < 4 * 0.05
    assert 0.02 < math.log(hi / lo) < 0.3
    with pytest.raises(ValueError, match=r"samples must have shape"):
        an.halfway_crossing(x, samples[:3])


def test_crossing_rejects_non_positive_x_on_a_log_axis():
    with pytest.raises(ValueError, match=r"x must be > 0 for log_x=True; got min\(x\) = 0.0"):
        dyson.crossing([0.0, 1.0], [0.0, 1.0], 0.5)
    assert dyson.crossing([0.0, 1.0], [0.0, 1.0], 0.5, log_x=False) == 0.5


def test_ito_term_in_the_recorded_coefficients():
    """analysis.spacing_coefficients(ds, ito=True) adds T (C_N - C_1)/(N - 1) to K_S."""
    p = dyson.Params.from_temperature(0.5, 8.0)
    ds = dyson.train_ensemble(p, 20, seed=0, n_models=2, n_points=3, moment_samples=50)
    a, b = dyson.spacing_coefficients(ds), dyson.spacing_coefficients(ds, ito=True)
    C = ds.C.values
    np.testing.assert_allclose(b.K_S - a.K_S, 0.5 * (C[..., -1] - C[..., 0]) / 15, rtol=1e-12)
    np.testing.assert_array_equal(a.V_S, b.V_S)


def test_fraction_crossing_by_hand_and_its_bootstrap():
    x = [1.0, 2.0, 4.0, 8.0]
    flags = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], bool)
    xc, lo, hi = dyson.fraction_crossing(x, flags, 0.68)
    # fraction 1 -> 0.5 between x = 1 and 2: log-linear, f = (0.68 - 1)/(0.5 - 1) = 0.64
    assert xc == pytest.approx(2 ** 0.64) and math.isnan(lo) and math.isnan(hi)
    flags = np.repeat(flags, 25, axis=1)  # 100 models: a resolved bootstrap range around the estimate
    xc, lo, hi = dyson.fraction_crossing(x, flags, 0.68, n_boot=200, seed=1)
    assert lo <= xc <= hi and 1.0 < lo and hi < 2.0
    with pytest.raises(ValueError, match="flags must have shape"):
        dyson.fraction_crossing(x, flags[:2], 0.68)


def _moment_dataset(x, K, V, C, T=0.5):
    """A minimal train_ensemble-like Dataset (one time, one model) with given moments."""
    import xarray as xr
    N = len(x)
    S = (x[-1] - x[0]) / (N - 1)
    return xr.Dataset({"x": (("t", "model", "eig"), np.array(x, float)[None, None]),
                       "K": (("t", "model", "eig"), np.array(K, float)[None, None]),
                       "V": (("t", "model", "eig", "eig2"), np.array(V, float)[None, None]),
                       "C": (("t", "model", "eig"), np.array(C, float)[None, None]),
                       "S": (("t", "model"), [[S]])},
                      coords={"t": [0.0], "model": [0]}, attrs={"T": T})


def test_coulomb_ratio_is_one_for_equally_spaced_levels():
    """(B.5) replaces x_N - x_j by (N - j) S: exact when the levels are equally spaced (and V
    constant, where both sides are 2 v H_{N-1} / ((N - 1) S)); extreme levels far from a packed
    bulk feel less repulsion than (B.5) assigns them (here 1.79 v against 2.28 v)."""
    N, v = 6, 0.3
    V = np.full((N, N), v)
    ds = _moment_dataset(np.arange(1.0, N + 1) * 0.2, np.zeros(N), V, np.zeros(N))
    assert dyson.coulomb_ratio(ds).item() == pytest.approx(1.0, rel=1e-12)
    x = np.array([0.0, 0.99, 1.0, 1.01, 1.02, 2.0])
    assert dyson.coulomb_ratio(_moment_dataset(x, np.zeros(N), V, np.zeros(N))).item() < 0.85


def test_drift_balance_by_hand():
    N = 4
    V = np.eye(N) * 0.2 + 0.05
    x, K, C = [0.0, 1.0, 2.0, 3.0], [0.1, 0.0, 0.0, -0.5], [0.0, 0.0, 0.0, 0.3]
    ds = _moment_dataset(x, K, V, C, T=0.5)
    b = dyson.drift_balance(ds, since=0.0)
    K_S = (-0.5 - 0.1) / 3 + 0.5 * 0.3 / 3  # with the Ito drift
    V_S = dyson.spacing_coefficients(ds).V_S.item()
    assert b.K_S.item() == pytest.approx(K_S)
    assert b.coulomb.item() == pytest.approx(0.5 * V_S / 1.0)
    assert b.balance.item() == pytest.approx((K_S + 0.5 * V_S) / abs(K_S))
    assert b.snr.item() == pytest.approx(-K_S / V_S) and b.T_over_S.item() == pytest.approx(0.5)


def test_spacing_coefficients_in_the_bases_of_K():
    p = dyson.Params.from_temperature(0.5, 2.0, n_train=200, n_test=10)
    ds = dyson.train_ensemble(p, 200, seed=4, n_models=3, n_points=3, moment_samples=200, k_basis=True)
    # descending order: K_S = (K_min - K_max)/(N - 1) <= 0 for every model and time
    kd = dyson.spacing_coefficients(ds, basis="k_descending")
    np.testing.assert_allclose(kd.K_S, (ds.K_k.values[..., 0] - ds.K_k.values[..., -1]) / 15, rtol=1e-12)
    assert (kd.K_S.values <= 0).all()
    # levels labelled by X: K's eigenvalues permuted by ascending u^T X u
    k = dyson.spacing_coefficients(ds, basis="k")
    order = np.argsort(ds.xq_k.values, axis=-1)
    Kp = np.take_along_axis(ds.K_k.values, order, -1)
    np.testing.assert_allclose(k.K_S, (Kp[..., -1] - Kp[..., 0]) / 15, rtol=1e-12)
    Vp = ds.V_k.values[0, 0][np.ix_(order[0, 0], order[0, 0])]
    assert k.D_S[0, 0].item() == pytest.approx((Vp[0, 0] + Vp[-1, -1]) / (2 * 15 ** 2))
    with pytest.raises(ValueError, match="basis must be one of"):
        dyson.spacing_coefficients(ds, basis="z")
    plain = dyson.train_ensemble(p, 5, seed=4, n_models=1, n_points=2, moment_samples=10)
    with pytest.raises(ValueError, match="k_basis=True"):
        dyson.spacing_coefficients(plain, basis="k")
    s = dyson.summary(ds)
    assert {"converged", "converged_ito", "converged_k", "converged_kd"} <= set(s)


def test_criterion_vs_steps_and_spacing_sde_layout():
    crit = dyson.criterion_vs_steps(0.5, 2.0, [20, 40], seed=0, n_models=2, moment_samples=50, n_train=100)
    assert crit.converged.dims == ("steps", "model") and list(crit.steps.values) == [20, 40]
    p = dyson.Params.from_temperature(0.5, 8.0, n_train=100, n_test=10)
    ds = dyson.train_ensemble(p, 30, seed=0, n_models=2, n_points=4, moment_samples=50)
    sde = dyson.spacing_sde(ds, paths=3, seed=1, noise=False, n_steps=300)
    S = sde.S.values  # (tau, path): without noise the 3 paths of a model coincide; path p is model p // 3
    np.testing.assert_array_equal(S[:, 0], S[:, 2])
    np.testing.assert_allclose(S[0], np.repeat(ds.S.values[0], 3))
    assert not np.array_equal(S[:, 0], S[:, 3])


def test_criterion_late_by_hand():
    """Two late records: K_S = -1 and +0.2 (V_S = 1): instantaneously met once in two; on average
    (K_S = -0.4) met iff T/S_max(0) <= 0.4."""
    import xarray as xr
    N = 3
    V = np.zeros((2, 1, N, N))
    V[..., 0, 2] = V[..., 2, 0] = 1.0  # V_S = 2 V_N1/(N-1)^2 + (V_{N,N-1} + V_{1,2})/(N-1) = 0.5
    K = np.zeros((2, 1, N))
    K[0, 0, -1], K[1, 0, -1] = -1.0, 0.2  # K_S = (K_N - K_1)/(N - 1) = -0.5, 0.1
    ds = xr.Dataset({"K": (("t", "model", "eig"), K), "V": (("t", "model", "eig", "eig2"), V)},
                    coords={"t": [1.0, 2.0], "model": [0]},
                    attrs={"T": 1.0, "sigma_w": 1.0, "layers": "[3, 4, 3, 1]"})
    c = dyson.spacing_coefficients(ds)
    np.testing.assert_allclose(c.K_S.values[:, 0], [-0.5, 0.1])
    np.testing.assert_allclose(c.V_S.values[:, 0], [0.5, 0.5])
    # -K_S/V_S: 1.0 and -0.2 per record, 0.4 on average; LHS = (n2-1)/(4 sqrt(3/4)) T/sigma_w^2 = 0.577
    r = dyson.criterion_late(ds, since=0.0)
    assert r.instant.item() == 0.5 and not r.averaged.item()


def test_ito_share_spread_growth_and_spacing_over_bound_by_hand():
    """Two records (t = 0 is left out of the Ito share): K_S = (K_N - K_1)/(N - 1) = -0.5 and the
    Ito drift T (C_N - C_1)/(N - 1) = 0.1 at t = 1 (share 0.1/0.4 = 0.25), 0.3 at t = 2 (0.3/0.2
    = 1.5): median 0.875. S grows 1 -> 3 and 1 -> 5 in the two models: median growth 4."""
    import xarray as xr
    N = 3
    K = np.zeros((3, 2, N))
    K[..., -1] = -1.0
    C = np.zeros((3, 2, N))
    C[1, :, -1], C[2, :, -1] = 0.2, 0.6  # T = 1
    V = np.zeros((3, 2, N, N))
    S = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 5.0]])
    ds = xr.Dataset({"K": (("t", "model", "eig"), K), "C": (("t", "model", "eig"), C),
                     "V": (("t", "model", "eig", "eig2"), V), "S": (("t", "model"), S)},
                    coords={"t": [0.0, 1.0, 2.0], "model": [0, 1]}, attrs={"T": 1.0})
    assert dyson.ito_share(ds) == pytest.approx(0.875)
    assert dyson.spread_growth(ds) == pytest.approx(4.0)
    # S_max(0) = 4 sigma_w^2 sqrt(n2/n1) / (n2 - 1): sigma_w = 1, n1 = 32, n2 = 16 -> 4 sqrt(0.5) / 15
    np.testing.assert_allclose(dyson.spacing_over_bound([1.0, 2.0], 1.0, n1=32, n2=16),
                               np.array([1.0, 2.0]) * 15 / (4 * np.sqrt(0.5)), rtol=1e-12)
    with pytest.raises(ValueError, match="sigma_w"):
        dyson.spacing_over_bound([1.0], 0.0, n1=32, n2=16)


def test_finite_step_gap_layout_reproducibility_and_bad_tau():
    kw = dict(seed=0, sde_seed=1, n_models=2, moment_samples=20, paths=2, n_steps=200)
    gap = dyson.finite_step_gap(0.125, 8.0, [1, 2], tau_f=1, **kw)
    assert list(gap) == [1, 2] and all(math.isfinite(v) for v in gap.values())
    assert dyson.finite_step_gap(0.125, 8.0, [1, 2], tau_f=1, **kw) == gap  # same seeds, same bits
    with pytest.raises(ValueError, match="tau_f must be an integer >= 1"):
        dyson.finite_step_gap(0.125, 8.0, [1], tau_f=1.5, **kw)


# ------------------------------------------------------------------ the authors' recipe

def _identity_signs(X):
    """Signs that turn numpy's SVD eigenvectors of a diagonal, descending X into the identity."""
    return np.sign(np.diagonal(np.linalg.svd(X)[0]))


def test_published_criterion_by_hand():
    # X = diag(3, 2, 1): descending already, so with the signs fixed U = I and K~ = K, V~ = V.
    X = np.diag([3.0, 2.0, 1.0])
    K = np.array([[-1.0, 0.4, 0.0], [0.4, 7.0, 0.0], [0.0, 0.0, 0.5]])
    V = np.array([[9.0, 0.1, 0.2], [0.1, 9.0, 5.0], [0.2, 5.0, 0.3]])
    s = _identity_signs(X)
    out = dyson.published_criterion(X, K, V, 1.6, 1.0, n1=3, n2=3, signs=s)
    # K_t = |K_00| - |K_22| = 0.5; V_t = 2 V_02/2 + (V_01 + V_22)/1 = 0.2 + 0.1 + 0.3 (V_22: the off-by-one)
    assert out["K_S"] == pytest.approx(0.5 / 2)
    assert out["V_S"] == pytest.approx(0.6 / 2)
    # converged where K_t/(sqrt(n1/n2)(N-1)) = 0.25 >= T V_t/(4 sigma^2) = 0.15 T: T <= 5/3
    assert out["converged"]
    assert not dyson.published_criterion(X, K, V, 1.7, 1.0, n1=3, n2=3, signs=s)["converged"]


def test_published_criterion_depends_on_eigenvector_signs():
    X = np.diag([3.0, 2.0, 1.0])
    K = np.diag([-1.0, 7.0, 0.5])
    V = np.array([[9.0, 0.1, 0.2], [0.1, 9.0, 5.0], [0.2, 5.0, 0.3]])
    s = _identity_signs(X)
    # V~_ij = s_i s_j V_ij: flipping the top eigenvector gives V_t = -0.2 - 0.1 + 0.3 = 0,
    # flipping the bottom one V_t = -0.2 + 0.1 + 0.3 = 0.2; K_t (absolute diagonal) is unchanged
    top = dyson.published_criterion(X, K, V, 100.0, 1.0, n1=3, n2=3, signs=s * [-1, 1, 1])
    bottom = dyson.published_criterion(X, K, V, 1.0, 1.0, n1=3, n2=3, signs=s * [1, 1, -1])
    assert top["V_S"] == pytest.approx(0.0, abs=1e-15) and top["converged"]
    assert bottom["V_S"] == pytest.approx(0.1) and bottom["K_S"] == pytest.approx(0.25)


def test_published_criterion_bad_input():
    X = np.eye(3)
    with pytest.raises(ValueError, match="signs"):
        dyson.published_criterion(X, X, X, 1.0, 1.0, n1=3, n2=3, signs=[1, 2, 1])
    with pytest.raises(ValueError, match="sigma_w"):
        dyson.published_criterion(X, X, X, 1.0, -1.0, n1=3, n2=3)
    with pytest.raises(ValueError, match="shape"):
        dyson.published_criterion(X, X[:2], X, 1.0, 1.0, n1=3, n2=3)


def test_published_moments_recorded_consistently():
    """K_raw rotated into the eigenbasis of X has the diagonal K that train_ensemble records there
    (two code paths through the moment kernel: identity basis, then U; rounding only)."""
    p = dyson.Params.from_temperature(0.5, 8.0)
    ds = dyson.train_ensemble(p, 200, seed=3, n_models=3, n_points=3, moment_samples=300, published=True)
    end = ds.isel(t=-1)
    _, U = np.linalg.eigh(end.X_mat.values)
    Kx = np.diagonal(np.swapaxes(U, -1, -2) @ end.K_raw.values @ U, axis1=-2, axis2=-1)
    np.testing.assert_allclose(Kx, end.K.values, rtol=1e-9, atol=1e-12 * np.abs(end.K.values).max())
    s = dyson.summary(ds)
    assert s.converged_pub_draws.shape == (3, dyson.analysis.N_SIGN_DRAWS)


def _two_record_dataset(x):
    import xarray as xr
    one = _moment_dataset(x, np.r_[0.05, np.zeros(len(x) - 2), -0.1], np.full((len(x), len(x)), 0.3),
                          np.zeros(len(x)))
    ds = xr.concat([one, one], dim="t").assign_coords(t=[0.0, 10.0])
    return ds.assign_coords(tau=("t", [0.0, 1.0]))


def test_spacing_sde_exact_coulomb():
    """coulomb='exact' rescales V_S by coulomb_ratio: identical paths where (B.5) is exact (equally
    spaced levels, constant V: ratio 1, see above); a weaker repulsion, hence a smaller S at the same
    Brownian paths, for a packed bulk (ratio < 1)."""
    even = _two_record_dataset(np.arange(1.0, 7.0) * 0.2)
    a = dyson.spacing_sde(even, paths=4, seed=1, n_steps=200)
    b = dyson.spacing_sde(even, paths=4, seed=1, n_steps=200, coulomb="exact")
    np.testing.assert_allclose(a.S.values, b.S.values, rtol=1e-12)
    packed = _two_record_dataset(np.array([0.0, 0.99, 1.0, 1.01, 1.02, 2.0]))
    a = dyson.spacing_sde(packed, paths=4, seed=1, n_steps=200)
    b = dyson.spacing_sde(packed, paths=4, seed=1, n_steps=200, coulomb="exact")
    assert np.all(b.S.values[-1] < a.S.values[-1])
    with pytest.raises(ValueError, match="coulomb"):
        dyson.spacing_sde(even, paths=2, seed=1, coulomb="approx")


# ------------------------------------------------------------------ single levels of the Dyson equation

def test_level_median_gap_by_hand_and_pairs_paths_with_their_model():
    rng = np.random.default_rng(0)
    n_t, M, k, delta = 6, 32, 4, 0.3
    tau = np.linspace(0.0, 5.0, n_t)
    u = rng.normal(0.0, 1.0, (n_t, M))  # model-to-model spread of ln x, shared by a model's SDE paths
    meas = np.exp(u + rng.normal(0.0, 0.05, (n_t, M)))
    pred = np.exp(np.repeat(u, k, axis=1) + rng.normal(0.0, 0.05, (n_t, M * k)) - delta)
    g = an.level_median_gap(meas, pred, tau, seed=1)
    ref = np.median(np.log(meas), axis=1) - np.median(np.log(pred), axis=1)  # by hand
    assert g["end"] == pytest.approx(ref[-1]) and g["late"] == pytest.approx(ref[tau >= 2.5].mean())
    assert g["max"] == pytest.approx(np.abs(ref[1:]).max())
    # the shift is recovered: the paired noise is 0.05 per value, so the medians differ from delta by
    # ~0.05 * 1.25 / sqrt(M) ~ 0.01 plus the median-of-copies effect; 0.05 is five of those
    assert abs(g["end"] - delta) < 0.05 and abs(g["late"] - delta) < 0.05
    # resampling a model with its own paths keeps the pairing: the interval is set by the 0.05 noise,
    # not by the unit spread between models. Paths assigned to the wrong models (reversed) lose it:
    # the interval is then ~ sqrt(2) * 1.25 / sqrt(M) wide, > 5 times the paired one
    wrong = an.level_median_gap(meas, pred[:, ::-1], tau, seed=1)
    assert (wrong["end_hi"] - wrong["end_lo"]) > 5 * (g["end_hi"] - g["end_lo"])
    with pytest.raises(ValueError, match="whole number of paths per model"):
        an.level_median_gap(meas, pred[:, :-1], tau)
    with pytest.raises(ValueError, match="same >= 2 times"):
        an.level_median_gap(meas, pred, tau[:-1])


def test_pooled_median_bootstrap_is_numpys_median_of_the_copied_resample():
    # the kernel reads the median of a resample (clusters drawn with repetition, each with all its
    # values) from weights on the sorted pool; it must equal numpy's median of the explicit copy,
    # with ties, odd and even pooled counts and infinite values
    from tsdyn.dyson import _kernels
    rng = np.random.default_rng(2)
    for M, k in ((5, 1), (4, 3), (7, 2)):
        v = np.round(rng.normal(0.0, 1.0, (6, M * k)), 1)
        v[0, 0] = -np.inf
        idx = rng.integers(0, M, size=(50, M))
        counts = np.zeros((50, M), np.int64)
        np.add.at(counts, (np.arange(50)[:, None], idx), 1)
        order = np.argsort(v, axis=1, kind="stable")
        out = np.empty((6, 50))
        _kernels.pooled_median_boot(np.take_along_axis(v, order, axis=1), order // k, counts, out)
        ref = np.median(v.reshape(6, M, k)[:, idx].reshape(6, 50, -1), axis=-1)
        np.testing.assert_array_equal(out, ref)


def test_sde_record_density_levels_match_a_direct_computation():
    p = dyson.Params.from_temperature(0.5, 8.0, n_train=100, n_test=10)
    kw = dict(seed=0, sde_seed=1, n_models=2, moment_samples=20, paths=2)
    r = dyson.sde_record_density(p, 30, [3, 5], **kw, levels=(0, 15), level_seed=5, level_steps=300)
    assert r.level_end.dims == ("level", "records") and list(r.level.values) == [0, 15]
    assert r.attrs["level_paths"] == 2 and r.attrs["level_steps"] == 300
    ds = dyson.train_ensemble(p, 30, seed=0, n_models=2, n_points=5, spacing="log+linear", moment_samples=20)
    full = dyson.dyson_levels_sde(ds, paths=2, seed=5, n_steps=300)
    g = an.level_median_gap(ds.x.values[..., 15], full.x.values[..., 15], ds.tau.values)
    for key, v in g.items():
        assert float(r[f"level_{key}"].sel(level=15).isel(records=1)) == v
    plain = dyson.sde_record_density(p, 30, [3], **kw)
    assert "level_end" not in plain and float(plain.gap_max[0, 0]) == float(r.gap_max[0, 0])
    with pytest.raises(ValueError, match=r"levels must be integers in \[0, n2 - 1 = 15\]"):
        dyson.sde_record_density(p, 30, [3], **kw, levels=(16,))


def test_criterion_late_with_the_measured_repulsion_by_hand():
    """repulsion='measured' rescales V_S by coulomb_ratio per record: with equally spaced levels and a
    constant V (ratio 1, see test_coulomb_ratio_is_one_for_equally_spaced_levels) nothing changes;
    with a packed bulk (ratio 0.79) the right side -K_S/V_S grows by 1/ratio, so a record that fails
    with (B.5)'s V_S by less than that factor passes. ``restoring`` is the fraction with K_S < 0."""
    import xarray as xr
    N, v = 6, 0.3

    def ds_for(x, k_top):
        K = np.zeros((1, 1, N))
        K[0, 0, -1] = k_top
        return xr.Dataset({"K": (("t", "model", "eig"), K),
                           "V": (("t", "model", "eig", "eig2"), np.full((1, 1, N, N), v)),
                           "x": (("t", "model", "eig"), np.asarray(x, float)[None, None]),
                           "S": (("t", "model"), [[(x[-1] - x[0]) / (N - 1)]])},
                          coords={"t": [1.0], "model": [0]},
                          attrs={"T": 1.0, "sigma_w": 1.0, "layers": f"[3, 8, {N}, 1]"})

    lhs = dyson.convergence_lhs(1.0, 1.0, n1=8, n2=N)
    even = np.arange(1.0, N + 1) * 0.2
    V_S = float(dyson.spacing_coefficients(ds_for(even, -1.0)).V_S.item())
    k_top = -(N - 1) * 0.9 * lhs * V_S  # -K_S/V_S = 0.9 lhs: fails with (B.5)'s V_S
    b5 = dyson.criterion_late(ds_for(even, k_top), since=0.0)
    meas = dyson.criterion_late(ds_for(even, k_top), since=0.0, repulsion="measured")
    assert b5.instant.item() == meas.instant.item() == 0.0 and meas.restoring.item() == 1.0
    packed = np.array([0.0, 0.99, 1.0, 1.01, 1.02, 2.0])
    ratio = dyson.coulomb_ratio(ds_for(packed, k_top)).item()
    assert ratio < 0.85  # the packed bulk weakens the repulsion, so 0.9 lhs / ratio > lhs
    V_S = float(dyson.spacing_coefficients(ds_for(packed, k_top)).V_S.item())
    k_top = -(N - 1) * 0.9 * lhs * V_S
    assert dyson.criterion_late(ds_for(packed, k_top), since=0.0).instant.item() == 0.0
    assert dyson.criterion_late(ds_for(packed, k_top), since=0.0, repulsion="measured").instant.item() == 1.0
    with pytest.raises(ValueError, match="repulsion"):
        dyson.criterion_late(ds_for(packed, k_top), repulsion="exact")
    with pytest.raises(ValueError, match="basis='x'"):
        dyson.criterion_late(ds_for(packed, k_top), repulsion="measured", basis="k")


def test_sde_record_density_median_gap_matches_a_direct_computation():
    """The median reading of the spacing gap (median_late, median_end, with intervals) is
    level_median_gap on S of the same ensemble and SDE paths."""
    p = dyson.Params.from_temperature(0.5, 8.0, n_train=100, n_test=10)
    r = dyson.sde_record_density(p, 30, [5], seed=0, sde_seed=1, n_models=3, moment_samples=20, paths=2,
                                 coulombs=("b5", "exact"))
    ds = dyson.train_ensemble(p, 30, seed=0, n_models=3, n_points=5, spacing="log+linear", moment_samples=20)
    for coul in ("b5", "exact"):
        sde = dyson.spacing_sde(ds, paths=2, seed=1, coulomb=coul)
        g = an.level_median_gap(ds.S.values, sde.S.values, ds.tau.values)
        for key in ("late", "late_lo", "late_hi", "end", "end_lo", "end_hi"):
            assert float(r[f"median_{key}"].sel(coulomb=coul)[0]) == g[key]
