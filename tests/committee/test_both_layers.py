"""Both layers trained: the denoising fixed point for K = Z M and the arrangement of the units."""

import numpy as np
import pytest

from tsdyn import committee


def _params(M, K, eta, v_star=4.0, **kw):
    return committee.Params(N=500, M=M, K=K, eta=eta, sigma=0.01, v_star=v_star,
                            train_second_layer=True, **kw)


def test_denoising_fixed_point_at_m1_is_the_fixed_point_from_the_copies():
    # M = 1: every unit a copy of the teacher with v* / K, as before the generalisation
    p = _params(1, 3, 0.05)
    new = committee.denoising_fixed_point(p)
    old = committee.fixed_point(p, Q0=np.ones((3, 3)), R0=np.ones((3, 1)), v0=p.v_star / 3)
    assert float(new.eg[0]) == float(old.eg[0])
    assert float(committee.denoising_fixed_point(p, counts=[3]).eg[0]) == float(new.eg[0])


@pytest.mark.parametrize("K", [1, 2, 4])
def test_denoising_fixed_point_approaches_eq15_linearly_in_eta(K):
    # eq. (15) is the O(eta) term of eps_g^*; the fixed point differs from it by a
    # relative c eta + O(eta^2). Halving eta must halve the relative difference (within
    # 5%: the O(eta^2) term changes c by 2% between eta = 0.01 and 0.005 at K = 1), and
    # at eta = 0.005 it is small (measured c = 4.0, 2.0, 1.0 at K = 1, 2, 4 for v* = 4).
    rel = []
    for eta in (0.01, 0.005):
        p = _params(1, K, eta)
        rel.append(float(committee.denoising_fixed_point(p).eg[0])
                   / committee.eg_star_erf_both_layers_small_eta(p) - 1)
    assert rel[0] / rel[1] == pytest.approx(2.0, rel=0.05)
    assert 0 < rel[1] < 0.025


def test_denoising_fixed_point_for_k_equal_z_m_keeps_the_groups_identical():
    p = _params(2, 4, 0.2, v_star=2.0)
    fp = committee.denoising_fixed_point(p)
    R, v = fp.R.values[0], fp.v.values[0]
    # two copies on each teacher unit, sharing its weight equally; the groups are mirror images
    assert np.allclose(R[0], R[1], atol=1e-12) and np.allclose(R[2], R[3], atol=1e-12)
    assert np.allclose(R[0], R[2][::-1], atol=1e-9)
    assert np.allclose(v, 1.0, atol=1e-3)
    # more units per teacher unit, lower error (the denoising effect of Fig. 3c)
    eg = [float(committee.denoising_fixed_point(_params(2, 2 * Z, 0.2, v_star=2.0)).eg[0])
          for Z in (1, 2, 3)]
    assert eg[0] > eg[1] > eg[2]


def test_denoising_fixed_point_with_units_off_equals_the_smaller_student():
    # units switched off (w = 0, v = 0) stay off and add nothing
    small = committee.denoising_fixed_point(_params(2, 3, 0.1), counts=[2, 1])
    big = committee.denoising_fixed_point(_params(2, 5, 0.1), counts=[2, 1])
    assert float(big.eg[0]) == pytest.approx(float(small.eg[0]), rel=1e-9)
    assert np.all(big.v.values[0, 3:] == 0)


@pytest.mark.parametrize("counts, match", [
    (None, "K must be a multiple of M"),
    ([2, 2], "summing to at most K"),
    ([3, 0], "integers >= 1"),
    ([3], "must be M=2 integers"),
])
def test_denoising_fixed_point_rejects_bad_counts(counts, match):
    with pytest.raises(ValueError, match=match):
        committee.denoising_fixed_point(_params(2, 3, 0.1), counts=counts)


def test_unit_arrangement_and_weight_imbalance():
    R = np.array([[0.9, 0.1], [-1.1, 0.0], [0.2, 0.8], [0.4, 0.5]])
    v = np.array([1.0, -3.0, 4.0, 0.1])  # unit 1 is a mirror image on teacher 0; unit 3 is off
    assert committee.unit_arrangement(R, v) == (2, 1, 1)
    assert committee.weight_imbalance(R, v) == pytest.approx(2.0 / 4.0)
    assert committee.unit_arrangement(R, v, off=0.0) == (2, 2, 0)
    assert committee.weight_imbalance(np.eye(2), [1.0, 2.0]) == 0.0
    with pytest.raises(ValueError, match="off"):
        committee.unit_arrangement(R, v, off=1.0)
    with pytest.raises(ValueError, match="shape"):
        committee.unit_arrangement(R, v[:3])


def test_both_layers_run_returns_paired_windows_and_arrangements():
    out = committee.both_layers_run(seed=3, N=60, M=2, K=3, eta=0.2, sigma=0.01, v_star=2.0,
                                    v_init=0.5, t_max=40.0, n_points=80)
    assert out["eg_sgd"].shape == out["eg_ode"].shape == out["t"].shape
    assert out["eg_sgd"][0] == pytest.approx(out["eg_ode"][0])  # the ODE starts from the run
    assert out["arr_sgd"].sum() == out["arr_ode"].sum() == 3
    assert out["win_sgd_se"] > 0


@pytest.mark.parametrize("kind, scale", [("paper", 1.0), ("paper_small", 1 / 2000)])
def test_paper_start_is_the_authors_nearly_symmetric_start(kind, scale):
    p = _params(2, 4, 0.2, v_star=2.0)
    s = committee.paper_start(p, kind, seed=3, perturbation=1e-9)
    assert np.allclose(s["Q0"], s["Q0"].T, rtol=0, atol=0)
    # the perturbation: 1e-9 times standard Gaussians (|entry| < 6e-9 for 26 draws,
    # a bound exceeded with probability 5e-8)
    assert np.max(np.abs(s["Q0"] - scale * np.eye(4))) < 6e-9
    assert np.max(np.abs(s["R0"])) < 6e-9 and np.max(np.abs(s["v0"] - scale)) < 6e-9
    assert np.max(np.abs(s["R0"])) > 0  # but it breaks the symmetry
    same = committee.paper_start(p, kind, seed=3)
    assert all(np.array_equal(s[k], same[k]) for k in s)
    with pytest.raises(ValueError, match="kind"):
        committee.paper_start(p, "random")


def test_ode_limit_from_the_paper_start_at_m1_reaches_the_even_fixed_point():
    # M = 1, K = 2 from the paper's start: all units end on the teacher unit, on the
    # denoising fixed point of Z = 2 (measured: within 1e-5 relative at t = 1e6; allowed
    # 1e-3, the integration being declared converged when eps_g moves < 1% per decade)
    kw = dict(N=500, M=1, K=2, eta=0.2, sigma=0.01, v_star=2.0, v_init=0.1, t_max=1e6)
    out = committee.both_layers_ode_limit(seed=0, start="paper", **kw)
    fp = float(committee.denoising_fixed_point(_params(1, 2, 0.2, v_star=2.0), eg_rtol=1e-6).eg[0])
    assert tuple(out["arr"]) == (2, 0)
    assert abs(out["rel_change"]) < 0.01
    assert out["eg"] / fp == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(ValueError, match="start"):
        committee.both_layers_ode_limit(seed=0, start="symmetric", **kw)


def _curves(rate, rel_drift, shift, floor=1e-14, n_runs=6):
    """Synthetic run/ODE pairs: the ODE decays as exp(-rate t) from 1e-2 and stops at its
    resolution ``floor``; each run decays at rate (1 + rel_drift) times it, shifted by
    ``shift`` (ln units), with a small alternating jitter."""
    import xarray as xr
    t = np.linspace(0.0, 1000.0, 201)
    sims, odes = [], []
    for i in range(n_runs):
        ode = np.maximum(1e-2 * np.exp(-rate * t), floor)
        jitter = 0.01 * (-1) ** np.arange(len(t)) * (1 + i % 3)
        run = 1e-2 * np.exp(-rate * (1 + rel_drift * (1 + 0.1 * (i - n_runs / 2))) * t
                            + shift + jitter)
        sims.append(xr.Dataset({"eg": ("t", run)}, coords={"t": t}))
        odes.append(xr.Dataset({"eg": ("t", ode)}, coords={"t": t}, attrs={"eg_floor": floor}))
    return sims, odes


def test_log_ratio_drift_measures_a_coherent_trend_and_stops_at_the_floor():
    # a 2% faster decay of every run: the relative drift is -0.02 (mean of the runs' own
    # -0.02 (1 + 0.1 (i - 3)), i = 0..5: -0.02 (1 - 0.05) = -0.019); the constant shift cancels
    sims, odes = _curves(0.03, 0.02, 0.5)
    d = committee.log_ratio_drift(sims, odes)
    assert d["rel"] == pytest.approx(-0.019, abs=1e-3)  # the jitter moves each fit by ~1e-4
    assert d["n"] == 6 and d["floor"] == pytest.approx(1e-12)
    # the window ends where an error first reaches 100 x the ODE's resolution: the ODE's, at
    # t = ln(1e-2 / 1e-12) / 0.03 = 767.5 (the runs, shifted up by e^0.5, get there later),
    # i.e. at the last recorded time before it, 765 on this grid of step 5
    assert d["t_end"] == 765.0
    # no drift: only the shift, and the slope is zero within its (jitter) error
    flat = committee.log_ratio_drift(*_curves(0.03, 0.0, 0.5))
    assert abs(flat["rel"]) < 1e-3
    with pytest.raises(ValueError, match="same number"):
        committee.log_ratio_drift(sims[:1], odes[:1])
