"""The simulation: determinism, unit norms, streaming, the two samplers, recovery, divergence."""

import importlib

import numpy as np
import pytest
from scipy.stats import ks_2samp

from tsdyn import largebatch as lb
simmod = importlib.import_module("tsdyn.largebatch.simulate")


@pytest.mark.parametrize("sampler", ["full", "reduced"])
def test_same_seed_gives_bit_identical_runs_whatever_the_recording(sampler):
    p = lb.Params(d=64, mu=0.5, delta=0.5, gamma0=0.3, p=2, noise=0.1)
    a = lb.simulate(p, 40, seed=3, n_points=11, sampler=sampler)
    b = lb.simulate(p, 40, seed=np.random.SeedSequence(3), n_points=11, sampler=sampler)
    c = lb.simulate(p, 40, seed=3, n_points=3, sampler=sampler)  # other block boundaries
    np.testing.assert_array_equal(a.M.values, b.M.values)
    np.testing.assert_array_equal(a.M.values[-1], c.M.values[-1])
    np.testing.assert_array_equal(a.Q.values[-1], c.Q.values[-1])
    d = lb.simulate(p, 40, seed=4, n_points=11, sampler=sampler)
    assert not np.array_equal(a.M.values[-1], d.M.values[-1])


@pytest.mark.parametrize("sampler", ["full", "reduced"])
@pytest.mark.parametrize("loss, algorithm", [("square", "projected"), ("correlation", "projected"),
                                             ("square", "spherical")])
def test_projection_keeps_unit_norms(sampler, loss, algorithm):
    p = lb.Params(d=128, mu=1.0, delta=0.0, gamma0=2.0, p=3, k=2, target="staircase",
                  activation="relu", loss=loss, algorithm=algorithm, noise=0.5)
    ds = lb.simulate(p, 30, seed=0, n_points=7, sampler=sampler)
    # float64 renormalisation: |w| = 1 to a few ulps after every step
    np.testing.assert_allclose(np.diagonal(ds.Q.values, axis1=1, axis2=2), 1.0, atol=1e-13)
    assert ds.M.dims == ("t", "j", "r") and ds.t.attrs["units"] == "SGD steps"
    assert ds.attrs["n_b"] == 128 and ds.attrs["kind"] == "simulation"


def test_batches_larger_than_a_chunk_are_streamed_with_the_same_result(monkeypatch):
    """A chunk of 3 rows (batch of 10 streamed in 4 chunks) gives the same run bit for
    bit: the inputs are drawn in the same order and summed in the same order."""
    p = lb.Params(d=32, n0=10.0, mu=0.0, gamma0=0.2, noise=0.2)
    whole = lb.simulate(p, 12, seed=5, n_points=4)
    monkeypatch.setattr(simmod, "_BLOCK_NUMBERS", 3 * 32)
    streamed = lb.simulate(p, 12, seed=5, n_points=4)
    np.testing.assert_array_equal(whole.M.values, streamed.M.values)
    # the reduced sampler streams its batch too (same law, other draws: just run it)
    monkeypatch.setattr(simmod, "_BLOCK_NUMBERS", 3 * 2)
    assert np.all(np.isfinite(lb.simulate(p, 12, seed=5, n_points=4, sampler="reduced").M))


@pytest.mark.parametrize("p_units, loss", [(1, "square"), (2, "square"), (2, "correlation")])
def test_reduced_sampler_has_the_law_of_the_full_one(p_units, loss):
    """Same Markov chain in law: after 6 steps from a warm start, the overlaps of 150
    independent runs of each sampler pass a two-sample KS test (p > 1e-3 for each
    of the statistics, a false alarm rate of ~1e-3 per statistic)."""
    p = lb.Params(d=48, n0=8.0, mu=0.0, gamma0=0.4, p=p_units, target="he2", activation="he2",
                  m0=0.3, loss=loss, noise=0.1)
    stats = {}
    for sampler in ("full", "reduced"):
        runs = [lb.simulate(p, 6, seed=s, n_points=2, sampler=sampler) for s in range(150)]
        stats[sampler] = np.array([np.concatenate([r.M.values[-1].ravel(), r.Q.values[-1][np.triu_indices(p_units, 1)]])
                                   for r in runs])
    for col in range(stats["full"].shape[1]):
        assert ks_2samp(stats["full"][:, col], stats["reduced"][:, col]).pvalue > 1e-3


def test_recovery_time_matches_the_recorded_crossing():
    p = lb.Params(d=64, mu=1.0, delta=0.0, gamma0=0.3, target="he2", activation="he2", eta=0.5)
    ds = lb.simulate(p, 200, seed=1, n_points=201)
    crossed = ds.t.values[ds.overlap.values >= p.eta]
    assert bool(ds.recovered) and float(ds.t_recovery) == crossed[0]
    rt = lb.recovery_time(p, 200, seed=1, sampler="full")  # same streams, stops at recovery
    assert rt["T"] == crossed[0] and rt["samples"] == crossed[0] * p.n_b and rt["steps_run"] == rt["T"]
    none = lb.recovery_time(p, 2, seed=1, sampler="full")
    assert not none["recovered"] and np.isinf(none["T"])


def test_divergence_is_recorded_not_raised():
    """gamma = 1e200: |w + gamma g|^2 overflows to inf at the first step."""
    p = lb.Params(d=16, gamma0=1e200, target="he4", activation="he4")
    ds = lb.simulate(p, 10, seed=0, n_points=11)
    assert bool(ds.diverged) and float(ds.t_diverged) == 1.0
    assert np.all(np.isnan(ds.M.values[1:])) and np.all(np.isfinite(ds.M.values[0]))
    assert lb.recovery_time(p, 10, seed=0)["diverged"]


def test_initial_overlaps():
    p = lb.Params(d=400, p=3, k=2, target="prod", m0=0.25)
    Wstar, W = lb.initial_weights(p, 0)
    np.testing.assert_allclose(Wstar @ Wstar.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(W @ Wstar.T, [[0.25, 0], [0, 0.25], [0.25, 0]], atol=1e-12)
    q = lb.Params(d=400, p=50, target="he3")
    Wstar, W = lb.initial_weights(q, 0)
    m = W @ Wstar[0]
    assert np.all(m >= 0) and 0.5 < np.sqrt(400) * np.sqrt(np.mean(m ** 2)) < 1.5  # |m| ~ d^-1/2


def test_bad_run_arguments():
    p = lb.Params(d=16)
    with pytest.raises(ValueError, match=r"steps \(number of SGD steps\) must be an integer >= 1"):
        lb.simulate(p, 0, seed=0)
    with pytest.raises(ValueError, match="sampler must be one of"):
        lb.simulate(p, 5, seed=0, sampler="fast")
    with pytest.raises(ValueError, match="seed must be"):
        lb.simulate(p, 5, seed=-1)
