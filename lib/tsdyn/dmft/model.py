"""The model's pointwise functions, shared by the simulation and the DMFT.

These are properties of the *model* (the per-sample loss as a function of the
pre-activation r = w.x/sqrt(d), the test error of a weight vector with given overlaps),
not of either method, like :mod:`tsdyn.activations` for the committee machine.
"""

import math

import numpy as np
from scipy.special import erf, erfc

from .._jit import njit

LOGISTIC, SQUARE = 0, 1
TWO_CLUSTER, THREE_CLUSTER, TEACHER = 0, 1, 2


def codes(params):
    """(loss code, model code) of ``params`` for the kernels."""
    loss = {"logistic": LOGISTIC, "square": SQUARE}[params.loss]
    model = {"two-cluster": TWO_CLUSTER, "three-cluster": THREE_CLUSTER, "teacher": TEACHER}[params.model]
    return loss, model


@njit
def readout(model, r, L):
    """Phi(r) and its first two derivatives: r, or r^2 - L^2 for the three-cluster model."""
    if model == THREE_CLUSTER:
        return r * r - L * L, 2.0 * r, 2.0
    return r, 1.0, 0.0


@njit
def loss_terms(loss, model, y, r, L):
    """Lambda(y, r), dLambda/dr, d2Lambda/dr2 and the 0/1 correctness of sign(Phi(r)).

    Derivation eq. (E2): Lambda = l(y Phi(r)) with l(v) = ln(1 + e^-v) (logistic), or
    (y - Phi)^2/2 (square); Phi(r) = r, or r^2 - L^2 for the three-cluster model.
    """
    phi, dphi, d2phi = readout(model, r, L)
    if loss == LOGISTIC:
        v = y * phi
        if v > 0.0:
            e = math.exp(-v)
            val = math.log1p(e)
            sig_minus = e / (1.0 + e)  # sigma(-v)
        else:
            e = math.exp(v)
            val = -v + math.log1p(e)
            sig_minus = 1.0 / (1.0 + e)
        l1 = -sig_minus  # l'(v)
        l2 = sig_minus * (1.0 - sig_minus)  # l''(v) = sigma(v) sigma(-v)
        d1 = l1 * y * dphi
        d2 = l2 * (y * dphi) ** 2 + l1 * y * d2phi
    else:
        err = phi - y
        val = 0.5 * err * err
        d1 = err * dphi
        d2 = dphi * dphi + err * d2phi
    correct = 1.0 if y * phi > 0.0 else 0.0
    return val, d1, d2, correct


@njit
def loss_derivatives(loss, model, y, r, L):
    """dLambda/dr and d2Lambda/dr2 only (the same formulas as :func:`loss_terms`, without
    the logarithm of the loss value), for the DMFT kernels, which need no loss value."""
    phi, dphi, d2phi = readout(model, r, L)
    if loss == LOGISTIC:
        v = y * phi
        if v > 0.0:
            e = math.exp(-v)
            sig_minus = e / (1.0 + e)
        else:
            sig_minus = 1.0 / (1.0 + math.exp(v))
        l1 = -sig_minus
        l2 = sig_minus * (1.0 - sig_minus)
        return l1 * y * dphi, l2 * (y * dphi) ** 2 + l1 * y * d2phi
    err = phi - y
    return err * dphi, dphi * dphi + err * d2phi


@njit
def is_correct(model, y, r, L):
    """1.0 if sign(Phi(r)) = y, else 0.0 (as in :func:`loss_terms`)."""
    phi = r * r - L * L if model == THREE_CLUSTER else r
    return 1.0 if y * phi > 0.0 else 0.0


def draw_clusters(params, n, rng):
    """Cluster indices c, shape (n,), from ``rng`` (one uniform per sample)."""
    u = rng.random(n)
    if params.model == "two-cluster":
        return np.where(u < params.rho, 1.0, -1.0)
    if params.model == "three-cluster":
        return np.where(u < params.rho / 2, 1.0, np.where(u < params.rho, -1.0, 0.0))
    return np.zeros(n)


def cluster_labels(params, c):
    """Labels y(c) of the classification models (y = c; or +1 outer, -1 central)."""
    if params.model == "two-cluster":
        return c.astype(float)
    return np.where(c != 0.0, 1.0, -1.0)


def generalisation_error(params, m, C):
    """Test error of a weight vector with overlaps m = w.v*/d and C = |w|^2/d.

    A fresh sample has r = c m + sqrt(Delta C) zeta, zeta ~ N(0, 1) (derivation E14-E15):

    * two-cluster: eps_g = erfc(m / sqrt(2 Delta C)) / 2;
    * three-cluster: (1-rho) erfc(L/sqrt(2 Delta C)) + rho/2 [erf((L-m)/s) + erf((L+m)/s)],
      s = sqrt(2 Delta C) (the talk's formula at rho = 1/2);
    * teacher: mean square error E(y - r)^2 / 2 = Delta (1 - 2m + C)/2.
    """
    m, C = np.asarray(m, float), np.asarray(C, float)
    if params.model == "teacher":
        return 0.5 * params.Delta * (1.0 - 2.0 * m + C)
    s = np.sqrt(2.0 * params.Delta * C)
    with np.errstate(divide="ignore", invalid="ignore"):
        if params.model == "two-cluster":
            return 0.5 * erfc(m / s)  # rho/2 erfc + (1-rho)/2 erfc without a bias
        return ((1 - params.rho) * erfc(params.L / s)
                + 0.5 * params.rho * (erf((params.L - m) / s) + erf((params.L + m) / s)))


ENERGY_ATTRS = {"long_name": "training loss per dimension alpha <l> + lam C/2 (the talk's e(t))"}


def train_energy(params, mean_loss, C_diag):
    """The talk's normalisation of the training loss: the total loss divided by d,
    [sum_mu l_mu + lam |w|^2/2]/d = alpha <l> + lam C(t,t)/2 (the talk's e(t) at lam = 0).
    ``mean_loss`` is the mean per-sample loss (``train_loss``)."""
    out = params.alpha * np.asarray(mean_loss, float)
    if params.lam != 0.0:  # (lam = 0: no 0 * inf after a divergence)
        out = out + 0.5 * params.lam * np.asarray(C_diag, float)
    return out
