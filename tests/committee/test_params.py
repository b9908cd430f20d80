"""Every invalid parameter raises a ValueError naming it."""

import math

import numpy as np
import pytest

from tsdyn import committee

GOOD = dict(N=100, M=2, K=2, eta=0.5)


@pytest.mark.parametrize("field, value, message", [
    ("N", 0, r"N \(input dimension\) must be an integer >= 1"),
    ("M", 0, r"M \(teacher hidden units\) must be an integer >= 1"),
    ("K", -1, r"K \(student hidden units\) must be an integer >= 1; got -1"),
    ("K", 2.5, r"K .* must be an integer"),
    ("batch", 0, r"batch \(mini-batch size B\) must be an integer >= 1"),
    ("eta", 0.0, r"eta \(learning rate\) must be a finite number in \(0"),
    ("eta", -0.1, r"eta \(learning rate\) must be a finite number"),
    ("eta", math.nan, r"eta \(learning rate\) must be a finite number"),
    ("eta", math.inf, r"eta \(learning rate\) must be a finite number"),
    ("eta_v", 0.0, r"eta_v \(second-layer learning rate\)"),
    ("sigma", -0.01, r"sigma \(label noise\) must be a finite number in \[0"),
    ("sigma", math.nan, r"sigma \(label noise\)"),
    ("weight_decay", -1.0, r"weight_decay"),
    ("g", "tanh", r"g \(activation\) must be one of \('erf', 'linear', 'relu'\); got 'tanh'"),
    ("v_star", math.inf, r"v_star"),
    ("w_star_std", 0.0, r"w_star_std"),
    ("w_init_std", -1.0, r"w_init_std"),
    ("train_second_layer", "yes", r"train_second_layer must be True or False"),
])
def test_bad_parameter_raises(field, value, message):
    with pytest.raises(ValueError, match=message):
        committee.Params(**{**GOOD, field: value})


def test_params_are_frozen_and_flat_attrs():
    p = committee.Params(**GOOD)
    with pytest.raises(AttributeError):
        p.eta = 1.0
    attrs = p.attrs()
    assert attrs["eta_v"] == "None" and attrs["train_second_layer"] == 0
    assert p.eta_second == p.eta


@pytest.mark.parametrize("kwargs, message", [
    (dict(Q0=np.eye(3)), r"Q0 must have shape \(2, 2\)"),
    (dict(R0=np.zeros((2, 3))), r"R0 must have shape \(2, 2\)"),
    (dict(T=np.array([[1.0, 2.0], [2.0, 1.0]])), r"T \(teacher overlaps\) must be positive definite"),
    (dict(Q0=np.array([[1.0, 0.5], [0.4, 1.0]])), r"Q0 must be symmetric"),
    (dict(Q0=np.eye(2), R0=2 * np.eye(2)), r"must be positive semi-definite"),
    (dict(Q0=np.array([[np.nan, 0], [0, 1.0]])), r"Q0 must be finite"),
])
def test_bad_initial_state_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        committee.ode(committee.Params(**GOOD), 1.0, **kwargs)


def test_bad_run_arguments_raise():
    p = committee.Params(**GOOD)
    with pytest.raises(ValueError, match=r"t_max .* must be a finite number in \(0"):
        committee.simulate(p, -1.0, seed=0)
    with pytest.raises(ValueError, match=r"seed must be a non-negative integer"):
        committee.simulate(p, 1.0, seed=-3)
    with pytest.raises(ValueError, match=r"n_points .* must be an integer >= 2"):
        committee.ode(p, 1.0, n_points=1)
    with pytest.raises(ValueError, match=r"spacing must be 'linear' or 'log'"):
        committee.ode(p, 1.0, spacing="cubic")
