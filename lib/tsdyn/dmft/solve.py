"""Dynamical mean-field theory of (persistent) SGD: the self-consistent effective process.

Derivation: the book's "Appendix: the dynamical mean-field equations of chapter 3"
(``book/dmft_derivation.md``): its continuous-time equations and its discrete scheme (the
talk's "DMFT: the equations" slides, with the corrections listed there). Shares only
:class:`Params` and the model's pointwise functions with the simulation.
"""

import math
import time

import numba
import numpy as np
import xarray as xr

from .. import __version__, _seeds, _validate
from . import _kernels
from .model import ENERGY_ATTRS, codes, generalisation_error, train_energy
from .params import check_params
from .simulate import n_steps_for


class ConvergenceError(RuntimeError):
    """The damped fixed-point iteration did not reach ``tol`` in ``max_iter`` iterations.

    ``residuals`` holds the residual history; ``result`` the Dataset of the last iterate
    (with ``converged = False``), for inspection only.
    """

    def __init__(self, message, residuals, result):
        super().__init__(message)
        self.residuals = residuals
        self.result = result


# Effective samples processed together: the arrays of one chunk, O(CHUNK n_t), stay in
# the fast caches and the inner loops run over samples (vectorised). The result does
# not depend on it except through the order of floating-point sums.
CHUNK = 256
# Samples whose responses chi are propagated together (the inner loops of the O(n_t^3)
# response run over the ~ b RESP_CHUNK of them in the batch at the impulse time).
RESP_CHUNK = 1024


def _keys(ss):
    """The three 64-bit keys (data, batch chain, noise) of the counter-based generator."""
    return ss.generate_state(3, np.uint64)


def _chain_probabilities(params, dt):
    return params.switch_probabilities(dt, name="dt") if params.b < 1.0 else (0.0, 0.0)


def _effective_samples(params, N, n_t, dt, ss):
    """All N samples at once: c, y, h0, theta0 (N,), S (n_t, N) int8, Z (n_t, N).

    For tests and the benchmark's NumPy baseline only: :func:`solve` never materialises
    them (it redraws each chunk from the counter-based generator at every iteration).
    """
    p01, p10 = _chain_probabilities(params, dt)
    c, y, h0, theta0 = (np.empty(N) for _ in range(4))
    S, Z = np.empty((n_t, N), np.int8), np.empty((n_t, N))
    _, model = codes(params)
    _kernels.draw_samples(_keys(ss), 0, N, model, params.rho, params.Delta, params.R0, params.b,
                          p01, p10, c, y, h0, theta0, S, Z)
    return c, y, h0, theta0, S, Z


def _rel(new, old):
    den = float(np.max(np.abs(new))) if new.size else 0.0
    return float(np.max(np.abs(new - old))) / max(den, 1e-12) if new.size else 0.0


def solve(params, t_max, *, dt=None, n_samples=4000, n_resp=None, method="march", damping=0.3,
          tol=1e-6, max_iter=200, seed=0, eps=1e-10, threads=1, on_iteration=None):
    """Solve the DMFT equations over Monte Carlo samples: marched in time, or by iteration.

    The effective process (derivation E6, discretised as in the appendix's discrete
    scheme, with step ``dt``)

        theta_{k+1} = theta_k - dt[(lam + lamhat_k) theta_k + sqrt(Delta) s_k Lambda'(y, r_k)
                      - dt sum_{i<k} M_R(k, i) theta_i - xi_k],  xi ~ GP(0, M_C),
        r_k = c m_k + sqrt(Delta)(m_k h0 + theta_k),  theta_0 ~ N(0, R0),

    is run for ``n_samples`` effective samples (c, h0, batch path s from the chain E3 at
    step dt). Their averages give the new kernels (E5, E7-E9):

        m_{k+1} = m_k - dt(lam m_k + mu_k),  mu_k = alpha <s_k Lambda'_k (c + sqrt(Delta) h0)>,
        lamhat_k = alpha Delta <s_k Lambda''_k>,  M_C(k, l) = alpha Delta <s_k Lambda'_k s_l Lambda'_l>,
        M_R(k, j) = alpha Delta^2 <s_k Lambda''_k chi_kj s_j Lambda''_j>,

    where chi is the response of the linearised process to a force impulse (E10),
    propagated exactly (no finite differences) for the first ``n_resp`` samples.

    ``method="march"`` (default): the discretised equations are causal (theta_k of every
    sample needs the kernels at steps < k only, and the kernels at step k the samples up to
    k; the Cholesky factor of M_C is causal too), so with the random numbers fixed their
    solution is built in one pass, a step at a time (:func:`._kernels.march`; each sample
    in closed form at its in-batch steps, see below): the cost of one iteration, against
    15 to 40 iterations, and the iteration's fixed point up to float rounding. A final
    pass of the iteration's map with the marched kernels gives the training loss and
    accuracy and checks the solution: its relative residual (below) is recorded and must
    be below ``tol``, else ConvergenceError.

    ``method="iterate"``: damped fixed-point iteration. The kernels are mixed,
    K <- damping K + (1 - damping) K_new, until the relative residual max over (m, lamhat,
    M_C, M_R) of |K_new - K|_inf / |K_new|_inf is below ``tol``. The same random numbers
    are used at every iteration, so the residual can go to zero; the Monte Carlo error
    (~ n_samples^-1/2) is measured by changing ``seed``.

    Implementation: the samples come from a counter-based generator (:mod:`._rng`, each
    number a function of (seed, sample, step)) and are redrawn in chunks of ``CHUNK``
    inside one numba call per iteration, so no per-sample path is stored. For b = 1 they
    are integrated step by step and reduced chunk by chunk (:func:`._kernels.iteration`;
    only the A2 paths of the n_resp response samples are kept): cost per iteration
    O(n_t^2 n_samples + n_t^3 n_resp/6), memory O(GROUPS (n_t^2 + CHUNK n_t) + n_resp n_t).
    For b < 1 the process, linear in theta but for the force s Lambda', is solved in
    closed form, theta_k = P_k theta_0 + sum_{j<k} R_kj (dt xi_j - dt sqrt(Delta) s_j
    Lambda'_j) with the bulk response R and propagator P of the current kernels (computed
    once per iteration); theta is evaluated only at a sample's in-batch steps, the only
    ones at which it enters the kernels, and chi by the same superposition restricted to
    them (:func:`._kernels.iteration_closed`): cost per iteration O(n_t^3 + n_samples
    (b n_t^2/2 + (b n_t)^2) + n_resp (b n_t)^3/6), memory O(GROUPS (n_t^2 + CHUNK n_t)).
    Both equal the same discretised process up to float rounding (at b = 1 the closed
    form evaluates every step and is slower); the closed form's iterations sum r^2 (for
    the divergence check) over the in-batch samples only. The samples are split into
    ``_kernels.GROUPS`` fixed groups that run on numba's threads, each with its own
    partial sums added in group order, so the result is bit-identical for any number of
    threads. The iterations skip the loss value (the kernels do not need it); one last
    pass with the final kernels gives the training loss and accuracy.

    At dt = eta these are the d -> infinity equations of the discrete algorithm itself
    (the appendix's cavity argument); for b = 1 or a persistent chain, dt -> 0 is the (stochastic)
    gradient flow. With ``tau=None`` and dt < eta the batch chain is the persistent one
    with tau = eta/b.

    Then R (E11, strictly lower), the propagator P of the initial condition, and
    C(t, t') = m m' + R0 P P' + dt^2 sum R(t, u) M_C(u, u') R(t', u') (E13).

    Parameters
    ----------
    params : Params
    t_max : float
        Final time; ``dt`` must divide it.
    dt : float, optional
        Time step (default ``params.eta``).
    n_samples, n_resp : int
        Effective samples for the process and, among them, for the response (default
        min(n_samples, 1000)). Cost per iteration: see Implementation above.
    method : "march" or "iterate"
        One pass in time (memory O((n_samples + n_resp) n_t + n_t^2)) or the damped
        fixed-point iteration (memory independent of n_samples); the same solution.
    damping : float in [0, 1)
        Weight of the previous iterate (0: plain Picard iteration).
    tol, max_iter : convergence criterion and iteration budget.
    seed : int or SeedSequence
        Monte Carlo samples (common random numbers across iterations).
    eps : float
        Relative diagonal shift of M_C before its Cholesky factorisation.
    threads : int
        numba threads for the sample groups (at most ``_kernels.GROUPS`` are used). The
        result is the same, bit for bit, for any value; 1 (default) runs serially, which is
        faster on a machine whose cores are shared.

    on_iteration : callable, optional
        ``method="iterate"`` only: called after each iteration with the mixed kernels
        (m, lamhat, M_C, M_R), for convergence studies (:func:`iteration_history`).

    Returns
    -------
    xarray.Dataset
        m, C_diag, eg, train_loss, train_acc, train_energy (alpha train_loss + lam C/2, the
        talk's normalisation), mu, lamhat (t); C, R, M_C, M_R (t, t2);
        residual (iteration: one entry, the check pass, for "march"); converged, n_iter
        (0 for "march"), diverged, t_diverged.

    Raises
    ------
    ConvergenceError
        If ``max_iter`` iterations do not reach ``tol``; it carries the residual history.
    """
    check_params(params)
    dt = params.eta if dt is None else dt
    _validate.real("dt", dt, low=0.0, low_open=True, doc="time step")
    K = n_steps_for(t_max, dt)
    n_t = K + 1
    _validate.integer("n_samples", n_samples, low=2, doc="Monte Carlo samples")
    n_resp = min(n_samples, 1000) if n_resp is None else n_resp
    _validate.integer("n_resp", n_resp, low=1, doc="samples for the response")
    if method not in ("march", "iterate"):
        raise ValueError(f"method must be 'march' or 'iterate'; got {method!r}")
    if n_resp > n_samples:
        raise ValueError(f"n_resp (samples for the response) must be <= n_samples={n_samples}; "
                         f"got {n_resp}")
    _validate.real("damping", damping, low=0.0, high=1.0, high_open=True, doc="damping")
    _validate.real("tol", tol, low=0.0, low_open=True, doc="convergence tolerance")
    _validate.integer("max_iter", max_iter, low=1, doc="iteration budget")
    _validate.real("eps", eps, low=0.0, doc="relative Cholesky shift")
    _validate.integer("threads", threads, low=1, doc="numba threads")
    ss = _seeds.seed_sequence(seed)
    keys = _keys(ss)
    p01, p10 = _chain_probabilities(params, dt)
    loss, model = codes(params)
    a, D, lam = params.alpha, params.Delta, params.lam

    m = params.m0 * (1.0 - dt * lam) ** np.arange(n_t)
    lamhat, MC, MR = np.zeros(n_t), np.zeros((n_t, n_t)), np.zeros((n_t, n_t))
    MC_sum = np.empty((n_t, n_t))
    l2_sum, loss_sum, acc_sum, proj, r2_sum = (np.empty(n_t) for _ in range(5))
    resp = np.empty((n_t, n_t))
    closed = params.b < 1.0  # closed form only pays when it skips out-of-batch steps
    if closed:
        kernel, kernel_threads = _kernels.iteration_closed, _kernels.iteration_closed_threads
    else:
        kernel, kernel_threads = _kernels.iteration, _kernels.iteration_threads

    work = (_kernels.workspace_closed(n_t, min(CHUNK, n_samples)) if closed else
            _kernels.workspace(n_t, min(CHUNK, n_samples), min(RESP_CHUNK, n_resp), n_resp))

    def run(want_loss):
        # noise xi = L z with L L^T = M_C + eps diag(running max of diag M_C): the empirical
        # M_C is numerically low-rank, the shift keeps the causal factor accurate (Sec. 7)
        Lc = _kernels.cholesky_shifted(MC, eps)
        args = (keys, n_samples, n_resp, work, model, loss, params.rho, params.L, D, params.R0,
                params.b, p01, p10, lam, dt, Lc, m, lamhat, MR, want_loss, MC_sum, l2_sum,
                loss_sum, acc_sum, proj, r2_sum, resp)
        if threads == 1:
            kernel(*args)
            return
        before = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            kernel_threads(*args)
        finally:
            numba.set_num_threads(before)

    def new_kernels():
        """The iteration's map: kernels from the sums of the last pass (E5, E7-E9)."""
        mu = a * proj / n_samples
        m_new = np.empty(n_t)
        m_new[0] = params.m0
        for k in range(K):
            m_new[k + 1] = m_new[k] - dt * (lam * m_new[k] + mu[k])
        MC_new = np.tril(MC_sum, -1)
        MC_new = (a * D / n_samples) * (MC_new + MC_new.T + np.diag(np.diag(MC_sum)))
        return m_new, (a * D / n_samples) * l2_sum, MC_new, (a * D * D / n_resp) * resp

    def residual(new):
        return max(_rel(x_new, x) for x_new, x in zip(new, (m, lamhat, MC, MR)))

    residuals, converged, t_div = [], False, np.inf
    start = time.perf_counter()
    if method == "march":
        marched = _kernels.workspace_march(n_t, n_samples, n_resp, full=not closed)
        Lc = np.zeros((n_t, n_t))
        done = _kernels.march(keys, n_samples, n_resp, marched, model, loss, params.rho,
                              params.L, D, params.R0, params.b, p01, p10, lam, dt, a, params.m0,
                              eps, m, lamhat, MC, Lc, MR, l2_sum, proj, r2_sum)
        del marched
        if done < n_t:
            t_div = float(done * dt)
            m[done + 1:] = m[done]
    for it in range(max_iter if method == "iterate" else 0):
        run(False)
        bad = ~np.isfinite(r2_sum) | ~np.isfinite(proj) | ~np.isfinite(l2_sum)
        if bad.any():
            t_div = float(np.argmax(bad) * dt)
            break
        new = new_kernels()
        res = residual(new)
        residuals.append(res)
        g = 0.0 if it == 0 else damping
        m, lamhat, MC, MR = (g * x + (1 - g) * x_new for x, x_new in zip((m, lamhat, MC, MR), new))
        if on_iteration is not None:
            on_iteration(m, lamhat, MC, MR)
        if res < tol:
            converged = True
            break
    # training loss and accuracy of the effective samples driven by the final kernels
    # (the iterations skip the loss value: the kernels do not need it); for "march", the
    # same pass checks that the marched kernels are the iteration's fixed point
    run(True)
    if method == "march" and np.isinf(t_div):
        residuals.append(residual(new_kernels()))
        converged = residuals[-1] < tol
    elapsed = time.perf_counter() - start
    ds = _dataset(params, dt, m, lamhat, MC, MR, loss_sum / n_samples, acc_sum / n_samples,
                  residuals, converged, t_div, len(residuals) if method == "iterate" else 0,
                  attrs={"method": method, "n_samples": n_samples, "n_resp": n_resp,
                         "damping": damping, "tol": tol,
                         "threads": threads,
                         "max_iter": max_iter, "eps": eps, "solve_seconds": elapsed,
                         "seed_entropy": str(ss.entropy), "seed_spawn_key": str(ss.spawn_key)})
    if not converged and np.isinf(t_div) and method == "march":
        raise ConvergenceError(
            f"the DMFT solution marched in time is not a fixed point of the iteration: relative "
            f"residual {residuals[-1]:.3e} > tol={tol:g}; solve with method='iterate'",
            np.asarray(residuals), ds)
    if not converged and np.isinf(t_div):
        hist = ", ".join(f"{r:.2e}" for r in residuals[-5:])
        raise ConvergenceError(
            f"DMFT fixed-point iteration did not converge: residual {residuals[-1]:.3e} > tol={tol:g} "
            f"after max_iter={max_iter} iterations (last residuals: {hist}); raise max_iter or "
            f"damping, or lower dt", np.asarray(residuals), ds)
    return ds


def iteration_history(params, t_max, *, seed=0, **solve_kw):
    """The damped fixed-point iteration against the marched solution of the same samples.

    Solves with ``method="march"``, then with ``method="iterate"`` (same ``seed`` and
    ``solve_kw``), and returns a Dataset over ``iteration``: ``residual`` (the iteration's
    relative residual) and ``distance``, the same relative measure (largest over m, lamhat,
    M_C, M_R of |K - K_march|_inf / |K_march|_inf) between the iterate and the march. The
    attrs hold the iteration's tolerance.
    """
    marched = solve(params, t_max, seed=seed, method="march", **solve_kw)
    target = [np.nan_to_num(marched[v].values) for v in ("m", "lamhat", "M_C", "M_R")]
    distance = []

    def record(*kernels):
        distance.append(max(_rel(k, t) for k, t in zip(kernels, target)))

    it = solve(params, t_max, seed=seed, method="iterate", on_iteration=record, **solve_kw)
    return xr.Dataset({"residual": ("iteration", it.residual.values),
                       "distance": ("iteration", np.asarray(distance))},
                      coords={"iteration": it.iteration.values},
                      attrs={"tol": it.attrs["tol"], "n_iter": int(it.n_iter)})


def _dataset(params, dt, m, lamhat, MC, MR, train_loss, train_acc, residuals, converged, t_div,
             n_iter, attrs):
    n_t = len(m)
    t = np.arange(n_t) * dt
    R, P = _kernels.bulk_response(lamhat, MR, dt, params.lam)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged run: masked below
        C_perp = params.R0 * np.outer(P, P) + dt * dt * _kernels.sandwich(R, MC)
        C = np.outer(m, m) + C_perp
        C_diag = np.diag(C).copy()
        eg = generalisation_error(params, m, C_diag)
        mu = np.full(n_t, np.nan)
        mu[:-1] = -(np.diff(m) / dt + params.lam * m[:-1])
    if np.isfinite(t_div):
        late = t >= t_div
        for arr in (m, C_diag, eg, train_loss, train_acc, lamhat, mu):
            arr[late] = np.nan
        for M in (C, R, MC, MR):
            M[late, :] = np.nan
            M[:, late] = np.nan
    tt = ("t", "t2")
    return xr.Dataset(
        {
            "m": ("t", m, {"long_name": "magnetisation w.v*/d"}),
            "C_diag": ("t", C_diag, {"long_name": "C(t,t) = |w|^2/d"}),
            "eg": ("t", eg, {"long_name": "generalisation error", "units": "1"}),
            "train_loss": ("t", train_loss, {"long_name": "mean training loss per sample"}),
            "train_acc": ("t", train_acc, {"long_name": "training accuracy", "units": "1"}),
            "train_energy": ("t", train_energy(params, train_loss, C_diag), ENERGY_ATTRS),
            "mu": ("t", mu, {"long_name": "mu(t) of dm/dt = -lam m - mu"}),
            "lamhat": ("t", lamhat, {"long_name": "lambda-hat(t)"}),
            "C": (tt, C, {"long_name": "C(t,t') = w(t).w(t')/d"}),
            "R": (tt, R, {"long_name": "R(t,t') response, t > t'"}),
            "M_C": (tt, MC, {"long_name": "noise kernel M_C(t,t')"}),
            "M_R": (tt, MR, {"long_name": "memory kernel M_R(t,t'), t > t'"}),
            "residual": ("iteration", np.asarray(residuals, float),
                         {"long_name": "relative fixed-point residual"}),
            "converged": ((), bool(converged)),
            "n_iter": ((), n_iter),
            "diverged": ((), bool(np.isfinite(t_div))),
            "t_diverged": ((), float(t_div)),
        },
        coords={"t": ("t", t, {"units": "time = steps x eta"}), "t2": ("t2", t),
                "iteration": np.arange(1, len(residuals) + 1)},
        attrs={**params.attrs(), "kind": "dmft", "dt": dt, "tsdyn_version": __version__, **attrs},
    )
