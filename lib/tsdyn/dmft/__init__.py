"""DMFT of multi-pass (persistent) SGD on Gaussian mixtures (Mignacco et al., NeurIPS 2020).

Simulation at finite d (:func:`simulate`) and theory (:func:`solve`, the DMFT; and
:func:`exact_square_gd`, the exact square-loss solution) share only :class:`Params`
and the model's pointwise functions (:mod:`tsdyn.dmft.model`).
"""

from .analysis import (bias_check, crossing_times, curve_seed, deviations, difference, escape_times,
                       fdr_temperature, finite_d_sweep, log_windows, max_z, mean_se,
                       median_ci, median_difference_ci, paired_ratio, simulate_seeds, solve_seeds,
                       value_at, window_deviations, window_means, yardstick, z_scores)
from .experiments import (FDR_CANDIDATES, FDR_MODEL, RULE_MODEL, fdr_check, fdr_scan, kicked_fdr_check,
                          matched_step_gd, matched_step_runs, scaling_rule_scan, step_or_noise)
from .finite_d import crossing_time, escape_spread, largest_deviation, shifted_theory, time_deviations
from .response import kicked_response
from .exact import exact_square_gd, marchenko_pastur
from .model import generalisation_error
from .params import Params
from .simulate import batch_indicators, simulate, simulate_point
from .solve import ConvergenceError, iteration_history, solve

__all__ = ["Params", "simulate", "simulate_point", "batch_indicators", "solve",
           "iteration_history", "ConvergenceError", "exact_square_gd", "marchenko_pastur",
           "generalisation_error",
           "simulate_seeds", "solve_seeds", "max_z", "z_scores", "deviations",
           "window_means", "window_deviations", "log_windows", "yardstick", "mean_se",
           "difference", "curve_seed", "bias_check", "finite_d_sweep", "crossing_times", "median_ci",
           "escape_times", "median_difference_ci", "matched_step_gd", "matched_step_runs",
           "step_or_noise", "scaling_rule_scan", "RULE_MODEL", "value_at", "paired_ratio",
           "fdr_temperature", "fdr_check", "FDR_MODEL", "fdr_scan", "FDR_CANDIDATES",
           "kicked_fdr_check", "kicked_response", "time_deviations", "largest_deviation",
           "crossing_time", "escape_spread", "shifted_theory"]
