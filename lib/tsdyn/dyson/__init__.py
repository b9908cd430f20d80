"""Tanh teacher-student ensembles, their SGD phase diagram and Dyson Brownian motion.

Park, Lucini & Aarts (2025), with the Dyson description of Aarts, Lucini & Park,
PRE 111, 015303 (2025). Simulation (:func:`train_ensemble`) and theory
(:mod:`tsdyn.dyson.theory`: Marchenko-Pastur, p(phi), the level-spacing SDE, the
phase boundaries) share only :class:`Params`.
"""

from .params import PAPER_LAYERS, Params
from .simulate import initial_features, networks, record_steps, train_ensemble

__all__ = ["Params", "PAPER_LAYERS", "train_ensemble", "networks", "initial_features", "record_steps"]
