"""Composite runs for sweeps (:func:`tsdyn.sweep.run`) and for the chapter."""

import json
import os
from functools import partial

import numpy as np
import xarray as xr

from .. import sweep
from . import analysis, theory
from .analysis import STEPS_PER_EPOCH, summary
from .params import Params
from .simulate import train_ensemble


def phase_point(*, seed, T, inv_sigma_w, steps, n_models, batch=4, n_points=8, moment_samples=None,
                n_train=4000, n_test=100, w_max=1e6, k_basis=True, published=True, moments="ends",
                sharpness_samples=None, hessian=False, teacher_distance=False):
    """One point of the T - 1/sigma_w phase diagram: the per-model :func:`summary` of an ensemble.

    eps = T * batch, sigma_w = 1 / inv_sigma_w; ``steps`` SGD steps. The form
    :func:`tsdyn.sweep.run` calls (a grid over ``T`` and ``inv_sigma_w``). The gradient
    moments are measured at t = 0 and t_f only (``moments="end"``: at t_f only, the summary's
    ``grad_norm0`` then NaN): all that the summary needs; ``k_basis``
    also measures them in the eigenbasis of K (the paper's App. B), for ``converged_k``;
    ``published`` records the unrotated moments for the authors' recipe (``converged_pub``).
    ``sharpness_samples``, ``hessian``, ``teacher_distance``: as :func:`train_ensemble`; the summary
    then carries ``sharpness`` (and ``hessian_sharpness``) and ``teacher_dist`` at t_f.
    """
    p = Params.from_temperature(T, inv_sigma_w, batch=batch, n_train=n_train, n_test=n_test, w_max=w_max)
    ds = train_ensemble(p, steps, seed=seed, n_models=n_models, n_points=n_points,
                        moment_samples=moment_samples, moments=moments, k_basis=k_basis,
                        published=published, sharpness_samples=sharpness_samples, hessian=hessian,
                        teacher_distance=teacher_distance)
    return summary(ds)


def phase_diagram(Ts, inv_sigma_ws, *, steps, n_models, seed=0, executor=None, cache=None,
                  progress=False, **kw):
    """Sweep :func:`phase_point` over the grid (T, inv_sigma_w): one ensemble per point.

    Returns the stacked Dataset (T, inv_sigma_w, model) (the sweep's replica axis, of
    length 1, is dropped) with attrs ``steps``, ``n_models``. Runs on local processes,
    serially (``executor="serial"``) or on a Dask cluster (``client.get_executor()``).
    """
    fn = partial(phase_point, steps=int(steps), n_models=int(n_models), **kw)
    ds = sweep.run(fn, {"T": [float(t) for t in Ts], "inv_sigma_w": [float(s) for s in inv_sigma_ws]},
                   executor=executor, cache=cache, seed=seed, progress=progress)
    ds = ds.isel(seed=0, drop=True)
    ds.attrs.update(steps=int(steps), n_models=int(n_models))
    return ds


def linear_scaling(T, inv_sigma_w, batches, tau_f, *, seed, n_models, n_points=17, sharpness_samples=None):
    """Ensembles at the same temperature T = eps/|B| with different (eps, |B|) (linear scaling rule).

    For each batch size B: eps = T B and steps = tau_f / eps, so every run covers the
    same Langevin time tau = eps * steps (and uses the same number of samples,
    tau_f / T). All runs share ``seed``: model m has the same teacher, data and
    initial student for every B (a paired comparison); only the batches differ.
    Recording times are linear in tau, common to all B. With ``sharpness_samples`` the largest
    Gauss-Newton curvature of each network at tau_f is also returned (``sharpness`` (batch, model),
    see :func:`train_ensemble`).

    Returns
    -------
    xarray.Dataset
        ``loss`` (batch, model) at tau_f; ``loss_tau`` and ``S`` (batch, tau, model) at every
        recording time; ``steps`` (batch).
    """
    plan = []
    for B in batches:
        p = Params.from_temperature(T, inv_sigma_w, batch=int(B))
        steps = tau_f / p.eps
        if abs(steps - round(steps)) > 1e-9 * steps or round(steps) % (n_points - 1) or steps < 1:
            raise ValueError(f"tau_f / (T |B|) = {steps:g} steps at |B| = {B}: it must be a whole "
                             f"multiple of n_points - 1 = {n_points - 1}, so that every run records "
                             f"at the same tau")
        plan.append((p, int(round(steps))))
    runs = [train_ensemble(p, steps, seed=seed, n_models=n_models, n_points=n_points, spacing="linear",
                           moment_samples=2, moments="ends", sharpness_samples=sharpness_samples)
            for p, steps in plan]
    tau = runs[0].tau.values
    return xr.Dataset({
        "loss": (("batch", "model"), np.stack([ds.loss.values[-1] for ds in runs])),
        "loss_tau": (("batch", "tau", "model"), np.stack([ds.loss.values for ds in runs])),
        "S": (("batch", "tau", "model"), np.stack([ds.S.values for ds in runs])),
        "steps": (("batch",), [int(ds.attrs["steps"]) for ds in runs]),
        **({"sharpness": (("batch", "model"), np.stack([ds.sharpness.values[-1] for ds in runs]))}
           if sharpness_samples is not None else {}),
    }, coords={"batch": list(batches), "tau": tau, "model": runs[0].model.values},
        attrs={"T": float(T), "inv_sigma_w": float(inv_sigma_w), "tau_f": float(tau_f)})


CRITERIA = ("converged", "converged_k", "converged_kd")  # sign-invariant readings of App. B
PUBLISHED = "converged_pub"  # the authors' notebook recipe (analysis.published_criterion)


def criterion_vs_steps(T, inv_sigma_w, steps_list, *, seed, n_models, **kw):
    """Fraction of models meeting criterion (4.15) at t_f against the length of training.

    One :func:`phase_point` per entry of ``steps_list`` (the same seed: model m has the
    same teacher, data and start in each, only trained longer). Returns a Dataset over
    ``steps`` and ``model`` with the per-model flags of the three readings (``converged``:
    eigenbasis of X; ``converged_k``: the paper's basis of K, levels labelled by X;
    ``converged_kd``: K's eigenvalues descending; ``converged_pub``: the authors' recipe) and the
    test loss.
    """
    runs = [phase_point(seed=seed, T=T, inv_sigma_w=inv_sigma_w, steps=int(s), n_models=n_models, **kw)
            for s in steps_list]
    ds = xr.concat([r[[*CRITERIA, PUBLISHED, "loss", "K_S", "S_f", "S0"]] for r in runs], dim="steps")
    return ds.assign_coords(steps=[int(s) for s in steps_list]).assign_attrs(T=float(T),
                                                                              inv_sigma_w=float(inv_sigma_w))


def spacing_sde(ds, *, paths=16, ito=True, basis="x", noise=True, coulomb="b5", seed, n_steps=20000,
                min_substeps=200, check=True):
    """The level-spacing equation (4.8) driven by each model's own recorded coefficients.

    ``ds``: a :func:`train_ensemble` Dataset with moments at every recording time. Each
    model m gets ``paths`` SDE paths that start at its S(0) and use its K_S, V_S, D_S
    (:func:`spacing_coefficients` with ``ito`` and ``basis``), interpolated linearly in
    tau between recordings; ``noise=False`` sets D_S = 0 (the drift alone). ``coulomb``:
    "b5" the one-particle Coulomb drift T V_S / S of eq. (B.5); "exact" multiplies V_S by
    :func:`analysis.coulomb_ratio` at each record, so that T V_S / S equals the exact Coulomb
    drift of the extreme levels (eq. B.3, all pairs) whenever S equals the measured spacing
    (basis "x" only). Step
    tau_f / ``n_steps`` (at least ``min_substeps`` per recording interval), checked (if
    ``check``) against half the step on the same Brownian paths (``attrs["strong_error"]``).
    Returns the :func:`theory.level_spacing_sde` Dataset; path p belongs to model p // paths.
    """
    tau = ds.tau.values
    coef = analysis.spacing_coefficients(ds, ito=ito, basis=basis)
    kw = {k: np.repeat(coef[k].values.T, paths, axis=0) for k in ("K_S", "V_S", "D_S")}
    if not noise:
        kw["D_S"] = np.zeros_like(kw["D_S"])
    if coulomb not in ("b5", "exact"):
        raise ValueError(f"coulomb must be 'b5' or 'exact'; got {coulomb!r}")
    if coulomb == "exact":
        if basis != "x":
            raise ValueError("coulomb='exact' needs basis='x' (the exact sum is taken in the eigenbasis of X)")
        ratio = analysis.coulomb_ratio(ds).values
        kw["V_S"] = kw["V_S"] * np.repeat(np.where(np.isfinite(ratio), ratio, 1.0).T, paths, axis=0)
    return theory.level_spacing_sde(np.repeat(ds.S.values[0], paths), tau, **kw, T=float(ds.attrs["T"]),
                                    dt=tau[-1] / n_steps, min_substeps=min_substeps, interpolate="linear",
                                    seed=seed, check=check)


MEDIAN_GAP_KEYS = ("late", "late_lo", "late_hi", "end", "end_lo", "end_hi")  # of analysis.level_median_gap


def sde_record_density(params, steps, n_points_list, *, seed, sde_seed, n_models, moment_samples, paths=16,
                       coulombs=("b5",), levels=(), level_paths=2, level_steps=80000, level_seed=None):
    """Gap between SGD and the level-spacing SDE (4.8) against the density of coefficient records.

    For each entry of ``n_points_list`` the same models (``seed``: teachers, data, starts) are
    trained for ``steps`` with moments recorded at ``record_steps(steps, n_points, "log+linear")``
    and :func:`spacing_sde` (Ito drift, basis of X) is driven by those records, once per entry of
    ``coulombs`` ("b5" or "exact", see :func:`spacing_sde`). The SGD batches are redrawn with the
    recording blocks, so the measured ensembles differ by their SGD noise. Returns a Dataset over
    ``coulomb`` and ``records`` (the number of recording times): ``gap_max`` (largest |mean ln
    S_meas - mean ln S_SDE| over t > 0), ``gap_late`` (over the second half in tau) and
    ``gap_end`` (signed, measured minus SDE, at t_f); and the same gap read in medians with an
    error, :func:`analysis.level_median_gap` on S (signed, median ln S measured minus SDE;
    bootstrap over models, each with its own paths, 68 %): ``median_late`` (its mean over the
    second half) and ``median_end`` (at t_f), each with ``_lo`` and ``_hi``.

    ``levels`` (indices into the ascending spectrum of X, 0 the smallest): the same records
    also drive the full Dyson equation (4.3) with the Ito drift (:func:`dyson_levels_sde`,
    ``level_paths`` paths per model, ``level_steps`` Euler steps over the run, ``level_seed``,
    default ``sde_seed``), and for each level the gap in the median of ln x_i (measured minus
    equation, :func:`analysis.level_median_gap`: bootstrap over models, 68 % interval) is added
    over (``level``, ``records``): ``level_end`` (signed, at t_f) and ``level_late`` (its mean
    over the second half in tau), each with ``_lo`` and ``_hi``, and ``level_max`` (largest
    modulus over t > 0).

    The step of every equation is checked against half of it on the same Brownian paths at the
    densest records only (the last entry of ``n_points_list``; the sparser records give the
    equation fewer, not faster-changing, coefficients): attrs ``strong_error`` (largest over
    ``coulombs``) and, with ``levels``, ``level_strong_error``.
    """
    n2 = params.layers[2]
    levels = list(levels)
    for lev in levels:
        if not (isinstance(lev, (int, np.integer)) and 0 <= lev < n2):
            raise ValueError(f"levels must be integers in [0, n2 - 1 = {n2 - 1}] (0 the smallest eigenvalue); "
                             f"got {lev!r}")
    out = np.full((9, len(coulombs), len(n_points_list)), np.nan)
    lev_out = {k: np.full((len(levels), len(n_points_list)), np.nan)
               for k in ("end", "end_lo", "end_hi", "late", "late_lo", "late_hi", "max")}
    records, strong, level_strong = [], [], float("nan")
    for j, n_points in enumerate(n_points_list):
        check = j == len(n_points_list) - 1
        ds = train_ensemble(params, steps, seed=seed, n_models=n_models, n_points=int(n_points),
                            spacing="log+linear", moment_samples=moment_samples)
        tau = ds.tau.values
        records.append(len(tau))
        for i, coulomb in enumerate(coulombs):
            sde = spacing_sde(ds, paths=paths, seed=sde_seed, coulomb=coulomb, check=check)
            if check:
                strong.append(sde.attrs["strong_error"])
            gap, _ = analysis.log_gap(ds.S.values, sde.S.values)
            signed = np.log(ds.S.values).mean(1) - np.log(sde.S.values).mean(1)
            med = analysis.level_median_gap(ds.S.values, sde.S.values, tau)
            out[:, i, j] = (gap[1:].max(), gap[tau >= tau[-1] / 2].max(), signed[-1],
                            *(med[k] for k in MEDIAN_GAP_KEYS))
        if levels:
            full = dyson_levels_sde(ds, paths=level_paths, seed=sde_seed if level_seed is None else level_seed,
                                    n_steps=level_steps, check=check)
            if check:
                level_strong = full.attrs["strong_error"]
            for i, lev in enumerate(levels):
                g = analysis.level_median_gap(ds.x.values[..., lev], full.x.values[..., lev], tau)
                for k, v in g.items():
                    lev_out[k][i, j] = v
    dims = ("coulomb", "records")
    res = xr.Dataset({"gap_max": (dims, out[0]), "gap_late": (dims, out[1]), "gap_end": (dims, out[2]),
                      **{f"median_{k}": (dims, out[3 + n]) for n, k in enumerate(MEDIAN_GAP_KEYS)}},
                     coords={"coulomb": list(coulombs), "records": records},
                     attrs={"T": params.T, "inv_sigma_w": params.inv_sigma_w, "steps": int(steps),
                            "strong_error": float(max(strong))})
    if levels:
        res = res.assign({f"level_{k}": (("level", "records"), v) for k, v in lev_out.items()})
        res = res.assign_coords(level=levels).assign_attrs(level_paths=int(level_paths),
                                                           level_steps=int(level_steps),
                                                           level_strong_error=float(level_strong))
    return res


def dyson_levels_sde(ds, *, paths=4, seed, n_steps=20000, min_substeps=200, check=True):
    """The full Dyson equation (4.3) with the Ito drift, driven by each model's recorded moments.

    ``ds``: a :func:`train_ensemble` Dataset with moments at every recording time. Each model
    m gets ``paths`` paths of :func:`theory.dyson_sde_wishart` from its own x(0), with its K, V,
    C and levels x (eigenbasis of X) interpolated linearly in tau. Path p is model p // paths.
    ``check``: also at half the step on the same Brownian paths (``attrs["strong_error"]``).
    """
    def rep(a):
        return np.repeat(np.moveaxis(a, 0, 1), paths, axis=0)  # (t, model, ...) -> (path, t, ...)

    tau = ds.tau.values
    return theory.dyson_sde_wishart(np.repeat(ds.x.values[0], paths, axis=0), tau, x_ref=rep(ds.x.values),
                                    K=rep(ds.K.values), V=rep(ds.V.values), C=rep(ds.C.values),
                                    T=float(ds.attrs["T"]), dt=tau[-1] / n_steps, min_substeps=min_substeps,
                                    seed=seed, check=check)


def finite_step_gap(T, inv_sigma_w, batches, *, tau_f=4, seed, sde_seed, n_models, moment_samples, paths=16,
                    n_steps=4000):
    """Gap between SGD and the level-spacing SDE (4.8) early in a run, at fixed T and several
    learning rates eps = T |B|: the finite-step test of the one-particle equation.

    For each |B| in ``batches`` an ensemble (``seed``: the same teachers, data and starts for
    every |B|) is trained to tau = ``tau_f`` (an integer: tau_f / eps steps), recording
    log-spaced early (the coefficients change fastest in the first steps) and at
    tau = 1, ..., tau_f; :func:`spacing_sde` (``paths`` per model, ``sde_seed``) is driven by
    those records. Returns {|B|: mean over tau = 1..tau_f of (mean ln S measured - mean ln S
    of the SDE)}: signed, positive where the measured spacing is the larger.
    """
    if int(tau_f) != tau_f or tau_f < 1:
        raise ValueError(f"tau_f must be an integer >= 1 (the gap is read at tau = 1, ..., tau_f); got {tau_f!r}")
    tau_f = int(tau_f)
    out = {}
    for B in batches:
        p = Params.from_temperature(T, inv_sigma_w, batch=int(B))
        ds = train_ensemble(p, int(round(tau_f / p.eps)), seed=seed, n_models=n_models, n_points=2 * tau_f + 1,
                            spacing="log+linear", moment_samples=moment_samples)
        sde = spacing_sde(ds, paths=paths, seed=sde_seed, n_steps=n_steps)
        at = np.isin(ds.tau.values, np.arange(1.0, tau_f + 1.0))
        if at.sum() != tau_f:
            raise ValueError(f"the records of |B| = {B} do not fall on tau = 1, ..., {tau_f} "
                             f"(eps = {p.eps:g}); choose T, |B| with tau_f / eps a whole number")
        out[int(B)] = float(np.mean(np.log(ds.S.values[at]).mean(1) - np.log(sde.S.values[at]).mean(1)))
    return out


LONG_FIELDS = ("loss", "grad_norm", "S_f", "converged", "converged_k", "converged_kd", "converged_pub", "diverged")


def long_record_steps(steps, per_decade=8):
    """Recording steps of :func:`long_column`: 0, then round(10^(k / per_decade)) for k = 0, 1, ...
    below ``steps``, then ``steps``. The grid does not depend on the length of the run, so a
    shorter run records at a prefix of a longer one's times (same models, same batches:
    the same numbers)."""
    k = np.arange(int(np.ceil(per_decade * np.log10(steps))) + 1)
    grid = np.unique(np.round(10.0 ** (k / per_decade)).astype(np.int64))
    return np.concatenate([[0], grid[grid < steps], [steps]])


def long_column(Ts, inv_sigma_w, epochs, *, seed, n_models, T_index=None, per_decade=8, moment_samples=1000,
                path=None, resume=False):
    """Long training of one column of the phase diagram: the paper's length, in epochs of 1000 steps.

    For each T in ``Ts`` an ensemble at 1/sigma_w = ``inv_sigma_w`` (|B| = 4) is trained for
    ``epochs`` x :data:`STEPS_PER_EPOCH` SGD steps, recording at :func:`long_record_steps`
    (``per_decade`` times per decade of steps) the per-model test loss, full-batch gradient norm, level spacing S and the convergence
    criterion (4.15) in the authors' recipe and the sign-invariant readings (:func:`summary`
    of the run so far, moments from ``moment_samples`` training samples). Temperature k of
    ``Ts`` uses the seed ``SeedSequence(seed, spawn_key=(k,))``: distinct models per T, the
    same models whatever else is in ``Ts`` (``T_index`` gives k explicitly when ``Ts`` holds
    one value run apart from its column). With ``path``, the Dataset of the records so far
    is written there (netCDF) after every record, so a run stopped early keeps what it
    reached. For one temperature, the training state (weights, batch generators, records)
    is also written beside it, to ``<path>.state.npz``, after every record: ``resume=True``
    then continues a stopped run from its last record instead of starting again (the
    same arguments; ``epochs`` may be larger), so a run of the paper's length can be
    split over sessions. The result is bit-identical to an uninterrupted run. Returns a
    Dataset over ``T``, ``epoch`` and ``model`` with the fields :data:`LONG_FIELDS`; attrs
    ``steps_per_epoch``, ``epochs`` (the target) and ``epochs_reached``.
    """
    Ts = [float(T) for T in np.atleast_1d(Ts)]
    idx = list(range(len(Ts))) if T_index is None else [int(k) for k in np.atleast_1d(T_index)]
    if len(idx) != len(Ts):
        raise ValueError(f"T_index must give one index per temperature; got {len(idx)} for {len(Ts)}")
    if int(epochs) != epochs or epochs < 1:
        raise ValueError(f"epochs must be a whole number >= 1; got {epochs!r}")
    steps = int(epochs) * STEPS_PER_EPOCH
    rows = [[] for _ in Ts]
    state_path = None if path is None or len(Ts) != 1 else f"{path}.state.npz"
    state = None
    if resume:
        if state_path is None:
            raise ValueError("resume=True continues a run of one temperature saved to path; give path and one T")
        if os.path.exists(state_path):
            state = _load_state(state_path)
            if state["record"] > 0:  # records 1, 2, ... are in the netCDF (record 0 has no row)
                rows[0] = _stored_rows(path, state, Ts[0], inv_sigma_w, n_models, moment_samples, seed)

    def snapshot():
        n = min(len(r) for r in rows)
        per_T = [xr.concat(r[:n], dim="epoch") for r in rows]
        out = xr.concat(per_T, dim="T").assign_coords(T=Ts)
        return out.assign_attrs(inv_sigma_w=float(inv_sigma_w), steps_per_epoch=STEPS_PER_EPOCH,
                                epochs=int(epochs), epochs_reached=float(out.epoch.values[-1]),
                                n_models=int(n_models), moment_samples=int(moment_samples), seed=int(seed))

    def recorder(k):
        def on_record(ds):
            s = summary(ds)[list(LONG_FIELDS)].assign_coords(epoch=float(ds.t.values[-1]) / STEPS_PER_EPOCH)
            s.attrs = {}
            rows[k].append(s)
            if path is not None and all(rows):
                tmp = f"{path}.tmp"
                snapshot().to_netcdf(tmp)
                os.replace(tmp, path)
        return on_record

    for k, (T, i) in enumerate(zip(Ts, idx)):
        p = Params.from_temperature(T, inv_sigma_w)
        ss = np.random.SeedSequence(int(seed), spawn_key=(i,))
        rec = recorder(k)
        ds = train_ensemble(p, steps, seed=ss, n_models=n_models, record_at=long_record_steps(steps, per_decade),
                            moment_samples=moment_samples, moments="all", k_basis=True, published=True,
                            on_record=lambda d, rec=rec: rec(d) if d.sizes["t"] > 1 else None,
                            on_state=None if state_path is None else partial(_save_state, state_path),
                            resume=state)
        rec(ds)
    return snapshot()  # with path, the last record's rec() has written it already


def _stored_rows(path, state, T, inv_sigma_w, n_models, moment_samples, seed):
    """The rows of records 1 .. state["record"] that a stopped :func:`long_column` wrote to
    ``path``, after checking that they are this run's (same T, column, ensemble, moments, seed)."""
    done = xr.load_dataset(path)
    want = dict(inv_sigma_w=float(inv_sigma_w), n_models=int(n_models), moment_samples=int(moment_samples),
                seed=int(seed))
    have = {k: done.attrs.get(k) for k in want}
    if have != want or float(done["T"][0]) != float(T):
        raise ValueError(f"resume: {path} holds a run at T = {float(done['T'][0])!r} with {have}; this call "
                         f"asks for T = {T!r} with {want}: give another path, or resume=False to start again")
    done = done.isel(T=0).drop_vars("T")
    done.attrs = {}
    return [done.isel(epoch=i) for i in range(int(state["record"]))]


def _save_state(path, state):
    """Write a :func:`train_ensemble` state atomically (npz; generator states as JSON)."""
    arrays = {k: v for k, v in state.items() if k not in ("obs", "records", "rng")}
    arrays.update({f"obs_{k}": v for k, v in state["obs"].items()})
    arrays.update({f"records_{i}": v for i, v in enumerate(state["records"])})
    arrays["rng"] = np.array(json.dumps(state["rng"]))
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _load_state(path):
    """The state :func:`_save_state` wrote."""
    with np.load(path) as f:
        state = {k: f[k] for k in f.files}
    out = {k: v for k, v in state.items() if not k.startswith(("obs_", "records_")) and k != "rng"}
    out["obs"] = {k[4:]: v for k, v in state.items() if k.startswith("obs_")}
    out["records"] = [state[f"records_{i}"] for i in range(sum(k.startswith("records_") for k in state))]
    out["rng"] = json.loads(str(state["rng"]))
    return out


def combine_long(parts):
    """Stack :func:`long_column` Datasets run apart (one temperature each, say) over ``T``.

    The records are cut to the epochs that every part reached; ``epochs_reached`` is that
    common length. Returns the Dataset sorted by T.
    """
    parts = list(parts)
    n = min(p.sizes["epoch"] for p in parts)
    out = xr.concat([p.isel(epoch=slice(0, n)) for p in parts], dim="T", combine_attrs="drop_conflicts")
    out = out.sortby("T")
    return out.assign_attrs(epochs_reached=float(out.epoch.values[-1]))
