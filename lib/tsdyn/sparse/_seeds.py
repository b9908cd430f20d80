"""Seeds of a run: one SeedSequence, split into named independent streams."""

import numpy as np

from .._seeds import child, seed_sequence  # noqa: F401  (seed_sequence: re-exported)

# Child index of each stream; fixed, so adding a stream never changes the others.
STREAMS = {"teacher_graph": 0, "teacher_signs": 1, "student_graph": 2, "student_init": 3,
           "validation": 4, "batches": 5, "moves": 6,
           "proposals": 7, "dense_init": 8}


def stream(seed, name):
    """The child SeedSequence ``name`` of ``seed`` (see :func:`tsdyn._seeds.child`)."""
    return child(seed, STREAMS[name])


def rng(seed, name):
    """A numpy Generator on the stream ``name`` of ``seed``."""
    return np.random.default_rng(stream(seed, name))
