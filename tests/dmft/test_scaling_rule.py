"""The linear scaling rule at fixed batch-noise temperature T = eta (1 - b): DMFT and SGD
on the clock of sample visits b t (chapter 6)."""

import numpy as np
import pytest

from tsdyn import dmft

T = 0.2
BATCHES = [1 / 9, 1 / 3, 2 / 3, 8 / 9]  # matched steps b eta = T b/(1-b) = 0.025, 0.1, 0.4, 1.6
SCAN = dict(temperature=T, batches=BATCHES, sample_time=3.2, d=200, seeds=16, dmft_seeds=4,
            n_samples=2000, n_resp=500, seed=0)


@pytest.fixture(scope="module")
def scan():
    return dmft.scaling_rule_scan(**SCAN)


def test_temperature_and_the_rule_pairs():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.25, eta=0.4)
    assert p.temperature == pytest.approx(0.3) and p.sample_step == pytest.approx(0.1)
    eta = dmft.Params.eta_at_temperature(0.3, 0.25)
    assert eta == pytest.approx(0.4)
    # T = h (1 - b)/b in terms of the sample-clock step h = b eta (the talk's eta (1-b)/b)
    assert p.temperature == pytest.approx(p.sample_step * (1 - p.b) / p.b)
    with pytest.raises(ValueError, match="temperature"):
        dmft.Params.eta_at_temperature(0.0, 0.5)
    with pytest.raises(ValueError, match="b "):
        dmft.Params.eta_at_temperature(0.2, 1.0)


def test_helpers():
    t = np.array([0.0, 1.0, 2.0])
    runs = [[0.0, 2.0, 4.0], [1.0, 1.0, 3.0]]
    np.testing.assert_allclose(dmft.value_at(runs, t, 1.5), [3.0, 2.0])
    with pytest.raises(ValueError, match="t_obs"):
        dmft.value_at([[0.0, 1.0, 2.0]], t, 2.5)
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert dmft.paired_ratio(x, x) == (0.0, 0.0)
    dev, se = dmft.paired_ratio(1.1 * x, x)  # a common factor: exact, no error
    assert dev == pytest.approx(0.1) and se == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="paired"):
        dmft.paired_ratio(x, x[:3])


def test_theory_below_the_break_is_the_rule(scan):
    d = scan.deviation_theory.values
    assert d[0] == 0.0 and scan.deviation_theory_se.values[0] == 0.0  # the reference itself
    # b = 1/3, step 0.1: the rule holds up to the O(h) step correction, about 0.08 h = 0.008
    # at this u (measured at d = 400, 8 solutions: -0.0088 +- 0.0018), plus 3 s.e. of the
    # paired Monte Carlo ratio: well inside 0.02, a fifth of the tolerance
    assert abs(d[1]) < 0.02 + 3 * scan.deviation_theory_se.values[1]


def test_deviation_grows_across_the_break(scan):
    d, se = np.abs(scan.deviation_theory.values), scan.deviation_theory_se.values
    # each larger b (doubling-plus of the step) deviates more, by more than 3 paired s.e.
    assert np.all(np.diff(d) > 3 * np.hypot(se[1:], se[:-1]))
    assert d[-1] > scan.attrs["tolerance"]  # b = 8/9 (step 1.6) lies past the break
    s, sse = np.abs(scan.deviation.values), scan.deviation_se.values
    assert s[-1] - s[1] > 3 * np.hypot(sse[-1], sse[1])
    # the predicted break, b_c = h_c/(T + h_c), lies between the last two fractions
    b_c = scan.attrs["critical_batch_theory"]
    assert 2 / 3 < b_c < 8 / 9
    assert scan.attrs["critical_sample_step_theory"] == pytest.approx(T * b_c / (1 - b_c))


def test_simulation_against_theory(scan):
    # at the two fractions around the break the simulated deviation (d = 200, 16 paired
    # training sets) lies within 3 combined s.e. of the DMFT's: finite-d offsets of the
    # observable are common to both fractions of a paired ratio and cancel to first order
    for i in (2, 3):
        gap = scan.deviation.values[i] - scan.deviation_theory.values[i]
        se = np.hypot(scan.deviation_se.values[i], scan.deviation_theory_se.values[i])
        assert abs(gap) < 3 * se, (i, gap, se)
    a = scan.attrs
    lo, hi = a["critical_batch_measured_lo"], a["critical_batch_measured_hi"]
    assert lo <= a["critical_batch_measured"] <= hi
    assert 2 / 3 < a["critical_batch_measured"] < 8 / 9


def test_pairing_shrinks_the_error(scan):
    # the same training sets at every b: the paired deviation's s.e. is smaller than the
    # unpaired one, sqrt(2) se(obs)/obs, by the cancelling training-set fluctuations
    i = 2
    unpaired = np.sqrt(2) * scan.observable_sim_se.values[i] / scan.observable_sim.values[0]
    assert scan.deviation_se.values[i] < 0.5 * unpaired


def test_attrs_glue_as_plain_values(scan):
    for key in ("temperature", "critical_batch_theory", "critical_batch_measured",
                "critical_batch_measured_lo", "critical_batch_measured_hi", "tolerance"):
        assert isinstance(scan.attrs[key], float)
    for key in ("temperature_symbol", "observable", "critical_batch_formula"):
        assert isinstance(scan.attrs[key], str)
    np.testing.assert_allclose(scan.eta.values * (1 - scan.batch.values), T)


@pytest.mark.parametrize("change, match", [
    (dict(batches=[0.5, 0.25]), "increasing"),
    (dict(batches=[0.5]), "at least 2"),
    (dict(batches=[0.5, 1.0]), "batches"),
    (dict(batches="ab"), "batches"),
    (dict(temperature=-0.1), "temperature"),
    (dict(sample_time=0.0), "sample_time"),
    (dict(tolerance=0.0), "tolerance"),
    (dict(observable="m"), "observable"),
    (dict(seeds=1), "seeds"),
    (dict(params="two-cluster"), "params"),
])
def test_bad_input(change, match):
    with pytest.raises(ValueError, match=match):
        dmft.scaling_rule_scan(**{**SCAN, **change})


def test_the_break_is_the_step_not_the_noise(scan):
    # gradient descent at the matched step h = b eta (no batch noise, same Monte Carlo
    # samples) deviates like SGD at fixed T: the step alone breaks the rule. Measured at
    # d = 400, 16 solutions: the two deviations differ by < 0.003 at every b, the noise part
    # SGD/GD - 1 stays at 0.6 % +- 0.2 % up to b = 4/5; here within 3 paired s.e.
    dev, step = scan.deviation_theory.values, scan.step_deviation_theory.values
    noise, nse = scan.noise_theory.values, scan.noise_theory_se.values
    for i in (1, 2):  # below the break the noise part is the same at every b (the rule)
        assert abs(noise[i] - noise[0]) < 3 * np.hypot(nse[i], nse[0])
    assert abs(step[-1]) > scan.attrs["tolerance"]  # the step alone crosses the tolerance
    # so both place the break between 2/3 and 8/9, within 0.02 of each other (the noise
    # part, < 0.01 of the observable, shifts |deviation| by less than 0.01 where it crosses)
    assert abs(scan.attrs["critical_batch_gd_theory"] - scan.attrs["critical_batch_theory"]) < 0.02
    assert np.all(np.abs(dev - step) < 0.02)


# Stationary two-cluster problem for the fluctuation-dissipation temperature: a ridge
# lam = 0.5 makes the weights settle within t ~ 1/lam, so t = 30 is late.
FDR = dict(alpha=2.0, Delta=0.5, R0=0.01, lam=0.5, eta=0.2)


def test_fdr_temperature_is_the_batch_noise():
    p = dmft.Params(**FDR, b=0.3)
    _, _, sols = dmft.solve_seeds(p, 30.0, seeds=8, n_samples=4000, n_resp=1000)
    res = [dmft.fdr_temperature(s, window=2.0) for s in sols]
    T_eff = np.array([r["T_eff"] for r in res])
    T_pred = np.array([r["T_pred"] for r in res])
    ratio, se = T_eff.mean() / T_pred.mean(), T_eff.std(ddof=1) / np.sqrt(8) / T_pred.mean()
    # the parametric plot's slope is the white batch noise eta W/2: measured 1.05 +- 0.03 here
    # (0.98-1.12 over b = 0.1-0.5); allowed: 3 s.e. plus 0.1 for the O(eta kappa) ~ 0.05
    # correction of a discrete step and the slower directions that enter at longer lags
    assert abs(ratio - 1.0) < 3 * se + 0.1, (ratio, se)
    r = res[0]
    assert r["T_eff_sample"] == pytest.approx(r["T_eff"] / 0.3)
    assert r["temperature"] == pytest.approx(0.2 * 0.7)
    assert len(r["chi"]) == 10 and np.all(np.diff(r["chi"]) > 0)  # lags dt..2, chi grows


def test_fdr_temperature_of_gradient_descent_is_zero():
    gd = dmft.solve(dmft.Params(**FDR, b=1.0), 30.0, n_samples=2000, n_resp=500, seed=3)
    sgd = dmft.solve(dmft.Params(**FDR, b=0.3), 30.0, n_samples=2000, n_resp=500, seed=3)
    r_gd, r_sgd = dmft.fdr_temperature(gd, window=2.0), dmft.fdr_temperature(sgd, window=2.0)
    # gradient descent has no white noise (W = 0 up to rounding) and its weights settle at
    # the minimum: measured |T_eff| ~ 1e-7 against 3e-3 for SGD at b = 0.3
    assert abs(r_gd["T_eff"]) < 0.01 * r_sgd["T_eff"]
    assert abs(r_gd["W"]) < 1e-3 * r_sgd["W"]
    with pytest.raises(ValueError, match="window"):
        dmft.fdr_temperature(sgd, window=0.01)
    with pytest.raises(ValueError, match="t_obs"):
        dmft.fdr_temperature(sgd, t_obs=40.0)
    with pytest.raises(ValueError, match="DMFT solution"):
        dmft.fdr_temperature(sgd[["m", "C"]])


def test_the_fdr_excess_is_the_discrete_step():
    """The fluctuation-dissipation temperature against the white batch noise, at b = 0.1 and
    two steps: at eta = 0.2 it exceeds the prediction (measured 1.10 +- 0.02), at eta = 0.05 it
    meets it (0.99 +- 0.03). Statistical: 3 standard errors over 8 DMFT solutions each."""
    big, small = (dmft.fdr_check(b=0.1, eta=eta) for eta in (0.2, 0.05))
    assert abs(small["ratio"] - 1.0) < 3 * small["ratio_se"]
    assert big["ratio"] - small["ratio"] > 2 * np.hypot(big["ratio_se"], small["ratio_se"])
    assert small["temperature"] == pytest.approx(0.05 * 0.9)
