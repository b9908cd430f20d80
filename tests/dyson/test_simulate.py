"""Ensemble training: determinism, layout, divergence, the initial state against theory,
and the linear scaling rule."""

import numpy as np
import xarray as xr
import pytest
from scipy import stats

from tsdyn import dyson
from tsdyn.dyson import theory as th


def test_same_seed_bit_identical_whatever_the_ensemble_size_and_recording():
    p = dyson.Params.from_temperature(0.5, 2.0)
    a = dyson.train_ensemble(p, 3000, seed=5, n_models=4, n_points=7)
    b = dyson.train_ensemble(p, 3000, seed=5, n_models=6, n_points=3)  # other blocks, more models
    c = dyson.train_ensemble(p, 3000, seed=np.random.SeedSequence(5), n_models=4, n_points=7)
    np.testing.assert_array_equal(a.x.values[-1], b.x.values[-1, :4])
    np.testing.assert_array_equal(a.loss.values, c.loss.values)
    d = dyson.train_ensemble(p, 3000, seed=6, n_models=4, n_points=7)
    assert not np.array_equal(a.x.values[-1], d.x.values[-1])


def test_layout_units_and_recorded_state():
    p = dyson.Params(eps=0.2, sigma_w=0.5, n_train=200, n_test=20)
    ds = dyson.train_ensemble(p, 50, seed=0, n_models=3, n_points=5)
    assert ds.loss.dims == ("t", "model") and ds.x.dims == ("t", "model", "eig")
    assert ds.V.dims == ("t", "model", "eig", "eig2")
    assert ds.t.values[0] == 0 and ds.t.values[-1] == 50
    np.testing.assert_allclose(ds.tau.values, 0.2 * ds.t.values)
    assert ds.t.attrs["units"] == "SGD steps" and ds.attrs["T"] == pytest.approx(0.05)
    # t = 0 records the initial students
    net = dyson.networks(p, seed=0, n_models=3)
    X0 = net["W2"] @ net["W2"].transpose(0, 2, 1)
    np.testing.assert_allclose(ds.x.values[0], np.linalg.eigvalsh(X0), rtol=1e-12)
    np.testing.assert_allclose(ds.S.values[0], (ds.x.values[0, :, -1] - ds.x.values[0, :, 0]) / 15)
    y_hat = np.tanh(net["A1_test"] @ net["W2"].transpose(0, 2, 1)) @ net["W3"][:, :, None]
    np.testing.assert_allclose(ds.loss.values[0], 0.5 * np.mean((net["y_test"] - y_hat[..., 0]) ** 2, axis=1))
    np.testing.assert_allclose(ds.G0.values[0], np.mean(np.tanh(net["A1_test"] @ net["W2"].transpose(0, 2, 1)) ** 2,
                                                        axis=(1, 2)))
    assert not ds.diverged.any() and np.isinf(ds.t_diverged).all()
    # the student shares W1, W3 with its teacher: at W2 = teacher's, the loss is zero
    y_teacher = np.tanh(net["A1_test"] @ net["W2_teacher"].transpose(0, 2, 1)) @ net["W3"][:, :, None]
    np.testing.assert_allclose(y_teacher[..., 0], net["y_test"], atol=1e-14)


def test_training_in_the_ordered_phase_learns():
    """Low T, small sigma_w (Fig. 2's lower right): the test loss falls by orders of magnitude."""
    p = dyson.Params.from_temperature(2 ** -4, 8.0)
    ds = dyson.train_ensemble(p, 4000, seed=2, n_models=8, n_points=4, moment_samples=500)
    ratio = ds.loss.values[-1] / ds.loss.values[0]
    # at least 1.7 decades in 4000 steps (a student that does not learn keeps ratio ~ 1; the
    # chapter's ordered ensembles reach ~1e-3 of the initial loss)
    assert np.median(ratio) < 0.02


def test_log_plus_linear_recording_grid():
    rec = dyson.record_steps(1000, 11, "log+linear")
    assert set(dyson.record_steps(1000, 11, "log")) <= set(rec)
    assert set(range(0, 1001, 100)) <= set(rec)
    assert np.max(np.diff(rec)) <= 100 and np.all(np.diff(rec) > 0)
    with pytest.raises(ValueError, match=r"spacing must be one of .*'log\+linear'"):
        dyson.record_steps(1000, 11, "geometric")


def test_divergence_is_marked_counted_and_does_not_stop_the_others():
    """A bound w_max that some models' weights pass during training: those are stopped,
    flagged with the step, NaN afterwards; the others run to the end."""
    # sigma_w = 4 (|W2|_F ~ 16 at t = 0) at T = 16: the weights random-walk up and pass
    # w_max = 100 in some models
    p = dyson.Params.from_temperature(16.0, 0.25, w_max=100.0)
    ds = dyson.train_ensemble(p, 400, seed=1, n_models=12, n_points=6, moment_samples=200)
    n_div = int(ds.diverged.sum())
    assert 0 < n_div < 12  # some, not all (7 of 12 at this seed)
    div = ds.diverged.values
    assert np.all(np.isfinite(ds.t_diverged.values[div])) and np.all(np.isinf(ds.t_diverged.values[~div]))
    last = ds.loss.values[-1]
    assert np.all(np.isnan(last[div])) and np.all(np.isfinite(last[~div]))
    # the summary carries the flags for sweeps to count
    assert int(dyson.summary(ds).diverged.sum()) == n_div


def test_initial_preactivation_variance_is_q_sigma_w_squared():
    """sigma_z^2 = q sigma_w^2 (theory.first_layer_q) for the students at t = 0 (eq. 2.19)."""
    p = dyson.Params(eps=0.1, sigma_w=2.0)
    ds = dyson.train_ensemble(p, 1, seed=0, n_models=200, n_points=2, moment_samples=2)
    z = ds.z_var.values / 4.0
    # mean over 200 independent models: 3.5 standard errors
    assert abs(z.mean() - th.first_layer_q(3)) < 3.5 * z.std(ddof=1) / np.sqrt(len(z))


def test_initial_spectrum_follows_marchenko_pastur():
    """Eigenvalues of X at t = 0 over an ensemble of 16 x 32 matrices against eq. (4.2):
    mean exact (sigma_w^2), second moment sigma_w^4 (1 + r + 1/n1) at this finite size,
    and the histogram close to the MP density away from the edges."""
    sw = 0.125
    p = dyson.Params(eps=0.1, sigma_w=sw, n_train=8, n_test=4)  # the spectrum does not depend on the data
    ds = dyson.train_ensemble(p, 1, seed=3, n_models=300, n_points=2, moment_samples=2)
    x = ds.x.values[0]
    m1, m2 = x.mean(axis=1), (x ** 2).mean(axis=1)
    assert abs(m1.mean() - sw ** 2) < 4 * m1.std(ddof=1) / np.sqrt(300)
    assert abs(m2.mean() - sw ** 4 * (1.5 + 1 / 32)) < 4 * m2.std(ddof=1) / np.sqrt(300)
    # distribution: KS distance of the pooled eigenvalues from the MP law; at n2 = 16
    # the edges are smeared over ~ n2^(-2/3) of the support, which bounds the distance
    d = stats.kstest(x.ravel(), lambda u: th.marchenko_pastur_cdf(u, sw, 0.5)).statistic
    assert d < 16 ** (-2 / 3) / 2


def test_linear_scaling_rule_at_low_temperature():
    """Pairs (eps, |B|) with the same T = eps/|B| over the same Langevin time tau give the
    same final-loss and level-spacing statistics (Park et al. sec. 2.6). Paired by model
    (same teacher, data and start), so the error is that of the paired differences."""
    r = dyson.linear_scaling(2 ** -5, 8.0, [1, 4], 256.0, seed=11, n_models=16, n_points=9)
    logL = np.log(r.loss.values)
    logS = np.log(r.S.values[:, -1])
    for arr in (logL, logS):
        d = arr[0] - arr[1]
        # 3 standard errors of the mean paired difference (16 models)
        assert abs(d.mean()) < 3 * d.std(ddof=1) / np.sqrt(len(d))
    # the runs really differ step by step: different batches, 4x the steps
    assert r.steps.values.tolist() == [8192, 2048] and not np.array_equal(logL[0], logL[1])


def test_a_sweep_counts_diverged_models_without_crashing(tmp_path):
    ds = dyson.phase_diagram([2 ** -5, 16.0], [0.25], steps=400, n_models=6, seed=0, executor="serial",
                             cache=tmp_path, w_max=80.0, n_points=4, moment_samples=100)
    assert ds.loss.dims == ("T", "inv_sigma_w", "model")
    counts = ds.diverged.sum("model").values[:, 0]
    # sigma_w = 4: at T = 16 the weights random-walk past the bound in some models; at
    # T = 1/32 they barely move from ~0.7
    assert counts[0] == 0 and counts[1] > 0
    assert np.all(np.isnan(ds.loss.values[1, 0][ds.diverged.values[1, 0]]))
    # the cache holds the points: a second call reads them back identically
    again = dyson.phase_diagram([2 ** -5, 16.0], [0.25], steps=400, n_models=6, seed=0, executor="serial",
                                cache=tmp_path, w_max=80.0, n_points=4, moment_samples=100)
    np.testing.assert_array_equal(again.diverged.values, ds.diverged.values)


def test_moments_in_the_eigenbasis_of_K_by_plain_numpy():
    """k_basis=True: K_k are the eigenvalues of K = -E[Delta^X], V_k the per-sample variances of
    Delta^X rotated into K's eigenbasis, xq_k = u^T X u (App. B), against a NumPy computation."""
    p = dyson.Params(eps=0.1, sigma_w=0.7, n_train=300, n_test=10)
    ds = dyson.train_ensemble(p, 40, seed=3, n_models=2, n_points=2, moment_samples=300, k_basis=True)
    net = dyson.networks(p, seed=3, n_models=2)
    for m in range(2):
        W2 = net["W2"][m]  # moments at t = 0 (the first record) from the initial student
        A1, y, W3 = net["A1_train"][m], net["y_train"][m], net["W3"][m]
        z = A1 @ W2.T
        phi = np.tanh(z)
        e = phi @ W3 - y
        g = e[:, None] * W3 * (1 - phi ** 2)  # (D, n2): dl/dW2 = g a^T
        dX = np.einsum("ki,kj->kij", z, g)
        dX = dX + dX.transpose(0, 2, 1)  # Delta^X = W Delta^T + Delta W^T = z g^T + g z^T
        kev, U = np.linalg.eigh(-dX.mean(0))
        np.testing.assert_allclose(ds.K_k.values[0, m], kev, rtol=1e-9, atol=1e-14)
        rot = np.einsum("ia,kij,jb->kab", U, dX, U)
        np.testing.assert_allclose(ds.V_k.values[0, m], rot.var(0), rtol=1e-7, atol=1e-16)
        X = W2 @ W2.T
        np.testing.assert_allclose(ds.xq_k.values[0, m], np.einsum("ia,ij,ja->a", U, X, U), rtol=1e-9)
    assert "K_k" not in dyson.train_ensemble(p, 5, seed=3, n_models=1, n_points=2, moment_samples=10)


def test_long_column_shorter_run_is_a_prefix_of_a_longer_one():
    # the committed long run is checked this way: same models, same batches, records on a
    # length-independent grid, so the first records of a shorter run are the same numbers
    from tsdyn import dyson
    a = dyson.long_column([2.0], 8.0, 3, seed=0, n_models=2, T_index=[3], moment_samples=50)
    b = dyson.long_column([2.0], 8.0, 1, seed=0, n_models=2, T_index=[3], moment_samples=50)
    n = b.sizes["epoch"]
    assert np.array_equal(a.epoch.values[:n], b.epoch.values)
    assert np.array_equal(a.loss.values[:, :n], b.loss.values)
    with pytest.raises(ValueError, match="record_at"):
        dyson.train_ensemble(dyson.Params.from_temperature(2.0, 8.0), 10, seed=0, n_models=1, record_at=[0, 5])


@pytest.mark.parametrize("killed_at", [1, 12])
def test_long_column_stopped_and_resumed_is_the_uninterrupted_run(tmp_path, monkeypatch, killed_at):
    """A run killed after a few records (or after its first, before any row is written)
    continues from its saved state (resume=True), with a larger target too (a prefix grid),
    and ends bit-identical to the run that never stopped; a state is not resumed with
    other arguments."""
    from tsdyn import dyson
    from tsdyn.dyson import experiments

    kw = dict(seed=0, n_models=2, T_index=[3], moment_samples=50)
    whole = dyson.long_column([2.0], 8.0, 3, path=tmp_path / "whole.nc", **kw)
    summary, calls = experiments.summary, []

    def dying(ds):
        calls.append(1)
        if len(calls) == killed_at:
            raise KeyboardInterrupt  # as a session's end would stop it
        return summary(ds)

    monkeypatch.setattr(experiments, "summary", dying)
    path = tmp_path / "part.nc"
    with pytest.raises(KeyboardInterrupt):
        dyson.long_column([2.0], 8.0, 2, path=path, **kw)
    monkeypatch.setattr(experiments, "summary", summary)
    assert path.exists() == (killed_at > 1)  # the first row is written at record 1
    for other in (dict(kw, seed=1), dict(kw, T_index=[4]), dict(kw, moment_samples=60)):
        if killed_at > 1 or other["moment_samples"] == 50:  # no rows yet: moments are not in the state
            with pytest.raises(ValueError, match="resume"):
                dyson.long_column([2.0], 8.0, 3, path=path, resume=True, **other)
    counted = []
    monkeypatch.setattr(experiments, "summary", lambda ds: counted.append(1) or summary(ds))
    resumed = dyson.long_column([2.0], 8.0, 3, path=path, resume=True, **kw)
    xr.testing.assert_identical(resumed, whole)
    # the rows of records 1 .. killed_at - 1 were read back, not trained again
    assert len(counted) == whole.sizes["epoch"] - (killed_at - 1)
    xr.testing.assert_identical(xr.load_dataset(path), xr.load_dataset(tmp_path / "whole.nc"))
    with pytest.raises(ValueError, match="one T"):
        dyson.long_column([2.0, 8.0], 8.0, 3, path=path, resume=True, seed=0, n_models=2)


def test_moments_at_the_end_only():
    """moments='end' measures the moments at the last record only: the same training (the moments
    are a measurement, they draw no random numbers), the same end moments as 'ends', NaN before."""
    p = dyson.Params.from_temperature(0.5, 8.0, n_train=200, n_test=20)
    kw = dict(seed=3, n_models=3, n_points=4, moment_samples=50, k_basis=True, published=True)
    ends = dyson.train_ensemble(p, 40, moments="ends", **kw)
    end = dyson.train_ensemble(p, 40, moments="end", **kw)
    np.testing.assert_array_equal(end.loss.values, ends.loss.values)
    for v in ("K", "V", "grad_norm", "K_k", "V_raw"):
        np.testing.assert_array_equal(end[v].values[-1], ends[v].values[-1])
        assert np.all(np.isnan(end[v].values[:-1])) and np.all(np.isfinite(ends[v].values[0]))
    with pytest.raises(ValueError, match="moments must be 'all', 'ends' or 'end'"):
        dyson.train_ensemble(p, 40, moments="start", **kw)
