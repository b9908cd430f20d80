"""Random d-regular bipartite graphs: the supports of the sparse weight matrices.

The teacher's matrices of Marino & Ricci-Tersenghi (sec. 4.1) are N x N with exactly
d non-zero entries in every row and every column at random positions, i.e. the
bi-adjacency matrix of a random d-regular bipartite graph between N inputs and N
hidden units (or N hidden units and N outputs).
"""

import numpy as np

from .. import _validate
from ._seeds import seed_sequence

# Degree-preserving switches tried per duplicate edge before giving up; the
# expected number needed is O(1) whenever d << N (see _repair).
_MAX_SWITCH_TRIES = 10_000


def regular_bipartite(N, d, *, seed, avoid=None):
    """Bi-adjacency matrix of a random d-regular bipartite graph on N + N vertices.

    Built as the configuration model (every row gets d stubs, every column d stubs,
    stubs matched by a uniform random permutation), then repaired: each duplicate
    edge, and each edge that falls on ``avoid``, is moved by a degree-preserving
    switch (u, v), (u', v') -> (u, v'), (u', v) with a random partner edge, accepted
    only if it creates no new duplicate or forbidden edge. Degrees never change,
    so the result has exactly d ones per row and per column. For d > N / 2 (and no
    ``avoid``) the complement of an (N - d)-regular graph is returned, which keeps
    the repair fast up to the complete graph d = N.

    Parameters
    ----------
    N : int
        Number of rows (inputs) = number of columns (hidden units), >= 1.
    d : int
        Ones per row and per column, 1 <= d <= N (d <= N - k when ``avoid`` has k
        ones per row and column).
    seed : int or numpy.random.SeedSequence
        Same seed, same graph.
    avoid : ndarray, shape (N, N), optional
        0/1 matrix of positions the graph must not use (the teacher's edges, when
        drawing the extra edges of a mismatched student).

    Returns
    -------
    ndarray, shape (N, N), dtype int8
        mask[i, j] = 1 iff row i and column j are joined.

    Raises
    ------
    ValueError
        N < 1, d < 1, d > N, or d larger than the free positions per row and column
        left by ``avoid``.
    RuntimeError
        The repair did not converge (only for graphs close to complete, with ``avoid``).
    """
    _validate.integer("N", N, low=1, doc="number of rows and columns")
    _validate.integer("d", d, low=1, doc="ones per row and column")
    if d > N:
        raise ValueError(f"d (ones per row and column) must be <= N = {N}; got {d}")
    rng = np.random.default_rng(seed_sequence(seed))
    if avoid is None:
        if d == N:
            return np.ones((N, N), dtype=np.int8)
        if 2 * d > N:
            return (1 - regular_bipartite(N, N - d, seed=seed)).astype(np.int8)
        forbidden = np.zeros((N, N), dtype=bool)
    else:
        forbidden = np.asarray(avoid).astype(bool)
        if forbidden.shape != (N, N):
            raise ValueError(f"avoid must have shape ({N}, {N}); got {forbidden.shape}")
        k_row, k_col = forbidden.sum(1).max(), forbidden.sum(0).max()
        if d > N - max(k_row, k_col):
            raise ValueError(f"d (ones per row and column) must be <= N - {max(k_row, k_col)} "
                             f"= {N - max(k_row, k_col)} (positions left free by avoid); got {d}")
    rows = np.repeat(np.arange(N), d)
    cols = rng.permutation(np.repeat(np.arange(N), d))
    return _repair(rows, cols, forbidden, rng, N)


def _repair(rows, cols, forbidden, rng, N):
    """Remove duplicate and forbidden edges by degree-preserving switches."""
    count = np.zeros((N, N), dtype=np.int64)
    np.add.at(count, (rows, cols), 1)
    n_edges = len(rows)
    bad = [e for e in range(n_edges)
           if count[rows[e], cols[e]] > 1 or forbidden[rows[e], cols[e]]]
    for e in bad:
        u, v = rows[e], cols[e]
        if count[u, v] == 1 and not forbidden[u, v]:
            continue  # an earlier switch already fixed this edge's duplicate
        for _ in range(_MAX_SWITCH_TRIES):
            f = int(rng.integers(n_edges))
            u2, v2 = rows[f], cols[f]
            if (u2 == u or v2 == v or count[u, v2] or count[u2, v] or forbidden[u, v2]
                    or forbidden[u2, v] or count[u2, v2] > 1 or forbidden[u2, v2]):
                continue
            count[u, v] -= 1
            count[u2, v2] -= 1
            count[u, v2] += 1
            count[u2, v] += 1
            cols[e], cols[f] = v2, v
            break
        else:
            raise RuntimeError(f"could not draw a {int(count.sum(1)[0])}-regular bipartite "
                               f"graph on {N} + {N} vertices avoiding the given edges")
    mask = count.astype(np.int8)
    return mask


def neighbours(mask):
    """Column indices of the ones of each row, shape (N, d), sorted (mask must be regular)."""
    mask = np.asarray(mask)
    d = int(mask[0].sum())
    if not (np.all(mask.sum(1) == d) and np.all(mask.sum(0) == d) and set(np.unique(mask)) <= {0, 1}):
        raise ValueError("mask must be a 0/1 matrix with the same number of ones in every row "
                         "and column")
    return np.nonzero(mask)[1].reshape(mask.shape[0], d).astype(np.int64)
