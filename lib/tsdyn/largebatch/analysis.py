"""Numbers the chapter quotes, computed from simulation or theory outputs (no simulation here).

Exponent fits (:func:`fit_theta`, :func:`local_theta`), the step-budget line of the
phase diagram (:func:`budget_delta`), the agreement of two phase diagrams
(:func:`phase_agreement`) and the one-step overlap of a giant step
(:func:`giant_step_overlap`).
"""

import numpy as np

from .. import _validate
from ..stats import fit_line


def _log_correction(ds, ell, eta):
    # For ell = 2 the drift is linear in m, so T ~ d^theta ln(eta sqrt d) / rate: the
    # logarithm is divided out before fitting the power (Arnaboldi et al. 2024, "phase
    # diagram"; derived in the chapter). ell >= 3 has no such factor.
    return np.log(np.log(eta * np.sqrt(ds))) if ell == 2 else 0.0


def fit_theta(ds, T, se=None, *, ell, eta):
    """Exponent theta of T ~ d^theta (x ln(eta sqrt d) for ell = 2): weighted least squares of
    log T against log d (weights from the standard errors ``se`` of T, if given).

    Returns the dict of :func:`tsdyn.stats.fit_line` (``slope``, ``slope_se``, ...).
    """
    ds, T = np.asarray(ds, float), np.asarray(T, float)
    _validate.integer("ell", ell, low=2, doc="information exponent")
    _validate.real("eta", eta, low=0.0, high=1.0, low_open=True, high_open=True, doc="weak-recovery threshold")
    if ds.shape != T.shape or len(ds) < 2 or not np.all(T > 0) or not np.all(np.isfinite(T)):
        raise ValueError(f"T must be finite, positive and have the shape of ds (>= 2 sizes); got {T!r}")
    y = np.log(T) - _log_correction(ds, ell, eta)
    return fit_line(np.log(ds), y, None if se is None else np.asarray(se, float) / T)


def local_theta(ds, T, *, ell, eta):
    """Slopes of log T (log-corrected as in :func:`fit_theta`) between successive sizes:
    the local exponent at the geometric midpoints, which tends to theta as d grows."""
    ds, T = np.asarray(ds, float), np.asarray(T, float)
    y = np.log(T) - _log_correction(ds, ell, eta)
    return np.sqrt(ds[1:] * ds[:-1]), np.diff(y) / np.diff(np.log(ds))


def budget_delta(d, budget, gamma0, eta):
    """Learning-rate exponent above which ell = 2 runs exceed a step budget.

    From m0 = d^-1/2 the linear drift m' = m (1 + 2 gamma) (He2 target and student:
    E[F nu] = 2 m at small m, chapter Sec. 2) reaches eta after
    T = ln(eta sqrt d) / (2 gamma) steps; with gamma = gamma0 d^-delta, T = budget at
    delta = ln(2 gamma0 budget / ln(eta sqrt d)) / ln d.
    """
    return float(np.log(2 * gamma0 * budget / np.log(eta * np.sqrt(d))) / np.log(d))


def phase_agreement(fraction, theory_recovers):
    """Fraction of grid points where the simulations' verdict (at least half of the runs
    recovered) equals the theory's (boolean array of the same shape)."""
    fraction, theory_recovers = np.asarray(fraction, float), np.asarray(theory_recovers, bool)
    if fraction.shape != theory_recovers.shape:
        raise ValueError(f"fraction {fraction.shape} and theory_recovers {theory_recovers.shape} differ in shape")
    return float(np.mean((fraction >= 0.5) == theory_recovers))


def giant_step_overlap(A, noise_sq):
    """Overlap after one step with gamma -> infinity: m' = A / sqrt(A^2 + N), where A is the
    mean of <g, w*> and N = (d / n_b) E[F^2] the squared length of the noise part of g.

    At m = d^-1/2, A ~ c d^-(ell-1)/2, so m' = O(1) needs A^2 >~ d / n_b, i.e.
    n_b >~ d^ell (chapter, "giant steps")."""
    A, noise_sq = np.asarray(A, float), np.asarray(noise_sq, float)
    return A / np.sqrt(A ** 2 + noise_sq)


def optimal_batch(n_b, samples, samples_se, *, factor=2.0):
    """The optimal batch measured from sample complexities S = n_b T on a grid of batch sizes.

    Arnaboldi et al. (2024), "time/complexity trade-off": S is flat (the plateau) up to the
    optimal batch and grows beyond it. The measured optimum is the largest n_b such that it
    and every smaller grid batch have S <= ``factor`` min(S): the edge of the plateau, resolved
    to the grid spacing. Returns a dict with ``n_b`` (that batch), ``index``, ``ratio``
    (S / min S per batch), ``ratio_se`` (first-order standard error from ``samples_se``,
    ignoring that of the minimum), ``ratio_next`` (S / min S one grid point further; inf at
    the end of the grid: then the edge is only a lower bound), and ``resolved`` (whether the
    decision holds at two standard errors on both sides: ratio + 2 se <= factor at the
    optimum and ratio_next - 2 se > factor after it; False at the end of the grid).
    """
    n_b, S, se = (np.asarray(x, float) for x in (n_b, samples, samples_se))
    if not (n_b.ndim == 1 and n_b.shape == S.shape == se.shape and n_b.size >= 2):
        raise ValueError(f"n_b, samples and samples_se must be 1-d of one length >= 2; got shapes "
                         f"{n_b.shape}, {S.shape}, {se.shape}")
    if not (np.all(np.diff(n_b) > 0) and np.all(np.isfinite(S)) and np.all(S > 0)):
        raise ValueError("n_b must increase and samples be finite and > 0")
    if not (np.isfinite(factor) and factor > 1):
        raise ValueError(f"factor must be a finite number > 1; got {factor!r}")
    ratio, ratio_se = S / S.min(), se / S.min()
    inside = np.cumprod(ratio <= factor).astype(bool)
    i = int(np.flatnonzero(inside)[-1])
    nxt = float(ratio[i + 1]) if i + 1 < S.size else np.inf
    nxt_se = float(ratio_se[i + 1]) if i + 1 < S.size else 0.0
    resolved = bool(ratio[i] + 2 * ratio_se[i] <= factor and np.isfinite(nxt) and nxt - 2 * nxt_se > factor)
    return {"n_b": float(n_b[i]), "index": i, "ratio": ratio, "ratio_se": ratio_se,
            "ratio_next": nxt, "resolved": resolved}
