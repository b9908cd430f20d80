"""Seeds of a run: one SeedSequence, split into named independent streams."""

import numpy as np

# Child index of each stream; fixed, so adding a stream never changes the others.
STREAMS = {"teacher_graph": 0, "teacher_signs": 1, "student_graph": 2, "student_init": 3,
           "validation": 4, "batches": 5, "moves": 6,
           "proposals": 7, "dense_init": 8}


def seed_sequence(seed):
    """``seed`` as a SeedSequence (a non-negative int or a SeedSequence)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed))
    raise ValueError(f"seed must be a non-negative integer or a numpy SeedSequence; got {seed!r}")


def stream(seed, name):
    """The child SeedSequence ``name`` of ``seed``.

    Built from the entropy and spawn key rather than ``SeedSequence.spawn`` (which is
    stateful), so the same seed gives the same children on every call.
    """
    ss = seed_sequence(seed)
    return np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, STREAMS[name]),
                                  pool_size=ss.pool_size)


def rng(seed, name):
    """A numpy Generator on the stream ``name`` of ``seed``."""
    return np.random.default_rng(stream(seed, name))
