"""Mini-batch SGD of an ensemble of tanh teacher-student networks, all models in lockstep."""

import numpy as np
import xarray as xr

from .. import __version__, _grids, _seeds, _validate
from . import _kernels
from .params import Params

# Mini-batch indices are drawn in blocks of at most this many steps per model.
_BLOCK_STEPS = 2048


def _stream(ss, model, kind):
    """Child seed of one model and one kind (0 teacher, 1 data, 2 student, 3 batches).

    Built from ``ss``'s entropy and spawn key (not the stateful ``ss.spawn``), so model
    m of an ensemble is the same network trained on the same batches whatever
    ``n_models`` is.
    """
    return np.random.default_rng(_seeds.child(ss, model, kind))


def networks(params, *, seed, n_models, init="random"):
    """Teachers, data and initial students of an ensemble (Park et al. sec. 3.1).

    ``init="teacher"`` starts each student at its teacher's W̄^(2) plus the same Gaussian
    draw N(0, sigma_w^2 / n1): a perturbed zero-loss minimum, for stability tests.

    Model m: teacher W̄^(l)_ij ~ N(0, 1/n_{l-1}) (eq. 3.1); n_train + n_test inputs
    x ~ N(0, I_{n0}) labelled by the teacher; student W^(2)_ij ~ N(0, sigma_w^2/n1)
    (eq. 2.11), W^(1), W^(3) copied from the teacher.

    Returns
    -------
    dict of ndarray
        ``W1`` (M, n1, n0), ``W2_teacher`` (M, n2, n1), ``W3`` (M, n2), ``W2`` (M, n2, n1)
        (student at t = 0), ``A1_train`` (M, n_train, n1) and ``A1_test`` (M, n_test, n1)
        (the fixed first-layer activations tanh(W^(1) x)), ``y_train`` (M, n_train),
        ``y_test`` (M, n_test).
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a dyson.Params; got {type(params).__name__}")
    _validate.integer("n_models", n_models, low=1, doc="ensemble size")
    if init not in ("random", "teacher"):
        raise ValueError(f"init must be 'random' or 'teacher'; got {init!r}")
    ss = _seeds.seed_sequence(seed)
    n0, n1, n2, _ = params.layers
    D, Dt = params.n_train, params.n_test
    out = {k: [] for k in ("W1", "W2_teacher", "W3", "W2", "A1_train", "A1_test", "y_train", "y_test")}
    for m in range(n_models):
        rt, rd, rs = (_stream(ss, m, kind) for kind in range(3))
        W1 = rt.standard_normal((n1, n0)) / np.sqrt(n0)
        W2t = rt.standard_normal((n2, n1)) / np.sqrt(n1)
        W3 = rt.standard_normal(n2) / np.sqrt(n2)
        X = rd.standard_normal((D + Dt, n0))
        A1 = np.tanh(X @ W1.T)
        y = np.tanh(A1 @ W2t.T) @ W3
        out["W1"].append(W1)
        out["W2_teacher"].append(W2t)
        out["W3"].append(W3)
        out["W2"].append(rs.standard_normal((n2, n1)) * (params.sigma_w / np.sqrt(n1))
                         + (W2t if init == "teacher" else 0.0))
        out["A1_train"].append(A1[:D])
        out["A1_test"].append(A1[D:])
        out["y_train"].append(y[:D])
        out["y_test"].append(y[D:])
    return {k: np.ascontiguousarray(np.stack(v)) for k, v in out.items()}


def record_steps(steps, n_points, spacing="log"):
    """Recording steps: 0, ..., steps; log-spaced (integers, duplicates dropped), linear, or
    "log+linear": the union of both grids of ``n_points`` (fine early on a log axis and
    no interval longer than steps / (n_points - 1) late, for coefficients measured along
    the run)."""
    return _grids.integer_grid(steps, n_points, spacing)


def train_ensemble(params, steps, *, seed, n_models, n_points=30, spacing="log", moment_samples=None,
                   moments="all", k_basis=False, published=False, on_record=None, record_at=None,
                   on_state=None, resume=None, sharpness_samples=None, hessian=False, teacher_distance=False,
                   init="random", full_batch=False):
    """Train an ensemble of students in lockstep and record the paper's observables.

    All models advance together in one numba kernel call per block of steps
    (models in parallel, no Python loop per step). Mini-batches are drawn with
    replacement from the training set (i.i.d. batches, as assumed by the Langevin
    description, eq. 2.29); each model has its own teacher, data and batches, drawn
    from children of ``seed`` indexed by the model, so model m is the same whatever
    ``n_models`` and ``n_points`` are.

    Parameters
    ----------
    params : Params
    steps : int
        Number of SGD steps t_f.
    seed : int or numpy.random.SeedSequence
    n_models : int
        Ensemble size |S|.
    n_points : int
        Number of recording times (see :func:`record_steps`).
    spacing : {"log", "linear", "log+linear"}
    moment_samples : int or None
        Number of training samples (the first ones) over which the gradient moments
        K, V (eq. 4.4) and the full-batch gradient are measured; None: all n_train.
    moments : {"all", "ends", "end"}
        Measure ``grad_norm``, ``K`` and ``V`` at every recording time, only at the
        first and last (cheaper, for sweeps), or only at the last (for sweeps that read the
        end of training alone); NaN elsewhere.
    published : bool
        Also record X and the unrotated moments of Delta^X (``X_mat``, ``K_raw``, ``V_raw``)
        wherever the moments are measured, for the authors' own criterion recipe.
    k_basis : bool
        Also record the moments in the eigenbasis of the drift matrix K = -E[Delta^X]
        itself, as in the paper's App. B (``K_k``, ``V_k``, ``C_k``, ``xq_k`` below): one more
        pass over the moment samples wherever the moments are measured.
    full_batch : bool
        Full-batch gradient descent in place of SGD: every step uses the mean gradient over all
        n_train training samples (:func:`_kernels.gd_block`; no sampling, no noise), with the
        same teachers, data and starts as the SGD run of the same seed. ``params.batch`` is not
        used (its T = eps/|B| labels the run only); no batch generator is drawn from.
    init : {"random", "teacher"}
        The start: the paper's random W^(2) (eq. 2.11), or the teacher's W̄^(2) plus that
        same draw (:func:`networks`).
    sharpness_samples : int or None
        Also record ``sharpness`` wherever the moments are measured: the largest eigenvalue
        lambda_max of the Gauss-Newton matrix (1/n) sum_a J_a J_a^T, J_a = d y_hat(x_a)/d vec W^(2),
        over the first ``sharpness_samples`` training samples (the Hessian of the training loss
        where the residuals vanish; eps lambda_max = 2 is gradient descent's stability limit).
    hessian : bool
        With ``sharpness_samples``, also record ``hessian_sharpness``: the largest eigenvalue of
        the Hessian of the training loss over the same samples (Gauss-Newton matrix plus the
        residual term, :func:`_sharpness`), which differs from ``sharpness`` away from the teacher.
    teacher_distance : bool
        Also record ``teacher_dist`` at every recording time: |W^(2) - W̄^(2)|_F / |W̄^(2)|_F,
        the distance of the student's trained layer from its teacher's.
    record_at : array of int or None
        Explicit recording steps (increasing, from 0 to ``steps``), in place of ``n_points``
        and ``spacing``.
    on_record : callable or None
        Called after each recording time with the Dataset of the records so far (the
        Dataset described below, cut at that time; ``attrs["steps"]`` is the step reached):
        for long runs that save their progress (:func:`tsdyn.dyson.long_column`).
    on_state : callable or None
        Called after each recording time but the last with the training state there: a dict
        of arrays (weights, batch-generator states, the records so far), all copies.
    resume : dict or None
        A state that ``on_state`` gave to an earlier call with the same parameters, seed,
        ensemble and options, whose recording steps agree with this call's up to the
        state's record (a longer run on a prefix grid, :func:`tsdyn.dyson.long_record_steps`,
        may continue a shorter one's state). Training continues from that record; the
        result is bit-identical to an uninterrupted run.

    Returns
    -------
    xarray.Dataset
        Dimensions ``t`` (SGD steps; coordinate ``tau`` = eps t is the time of the
        continuous Langevin equation 2.30), ``model``, ``eig``, ``eig2``. Per time and model:

        - ``loss``: test loss (2.6), mean of (y - y_hat)^2/2 over the n_test samples;
        - ``grad_norm``: Frobenius norm of the full-batch training gradient of W^(2) (3.3);
        - ``G0``: feature correlation with t = 0 on the test set, G(t, 0) of (3.4) per model;
        - ``align``: feature-field alignment h.phi / (|h| |phi|) on the test set (3.5);
        - ``x`` (t, model, eig): eigenvalues of X = W^(2) W^(2)T, ascending (4.1);
        - ``S``: average level spacing (x_max - x_min) / (n2 - 1) (4.5);
        - ``K`` (t, model, eig): K_ii = -E[Delta^X_ii] in the eigenbasis of X, same order as x;
        - ``V`` (t, model, eig, eig2): V_ij = Var[Delta^X_ij] over single samples, same basis (4.4);
        - ``C`` (t, model, eig): C_ii = (U^T Cov[Delta] U)_ii, summed over the n1 columns: the
          noise part of eps^2 Delta_B Delta_B^T adds T C_ii per unit tau to the drift of x_i, an
          Ito term that eq. (4.3) leaves out;
        - with ``k_basis``: ``K_k`` (t, model, eig): the eigenvalues of the symmetric matrix
          K = -E[Delta^X], ascending; ``V_k`` (t, model, eig, eig2): Var[Delta^X_ij] in K's
          eigenbasis (same order); ``C_k`` (t, model, eig): the Ito covariance C_ii in that
          basis; ``xq_k`` (t, model, eig): the Rayleigh quotient u^T X u of each eigenvector u
          of K (which level of X the direction belongs to, for ordering, see
          :func:`tsdyn.dyson.spacing_coefficients`);
        - with ``published``: ``X_mat`` (t, model, unit, unit2): X itself; ``K_raw`` and ``V_raw``
          (t, model, unit, unit2): -E[Delta^X_ab] and the element-wise Var[Delta^X_ab] in the
          neuron basis, unrotated: the inputs of the authors' criterion recipe
          (:func:`tsdyn.dyson.published_criterion`);
        - ``diverged``, ``t_diverged`` (model): a model whose |W^(2)|_F reaches
          ``params.w_max`` (or turns non-finite) is stopped, flagged, and its later
          records are NaN. The loss itself cannot blow up: tanh features are bounded,
          so |y_hat| <= sum_i |W3_i|; only the weights can run away.

        Also ``z_var`` (model): variance of the second-layer pre-activations z = W^(2) a
        over the training set at t = 0 (sigma_z^2 of eq. 2.19). attrs: the parameters,
        ``steps``, ``n_models``, the seed, ``tsdyn_version``.
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a dyson.Params; got {type(params).__name__}")
    if record_at is None:
        rec = record_steps(steps, n_points, spacing)
    else:
        rec = np.asarray(record_at, dtype=np.int64)
        if rec[0] != 0 or rec[-1] != steps or np.any(np.diff(rec) <= 0):
            raise ValueError(f"record_at must increase from 0 to steps = {steps}; got {record_at!r}")
    if moment_samples is None:
        moment_samples = params.n_train
    _validate.integer("moment_samples", moment_samples, low=2, doc="samples for the gradient moments")
    moment_samples = min(moment_samples, params.n_train)
    if moments not in ("all", "ends", "end"):
        raise ValueError(f"moments must be 'all', 'ends' or 'end'; got {moments!r}")
    ss = _seeds.seed_sequence(seed)
    net = networks(params, seed=ss, n_models=n_models, init=init)
    batch_rngs = [_stream(ss, m, 3) for m in range(n_models)]
    M, n2, n1 = net["W2"].shape
    W2 = net["W2"].copy()
    A1, Y, W3 = net["A1_train"], net["y_train"], net["W3"]
    A1m, Ym = np.ascontiguousarray(A1[:, :moment_samples]), np.ascontiguousarray(Y[:, :moment_samples])
    A1t, Yt = net["A1_test"], net["y_test"]
    h = Yt[:, :, None] * W3[:, None, :]  # external field h_j(alpha) = y_alpha W3_j (2.8)

    n_rec = len(rec)
    nan = lambda *shape: np.full(shape, np.nan)  # noqa: E731
    obs = {k: nan(n_rec, M) for k in ("loss", "grad_norm", "G0", "align", "S")}
    if sharpness_samples is not None:
        _validate.integer("sharpness_samples", sharpness_samples, low=2, doc="samples for the sharpness")
        obs["sharpness"] = nan(n_rec, M)
        A1s = A1[:, :min(int(sharpness_samples), params.n_train)]
        if hessian:
            obs["hessian_sharpness"] = nan(n_rec, M)
            Ys = Y[:, :A1s.shape[1]]
    elif hessian:
        raise ValueError("hessian=True needs sharpness_samples (the samples over which the Hessian is taken)")
    if teacher_distance:
        obs["teacher_dist"] = nan(n_rec, M)
        W2t = net["W2_teacher"]
        W2t_norm = np.sqrt(np.sum(W2t ** 2, axis=(1, 2)))
    x_rec, K_rec, V_rec = nan(n_rec, M, n2), nan(n_rec, M, n2), nan(n_rec, M, n2, n2)
    C_rec = nan(n_rec, M, n2)
    Kk_rec, Vk_rec, Ck_rec, xq_rec = nan(n_rec, M, n2), nan(n_rec, M, n2, n2), nan(n_rec, M, n2), nan(n_rec, M, n2)
    Xm_rec, Kr_rec, Vr_rec = nan(n_rec, M, n2, n2), nan(n_rec, M, n2, n2), nan(n_rec, M, n2, n2)
    alive = np.ones(M, dtype=np.bool_)
    diverged_at = np.full(M, -1, dtype=np.int64)
    z0 = np.einsum("mij,mkj->mki", W2, A1)
    z_var = z0.reshape(M, -1).var(axis=1)
    phi0 = None
    step = 0
    rec_arrays = (x_rec, K_rec, V_rec, C_rec, Kk_rec, Vk_rec, Ck_rec, xq_rec, Xm_rec, Kr_rec, Vr_rec)
    first = 0
    if resume is not None:
        first, step, phi0 = _restore(resume, rec, W2, alive, diverged_at, z_var, batch_rngs, obs, rec_arrays)

    def dataset(n):
        return _dataset(params, rec, n, obs, rec_arrays, k_basis, published, z_var, diverged_at.copy(),
                        int(rec[n - 1]) if n < n_rec else steps, n_models, moment_samples, ss
                        ).assign_attrs(**({"full_batch": 1} if full_batch else {}))

    for r, target in enumerate(rec[first:], start=first):
        while step < target and alive.any():
            n = min(target - step, _BLOCK_STEPS)
            if full_batch:
                _kernels.gd_block(W2, A1, Y, W3, n, params.eps, params.w_max, alive, diverged_at, step)
                step += n
                continue
            idx = np.stack([g.integers(0, params.n_train, size=(n, params.batch), dtype=np.int32)
                            for g in batch_rngs])
            _kernels.sgd_block(W2, A1, Y, W3, idx, params.eps, params.w_max, alive, diverged_at, step)
            step += n
        live = alive.copy()
        phi = _kernels.features(W2, A1t)
        if phi0 is None:
            phi0 = phi.copy()
        y_hat = np.einsum("mki,mi->mk", phi, W3)
        obs["loss"][r] = 0.5 * np.mean((Yt - y_hat) ** 2, axis=1)
        obs["G0"][r] = np.mean(phi * phi0, axis=(1, 2))
        obs["align"][r] = (np.sum(h * phi, axis=(1, 2))
                           / np.sqrt(np.sum(h * h, axis=(1, 2)) * np.sum(phi * phi, axis=(1, 2))))
        if teacher_distance:
            obs["teacher_dist"][r] = np.sqrt(np.sum((W2 - W2t) ** 2, axis=(1, 2))) / W2t_norm
        X = np.einsum("mij,mkj->mik", W2, W2)
        with np.errstate(invalid="ignore"):
            x, U = np.linalg.eigh(np.where(live[:, None, None], X, np.eye(n2)))
        obs["S"][r] = (x[:, -1] - x[:, 0]) / (n2 - 1)
        x_rec[r] = x
        if moments == "all" or r == n_rec - 1 or (moments == "ends" and r == 0):
            grad, mean, var, gg = _kernels.gradient_moments(W2, A1m, Ym, W3, np.ascontiguousarray(U))
            obs["grad_norm"][r] = np.sqrt(np.sum(grad ** 2, axis=(1, 2)))
            if sharpness_samples is not None:
                obs["sharpness"][r] = [_sharpness(W2[m], A1s[m], W3[m]) if live[m] else np.nan for m in range(M)]
                if hessian:
                    obs["hessian_sharpness"][r] = [_sharpness(W2[m], A1s[m], W3[m], Ys[m]) if live[m] else np.nan
                                                   for m in range(M)]
            K_rec[r], V_rec[r] = -np.diagonal(mean, axis1=1, axis2=2), var
            # Cov of the per-sample gradient rows, sum_k Cov(Delta_ik, Delta_ik), in the X basis
            mg = np.einsum("mli,mlj->mij", U, grad)  # (U^T E[Delta])
            C_rec[r] = gg - np.sum(mg ** 2, axis=2)
            if k_basis:  # App. B: diagonalise K = -E[Delta^X] itself and rotate V into its basis
                with np.errstate(invalid="ignore"):
                    kev, P = np.linalg.eigh(np.where(live[:, None, None], -mean, np.eye(n2)))
                Uk = np.ascontiguousarray(np.einsum("mij,mjk->mik", U, P))
                _, _, var_k, gg_k = _kernels.gradient_moments(W2, A1m, Ym, W3, Uk)
                Kk_rec[r], Vk_rec[r] = kev, var_k
                mg_k = np.einsum("mli,mlj->mij", Uk, grad)
                Ck_rec[r] = gg_k - np.sum(mg_k ** 2, axis=2)
                xq_rec[r] = np.einsum("mji,mj->mi", P ** 2, x)  # u^T X u, with X = diag(x) in U's basis
            if published:  # the neuron basis: U = identity
                eye = np.ascontiguousarray(np.broadcast_to(np.eye(n2), (M, n2, n2)))
                _, mean_r, var_r, _ = _kernels.gradient_moments(W2, A1m, Ym, W3, eye)
                Xm_rec[r], Kr_rec[r], Vr_rec[r] = X, -mean_r, var_r
        for arr in (*obs.values(),):
            arr[r, ~live] = np.nan
        for arr in (x_rec, K_rec, V_rec, C_rec, Kk_rec, Vk_rec, Ck_rec, xq_rec, Xm_rec, Kr_rec, Vr_rec):
            arr[r, ~live] = np.nan
        if on_record is not None and r < n_rec - 1:
            on_record(dataset(r + 1))
        if on_state is not None and r < n_rec - 1:
            on_state(dict(record=r, step=step, record_at=rec[:r + 1].copy(), W2=W2.copy(), alive=alive.copy(),
                          diverged_at=diverged_at.copy(), z_var=z_var.copy(), phi0=phi0.copy(),
                          rng=[g.bit_generator.state for g in batch_rngs],
                          obs={k: v[:r + 1].copy() for k, v in obs.items()},
                          records=[a[:r + 1].copy() for a in rec_arrays]))
    return dataset(n_rec)


def _restore(state, rec, W2, alive, diverged_at, z_var, batch_rngs, obs, rec_arrays):
    """Load a :func:`train_ensemble` state into its arrays (in place); returns the next record
    index, the step reached and the features at t = 0."""
    r = int(state["record"])
    if r + 1 >= len(rec) or not np.array_equal(rec[:r + 1], state["record_at"]):
        raise ValueError(f"resume: the state was saved at step {int(state['step'])} on recording steps "
                         f"that are not a prefix of this run's record_at; continue it with the same grid "
                         f"(and a longer run, if any, on a grid that extends it)")
    if state["W2"].shape != W2.shape or len(state["rng"]) != len(batch_rngs):
        raise ValueError(f"resume: the state holds {state['W2'].shape[0]} models of shape {state['W2'].shape[1:]}; "
                         f"this run has {W2.shape[0]} of shape {W2.shape[1:]} (same params and n_models needed)")
    if not np.array_equal(z_var, state["z_var"]):  # sigma_z^2 at t = 0: a fingerprint of teacher, data and init
        raise ValueError("resume: the state belongs to another ensemble (other seed, models or 1/sigma_w: its "
                         "initial pre-activation variances differ); resume it with the arguments that made it")
    W2[...], alive[...], diverged_at[...] = state["W2"], state["alive"], state["diverged_at"]
    for g, st in zip(batch_rngs, state["rng"]):
        g.bit_generator.state = st
    for k, v in obs.items():
        v[:r + 1] = state["obs"][k]
    for a, b in zip(rec_arrays, state["records"]):
        a[:r + 1] = b
    return r + 1, int(state["step"]), np.array(state["phi0"])


def _dataset(params, rec, n, obs, rec_arrays, k_basis, published, z_var, diverged_at, steps, n_models,
             moment_samples, ss):
    """The Dataset of :func:`train_ensemble` from its first ``n`` records."""
    x_rec, K_rec, V_rec, C_rec, Kk_rec, Vk_rec, Ck_rec, xq_rec, Xm_rec, Kr_rec, Vr_rec = (a[:n] for a in rec_arrays)
    obs = {k: v[:n] for k, v in obs.items()}
    rec = rec[:n]
    M, n2 = x_rec.shape[1], x_rec.shape[2]
    t_div = np.where(diverged_at >= 0, diverged_at.astype(float), np.inf)
    units = {"loss": "1", "grad_norm": "1", "G0": "1", "align": "1", "S": "1", "sharpness": "per unit tau",
             "hessian_sharpness": "per unit tau", "teacher_dist": "1"}
    long = {"loss": "test loss (2.6)", "grad_norm": "norm of the full-batch gradient of W2 (3.3)",
            "G0": "feature time correlation G(t, 0) (3.4)", "align": "feature-field alignment (3.5)",
            "S": "average level spacing of X (4.5)",
            "sharpness": "largest eigenvalue of the Gauss-Newton matrix of the training loss",
            "hessian_sharpness": "largest eigenvalue of the Hessian of the training loss",
            "teacher_dist": "|W2 - W2_teacher|_F / |W2_teacher|_F"}
    data = {k: (("t", "model"), v, {"long_name": long[k], "units": units[k]}) for k, v in obs.items()}
    data.update({
        "x": (("t", "model", "eig"), x_rec, {"long_name": "eigenvalues of X = W2 W2^T, ascending"}),
        "K": (("t", "model", "eig"), K_rec, {"long_name": "K_ii = -E[Delta^X_ii], eigenbasis of X (4.4)",
                                              "units": "per unit tau"}),
        "V": (("t", "model", "eig", "eig2"), V_rec,
              {"long_name": "V_ij = Var[Delta^X_ij] over single samples, eigenbasis of X (4.4)"}),
        "C": (("t", "model", "eig"), C_rec,
              {"long_name": "C_ii = sum_k Var[Delta_ik] over single samples, eigenbasis of X; "
                            "the Ito drift of X = W W^T is T C_ii (not in eq. 4.3)"}),
        **({"K_k": (("t", "model", "eig"), Kk_rec,
                    {"long_name": "eigenvalues of K = -E[Delta^X], ascending (App. B)", "units": "per unit tau"}),
            "V_k": (("t", "model", "eig", "eig2"), Vk_rec,
                    {"long_name": "V_ij = Var[Delta^X_ij] in the eigenbasis of K (App. B)"}),
            "C_k": (("t", "model", "eig"), Ck_rec, {"long_name": "Ito covariance C_ii in the eigenbasis of K"}),
            "xq_k": (("t", "model", "eig"), xq_rec,
                     {"long_name": "Rayleigh quotient u^T X u of each eigenvector u of K"})} if k_basis else {}),
        **({"X_mat": (("t", "model", "unit", "unit2"), Xm_rec, {"long_name": "X = W2 W2^T (neuron basis)"}),
            "K_raw": (("t", "model", "unit", "unit2"), Kr_rec,
                      {"long_name": "-E[Delta^X_ab], neuron basis", "units": "per unit tau"}),
            "V_raw": (("t", "model", "unit", "unit2"), Vr_rec,
                      {"long_name": "element-wise Var[Delta^X_ab] over single samples, neuron basis"})}
           if published else {}),
        "z_var": (("model",), z_var, {"long_name": "variance of z = W2 a at t = 0 (sigma_z^2, 2.19)"}),
        "diverged": (("model",), diverged_at >= 0),
        "t_diverged": (("model",), t_div, {"units": "SGD steps", "bound": f"|W2|_F >= {params.w_max:g}"}),
    })
    return xr.Dataset(
        data,
        coords={"t": ("t", rec.astype(float), {"units": "SGD steps"}),
                "tau": ("t", params.eps * rec, {"units": "eps x SGD steps (time of eq. 2.30)"}),
                "model": np.arange(M), "eig": np.arange(n2), "eig2": np.arange(n2)},
        attrs={**{k: (str(v) if isinstance(v, list) else v) for k, v in params.attrs().items()},
               "steps": int(steps), "n_models": int(n_models), "moment_samples": int(moment_samples),
               "seed_entropy": str(ss.entropy), "seed_spawn_key": str(ss.spawn_key),
               "kind": "simulation", "tsdyn_version": __version__},
    )


def _sharpness(W, A, W3, y=None):
    """Largest eigenvalue of the curvature of the training loss (1/n) sum_a (y_hat_a - y_a)^2 / 2
    in W^(2) for one model, over the n samples of ``A`` (Lanczos; no matrix is formed).

    ``y`` None: the Gauss-Newton matrix G = (1/n) sum_a J_a J_a^T, J_a = g_a (x) a_a with
    g = W3 (1 - tanh(W a)^2) (the Hessian where the residuals vanish, as at the teacher).
    ``y`` the labels: the Hessian itself, G + (1/n) sum_a r_a d^2 y_hat_a / dW^2 with r = y_hat - y;
    the second term is block-diagonal in the row i of W: r_a W3_i tanh''(z_ai) a_a a_a^T, with
    tanh'' = -2 tanh (1 - tanh^2). Its largest eigenvalue lambda_max sets the step bound of
    gradient descent, eps lambda_max = 2 (eq-batchtemp-dyson-bc of the book's chapter 6)."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    n = A.shape[0]
    th = np.tanh(A @ W.T)  # (n, n2)
    g = W3 * (1.0 - th ** 2)
    shape = W.shape
    if y is not None:
        r = th @ W3 - y  # residuals y_hat - y
        c = (r[:, None] * W3) * (-2.0 * th * (1.0 - th ** 2))  # r_a W3_i tanh''(z_ai)
        if not np.all(np.isfinite(c)):
            return float("nan")
    if not np.all(np.isfinite(g)):
        return float("nan")

    def matvec(v):
        av = A @ v.reshape(shape).T  # (n, n2): (V a_a)_i
        jv = np.sum(g * av, axis=1)  # J v
        out = (g * jv[:, None]).T @ A  # J^T J v
        if y is not None:
            out += (c * av).T @ A
        return out.ravel() / n

    op = LinearOperator((W.size, W.size), matvec=matvec, dtype=float)
    v0 = np.ones(W.size) / np.sqrt(W.size)
    try:
        return float(eigsh(op, k=1, which="LA", v0=v0, tol=1e-8, maxiter=20 * W.size // 16,
                           return_eigenvectors=False)[0])
    except ArpackNoConvergence:  # a near-degenerate top of the spectrum: the dense matrix, column by column
        dense = np.stack([matvec(e) for e in np.eye(W.size)], axis=1)
        return float(np.linalg.eigvalsh(0.5 * (dense + dense.T))[-1])


def initial_features(params, *, seed, n_models):
    """Features phi = tanh(W^(2) a) of the students at t = 0 on their training sets, (M, n_train, n2)."""
    net = networks(params, seed=seed, n_models=n_models)
    return _kernels.features(net["W2"], net["A1_train"])
