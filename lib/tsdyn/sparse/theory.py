"""What the paper's theory predicts: a counting argument for the critical mini-batch size.

Marino & Ricci-Tersenghi (end of sec. 4.1 and of sec. 4.3) compare the number of
discrete parameters the student must infer with the number of real numbers one
mini-batch provides. Inference from one mini-batch cannot be expected before the
second reaches the first, so m_c should scale like the ratio. Two ways of counting
the numbers a sample brings:

- ``count="outputs"`` (consistent): only the labels carry information about the
  teacher; the inputs are drawn independently of it.
  Two matrices (ST-SS-2M): 2 N d signs, N outputs per sample -> m_c ~ 2 d.
  One matrix (ST-SS-1M): N d signs, one output per sample -> m_c ~ N d.
- ``count="paper"``: the paper's own count, which is mixed. For two matrices it
  counts the N inputs together with the N outputs of a sample (2 m N numbers per
  mini-batch, so m_c ~ d, end of sec. 4.1), while for one matrix it counts the single
  output only (m_c ~ N d, sec. 4.3), as the consistent count does.

The argument fixes the scaling, not the prefactor: :func:`counting_m_c` returns
the value at which the two counts are equal (prefactor 1), to be drawn over the
measured m_c. Nothing here reads a simulation.
"""

import numpy as np

from .. import _validate
from .params import MODELS

COUNTS = ("outputs", "paper")


def counting_m_c(model, N, d, *, count="outputs"):
    """Mini-batch size at which the numbers in one mini-batch equal the unknown signs.

    ``d`` may be an array. With ``count="outputs"`` (labels only):
    two_matrix 2 N d / N = 2 d, one_matrix N d / 1 = N d. With ``count="paper"``
    (the paper's mixed count, inputs and outputs for two matrices):
    two_matrix 2 N d / (2 N) = d, one_matrix N d.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}; got {model!r}")
    if count not in COUNTS:
        raise ValueError(f"count must be one of {COUNTS}; got {count!r}")
    _validate.integer("N", N, low=1, doc="inputs = hidden units")
    d = np.asarray(d, float)
    if np.any(d < 1):
        raise ValueError(f"d (non-zeros per row and column) must be >= 1; got {d}")
    if model == "one_matrix":
        return N * d
    return d if count == "paper" else 2 * d


def random_student_hamming(ternary=False):
    """Expected normalised Hamming distance of a student drawn at random on its support:
    1/2 for +-1 weights, 2/3 for uniform weights in {-1, 0, +1} (each of the three
    values is right with probability 1/3, whatever the teacher's value)."""
    return 2.0 / 3.0 if ternary else 0.5
