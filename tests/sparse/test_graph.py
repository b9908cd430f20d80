"""Random d-regular bipartite supports: exact degrees, no duplicates, clear failures."""

import numpy as np
import pytest

from tsdyn import sparse
from tsdyn.sparse.graph import neighbours

SIZES = [(1, 1), (2, 1), (2, 2), (3, 2), (5, 3), (7, 4), (10, 1), (10, 9), (10, 10), (20, 19),
         (50, 2), (50, 6), (64, 3), (100, 25), (128, 64), (200, 4), (400, 8)]


@pytest.mark.parametrize("N, d", SIZES)
def test_exactly_d_ones_per_row_and_column(N, d):
    for seed in range(3):
        mask = sparse.regular_bipartite(N, d, seed=seed)
        assert mask.shape == (N, N)
        # 0/1 entries: a duplicate edge would show up as a 2 (or a missing degree)
        assert set(np.unique(mask)) <= {0, 1}
        assert np.all(mask.sum(axis=1) == d) and np.all(mask.sum(axis=0) == d)


def test_same_seed_same_graph_and_seeds_differ():
    a = sparse.regular_bipartite(100, 4, seed=1)
    np.testing.assert_array_equal(a, sparse.regular_bipartite(100, 4, seed=1))
    np.testing.assert_array_equal(a, sparse.regular_bipartite(100, 4, seed=np.random.SeedSequence(1)))
    assert not np.array_equal(a, sparse.regular_bipartite(100, 4, seed=2))


def test_edges_are_spread_uniformly():
    """Each of the N^2 positions is an edge with probability d/N: over 200 graphs the
    count at every position is Binomial(200, d/N); the total chi-square over all
    positions must be within 5 standard deviations of its mean (N^2 - 1 dof)."""
    N, d, n = 20, 3, 200
    counts = sum(sparse.regular_bipartite(N, d, seed=s).astype(int) for s in range(n))
    p = d / N
    chi2 = np.sum((counts - n * p) ** 2 / (n * p * (1 - p)))
    dof = N * N
    assert abs(chi2 - dof) < 5 * np.sqrt(2 * dof)


def test_avoid_gives_a_disjoint_graph():
    teacher = sparse.regular_bipartite(60, 4, seed=0)
    extra = sparse.regular_bipartite(60, 3, seed=1, avoid=teacher)
    assert not np.any(teacher & extra)
    assert np.all(extra.sum(0) == 3) and np.all(extra.sum(1) == 3)


@pytest.mark.parametrize("N, d, message", [
    (5, 6, r"d \(ones per row and column\) must be <= N = 5; got 6"),
    (5, 0, r"d \(ones per row and column\) must be an integer >= 1; got 0"),
    (5, -2, r"d \(ones per row and column\) must be an integer >= 1; got -2"),
    (0, 1, r"N \(number of rows and columns\) must be an integer >= 1; got 0"),
    (5, 2.0, r"d \(ones per row and column\) must be an integer"),
])
def test_impossible_graphs_fail_clearly(N, d, message):
    with pytest.raises(ValueError, match=message):
        sparse.regular_bipartite(N, d, seed=0)


def test_avoid_leaving_too_few_positions_fails_clearly():
    teacher = sparse.regular_bipartite(6, 4, seed=0)
    with pytest.raises(ValueError, match=r"must be <= N - 4 = 2 \(positions left free by avoid\); got 3"):
        sparse.regular_bipartite(6, 3, seed=0, avoid=teacher)


def test_bad_seed_fails_clearly():
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        sparse.regular_bipartite(5, 2, seed=-1)


def test_neighbours_lists_the_columns_and_rejects_irregular_masks():
    mask = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    np.testing.assert_array_equal(neighbours(mask), [[0, 1], [1, 2], [0, 2]])
    with pytest.raises(ValueError, match="same number of ones in every row and column"):
        neighbours(np.array([[1, 1], [0, 1]]))
