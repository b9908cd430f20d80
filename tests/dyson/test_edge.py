"""Beyond the teacher's stability edge (chapter 4): full-batch gradient descent as the noiseless control of
the batch-resolved scan, the Hessian's sharpness, and the paired comparison of SGD and GD."""

import numpy as np
import pytest
import xarray as xr

from tsdyn import dyson
from tsdyn.dyson import _kernels, edge
from tsdyn.dyson.simulate import _sharpness, networks


def _loss(W, A, y, W3):
    """Plain-NumPy training loss (1/n) sum (y_hat - y)^2 / 2 of one model."""
    return 0.5 * np.mean((np.tanh(A @ W.T) @ W3 - y) ** 2)


def _fd_gradient(W, A, y, W3, h=1e-6):
    G = np.empty_like(W)
    for idx in np.ndindex(W.shape):
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        G[idx] = (_loss(Wp, A, y, W3) - _loss(Wm, A, y, W3)) / (2 * h)
    return G


@pytest.fixture(scope="module")
def small():
    return networks(dyson.Params(eps=0.1, sigma_w=1.5, n_train=67, n_test=8), seed=5, n_models=3)


def test_gd_step_is_minus_eps_times_the_full_training_gradient(small):
    """One gd_block step moves W2 by -eps * (gradient of the loss over every training sample)."""
    net, eps = small, 0.3
    M = net["W2"].shape[0]
    W2 = net["W2"].copy()
    alive, div = np.ones(M, bool), np.full(M, -1, np.int64)
    _kernels.gd_block(W2, net["A1_train"], net["y_train"], net["W3"], 1, eps, 1e6, alive, div, 0)
    for m in range(M):
        fd = _fd_gradient(net["W2"][m], net["A1_train"][m], net["y_train"][m], net["W3"][m])
        # central differences with h = 1e-6: truncation ~1e-12, rounding ~1e-10 of O(1) losses
        np.testing.assert_allclose((net["W2"][m] - W2[m]) / eps, fd, atol=1e-8, rtol=1e-6)
    assert alive.all()
    # two steps are two successive full-gradient steps (the gradient is recomputed with the new weights);
    # 67 samples: the 67 mod 4 left over after the blocks of four are included
    W2b, W2c = net["W2"].copy(), net["W2"].copy()
    _kernels.gd_block(W2b, net["A1_train"], net["y_train"], net["W3"], 2, eps, 1e6, alive, div, 0)
    for _ in range(2):
        _kernels.gd_block(W2c, net["A1_train"], net["y_train"], net["W3"], 1, eps, 1e6, alive, div, 0)
    np.testing.assert_array_equal(W2b, W2c)


def test_gd_divergence_bound_stops_a_model(small):
    net = small
    W2 = net["W2"].copy()
    W2[2] *= 50.0
    alive, div = np.ones(3, bool), np.full(3, -1, np.int64)
    bound = 2.0 * np.sqrt((net["W2"] ** 2).sum(axis=(1, 2))).max()
    _kernels.gd_block(W2, net["A1_train"], net["y_train"], net["W3"], 5, 0.01, bound, alive, div, 40)
    assert list(alive) == [True, True, False] and div[2] == 41 and div[0] == -1


def test_full_batch_run_is_deterministic_and_paired_with_sgd():
    """full_batch: the same networks as the SGD run of the same seed (identical start), no batch draws."""
    p = dyson.Params(eps=0.5, batch=4, sigma_w=0.125, n_train=200, n_test=20)
    kw = dict(n_models=3, n_points=2, moment_samples=2, moments="end")
    gd1 = dyson.train_ensemble(p, 20, seed=11, full_batch=True, **kw)
    gd2 = dyson.train_ensemble(p, 20, seed=11, full_batch=True, **kw)
    sgd = dyson.train_ensemble(p, 20, seed=11, **kw)
    assert gd1.attrs["full_batch"] == 1 and "full_batch" not in sgd.attrs
    np.testing.assert_array_equal(gd1.loss.values, gd2.loss.values)
    np.testing.assert_array_equal(gd1.loss.values[0], sgd.loss.values[0])  # the same start
    np.testing.assert_array_equal(gd1.z_var.values, sgd.z_var.values)
    assert not np.array_equal(gd1.loss.values[-1], sgd.loss.values[-1])  # different dynamics
    assert np.all(gd1.loss.values[-1] < gd1.loss.values[0])  # it learns


def test_hessian_sharpness_against_finite_differences():
    """_sharpness with the labels: the top eigenvalue of the Hessian of the training loss (dense, by central
    differences of a plain-NumPy gradient); without them the Gauss-Newton matrix; the two agree at the
    teacher, where the residuals vanish."""
    net = networks(dyson.Params(eps=0.1, sigma_w=1.0, layers=(3, 8, 4, 1)), seed=3, n_models=1)
    W, A, W3, Wt = net["W2"][0], net["A1_train"][0][:200], net["W3"][0], net["W2_teacher"][0]
    y = np.tanh(A @ Wt.T) @ W3

    def grad(w):
        th = np.tanh(A @ w.reshape(W.shape).T)
        return (((th @ W3 - y)[:, None] * W3 * (1 - th ** 2)).T @ A / len(A)).ravel()

    h = 1e-6
    H = np.array([(grad(W.ravel() + h * e) - grad(W.ravel() - h * e)) / (2 * h) for e in np.eye(W.size)])
    top = np.linalg.eigvalsh(0.5 * (H + H.T))[-1]
    # differences of an O(1) gradient with h = 1e-6: errors ~1e-9 absolute; Lanczos tol 1e-8
    assert _sharpness(W, A, W3, y) == pytest.approx(top, rel=1e-6)
    assert abs(_sharpness(W, A, W3) - top) > 1e-3 * top  # away from the teacher the two differ
    assert _sharpness(Wt, A, W3, y) == pytest.approx(_sharpness(Wt, A, W3), rel=1e-7)


def test_gradient_descent_beyond_the_teachers_edge_sits_below_it():
    """The physics of the control: at a step where the teacher is unstable for gradient descent
    (eps lambda_bar / 2 > 1), descent from the scan's small start ends near, and below, the edge of
    stability, not at the teacher's curvature. Measured on the chapter's quick scan (8-16 networks):
    medians 0.84-0.98 of the edge at eps = 2 and 4 with teachers at 2.5-6."""
    g = edge.gd_control([0.03125, 0.0625], 64, 8.0, tau_f=256.0, n_models=4, seed=20)
    teacher = (g.teacher_sharpness * g.eps / 2).median("model").values
    trained = (g.sharpness * g.eps / 2).median("model").values
    assert np.all(teacher > 1.5)  # the teacher is beyond the edge: a network at it would read > 1.5
    # near the edge: above 0.6 (a network far inside the stable region would read well below, as SGD at
    # |B| = 1 and 4 does, 0.06-0.57) and below 1.3 (at the edge the iterates oscillate about it: single
    # networks here read 0.48-1.10, medians 0.73 and 1.02; a network at its teacher would read > 1.5)
    assert np.all((trained > 0.6) & (trained < 1.3))
    np.testing.assert_array_equal(g.steps.values, [128, 64])


def _fake_scan(Ls, batches, Ts):
    n = Ls.shape[-1]
    return xr.Dataset({"log10_loss": (("batch", "T", "model"), Ls),
                       "sharpness": (("batch", "T", "model"), np.ones_like(Ls))},
                      coords={"batch": batches, "T": Ts, "model": np.arange(n)})


def test_edge_comparison_onsets_and_pairing_by_hand():
    Ts = np.array([0.25, 0.5, 1.0, 2.0])
    rng = np.random.default_rng(0)
    n = 6
    base = np.array([-3.0, -2.9, -2.0, -1.0])[:, None] + 0.01 * rng.standard_normal((4, n))
    sgd = np.stack([base, base + 0.05])  # batches 1 and 4; the GD below equals the batch-4 SGD minus 0.05
    tc = _fake_scan(sgd, [1, 4], Ts)
    gd = xr.Dataset({"log10_loss": (("T", "model"), base[:, :4]), "sharpness": (("T", "model"), np.ones((4, 4))),
                     "teacher_sharpness": (("T", "model"), 2 * np.ones((4, 4)))},
                    coords={"T": Ts, "model": np.arange(4)}, attrs={"batch": 4})
    e = edge.edge_comparison(tc, gd, n_boot=200)
    # the paired difference is the constant 0.05; the onsets are the same crossing of log10 2 above the first
    # point (a constant shift does not move it), in eps = T |B|
    np.testing.assert_allclose(e.dlog.values, 0.05, atol=1e-12)
    m = base[:, :4].mean(1)
    expect = dyson.crossing(Ts * 4, m - m[0], np.log10(2.0))
    assert e.attrs["onset_eps_sgd"] == pytest.approx(expect) and e.attrs["onset_eps_gd"] == pytest.approx(expect)
    assert e.attrs["onset_ratio"] == pytest.approx(1.0)
    # paired bootstrap: the same networks for both, so the ratio's interval collapses onto 1
    assert e.attrs["onset_ratio_lo"] == pytest.approx(1.0) and e.attrs["onset_ratio_hi"] == pytest.approx(1.0)
    np.testing.assert_allclose(e.teacher_step.values, 2 * Ts * 4 / 2)
    with pytest.raises(ValueError, match="batch"):
        edge.edge_comparison(tc, gd.assign_attrs(batch=16))
    with pytest.raises(ValueError, match="temperatures"):
        edge.edge_comparison(tc, gd.assign_coords(T=Ts * 2))
    with pytest.raises(ValueError, match="sharpness"):
        edge.step_sharpness(tc.drop_vars("sharpness"))


def test_median_interval_and_bad_input():
    a = np.arange(1.0, 8.0)[None, :].repeat(2, 0)
    med, lo, hi = edge.median_interval(a, n_boot=500)
    assert np.all(med == 4.0) and np.all(lo <= med) and np.all(med <= hi) and np.all(hi - lo > 0)
    with pytest.raises(ValueError, match="batch"):
        edge.gd_control([0.1, 0.2], 0, 8.0, tau_f=1.0, n_models=2)
    with pytest.raises(ValueError, match="Ts"):
        edge.gd_control([0.2, 0.1], 4, 8.0, tau_f=1.0, n_models=2)
    with pytest.raises(ValueError, match="hessian"):
        dyson.train_ensemble(dyson.Params(eps=0.1), 1, seed=0, n_models=1, hessian=True)


def test_control_repeats_the_scans_networks():
    """gd_control with the scan's seed trains the scan's own networks: with one tiny step SGD
    and descent barely move, so their final losses agree network by network to O(eps), while other
    networks (another temperature's) differ at O(1). The scan also carries the sharpness and the distance."""
    Ts = [1e-6, 2e-6, 4e-6]
    tc = dyson.batch_phase_boundary(Ts, [1, 2], 8.0, n_models=3, tau_f=1e-6, n_boot=0, n_teachers=2,
                                    theory_samples=500, sharpness_samples=50, teacher_distance=True, seed=9)
    assert tc.sharpness.shape == tc.teacher_dist.shape == (2, 3, 3)
    g = edge.gd_control(Ts, 1, 8.0, tau_f=1e-6, n_models=3, seed=9, sharpness_samples=50)
    d = tc.log10_loss.sel(batch=1).values - g.log10_loss.values
    # one step of at most eps = 4e-6: the gap is linear in eps (measured 1.6e-3 in log10 at eps = 4e-4,
    # hence ~1.6e-5 here, six times below the bound); unpaired networks differ by more than 1e-2
    assert np.abs(d).max() < 1e-4
    assert np.abs(tc.log10_loss.sel(batch=1).values[0] - g.log10_loss.values[1]).max() > 1e-2
    # at t = 0 the sharpness is the same on the same networks within O(eps) (same samples, same weights)
    np.testing.assert_allclose(tc.sharpness.sel(batch=1).values, g.sharpness.values, rtol=1e-2)
