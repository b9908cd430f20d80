"""What a success threshold counts: fixed-m tests of the drift with N, and the runs under it.

The crossing of the success fraction through 1/2 (:func:`.critical_batch`) rests on a
threshold on the final Hamming distance (H < 0.25, the paper's Fig. 2). Two checks of that
estimator, both on the runs themselves:

- :func:`fixed_m_drift`: at each m, do the success fractions at two sizes N differ? Fisher's
  exact test on the 2 x 2 table of successes and failures. Unlike the comparison of two
  crossings, whose errors contain the step of the m grid, this is a statistical test.
- :func:`success_census`: of the runs counted as successes, how many reached the teacher
  (H = 0) and how many end just under the threshold (``lo`` <= H < threshold), partly
  recovered runs that a slightly stricter threshold would count as failures.
"""

import numpy as np
from scipy.stats import fisher_exact

from .. import _validate


def fixed_m_drift(m, success_a, success_b):
    """Fisher's exact test, at every m, of the success fractions of two sizes.

    ``success_a``, ``success_b`` (m, runs) booleans (e.g. the smallest and the largest N of a
    finite-size study). Returns a dict: ``p`` (m,) two-sided p values, ``frac_a``, ``frac_b``
    (m,), ``n_a``, ``n_b`` (runs), and ``m_min``, ``p_min``: the m with the smallest p (the
    first one if several tie) and that p.
    """
    m = np.asarray(m, float)
    a, b = np.asarray(success_a, bool), np.asarray(success_b, bool)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != len(m) or b.shape[0] != len(m):
        raise ValueError(f"success_a and success_b must have shape (m, runs) with {len(m)} values of m; "
                         f"got {a.shape} and {b.shape}")
    p = np.array([fisher_exact([[int(a[k].sum()), int((~a[k]).sum())],
                                [int(b[k].sum()), int((~b[k]).sum())]]).pvalue for k in range(len(m))])
    k = int(np.argmin(p))
    return {"p": p, "frac_a": a.mean(1), "frac_b": b.mean(1), "n_a": a.shape[1], "n_b": b.shape[1],
            "m_min": float(m[k]), "p_min": float(p[k])}


def success_census(hamming, threshold, lo=0.05):
    """Counts of the runs under the success threshold by where they end.

    ``hamming`` (..., runs) final Hamming distances. Returns a dict of arrays over the leading
    axes: ``success`` (H < ``threshold``), ``teacher`` (H = 0), ``near`` (``lo`` <= H <
    ``threshold``: partly recovered, just under the threshold) and ``runs``.
    """
    h = np.asarray(hamming, float)
    _validate.real("threshold", threshold, low=0.0, high=1.0, low_open=True, doc="success threshold on H")
    _validate.real("lo", lo, low=0.0, high=threshold, doc="lower end of the band under the threshold")
    if h.size == 0 or np.isnan(h).any():
        raise ValueError(f"hamming must be a non-empty array without NaN; got size {h.size}")
    return {"success": np.sum(h < threshold, -1), "teacher": np.sum(h == 0, -1),
            "near": np.sum((h >= lo) & (h < threshold), -1), "runs": h.shape[-1]}
