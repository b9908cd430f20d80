"""Beyond the teacher's stability edge: where SGD goes when the zero-loss minimum repels it.

The batch-resolved boundary of the book's chapter 4 (:func:`tsdyn.dyson.batch_phase_boundary`)
puts the theory's edge T_c(|B|) at the mean-square stability of the teacher at step eps = T |B|
(:mod:`tsdyn.dyson.stability`); at large |B| that edge is the step bound eps lambda_max = 2 of
the teacher's sharpest direction. The loss leaves its low-temperature plateau only well above it.
Two measurements hold the proposed mechanism (SGD leaves the teacher for a flatter region where its
sharpness sits near the step's edge, at little cost in loss) to the data:

- the *step sharpness* eps lambda_max / 2 of the trained networks (lambda_max: the largest
  eigenvalue of the Gauss-Newton matrix of the training loss, :func:`tsdyn.dyson.simulate._sharpness`)
  beside that of each network's own teacher: 1 is the edge of stability of gradient descent;
- the noiseless control: full-batch gradient descent at the same step eps = T |B| on the same
  networks (teachers, data, starts) for the same number of steps round(tau_f / eps)
  (:func:`gd_control`). If its loss leaves the plateau where SGD's does, the step sets the onset,
  not the temperature.
"""

import warnings

import numpy as np
import xarray as xr

from .. import _seeds, _validate
from . import analysis
from .params import Params
from .simulate import _sharpness, networks, train_ensemble


def median_interval(a, *, n_boot=1000, seed=0):
    """Median over the last axis (networks) of ``a`` with a 16-84 % bootstrap interval (NaN-aware:
    a diverged network's NaN is left out). Returns (median, lo, hi), each of shape a.shape[:-1]."""
    a = np.asarray(a, float)
    _validate.integer("n_boot", n_boot, low=1, doc="bootstrap resamples")
    n = a.shape[-1]
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    idx = rng.integers(0, n, (n_boot, n))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN row (every network diverged) gives NaN
        med = np.nanmedian(a, axis=-1)
        boot = np.nanmedian(a[..., idx], axis=-1)  # (..., n_boot)
        lo, hi = np.nanquantile(boot, [0.16, 0.84], axis=-1)
    return med, lo, hi


def _onset(x, log10_loss, rise):
    """The first x where the mean over networks of ``log10_loss`` (len(x), n) rises by ``rise`` above
    its value at x[0] (log-x interpolation, :func:`analysis.crossing`; NaN if it never does)."""
    m = np.nanmean(log10_loss, axis=1)
    return analysis.crossing(x, m - m[0], rise)


def loss_onset(x, log10_loss, *, onset=1.0, n_boot=1000, seed=0):
    """Where the geometric-mean loss first exceeds its value at x[0] by the factor 1 + ``onset``:
    the first crossing of log10(1 + onset) by mean(log10 L)(x) - mean(log10 L)(x[0]) (log-x
    interpolation, :func:`analysis.crossing`), with 16-84 % bootstrap over the networks
    (``log10_loss`` (len(x), n_models), resampled independently at each x). Returns (x_c, lo, hi).
    The estimator of ``T_onset`` in :func:`tsdyn.dyson.batch_phase_boundary`."""
    x = np.asarray(x, float)
    rise = np.log10(1.0 + float(onset))
    return analysis._bootstrapped(lambda a: _onset(x, a, rise), np.asarray(log10_loss, float), n_boot, seed)


def teacher_sharpness(params, *, seed, n_models, n_samples=1000):
    """The largest Gauss-Newton curvature lambda_max of each network's teacher, at W^(2) = W̄^(2) on
    the first ``n_samples`` training samples of that network (:func:`networks`, the same draws as
    :func:`train_ensemble` with ``seed``): the curvature of the zero-loss minimum, where the
    Gauss-Newton matrix is the Hessian. Returns an array (n_models,)."""
    _validate.integer("n_samples", n_samples, low=2, doc="samples for the sharpness")
    net = networks(params, seed=seed, n_models=n_models)
    k = min(int(n_samples), params.n_train)
    return np.array([_sharpness(net["W2_teacher"][m], net["A1_train"][m, :k], net["W3"][m])
                     for m in range(n_models)])


def gd_control(Ts, batch, inv_sigma_w, *, tau_f, n_models, seed=0, sharpness_samples=1000, n_train=4000,
               n_test=100, w_max=1e6):
    """Noiseless control of a batch-resolved temperature scan: full-batch gradient descent at the
    step eps = T |B| of each temperature of ``Ts`` with |B| = ``batch``, for round(tau_f / eps)
    steps (at least 1), on the networks of that scan: temperature k uses seed child k of ``seed``
    (:func:`tsdyn.dyson.batch_phase_boundary` with the same ``seed``, ``tau_f``, 1/sigma_W), so
    network m has the teacher, training data and start of the SGD run it is paired with; only the
    mini-batch noise is gone (W <- W - eps grad L_train, Park et al. eq. 2.28 with the whole
    training set as the batch).

    Returns a Dataset over (``T``, ``model``): ``log10_loss`` (final test loss), ``sharpness``
    (largest Gauss-Newton curvature of the training loss at the end, first ``sharpness_samples``
    samples), ``teacher_sharpness`` (the same at the teacher, :func:`teacher_sharpness`); over
    ``T``: ``eps``, ``steps``; attrs ``batch``, ``tau_f``, ``inv_sigma_w``, ``n_models``.
    """
    _validate.integer("batch", batch, low=1, doc="mini-batch size |B| whose steps eps = T |B| are matched")
    _validate.real("tau_f", tau_f, low=0.0, low_open=True, doc="Langevin time eps t per run")
    _validate.integer("n_models", n_models, low=2, doc="networks per temperature")
    Ts = [float(t) for t in Ts]
    if len(Ts) < 2 or any(not (t > 0) for t in Ts) or any(b <= a for a, b in zip(Ts[:-1], Ts[1:])):
        raise ValueError(f"Ts must be at least two increasing temperatures > 0; got {Ts!r}")
    rows = {"log10_loss": [], "sharpness": [], "teacher_sharpness": []}
    eps, steps = [], []
    for k, T in enumerate(Ts):
        p = Params.from_temperature(T, inv_sigma_w, batch=int(batch), n_train=n_train, n_test=n_test, w_max=w_max)
        n = max(1, int(round(float(tau_f) / p.eps)))
        s = _seeds.child(seed, k)
        ds = train_ensemble(p, n, seed=s, n_models=n_models, n_points=2, moment_samples=2, moments="end",
                            sharpness_samples=sharpness_samples, full_batch=True)
        rows["log10_loss"].append(np.log10(ds.loss.values[-1]))
        rows["sharpness"].append(ds.sharpness.values[-1])
        rows["teacher_sharpness"].append(teacher_sharpness(p, seed=s, n_models=n_models,
                                                           n_samples=sharpness_samples))
        eps.append(p.eps)
        steps.append(n)
    dims = ("T", "model")
    return xr.Dataset({k: (dims, np.array(v)) for k, v in rows.items()}
                      | {"eps": (("T",), np.array(eps)), "steps": (("T",), np.array(steps))},
                      coords={"T": Ts, "model": np.arange(n_models)},
                      attrs={"batch": int(batch), "tau_f": float(tau_f), "inv_sigma_w": float(inv_sigma_w),
                             "n_models": int(n_models), "sharpness_samples": int(sharpness_samples),
                             "dynamics": "full-batch gradient descent at eps = T |B|"})


def step_sharpness(tc, *, n_boot=1000, seed=0):
    """The step sharpness eps lambda_max / 2 of the trained networks of a batch-resolved scan
    (:func:`tsdyn.dyson.batch_phase_boundary` run with ``sharpness_samples``), eps = T |B|: 1 is
    gradient descent's edge of stability, eps lambda_max = 2. Returns a Dataset over (``batch``,
    ``T``): ``step_sharpness`` (median over networks), ``step_sharpness_lo``, ``_hi`` (16-84 %
    bootstrap), and ``eps``."""
    if "sharpness" not in tc:
        raise ValueError("tc holds no sharpness: run batch_phase_boundary with sharpness_samples")
    eps = tc.batch.values[:, None] * tc["T"].values[None, :]
    med, lo, hi = median_interval(tc.sharpness.values * eps[..., None] / 2.0, n_boot=n_boot, seed=seed)
    dims = ("batch", "T")
    return xr.Dataset({"step_sharpness": (dims, med), "step_sharpness_lo": (dims, lo),
                       "step_sharpness_hi": (dims, hi), "eps": (dims, eps)},
                      coords={"batch": tc.batch.values, "T": tc["T"].values})


def edge_comparison(tc, gd, *, onset=1.0, n_boot=1000, seed=0):
    """SGD against its noiseless control at the matched step: a batch-resolved scan ``tc``
    (:func:`tsdyn.dyson.batch_phase_boundary`, with ``sharpness_samples``) against full-batch
    gradient descent ``gd`` (:func:`gd_control` with the scan's seed, tau_f and 1/sigma_W, at
    |B| = ``gd.attrs["batch"]``). The n networks of ``gd`` are the first n of the scan (model m is
    the same network whatever the ensemble size), so every comparison is paired.

    Per temperature (eps = T |B|): ``dlog`` and ``dlog_se``, the mean over networks of the paired
    difference log10 L_SGD - log10 L_GD and its standard error; ``log10_sgd``, ``log10_gd`` (means
    over the paired networks); the step sharpness eps lambda_max / 2 (median, 16-84 % bootstrap) of
    SGD (``sgd_step``, all networks of the scan), of GD (``gd_step``) and of the networks' own
    teachers (``teacher_step``: above 1, the zero-loss minimum repels gradient descent at this
    step). attrs: the onsets in eps (where the geometric-mean loss first exceeds its value at the
    coldest T by 1 + ``onset``, :func:`loss_onset`) of SGD (on the paired networks) and GD,
    ``onset_eps_sgd``, ``onset_eps_gd``, and their ratio ``onset_ratio`` = GD / SGD, each with
    ``_lo``, ``_hi`` from one bootstrap that resamples the same networks for both (paired): a ratio
    of 1 says the noiseless descent leaves its plateau at the same step as SGD.
    """
    b = int(gd.attrs["batch"])
    if b not in tc.batch.values:
        raise ValueError(f"gd was run at |B| = {b}, which the scan tc does not hold (batches {list(tc.batch.values)})")
    if not np.allclose(tc["T"].values, gd["T"].values):
        raise ValueError("gd and tc must share the temperatures (gd_control with the scan's Ts)")
    n = gd.sizes["model"]
    if n > tc.sizes["model"]:
        raise ValueError(f"gd has {n} networks, the scan only {tc.sizes['model']}: pair at most as many")
    x = tc["T"].values * b
    Ls = tc.log10_loss.sel(batch=b).values[:, :n]
    Lg = gd.log10_loss.values
    d = Ls - Lg
    rise = np.log10(1.0 + float(onset))

    def onsets(a, g):
        return _onset(x, a, rise), _onset(x, g, rise)

    est = onsets(Ls, Lg)
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    boot = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, Ls.shape)  # the same networks for SGD and GD at each T
        boot.append(onsets(np.take_along_axis(Ls, idx, 1), np.take_along_axis(Lg, idx, 1)))
    boot = np.array(boot)
    boot = np.column_stack([boot, boot[:, 1] / boot[:, 0]])
    ok = np.mean(np.isfinite(boot), axis=0) >= 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.where(ok, np.nanquantile(boot, [0.16, 0.84], axis=0), np.nan)
    attrs = {"batch": b, "n_models": int(n), "onset": float(onset)}
    for j, name in enumerate(("onset_eps_sgd", "onset_eps_gd", "onset_ratio")):
        attrs[name] = float(est[j] if j < 2 else est[1] / est[0])
        attrs[f"{name}_lo"], attrs[f"{name}_hi"] = float(q[0, j]), float(q[1, j])
    out = {"eps": (("T",), x),
           "dlog": (("T",), np.nanmean(d, axis=1)),
           "dlog_se": (("T",), np.nanstd(d, axis=1, ddof=1) / np.sqrt(np.sum(np.isfinite(d), axis=1))),
           "log10_sgd": (("T",), np.nanmean(Ls, axis=1)), "log10_gd": (("T",), np.nanmean(Lg, axis=1))}
    for key, sharp in (("sgd_step", tc.sharpness.sel(batch=b).values), ("gd_step", gd.sharpness.values),
                       ("teacher_step", gd.teacher_sharpness.values)):
        med, lo, hi = median_interval(sharp * x[:, None] / 2.0, n_boot=n_boot, seed=seed)
        out.update({key: (("T",), med), f"{key}_lo": (("T",), lo), f"{key}_hi": (("T",), hi)})
    return xr.Dataset(out, coords={"T": tc["T"].values}, attrs=attrs)
