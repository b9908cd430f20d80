"""tsdyn: teacher-student dynamics of mini-batch SGD, theory versus simulation.

Sub-packages, one per model family (one chapter of the book each):

- :mod:`tsdyn.committee`: online / mini-batch SGD of two-layer networks and the
  Saad-Solla / Goldt et al. order-parameter ODEs.

Shared modules: :mod:`tsdyn.activations` (activation functions and their
Gaussian integrals), :mod:`tsdyn.sweep` (parameter grids on local processes or
Dask), :mod:`tsdyn.plotting` (the theory-vs-simulation overlay style).
"""

__version__ = "0.1.0"
