"""The chapter's statistics: Welch dof, pooled deviations and the late-gap sweep."""

import numpy as np
import pytest

from tsdyn import dmft, stats


def test_welch_dof_bounds():
    """Between min(n_a, n_b) - 1 (one error bar dominates) and n_a + n_b - 2 (equal
    variances, equal n): the chapter's seed counts (6 + 6) give 5 to 10."""
    assert stats.welch_dof(1.0, 6, 1.0, 6) == pytest.approx(10.0)
    assert stats.welch_dof(1.0, 6, 1e-6, 6) == pytest.approx(5.0, rel=1e-6)
    se = np.random.default_rng(0).uniform(0.1, 2.0, (2, 1000))
    dof = stats.welch_dof(se[0], 6, se[1], 6)
    assert np.all((dof >= 5 - 1e-9) & (dof <= 10 + 1e-9))


def test_difference_by_hand():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5, 1.0, 0.5])
    r = dmft.difference(a, b)
    sa, sb = np.std(a, ddof=1) / np.sqrt(3), np.std(b, ddof=1) / np.sqrt(4)
    assert r["diff"] == pytest.approx(2.0 - 0.5)
    assert r["se"] == pytest.approx(np.hypot(sa, sb))
    dof = (sa ** 2 + sb ** 2) ** 2 / (sa ** 4 / 2 + sb ** 4 / 3)
    assert r["dof"] == pytest.approx(dof)
    from scipy.stats import t as student
    assert r["p"] == pytest.approx(2 * student.sf(1.5 / np.hypot(sa, sb), dof))
    with pytest.raises(ValueError, match="x .independent values"):
        dmft.mean_se([1.0])


def test_yardstick_and_time_window():
    """Pooling: n counts every 5th point before t_until, for each curve and variable."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.5, eta=0.2, R0=0.01)
    sim = dmft.simulate_seeds(p, 4.0, d=60, seeds=3)
    th, th_se, _ = dmft.solve_seeds(p, 4.0, seeds=2, n_samples=200)
    y = dmft.yardstick([(th, th_se, sim)] * 2, n_theory=2, variables=("eg",))
    assert y["n"] == 2 * 4  # t = 1, 2, 3, 4
    y2 = dmft.yardstick([(th, th_se, sim)], n_theory=2, variables=("eg", "train_loss"), t_until=3.0)
    assert y2["n"] == 2 * 2  # t = 1, 2
    assert y2["max_z"] >= y2["rms_z"] > 0
    with pytest.raises(ValueError, match="t_until"):
        dmft.yardstick([(th, th_se, sim)], n_theory=2, t_until=0.5)


def test_late_gap_sweep_split_and_bad_input():
    p = dmft.Params(alpha=2.0, Delta=0.5, b=1.0, eta=0.2, R0=0.01)
    kw = dict(n_samples=[150, 300], ds=[40, 80], seeds=4, d_ref=40, n_samples_ref=150, k_sim=2, k_th=2)
    sw = dmft.late_gap_sweep(p, 2.0, **kw)
    assert set(sw["sim"]) == {40, 80} and set(sw["th"]) == {150, 300}
    a, b = sw["sim"][40]["train_loss"], sw["th"][150]["train_loss"]
    assert sw["first"]["train_loss"]["diff"] == pytest.approx(a[:2].mean() - b[:2].mean())
    assert sw["rest"]["train_loss"]["diff"] == pytest.approx(a[2:].mean() - b[2:].mean())
    assert sw["all"]["train_loss"]["diff"] == pytest.approx(a.mean() - b.mean())
    # the window averages are those of the runs with the same seeds
    run = dmft.simulate(p, 2.0, d=40, seed=1)
    assert a[1] == pytest.approx(float(run.train_loss.sel(t=slice(1.5, None)).mean()))
    assert len(sw["half"]["eg"]) == 4 and sw["gaps"]["eg"][(80, 300)]["se"] > 0
    for bad, match in ((dict(d_ref=50), "d_ref"), (dict(n_samples_ref=200), "n_samples_ref"),
                       (dict(k_sim=3), "k_sim"), (dict(seeds=3), "seeds"), (dict(ds=40), "ds")):
        with pytest.raises(ValueError, match=match):
            dmft.late_gap_sweep(p, 2.0, **{**kw, **bad})
