"""Hamming distance, TP/TN rates and the m_c estimator on hand-made cases."""

import numpy as np
import pytest

from tsdyn import sparse


def test_hamming_on_a_hand_made_pair():
    teacher = np.array([[1, -1, 0], [0, 1, 1], [-1, 0, 1]])
    student = np.array([[1, 1, 0], [0, 1, -1], [-1, 0, 1]])
    # six non-zeros, two signs wrong
    assert sparse.hamming(student, teacher) == pytest.approx(2 / 6)
    assert sparse.hamming(teacher, teacher) == 0.0
    assert sparse.hamming(-teacher, teacher) == 1.0
    # several matrices: the fraction over all of them
    assert sparse.hamming((student, teacher), (teacher, teacher)) == pytest.approx(2 / 12)


def test_hamming_counts_wrongly_kept_weights_on_the_student_support():
    teacher = np.array([[1, 0], [0, -1]])
    support = np.ones((2, 2))
    student = np.array([[1, 1], [0, 0]])  # one spurious non-zero, one missed weight
    assert sparse.hamming(student, teacher, support) == pytest.approx(2 / 4)


def test_tp_tn_rates_on_a_hand_made_pair():
    teacher = np.array([[1, 0, -1, 0], [0, 1, 0, 1]])
    support = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    # teacher non-zeros: (0,0)=1 (0,2)=-1 (1,1)=1 (1,3)=1; student right on 3 of them
    # teacher zeros on the support: (0,1), (1,0), (1,2); student zero on 2 of them
    student = np.array([[1, 0, -1, 0], [1, 1, 0, -1]])
    tp, tn = sparse.tp_tn_rates(student, teacher, support)
    assert tp == pytest.approx(3 / 4)
    assert tn == pytest.approx(2 / 3)
    assert sparse.tp_tn_rates(teacher, teacher, support) == (1.0, 1.0)
    tp, tn = sparse.tp_tn_rates(teacher, teacher, teacher != 0)
    assert tp == 1.0 and np.isnan(tn)


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match="same shape"):
        sparse.hamming(np.ones((2, 2)), np.ones((3, 3)))


def test_crossing_interpolates_in_log_m():
    m = [1, 2, 4, 8]
    assert sparse.crossing(m, [0, 0, 0.25, 0.75]) == pytest.approx(np.sqrt(4 * 8))
    assert sparse.crossing(m, [0, 0, 0, 0.4]) == np.inf
    assert sparse.crossing(m, [0.6, 1, 1, 1]) == -np.inf
    assert sparse.crossing(m, [0, 0.5, 1, 1]) == 2.0


def test_critical_batch_of_a_sharp_step():
    """All runs fail below m = 8 and succeed from m = 8: m_c between 6 and 8, and every
    bootstrap resample gives the same crossing (zero spread)."""
    m = np.array([2, 4, 6, 8, 12])
    success = np.repeat((m >= 8)[:, None], 10, axis=1)
    out = sparse.critical_batch(m, success)
    assert out["m_c"] == pytest.approx(np.exp((np.log(6) + np.log(8)) / 2))
    assert out["m_c_se"] < 1e-12 and out["finite_fraction"] == 1.0  # round-off only
    # the error bar is then the grid's resolution: uniform in log m between 6 and 8
    assert out["m_c_grid"] == pytest.approx(out["m_c"] * np.log(8 / 6) / np.sqrt(12))
    assert out["m_c_err"] == out["m_c_grid"]


def test_critical_batch_recovers_a_known_threshold():
    """Synthetic Bernoulli data with success probability 1/(1 + (m_c/m)^5), m_c = 20:
    the estimate is within 3 bootstrap standard errors (plus the log-linear interpolation
    bias, under 2% of m_c on this grid) of the truth, and the bootstrap spread is
    close to the spread of the estimator over independent data sets (within 35%, the
    accuracy of a standard deviation from 40 replicas plus bootstrap noise)."""
    m = np.geomspace(5, 80, 9)
    true = 20.0
    prob = 1 / (1 + (true / m) ** 5)
    rng = np.random.default_rng(0)
    estimates, ses = [], []
    for _ in range(40):
        success = rng.random((len(m), 60)) < prob[:, None]
        out = sparse.critical_batch(m, success, n_boot=300, seed=int(rng.integers(1 << 30)))
        estimates.append(out["m_c"])
        ses.append(out["m_c_se"])
    estimates, ses = np.array(estimates), np.array(ses)
    assert abs(estimates.mean() - true) < 3 * estimates.std(ddof=1) / np.sqrt(40) + 0.02 * true
    assert abs(np.mean(ses) / estimates.std(ddof=1) - 1) < 0.35


def test_critical_batch_input_checks():
    with pytest.raises(ValueError, match=r"success must have shape \(len\(m\), runs\) = \(3, runs\)"):
        sparse.critical_batch([1, 2, 3], np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="m must be increasing"):
        sparse.critical_batch([1, 3, 2], np.ones((3, 4), bool))


def test_success_fraction_and_binomial_error():
    p, se = sparse.success_fraction(np.array([[True, True, False, False], [True] * 4]))
    np.testing.assert_allclose(p, [0.5, 1.0])
    np.testing.assert_allclose(se, [np.sqrt(0.25 / 3), 0.0])


def test_transition_width_on_hand_made_fractions():
    m = [1, 2, 4, 8]
    # 0.2 is crossed at m = 2 exactly, 0.8 at m = 4 exactly
    success = np.array([[False] * 10, [True] * 2 + [False] * 8, [True] * 8 + [False] * 2, [True] * 10])
    out = sparse.transition_width(m, success, n_boot=200)
    assert out["width"] == pytest.approx(2.0)
    assert out["width_se"] > 0
    # a perfect step between 6 and 8 is resolved only to the grid: 6 [(8/6)^0.8 - (8/6)^0.2]
    step = np.repeat((np.array([2, 4, 6, 8, 12]) >= 8)[:, None], 10, axis=1)
    out = sparse.transition_width([2, 4, 6, 8, 12], step)
    assert out["width"] == pytest.approx(6 * ((8 / 6) ** 0.8 - (8 / 6) ** 0.2))
    with pytest.raises(ValueError, match="levels must satisfy 0 < lo < hi < 1"):
        sparse.transition_width(m, success, lo=0.8, hi=0.2)
