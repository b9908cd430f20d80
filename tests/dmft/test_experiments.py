"""The matched-step control (SGD at (b, eta) against gradient descent at step b eta) and the
escape time on |m|."""

import numpy as np
import pytest

from tsdyn import dmft

THREE = dict(alpha=2.0, Delta=0.05, lam=0.0, eta=0.2, R0=1.0, model="three-cluster", L=0.7, m0=0.05)


def test_escape_times_fold_the_sign():
    t = np.arange(5.0)
    m = np.array([[0.0, 0.2, 0.6, 1.0, 1.0],      # escapes to m > 0 at t = 2
                  [0.0, -0.3, -0.7, -1.0, -1.0],  # escapes to m < 0 at t = 2
                  [0.0, 0.1, 0.1, -0.1, 0.1]])    # never escapes
    times, flipped = dmft.escape_times(m, t, 0.5)
    np.testing.assert_array_equal(times, [2.0, 2.0, np.inf])
    assert flipped == 1
    # the signed crossing time would have censored the run that escaped to m < 0
    assert dmft.crossing_times(m, t, 0.5)[1] == np.inf
    with pytest.raises(ValueError, match="level"):
        dmft.escape_times(m, t, -0.5)


def test_median_difference_interval():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.0, 1.0, 400), rng.normal(1.0, 1.0, 400)
    diff, lo, hi = dmft.median_difference_ci(a, b)
    # the median of 400 N(0, 1) values has s.e. sqrt(pi/2)/sqrt(400) = 0.063; of the
    # difference 0.089: within 4 s.e. of -1 (a 6e-5 two-sided tail), and the 95% interval
    # about 2 x 1.96 x 0.089 = 0.35 wide (between 0.2 and 0.5 allows for the bootstrap's
    # own spread at this n)
    assert abs(diff + 1.0) < 4 * 0.089
    assert lo < diff < hi and 0.2 < hi - lo < 0.5
    # censored runs: when most runs of a are censored its median is inf, and so the difference
    assert dmft.median_difference_ci([1.0, np.inf, np.inf], [1.0, 2.0, 3.0])[0] == np.inf


def test_matched_step_gd_and_the_control():
    p = dmft.Params(**THREE, b=0.5)
    gd = dmft.matched_step_gd(p)
    assert gd.b == 1.0 and gd.eta == pytest.approx(0.1) and gd.algorithm == "gd"
    T = 4.0
    _, _, sols = dmft.solve_seeds(p, T, seeds=2, n_samples=400, n_resp=100)
    sim = dmft.simulate_seeds(p, T, d=60, seeds=3)
    c = dmft.matched_step_runs(p, T, d=60, seeds=3, dmft_seeds=2, n_samples=400, n_resp=100)
    # the control ends at the same b t, with as many steps
    assert c["t_max"] == pytest.approx(0.5 * T)
    assert c["sim"].t.size == sim.t.size and c["sols"][0].t.size == sols[0].t.size
    np.testing.assert_allclose(c["sim"].t.values, 0.5 * sim.t.values, atol=1e-12)
    r = dmft.step_or_noise(0.5, sols, sim, c["sols"], c["sim"], full_sols=sols, full_sim=sim, level=0.06)
    for src in ("DMFT", "simulation"):
        x = r[src]
        assert x["esc_diff"][1] <= x["esc_diff"][0] <= x["esc_diff"][2]
        assert set(x) >= {"esc_sgd", "esc_gd", "min_diff", "min_interior", "esc_full", "shift", "min_shift"}
    # compared with itself the control gives zero differences, exactly
    same = dmft.step_or_noise(1.0, c["sols"], c["sim"], c["sols"], c["sim"], level=0.06)
    assert same["DMFT"]["esc_diff"][0] == 0.0 and same["simulation"]["min_diff"]["diff"] == 0.0
    # a control that does not end at the SGD curve's b t is refused
    with pytest.raises(ValueError, match="must end"):
        dmft.step_or_noise(0.25, sols, sim, c["sols"], c["sim"])
