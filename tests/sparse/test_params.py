"""Every invalid parameter raises a ValueError naming it."""

import math

import pytest

from tsdyn import sparse

GOOD = dict(N=50, d=3, m=8)
GOOD_SGD = dict(N=16, d=2, m=8, lr=0.1)


@pytest.mark.parametrize("field, value, message", [
    ("N", 0, r"N \(inputs = hidden units\) must be an integer >= 1; got 0"),
    ("d", 0, r"d \(teacher non-zeros per row and column\) must be an integer >= 1; got 0"),
    ("d", 51, r"d \(teacher non-zeros per row and column\) must be <= N = 50; got 51"),
    ("d", 2.5, r"d \(teacher non-zeros per row and column\) must be an integer"),
    ("m", 0, r"m \(mini-batch size\) must be an integer >= 1; got 0"),
    ("m", True, r"m \(mini-batch size\) must be an integer"),
    ("model", "three_matrix", r"model must be one of \('two_matrix', 'one_matrix'\); got 'three_matrix'"),
    ("d_s", 2, r"d_s \(student non-zeros per row and column\) must be in \[d, N\] = \[3, 50\]; got 2"),
    ("d_s", 51, r"d_s .* must be in \[d, N\] = \[3, 50\]; got 51"),
    ("a", -0.1, r"a \(LeakyReLU slope\) must be a finite number in \[0.0, 1.0\]; got -0.1"),
    ("a", math.nan, r"a \(LeakyReLU slope\)"),
    ("n_val", 0, r"n_val \(validation samples\) must be an integer >= 1; got 0"),
])
def test_bad_parameter_raises(field, value, message):
    with pytest.raises(ValueError, match=message):
        sparse.Params(**{**GOOD, field: value})


def test_one_matrix_student_must_know_the_support():
    with pytest.raises(ValueError, match=r"d_s .* must equal d = 3 for model 'one_matrix'; got 4"):
        sparse.Params(**GOOD, model="one_matrix", d_s=4)


@pytest.mark.parametrize("field, value, message", [
    ("lr", 0.0, r"lr \(learning rate\) must be a finite number in \(0.0, inf\]; got 0.0"),
    ("lr", math.inf, r"lr \(learning rate\)"),
    ("m", 0, r"m \(mini-batch size\) must be an integer >= 1"),
    ("d", 17, r"d \(teacher non-zeros per row and column\) must be <= N = 16; got 17"),
    ("reduction", "max", r"reduction must be one of \('sum', 'mean'\); got 'max'"),
    ("w_init_high", -1.0, r"w_init_high \(upper end of the initial weights\) must be a finite number in \[0.0"),
    ("n_val", 0, r"n_val \(validation samples\)"),
    ("d_s", 0, r"d_s \(d in the student's 1/sqrt\(d\)\) must be an integer >= 1; got 0"),
    ("d_s", 17, r"d_s \(d in the student's 1/sqrt\(d\)\) must be <= N = 16; got 17"),
])
def test_bad_sgd_parameter_raises(field, value, message):
    with pytest.raises(ValueError, match=message):
        sparse.SGDParams(**{**GOOD_SGD, field: value})


def test_derived_quantities_and_flat_attrs():
    p = sparse.Params(**GOOD)
    assert p.student_d == 3 and not p.mismatched and p.validation_size == 30
    assert p.n_weights == 2 * 50 * 3 == p.n_teacher_weights
    q = sparse.Params(**GOOD, d_s=5)
    assert q.mismatched and q.n_weights == 2 * 50 * 5 and q.n_teacher_weights == 2 * 50 * 3
    r = sparse.Params(**GOOD, model="one_matrix")
    assert r.validation_size == 1024 and r.n_weights == 50 * 3
    assert p.attrs()["d_s"] == "None" and p.attrs()["m"] == 8
    with pytest.raises(AttributeError):
        p.m = 3


@pytest.mark.parametrize("call, args", [
    (sparse.greedy, (10,)), (sparse.sgd, (10,)), (sparse.draw_networks, ()),
])
def test_functions_reject_other_parameter_objects(call, args):
    with pytest.raises(ValueError, match=r"params must be a sparse\.(SGD)?Params; got dict"):
        call(dict(GOOD), *args, seed=0)


def test_bad_run_arguments():
    p = sparse.Params(**GOOD)
    with pytest.raises(ValueError, match=r"sweeps \(Monte Carlo sweeps\) must be an integer >= 1; got 0"):
        sparse.greedy(p, 0, seed=0)
    with pytest.raises(ValueError, match=r"n_points \(number of recording times\) must be an integer >= 2"):
        sparse.greedy(p, 10, seed=0, n_points=1)
    with pytest.raises(ValueError, match=r"spacing must be one of .*; got 'cubic'"):
        sparse.greedy(p, 10, seed=0, spacing="cubic")
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        sparse.greedy(p, 10, seed="one")
