"""Which law m_c(d) follows: candidate forms fitted to the measured critical sizes.

The counting argument of Marino & Ricci-Tersenghi (sec. 4.1) fixes m_c proportional to d
for two matrices, but four measured points over a factor 2 in d can be fitted by several
curves. :func:`compare_forms` fits each candidate by weighted least squares, scores it
(chi-square, its p-value, Akaike's criterion) and says at which d the best two forms
part by more than the errors a new measurement there would carry.
"""

import numpy as np
from scipy.optimize import curve_fit
from scipy.stats import chi2 as _chi2

from .. import _validate

#: candidate laws m_c(d): (function, initial parameters, formula as text)
FORMS = {
    "proportional": (lambda d, c: c * d, (2.0,), "c d"),
    "linear": (lambda d, a, b: a + b * d, (0.0, 2.0), "a + b d"),
    "power": (lambda d, c, p: c * d ** p, (1.0, 1.5), "c d^p"),
    "d_log_d": (lambda d, c: c * d * np.log(d), (1.5,), "c d ln d"),
}


def fit_form(name, d, m_c, err):
    """Weighted least-squares fit of the law ``name`` of :data:`FORMS` to m_c(d) ± err.

    Minimises chi^2 = sum_i ((m_c_i - f(d_i)) / err_i)^2 with the errors taken as
    absolute (``curve_fit(absolute_sigma=True)``). Returns a dict: ``params``, ``cov``
    (their covariance from the errors), ``chi2``, ``dof``, ``p`` (chance of a chi^2 at
    least this large if the law holds; NaN when dof = 0), ``aic`` = chi^2 + 2k (Akaike's
    criterion for Gaussian errors, the constant dropped) and ``k`` (parameters).
    """
    if name not in FORMS:
        raise ValueError(f"name must be one of {tuple(FORMS)}; got {name!r}")
    d, y, e = (np.asarray(v, float) for v in (d, m_c, err))
    if d.ndim != 1 or d.shape != y.shape or d.shape != e.shape:
        raise ValueError(f"d, m_c and err must be 1-d of one length; got {d.shape}, {y.shape}, {e.shape}")
    if not (np.isfinite(d).all() and np.isfinite(y).all() and (d > 1).all()):
        raise ValueError(f"d must be finite and > 1 (d ln d vanishes at 1) and m_c finite; got d={d.tolist()}")
    if not (np.isfinite(e).all() and (e > 0).all()):
        raise ValueError(f"err must be finite and > 0; got {e.tolist()}")
    f, p0, _ = FORMS[name]
    k = len(p0)
    if len(d) < k:
        raise ValueError(f"the law {name!r} has {k} parameters; got {len(d)} points")
    popt, pcov = curve_fit(f, d, y, p0=p0, sigma=e, absolute_sigma=True, maxfev=20000)
    chi2 = float(np.sum(((y - f(d, *popt)) / e) ** 2))
    dof = len(d) - k
    return {"params": popt, "cov": pcov, "chi2": chi2, "dof": dof, "k": k,
            "p": float(_chi2.sf(chi2, dof)) if dof > 0 else np.nan, "aic": chi2 + 2 * k}


def predict(name, fit, d):
    """The fitted law at ``d`` and its standard error from the parameters' covariance
    (linear propagation with a numerical gradient)."""
    f = FORMS[name][0]
    d = np.asarray(d, float)
    p = np.asarray(fit["params"], float)
    y = f(d, *p)
    grad = np.empty((len(p),) + d.shape)
    for i in range(len(p)):
        h = 1e-6 * max(abs(p[i]), 1.0)
        up, dn = p.copy(), p.copy()
        up[i] += h
        dn[i] -= h
        grad[i] = (f(d, *up) - f(d, *dn)) / (2 * h)
    var = np.einsum("i...,ij,j...->...", grad, np.asarray(fit["cov"]), grad)
    return y, np.sqrt(np.maximum(var, 0.0))


def compare_forms(d, m_c, err, *, d_new=None, z=2.0, forms=tuple(FORMS)):
    """Fit every candidate law to m_c(d) ± err and say where more d would decide.

    Each form is fitted by :func:`fit_form`. Akaike weights exp(-AIC/2), normalised,
    rank them; ``delta_aic`` is each form's AIC above the best. For every pair of forms,
    ``decisive_d`` is the smallest d of ``d_new`` (default: the integers from one past
    the largest measured d to 4 times it) at which their predictions differ by more than
    ``z`` combined errors, sqrt(sigma_a^2 + sigma_b^2 + sigma_new^2): the two fits'
    propagated errors and the error of a new measurement there, taken as the measured
    points' median relative error times the mean of the two predictions (a new point
    measured as well as these). NaN: not within ``d_new``.

    Returns
    -------
    dict
        ``fits`` (name -> :func:`fit_form` result with ``delta_aic`` and ``weight``),
        ``order`` (names by increasing AIC), ``pairs`` ((a, b) -> decisive d), ``d_new``.
    """
    d = np.asarray(d, float)
    _validate.real("z", z, low=0.0, low_open=True, doc="combined errors that separate two predictions")
    fits = {name: fit_form(name, d, m_c, err) for name in forms}
    best = min(f["aic"] for f in fits.values())
    w = {n: np.exp(-(f["aic"] - best) / 2) for n, f in fits.items()}
    total = sum(w.values())
    for n, f in fits.items():
        f["delta_aic"] = f["aic"] - best
        f["weight"] = w[n] / total
    order = sorted(fits, key=lambda n: fits[n]["aic"])
    if d_new is None:
        d_new = np.arange(int(d.max()) + 1, int(4 * d.max()) + 1)
    d_new = np.asarray(d_new, float)
    rel = float(np.median(np.asarray(err, float) / np.abs(np.asarray(m_c, float))))
    pairs = {}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            ya, sa = predict(a, fits[a], d_new)
            yb, sb = predict(b, fits[b], d_new)
            s_new = rel * (ya + yb) / 2
            apart = np.abs(ya - yb) > z * np.sqrt(sa ** 2 + sb ** 2 + s_new ** 2)
            pairs[a, b] = float(d_new[np.argmax(apart)]) if apart.any() else np.nan
    return {"fits": fits, "order": order, "pairs": pairs, "d_new": d_new, "rel_err": rel}
