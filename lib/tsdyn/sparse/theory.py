"""What the paper's theory predicts: a counting argument for the critical mini-batch size.

Marino & Ricci-Tersenghi (end of sec. 4.1 and of sec. 4.3) compare the number of
discrete parameters the student must infer with the number of real numbers one
mini-batch provides. Inference from one mini-batch cannot be expected before the
second reaches the first, so m_c should scale like the ratio:

- two matrices (ST-SS-2M): 2 N d signs; a sample gives N inputs and N outputs, a
  mini-batch 2 m N numbers, so m_c ~ d (independent of N);
- one matrix (ST-SS-1M): N d signs; a sample gives one informative output, so
  m_c ~ N d.

The argument fixes the scaling, not the prefactor: :func:`counting_m_c` returns
the value at which the two counts are equal (prefactor 1), to be drawn over the
measured m_c. Nothing here reads a simulation.
"""

import numpy as np

from .. import _validate
from .params import MODELS


def counting_m_c(model, N, d):
    """Mini-batch size at which the numbers in one mini-batch equal the unknown signs.

    ``d`` may be an array. two_matrix: 2 N d / (2 N) = d. one_matrix: N d / 1 = N d.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}; got {model!r}")
    _validate.integer("N", N, low=1, doc="inputs = hidden units")
    d = np.asarray(d, float)
    if np.any(d < 1):
        raise ValueError(f"d (non-zeros per row and column) must be >= 1; got {d}")
    return d if model == "two_matrix" else N * d


def random_student_hamming(ternary=False):
    """Expected normalised Hamming distance of a student drawn at random on its support:
    1/2 for +-1 weights, 2/3 for uniform weights in {-1, 0, +1} (each of the three
    values is right with probability 1/3, whatever the teacher's value)."""
    return 2.0 / 3.0 if ternary else 0.5
