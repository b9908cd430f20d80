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
    ("w_init_std", 0.0, r"w_init_std .*ReLU.* must be a finite number in \(0"),
    ("train_second_layer", "yes", r"train_second_layer must be True or False"),
])
def test_bad_parameter_raises(field, value, message):
    bad = {**GOOD, field: value}
    if "ReLU" in message:
        bad["g"] = "relu"
    with pytest.raises(ValueError, match=message):
        committee.Params(**bad)


def test_zero_initial_weights_allowed_for_smooth_units():
    committee.Params(**GOOD, w_init_std=0.0)  # erf: g'(0) is defined, learning starts


@pytest.mark.parametrize("call", [committee.ode, committee.fixed_point, committee.plateau,
                                  committee.eg_star_linear_scm])
def test_functions_reject_other_parameter_objects(call):
    with pytest.raises(ValueError, match=r"params must be a committee.Params; got dict"):
        call(dict(GOOD))


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
    with pytest.raises(ValueError, match=r"t_max .* at least one step .* got -1.0"):
        committee.simulate(p, -1.0, seed=0)
    with pytest.raises(ValueError, match=r"t_max .* at least one step \(1/N = 0.01\)"):
        committee.simulate(p, 0.004, seed=0)  # rounds to zero SGD steps at N = 100
    with pytest.raises(ValueError, match=r"t_max .* must be a finite number in \(0"):
        committee.ode(p, -1.0)
    with pytest.raises(ValueError, match=r"seed must be a non-negative integer"):
        committee.simulate(p, 1.0, seed=-3)
    with pytest.raises(ValueError, match=r"n_points .* must be an integer >= 2"):
        committee.ode(p, 1.0, n_points=1)
    with pytest.raises(ValueError, match=r"spacing must be 'linear', 'log' or 'log\+linear'"):
        committee.ode(p, 1.0, spacing="cubic")


@pytest.mark.parametrize("fn, changes, message", [
    # each formula states its assumptions; a violated one is an error, not a wrong number
    (committee.eg_star_linear_scm, dict(g="erf"), r"g='linear'"),
    (committee.eg_star_linear_scm, dict(g="linear", v_star=2.0), r"fixed v = v\* = 1"),
    (committee.eg_star_linear_scm, dict(g="linear", train_second_layer=True), r"fixed v = v\* = 1"),
    (committee.eg_star_linear_scm, dict(g="linear", weight_decay=0.1), r"without weight decay"),
    (committee.eg_star_erf_scm_small_eta, dict(v_init=0.5), r"fixed v = v\* = 1"),
    (committee.eg_star_erf_scm_small_eta, dict(w_star_std=2.0), r"T = I"),
    (committee.eg_star_erf_both_layers_small_eta, dict(M=1), r"both layers trained"),
    (committee.plateau, dict(g="linear"), r"g='erf'"),
    (committee.plateau, dict(K=1, M=1), r"K == M >= 2"),
    (committee.plateau, dict(K=3), r"K == M >= 2"),
])
def test_asymptotic_formulas_check_their_assumptions(fn, changes, message):
    with pytest.raises(ValueError, match=message):
        fn(committee.Params(**{**GOOD, **changes}))


@pytest.mark.parametrize("kwargs, message", [
    (dict(K=0), r"K \(student hidden units\) must be an integer >= 1"),
    (dict(K=2, batch=0), r"batch \(mini-batch size B\)"),
    (dict(K=2, N=0), r"N \(input dimension\)"),
])
def test_max_stable_eta_rejects_bad_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        committee.max_stable_eta_linear_scm(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(Q=np.eye(2), R=2 * np.eye(2)), r"\[\[Q, R\], \[R\^T, T\]\] must be positive semi-definite"),
    (dict(Q=np.eye(2), R=np.zeros((2, 2)), v=np.ones(3)), r"v must have shape \(2,\)"),
    (dict(Q=np.eye(3), R=np.zeros((2, 2))), r"Q must have shape \(2, 2\)"),
    (dict(Q=np.eye(2), R=np.zeros(2)), r"Q and R must be matrices"),
])
def test_generalisation_error_rejects_bad_overlaps(kwargs, message):
    args = dict(T=np.eye(2), v=1.0, v_star=1.0, g="erf") | kwargs
    with pytest.raises(ValueError, match=message):
        committee.generalisation_error(**args)
