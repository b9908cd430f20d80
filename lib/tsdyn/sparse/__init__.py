"""Sparse +-1 teacher-student networks and phase transitions in the mini-batch size.

Marino & Ricci-Tersenghi, "Phase transitions in the mini-batch size for sparse and
dense two-layer neural networks". A sparse teacher (d non-zeros +-1 per row and
column) is inferred by a greedy zero-temperature Metropolis rule on fresh
mini-batches (:func:`greedy`), or learnt by a dense real-valued student with
mini-batch SGD (:func:`sgd`). The paper's theory is a counting argument
(:mod:`.theory`); the simulations locate the critical mini-batch size m_c with a
defined estimator (:func:`critical_batch`) and with the paper's first zero of
the mean Hamming distance (:func:`paper_critical_batch`); :mod:`.cost` measures what the
chapter's grids cost. :func:`absorption_time` stops a greedy run at the teacher, and
:mod:`.survival` reads m_c from how that time grows with N; :mod:`.threshold` tests what
the success threshold counts.
"""

from . import cost
from . import laws
from . import survival
from . import threshold
from .absorption import absorption_point, absorption_time
from .analysis import (bootstrap, collapse, compatible_with_zero, critical_batch, crossing, first_zero, flat_runs, gap_fraction,
                       hamming, max_pairwise_z, mean_se, near_transition, paired_shift, paper_critical_batch, passage_time, resolved_minimum, success_fraction, success_interval, tp_tn_rates,
                       transition_width, width_floor)
from .cost import erf_batch_sizes
from .experiments import critical_batch_vs_lr, greedy_point, grid_seeds, rerun_stored, scaling_rule_scan, sgd_point
from .graph import regular_bipartite
from .greedy import SCHEDULES, greedy, record_sweeps
from .networks import draw_networks
from .params import Params, SGDParams
from .sgd import effective_time, samples_to_loss, sgd
from .theory import (counting_m_c, gauss_newton, gd_samples_to_loss, random_student_hamming, stability_batch,
                     top_curvature)

__all__ = [
    "Params", "SGDParams", "regular_bipartite", "draw_networks", "greedy", "sgd", "record_sweeps",
    "hamming", "tp_tn_rates", "success_fraction", "crossing", "critical_batch", "transition_width",
    "greedy_point", "sgd_point", "counting_m_c", "random_student_hamming", "success_interval",
    "mean_se", "gap_fraction", "near_transition", "max_pairwise_z", "bootstrap", "width_floor",
    "erf_batch_sizes", "cost", "resolved_minimum", "compatible_with_zero", "first_zero",
    "paper_critical_batch", "effective_time", "passage_time", "rerun_stored", "laws", "collapse",
    "flat_runs", "paired_shift", "grid_seeds", "SCHEDULES", "scaling_rule_scan", "critical_batch_vs_lr", "samples_to_loss",
    "gauss_newton", "top_curvature", "stability_batch", "gd_samples_to_loss",
    "absorption_time", "absorption_point", "survival", "threshold",
]
