"""Observables derived from a trained ensemble (a :func:`train_ensemble` Dataset), and the
statistics the chapter quotes (distances, intervals, gaps in standard errors, bootstraps)."""

import json

import numpy as np
import xarray as xr
from scipy import stats

from .. import _seeds, _validate
from . import theory


def lambda_bar(ds):
    """Time-averaged rate of the average level spacing, (1/t) log(S(t)/S(0)) (eq. 4.7).

    t in SGD steps, as in the paper's Fig. 7. Returns a DataArray (t, model) with NaN at t = 0.
    """
    S = ds.S
    t = ds.t.where(ds.t > 0)
    return (np.log(S / S.isel(t=0)) / t).rename("lambda_bar")


def spacing_coefficients(ds, *, ito=False):
    """K_S, V_S, D_S (eqs. B.7, B.9) from the recorded gradient moments, per time and model.

    ``ito``: add the Ito drift T (C_N - C_1)/(N - 1) of the second-order change of X to
    K_S (see :func:`theory.spacing_coefficients`); False gives the paper's K_S, which
    the criterion (4.15) uses.
    """
    extra = dict(C=ds.C.values, T=float(ds.attrs["T"])) if ito else {}
    K_S, V_S, D_S = theory.spacing_coefficients(ds.K.values, ds.V.values, **extra)
    dims = ("t", "model")
    return xr.Dataset({"K_S": (dims, K_S), "V_S": (dims, V_S), "D_S": (dims, D_S)},
                      coords={"t": ds.t, "model": ds.model})


def summary(ds):
    """Per-model end-of-training numbers of one ensemble: a Dataset over ``model``.

    loss, grad_norm, G0, align, lambda_bar at t_f; grad_norm0 at t = 0; S0, S_f;
    K_S, V_S, D_S at t_f; ``converged``: criterion (4.15) at t_f; diverged, t_diverged.
    """
    ds = ds.drop_vars("tau")
    end = ds.isel(t=-1, drop=True)
    coef = spacing_coefficients(ds).isel(t=-1, drop=True)
    T, sigma_w = float(ds.attrs["T"]), float(ds.attrs["sigma_w"])
    n1, n2 = json.loads(ds.attrs["layers"])[1], ds.sizes["eig"]
    ok = theory.converged(T, sigma_w, coef.K_S.values, coef.V_S.values, n1=n1, n2=n2)
    return xr.Dataset({
        "loss": end.loss, "grad_norm": end.grad_norm, "G0": end.G0, "align": end.align,
        "lambda_bar": lambda_bar(ds).isel(t=-1, drop=True),
        "grad_norm0": ds.grad_norm.isel(t=0, drop=True), "S0": ds.S.isel(t=0, drop=True), "S_f": end.S,
        "K_S": coef.K_S, "V_S": coef.V_S, "D_S": coef.D_S,
        "converged": ("model", ok & ~ds.diverged.values),
        "diverged": ds.diverged, "t_diverged": ds.t_diverged,
    }, attrs={"t_f": float(ds.t.values[-1])})


def unfolded_spacings(x, *, degree=3, drop=1):
    """Nearest-neighbour spacings of each spectrum, unfolded to unit mean density.

    x : array (..., N), ascending eigenvalues of each model. Each model's staircase
    N(x) is fitted with a polynomial of ``degree`` (its smooth part), the levels are
    mapped through it and the spacings are normalised to mean 1; ``drop`` spacings at
    each edge (where the fit is worst) are discarded. Returns a flat array.
    """
    x = np.asarray(x, float).reshape(-1, np.shape(x)[-1])
    out = []
    for levels in x:
        if not np.all(np.isfinite(levels)):
            continue
        n = len(levels)
        scale = levels[-1] - levels[0]
        u = (levels - levels[0]) / scale
        smooth = np.polyval(np.polyfit(u, np.arange(n), degree), u)
        s = np.diff(smooth)[drop:n - 1 - drop]
        out.append(s / s.mean())
    return np.concatenate(out) if out else np.array([])


def crossing(x, y, level, *, log_x=True):
    """First x where y crosses ``level`` (linear interpolation, in log x if ``log_x``); NaN if none."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D arrays of the same length; got shapes {x.shape}, {y.shape}")
    if log_x and not np.all(x > 0):
        raise ValueError(f"x must be > 0 for log_x=True; got min(x) = {float(np.min(x))!r}")
    u = np.log(x) if log_x else x
    above = y >= level
    for i in range(len(y) - 1):
        if above[i] != above[i + 1] and np.isfinite(y[i]) and np.isfinite(y[i + 1]):
            f = (level - y[i]) / (y[i + 1] - y[i])
            v = u[i] + f * (u[i + 1] - u[i])
            return float(np.exp(v) if log_x else v)
    return float("nan")


def halfway_crossing(x, samples, *, n_boot=0, seed=0):
    """Where the ensemble mean crosses half-way between its first and last values, with a bootstrap.

    ``samples`` (len(x), n_models): e.g. log10 final loss per temperature and model
    (independent ensembles at each x). Estimator: the mean over models at each x, the
    level half-way between the mean at x[0] and at x[-1], the first crossing of that
    level (:func:`crossing`, log x). Error: ``n_boot`` resamples of the models at each x
    independently; returns (x_c, lo, hi) with lo, hi the 16% and 84% quantiles of the
    resampled crossings (NaN without resamples, or if fewer than 90% of them cross).
    """
    x, a = np.asarray(x, float), np.asarray(samples, float)
    if a.ndim != 2 or a.shape[0] != len(x):
        raise ValueError(f"samples must have shape (len(x), n_models) = ({len(x)}, ...); got {a.shape}")
    _validate.integer("n_boot", n_boot, low=0, doc="bootstrap resamples")

    def estimate(m):
        return crossing(x, m, 0.5 * (m[0] + m[-1]))

    xc = estimate(np.nanmean(a, axis=1))
    if n_boot == 0:
        return xc, float("nan"), float("nan")
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    n = a.shape[1]
    boot = np.array([estimate(np.nanmean(np.take_along_axis(a, rng.integers(0, n, a.shape), 1), axis=1))
                     for _ in range(n_boot)])
    if np.mean(np.isfinite(boot)) < 0.9:
        return xc, float("nan"), float("nan")
    lo, hi = np.nanquantile(boot, [0.16, 0.84])
    return xc, float(lo), float(hi)


def total_variation(density, reference, width):
    """Total-variation distance (1/2) sum |p - q| width between two binned densities."""
    density, reference = np.asarray(density, float), np.asarray(reference, float)
    if density.shape != reference.shape:
        raise ValueError(f"density and reference must have the same shape; got {density.shape}, "
                         f"{reference.shape}")
    _validate.real("width", width, low=0.0, low_open=True, doc="bin width")
    return float(0.5 * np.sum(np.abs(density - reference)) * width)


def clopper_pearson(k, n, level=0.68):
    """Central Clopper-Pearson interval (lo, hi) for a fraction k/n at confidence ``level``.

    Exact binomial: lo is the (1 - level)/2 quantile of Beta(k, n - k + 1) (0 if k = 0),
    hi the (1 + level)/2 quantile of Beta(k + 1, n - k) (1 if k = n). Arrays broadcast.
    """
    k, n = np.asarray(k), np.asarray(n)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= k <= n and n >= 1; got k = {k!r}, n = {n!r}")
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="confidence level")
    a = 0.5 * (1 - level)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)
    return lo, hi


def log_gap(measured, predicted):
    """Gap between the ensemble means of ln S, measured vs an SDE, at each recording time.

    ``measured`` (t, model) and ``predicted`` (t, path), both > 0. Returns (gap, z):
    gap = |mean ln S_meas - mean ln S_pred| and z = gap over the combined standard
    error sqrt(var_meas/M + var_pred/P) (inf where that is 0 and the gap is not).
    """
    a, b = np.log(np.asarray(measured, float)), np.log(np.asarray(predicted, float))
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise ValueError(f"measured and predicted must be (t, model) and (t, path) on the same times; "
                         f"got {a.shape}, {b.shape}")
    gap = np.abs(a.mean(1) - b.mean(1))
    se = np.sqrt(a.var(1, ddof=1) / a.shape[1] + b.var(1, ddof=1) / b.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, gap / se, np.where(gap > 0, np.inf, 0.0))
    return gap, z


def paired_z(a, b):
    """|mean(a - b)| in standard errors of the paired differences (a, b: one value per model)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if d.ndim != 1 or len(d) < 2:
        raise ValueError(f"a and b must be 1-D with the same length >= 2; got {np.shape(a)}, {np.shape(b)}")
    se = d.std(ddof=1) / np.sqrt(len(d))
    return float(abs(d.mean()) / se) if se > 0 else (0.0 if d.mean() == 0 else float("inf"))


def paired_ks(a, b, *, n_perm=2000, seed=0):
    """Two-sample Kolmogorov-Smirnov distance of paired samples, with a permutation p-value.

    a[m], b[m] come from the same model m (same teacher, data and start) under two
    settings. Under the null that both settings give the same law given the model, each
    pair is exchangeable, so swapping a[m] and b[m] at random gives the null distribution
    of the distance (scipy's ks_2samp p-value assumes independent samples, which the
    pairing violates). Returns (D, p) with p = (1 + #{D_perm >= D}) / (1 + n_perm).
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a and b must be 1-D with the same length >= 2; got {a.shape}, {b.shape}")
    _validate.integer("n_perm", n_perm, low=1, doc="permutations")
    D = stats.ks_2samp(a, b).statistic
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    swap = rng.random((n_perm, len(a))) < 0.5
    perm = np.array([stats.ks_2samp(np.where(s, b, a), np.where(s, a, b)).statistic for s in swap])
    return float(D), float((1 + np.sum(perm >= D - 1e-12)) / (1 + n_perm))


def spacing_ratios(x):
    """Ratios r_i = min(s_i, s_{i+1}) / max(s_i, s_{i+1}) of consecutive level spacings.

    x (..., N) ascending levels of each matrix; returns (..., N - 2). Needs no unfolding:
    the local density cancels in the ratio. Compare the mean with
    :data:`theory.MEAN_R_GOE` (level repulsion) and :data:`theory.MEAN_R_POISSON`.
    """
    x = np.asarray(x, float)
    if x.shape[-1] < 3:
        raise ValueError(f"need at least 3 levels per matrix; got {x.shape[-1]}")
    s = np.diff(x, axis=-1)
    lo, hi = np.minimum(s[..., 1:], s[..., :-1]), np.maximum(s[..., 1:], s[..., :-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(hi > 0, lo / hi, np.nan)


def mean_spacing_ratio(x, *, n_boot=1000, seed=0):
    """Mean spacing ratio <r> over an ensemble of spectra x (M, N), with a bootstrap s.e.

    The ratios of one matrix are correlated, so the bootstrap resamples whole matrices.
    Returns (mean, se).
    """
    r = spacing_ratios(np.asarray(x, float).reshape(-1, np.shape(x)[-1]))
    r = r[np.all(np.isfinite(r), axis=1)]
    if len(r) < 2:
        raise ValueError("need at least 2 spectra with finite, distinct levels")
    _validate.integer("n_boot", n_boot, low=2, doc="bootstrap resamples")
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    per = r.mean(axis=1)
    boot = per[rng.integers(0, len(per), (n_boot, len(per)))].mean(axis=1)
    return float(per.mean()), float(boot.std(ddof=1))


def wishart_spacing_ratio(n2, n1, *, n_matrices=2000, seed=0):
    """<r> of sampled n2 x n1 Wishart matrices W W^T (the finite-size reference), with its s.e."""
    _validate.integer("n2", n2, low=3, doc="rows")
    _validate.integer("n1", n1, low=1, doc="columns")
    _validate.integer("n_matrices", n_matrices, low=2, doc="sampled matrices")
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    W = rng.standard_normal((n_matrices, n2, n1))
    x = np.linalg.eigvalsh(W @ W.transpose(0, 2, 1))
    per = spacing_ratios(x).mean(axis=1)
    return float(per.mean()), float(per.std(ddof=1) / np.sqrt(n_matrices))
