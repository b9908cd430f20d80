"""Order-parameter ODEs of two-layer networks (Saad & Solla 1995; Goldt et al. 2020) and
the asymptotic generalisation errors of Goldt et al., sec. 2-3."""

import dataclasses
import math

import numpy as np
from scipy.integrate import solve_ivp

from .. import _validate, activations
from . import _kernels
from ._dataset import overlaps_dataset, times
from .params import check_params

# The ODE run is stopped (and marked diverged) when an order parameter exceeds this.
_DIVERGENCE_BOUND = 1e8


def _matrix(name, value, shape):
    a = np.asarray(value, dtype=float)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite; got {a}")
    return a


def _vector(name, value, n):
    return _matrix(name, np.broadcast_to(value, (n,)) if np.ndim(value) == 0 else value, (n,))


def _check_overlaps(Q, R, T, *, q="Q", r="R"):
    """Symmetry of Q and T, T positive definite, [[Q, R], [R^T, T]] a covariance matrix."""
    for name, S in ((q, Q), ("T", T)):
        if not np.allclose(S, S.T, rtol=1e-12, atol=1e-12):
            raise ValueError(f"{name} must be symmetric")
    if np.linalg.eigvalsh(T).min() <= 0:
        raise ValueError("T (teacher overlaps) must be positive definite")
    C = _kernels.field_covariance(R, Q, T)
    scale = max(1.0, np.abs(C).max())
    if np.linalg.eigvalsh(C).min() < -1e-10 * scale:
        raise ValueError(f"[[{q}, {r}], [{r}^T, T]] must be positive semi-definite "
                         "(it is the Gram matrix of the student and teacher weights / N)")


def _check_state(params, Q, R, T, v):
    """Validate shapes, symmetry and that [[Q, R], [R^T, T]] is a covariance matrix."""
    K, M = params.K, params.M
    Q = _matrix("Q0", Q, (K, K))
    R = _matrix("R0", R, (K, M))
    T = _matrix("T", T, (M, M))
    v = _vector("v0", v, K)
    _check_overlaps(Q, R, T, q="Q0", r="R0")
    return Q, R, T, v


def _initial_state(params, Q0, R0, T, v0, init):
    if init is not None:
        if any(x is not None for x in (Q0, R0, T, v0)):
            raise ValueError("give either init (a simulation) or Q0, R0, T, v0, not both")
        first = init.isel(t=0)
        Q0, R0, T, v0 = first.Q.values, first.R.values, init.T.values, first.v.values
    if T is None:
        T = params.w_star_std ** 2 * np.eye(params.M)
    if R0 is None:
        R0 = np.zeros((params.K, params.M))
    if Q0 is None:
        Q0 = params.w_init_std ** 2 * np.eye(params.K)
    if v0 is None:
        v0 = params.v_init
    return _check_state(params, Q0, R0, T, v0)


def _pack(R, Q, v):
    return np.concatenate([R.ravel(), Q.ravel(), v])


def _unpack(params, y):
    K, M = params.K, params.M
    return (y[:K * M].reshape(K, M), y[K * M:K * M + K * K].reshape(K, K), y[K * M + K * K:])


def rhs(params, T):
    """The right-hand side f(y) of dy/dt = f(y) as a Python callable ``f(t, y)``.

    y packs (R, Q, v); see :func:`tsdyn.committee._kernels.ode_rhs` for the equations
    (Goldt et al. eq. 9 with the mini-batch factor 1/B on the O(eta^2) terms).
    """
    args = (params.K, params.M, np.ascontiguousarray(T, float), params.v_star_vector(),
            params.act, params.eta, params.eta_second, params.sigma ** 2, params.batch,
            params.weight_decay, params.train_second_layer)

    def f(t, y):
        y = np.ascontiguousarray(y, dtype=float)
        return _kernels.ode_rhs(y, *args, np.empty_like(y))

    return f


def ode(params, t_max=None, *, Q0=None, R0=None, T=None, v0=None, init=None,
        n_points=200, spacing="linear", t_eval=None, rtol=1e-8, atol=1e-10, method="LSODA",
        eg_floor=None):
    """Integrate the order-parameter ODEs (Goldt et al. eq. 9; Saad & Solla 1995).

    All averages are closed-form for erf and linear networks; for ReLU the I4
    term needs a four-variable orthant probability, computed by quadrature
    (see :mod:`tsdyn.activations`).

    The O(eta) (drift) terms are those of online SGD; every O(eta^2) term (the
    I4 sum and sigma^2 J2) is divided by the batch size B. Integrated with
    scipy's adaptive ``solve_ivp`` at tolerances ``rtol``, ``atol``. The default,
    LSODA, switches between Adams and BDF: after specialisation the overlaps relax
    on time scales far shorter than the slow drift that remains, and an explicit
    method (``method="DOP853"``) would be limited by stability to small steps.

    Parameters
    ----------
    params : Params
    t_max : float
        End time in SGD steps / N (a run of length t uses B t N samples). May be
        omitted when ``init`` or ``t_eval`` gives the time axis.
    Q0 : ndarray, shape (K, K)
        Student-student overlaps at t = 0 (default w_init_std^2 I).
    R0 : ndarray, shape (K, M)
        Student-teacher overlaps at t = 0 (default 0).
    T : ndarray, shape (M, M)
        Teacher-teacher overlaps (default w_star_std^2 I).
    v0 : float or ndarray, shape (K,)
        Student second-layer weights at t = 0 (default v_init).
    init : xarray.Dataset, optional
        A :func:`simulate` result: the ODE starts from its t = 0 overlaps and, unless
        ``t_eval`` is given, reports on its time axis, so theory and simulation
        start from the same point and can be compared time by time.
    n_points, spacing :
        Time axis when neither ``t_eval`` nor ``init`` gives one.
    rtol, atol, method :
        Passed to ``scipy.integrate.solve_ivp``.
    eg_floor : float, optional
        Resolution of the reported eps_g (default: ``atol``). eps_g is a sum of O(1)
        terms evaluated on overlaps that are accurate to about ``atol``, so a value
        below ``atol`` is integration error, not dynamics, and can even be negative
        (-4.4e-11 at atol 1e-10 late in a noiseless run). Such values are reported as
        ``eg_floor``, recorded in ``attrs["eg_floor"]``: on a log scale the curve then
        flattens at the resolution instead of vanishing. Lower ``atol`` to resolve
        smaller errors.

    Returns
    -------
    xarray.Dataset
        The same variables as :func:`simulate`: eg, Q, R, v, T, diverged, t_diverged.
    """
    if eg_floor is None:
        eg_floor = atol
    _validate.real("eg_floor", eg_floor, low=0.0, doc="resolution of the reported eps_g")
    check_params(params)
    Q0, R0, T, v0 = _initial_state(params, Q0, R0, T, v0, init)
    if t_eval is None and init is not None:
        t_eval = init.t.values
    if t_eval is None:
        _validate.real("t_max", t_max, low=0.0, low_open=True, doc="end time in steps/N")
        _validate.integer("n_points", n_points, low=2, doc="number of output times")
        t_eval = times(t_max, n_points, spacing)
    t_eval = np.asarray(t_eval, float)
    if t_eval.ndim != 1 or len(t_eval) < 1 or t_eval[0] < 0 or np.any(np.diff(t_eval) <= 0):
        raise ValueError("t_eval must be a non-empty increasing 1-d array of times >= 0")

    def blow_up(t, y):
        return _DIVERGENCE_BOUND - np.max(np.abs(y)) if np.all(np.isfinite(y)) else -1.0

    blow_up.terminal = True
    sol = solve_ivp(rhs(params, T), (0.0, t_eval[-1]), _pack(R0, Q0, v0), method=method,
                    t_eval=t_eval, rtol=rtol, atol=atol, events=blow_up)
    n_t = len(t_eval)
    Y = np.full((n_t, len(sol.y)), np.nan)
    Y[:sol.y.shape[1]] = sol.y.T
    t_diverged = sol.t_events[0][0] if len(sol.t_events[0]) else np.inf
    if sol.status == -1:
        raise RuntimeError(f"ODE integration failed: {sol.message}")
    R, Q, v = (np.stack(a) for a in zip(*(_unpack(params, y) for y in Y)))
    ds = overlaps_dataset(params, t_eval, R, Q, v, T, t_diverged=t_diverged, kind="ode",
                          attrs={"rtol": rtol, "atol": atol, "n_rhs": int(sol.nfev),
                                 "eg_floor": eg_floor})
    ds["eg"].values[:] = np.where(ds.eg.values < eg_floor, eg_floor, ds.eg.values)  # keeps NaN
    return ds


def fixed_point(params, *, Q0=None, R0=None, T=None, v0=None, init=None, tol=1e-15,
                eg_rtol=1e-8, t_chunk=500.0, t_cap=1e6):
    """Integrate the ODEs until they stop moving: the asymptotic state and eps_g^*.

    Runs the ODE in chunks of ``t_chunk`` (steps/N) until either the largest
    component of the right-hand side is below ``tol``, or eps_g changed by less
    than ``eg_rtol`` (relative) over the last chunk. The second criterion matters
    for over-parameterised erf students (K > M): their superfluous units drift
    along an almost flat direction (pairs of units turning anti-parallel, whose
    outputs cancel) so slowly that eps_g is stationary long before dy/dt is zero.
    This is the numerical counterpart of the small-noise fixed points of Goldt et
    al. (eq. 10 for erf, eq. 12 for linear networks). Reaching ``t_cap`` raises.

    Returns
    -------
    xarray.Dataset
        One time point (the time reached) with the variables of :func:`ode`;
        ``attrs["residual"]`` is the max-norm of dy/dt there and
        ``attrs["eg_change"]`` the relative change of eps_g over the last chunk.
    """
    check_params(params)
    Q, R, T, v = _initial_state(params, Q0, R0, T, v0, init)
    f = rhs(params, T)
    v_star = params.v_star_vector()
    y, t, eg, change = _pack(R, Q, v), 0.0, np.inf, np.inf

    def error(y):
        R, Q, v = _unpack(params, y)
        return _kernels.generalisation_error(params.act, Q, R, T, v, v_star)

    while True:
        residual = np.max(np.abs(f(t, y)))
        if residual < tol or change < eg_rtol:
            break
        if t >= t_cap or not np.all(np.isfinite(y)) or np.max(np.abs(y)) > _DIVERGENCE_BOUND:
            raise RuntimeError(f"no fixed point reached by t = {t:g} (|dy/dt| = {residual:.3g})")
        sol = solve_ivp(f, (t, t + t_chunk), y, method="DOP853", rtol=1e-13, atol=1e-16)
        y, t = sol.y[:, -1], t + t_chunk
        eg, previous = error(y), eg
        change = abs(eg - previous) / max(abs(eg), 1e-300)
    R, Q, v = _unpack(params, y)
    return overlaps_dataset(params, [t], R[None], Q[None], v[None], T, t_diverged=np.inf,
                            kind="ode fixed point",
                            attrs={"residual": residual, "eg_change": change, "tol": tol,
                                   "eg_rtol": eg_rtol})


def denoising_fixed_point(params, *, counts=None, **kwargs):
    """The ODE fixed point of a denoising solution, both layers trained (Goldt et al. sec. 3).

    The denoising ansatz of Goldt et al. (sec. 3 and SM E, there for K = Z M): the
    student units form groups, group n sitting on teacher unit n, and the units of a
    group share that teacher unit's second-layer weight, so the student's output
    averages several noisy copies of each teacher unit. Here every unit of group n
    starts as an exact copy of w*_n (R_kn = T_nn' rows, Q_kl = T_n(k)n(l)) with
    v_k = v* / Z_n, Z_n the size of the group, and :func:`fixed_point` integrates
    the full ODEs (eq. 9) from there. Copies stay copies under the ODE, so this is
    the fixed point on the ansatz at the given eta and sigma, to all orders (the
    paper expands it to first order in sigma^2; eq. 15 is its small-eta limit at
    M = 1). Units not in any group are switched off (w_k = 0, v_k = 0, a state the
    ODE leaves unchanged and which adds nothing to the output).

    Parameters
    ----------
    params : Params
        erf units, both layers trained, T = I, no weight decay.
    counts : sequence of M ints, optional
        Units on each teacher unit, each >= 1, summing to at most K (the rest are
        off). Default: K / M each, which needs K to be a multiple of M (K = Z M).
    kwargs :
        Passed to :func:`fixed_point`.
    """
    _require(params, g="erf", both_layers=True)
    K, M = params.K, params.M
    if counts is None:
        if K % M:
            raise ValueError(f"K must be a multiple of M (K = Z M) without counts; got K={K}, M={M}")
        counts = [K // M] * M
    counts = [int(c) for c in counts]
    if len(counts) != M or min(counts) < 1 or sum(counts) > K:
        raise ValueError(f"counts must be M={M} integers >= 1 summing to at most K={K}; got {counts}")
    group = np.repeat(np.arange(M), counts)
    on = len(group)
    R0 = np.zeros((K, M))
    R0[np.arange(on), group] = 1.0
    Q0 = R0 @ R0.T
    v0 = np.zeros(K)
    v0[:on] = params.v_star / np.asarray(counts, float)[group]
    return fixed_point(params, Q0=Q0, R0=R0, v0=v0, **kwargs)


def _symmetric_state(K, q, c, r):
    Q = np.full((K, K), c)
    np.fill_diagonal(Q, q)
    return Q, np.full((K, K), r)


def plateau(params, *, guess=(1.0, 0.3, 0.4)):
    """The symmetric plateau of a soft committee machine with K = M (Saad & Solla 1995).

    On the unspecialised fixed point every student unit has the same overlap r
    with every teacher unit, the same norm Q_ii = q and the same mutual overlap
    Q_ik = c. The (q, c, r) manifold is invariant under the ODEs, so the plateau
    is found by integrating the reduced flow on it and polishing with a root
    finder. The escape rate is the largest real eigenvalue of the Jacobian of
    the full (R, Q) flow there (central differences, step 1e-6): a run that
    starts with an O(N^-1/2) asymmetry leaves the plateau after a time
    t_esc ~ ln(N) / (2 lambda_max) + O(1).

    Requires erf units, K = M >= 2, T = I (w_star_std = 1), untrained second layers
    v = v* = 1 and no weight decay.

    Returns
    -------
    dict
        q, c, r, eg (the plateau height), lambda_max (escape rate, per unit t),
        log_n_slope = 1 / (2 lambda_max).
    """
    from scipy.optimize import root

    _require(params, g="erf")
    if params.K != params.M or params.K < 2:
        raise ValueError(f"plateau() needs K == M >= 2; got K={params.K}, M={params.M}")
    K = params.K
    T = np.eye(K)
    f = rhs(params, T)
    ones = np.ones(K)

    def reduced(x):
        Q, R = _symmetric_state(K, *x)
        dR, dQ, _ = _unpack(params, f(0.0, _pack(R, Q, ones)))
        return np.array([dQ[0, 0], dQ[0, 1], dR[0, 0]])

    flow = solve_ivp(lambda t, x: reduced(x), (0.0, 200.0 / params.eta), np.asarray(guess, float),
                     method="DOP853", rtol=1e-10, atol=1e-12)
    sol = root(reduced, flow.y[:, -1], method="hybr", tol=1e-14)
    if np.max(np.abs(reduced(sol.x))) > 1e-10:
        raise RuntimeError(f"no symmetric plateau found for these parameters ({sol.message})")
    Q, R = _symmetric_state(K, *sol.x)
    y = _pack(R, Q, ones)
    n = 2 * K * K  # the (R, Q) block; v is fixed
    J = np.empty((n, n))
    h = 1e-6
    for i in range(n):
        e = np.zeros_like(y)
        e[i] = h
        J[:, i] = (f(0.0, y + e)[:n] - f(0.0, y - e)[:n]) / (2 * h)
    lam = float(np.max(np.linalg.eigvals(J).real))
    eg = _kernels.generalisation_error(params.act, Q, R, T, ones, params.v_star_vector())
    return {"q": sol.x[0], "c": sol.x[1], "r": sol.x[2], "eg": float(eg), "lambda_max": lam,
            "log_n_slope": 1.0 / (2.0 * lam)}


def generalisation_error(Q, R, T, v, v_star, g):
    """Generalisation error eps_g = 1/2 <(phi - phi*)^2> from the order parameters.

    Closed form for erf, linear and ReLU networks (Goldt et al. eq. 4 with the
    I2 integrals of :mod:`tsdyn.activations`).

    Parameters
    ----------
    Q : ndarray, shape (K, K)
    R : ndarray, shape (K, M)
    T : ndarray, shape (M, M)
    v, v_star : float or ndarray, shapes (K,) and (M,)
    g : {"erf", "linear", "relu"}
    """
    act = activations.code(g)
    if np.ndim(Q) != 2 or np.ndim(R) != 2:
        raise ValueError(f"Q and R must be matrices; got shapes {np.shape(Q)} and {np.shape(R)}")
    K, M = np.shape(R)
    Q = _matrix("Q", Q, (K, K))
    R = _matrix("R", R, (K, M))
    T = _matrix("T", T, (M, M))
    v = _vector("v", v, K)
    v_star = _vector("v_star", v_star, M)
    _check_overlaps(Q, R, T)
    return float(_kernels.generalisation_error(act, Q, R, T, v, v_star))


# --- asymptotic results of Goldt et al. (2020) --------------------------------------


def eg_star_linear_scm(params, *, finite_size=False):
    """Final eps_g of a linear soft committee machine (Goldt et al. eq. 12, any B).

    Only W = sum_k w_k matters for a linear SCM, and it follows SGD with learning
    rate K eta. Its distance d = |W - W*|^2 / N obeys, per unit of t,

        dd/dt = -2 K eta d + (K eta)^2 [(d + sigma^2) / B + c_N d],

    with c_N = 0 in the N -> infinity limit of the ODEs. The fixed point gives

        eps_g^* = d^* / 2 = K eta sigma^2 / (2 (2 B - K eta (1 + B c_N))),

    eq. (12) at B = 1, c_N = 0 (K = L + M); finite only below the stability limit.

    With ``finite_size=True`` the drift is the exact mean one-step change at finite
    N: the fourth moments of the inputs give c_N = (B + 1) / (B N) (from
    E[|x|^2 u^2] / N = (1 + 2/N) d for one sample and E[x.x'] terms of order d/N
    between two samples of a batch), so eps_g^* is exact in expectation for SGD at
    this N.
    """
    _require(params, g="linear", teacher_identity=False)
    K, eta, B = params.K, params.eta, params.batch
    c_n = _c_n(params.N, params.batch) if finite_size else 0.0
    denominator = 2.0 * B - K * eta * (1.0 + B * c_n)
    if denominator <= 0:
        return math.inf
    return K * eta * params.sigma ** 2 / (2.0 * denominator)


def eg_star_linear_scm_small_eta(params):
    """Small-eta limit of eq. (12): eps_g^* = eta sigma^2 K / (4 B) (eq. 13 at B = 1)."""
    _require(params, g="linear", teacher_identity=False)
    return params.eta * params.sigma ** 2 * params.K / (4.0 * params.batch)


def eg_star_erf_scm_small_eta(params):
    """Small-eta final eps_g of an erf SCM with K >= M (Goldt et al. eq. 11).

    eps_g^* = sigma^2 eta / (2 pi) (L + M / sqrt 3) / B, L = K - M: M specialised
    units and L units that learn a zero teacher. (The 1/B follows from the noise
    term carrying eta^2 / B.)
    """
    _require(params, g="erf")
    if params.K < params.M:
        raise ValueError(f"eq. (11) needs K >= M; got K={params.K}, M={params.M}")
    L = params.K - params.M
    return params.sigma ** 2 * params.eta / (2 * math.pi) * (L + params.M / math.sqrt(3)) / params.batch


def _symmetric_coordinates(K, M):
    """Maps between the packed ODE state (R, Q, v) and the independent (R, upper Q) entries."""
    upper = np.triu_indices(K)

    def state(x, v):
        Q = np.zeros((K, K))
        Q[upper] = x[K * M:]
        return _pack(x[:K * M].reshape(K, M), Q + np.triu(Q, 1).T, v)

    def entries(R, Q):
        return np.concatenate([R.ravel(), Q[upper]])

    return state, entries


def eg_star_erf_scm(params, T=None):
    """Final eps_g of an erf SCM with K >= M to first order in sigma^2, at any eta (Goldt
    et al. eq. 10).

    Without label noise the ODEs have the fixed point with eps_g = 0 at which M student
    units sit on the teacher units (R = Q = T) and the L = K - M others are switched
    off (zero weights). ``T`` is the teacher overlap matrix, default I (the paper's
    N -> infinity value); a run's own T, e.g. ``init.T`` of a simulation, gives the fixed
    point the ODE from that run's start relaxes to. Label noise adds sigma^2 s to the right-hand side f (the J2 term of
    dQ/dt), so the perturbed fixed point is y0 + sigma^2 y1 with

        J y1 = -s,    eps_g^* = sigma^2 grad(eps_g) . y1 + O(sigma^4),

    J the Jacobian of the noiseless f at y0 (central differences, step 1e-6, over the
    independent entries of R and Q; v is fixed). The paper evaluates the same first-order
    fixed point in closed form (its rational function f(M, L, eta), SM C.2); here it is
    solved numerically at the full K, M. For L >= 2 the matrix J is singular: switched-off
    units respond to the error only through their sum, so moves that change the units but
    not their sum (at first order) cost nothing. Those moves leave eps_g unchanged at
    first order as well, and the least-squares solution gives the unique eps_g^*; both
    facts are checked (s in the range of J, grad eps_g orthogonal to its null space) and a
    failure raises. The full ODE's fixed point at sigma = 0.01 agrees with this value to a
    relative 1e-6 (an O(sigma^2) correction).

    Returns ``math.inf`` where y0 is unstable (an eigenvalue of J outside the null space
    with positive real part: eta beyond the stability limit).
    """
    _require(params, g="erf", teacher_identity=T is None)
    K, M = params.K, params.M
    if K < M:
        raise ValueError(f"eq. (10) needs K >= M; got K={K}, M={M}")
    T = np.eye(M) if T is None else _matrix("T", T, (M, M))
    _check_overlaps(T, T, T, q="T", r="T")
    noiseless = dataclasses.replace(params, sigma=0.0)
    f0, f1 = rhs(noiseless, T), rhs(dataclasses.replace(params, sigma=1.0), T)
    state, entries = _symmetric_coordinates(K, M)
    ones = np.ones(K)
    R0, Q0 = np.zeros((K, M)), np.zeros((K, K))
    R0[:M], Q0[:M, :M] = T, T
    x0 = entries(R0, Q0)

    def flow(f, x):
        R, Q, _ = _unpack(noiseless, f(0.0, state(x, ones)))
        return entries(R, Q)

    def error(x):
        R, Q, _ = _unpack(noiseless, state(x, ones))
        return _kernels.generalisation_error(params.act, Q, R, T, ones, np.ones(M))

    n, h = x0.size, 1e-6
    J, grad = np.empty((n, n)), np.empty(n)
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        J[:, i] = (flow(f0, x0 + e) - flow(f0, x0 - e)) / (2 * h)
        grad[i] = (error(x0 + e) - error(x0 - e)) / (2 * h)
    s = flow(f1, x0) - flow(f0, x0)  # exactly linear in sigma^2
    _, sv, vt = np.linalg.svd(J)
    null = vt[sv < 1e-9 * sv[0]]
    lam = np.linalg.eigvals(J)
    if np.max(lam.real[np.abs(lam) >= 1e-9 * sv[0]], initial=-np.inf) > 0:
        return math.inf
    y1 = np.linalg.lstsq(J, -s, rcond=1e-9)[0]
    scale = np.linalg.norm(grad) * np.linalg.norm(y1)
    if (np.linalg.norm(J @ y1 + s) > 1e-8 * np.linalg.norm(s)
            or (len(null) and np.abs(null @ grad).max() > 1e-8 * np.linalg.norm(grad))):
        raise RuntimeError("the first-order fixed point is not unique in eps_g for these parameters")
    eg1 = float(grad @ y1)
    if not eg1 > 1e-12 * scale:
        raise RuntimeError(f"first-order eps_g^* is not positive ({eg1:.3g})")
    return params.sigma ** 2 * eg1


def eg_star_erf_both_layers_small_eta(params):
    """Small-eta final eps_g with both layers trained, M = 1 (Goldt et al. eq. 15).

    eps_g^* = eta (sigma v*)^2 / (2 sqrt 3 K pi) / B.
    """
    _require(params, g="erf", both_layers=True)
    if params.M != 1:
        raise ValueError(f"eq. (15) holds for M = 1; got M={params.M}")
    return params.eta * (params.sigma * params.v_star) ** 2 / (
        2 * math.sqrt(3) * params.K * math.pi) / params.batch


def max_stable_eta_linear_scm(K, batch=1, N=None):
    """Largest learning rate at which a linear SCM converges: eta < 2 B / K.

    With ``N`` given, the finite-N limit 2 B / (K (1 + B c_N)) of
    :func:`eg_star_linear_scm` with ``finite_size=True``, c_N = (B + 1) / (B N).
    """
    _validate.integer("K", K, low=1, doc="student hidden units")
    _validate.integer("batch", batch, low=1, doc="mini-batch size B")
    if N is None:
        return 2.0 * batch / K
    _validate.integer("N", N, low=1, doc="input dimension")
    return 2.0 * batch / K / (1.0 + batch * _c_n(N, batch))


def _check_rule(K, x, N):
    """The arguments of the linear-SCM scaling-rule formulas, stable as N -> infinity (K x < 2)."""
    _validate.integer("K", K, low=1, doc="student hidden units")
    _validate.real("x", x, low=0.0, low_open=True, doc="noise temperature eta / B")
    _validate.integer("N", N, low=1, doc="input dimension")
    if not K * x < 2.0:
        raise ValueError(f"K x = {K * x:g} must be < 2 (the N -> infinity stability limit)")


def rule_deviation_linear_scm(K, x, N, batch):
    """Relative deviation of a linear SCM's final error from the linear scaling rule.

    At a fixed noise temperature x = eta / B (the learning rate per sample), the
    N -> infinity error eps_g^* = K x sigma^2 / (2 (2 - K x)) of :func:`eg_star_linear_scm`
    depends on x only: the rule holds exactly. At finite N the exact mean step adds
    B c_N = (B + 1) / N to the noise term, so

        eps_g^*(B, N) / eps_g^*(infinity) - 1 = K x (B + 1) / N / (2 - K x - K x (B + 1) / N),

    independent of sigma, linear in B / N for B << N, and infinite at the finite-N
    stability limit. Returns ``inf`` beyond it.
    """
    _check_rule(K, x, N)
    _validate.integer("batch", batch, low=1, doc="mini-batch size B")
    excess = K * x * (batch + 1) / N
    denominator = 2.0 - K * x - excess
    return math.inf if denominator <= 0 else excess / denominator


def critical_batch_linear_scm(K, x, N, tolerance=0.1):
    """The batch size at which a linear SCM's final error leaves the scaling rule.

    Solves :func:`rule_deviation_linear_scm` = ``tolerance`` for B (a real number):

        B_c = tolerance (2 - K x) N / ((1 + tolerance) K x) - 1,

    proportional to N: the rule breaks only through the finite-N term of the step.
    """
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="relative deviation")
    _check_rule(K, x, N)
    return tolerance * (2.0 - K * x) * N / ((1.0 + tolerance) * K * x) - 1.0


def gradient_noise_scale_linear_scm(K, x, N):
    """McCandlish et al.'s gradient noise scale B_noise = tr(Sigma) / |G|^2 of a linear SCM at its
    stationary state.

    One sample's gradient with respect to each student unit is e x / sqrt(N), with
    e = (W - W*) . x / sqrt(N) + label noise. Its mean has |G|^2 = D / N per unit and its
    covariance tr(Sigma) = D (1 + 1 / N) + sigma^2 (fourth moments of Gaussian x), so
    B_noise = N + 1 + N sigma^2 / D, the same for every unit and for the sum over K units.
    At the N -> infinity stationary distance D* = K x sigma^2 / (2 - K x) of
    :func:`eg_star_linear_scm`,

        B_noise = 2 N / (K x) + 1,

    independent of sigma; the critical batch of :func:`critical_batch_linear_scm` is
    B_c + 1 = tolerance / (1 + tolerance) (1 - K x / 2) (B_noise - 1).
    """
    _check_rule(K, x, N)
    return 2.0 * N / (K * x) + 1.0


def _c_n(N, B):
    """c_N = (B + 1) / (B N): the finite-N excess of the linear SCM's mean square step
    (see :func:`eg_star_linear_scm`)."""
    return (B + 1) / (B * N)



def linear_scm_growth_rate(params, *, finite_size=False):
    """Exponential rate of d = |W - W*|^2 / N for a noiseless linear SCM.

    lambda = -2 K eta + (K eta)^2 (1 / B + c_N), per unit t, with c_N = 0 as
    N -> infinity and c_N = (B + 1) / (B N) for the exact mean step at finite N
    (see :func:`eg_star_linear_scm`). For c_N = 0 and x = eta / (2 B / K),
    lambda / (4 B) = x (x - 1) for every B: stable below x = 1.
    """
    _require(params, g="linear", teacher_identity=False)
    K, eta, B = params.K, params.eta, params.batch
    c_n = _c_n(params.N, params.batch) if finite_size else 0.0
    return -2.0 * K * eta + (K * eta) ** 2 * (1.0 / B + c_n)


def _require(params, *, g, both_layers=False, teacher_identity=True):
    """Check the assumptions under which an asymptotic formula of Goldt et al. holds.

    All of them: activation ``g``, no weight decay. A soft committee machine
    (``both_layers=False``): untrained second layers with v = v* = 1. Both layers
    (``both_layers=True``): the second layer trained. ``teacher_identity``:
    orthonormal teacher vectors, T = I (w_star_std = 1).
    """
    check_params(params)
    if params.g != g:
        raise ValueError(f"this formula holds for g={g!r}; got g={params.g!r}")
    if params.weight_decay != 0:
        raise ValueError(f"this formula holds without weight decay; got weight_decay={params.weight_decay}")
    if both_layers and not params.train_second_layer:
        raise ValueError("this formula holds with both layers trained; got train_second_layer=False")
    if not both_layers and (params.train_second_layer or params.v_star != 1.0 or params.v_init != 1.0):
        raise ValueError(
            "this formula holds for a soft committee machine (fixed v = v* = 1); got "
            f"train_second_layer={params.train_second_layer}, v_star={params.v_star}, "
            f"v_init={params.v_init}")
    if teacher_identity and params.w_star_std != 1.0:
        raise ValueError(f"this formula holds for T = I (w_star_std = 1); got w_star_std={params.w_star_std}")


ODE_STARTS = ("random", "paper", "paper_small")


def paper_start(params, kind="paper", *, seed=0, perturbation=1e-9):
    """Nearly symmetric initial overlaps of the authors' ODE integrator (Goldt et al., code).

    The code that accompanies Goldt et al. (``scmpp_ode.cpp`` of the authors' nn2pp
    repository) starts the ODE (eq. 9) not from the overlaps of random weights but from

    * ``kind="paper"`` (its "large initial weights"): Q = I + e A, R = e B, v = 1 + e c;
    * ``kind="paper_small"`` (its "small initial weights"): Q = I / 2000 + e A,
      R = e B, v = 1 / 2000 + e c;

    with A, B, c standard Gaussian (Q symmetrised from its upper triangle) and
    e = ``perturbation`` (1e-9 there), T = I. The perturbation only breaks the symmetry
    between the units; where the ODE ends is then decided by the linear instability
    of the symmetric state, not by the Wishart fluctuations of a random start.

    Returns
    -------
    dict
        ``Q0``, ``R0``, ``v0`` for :func:`ode` (T is the default identity).
    """
    check_params(params)
    if kind not in ("paper", "paper_small"):
        raise ValueError(f"kind must be 'paper' or 'paper_small'; got {kind!r}")
    _validate.real("perturbation", perturbation, low=0.0, doc="size of the symmetry breaking")
    rng = np.random.default_rng(seed)
    K, M = params.K, params.M
    scale = 1.0 if kind == "paper" else 1.0 / 2000
    A = np.triu(rng.standard_normal((K, K)))
    Q0 = scale * np.eye(K) + perturbation * (A + np.triu(A, 1).T)
    R0 = perturbation * rng.standard_normal((K, M))
    v0 = scale + perturbation * rng.standard_normal(K)
    return {"Q0": Q0, "R0": R0, "v0": v0}
