"""Observables derived from a trained ensemble (a :func:`train_ensemble` Dataset), and the
statistics the chapter quotes (distances, intervals, gaps in standard errors, bootstraps)."""

import json

import numpy as np
import xarray as xr
from scipy import stats

from .. import _seeds, _validate
from . import _kernels, theory


# The paper's time t counts epochs of this many mini-batches (the authors' generate.py: n_batchs).
STEPS_PER_EPOCH = 1000


def lambda_bar(ds):
    """Time-averaged rate of the average level spacing, (1/t) log(S(t)/S(0)) (eq. 4.7).

    t in SGD steps; the paper's Fig. 7 counts t in epochs of :data:`STEPS_PER_EPOCH` steps,
    so its rate is this one times STEPS_PER_EPOCH. Returns a DataArray (t, model), NaN at t = 0.
    """
    S = ds.S
    t = ds.t.where(ds.t > 0)
    return (np.log(S / S.isel(t=0)) / t).rename("lambda_bar")


BASES = ("x", "k", "k_descending")


def _k_basis_moments(ds, order):
    """K_k, V_k, C_k (train_ensemble(..., k_basis=True)) re-ordered: by the Rayleigh quotient
    u^T X u of each eigenvector of K (``order="x"``) or by descending eigenvalue of K."""
    if "K_k" not in ds:
        raise ValueError("the paper's basis needs moments recorded with train_ensemble(..., k_basis=True)")
    K, V, C = ds.K_k.values, ds.V_k.values, ds.C_k.values
    if order == "x":
        idx = np.argsort(np.where(np.isfinite(ds.xq_k.values), ds.xq_k.values, 0.0), axis=-1)
    else:
        idx = np.broadcast_to(np.arange(K.shape[-1])[::-1], K.shape)
    K = np.take_along_axis(K, idx, -1)
    C = np.take_along_axis(C, idx, -1)
    V = np.take_along_axis(np.take_along_axis(V, idx[..., :, None], -2), idx[..., None, :], -1)
    return K, V, C


def spacing_coefficients(ds, *, ito=False, basis="x"):
    """K_S, V_S, D_S (eqs. B.7, B.9) from the recorded gradient moments, per time and model.

    ``ito``: add the Ito drift T (C_N - C_1)/(N - 1) of the second-order change of X to
    K_S (see :func:`theory.spacing_coefficients`); False gives the paper's K_S, which
    the criterion (4.15) uses.

    ``basis``: where K_i and V_ij are taken.

    - ``"x"``: the eigenbasis of X, levels in ascending order (first-order perturbation
      theory, delta x_i = delta X_ii: the basis of the Dyson equation 4.3);
    - ``"k"``: the paper's App. B: the eigenbasis of the drift matrix K = -E[Delta^X]
      (``K_k``, ``V_k``), each eigenvector labelled by the level of X it lies along
      (ascending Rayleigh quotient u^T X u), so that "1" and "N" still mean the
      smallest and the largest level, as S = (x_N - x_1)/(N - 1) requires;
    - ``"k_descending"``: the eigenbasis of K in descending eigenvalue order, which gives
      K_S = (K_min - K_max)/(N - 1) <= 0 for every model. (Ascending order, the other
      literal reading of App. B, gives K_S >= 0 for every model, so (4.15) would never
      hold; it is not offered.)
    """
    if basis not in BASES:
        raise ValueError(f"basis must be one of {BASES}; got {basis!r}")
    if basis == "x":
        K, V, C = ds.K.values, ds.V.values, (ds.C.values if ito else None)
    else:
        K, V, C = _k_basis_moments(ds, "x" if basis == "k" else "descending")
    extra = dict(C=C, T=float(ds.attrs["T"])) if ito else {}
    K_S, V_S, D_S = theory.spacing_coefficients(K, V, **extra)
    dims = ("t", "model")
    return xr.Dataset({"K_S": (dims, K_S), "V_S": (dims, V_S), "D_S": (dims, D_S)},
                      coords={"t": ds.t, "model": ds.model})


def published_criterion(X, K, V, T, sigma_w, *, n1, n2, signs=None):
    """Criterion (4.15) as the authors' public notebook computes it (chanjure/phase_ml,
    ``empirical_phase.ipynb``), per model.

    X, K, V : (..., N, N) arrays in the neuron basis: X = W2 W2^T, K = -E[Delta^X] and the
    element-wise variance V_ab = Var[Delta^X_ab] over single samples (``train_ensemble(...,
    published=True)``: ``X_mat``, ``K_raw``, ``V_raw``). ``signs`` (..., N) of +-1: multiply
    the eigenvectors of X by these (None: the signs that ``numpy.linalg.svd`` returns), to
    measure how much the result depends on that arbitrary choice.

    Recipe: U, x = svd(X) (eigenvectors of X, *descending* eigenvalues, so index 0 is the
    largest level "N" and index N-1 the smallest "1"); K~ = U^T K U, V~ = U^T V U;
    K_t = |K~_00| - |K~_{N-1,N-1}|; V_t = 2 V~_{0,N-1}/(N-1) + sum_{k=1}^{N-2}
    (V~_{0,k} + V~_{N-1,N-k})/k; converged where K_t / (sqrt(n1/n2) (N-1)) >= T V_t /
    (4 sigma_w^2). Departures from App. B of the paper (eqs. B.7, B.9, 4.15):

    - basis: the eigenbasis of X, not that of the drift matrix K;
    - absolute values: K_S = (|K_N| - |K_1|)/(N-1) with + sign in the test (App. B: K_S =
      (K_N - K_1)/(N-1), converged where -K_S/V_S >= T/S_max(0));
    - V~ = U^T V U rotates the matrix of element-wise variances as if it were a matrix
      of the linear map, not the variances of the rotated elements Var[(U^T Delta^X U)_ij];
      its off-diagonal entries change sign with the eigenvectors' signs and can be negative;
    - off-by-one: the second sum takes V_{1,k} for App. B's V_{1,k+1} (in ascending labels),
      so its k = 1 term is the diagonal V_11;
    - the inequality is multiplied out, so a negative V_t passes whatever K_t is (>= 0 for
      most models).

    The normalisation is App. B's: K_t = (N-1) K_S and V_t = (N-1) V_S. The notebook measures
    the moments on 128 fresh inputs; ``train_ensemble`` on ``moment_samples`` training samples.

    Returns a dict: ``K_S`` = K_t/(N-1), ``V_S`` = V_t/(N-1) and ``converged`` (bool), each (...).
    """
    X, K, V = (np.asarray(a, float) for a in (X, K, V))
    if not (X.shape == K.shape == V.shape) or X.ndim < 2 or X.shape[-1] != X.shape[-2]:
        raise ValueError(f"X, K, V must be (..., N, N) of one shape; got {X.shape}, {K.shape}, {V.shape}")
    _validate.real("sigma_w", sigma_w, low=0.0, low_open=True, doc="initial weight scale")
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature eps/|B|")
    N = X.shape[-1]
    if N < 3:
        raise ValueError(f"need N >= 3 levels; got {N}")
    ok = np.all(np.isfinite(X), axis=(-1, -2))
    U, _, _ = np.linalg.svd(np.where(ok[..., None, None], X, np.eye(N)))
    if signs is not None:
        signs = np.asarray(signs, float)
        if signs.shape != X.shape[:-1] or not np.all(np.abs(signs) == 1):
            raise ValueError(f"signs must be +-1 with shape {X.shape[:-1]}; got {signs.shape}")
        U = U * signs[..., None, :]
    Ut = np.swapaxes(U, -1, -2)
    Kt, Vt = Ut @ K @ U, Ut @ V @ U
    d = np.abs(np.diagonal(Kt, axis1=-2, axis2=-1))
    K_t = d[..., 0] - d[..., -1]
    V_t = 2.0 * Vt[..., 0, -1] / (N - 1)
    for k in range(1, N - 1):
        V_t = V_t + (Vt[..., 0, k] + Vt[..., -1, N - k]) / k
    conv = K_t / (np.sqrt(n1 / n2) * (N - 1)) >= T * V_t / (4.0 * sigma_w ** 2)
    nan = ~ok
    return {"K_S": np.where(nan, np.nan, K_t / (N - 1)), "V_S": np.where(nan, np.nan, V_t / (N - 1)),
            "converged": conv & ok}


def published_sign_draws(X, K, V, T, sigma_w, *, n1, n2, n_draws=100, seed=0):
    """:func:`published_criterion` under ``n_draws`` random sign choices of the eigenvectors of X.

    X, K, V : (M, N, N), one matrix per model. Draw d flips each eigenvector of each model
    independently with probability 1/2 (the physics cannot depend on it). Returns a bool
    array (M, n_draws): whether model m passes under draw d.
    """
    X = np.asarray(X, float)
    _validate.integer("n_draws", n_draws, low=1, doc="sign draws")
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    signs = rng.choice([-1.0, 1.0], size=(n_draws, *X.shape[:-1]))
    out = [published_criterion(X, K, V, T, sigma_w, n1=n1, n2=n2, signs=s)["converged"] for s in signs]
    return np.stack(out, axis=-1)


N_SIGN_DRAWS = 64


def summary(ds):
    """Per-model end-of-training numbers of one ensemble: a Dataset over ``model``.

    loss, grad_norm, G0, align, lambda_bar at t_f; grad_norm0 at t = 0; S0, S_f;
    K_S, V_S, D_S at t_f (eigenbasis of X); ``converged``: criterion (4.15) at t_f with
    them; ``converged_ito``: the same with the Ito drift in K_S. If the moments were also
    recorded in the eigenbasis of K (``k_basis=True``): K_S_k, V_S_k and ``converged_k``
    (the paper's App. B basis, levels labelled by X), ``converged_kd`` (K's eigenvalues
    in descending order). If the unrotated moments were recorded (``published=True``):
    K_S_pub, V_S_pub, ``converged_pub`` (the authors' recipe, :func:`published_criterion`)
    and ``converged_pub_draws`` (model, draw): the same under :data:`N_SIGN_DRAWS` random
    sign choices of the eigenvectors of X (:func:`published_sign_draws`). Also diverged, t_diverged,
    and at t_f whichever of ``sharpness``, ``hessian_sharpness``, ``teacher_dist`` the run recorded.
    """
    ds = ds.drop_vars("tau")
    end = ds.isel(t=-1, drop=True)
    T, sigma_w = float(ds.attrs["T"]), float(ds.attrs["sigma_w"])
    n1, n2 = json.loads(ds.attrs["layers"])[1], ds.sizes["eig"]
    alive = ~ds.diverged.values

    def criterion(coef):
        return ("model", theory.converged(T, sigma_w, coef.K_S.values, coef.V_S.values, n1=n1, n2=n2) & alive)

    coef = spacing_coefficients(ds).isel(t=-1, drop=True)
    out = {
        "loss": end.loss, "grad_norm": end.grad_norm, "G0": end.G0, "align": end.align,
        "lambda_bar": lambda_bar(ds).isel(t=-1, drop=True),
        "grad_norm0": ds.grad_norm.isel(t=0, drop=True), "S0": ds.S.isel(t=0, drop=True), "S_f": end.S,
        "K_S": coef.K_S, "V_S": coef.V_S, "D_S": coef.D_S,
        "converged": criterion(coef),
        "converged_ito": criterion(spacing_coefficients(ds, ito=True).isel(t=-1, drop=True)),
        "diverged": ds.diverged, "t_diverged": ds.t_diverged,
        **{k: end[k] for k in ("sharpness", "hessian_sharpness", "teacher_dist") if k in ds},
    }
    if "X_mat" in ds:
        args = (end.X_mat.values, end.K_raw.values, end.V_raw.values, T, sigma_w)
        pub = published_criterion(*args, n1=n1, n2=n2)
        draws = published_sign_draws(*args, n1=n1, n2=n2, n_draws=N_SIGN_DRAWS, seed=0) & alive[:, None]
        out.update(K_S_pub=("model", pub["K_S"]), V_S_pub=("model", pub["V_S"]),
                   converged_pub=("model", pub["converged"] & alive),
                   converged_pub_draws=(("model", "draw"), draws))
    if "K_k" in ds:
        coef_k = spacing_coefficients(ds, basis="k").isel(t=-1, drop=True)
        out.update(K_S_k=coef_k.K_S, V_S_k=coef_k.V_S, converged_k=criterion(coef_k),
                   converged_kd=criterion(spacing_coefficients(ds, basis="k_descending").isel(t=-1, drop=True)))
    return xr.Dataset(out, attrs={"t_f": float(ds.t.values[-1])})


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

    def estimate(s):
        m = np.nanmean(s, axis=1)
        return crossing(x, m, 0.5 * (m[0] + m[-1]))

    return _bootstrapped(estimate, a, n_boot, seed)


def fraction_crossing(x, flags, level, *, n_boot=0, seed=0):
    """Where the fraction of models meeting a criterion falls through ``level``, with a bootstrap.

    ``flags`` (len(x), n_models) booleans (e.g. ``converged`` at each temperature, independent
    ensembles at each x). Estimator: the fraction at each x and its first crossing of
    ``level`` (:func:`crossing`, log x). Error: ``n_boot`` resamples of the models at each x
    independently; returns (x_c, lo, hi), lo and hi the 16% and 84% quantiles of the
    resampled crossings (NaN without resamples, or if fewer than 90% of them cross).
    """
    x, a = np.asarray(x, float), np.asarray(flags, float)
    if a.ndim != 2 or a.shape[0] != len(x):
        raise ValueError(f"flags must have shape (len(x), n_models) = ({len(x)}, ...); got {a.shape}")
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="fraction")
    _validate.integer("n_boot", n_boot, low=0, doc="bootstrap resamples")
    return _bootstrapped(lambda s: crossing(x, s.mean(axis=1), level), a, n_boot, seed)


def _midpoint(x, s, level):
    """Midpoint of the last x with mean(s) > level and the next x; NaN if none or the last x."""
    above = np.flatnonzero(s.mean(axis=1) > level)
    if above.size == 0 or above[-1] == len(x) - 1:
        return float("nan")
    i = above[-1]
    return float(0.5 * (x[i] + x[i + 1]))


def _midpoint_args(x, flags, level, n_boot):
    x, a = np.asarray(x, float), np.asarray(flags, float)
    if a.ndim != 2 or a.shape[0] != len(x):
        raise ValueError(f"flags must have shape (len(x), n_models) = ({len(x)}, ...); got {a.shape}")
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="fraction")
    _validate.integer("n_boot", n_boot, low=0, doc="bootstrap resamples")
    return x, a


def published_midpoint(x, flags, level, *, n_boot=0, seed=0):
    """The authors' transition estimate of Fig. 8 (left): the midpoint of the two bracketing grid values.

    Park, Lucini & Aarts (2025), Fig. 8 (left), as their notebook computes it
    (``empirical_phase.ipynb``: ``t_idx = max(where(f > level)); Tc = (T[t_idx] + T[t_idx+1]) / 2``):
    the last grid value x_i where the fraction passing *exceeds* ``level``, and the next one,
    averaged arithmetically. NaN if no value exceeds ``level`` or the last one does.
    ``flags`` (len(x), n_models) booleans; ``n_boot`` resamples of the models at each x give
    (x_c, lo, hi) as in :func:`fraction_crossing` (NaN if fewer than 90% of the resamples give a
    value: :func:`published_midpoint_resamples` returns them all). The estimate can only take the
    midpoints of the grid, so lo and hi are grid midpoints too.
    """
    x, a = _midpoint_args(x, flags, level, n_boot)
    return _bootstrapped(lambda s: _midpoint(x, s, level), a, n_boot, seed)


def published_midpoint_resamples(x, flags, level, *, n_boot, seed=0):
    """:func:`published_midpoint` on ``n_boot`` resamples of the models at each x (the resampling of
    :func:`fraction_crossing`, same seed, same draws): an array of ``n_boot`` midpoints, NaN where a
    resample has no crossing or its last point above ``level`` is the last x.

    Because the rule takes the *last* x above ``level``, a far point that exceeds ``level`` by
    chance moves it there; the share of resamples that keep the estimate's bracket measures that.
    """
    x, a = _midpoint_args(x, flags, level, n_boot)
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    n = a.shape[1]
    return np.array([_midpoint(x, np.take_along_axis(a, rng.integers(0, n, a.shape), 1), level)
                     for _ in range(n_boot)])


def _bootstrapped(estimate, a, n_boot, seed):
    """(estimate(a), lo, hi): lo, hi the 16% and 84% quantiles of ``estimate`` over ``n_boot``
    resamples of the columns (models) of ``a``, drawn independently in each row; NaN without
    resamples, or if fewer than 90% of the resampled estimates are finite."""
    xc = estimate(a)
    if n_boot == 0:
        return xc, float("nan"), float("nan")
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    n = a.shape[1]
    boot = np.array([estimate(np.take_along_axis(a, rng.integers(0, n, a.shape), 1)) for _ in range(n_boot)])
    if np.mean(np.isfinite(boot)) < 0.9:
        return xc, float("nan"), float("nan")
    lo, hi = np.nanquantile(boot, [0.16, 0.84])
    return xc, float(lo), float(hi)


def drift_balance(ds, *, since=0.5):
    """How close the deterministic drift of S is to zero late in a run: the stationarity test
    behind the reading of criterion (4.15).

    Over the records with t >= ``since`` t_f, per model: the time averages of K_S (eigenbasis
    of X, with the Ito drift) and of the Coulomb drift T V_S / S. Returns a Dataset over
    ``model`` with ``K_S``, ``coulomb`` (= <T V_S / S>), ``balance`` = <K_S + T V_S / S> /
    <|K_S|> (0 for a stationary S: restoring and repulsive drifts cancel on average),
    ``snr`` = -<K_S>/<V_S> (the time-averaged right side of eq. 4.10) and ``T_over_S``
    = <T / S> (its value for an exactly stationary S without the Ito term).
    """
    _validate.real("since", since, low=0.0, high=1.0, high_open=True, doc="fraction of the run")
    T = float(ds.attrs["T"])
    late = ds.t >= since * float(ds.t[-1])
    c = spacing_coefficients(ds, ito=True).sel(t=late)
    S = ds.S.sel(t=late)
    coulomb = (T * c.V_S / S).mean("t")
    return xr.Dataset({"K_S": c.K_S.mean("t"), "coulomb": coulomb,
                       "balance": (c.K_S.mean("t") + coulomb) / abs(c.K_S).mean("t"),
                       "snr": -c.K_S.mean("t") / c.V_S.mean("t"), "T_over_S": (T / S).mean("t")})


def ito_share(ds):
    """Median over times (t > 0) and models of |Ito drift of S| / |K_S with it| (eigenbasis of X):
    how much of the drift of S the second-order term T (C_NN - C_11)/(N - 1) carries."""
    with_ito, without = spacing_coefficients(ds, ito=True), spacing_coefficients(ds)
    share = (abs(with_ito.K_S - without.K_S) / abs(with_ito.K_S)).sel(t=ds.t > 0)
    return float(np.nanmedian(share.values))


def spread_growth(ds):
    """Median over models of S(t_f) / S(0): how far training widens the spectrum."""
    return float(np.median(ds.S.values[-1] / ds.S.values[0]))


def spacing_over_bound(S_f, sigma_w, *, n1, n2):
    """S(t_f) / S_max(0), S_max(0) = 4 sigma_w^2 sqrt(n2/n1) / (n2 - 1) the bound of eq. (4.14).

    Where the drifts of S balance late in a run (:func:`drift_balance`), -K_S/V_S ~ T/S(t_f)
    and the criterion (4.15), T/S_max(0) <= -K_S/V_S, reduces to S(t_f) <~ S_max(0): a ratio
    above 1 means that (4.15) in the basis of X fails on average for that model.
    """
    _validate.real("sigma_w", sigma_w, low=0.0, low_open=True, doc="initial weight scale")
    return np.asarray(S_f, float) / theory.initial_spacing_bound(float(sigma_w), n1, n2)


def criterion_late(ds, *, since=0.5, basis="x", repulsion="b5"):
    """Criterion (4.15) read late in a run in two ways, per model: at every record with
    t >= ``since`` t_f, and once with K_S, V_S averaged over those records.

    Returns a Dataset over ``model``: ``instant`` (fraction of that model's late records that
    satisfy it), ``averaged`` (bool: T/S_max(0) <= -<K_S>/<V_S>) and ``restoring`` (fraction of
    its late records with K_S < 0, which (4.15) needs whatever V_S > 0 is). K_S without the Ito drift,
    as the paper's criterion; ``basis`` as in :func:`spacing_coefficients`. ``repulsion``: "b5"
    uses V_S of the one-particle reduction (B.5), as the paper; "measured" replaces it by the
    repulsion the measured spectrum exerts, V_S times :func:`coulomb_ratio` at each record (so
    that T V_S / S is the exact Coulomb drift of S, eq. B.3; basis "x" only).
    """
    _validate.real("since", since, low=0.0, high=1.0, high_open=True, doc="fraction of the run")
    if repulsion not in ("b5", "measured"):
        raise ValueError(f"repulsion must be 'b5' (the paper's V_S) or 'measured' (the exact Coulomb sum); "
                         f"got {repulsion!r}")
    if repulsion == "measured" and basis != "x":
        raise ValueError("repulsion='measured' needs basis='x' (the exact sum is taken in the eigenbasis of X)")
    T, sigma_w = float(ds.attrs["T"]), float(ds.attrs["sigma_w"])
    n1, n2 = json.loads(ds.attrs["layers"])[1], ds.sizes["eig"]
    c = spacing_coefficients(ds, basis=basis)
    if repulsion == "measured":
        c = c.assign(V_S=c.V_S * coulomb_ratio(ds))
    c = c.sel(t=ds.t >= since * float(ds.t[-1]))
    inst = theory.converged(T, sigma_w, c.K_S.values, c.V_S.values, n1=n1, n2=n2).mean(axis=0)
    avg = theory.converged(T, sigma_w, c.K_S.mean("t").values, c.V_S.mean("t").values, n1=n1, n2=n2)
    return xr.Dataset({"instant": ("model", inst), "averaged": ("model", avg),
                       "restoring": ("model", (c.K_S.values < 0).mean(axis=0))}, coords={"model": ds.model})


def coulomb_ratio(ds):
    """Exact Coulomb drift of S over its one-particle approximation (B.5-B.6), per time and model.

    Exact (eq. B.3 divided by N - 1, eigenbasis of X, measured spectra):
    T [sum_{j != N} V_Nj / (x_N - x_j) - sum_{j != 1} V_1j / (x_1 - x_j)] / (N - 1).
    Approximation: T V_S / S, every spacing replaced by a multiple of the average one
    (eq. B.5). A ratio of 1 means (B.5) is exact for that spectrum; below 1, the one-particle
    equation overstates the repulsion of the extreme levels.
    """
    x, V = ds.x.values, ds.V.values
    N = x.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        top = np.sum(np.where(np.arange(N) != N - 1, V[..., -1, :] / (x[..., -1:] - x), 0.0), axis=-1)
        bottom = np.sum(np.where(np.arange(N) != 0, V[..., 0, :] / (x[..., :1] - x), 0.0), axis=-1)
        exact = (top - bottom) / (N - 1)
        ratio = exact / (spacing_coefficients(ds).V_S.values / ds.S.values)
    return xr.DataArray(ratio, dims=("t", "model"), coords={"t": ds.t, "model": ds.model}, name="coulomb_ratio")


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


def level_median_gap(measured, predicted, tau, *, level=0.68, n_boot=2000, seed=0):
    """Gap in the median of ln x of one eigenvalue, SGD against an SDE, with a bootstrap over models.

    ``measured`` (t, model) and ``predicted`` (t, path), > 0, on the recording times ``tau``,
    with the paths grouped by model (paths m k, ..., m k + k - 1 belong to model m, as
    :func:`dyson_levels_sde` orders them). The signed gap g(tau) = median ln x_meas - median
    ln x_SDE (measured minus SDE) is summarised as ``end`` (at tau_f) and ``late`` (its mean over
    the records with tau >= tau_f / 2), each with a percentile-bootstrap interval (central
    ``level``, ``n_boot`` resamples of the models, each model with its own SDE paths, which
    share its coefficients): ``end_lo``, ``end_hi``, ``late_lo``, ``late_hi``. ``max`` is the
    largest |g| over tau > 0, without an interval (a bootstrap of a maximum is biased upward).
    Returns a dict of floats.
    """
    a, b = np.log(np.asarray(measured, float)), np.log(np.asarray(predicted, float))
    tau = np.asarray(tau, float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0] or a.shape[0] < 2 or tau.shape != (a.shape[0],):
        raise ValueError(f"measured and predicted must be (t, model) and (t, path) on the same >= 2 times tau; "
                         f"got {a.shape}, {b.shape}, tau {tau.shape}")
    M, P = a.shape[1], b.shape[1]
    if M < 2 or P % M:
        raise ValueError(f"need >= 2 models and a whole number of paths per model; got {M} models, {P} paths")
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, doc="coverage")
    _validate.integer("n_boot", n_boot, low=100, doc="bootstrap resamples")
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("measured and predicted must be >= 0 and not NaN (their logarithms are compared)")
    late = tau >= tau[-1] / 2  # its last row is tau_f: the end

    def pooled(v, size):  # (t, models x size) -> each row sorted, with the model of each value
        order = np.argsort(v, axis=1, kind="stable")
        return np.take_along_axis(v, order, axis=1), np.ascontiguousarray(order // size)

    idx = np.random.default_rng(seed).integers(0, M, size=(n_boot, M))
    counts = np.zeros((n_boot, M), np.int64)
    np.add.at(counts, (np.arange(n_boot)[:, None], idx), 1)
    med = np.empty((2, int(late.sum()), n_boot))
    for side, (v, size) in enumerate(((a, 1), (b, P // M))):
        _kernels.pooled_median_boot(*pooled(v[late], size), counts, med[side])
    g_boot = med[0] - med[1]  # (late records, n_boot)
    boot = np.stack([g_boot[-1], g_boot.mean(axis=0)], axis=1)  # (n_boot, 2): end, late
    q = (1 - level) / 2
    lo, hi = np.quantile(boot, q, axis=0), np.quantile(boot, 1 - q, axis=0)
    g = np.median(a, axis=1) - np.median(b, axis=1)
    return {"end": float(g[-1]), "end_lo": float(lo[0]), "end_hi": float(hi[0]),
            "late": float(g[late].mean()), "late_lo": float(lo[1]), "late_hi": float(hi[1]),
            "max": float(np.abs(g[1:]).max())}


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
