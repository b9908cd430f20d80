"""Bad parameters raise ValueError naming the field, the value and the allowed range."""

import pytest

from tsdyn import largebatch as lb

OK = dict(d=64, mu=1.0, delta=0.5, gamma0=0.5)


@pytest.mark.parametrize("change, match", [
    (dict(d=1), r"d \(input dimension\) must be an integer >= 2; got 1"),
    (dict(d=10.0), r"d \(input dimension\) must be an integer >= 2; got 10.0"),
    (dict(n0=0.1, mu=0.0), r"n_b \(batch size n0\*d\*\*mu = 0.1\) must be >= 1"),
    (dict(n0=0.0), r"n0 \(batch-size prefactor\) must be a finite number in \(0.0, inf\]"),
    (dict(gamma0=0.0), r"gamma0 \(learning-rate prefactor; gamma = gamma0 d\^-delta must be > 0\)"),
    (dict(gamma0=-1.0), r"gamma0 .* got -1.0"),
    (dict(eta=0.0), r"eta \(weak-recovery threshold\) must be a finite number in \(0.0, 1.0\); got 0.0"),
    (dict(eta=1.0), r"eta \(weak-recovery threshold\) .* got 1.0"),
    (dict(mu=-0.5), r"mu \(batch-size exponent\) must be a finite number in \[0.0, 4.0\]"),
    (dict(target="cosine"), r"target \(h\*\) must be one of .* got 'cosine'"),
    (dict(target="prod"), r"target \(h\*\) must be one of .* for k=1"),
    (dict(activation="sign"), r"activation \(student sigma\) must be one of"),
    (dict(loss="hinge"), r"loss must be one of \('square', 'correlation'\); got 'hinge'"),
    (dict(algorithm="adam"), r"algorithm must be one of"),
    (dict(noise=-1.0), r"noise \(label-noise variance Delta\)"),
    (dict(m0=1.0), r"m0 \(initial overlap\)"),
    (dict(p=0), r"p \(student hidden units\) must be an integer >= 1; got 0"),
    (dict(k=65), r"k \(target directions\) must be <= d=64; got 65"),
])
def test_bad_parameters(change, match):
    with pytest.raises(ValueError, match=match):
        lb.Params(**{**OK, **change})


def test_derived_quantities():
    p = lb.Params(d=256, mu=1.5, delta=0.25, n0=2.0, gamma0=0.5)
    assert p.n_b == 2 * 4096
    assert abs(p.gamma - 0.5 / 4) < 1e-15
    assert abs(p.noise_ratio - p.gamma ** 2 * 256 / p.n_b) < 1e-15
    attrs = p.attrs()
    assert attrs["n_b"] == p.n_b and attrs["m0"] == "None"


def test_multi_index_targets_need_k_at_least_two():
    lb.Params(d=16, k=2, target="prod")
    lb.Params(d=16, k=3, target="staircase")
