"""The linear scaling rule at fixed gamma / n_b (chapter 6): theory (deterministic dynamics) against the
exact-in-law sampler, on the samples to weak recovery."""

import numpy as np
import pytest
import xarray as xr

from tsdyn import sweep
from tsdyn.largebatch import theory
from tsdyn.largebatch.params import fixed_temperature_params
from tsdyn.largebatch.scaling_rule import critical_batch_scan, paired_ratio_interval, scaling_rule_scan


@pytest.fixture(scope="module")
def scan():
    # d = 128, He2, projected SGD at the chapter's best temperature gamma / n_b = 0.15 / d; the theory's
    # critical batch (10 %) is near 66, so the batches span the rule (1, 8), its edge (32, 64) and past it
    return scaling_rule_scan(d=128, ell=2, temperature0=0.15, batches=[1, 8, 32, 64, 128], seeds=192, seed=3)


def test_theory_rule_exact_in_the_small_step_limit():
    """At fixed T the remainder of the rule is O(gamma) = O(T n_b): the smallest batch sits on the
    gamma -> 0 limit to within a few gamma (gamma = 0.15 / 256 here; the linear-stage slope
    d(deviation)/d(gamma) is below 2 for these moments), and n_b = 4 within 2 gamma of the smallest."""
    kw = dict(d=256, ell=2, temperature0=0.15)
    limit = theory.rule_limit_samples(**kw)
    s1 = theory.rule_samples(fixed_temperature_params(n_b=1, **kw))
    gamma1 = 0.15 / 256
    assert abs(s1 / limit - 1) < 3 * gamma1
    assert abs(theory.rule_deviation(n_b=4, **kw)) < 2 * 4 * gamma1 + 1e-4  # 1e-4: ODE tolerance


def test_linear_stage_moments_are_the_chapter_closed_forms():
    """He2 at m = 0 (tests/largebatch/test_theory.py): square loss B0 = -2, E[F^2] = 12, no linear A;
    correlation loss A1 = 2 (the drift 2m), B0 = 0, E[F^2] = E[y^2] E[sigma'^2] = 2. Quadrature exact,
    the A1 difference quotient has an O(1e-4) step: tolerance 1e-6."""
    proj = theory.rule_linear_stage(ell=2, temperature0=0.15)
    corr = theory.rule_linear_stage(ell=2, temperature0=0.15, variant="correlation")
    np.testing.assert_allclose([proj["A1"], proj["B0"], proj["F2"]], [0.0, -2.0, 12.0], atol=1e-6)
    np.testing.assert_allclose([corr["A1"], corr["B0"], corr["F2"]], [2.0, 0.0, 2.0], atol=1e-6)


def test_theory_critical_batch_scales_like_d_and_approaches_the_formula():
    """l = 2: n_b* = gamma_eps d / temperature0 with gamma_eps from the d -> infinity linear stage. The
    recursion's n_b* / d at d = 512 and 2048 must be within 20 % of the formula and closer at the larger
    d: the differences are the late stage (|m| near eta) and the half step a run pays at the end, both a
    fraction ~ 1 / ln d of the samples."""
    gamma_eps = theory.rule_linear_stage_gamma(ell=2, temperature0=0.15, tolerance=0.1)
    formula = gamma_eps / 0.15
    ratios = [theory.rule_critical_batch(d=d, ell=2, temperature0=0.15, tolerance=0.1) / d / formula
              for d in (512, 2048)]
    assert all(abs(r - 1) < 0.2 for r in ratios)
    assert abs(ratios[1] - 1) < abs(ratios[0] - 1)


def test_simulated_deviation_follows_theory(scan):
    """At n_b = 32 and 64 (gamma = 0.0375 and 0.075) the paired simulated deviation lies within 3 of its
    68 % half-widths of the theory's (statistical error of a median of 192 paired runs), plus 0.01 for the
    whole-step quantisation of a median (samples are multiples of n_b: 64 / ~2000 samples = 3 %, halved)."""
    for b in (32, 64):
        s = scan.sel(batch=b)
        half = float(s.deviation_hi - s.deviation_lo) / 2
        assert abs(float(s.deviation - s.deviation_theory)) < 3 * half + 0.01, (b, s)


def test_simulated_deviation_grows_across_the_break(scan):
    """Past the theory's critical batch the samples grow: the deviation at n_b = 128 exceeds the one at
    n_b = 8 by more than 3 of their combined 68 % half-widths, and crosses the 10 % tolerance."""
    lo, hi = scan.sel(batch=8), scan.sel(batch=128)
    err = np.hypot(float(lo.deviation_hi - lo.deviation_lo), float(hi.deviation_hi - hi.deviation_lo)) / 2
    assert float(hi.deviation - lo.deviation) > 3 * err
    assert float(hi.deviation_lo) > scan.attrs["tolerance"]


def test_measured_critical_batch_brackets_theory(scan):
    """The measured crossing interval (from the bounds of the 68 % band) contains the theory's critical
    batch widened by one grid factor (the batches are a factor 2 apart; the crossing is interpolated in
    log n_b between neighbours), and the contract's attrs are plain numbers."""
    a = scan.attrs
    assert np.isfinite(a["critical_batch_measured"]) and np.isfinite(a["critical_batch_theory"])
    assert a["critical_batch_measured_lo"] / 2 <= a["critical_batch_theory"] <= 2 * a["critical_batch_measured_hi"]
    for key in ("temperature", "critical_batch_theory", "critical_batch_measured", "tolerance"):
        assert isinstance(a[key], float)
    assert a["temperature"] == pytest.approx(0.15 / 128)
    assert float(scan.deviation.sel(batch=1)) == 0.0 and float(scan.deviation_theory.sel(batch=1)) == 0.0


def test_paired_ratio_keeps_the_pairing_and_ranks_censored_runs_last():
    """A batch whose every run takes exactly 1.1 times its partner's has ratio 1.1 with a zero-width
    interval (pairing kept, whatever the spread of the runs); a batch with most runs censored has an
    infinite median and ratio."""
    rng = np.random.default_rng(0)
    base = rng.lognormal(8, 0.4, size=64)
    cens = np.where(np.arange(64) < 40, np.inf, base)
    med, ratio, lo, hi = paired_ratio_interval(np.vstack([base, 1.1 * base, cens]), n_boot=500)
    assert ratio[1] == pytest.approx(1.1) and lo[1] == pytest.approx(1.1) and hi[1] == pytest.approx(1.1)
    assert np.isinf(med[2]) and np.isinf(ratio[2])


@pytest.mark.parametrize("kwargs, name", [
    (dict(batches=[4, 2]), "batches"),
    (dict(batches=[1]), "batches"),
    (dict(batches=[1, 2], temperature0=0.0), "temperature0"),
    (dict(batches=[1, 2], variant="spherical"), "variant"),
    (dict(batches=[1, 2], ell=5), "ell"),
    (dict(batches=[1, 2], seeds=2), "seeds"),
    (dict(batches=[1, 2], tolerance=-0.1), "tolerance"),
    (dict(batches=[1, 2], budget=0.5), "budget"),
    (dict(batches=[1, 2], temperature0=1.0), "batches"),  # past the noise line: no recovery at n_b = 1
])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        scaling_rule_scan(**{"d": 64, **kwargs})


def test_l3_projected_batch_beats_the_rule_as_theory_says():
    """l = 3, projected SGD, d = 64, temperature0 = 0.01 (chapter 2's gamma0 / n0): the radial step divides
    the tangential move by 1 - l gamma, so a larger batch at fixed T *saves* samples (negative deviation,
    theory -0.07, -0.14, -0.26 at n_b = 2048, 4096, 8192). The paired simulated deviation is within 3 of
    its 68 % half-widths (128 runs; recovery from m0 = d^-1/2 is heavy-tailed at d = 64), plus 0.01 for the
    whole-step quantisation of a median, of the theory at 2048 and 4096, and negative beyond the tolerance
    at 8192."""
    s = scaling_rule_scan(d=64, ell=3, temperature0=0.01, batches=[16, 2048, 4096, 8192], seeds=128, seed=5)
    for b in (2048, 4096):
        p = s.sel(batch=b)
        half = float(p.deviation_hi - p.deviation_lo) / 2
        assert abs(float(p.deviation - p.deviation_theory)) < 3 * half + 0.01, (b, p)
    assert float(s.deviation_hi.sel(batch=8192)) < -s.attrs["tolerance"]
    assert float(s.deviation_theory.sel(batch=8192)) < -s.attrs["tolerance"]


def test_law_of_the_overlap_explains_the_large_step_gap():
    """l = 2, d = 128, n_b = 256 (gamma = 0.3, twice the critical batch): one step moves m ~ d^-1/2 by a
    random amount of its own size, so the median run is not the deterministic run. The law of the overlap
    (exact kernel, absorbed at eta) must put the median samples within 3 combined standard errors of the
    runs' median (bootstrap half-width of 512 runs; law: its 16 groups' spread) plus half a batch (the runs'
    median is a multiple of n_b), and below the deterministic dynamics by more than 3 of its own errors."""
    s = scaling_rule_scan(d=128, ell=2, temperature0=0.15, batches=[4, 256], seeds=512, seed=7,
                          law_batches=[256]).sel(batch=256)
    sim_se = float(s.samples_hi - s.samples_lo) / 2
    law, law_se = float(s.samples_law), float(s.samples_law_se)
    assert abs(float(s.samples) - law) < 3 * np.hypot(sim_se, law_se) + 128
    assert float(s.samples_theory) - law > 3 * law_se


@pytest.mark.parametrize("kwargs, name", [
    (dict(ds=[256, 128], batch_units=[0.1, 1.0]), "ds"),
    (dict(ds=[128, 256], batch_units=[1.0, 0.1]), "batch_units"),
    (dict(ds=[128, 256], batch_units=[0.0, 1.0]), "batch_units"),
])
def test_critical_batch_scan_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        critical_batch_scan(**kwargs)


def test_scans_on_an_executor_are_the_serial_scans():
    """Each run carries its own seed (child j of the scan's seed, at every batch; the scan's seed at
    every d), so worker processes give the serial numbers exactly."""
    kw = dict(d=32, ell=2, temperature0=0.15, batches=[1, 8], seeds=4, seed=3)
    kw_d = dict(ds=[16, 32], batch_units=[0.1, 0.5], seeds=4, seed=2)
    with sweep.executor(max_workers=2) as pool:
        xr.testing.assert_identical(scaling_rule_scan(**kw, executor=pool), scaling_rule_scan(**kw))
        xr.testing.assert_identical(critical_batch_scan(**kw_d, executor=pool), critical_batch_scan(**kw_d))
