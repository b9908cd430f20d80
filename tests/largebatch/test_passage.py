"""The recursion where the step map's series fails, and the law absorbed at eta (first passage)."""

import numpy as np
import pytest

from tsdyn import largebatch as lb
from tsdyn.largebatch import analysis, experiments, theory
from tsdyn.largebatch.simulate import one_step_overlaps
from tsdyn.largebatch.simulate import recovery_time as sgd_recovery_time


def _he3_point():
    """Sec. 3's first one-step point: d = 64, He3, projected SGD, n_b = 8, gamma = 0.3, m0 = 0.3."""
    return experiments.one_step_params(d=64, ell=3, mu=0.5, delta=0.0, gamma0=0.3, n0=1.0, m0=0.3)


def test_recursion_switches_to_the_exact_mean_where_the_series_fails():
    """At the He3 point the fluctuation factor's first omitted term is 1.2e5 times m' (the series does not
    converge; the map gives m' = 0.012). The default recursion must not return that: it reruns with the
    exact one-step mean and says so in attrs, and its m' is SGD's mean after one step (4000 runs, exact
    in law) within 4 combined standard errors (false alarm below 1e-4); series_failure="raise" refuses
    with an error that names method='exact'."""
    p = _he3_point()
    kept, omitted = theory.series_terms(p, np.array([[0.3]]), np.eye(1))
    assert omitted[0] > theory.SERIES_RATIO_MAX * kept[0] and omitted[0] > theory.SERIES_FAIL
    ds = theory.dynamics(p, 1, n_points=2, n_batches=5000, seed=1)
    assert ds.attrs["method_used"] == "exact" and ds.attrs["method_asked"] == "recursion"
    assert ds.attrs["series_failure_step"] == 0 and ds.attrs["series_failure_term"] == pytest.approx(omitted[0])
    sgd = one_step_overlaps(p, 4000, seed=11)[:, 0, 0]
    sgd_se = sgd.std(ddof=1) / np.sqrt(sgd.size)
    assert abs(float(ds.M[-1, 0, 0]) - sgd.mean()) <= 4 * np.hypot(sgd_se, float(ds.M_mc_se[-1]))
    # the map's own value is off by many standard errors: what the switch avoids
    assert abs(float(theory.step_map(p, np.array([[0.3]]), np.eye(1))[0][0, 0]) - sgd.mean()) > 20 * sgd_se
    with pytest.raises(ValueError, match="method='exact'"):
        theory.dynamics(p, 1, n_points=2, series_failure="raise")
    with pytest.raises(ValueError, match="series_failure must be"):
        theory.dynamics(p, 1, n_points=2, series_failure="ignore")
    # two units: no exact method exists, so the default refuses too (the He3 step's batch, two units)
    p2 = lb.Params(d=64, mu=0.5, delta=0.0, gamma0=0.3, p=2, k=2, target="he3", activation="he3", m0=0.3)
    if theory._map_step(p2, np.diag([0.3, 0.3]), np.eye(2))[2] > theory.SERIES_FAIL:
        with pytest.raises(ValueError, match="p = k = 1"):
            theory.dynamics(p2, 1, n_points=2)


@pytest.mark.parametrize("fluctuations", [False, True])
def test_recursion_is_unchanged_where_the_series_converges(fluctuations):
    """Panel (c) of Sec. 3's overlap figure (He2, d = n_b = 256, gamma = 0.15, m0 = 0.2): the series
    converges at every step, so the default recursion is still the step map iterated, to the bit, and is
    not switched; the largest first omitted term met is recorded (0 here: it never failed)."""
    p = lb.Params(d=256, mu=1.0, delta=0.0, gamma0=0.15, target="he2", activation="he2", m0=0.2)
    ds = theory.dynamics(p, 40, n_points=41, fluctuations=fluctuations)
    assert ds.attrs["method_used"] == "recursion" and ds.attrs["series_omitted_max"] == 0.0
    if not fluctuations:
        M, Q = np.array([[0.2]]), np.eye(1)
        for _ in range(40):
            M, Q = theory.step_map(p, M, Q)
        assert float(ds.M[-1, 0, 0]) == float(M[0, 0])


def test_recursion_records_a_mild_series_failure():
    """Panel (b) of the overlap figure (He2, d = 256, n_b = 16, gamma = 0.0375): as the overlap decays
    towards zero the series stops converging, but its first omitted term stays below SERIES_FAIL (0.14 at
    step 40), so the recursion runs on without the factor there and records that term."""
    p = lb.Params(d=256, mu=0.5, delta=0.5, gamma0=0.6, target="he2", activation="he2", m0=0.2)
    ds = theory.dynamics(p, 40, n_points=2)
    assert ds.attrs["method_used"] == "recursion"
    assert 0.05 < ds.attrs["series_omitted_max"] < theory.SERIES_FAIL


def test_first_passage_against_sgd():
    """The law absorbed at eta against SGD's first-passage times at the small-batch column of the
    correlation-loss phase diagram: He2, d = 128, n_b = 1, gamma = 0.15 d^-3/4 = 0.0039, m0 = d^-1/2,
    eta = 0.5, 800 steps (cost: about 4 s for the kernel, 1.5 s for the runs). The median first passage of 400 SGD runs (half its 68% bootstrap
    interval as its error) and the fraction passed within the budget (binomial error) against the law's
    (Monte Carlo error from its 16 kernel groups), each within 3 combined standard errors (two-sided
    false alarm 0.3% per assertion). 8000 batches per grid point: there the groups' medians scatter
    around the whole kernel's within their error (checked here, 3 errors), so the group error holds
    (with 1600 batches they do not: a group's drift is then mostly noise)."""
    p = experiments.scaling_params(d=128, ell=2, mu=0.0, delta=0.75, variant="correlation", gamma0=0.15)
    fp = theory.first_passage(p, 800, n_batches=8000, grid=801, seed=1)
    P = fp.passed.values
    assert P[0] == 0.0 and np.all(np.diff(P) >= -1e-12) and P[-1] <= 1.0 + 1e-12
    med, med_se = float(fp.t_median), float(fp.t_median_se)
    assert abs(float(fp.t_median_groups.mean()) - med) <= 3 * med_se
    T = np.array([sgd_recovery_time(p, 800, seed=5000 + s)["T"] for s in range(400)])
    rec = np.isfinite(T)
    iv = analysis.median_interval(T, rec)
    sgd_med, sgd_med_se = float(iv["median"]), float(iv["hi"] - iv["lo"]) / 2
    assert abs(med - sgd_med) <= 3 * np.hypot(med_se, sgd_med_se)
    frac = rec.mean()
    assert abs(float(P[-1]) - frac) <= 3 * np.hypot(float(fp.passed_se[-1]), np.sqrt(frac * (1 - frac) / rec.size))


def test_first_passage_rejects_what_it_cannot_carry():
    p = experiments.scaling_params(d=64, ell=2, mu=0.0, delta=0.5, variant="correlation", gamma0=0.15)
    with pytest.raises(ValueError, match="eta"):
        theory.first_passage(p, 5, m0=0.6, n_batches=64)
    with pytest.raises(ValueError, match="grid"):
        theory.first_passage(p, 5, n_batches=64, grid=10 ** 5)
    with pytest.raises(ValueError, match="p = k = 1"):
        theory.first_passage(lb.Params(d=64, mu=1.0, p=2, k=2, m0=0.1), 5, n_batches=64)


def test_passage_point_declines_where_the_grid_is_too_coarse():
    """At the smallest learning rate of the correlation-loss diagram (d = 128, n_b = 1, delta = 5/4,
    gamma = 3.4e-4) a step's spread is s ~ 2e-4, so the grid's deposit (h^2 / 4 = 1.6e-6 at 801 points)
    would add far more than 5% of its variance: the law is not computed and the grid it would need
    (thousands of points) is reported."""
    r = experiments.passage_point(d=128, ell=2, mu=0.0, delta=1.25, budget=10, variant="correlation",
                                  gamma0=0.15)
    assert not r["grid_ok"] and np.isnan(r["passed"]) and r["grid_needed"] > 801
    h = 2.0 / 800
    assert h * h / 4 > experiments.PASSAGE_GRID_VAR * r["s2"]


def test_anchored_kernel_is_the_sampled_kernel_and_carries_a_passage_by_fluctuations():
    """Below the noise boundary (projected SGD, He2, d = 128, n_b = 11, delta = 0.19, 0.15 under the
    finite-d noise root 0.34; gamma = 0.06) the deterministic dynamics settle below eta and runs pass it
    only by fluctuations, so the passage is decided by the tails of the one-step law. With the step
    computed at 33 anchors and interpolated per batch the kernel is the one sampled at every grid point
    (same batches: the interpolation error, measured 0.001 in P, must stay below a quarter of the law's
    own Monte Carlo error, 0.02 at 8000 batches); with 3 anchors it is not (power). With 16000 batches
    the law's probability of passing within 800 steps meets the fraction of 300 SGD runs within 3
    combined errors (measured 0.19-0.22 over seeds against 0.18 +- 0.02; a kernel with only the step's
    mean and variance gives 0.57 here). Six nodes of the chi-square rule give the same probabilities as
    24 to three decimals here."""
    p = experiments.scaling_params(d=128, ell=2, mu=0.5, delta=0.19, variant="projected", gamma0=0.15)
    full = theory.first_passage(p, 800, n_batches=8000, grid=801, seed=61, n_chi=6)
    se = float(full.passed_se[-1])
    assert abs(float(theory.first_passage(p, 800, n_batches=8000, grid=801, seed=61, anchors=33, n_chi=6).passed[-1])
               - float(full.passed[-1])) <= 0.25 * se
    assert abs(float(theory.first_passage(p, 800, n_batches=8000, grid=801, seed=61, anchors=3, n_chi=6).passed[-1])
               - float(full.passed[-1])) > 0.25 * se
    law = theory.first_passage(p, 800, n_batches=16000, grid=801, seed=62, anchors=33, n_chi=6)
    T = np.array([sgd_recovery_time(p, 800, seed=7000 + s)["T"] for s in range(300)])
    frac = np.isfinite(T).mean()
    assert 0.05 < frac < 0.5  # the point is below the boundary: a minority passes
    assert abs(float(law.passed[-1]) - frac) <= 3 * np.hypot(float(law.passed_se[-1]),
                                                             np.sqrt(frac * (1 - frac) / T.size))
    with pytest.raises(ValueError, match="anchors"):
        theory.first_passage(p, 5, n_batches=64, anchors=2)


def test_passage_point_refines_its_grid_at_the_upper_edge():
    """At the budget's edge (projected SGD, He2, d = 128, n_b = 3, delta = 1, gamma = 1.2e-3) a step's
    spread is too small for 801 points; with grid=None the law takes the grid that resolves it (1878
    points; the sparse kernels make this cheap) and meets the fraction of 160 SGD runs that pass within
    800 steps within 3 combined errors (measured 0.23 +- 0.07 against 0.21 +- 0.03; the deterministic
    dynamics say none). The law's error is large here because at this learning rate a step's drift is
    a small part of its spread."""
    kw = dict(d=128, ell=2, mu=0.25, delta=1.0, budget=800, variant="projected", gamma0=0.15, eta=0.5,
              n_batches=16000, seed=300, anchors=33, n_chi=6)
    assert not experiments.passage_point(**kw)["grid_ok"]  # the default 801 points decline
    r = experiments.passage_point(**kw, grid=None)
    assert r["grid_ok"] and 801 < r["grid"] <= theory.PASSAGE_MAX_GRID and 0.0 < r["passed"] < 1.0
    p = experiments.scaling_params(d=128, ell=2, mu=0.25, delta=1.0, variant="projected", gamma0=0.15)
    T = np.array([sgd_recovery_time(p, 800, seed=40000 + s)["T"] for s in range(160)])
    frac = np.isfinite(T).mean()
    assert abs(r["passed"] - frac) <= 3 * np.hypot(r["passed_se"], np.sqrt(frac * (1 - frac) / T.size))
