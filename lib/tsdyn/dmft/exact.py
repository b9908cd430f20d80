"""Exact d -> infinity solution of full-batch GD with the square loss (teacher model).

Derivation Sec. 8.2. With y = v*.x/sqrt(d), c = 0 and the square loss, one GD step is
linear: w_{k+1} = w_k - eta[(lam + S) w_k - S v*], S = X^T X/d. S has the
Marchenko-Pastur spectrum of ratio alpha scaled by Delta (bulk on
Delta[(sqrt(alpha)-1)^2, (sqrt(alpha)+1)^2], plus an atom 1 - alpha at 0 when alpha < 1),
and v*, w_perp(0) are independent of its eigenvectors, so every overlap is a spectral
integral. This code knows nothing of the DMFT: it is the independent check of it.
"""

import numpy as np
import xarray as xr

from .. import __version__, _validate
from .params import check_params
from .simulate import n_steps_for


def marchenko_pastur(alpha, Delta, n_quad=400):
    """Quadrature of the spectrum of S = X^T X/d, X (alpha d, d) with N(0, Delta) entries.

    Returns (nodes s, weights) with sum(weights) = 1, the atom at s = 0 included. The bulk
    density sqrt((s+ - s)(s - s-))/(2 pi Delta s) is integrated in s = Delta(1 + alpha +
    2 sqrt(alpha) cos phi) with Gauss-Legendre nodes in phi (smooth integrand).
    """
    _validate.real("alpha", alpha, low=0.0, low_open=True, doc="samples per dimension")
    _validate.real("Delta", Delta, low=0.0, low_open=True, doc="noise variance")
    _validate.integer("n_quad", n_quad, low=8, doc="quadrature nodes")
    x, wq = np.polynomial.legendre.leggauss(n_quad)
    phi = 0.5 * np.pi * (x + 1.0)
    wphi = 0.5 * np.pi * wq
    h = 2.0 * np.sqrt(alpha)
    u = 1.0 + alpha + h * np.cos(phi)
    weights = wphi * h * h * np.sin(phi) ** 2 / (2.0 * np.pi * u)
    nodes = Delta * u
    if alpha < 1.0:
        nodes = np.append(nodes, 0.0)
        weights = np.append(weights, 1.0 - alpha)
    return nodes, weights


def exact_square_gd(params, t_max, *, flow=False, n_quad=400):
    """m, C(t,t), eg and training loss of GD on the teacher model (derivation Sec. 8.2).

    Per eigenvalue s of S, with p = 1 - eta(lam + s) (GD at step eta, time t = k eta) or
    p^k -> exp(-(lam + s) t) (``flow=True``), the weight component along v* is
    a(s) = m0 p^k + s/(lam + s)(1 - p^k) and the orthogonal part decays as p^k:

        m = <a>,  C = <a^2 + R0 p^2k>,  train_loss = <s [(a - 1)^2 + R0 p^2k]>/(2 alpha),
        eg = Delta(1 - 2m + C)/2,

    with <.> the spectral average of :func:`marchenko_pastur`.
    """
    check_params(params)
    if params.model != "teacher" or params.loss != "square" or params.b != 1.0:
        raise ValueError("exact_square_gd needs model='teacher', loss='square' and b=1; got "
                         f"model={params.model!r}, loss={params.loss!r}, b={params.b!r}")
    n_steps = n_steps_for(t_max, params.eta)
    s, wts = marchenko_pastur(params.alpha, params.Delta, n_quad)
    t = np.arange(n_steps + 1) * params.eta
    lam = params.lam
    with np.errstate(divide="ignore", invalid="ignore"):
        target = np.where(s > 0, s / (lam + s), 0.0)
    if flow:
        pk = np.exp(-np.outer(t, lam + s))
    else:
        pk = (1.0 - params.eta * (lam + s))[None, :] ** np.arange(n_steps + 1)[:, None]
    a = params.m0 * pk + target * (1.0 - pk)
    p2 = params.R0 * pk ** 2
    m = (a * wts).sum(1)
    C = ((a ** 2 + p2) * wts).sum(1)
    train = ((s * ((a - 1.0) ** 2 + p2)) * wts).sum(1) / (2.0 * params.alpha)
    eg = 0.5 * params.Delta * (1.0 - 2.0 * m + C)
    return xr.Dataset(
        {"m": ("t", m), "C_diag": ("t", C), "eg": ("t", eg), "train_loss": ("t", train)},
        coords={"t": ("t", t, {"units": "time = steps x eta"})},
        attrs={**params.attrs(), "kind": "exact", "flow": int(flow), "n_quad": n_quad,
               "tsdyn_version": __version__},
    )
