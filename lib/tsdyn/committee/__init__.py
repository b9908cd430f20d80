"""Online and mini-batch SGD in two-layer teacher-student networks (Goldt et al. 2020).

Simulation (:func:`simulate`) and theory (:func:`ode`, :func:`fixed_point`, the
asymptotic formulas, and the finite-N diffusion of :mod:`.diffusion`) share only :class:`Params`.
"""

from . import diffusion
from .analysis import (arrangement_agreement, arrangement_probabilities, arrangement_test, decay_rate, escape_time, gap_exponents, growth_rate,
                       log_binned_mean, log_interp, log_ratio_drift, max_gap, paired_log_ratio,
                       plateau_stats, spread, stationary_error, unit_arrangement, weight_imbalance)
from .experiments import (asymptotic_error, both_layers_ode_limit, both_layers_run, diffusion_arrangements,
                          linear_growth_rate, plateau_escape, plateau_fluctuations, run_with_ode,
                          scaling_rule_scan, sgd_ode_gap)
from .params import Params
from .sampler import initial_overlaps, one_step, sample_overlaps
from .simulate import initial_weights, simulate, simulate_point
from .diffusion import diffuse, fastest_rate, linear_escape_cdf, step_covariance
from .theory import (
    eg_star_erf_both_layers_small_eta,
    eg_star_erf_scm,
    eg_star_erf_scm_small_eta,
    eg_star_linear_scm,
    eg_star_linear_scm_small_eta,
    critical_batch_linear_scm,
    gradient_noise_scale_linear_scm,
    rule_deviation_linear_scm,
    denoising_fixed_point,
    fixed_point,
    generalisation_error,
    linear_scm_growth_rate,
    max_stable_eta_linear_scm,
    ode,
    paper_start,
    plateau,
)

__all__ = [
    "Params", "simulate", "simulate_point", "initial_weights", "sample_overlaps",
    "initial_overlaps", "one_step", "ode", "paper_start", "fixed_point",
    "denoising_fixed_point", "plateau", "generalisation_error",
    "eg_star_linear_scm", "eg_star_linear_scm_small_eta", "eg_star_erf_scm", "eg_star_erf_scm_small_eta",
    "eg_star_erf_both_layers_small_eta", "max_stable_eta_linear_scm", "linear_scm_growth_rate",
    "rule_deviation_linear_scm", "critical_batch_linear_scm", "gradient_noise_scale_linear_scm",
    "escape_time", "plateau_stats", "paired_log_ratio", "log_ratio_drift", "decay_rate", "stationary_error", "max_gap", "growth_rate",
    "unit_arrangement", "weight_imbalance", "both_layers_run", "both_layers_ode_limit",
    "plateau_escape", "sgd_ode_gap", "linear_growth_rate", "asymptotic_error", "run_with_ode",
    "scaling_rule_scan", "diffusion", "diffuse", "step_covariance", "linear_escape_cdf",
    "plateau_fluctuations", "gap_exponents", "spread", "arrangement_agreement", "log_binned_mean",
    "log_interp", "arrangement_probabilities", "arrangement_test", "diffusion_arrangements",
    "fastest_rate",
]
