"""Tanh teacher-student ensembles, their SGD phase diagram and Dyson Brownian motion.

Park, Lucini & Aarts (2025), with the Dyson description of Aarts, Lucini & Park,
PRE 111, 015303 (2025). Simulation (:func:`train_ensemble`) and theory
(:mod:`tsdyn.dyson.theory`: Marchenko-Pastur, p(phi), the level-spacing SDE, the
phase boundaries) share only :class:`Params`.
"""

from .analysis import (clopper_pearson, coulomb_ratio, criterion_late, crossing, drift_balance, ito_share, level_median_gap, spacing_over_bound, spread_growth, fraction_crossing, halfway_crossing, lambda_bar, log_gap, mean_spacing_ratio,
                       paired_ks, paired_z, STEPS_PER_EPOCH, published_criterion, published_midpoint, published_midpoint_resamples, published_sign_draws, spacing_coefficients, spacing_ratios, summary, total_variation,
                       unfolded_spacings, wishart_spacing_ratio)
from .experiments import (CRITERIA, LONG_FIELDS, PUBLISHED, combine_long, criterion_vs_steps, dyson_levels_sde,
                          finite_step_gap, linear_scaling, long_column, long_record_steps, phase_diagram, phase_point,
                          sde_record_density, spacing_sde)
from . import edge, figures, stability
from .edge import edge_comparison, gd_control, step_sharpness
from .scaling_rule import (PASS_READINGS, batch_phase_boundary, batch_phase_diagram, critical_batch_measured,
                           minimum_stability_check, scaling_rule_scan, tau_point)
from .params import PAPER_LAYERS, Params
from .simulate import initial_features, networks, record_steps, train_ensemble
from .theory import (
    MEAN_R_GOE,
    MEAN_R_POISSON,
    SIGMA_C2,
    convergence_lhs,
    converged,
    dyson_sde,
    dyson_sde_wishart,
    feature_density,
    feature_density_mixture,
    feature_peaks,
    feature_potential,
    first_layer_q,
    initial_spacing_bound,
    jamming_boundary,
    level_spacing_sde,
    level_spacing_stationary,
    marchenko_pastur,
    marchenko_pastur_cdf,
    marchenko_pastur_edges,
    sigma_z2,
    wigner_cdf,
    wigner_surmise,
)

__all__ = [
    "Params", "PAPER_LAYERS", "train_ensemble", "networks", "initial_features", "record_steps",
    "lambda_bar", "spacing_coefficients", "summary", "unfolded_spacings", "crossing", "halfway_crossing",
    "total_variation", "clopper_pearson", "log_gap", "level_median_gap", "paired_z", "paired_ks", "spacing_ratios",
    "mean_spacing_ratio", "wishart_spacing_ratio", "MEAN_R_GOE", "MEAN_R_POISSON",
    "phase_point", "phase_diagram", "linear_scaling", "scaling_rule_scan", "critical_batch_measured",
    "batch_phase_boundary", "batch_phase_diagram", "tau_point", "PASS_READINGS", "minimum_stability_check", "stability",
    "edge", "gd_control", "edge_comparison", "step_sharpness", "criterion_vs_steps", "CRITERIA", "PUBLISHED", "spacing_sde", "sde_record_density",
    "fraction_crossing", "drift_balance", "coulomb_ratio", "criterion_late", "ito_share", "spread_growth",
    "spacing_over_bound", "finite_step_gap", "published_criterion", "published_midpoint", "published_midpoint_resamples", "published_sign_draws", "figures", "STEPS_PER_EPOCH",
    "long_column", "long_record_steps", "combine_long", "LONG_FIELDS",
    "marchenko_pastur", "marchenko_pastur_edges", "marchenko_pastur_cdf", "initial_spacing_bound",
    "feature_density", "feature_density_mixture", "feature_potential", "feature_peaks", "SIGMA_C2",
    "first_layer_q", "sigma_z2", "jamming_boundary", "level_spacing_sde", "dyson_sde", "dyson_sde_wishart", "dyson_levels_sde", "level_spacing_stationary",
    "convergence_lhs", "converged", "wigner_surmise", "wigner_cdf",
]
