"""What the paper's theory predicts: a counting argument for the critical mini-batch size.

Marino & Ricci-Tersenghi (end of sec. 4.1 and of sec. 4.3) compare the number of
discrete parameters the student must infer with the number of real numbers one
mini-batch provides. Inference from one mini-batch cannot be expected before the
second reaches the first, so m_c should scale like the ratio. Two ways of counting
the numbers a sample brings:

- ``count="outputs"`` (consistent): only the labels carry information about the
  teacher; the inputs are drawn independently of it.
  Two matrices (ST-SS-2M): 2 N d signs, N outputs per sample -> m_c ~ 2 d.
  One matrix (ST-SS-1M): N d signs, one output per sample -> m_c ~ N d.
- ``count="paper"``: the paper's own count, which is mixed. For two matrices it
  counts the N inputs together with the N outputs of a sample (2 m N numbers per
  mini-batch, so m_c ~ d, end of sec. 4.1), while for one matrix it counts the single
  output only (m_c ~ N d, sec. 4.3), as the consistent count does.

The argument fixes the scaling, not the prefactor: :func:`counting_m_c` returns
the value at which the two counts are equal (prefactor 1), to be drawn over the
measured m_c. Nothing here reads a simulation.

For the dense SGD student (chapter 6, the linear scaling rule) the module also gives the
curvature of the population loss (:func:`gauss_newton`, :func:`top_curvature`), the batch at
which the summed-loss step becomes unstable (:func:`stability_batch`) and the noise-free
samples-to-loss of gradient descent on the population loss (:func:`gd_samples_to_loss`).
"""

import numpy as np

from .. import _validate
from . import _kernels
from .params import MODELS

COUNTS = ("outputs", "paper")


def counting_m_c(model, N, d, *, count="outputs"):
    """Mini-batch size at which the numbers in one mini-batch equal the unknown signs.

    ``d`` may be an array. With ``count="outputs"`` (labels only):
    two_matrix 2 N d / N = 2 d, one_matrix N d / 1 = N d. With ``count="paper"``
    (the paper's mixed count, inputs and outputs for two matrices):
    two_matrix 2 N d / (2 N) = d, one_matrix N d.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}; got {model!r}")
    if count not in COUNTS:
        raise ValueError(f"count must be one of {COUNTS}; got {count!r}")
    _validate.integer("N", N, low=1, doc="inputs = hidden units")
    d = np.asarray(d, float)
    if np.any(d < 1):
        raise ValueError(f"d (non-zeros per row and column) must be >= 1; got {d}")
    if model == "one_matrix":
        return N * d
    return d if count == "paper" else 2 * d


def random_student_hamming(ternary=False):
    """Expected normalised Hamming distance of a student drawn at random on its support:
    1/2 for +-1 weights, 2/3 for uniform weights in {-1, 0, +1} (each of the three
    values is right with probability 1/3, whatever the teacher's value)."""
    return 2.0 / 3.0 if ternary else 0.5


# ------------------------------------------- the dense SGD student: curvature and the rule
#
# The linear scaling rule for the dense student (chapter 6). With the summed loss of eq. (2)
# a step of eq. (5) moves W by lambda m times the mean per-sample gradient: SGD on the
# population loss L(W) = E[1/2 (y_hat - y)^2] with step eta = lambda m and batch B = m, whose
# noise temperature eta / B is lambda. At fixed lambda, in the sample clock n = m t, the drift
# (-lambda grad L per sample) and the noise covariance (lambda^2 Sigma per sample) do not
# depend on m: the learning curves coincide to first order in the step (Li, Tai & E 2017).
# What depends on m is the discretisation of the drift, a step eta = lambda m, which stops
# converging where eta times the top curvature of L reaches 2. The functions below compute
# that curvature and the noise-free deviation from the rule, from the teacher and the start
# alone: nothing here reads a simulation.

_TWO_OVER_PI = 2.0 / np.pi


def _matrix(name, W):
    W = np.asarray(W, float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 1 or not np.isfinite(W).all():
        raise ValueError(f"{name} must be a finite square (N, N) matrix; got shape {W.shape}")
    return W


def gauss_newton(W, scale):
    """Gauss-Newton curvature of the population loss of the dense erf student at W, (N^2, N^2).

    For y_hat = (1/N) sum_r phi(h_r), h_r = scale (W^T x)_r, phi(t) = erf(t / sqrt 2) (eq. 8),
    G = E[grad y_hat grad y_hat^T] with d y_hat / d W_ir = (scale / N) phi'(h_r) x_i, the
    Hessian of L = E[1/2 (y_hat - y)^2] wherever the residual vanishes (at the teacher).
    Stein's lemma twice on x ~ N(0, I) gives
    G_(ir),(js) = (scale^2 / N^2) [A_rs delta_ij + scale^2 (B_rs W_ir W_jr + C_rs W_ir W_js
    + C_rs W_is W_jr + B_sr W_is W_js)], A = E[phi'_r phi'_s], B = E[phi'''_r phi'_s],
    C = E[phi''_r phi''_s] over (h_r, h_s) with covariance Q = scale^2 W^T W; for
    phi' = sqrt(2/pi) exp(-h^2/2), A = (2/pi) D^{-1/2}, C = (2/pi) Q_rs D^{-3/2},
    B = -(2/pi)(1 + Q_ss) D^{-3/2}, D = (1 + Q_rr)(1 + Q_ss) - Q_rs^2 (Price's theorem).
    Index (i, r) -> i N + r.
    """
    W = _matrix("W", W)
    _validate.real("scale", scale, low=0.0, low_open=True, doc="the student's 1/sqrt(d)")
    N = W.shape[0]
    k2 = scale * scale
    Q = k2 * W.T @ W
    q = np.diag(Q)
    det = (1 + q)[:, None] * (1 + q)[None, :] - Q ** 2
    A = _TWO_OVER_PI / np.sqrt(det)
    C = _TWO_OVER_PI * Q * det ** -1.5
    B = -_TWO_OVER_PI * (1 + q)[None, :] * det ** -1.5
    G = np.einsum("rs,ij->irjs", A, np.eye(N))
    G += k2 * (np.einsum("rs,ir,jr->irjs", B, W, W) + np.einsum("rs,ir,js->irjs", C, W, W)
               + np.einsum("rs,is,jr->irjs", C, W, W) + np.einsum("sr,is,js->irjs", B, W, W))
    return (k2 / N ** 2) * G.reshape(N * N, N * N)


def top_curvature(W, scale):
    """Largest eigenvalue gamma_max of :func:`gauss_newton` at W.

    At the teacher the top eigenvectors are the N shifts of every column by one vector a
    (delta W_ir = a_i), for which delta y_hat = (scale / N)(a . x) sum_r phi'(h_r):
    gamma_max = (scale^2 / N) E[phi']^2 (1 + O(1/N)) = 1 / (pi d N) (1 + O(1/N)) with the
    teacher's fields h_r ~ N(0, 1), E[phi'] = 1/sqrt(pi), and scale = 1/sqrt(d).
    """
    return float(np.linalg.eigvalsh(gauss_newton(W, scale))[-1])


def stability_batch(lr, gamma_max):
    """m_s = 2 / (lambda gamma_max): the mini-batch size at which a step of the summed loss,
    eta = lambda m, reaches the stability limit eta gamma_max = 2 of gradient descent on the
    population loss at a minimum of curvature gamma_max. Beyond it the mean dynamics no longer
    converges to the teacher, at any number of samples."""
    _validate.real("lr", lr, low=0.0, low_open=True, doc="learning rate lambda")
    _validate.real("gamma_max", gamma_max, low=0.0, low_open=True, doc="top curvature")
    return 2.0 / (lr * gamma_max)


def population_loss(W, W_teacher, scale, teacher_scale):
    """(L, E[y^2] / 2): the population loss E[1/2 (y_hat - y)^2] at W in closed form
    (:func:`tsdyn.sparse._kernels.population_loss_grad`) and the teacher's, so that
    L / (E[y^2] / 2) is the relative loss the simulation's ``val_loss`` estimates."""
    W = _matrix("W", W)
    Wt = _matrix("W_teacher", W_teacher)
    if W.shape != Wt.shape:
        raise ValueError(f"W and W_teacher must have one shape; got {W.shape}, {Wt.shape}")
    G = np.empty_like(W)
    L = _kernels.population_loss_grad(np.ascontiguousarray(W), np.ascontiguousarray(Wt), float(scale),
                                      float(teacher_scale), G)
    y2 = _kernels.population_loss_grad(np.zeros_like(Wt), np.ascontiguousarray(Wt), float(scale),
                                       float(teacher_scale), G)
    return float(L), float(y2)


def gd_samples_to_loss(W_start, W_teacher, scale, teacher_scale, lr, m, level, max_samples):
    """Samples n = m t that gradient descent on the population loss with step eta = lambda m
    needs to bring the relative loss L / (E[y^2]/2) to ``level``: the noise-free part of SGD
    with the summed loss of eq. (2) at mini-batch m (eq. 5, averaged over the mini-batch).

    The loss and its gradient are exact Gaussian integrals (erf units: E[phi(u) phi(v)] =
    (2/pi) arcsin(c / sqrt((1+a)(1+b)))), so this is theory: no sample is drawn. Between two
    steps the passage is interpolated linearly in (log n, log L); +inf if the level is not
    reached within ``max_samples`` (or the weights blow up). As m -> 0 at fixed lambda it tends
    to gradient flow in the clock lambda n, which the linear scaling rule assumes at every m.
    """
    Wt = _matrix("W_teacher", W_teacher)
    W = _matrix("W_start", W_start).copy()
    _validate.real("lr", lr, low=0.0, low_open=True, doc="learning rate lambda")
    _validate.integer("m", m, low=1, doc="mini-batch size")
    _validate.real("level", level, low=0.0, low_open=True, doc="relative loss to reach")
    _validate.real("max_samples", max_samples, low=1.0, doc="samples to run at most")
    _, y2 = population_loss(W, Wt, scale, teacher_scale)
    steps = int(np.ceil(max_samples / m))
    loss = np.full(steps + 1, np.nan)
    k = _kernels.population_gd(W, np.ascontiguousarray(Wt), float(scale), float(teacher_scale),
                               float(lr * m), steps, level * y2, loss)
    rel = loss[:k + 1] / y2
    if not (np.isfinite(rel[-1]) and rel[-1] < level):
        return np.inf
    if k == 0:
        return 0.0
    n0, n1 = max(k - 1, 0) * m, k * m
    a, b = np.log(rel[k - 1]), np.log(rel[k])
    f = (a - np.log(level)) / (a - b)
    if n0 == 0:
        return float(n1)
    return float(np.exp(np.log(n0) + f * (np.log(n1) - np.log(n0))))
