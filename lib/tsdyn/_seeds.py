"""Seeds of a run: one ``numpy.random.SeedSequence``, split into independent children.

Every simulation takes ``seed`` (a non-negative integer or a SeedSequence, as
:func:`tsdyn.sweep.run` passes) and derives its random streams with :func:`child`,
which builds the child from the entropy and spawn key instead of the stateful
``SeedSequence.spawn``: the same seed gives the same streams on every call, and a
stream's index fixes it, so adding a stream never changes the others.
"""

import numpy as np


def seed_sequence(seed):
    """``seed`` as a SeedSequence (a non-negative int or a SeedSequence)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed))
    raise ValueError(f"seed must be a non-negative integer or a numpy SeedSequence; got {seed!r}")


def child(seed, *index):
    """The child SeedSequence of ``seed`` at ``index`` (one or more non-negative ints)."""
    ss = seed_sequence(seed)
    return np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, *index),
                                  pool_size=ss.pool_size)


def children(seed, n):
    """The first ``n`` children of ``seed``: ``[child(seed, 0), ..., child(seed, n - 1)]``."""
    return [child(seed, i) for i in range(n)]
