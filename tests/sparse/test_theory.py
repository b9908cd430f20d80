"""The counting argument and the random-guess baselines."""

import numpy as np
import pytest

from tsdyn import sparse


def test_counting_argument_values():
    # outputs only: two matrices, 2 N d signs vs m N outputs per mini-batch -> m = 2 d
    np.testing.assert_array_equal(sparse.counting_m_c("two_matrix", 100, [3, 4, 5]), [6, 8, 10])
    # the paper's mixed count: 2 N d signs vs 2 m N inputs and outputs -> m = d
    np.testing.assert_array_equal(sparse.counting_m_c("two_matrix", 100, [3, 4, 5], count="paper"),
                                  [3, 4, 5])
    # one matrix: N d signs vs m outputs -> m = N d, in both counts
    assert sparse.counting_m_c("one_matrix", 64, 2) == 128
    assert sparse.counting_m_c("one_matrix", 64, 2, count="paper") == 128


def test_counting_argument_bad_input():
    with pytest.raises(ValueError, match=r"model must be one of"):
        sparse.counting_m_c("dense", 10, 2)
    with pytest.raises(ValueError, match=r"d \(non-zeros per row and column\) must be >= 1"):
        sparse.counting_m_c("two_matrix", 10, [0, 2])
    with pytest.raises(ValueError, match=r"count must be one of \('outputs', 'paper'\); got 'inputs'"):
        sparse.counting_m_c("two_matrix", 10, 2, count="inputs")


@pytest.mark.parametrize("params, ternary", [
    (sparse.Params(N=60, d=3, m=2), False),
    (sparse.Params(N=60, d=2, d_s=4, m=2), True),
    (sparse.Params(N=60, d=3, m=2, model="one_matrix"), False),
])
def test_random_student_hamming_matches_initial_students(params, ternary):
    """The Hamming distance of the initial (random) student, averaged over 40 seeds,
    is within 4 binomial standard errors of 1/2 (+-1) or 2/3 ({-1, 0, 1})."""
    h0 = [sparse.greedy(params, 1, seed=s, n_points=2).hamming.values[0] for s in range(40)]
    p = sparse.random_student_hamming(ternary)
    se = np.sqrt(p * (1 - p) / (40 * params.n_weights))
    assert abs(np.mean(h0) - p) < 4 * se
