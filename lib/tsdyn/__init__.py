"""tsdyn: teacher-student dynamics of mini-batch SGD, theory versus simulation.

Sub-packages, one per model family (one chapter of the book each):

- :mod:`tsdyn.committee`: online / mini-batch SGD of two-layer networks and the
  Saad-Solla / Goldt et al. order-parameter ODEs.
- :mod:`tsdyn.largebatch`: one-pass SGD with batches n_b = n0 d^mu on multi-index
  targets; Hermite coefficients, information exponents, low-dimensional dynamics.
- :mod:`tsdyn.dmft`: multi-pass and persistent SGD on Gaussian mixtures and the
  dynamical mean-field theory of Mignacco et al.
- :mod:`tsdyn.dyson`: ensembles of deep tanh teacher-student networks; Marchenko-Pastur
  spectra and the Dyson / level-spacing Langevin equations of Park, Lucini and Aarts.
- :mod:`tsdyn.sparse`: sparse +-1 teachers, greedy zero-temperature Metropolis and dense
  SGD students; critical mini-batch sizes (Marino and Ricci-Tersenghi).

Shared modules: :mod:`tsdyn.activations` (activation functions and their
Gaussian integrals), :mod:`tsdyn.sweep` (parameter grids on local processes or
Dask), :mod:`tsdyn.plotting` (the theory-vs-simulation overlay style),
:mod:`tsdyn.stats` (fits, batch means, error yardsticks), :mod:`tsdyn.presets`
(the quick and paper scale presets).
"""

__version__ = "0.1.0"
