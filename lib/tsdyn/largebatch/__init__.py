"""Large batches, information exponents and the time/sample trade-off of one-pass SGD
(Arnaboldi, Dandi, Krzakala, Loureiro, Pesce & Stephan, ICML 2024).

Hermite expansions (:func:`hermite_coefficients`, :func:`information_exponent`,
:func:`leap_exponent`), the simulation (:func:`simulate`, :func:`recovery_time`) and
the theory (:mod:`.theory`) share only :class:`Params`. The paper's two-unit erf network
(projected SGD on an erf target of two directions, its exact-asymptotics figure) has its own
sampler and step map in :mod:`.erf_committee`.
"""

from .hermite import (closed_form_coefficients, hermite_coefficients, hermite_coefficients_nd, hermite_he,
                      information_exponent, leap_exponent)
from .params import Params
from .simulate import GAUSSIAN_MIN_NB, SAMPLERS, initial_weights, recovery_point, recovery_time, simulate

__all__ = ["Params", "simulate", "recovery_time", "recovery_point", "initial_weights", "SAMPLERS",
           "GAUSSIAN_MIN_NB",
           "hermite_coefficients", "hermite_coefficients_nd", "hermite_he", "information_exponent",
           "leap_exponent", "closed_form_coefficients"]
