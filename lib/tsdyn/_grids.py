"""Recording grids shared by the simulations and theories that count time in whole steps."""

import numpy as np

from . import _validate

SPACINGS = ("log", "linear", "log+linear")


def integer_grid(total, n_points, spacing="log", *, name="steps", doc="number of SGD steps"):
    """Whole-step recording times in [0, ``total``], 0 and ``total`` included, duplicates dropped.

    ``"log"``: 0, then ``n_points - 1`` geometric values from 1 to ``total`` (fine early on a
    log axis); ``"linear"``: ``n_points`` evenly spaced values; ``"log+linear"``: the union of
    both (fine early, and no interval longer than total / (n_points - 1) late). Values are
    rounded to whole steps, so a short run has fewer than ``n_points`` times. ``name`` and
    ``doc`` name ``total`` in error messages.
    """
    _validate.integer(name, total, low=1, doc=doc)
    _validate.integer("n_points", n_points, low=2, doc="number of recording times")
    log = np.concatenate([[0.0], np.geomspace(1.0, total, n_points - 1)])
    lin = np.linspace(0.0, total, n_points)
    grids = {"log": (log,), "linear": (lin,), "log+linear": (log, lin)}
    if spacing not in grids:
        raise ValueError(f"spacing must be one of {SPACINGS}; got {spacing!r}")
    # total is added explicitly: with n_points = 2 the geometric part is the single value 1
    return np.unique(np.round(np.concatenate([*grids[spacing], [total]])).astype(np.int64))
