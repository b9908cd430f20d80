"""Every invalid parameter raises a ValueError naming it and the allowed range."""

import math

import pytest

from tsdyn import dyson


@pytest.mark.parametrize("field, value, message", [
    ("eps", 0.0, r"eps \(learning rate\) must be a finite number in \(0"),
    ("eps", -0.5, r"eps \(learning rate\) must be a finite number in \(0.0, inf\]; got -0.5"),
    ("eps", math.nan, r"eps \(learning rate\)"),
    ("batch", 0, r"batch \(mini-batch size \|B\|\) must be an integer >= 1; got 0"),
    ("batch", 2.0, r"batch \(mini-batch size \|B\|\) must be an integer"),
    ("batch", 5000, r"batch \(mini-batch size \|B\|\) must be <= n_train .*4000.*; got 5000"),
    ("sigma_w", 0.0, r"sigma_w \(initial weight scale of W\^\(2\)\) must be a finite number in \(0"),
    ("sigma_w", -1.0, r"sigma_w"),
    ("sigma_w", math.inf, r"sigma_w"),
    ("n_train", 0, r"n_train \(training-set size \|D\|\) must be an integer >= 1"),
    ("n_test", 0, r"n_test \(test-set size\) must be an integer >= 1"),
    ("w_max", 0.0, r"w_max"),
    ("layers", (3, 32, 16), r"layers must be four positive integers \(n0, n1, n2, n3\)"),
    ("layers", (3, 0, 16, 1), r"layers must be four positive integers"),
    ("layers", (3, 32.0, 16, 1), r"layers must be four positive integers"),
    ("layers", (3, 32, 16, 2), r"output width n3 must be 1"),
    ("layers", (3, 16, 32, 1), r"n2 must be in \[2, n1 = 16\] .*; got n2 = 32"),
    ("layers", (3, 32, 1, 1), r"n2 must be in \[2, n1 = 32\]"),
])
def test_bad_parameter_raises(field, value, message):
    with pytest.raises(ValueError, match=message):
        dyson.Params(**{"eps": 0.5, field: value})


def test_temperature_and_disorder_axes():
    p = dyson.Params.from_temperature(0.25, 8.0, batch=4)
    assert p.eps == 1.0 and p.T == 0.25 and p.sigma_w == 0.125 and p.inv_sigma_w == 8.0
    assert p.r == 0.5 and p.layers == (3, 32, 16, 1)
    with pytest.raises(ValueError, match=r"T \(temperature eps/\|B\|\) must be a finite number in \(0"):
        dyson.Params.from_temperature(-1.0, 1.0)
    with pytest.raises(ValueError, match=r"inv_sigma_w \(disorder 1/sigma_w\)"):
        dyson.Params.from_temperature(1.0, 0.0)
    with pytest.raises(AttributeError):
        p.eps = 2.0
    assert p.attrs()["T"] == 0.25 and p.attrs()["layers"] == [3, 32, 16, 1]


def test_bad_run_arguments_raise():
    p = dyson.Params(eps=0.5)
    with pytest.raises(ValueError, match=r"steps \(number of SGD steps\) must be an integer >= 1"):
        dyson.train_ensemble(p, 0, seed=0, n_models=2)
    with pytest.raises(ValueError, match=r"n_models \(ensemble size\) must be an integer >= 1"):
        dyson.train_ensemble(p, 10, seed=0, n_models=0)
    with pytest.raises(ValueError, match=r"seed must be a non-negative integer"):
        dyson.train_ensemble(p, 10, seed=-1, n_models=2)
    with pytest.raises(ValueError, match=r"spacing must be one of .*'log\+linear'.*; got 'cubic'"):
        dyson.train_ensemble(p, 10, seed=0, n_models=2, spacing="cubic")
    with pytest.raises(ValueError, match=r"params must be a dyson.Params"):
        dyson.train_ensemble({"eps": 0.5}, 10, seed=0, n_models=2)


def test_from_temperature_checks_the_batch_first():
    with pytest.raises(ValueError, match=r"batch \(mini-batch size \|B\|\) must be an integer >= 1; got 0"):
        dyson.Params.from_temperature(1.0, 1.0, batch=0)
