"""Low-dimensional dynamics of the overlaps and the exponents of the weak-recovery time.

The state is Omega = [[Q, M], [M^T, P]] with Q = W W^T (p, p), M = W W*^T (p, k) and
P = W* W*^T = I_k (Arnaboldi et al. 2024, "Exact low-dimensional asymptotic
dynamics"). The fields u = (lambda, nu) = (W z, W* z) of an input are N(0, Omega).

**One step in expectation (derived in the chapter).** Write Omega = L L^T with
L (p + k, r) and u = L zeta, zeta ~ N(0, I_r) the input's coordinates in
S = span(W, W*). The SGD direction of unit j is G_j = (1/n_b) sum_nu F_j^nu z^nu with
F_j = r sigma'(lambda_j) / p (r = y - f, or y for the correlation loss). Its part in
S has mean E[F_j zeta] (coordinates), so <G_j, w*_s> and <G_j, w_i> have means
E[F_j nu_s] and E[F_j lambda_i]. Its squared norms add the d - r directions outside
S, where each sample contributes F^2 per direction:

    E<G_i, G_j> = (1/n_b) (E[F_i F_j |zeta|^2] + (d - r) E[F_i F_j])
                  + (1 - 1/n_b) E[F_i zeta] . E[F_j zeta].

The first term is the noise: gamma^2 times it is gamma^2 d / n_b E[F_i F_j] to leading
order. For the projected algorithm w_j' = w_j + gamma G_j, then

    M_js <- (M_js + gamma E[F_j nu_s]) / n_j,
    Q_ij <- (Q_ij + gamma (E[F_j lambda_i] + E[F_i lambda_j]) + gamma^2 E<G_i, G_j>) / (n_i n_j),

with n_j^2 the numerator of Q_jj; spherical SGD removes beta_j = <G_j, w_j> w_j
from G_j first (formulas in :func:`step_map`). Replacing the ratio of random
quantities by the ratio of their means is exact as d -> infinity. At finite d the
error is not small where the normaliser fluctuates by O(1) from batch to batch
(gamma^2 d / n_b of order one, small n_b): the map keeps the leading fluctuation
factor where that series converges (:func:`_jensen_factor`), and
:func:`single_sample_step_mean` and :func:`batch_step_mean` give the exact one-step
mean for small batches, where the map can be off by a factor of several;
``dynamics(method="exact")`` iterates that mean, and ``dynamics(method="law")`` carries the whole
law of the overlap across runs as a Markov chain with the exact step's kernel.
``finite_d=False`` drops the other finite-size terms as well:
(d - r) -> d, the intra-batch factor (1 - 1/n_b) -> 1, and E[F F |zeta|^2] / n_b.

Gaussian averages are quadratures over zeta. For the polynomial activations and
targets a tensor Gauss-Hermite rule whose number of nodes per axis is chosen from the
degree of the integrands (:func:`_exact_nodes`) makes every moment exact to rounding.
At a kink of sigma or h* (ReLU, |x|, sign) F jumps across a hyperplane through the
origin, lambda_j = 0 or nu_s = 0, which a tensor rule does not resolve. Where the kink
normals span at most two directions and at most one other direction remains (one
ReLU unit and one teacher direction, or two ReLU units and one smooth teacher
direction: r <= 3), the rule is split at the
kinks (:func:`_split_nodes`): in a rotated basis, polar coordinates on the plane of the
normals, split into angular sectors at the kink lines (:func:`_polar_nodes`), times a
Gauss-Hermite rule on the remaining direction. Within a sector the integrand is smooth
in the angle and, along a ray, a polynomial (or smooth function) of the radius times
rho exp(-rho^2/2), so Gauss-Legendre rules in the angle (per sector) and in the radius
(on [0, 12]; the tail beyond is below e^-72) converge exponentially. Checked against the
closed forms E[relu(u) relu(v)] = (sin t + (pi - t) cos t) / (2 pi),
E[u^2 1{u>0} 1{v>0}] = (pi - t + sin t cos t) / (2 pi) and
P(u > 0, v > 0) = (pi - t) / (2 pi), cos t the correlation (arc-cosine kernels): error
<= 1e-12 (tests/largebatch/test_theory.py). Otherwise (kinks in three or more directions,
e.g. two ReLU units and a ReLU target) the tensor rule is kept, with 40 (r = 3) and
20 (r = 4) nodes per axis: measured against 4e6-sample Monte Carlo those moments are
accurate to ~8e-4 (r = 3), converging roughly like n^-1/2 to n^-1 in the nodes per axis.
Smooth non-polynomial functions (tanh, erf) use 120, 200, 40, 20 nodes for r = 1..4
and converge spectrally. Nothing here draws random numbers or calls the simulation.
"""


import functools

import numpy as np
import xarray as xr
from scipy.integrate import solve_ivp

from .. import __version__, _validate
from . import functions
from .hermite import gauss_hermite_grid
from .params import Params, record_steps

_NODES = {1: 120, 2: 200, 3: 40, 4: 20}
_POLAR_RADIAL, _POLAR_ANGULAR, _POLAR_RMAX = 64, 48, 12.0  # nodes in the radius / per angular sector
_SPLIT_HERMITE = 80  # Gauss-Hermite nodes on the smooth direction of a split rule, non-polynomial targets
# (40 left a 1e-8 relative error for tanh with two ReLU units; 80 is converged to 1e-12 under doubling)


def _radial_rule():
    """Gauss-Legendre nodes rho on [0, _POLAR_RMAX] and their weights (no density folded in)."""
    x_leg, w_leg = np.polynomial.legendre.leggauss(_POLAR_RADIAL)
    return _POLAR_RMAX * (x_leg + 1) / 2, w_leg * _POLAR_RMAX / 2


def _kink_rows(params):
    """Rows of L (fields lambda_1..p, nu_1..k) at whose zero sigma' or h* jumps."""
    rows = list(range(params.p)) if params.activation in functions.KINKS else []
    if params.target in functions.KINKS:
        rows += list(range(params.p, params.p + params.k))
    return rows


def _polar_nodes(L, rows):
    """Rule for E over zeta ~ N(0, I_2), split at the lines L[i] . zeta = 0 (i in ``rows``).

    zeta = rho (cos t, sin t): Gauss-Legendre in t on each sector between the lines, and in
    rho on [0, 12] with the weight rho exp(-rho^2/2) / (2 pi) folded in (module docstring).
    """
    cuts = [0.0, 2 * np.pi]
    for i in rows:
        a, b = L[i]
        if a * a + b * b > 0:
            t0 = np.arctan2(-a, b) % np.pi  # a cos t + b sin t = 0
            cuts += [t0, t0 + np.pi]
    cuts = np.unique(cuts)
    x, wx = np.polynomial.legendre.leggauss(_POLAR_ANGULAR)
    theta, w_theta = [], []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi - lo > 1e-14:
            theta.append(lo + (hi - lo) * (x + 1) / 2)
            w_theta.append(wx * (hi - lo) / 2)
    theta, w_theta = np.concatenate(theta), np.concatenate(w_theta)
    rho, w_leg = _radial_rule()
    w_rho = w_leg * rho * np.exp(-rho ** 2 / 2) / (2 * np.pi)
    zeta = np.stack([np.outer(rho, np.cos(theta)).ravel(), np.outer(rho, np.sin(theta)).ravel()], axis=1)
    return zeta, np.outer(w_rho, w_theta).ravel()


def _split_nodes(params, L, rows):
    """Rule for E over zeta ~ N(0, I_r) split at the kink hyperplanes L[i] . zeta = 0, or None.

    The kink normals L[rows] span a subspace V of dimension q. In an orthonormal basis
    (V, V-perp) the kinked factors depend only on the V coordinates: those get the rule
    split at the kinks (q = 2: :func:`_polar_nodes`; q = 1: Gauss-Legendre on each half
    line), the r - q others a Gauss-Hermite rule, exact for polynomial targets
    (3 deg h* + 1 nodes, as :func:`_exact_nodes`) and ``_SPLIT_HERMITE`` (80) nodes otherwise. Used when
    q <= 2 and r - q <= 1 (e.g. one ReLU unit, or two with a smooth target); None otherwise.
    """
    r = L.shape[1]
    N = L[rows]
    _, sv, Vt = np.linalg.svd(N)
    q = int(np.sum(sv > 1e-12 * sv.max())) if sv.size and sv.max() > 0 else 0
    if q == 0 or q > 2 or r - q > 1:
        return None
    B = Vt.T  # (r, r) orthonormal; its first q columns span the kink normals
    if q == 2:
        eta_v, w_v = _polar_nodes(N @ B[:, :2], range(len(rows)))
    else:
        rho, w_leg = _radial_rule()
        w_rho = w_leg * np.exp(-rho ** 2 / 2) / np.sqrt(2 * np.pi)
        eta_v, w_v = np.concatenate([rho, -rho])[:, None], np.concatenate([w_rho, w_rho])
    if r == q:
        return eta_v @ B.T, w_v
    deg_t = functions.DEGREE.get(params.target)
    (x,), wx = gauss_hermite_grid(1, 3 * deg_t + 1 if deg_t else _SPLIT_HERMITE)
    eta = np.concatenate([np.repeat(eta_v, x.size, axis=0), np.tile(x, len(eta_v))[:, None]], axis=1)
    return eta @ B.T, np.outer(w_v, wx).ravel()


def _quadrature(r, n):
    zeta, weight = gauss_hermite_grid(r, n)
    return np.stack([g.ravel() for g in zeta], axis=0).T.copy(), weight.ravel()


def _noise_rule(noise):
    """Nodes and weights of E over xi ~ N(0, 1) exact to degree 7 (one node when there is no label noise)."""
    if not noise:
        return np.zeros(1), np.ones(1)
    from numpy.polynomial.hermite_e import hermegauss
    x, wx = hermegauss(4)
    return x, wx / wx.sum()


def _exact_nodes(params):
    """Nodes per axis that integrate every moment exactly for polynomial functions, or None.

    F = (y - f) sigma' has degree deg F = max(deg h*, deg sigma) + deg sigma' (square
    loss; deg h* + deg sigma' for the correlation loss), and the highest moment kept is
    E[Y^3] (the third cumulant of :func:`moments`' Y, which has degree 2 deg F), of degree 6 deg F;
    an n-node Gauss-Hermite rule is exact up to degree 2n - 1, so n = 3 deg F + 1.
    """
    deg_s, deg_t = functions.DEGREE.get(params.activation), functions.DEGREE.get(params.target)
    if params.target == "prod":
        deg_t = params.k
    elif params.target == "staircase":
        deg_t = params.k
    if deg_s is None or deg_t is None:
        return None
    deg_F = (max(deg_t, deg_s) if params.loss == "square" else deg_t) + deg_s - 1
    return 3 * deg_F + 1


_CACHE = {}


def _nodes(r, n):
    key = (r, n)
    if key not in _CACHE:
        _CACHE[key] = _quadrature(r, n)
    return _CACHE[key]


def covariance(M, Q, k):
    """Omega = [[Q, M], [M^T, I_k]] (fields ordered lambda_1..p, nu_1..k)."""
    p = Q.shape[0]
    Om = np.empty((p + k, p + k))
    Om[:p, :p], Om[:p, p:], Om[p:, :p], Om[p:, p:] = Q, M, M.T, np.eye(k)
    return Om


def _factor(Om):
    """L with L L^T = Omega, dropping null directions (rank r <= p + k)."""
    e, V = np.linalg.eigh(Om)
    keep = e > 1e-12 * max(e.max(), 1.0)
    return V[:, keep] * np.sqrt(e[keep])


def moments(params, M, Q, n_nodes=None):
    """Gaussian averages of one sample that the step map needs, at overlaps (M, Q).

    Returns a dict with ``r`` (rank of Omega) and
    F_lam[i, a] = E[F_i lambda_a], F_nu[i, s] = E[F_i nu_s], F_zeta (p, r) = E[F_i zeta],
    FF[i, j] = E[F_i F_j], FF_z2[i, j] = E[F_i F_j |zeta|^2],
    FlFl[i, a, j, b] = E[F_i lambda_a F_j lambda_b] (for spherical SGD),
    and under ``jensen`` the per-unit moments of projected SGD's normaliser (:func:`_jensen_factor`),
    which depend on params.gamma, d and n_b as well (the mean updated direction and Y below).
    Label noise Delta enters F only through r -> r + sqrt(Delta) xi, so it adds
    Delta E[sigma'_i sigma'_j ...] / p^2 to the second moments.
    """
    p, k = params.p, params.k
    L = _factor(covariance(M, Q, k))
    r = L.shape[1]
    rows = _kink_rows(params)
    split = _split_nodes(params, L, rows) if rows and n_nodes is None else None
    if split is not None:
        zeta, w = split
    else:
        zeta, w = _nodes(r, n_nodes or _exact_nodes(params) or _NODES[r])
    u = zeta @ L.T
    lam, nu = u[:, :p], u[:, p:]
    act, tgt = params.activation_code, params.target_code
    y = functions.numpy_target(tgt, nu)
    if params.loss == "square":
        y = y - functions.numpy_value(act, lam).mean(axis=1)
    ds = functions.numpy_derivative(act, lam) / p  # sigma'(lambda_j) / p
    F = y[:, None] * ds
    z2 = np.sum(zeta ** 2, axis=1)
    wF = w[:, None] * F
    second = F[:, :, None] * F[:, None, :] + params.noise * ds[:, :, None] * ds[:, None, :]
    FL = F[:, :, None] * lam[:, None, :]  # (N, i, a)
    FlFl = np.einsum("n,nia,njb->iajb", w, FL, FL)
    if params.noise:
        DL = ds[:, :, None] * lam[:, None, :]
        FlFl += params.noise * np.einsum("n,nia,njb->iajb", w, DL, DL)
    # Per-unit moments of the fluctuation of the normalisation (projected SGD; used by
    # step_map's finite-d correction). With F = (r0 + sqrt(Delta) xi) s:
    r0, D = y[:, None], params.noise
    F2 = (r0 ** 2 + D) * ds ** 2
    F4 = (r0 ** 4 + 6 * D * r0 ** 2 + 3 * D * D) * ds ** 4
    F3 = (r0 ** 3 + 3 * D * r0) * ds ** 3
    # q_j = |w_j + gamma G_j|^2 moves, to first order in the batch's fluctuation dG_j, by
    # 2 gamma <w_j + gamma E G_j, dG_j>: its part in S projects each sample on the mean updated
    # direction, lambda_j + gamma E[F_j zeta] . zeta, not on w_j alone (the in-plane part of |G_j|^2
    # fluctuates too, with weight gamma E[F_j lambda_j] against 1).
    g, nb = params.gamma, params.n_b
    own = lam + g * zeta @ (wF.T @ zeta).T
    # That fluctuation, with the part outside S at its mean chi-square, is a batch mean of
    # Y_j = 2 gamma F_j own_j + gamma^2 (d - r) F_j^2 / n_b; the third cumulant of Y sizes the next
    # term of _jensen_factor's series. Label noise by a Gauss-Hermite rule in xi (exact: Y^3 has degree 6 in xi).
    xi, wxi = _noise_rule(D)
    Fx = (r0[..., None] + np.sqrt(D) * xi) * ds[..., None]  # (N, p, n_xi)
    Y = 2 * g * Fx * own[..., None] + g * g * (params.d - r) * Fx ** 2 / nb
    EY, EY2, EY3 = (np.einsum("n,x,njx->j", w, wxi, Y ** power) for power in (1, 2, 3))
    return {
        "jensen": {
            "X": w @ (F * own),  # E[F_j <w_j + gamma E G_j, zeta>]
            "X2": w @ (F2 * own ** 2),  # E[(F_j own_j)^2]
            "F4": w @ F4, "F2": w @ F2,
            "kappa3_Y": EY3 - 3 * EY * EY2 + 2 * EY ** 3,
            "XF2": w @ (F3 * own),  # E[F_j own_j F_j^2]
            "AX": np.einsum("n,nj,ns->js", w, F2 * own, nu),  # E[F_j nu_s F_j own_j]
            "AF2": np.einsum("n,nj,ns->js", w, F3, nu),  # E[F_j nu_s F_j^2]
            "A2": np.einsum("n,nj,ns->js", w, F2, nu ** 2),  # E[(F_j nu_s)^2]
        },
        "r": r,
        "F_lam": wF.T @ lam, "F_nu": wF.T @ nu, "F_zeta": wF.T @ zeta,
        "FF": np.einsum("n,nij->ij", w, second), "FF_z2": np.einsum("n,nij->ij", w * z2, second),
        "FlFl": FlFl,
    }


def step_map(params, M, Q, *, finite_d=True, n_nodes=None, jensen=True):
    """Expected overlaps after one SGD step, (M', Q') (module docstring; derived in the chapter).

    Parameters
    ----------
    params : Params
    M : ndarray, shape (p, k)
    Q : ndarray, shape (p, p)
        Unit diagonal (the algorithms keep every w_j on the sphere).
    finite_d : bool
        Keep the finite-d and intra-batch terms (True) or take d -> infinity at
        fixed gamma^2 d / n_b (False).
    jensen : bool
        Keep the finite-batch fluctuation factor of projected SGD (:func:`_jensen_factor`;
        only with ``finite_d``).
    """
    return _map_step(params, M, Q, finite_d, n_nodes, jensen)[:2]


def _map_step(params, M, Q, finite_d=True, n_nodes=None, jensen=True):
    """:func:`step_map`'s (M', Q') and the largest first omitted term of the fluctuation factor's series
    over the units where that series does not converge (its factor dropped; 0.0 where it converges or
    is not used): the map's relative error in m' is of that order there (:func:`_jensen_factor`)."""
    m = moments(params, M, Q, n_nodes)
    Mn, Qn = _raw(params, m, M, Q, finite_d)
    failed = 0.0
    if params.algorithm == "projected" and finite_d and jensen:
        factor, kept, omitted = _jensen_factor(params, m, Qn, Mn, terms=True)
        Mn = Mn * factor
        bad = omitted > SERIES_RATIO_MAX * kept
        failed = float(omitted[bad].max()) if bad.any() else 0.0
    norms = np.sqrt(np.diag(Qn))
    return Mn / norms[:, None], Qn / np.outer(norms, norms), failed


def _raw(params, m, M, Q, finite_d=True):
    """Expected <w_j', w*_s> and <w_i', w_j'> before renormalising (step_map's numerators)."""
    g, d, nb = params.gamma, params.d, params.n_b
    A, B = m["F_nu"], m["F_lam"]
    gg = m["F_zeta"] @ m["F_zeta"].T
    if finite_d:
        S = (m["FF_z2"] + (d - m["r"]) * m["FF"]) / nb + (1.0 - 1.0 / nb) * gg
        pair = lambda both, a, b: both / nb + (1.0 - 1.0 / nb) * a * b  # E[mean X mean Y]
    else:
        S = d * m["FF"] / nb + gg
        pair = lambda both, a, b: a * b
    if params.algorithm == "projected":
        Mn = M + g * A
        Qn = Q + g * (B + B.T) + g * g * S
    else:  # spherical: G_j -> G_j - beta_j w_j, beta_j = <G_j, w_j>
        p = Q.shape[0]
        beta = np.diag(B)  # E[beta_j]
        Mn = M + g * (A - beta[:, None] * M)
        Qn = np.empty_like(Q)
        FlFl = m["FlFl"]
        for i in range(p):
            for j in range(p):
                # E[beta_j <G_i, w_j>], E[beta_i <G_j, w_i>], E[beta_i beta_j]
                bj_Giwj = pair(FlFl[j, j, i, j], B[j, j], B[i, j])
                bi_Gjwi = pair(FlFl[i, i, j, i], B[i, i], B[j, i])
                bi_bj = pair(FlFl[i, i, j, j], B[i, i], B[j, j])
                first = B[j, i] + B[i, j] - (beta[i] + beta[j]) * Q[i, j]
                Qn[i, j] = Q[i, j] + g * first + g * g * (S[i, j] - bj_Giwj - bi_Gjwi + bi_bj * Q[i, j])
    return Mn, Qn


def _jensen_factor(params, m, Qn, Mn, terms=False):
    """Finite-batch correction of E[(M + gamma a) / sqrt(q)] for projected SGD, (p, k) factors.

    q_j = |w_j + gamma G_j|^2 = 1 + 2 gamma beta_j + gamma^2 |G_j|^2 fluctuates from batch to
    batch (beta_j = mean of F_j lambda_j; the part of |G_j|^2 outside S is
    sum_nu F_j^2 chi^2_(d-r) / n_b^2 exactly), and to second order

        E[num / sqrt(q)] = E[num] / sqrt(E q) (1 + 3/8 Var q / (E q)^2) - Cov(num, q) / (2 (E q)^(3/2)).

    Both terms are of relative order gamma^2 / n_b per step; they shift, e.g., the
    stationary overlap by O(1/d) when n_b ~ d. To first order in the batch's fluctuation dG_j,
    q_j moves by 2 gamma <w_j + gamma E G_j, dG_j> + the fluctuation of the part outside S,
    gamma^2 sum_nu F_j^2 chi^2_(d-r) / n_b^2: the part in S projects on the mean updated direction,
    not on w_j, which matters once gamma E[F_j lambda_j] is not small (at n_b = d = 2048, gamma = 0.2,
    correlation loss, m = 0.83, Var q is 40% larger than with w_j alone, as sampled batches give it;
    tests/largebatch/test_theory.py checks it at d = 512).

    When the correction is used is fixed a priori, by the series itself and not by
    any comparison with simulations: this is an asymptotic expansion in the cumulants
    of q, and (the usual rule for truncating an asymptotic series) it is kept only where
    its first omitted term, -5/16 kappa_3(q) / (E q)^3, is at most half the last kept
    one, 3/8 Var q / (E q)^2. Where the series does not visibly converge (small batches
    with heavy-tailed F^2) the factor is 1: the recursion then has no fluctuation
    correction rather than a diverging one. ``jensen=False`` in :func:`step_map` turns
    the correction off everywhere, to see what it changes.
    """
    var_q, cov_num_q = _q_fluctuations(params, m)
    Eq = np.diag(Qn)
    kept, omitted = _series_terms(params, m, var_q, Eq)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(Mn != 0, cov_num_q / (2 * Eq[:, None] * Mn), 0.0)
    # Used only where the series visibly converges; otherwise (small batches, heavy-tailed F^2)
    # it is left out, not extrapolated.
    valid = (omitted <= SERIES_RATIO_MAX * kept)[:, None]
    factor = np.where(valid, 1 + kept[:, None] - shift, 1.0)
    return (factor, kept, omitted) if terms else factor


SERIES_RATIO_MAX = 0.5  # the factor is kept where its first omitted term is at most this times the last kept
# Where the series does not converge the map's relative error in m' is of the order of the first omitted
# term. Once that term reaches 1 the map has no correct digit: its m' may be off by a factor of several
# (at d = 64, He3, n_b = 8, gamma = 0.3, m = 0.3 the term is 1.2e5 and the map's m' is 15 times too
# small), so dynamics(method="recursion") does not return it (``series_failure``). Below 1 the factor is
# dropped as before and the largest such term is reported in the result's attrs.
SERIES_FAIL = 1.0


def _series_terms(params, m, var_q, Eq):
    """The last kept and the first omitted term of the series in the cumulants of q, (p,) each:
    3/8 Var q / (E q)^2 and |5/16 kappa_3(q)| / (E q)^3, with kappa_3(q) = kappa_3(Y) / n_b^2 from q's
    first-order fluctuation, the batch mean of Y (:func:`moments`). That is a proxy for the next
    order, not all of it: terms of the same order in 1/n_b from the curvature of q in the in-plane
    fluctuation and from the chi-square's skewness add about 13% to it at d = n_b = 128 (He2,
    correlation loss, gamma = 0.2), and the expansion's (Var q)^2 term, of opposite sign, is 40% of it
    there."""
    return 3 / 8 * var_q / Eq ** 2, 5 / 16 * np.abs(m["jensen"]["kappa3_Y"]) / params.n_b ** 2 / Eq ** 3


def series_terms(params, M, Q):
    """Relative size of the last kept and the first omitted term of projected SGD's fluctuation
    factor (:func:`_jensen_factor`), per unit, at overlaps (M, Q): (kept, omitted). The factor is used
    where omitted <= :data:`SERIES_RATIO_MAX` kept; the series' error in m' is then expected to be of the order of
    omitted times m'."""
    if params.algorithm != "projected":
        raise ValueError(f"the fluctuation factor is projected SGD's; got algorithm {params.algorithm!r}")
    M, Q = _check_state(params, M, Q)
    m = moments(params, M, Q)
    _, Qraw = _raw(params, m, M, Q)
    var_q, _ = _q_fluctuations(params, m)
    return _series_terms(params, m, var_q, np.diag(Qraw))


def _q_fluctuations(params, m):
    """Var q_j (p,) and Cov(M_js + gamma a_js, q_j) (p, k) over batches (projected SGD), from the
    moments ``m`` of :func:`moments` at ``params``."""
    g, nb, A, J = params.gamma, params.n_b, m["F_nu"], m["jensen"]
    Dp = params.d - m["r"]
    varX = J["X2"] - J["X"] ** 2
    covXF2 = J["XF2"] - J["X"] * J["F2"]
    ES2sq = nb * J["F4"] + nb * (nb - 1) * J["F2"] ** 2
    varG2 = (ES2sq * Dp * (Dp + 2) - (nb * J["F2"] * Dp) ** 2) / nb ** 4
    var_q = 4 * g * g * varX / nb + 4 * g ** 3 * Dp * covXF2 / nb ** 2 + g ** 4 * varG2
    covAX = J["AX"] - A * J["X"][:, None]
    covAF2 = J["AF2"] - A * J["F2"][:, None]
    cov_num_q = 2 * g * g * covAX / nb + g ** 3 * Dp * covAF2 / nb ** 2
    return var_q, cov_num_q


def _check_state(params, M0, Q0):
    p, k = params.p, params.k
    M0 = np.asarray(M0, float).reshape(p, k) if np.ndim(M0) else np.full((p, k), float(M0))
    Q0 = np.eye(p) if Q0 is None else np.asarray(Q0, float)
    if Q0.shape != (p, p) or not np.allclose(np.diag(Q0), 1.0, atol=1e-9):
        raise ValueError(f"Q0 must be a ({p}, {p}) matrix with unit diagonal (unit-norm students)")
    if np.linalg.eigvalsh(covariance(M0, Q0, k)).min() < -1e-9:
        raise ValueError("[[Q0, M0], [M0^T, I]] must be positive semi-definite (a Gram matrix)")
    return M0, Q0


def step_variance(params, M, Q):
    """Variance of M_js after one step, given (M, Q): the batch-to-batch spread of
    (M + gamma a) / sqrt(q) to leading order (projected SGD; for spherical SGD only the
    numerator's spread). a is the batch mean of F_j nu_s, q the squared norm before
    renormalising (see :func:`_jensen_factor`):

        Var(num / sqrt q) = Var num / E q - E num Cov(num, q) / (E q)^2 + (E num)^2 Var q / (4 (E q)^3).

    This is first order in the batch's fluctuations (Var q and Cov(num, q) of :func:`_q_fluctuations`),
    so it needs q to vary little from batch to batch. With heavy-tailed F^2 it may not: for the He2
    target and student, correlation loss, gamma = 0.2, n_b = d = 256, m = 0.84 the part of q outside S
    varies by 54% of its mean, and this variance is 1.5 times the sampled one (at n_b = d = 2048: 19%,
    and 7% too large). ``dynamics(method="exact", fluctuations=True)`` samples the variance instead.
    """
    g, nb = params.gamma, params.n_b
    m = moments(params, M, Q)
    A, J = m["F_nu"], m["jensen"]
    _, Qraw = _raw(params, m, M, Q)
    Eq = np.diag(Qraw)[:, None]
    num = M + g * A
    var_num = g * g * (J["A2"] - A ** 2) / nb
    if params.algorithm != "projected":
        return var_num / Eq
    var_q, cov_num_q = _q_fluctuations(params, m)
    return var_num / Eq - num * cov_num_q / Eq ** 2 + num ** 2 * var_q[:, None] / (4 * Eq ** 3)


def initial_state(params, init=None, M0=None, Q0=None):
    """(M0, Q0) from a simulation's first record, from arguments, or from params.m0."""
    if init is not None:
        return _check_state(params, init.M.values[0], init.Q.values[0])
    if M0 is None:
        if params.m0 is None:
            raise ValueError("give M0 (or init=, or Params.m0): the theory starts from given overlaps")
        M0 = np.zeros((params.p, params.k))
        M0[np.arange(params.p), np.arange(params.p) % params.k] = params.m0
    return _check_state(params, M0, Q0)


def dynamics(params, steps, *, M0=None, Q0=None, init=None, n_points=100, spacing="linear",
             finite_d=True, method="recursion", n_nodes=None, rtol=1e-8, fluctuations=False,
             jensen=True, n_batches=20000, seed=0, grid=801, series_failure="exact"):
    """The overlaps' deterministic dynamics for ``steps`` SGD steps.

    ``method="recursion"`` iterates :func:`step_map` step by step (the exact
    low-dimensional recursion, also valid for O(1) steps such as giant steps);
    ``method="ode"`` integrates dOmega/dt = step_map(Omega) - Omega with scipy's
    solve_ivp (LSODA, tolerance ``rtol``), the continuous-time limit in which one
    step moves the overlaps by o(1), which is far cheaper for long runs.

    ``fluctuations=True`` (recursion, p = k = 1) also propagates the variance V of
    the overlap across runs, to second order (a linear-noise closure): with g the
    step map and s^2 the one-step variance (:func:`step_variance`),

        E m_{t+1} = g(E m_t) + g''(E m_t) V_t / 2,      V_{t+1} = g'(E m_t)^2 V_t + s^2(E m_t).

    ``jensen=False`` drops projected SGD's finite-batch normaliser correction
    (:func:`_jensen_factor`), to show its effect.

    The first term is what the plain recursion misses when the runs spread: at
    finite d the mean of a nonlinear map is not the map of the mean.

    ``method="exact"`` (p = k = 1, no label noise) iterates the exact one-step mean
    instead of :func:`step_map`: g(m) = E[m' | m] of :func:`batch_step_mean`, no expansion
    in the normaliser's fluctuations, by Monte Carlo over ``n_batches`` batches per step
    (fresh numbers each step, from ``seed``), with the closure above when
    ``fluctuations=True`` (g' and g'' by differences on common random numbers, s^2 the
    one-step variance of m' over the batches and the chi-square). The Monte Carlo error of
    the result is propagated through the same linearisation, err_{t+1}^2 = g'^2 err_t^2 +
    Var_batches(E_X m') / n_batches, and returned as ``M_mc_se``. The cost is about n_b n_batches force evaluations per step (three
    times that with ``fluctuations``), so it is for small and moderate batches, where
    the second-order factor is not enough (the chapter measures where).

    ``method="law"`` (p = k = 1, no label noise) carries the whole law of the overlap across runs
    instead of its first two moments: m_t is a Markov chain on [-1, 1], and its one-step kernel
    is sampled on ``grid`` equally spaced overlaps, ``n_batches`` batches each (:func:`_law_recursion`;
    the cost, about grid n_batches n_b force evaluations, is paid once, since the kernel does not
    change with t). ``M`` and ``M_var`` are the law's mean and variance, ``M_mc_se`` the mean's
    Monte Carlo error, ``law`` (t, m) the probability of each grid point and ``law_groups``
    (group, t, m) the same from 16 independent groups of the batches, whose spread over groups divided
    by 4 is the Monte Carlo error of any statistic of the law; ``t_recovery`` is the first step at
    which half of the law has |m| >= eta (the median run's, not the mean's: with an even target the
    mirror state pulls the mean towards zero). ``grid`` is at most :data:`LAW_MAX_GRID`. It needs no closure,
    so it also holds where runs are skewed or split between modes. That ``t_recovery`` is not a first-passage
    time (the law has no absorbing boundary, and runs that passed eta may fall back); :func:`first_passage`
    carries the law absorbed at eta and gives the distribution of the first-passage time.

    **Where the step map's series fails** (``method="recursion"``, projected SGD with its fluctuation
    factor): if at some step the first omitted term of the factor's series (:func:`series_terms`) is larger
    than :data:`SERIES_FAIL` where the series does not converge, the map has no correct digit there (small
    batches with heavy-tailed F^2). Then ``series_failure="exact"`` (default) reruns the whole dynamics with
    ``method="exact"`` (p = k = 1 and no label noise; otherwise it raises), recorded in ``attrs``
    (``method_used``, ``series_failure_step``, ``series_failure_term``); ``series_failure="raise"`` raises a
    ``ValueError`` that names ``method="exact"``. Where the series fails by less, the factor is dropped and
    ``attrs["series_omitted_max"]`` is the largest first omitted term met (0.0 if none): the order of the
    map's relative error per step.

    Returns
    -------
    xarray.Dataset
        Same layout as :func:`tsdyn.largebatch.simulate`: ``M``, ``Q``, ``overlap``,
        ``t_recovery`` (first step with ||M||_F >= eta; for the ODE, interpolated),
        ``recovered``; time in SGD steps.
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a largebatch.Params; got {type(params).__name__}")
    _validate.integer("steps", steps, low=1, doc="number of SGD steps")
    M, Q = initial_state(params, init, M0, Q0)
    record = init.t.values.astype(np.int64) if init is not None else record_steps(steps, n_points, spacing)
    p, k = params.p, params.k
    Ms = np.full((len(record), p, k), np.nan)
    Qs = np.full((len(record), p, p), np.nan)
    t_rec = np.inf
    V = np.zeros(len(record))
    mc_se, law, omitted_max = None, None, 0.0
    if fluctuations and (p != 1 or k != 1 or method not in ("recursion", "exact")):
        raise ValueError("fluctuations=True is for p = k = 1 with method='recursion' or 'exact' "
                         "(method='law' carries the whole law)")
    if method == "exact":
        Ms[:, 0, 0], V, mc_se, t_rec = _exact_recursion(params, float(M[0, 0]), record, fluctuations,
                                                         n_batches, seed)
        Qs[:] = 1.0
    elif method == "law":
        Ms[:, 0, 0], V, mc_se, t_rec, x, P, Pg = _law_recursion(params, float(M[0, 0]), record, grid, n_batches,
                                                                 seed)  # t_rec: half of the runs recovered
        Qs[:] = 1.0
        law = {"law": (("t", "m"), P, {"long_name": "probability of each overlap grid point (method='law')"}),
               "law_groups": (("group", "t", "m"), Pg, {"long_name": "the law carried by each group's kernel "
                                                                     "(Monte Carlo error: spread / sqrt(groups))"})}
    elif method == "recursion":
        if series_failure not in ("exact", "raise"):
            raise ValueError(f"series_failure must be 'exact' or 'raise'; got {series_failure!r}")
        step, var = 0, 0.0
        for i, target in enumerate(record):
            while step < target:
                Mn, Qn, failed = _map_step(params, M, Q, finite_d, n_nodes, jensen)
                if failed > SERIES_FAIL:
                    return _series_failed(params, steps, step, float(np.linalg.norm(M)), failed, series_failure,
                                          dict(M0=M0, Q0=Q0, init=init, n_points=n_points, spacing=spacing,
                                               fluctuations=fluctuations, n_batches=n_batches, seed=seed))
                omitted_max = max(omitted_max, failed)
                if fluctuations:
                    h = 1e-4
                    gm, g0, gp = (step_map(params, M + x, Q, finite_d=finite_d, n_nodes=n_nodes,
                                           jensen=jensen)[0][0, 0]
                                  for x in (-h, 0.0, h))
                    s2 = float(step_variance(params, M, Q)[0, 0])
                    M = np.array([[np.clip(g0 + 0.5 * (gp - 2 * g0 + gm) / h ** 2 * var, -1.0, 1.0)]])
                    var = ((gp - gm) / (2 * h)) ** 2 * var + s2
                else:
                    M, Q = Mn, Qn
                step += 1
                if np.isinf(t_rec) and np.linalg.norm(M) >= params.eta:
                    t_rec = float(step)
            Ms[i], Qs[i], V[i] = M, Q, var
    elif method == "ode":
        iu = np.triu_indices(p, 1)

        def unpack(y):
            Mv = y[:p * k].reshape(p, k)
            Qv = np.eye(p)
            Qv[iu] = y[p * k:]
            Qv[iu[1], iu[0]] = y[p * k:]
            return Mv, Qv

        def rhs(t, y):
            Mv, Qv = unpack(y)
            Mn, Qn = step_map(params, Mv, Qv, finite_d=finite_d, n_nodes=n_nodes, jensen=jensen)
            return np.concatenate([(Mn - Mv).ravel(), (Qn - Qv)[iu]])

        def hit(t, y):
            return np.linalg.norm(y[:p * k]) - params.eta
        hit.terminal = False
        hit.direction = 1
        y0 = np.concatenate([M.ravel(), Q[iu]])
        sol = solve_ivp(rhs, (0.0, float(record[-1])), y0, method="LSODA", t_eval=record.astype(float),
                        rtol=rtol, atol=rtol * 1e-3, events=hit)
        if not sol.success:
            raise RuntimeError(f"ODE integration failed: {sol.message}")
        for i in range(sol.y.shape[1]):
            Ms[i], Qs[i] = unpack(sol.y[:, i])
        if len(sol.t_events[0]):
            t_rec = float(sol.t_events[0][0])
    else:
        raise ValueError(f"method must be 'recursion', 'exact', 'law' or 'ode'; got {method!r}")
    extra = {} if mc_se is None else {
        "M_mc_se": (("t",), mc_se, {"long_name": f"Monte Carlo standard error of M (method={method!r})"})}
    extra.update(law or {})
    return xr.Dataset(
        {
            **extra,
            "M": (("t", "j", "r"), Ms, {"long_name": "student-teacher overlaps <w_j, w*_r>"}),
            "Q": (("t", "j", "j2"), Qs, {"long_name": "student-student overlaps <w_j, w_l>"}),
            "overlap": (("t",), np.sqrt(np.sum(Ms ** 2, axis=(1, 2))), {"long_name": "||W W*^T||_F"}),
            "M_var": (("t",), V, {"long_name": "variance of M across runs (fluctuations=True or method='law'; "
                                                "else 0)"}),
            "t_recovery": ((), t_rec, {"units": "SGD steps"}),
            "recovered": ((), bool(np.isfinite(t_rec))),
        },
        coords={"t": ("t", record.astype(float), {"units": "SGD steps", "samples_per_step": params.n_b}),
                "j": np.arange(p), "j2": np.arange(p), "r": np.arange(k),
                **({} if law is None else {"m": ("m", x, {"long_name": "overlap grid of the law"})})},
        attrs={**params.attrs(), "kind": f"theory ({method}, {'finite d' if finite_d else 'd -> inf'}"
                                         f"{', fluctuations' if fluctuations else ''})",
               "method_used": method, "series_omitted_max": omitted_max,
               "tsdyn_version": __version__},
    )


def _series_failed(params, steps, step, m, term, series_failure, kw):
    """``dynamics(method="recursion")`` where the map's series fails at ``step`` (overlap norm ``m``, first
    omitted term ``term``): the same dynamics by ``method="exact"``, or a ValueError naming it."""
    where = (f"the step map's fluctuation series does not converge at step {step} (overlap {m:.3g}): its first "
             f"omitted term is {term:.3g} (> {SERIES_FAIL:g}) times m', so the map has no correct digit there")
    exact_ok = params.p == 1 and params.k == 1 and params.noise == 0
    if series_failure == "raise" or not exact_ok:
        fix = ("use dynamics(method='exact'), which averages the step's ratio itself" if exact_ok else
               "method='exact' needs p = k = 1 and no label noise, so no other theory applies here")
        raise ValueError(f"{where}; {fix}")
    ds = dynamics(params, steps, method="exact", **kw)
    ds.attrs.update(method_used="exact", method_asked="recursion", series_failure_step=step,
                    series_failure_term=term, series_failure_reason=where)
    return ds


def _exact_recursion(params, m, record, fluctuations, n_batches, seed, h=1e-3):
    """The mean overlap on the steps ``record`` by the exact one-step mean (``dynamics(method="exact")``):
    (mean, variance across runs, Monte Carlo standard error, first step with |m| >= eta)."""
    _check_exact_step(params, m, single=False)
    _validate.integer("n_batches", n_batches, low=2, doc="Monte Carlo batches per step")
    n = len(record)
    out_m, out_v, out_se = np.empty(n), np.zeros(n), np.empty(n)
    rng = np.random.default_rng(seed)
    step, var, err2, t_rec = 0, 0.0, 0.0, np.inf
    for i, target in enumerate(record):
        while step < target:
            lo, hi = max(m - h, -1.0), min(m + h, 1.0)
            mp, mp2 = _batch_step_samples(params, (lo, m, hi), n_batches, 40, rng, squares=True)
            gm, g0, gp = mp.mean(axis=1)
            g1 = (gp - gm) / (hi - lo)
            s2 = float(mp2[1].mean() - g0 * g0)  # Var m' = E_batch[E_X m'^2] - (E m')^2, the chi-square's part included
            if fluctuations:
                g2 = 2.0 * ((gp - g0) / (hi - m) - (g0 - gm) / (m - lo)) / (hi - lo)
                g0 = g0 + 0.5 * g2 * var
                var = g1 * g1 * var + s2
            err2 = g1 * g1 * err2 + float(mp[1].var(ddof=1)) / n_batches  # the batches' E_X m' are what is sampled
            m = float(np.clip(g0, -1.0, 1.0))
            step += 1
            if np.isinf(t_rec) and abs(m) >= params.eta:
                t_rec = float(step)
        out_m[i], out_v[i], out_se[i] = m, var, np.sqrt(err2)
    return out_m, out_v, out_se, t_rec


def recovery_time(params, *, m0=None, max_steps=10 ** 9, finite_d=True, fractional=False):
    """Weak-recovery time of the deterministic dynamics started at overlap m0 (default d^-1/2).

    Single-index, single-unit case (p = k = 1): the typical initial overlap of a
    random unit vector is d^-1/2, which this uses in place of the random start.
    Up to 20000 steps (or when the ODE gives fewer than 2000) the discrete map is
    iterated, since its steps need not be small; longer runs integrate the ODE.
    Returns inf if |m| never reaches eta within ``max_steps``; the iteration also
    stops, with inf, once |m| has fallen below m0 / 1000 (the noise has won).
    The iterated map's time is a whole number of steps, as SGD's; with ``fractional`` the crossing of
    eta is placed between the two steps around it by linear interpolation in ln|m| (a time that
    varies smoothly with d, for local exponents read off few-step times).
    """
    if params.p != 1 or params.k != 1:
        raise ValueError("recovery_time (theory) is for p = k = 1")
    m0 = params.d ** -0.5 if m0 is None else m0
    if max_steps > 20000:
        ds = dynamics(params, int(max_steps), M0=np.array([[m0]]), method="ode", n_points=2,
                      finite_d=finite_d)
        T = float(ds.t_recovery)
        if not T < 2000:
            return T
        max_steps = int(2 * T) + 10
    M, Q = np.array([[m0]]), np.eye(1)
    for step in range(1, int(max_steps) + 1):
        prev = abs(M[0, 0])
        M, Q = step_map(params, M, Q, finite_d=finite_d)
        if abs(M[0, 0]) >= params.eta:
            if fractional and abs(M[0, 0]) > prev > 0:
                return float(step - 1 + np.log(params.eta / prev) / np.log(abs(M[0, 0]) / prev))
            return float(step)
        if abs(M[0, 0]) < 1e-3 * abs(m0) or not np.isfinite(M[0, 0]):
            return np.inf
    return np.inf


def linear_rate(params, *, finite_d=True, eps=1e-6):
    """Growth factor per step of a small overlap, (m'/m) - 1 at m = eps (p = k = 1).

    For information exponent 2 this is gamma (2 c_2 c_2^sigma - gamma (d/n_b) E[F^2] / 2 + ...):
    learning needs it positive, which bounds gamma d / n_b (the noise boundary).
    """
    M, _ = step_map(params, np.array([[eps]]), np.eye(1), finite_d=finite_d)
    return float(M[0, 0] / eps - 1.0)


# --------------------------------------------------------------------------- exponents


def _check_ell_mu(ell, mu):
    # ell = 1 has no search phase (the drift at m ~ d^-1/2 is O(1)), and the noise and
    # locality arguments below assume ell >= 2.
    _validate.integer("ell", ell, low=2, doc="information exponent; the exponents need ell >= 2")
    _validate.real("mu", mu, low=0.0, doc="batch-size exponent")


def delta_noise(ell, mu):
    """Smallest learning-rate exponent at which the drift beats the noise at m ~ d^-1/2.

    The drift of m is gamma c m^(ell-1), the noise's pull back is gamma^2 (d/n_b) C m;
    at m = d^-1/2 the first wins iff gamma d / n_b <~ d^-(ell-2)/2, i.e.
    delta >= ell/2 - mu (chapter, "phase diagram").
    """
    _check_ell_mu(ell, mu)
    return ell / 2 - mu


def asymptotic_boundary(ell, mu, variant="projected"):
    """The lower edge in delta of the learning region as d -> infinity (Arnaboldi et al. 2024, batch-size /
    learning-rate phase diagram): the noise line delta = l/2 - mu (:func:`delta_noise`) and, for projected
    SGD, locality delta >= 0 as well (a step of O(1) does not stay local), so max(l/2 - mu, 0). For the
    correlation loss and spherical SGD the noise line alone, up to mu = l - 1, where giant steps take over
    (beyond it, -inf: every delta learns)."""
    _check_ell_mu(ell, mu)
    if variant == "projected":
        return max(ell / 2 - mu, 0.0)
    if variant in ("correlation", "spherical"):
        return ell / 2 - mu if mu < ell - 1 else -np.inf
    raise ValueError(f"variant must be 'projected', 'correlation' or 'spherical'; got {variant!r}")


def theta(ell, mu, variant="projected"):
    """Exponent of the weak-recovery time T ~ d^theta (up to log d) at the best learning rate.

    With gamma = gamma0 d^-delta the drift alone gives T ~ d^(delta + (ell - 2)/2)
    (ell >= 3; ell = 2 adds a log d). Projected SGD must keep delta >= 0 (a step
    of O(1) would not stay local), so theta = max(ell - 1 - mu, ell/2 - 1). The
    correlation loss and spherical SGD allow delta < 0 down to T = O(1):
    theta = max(ell - 1 - mu, 0).
    """
    _check_ell_mu(ell, mu)
    if variant == "projected":
        return max(ell - 1 - mu, ell / 2 - 1)
    if variant in ("correlation", "spherical"):
        return max(ell - 1 - mu, 0.0)
    raise ValueError(f"variant must be 'projected', 'correlation' or 'spherical'; got {variant!r}")


def best_delta(ell, mu, variant="projected"):
    """The learning-rate exponent delta that achieves :func:`theta`."""
    return theta(ell, mu, variant) - (ell - 2) / 2


REGIMES = ("power law", "plateau", "polylog", "one step")


def time_regime(ell, mu, variant="projected"):
    """The regime of the weak-recovery time at the best learning rate (Arnaboldi et al. 2024,
    time/batch-size phase diagram), as ``(theta, regime)`` with T ~ d^theta:

    - projected SGD: ``"power law"`` theta = l - 1 - mu for mu < l/2, then the ``"plateau"``
      theta = l/2 - 1 (delta = 0: a step of O(1) must stay local; larger batches are wasted);
    - correlation loss and spherical SGD: ``"power law"`` theta = l - 1 - mu for mu < l - 1;
      ``"polylog"`` for l - 1 <= mu < l (theta = 0 up to logarithms: at n_b ~ d^(l-1) a giant step
      maps m = a d^-1/2 to about c a^(l-1) d^-1/2, so reaching m = O(1) takes ~ln d steps for l = 2
      and ~ln ln d for l >= 3); ``"one step"`` for mu >= l (T = 1: a single giant step reaches
      m = O(1) once n_b >~ d^l).
    """
    th = theta(ell, mu, variant)
    if variant == "projected":
        return th, ("power law" if mu < ell / 2 else "plateau")
    if mu < ell - 1:
        return th, "power law"
    return th, ("polylog" if mu < ell else "one step")


def expansion_validity_mu(ell):
    """Batch exponent up to which the small-step expansion of the one-step map holds on the best
    learning rate of the correlation loss and spherical SGD, delta = l/2 - mu: there the normaliser's
    noise term is gamma^2 d / n_b = gamma0^2 / n0 d^(mu - l + 1), small iff mu < l - 1. Beyond it
    (giant steps) the drift-plus-noise expansion, and with it the continuous-time description, fails;
    projected SGD never gets there (delta >= 0 keeps gamma^2 d / n_b <= d^(1 - mu) for mu >= l / 2)."""
    _check_ell_mu(ell, 0.0)
    return float(ell - 1)


def single_sample_step_mean(params, m, *, n_zeta=200, n_chi=40):
    """Exact E[m'] after one step with a batch of ONE sample (n_b = 1; p = k = 1, no label noise),
    projected or spherical SGD, from the overlap m.

    With w = e1, w* = m e1 + s e2 (s = sqrt(1 - m^2)) and z = zeta1 e1 + zeta2 e2 + z_perp, the step is
    w + gamma F z (spherical: without its e1 part), so with a = 1 + gamma F zeta1 (spherical: a = 1),
    b = gamma F zeta2 and c^2 = gamma^2 F^2 X, X = |z_perp|^2 ~ chi^2_(d-2) independent of zeta,

        m' = (m a + s b) / sqrt(a^2 + b^2 + c^2),   F = F(lambda = zeta1, nu = m zeta1 + s zeta2),

    whose mean is a three-dimensional integral: Gauss-Hermite in zeta (n_zeta nodes per axis) and
    generalised Gauss-Laguerre in X / 2 ~ Gamma((d - 2)/2) (n_chi nodes). Unlike :func:`step_map` it
    averages the ratio itself, not numerator over the root of the mean normaliser, so it holds however
    large the normaliser's batch-to-batch spread is; it is the small-batch end that the map misses.
    :func:`batch_step_mean` is the same mean for any batch size, by Monte Carlo in the zeta.
    """
    from numpy.polynomial.hermite_e import hermegauss

    _check_exact_step(params, m, single=True)
    x, wx = hermegauss(n_zeta)
    wx = wx / np.sqrt(2 * np.pi)
    z1, z2 = np.meshgrid(x, x, indexing="ij")
    W = np.outer(wx, wx)
    F = _step_force(params, m, z1, z2)
    mp = _step_ratio(params, m, F * z1, F * z2, F * F, n_chi)
    return float(np.sum(W * mp))


def batch_step_mean(params, m, *, n_batches=20000, n_chi=40, seed=0):
    """Exact E[m'] after one step with a batch of n_b samples (p = k = 1, no label noise), projected or
    spherical SGD, from the overlap m: (mean, standard error).

    In the basis of :func:`single_sample_step_mean`, sample i of the batch has in-plane coordinates
    (zeta1_i, zeta2_i) and force F_i; the batch-mean gradient has components beta = mean F_i zeta1_i
    along w, alpha = mean F_i zeta2_i along the teacher's orthogonal part, and an orthogonal part
    that is exactly N(0, (sum F_i^2 / n_b^2) I_(d-2)) given the F_i (the z_perp are independent of
    the zeta), so that with a = 1 + gamma beta (spherical: 1), b = gamma alpha and
    c^2 = gamma^2 (sum F_i^2 / n_b^2) X, X ~ chi^2_(d-2),

        m' = (m a + s b) / sqrt(a^2 + b^2 + c^2).

    The mean over X is the generalised Gauss-Laguerre rule of :func:`single_sample_step_mean`; the mean
    over the 2 n_b Gaussian coordinates is taken by Monte Carlo over ``n_batches`` batches drawn from
    ``seed`` (the same numbers for every gamma and d: common random numbers, so a root in the learning
    rate is smooth). No approximation is made in n_b or d; the error is the Monte Carlo standard error
    returned, and the cost does not depend on d.
    """
    _check_exact_step(params, m, single=False)
    _validate.integer("n_batches", n_batches, low=2, doc="Monte Carlo batches")
    mp = _batch_step_samples(params, (m,), n_batches, n_chi, np.random.default_rng(seed))[0]
    return float(mp.mean()), float(mp.std(ddof=1) / np.sqrt(mp.size))


def _batch_sums(params, ms, n_batches, rng, per):
    """The batch sums of one step for ``n_batches`` independent batches, ``per`` batches at a time: yields
    (index into ``ms``, m, beta, alpha, f2), arrays over a chunk's batches (beta, alpha the batch-mean gradient
    along w and along the teacher's orthogonal part, f2 = sum F_i^2 / n_b^2); a chunk's Gaussian coordinates
    serve every start overlap in ``ms`` (common random numbers)."""
    nb = params.n_b
    for start in range(0, n_batches, per):
        n = min(per, n_batches - start)
        z1, z2 = rng.standard_normal((2, n, nb))
        for j, m in enumerate(ms):
            F = _step_force(params, m, z1, z2)
            yield j, m, (F * z1).mean(1), (F * z2).mean(1), (F * F).sum(1) / nb ** 2


def _batch_step_samples(params, ms, n_batches, n_chi, rng, squares=False):
    """E_X[m'] of ``n_batches`` independent batches (:func:`batch_step_mean`), shape (len(ms), n_batches):
    each batch's Gaussian coordinates are drawn once and used for every start overlap in ``ms``. With
    ``squares``, also E_X[m'^2] (same shape), so that the one-step variance keeps the chi-square's part."""
    per = max(1, 2 ** 21 // params.n_b)  # batches per chunk: about 2M samples in memory
    rows, rows2 = [[] for _ in ms], [[] for _ in ms]  # per start overlap, one array per chunk
    for j, m, beta, alpha, f2 in _batch_sums(params, ms, n_batches, rng, per):
        res = _step_ratio(params, m, beta, alpha, f2, n_chi, squares=squares)
        rows[j].append(res[0] if squares else res)
        if squares:
            rows2[j].append(res[1])
    mp = np.array([np.concatenate(r) for r in rows])
    return (mp, np.array([np.concatenate(r) for r in rows2])) if squares else mp


def _check_exact_step(params, m, single):
    if not ((params.n_b == 1 or not single) and params.p == 1 and params.k == 1 and params.noise == 0):
        need = "n_b = 1, " if single else ""
        raise ValueError(f"the exact one-step mean needs {need}p = k = 1 and no label noise; got n_b = "
                         f"{params.n_b}, p = {params.p}, k = {params.k}, noise = {params.noise}")
    if params.algorithm not in ("projected", "spherical"):
        raise ValueError(f"algorithm must be 'projected' or 'spherical'; got {params.algorithm!r}")
    _validate.real("m", m, low=-1.0, high=1.0, doc="overlap")


def _step_force(params, m, z1, z2):
    """F(lambda = zeta1, nu = m zeta1 + s zeta2): the gradient's scalar factor (target minus the
    student's output for the square loss, times the activation's derivative), elementwise."""
    s = np.sqrt(1.0 - m * m)
    lam, nu = z1.reshape(-1, 1), (m * z1 + s * z2).reshape(-1, 1)
    act, tgt = params.activation_code, params.target_code
    y = functions.numpy_target(tgt, nu)
    if params.loss == "square":
        y = y - functions.numpy_value(act, lam)[:, 0]
    return (y * functions.numpy_derivative(act, lam)[:, 0]).reshape(z1.shape)


@functools.lru_cache(maxsize=64)
def _gamma_rule(n, shape):
    """Nodes y and weights w (summing to 1) of the n-point Gauss rule for the Gamma(shape, 1) law:
    the generalised Gauss-Laguerre rule of parameter shape - 1, by Golub-Welsch (eigenvalues and
    first eigenvector components of its Jacobi matrix), so that Gamma(shape) is never formed: it
    overflows from shape ~ 171 (d ~ 344 here), and the weights of roots_genlaguerre with it."""
    from scipy.linalg import eigh_tridiagonal
    a, i = shape - 1.0, np.arange(1, n)
    y, v = eigh_tridiagonal(2.0 * np.arange(n) + a + 1.0, np.sqrt(i * (i + a)))
    return y, v[0] ** 2


def _step_ratio_nodes(params, m, beta, alpha, f2, n_chi):
    """(m a + s b) / sqrt(a^2 + b^2 + gamma^2 f2 X) at the n_chi nodes of the Gauss rule for X ~ chi^2_(d-2)
    (generalised Gauss-Laguerre in X / 2 ~ Gamma((d - 2)/2)), elementwise in beta (the gradient along w),
    alpha (along the teacher's orthogonal part) and f2 (the variance factor of the orthogonal part): the
    values, shape (..., n_chi), and the rule's weights (n_chi,), summing to 1."""
    g, s = params.gamma, np.sqrt(1.0 - m * m)
    yk, wk = _gamma_rule(n_chi, (params.d - 2) / 2.0)  # E[h(X)] = sum wk h(2 yk)
    a = np.ones_like(beta) if params.algorithm == "spherical" else 1.0 + g * beta
    b = g * alpha
    num, den2 = m * a + s * b, a * a + b * b
    return num[..., None] / np.sqrt(den2[..., None] + (g * g * f2)[..., None] * (2.0 * yk)), wk


def _step_ratio(params, m, beta, alpha, f2, n_chi, squares=False):
    """E_X of :func:`_step_ratio_nodes`' ratio, elementwise; with ``squares``, also E_X of the ratio squared."""
    ratio, wk = _step_ratio_nodes(params, m, beta, alpha, f2, n_chi)
    mean = np.sum(ratio * wk, axis=-1)
    return (mean, np.sum(ratio * ratio * wk, axis=-1)) if squares else mean


def _deposit(values, weights, n):
    """Weights of points in [-1, 1] shared between the two nearest of n equally spaced grid points in
    proportion to closeness (linear, "cloud in cell"): the mean of the deposited points is kept exactly."""
    if not np.all(np.isfinite(values)):
        raise ValueError("an overlap after one step is not finite (the step diverged); the law cannot be carried")
    pos = np.clip((values + 1.0) * (0.5 * (n - 1)), 0.0, n - 1.0)
    j = np.minimum(pos.astype(np.int64), n - 2)
    frac = pos - j
    return (np.bincount(j, weights * (1.0 - frac), minlength=n)
            + np.bincount(j + 1, weights * frac, minlength=n))


def _law_kernel_groups(params, x, per_group, n_groups, n_chi, rng, sources=None, anchors=None):
    """One-step transition matrices of the overlap on the grid ``x`` (rows: from, columns: to), one per
    group of ``per_group`` batches, yielded in turn (dense, sources x grid). Row i is the law of m' from
    m = sources[i] (default ``x``), each batch's m' at the chi-square rule's nodes deposited with the rule's
    weights (:func:`_deposit`). A batch's Gaussian coordinates serve every row (common random numbers:
    rows vary smoothly with m).

    ``anchors`` (increasing overlaps spanning ``sources``): the step is computed only there, and each
    batch's m' at a source between two anchors is the linear interpolation of that batch's m' at the two
    (per chi-square node). The kernel keeps each batch's whole step, so its shape, skewness and tails
    included, and the cost of the step, n_b per batch, is paid at the anchors only."""
    n = x.size
    sources = x if sources is None else sources
    per = max(1, min(2 ** 21 // params.n_b, 2 ** 22 // n_chi))  # chunk: about 2M samples, 4M ratio values
    if anchors is not None:
        anchors = np.asarray(anchors, float)
        if anchors.ndim != 1 or anchors.size < 2 or np.any(np.diff(anchors) <= 0) or \
                sources.min() < anchors[0] or sources.max() > anchors[-1]:
            raise ValueError("anchors must be increasing overlaps (at least two) spanning the sources")
        j = np.clip(np.searchsorted(anchors, sources, side="right") - 1, 0, anchors.size - 2)
        w = ((sources - anchors[j]) / (anchors[j + 1] - anchors[j]))[:, None, None]
    for _ in range(n_groups):
        K = np.zeros((sources.size, n))
        if anchors is None:
            for i, m, beta, alpha, f2 in _batch_sums(params, sources, per_group, rng, per):
                v, wk = _step_ratio_nodes(params, m, beta, alpha, f2, n_chi)
                K[i] += _deposit(v.ravel(), np.broadcast_to(wk, v.shape).ravel(), n)
        else:
            at = []
            for k, m, beta, alpha, f2 in _batch_sums(params, anchors, per_group, rng, per):
                v, wk = _step_ratio_nodes(params, m, beta, alpha, f2, n_chi)
                at.append(v)
                if k < anchors.size - 1:
                    continue
                at = np.array(at)  # (anchors, chunk batches, n_chi)
                for i in range(sources.size):
                    vi = (1.0 - w[i]) * at[j[i]] + w[i] * at[j[i] + 1]
                    K[i] += _deposit(vi.ravel(), np.broadcast_to(wk, vi.shape).ravel(), n)
                at = []
        yield K / per_group


def _law_kernels(params, x, per_group, n_groups, n_chi, rng, sources=None, anchors=None):
    """The kernels of :func:`_law_kernel_groups` stacked: the average kernel first, then one per group;
    shape (n_groups + 1, sources, grid)."""
    groups = np.array(list(_law_kernel_groups(params, x, per_group, n_groups, n_chi, rng, sources, anchors)))
    return np.concatenate([groups.mean(axis=0)[None], groups])


LAW_MAX_GRID = 4001  # the kernels hold (groups + 1) grid^2 floats: 2 GB at this size with 16 groups
# first_passage builds one group's kernel at a time (live points x grid floats: 256 MB at this size) and
# keeps them sparse
PASSAGE_MAX_GRID = 8001


def _law_recursion(params, m, record, n_grid, n_batches, seed, n_groups=16, n_chi=24):
    """The law of the overlap on the steps ``record`` (``dynamics(method="law")``): (mean, variance,
    Monte Carlo standard error of the mean, first step at which at least half of the law has |m| >= eta,
    the grid, the law on the grid per record, and the same carried by each group's kernel, shape
    (n_groups, records, n_grid)).

    For p = k = 1 the overlap after a step depends on the past only through the overlap before it (the
    batch is fresh and the law of the inputs is invariant under rotations that fix w*), so m_t is a Markov
    chain on [-1, 1]. Its one-step kernel is that of :func:`batch_step_mean`, kept whole instead of
    averaged: sampled from each of ``n_grid`` equally spaced overlaps, in ``n_groups`` independent groups of
    n_batches // n_groups batches (the remainder is not drawn). The law is carried by the average kernel;
    the spread over the groups' own kernels of any statistic of the law, divided by sqrt(n_groups), is its
    Monte Carlo error (first order in the kernel's noise; returned for the mean). Nothing is expanded,
    neither the step nor the spread of the runs: this holds where the runs split between modes or are
    skewed, which a closure in the first two moments does not.

    Discretisation: the chain on the grid is the true chain with the kernel between two grid points replaced
    by the linear interpolation of their rows. Each deposit keeps the mean exactly and adds at most h^2 / 4
    (h^2 / 6 on average) to the variance of a step, h the grid spacing, so the grid must satisfy
    h^2 << 6 s^2 with s^2 the one-step variance where the law sits (at d = 128, n_b = 512, m = 0.95,
    s^2 = 4.6e-5: 801 points add about 1% to the spread); through the map's curvature g'' the mean moves
    by at most |g''| h^2 / 8 per step."""
    _check_exact_step(params, m, single=False)
    _validate.integer("n_batches", n_batches, low=2 * n_groups, doc="Monte Carlo batches per grid point")
    _validate.integer("grid", n_grid, low=3, doc="grid points on [-1, 1]")
    if n_grid > LAW_MAX_GRID:
        raise ValueError(f"grid (grid points on [-1, 1]) must be <= {LAW_MAX_GRID} (memory); got {n_grid}")
    x = np.linspace(-1.0, 1.0, n_grid)
    kernels = _law_kernels(params, x, n_batches // n_groups, n_groups, n_chi, np.random.default_rng(seed))
    laws = np.tile(_deposit(np.array([m]), np.ones(1), n_grid), (n_groups + 1, 1))
    n = len(record)
    out_m, out_v, out_se, out_p = np.empty(n), np.empty(n), np.empty(n), np.empty((n_groups + 1, n, n_grid))
    step, t_rec = 0, np.inf
    for i, target in enumerate(record):
        while step < target:
            laws = np.einsum("gi,gij->gj", laws, kernels)
            step += 1
            if np.isinf(t_rec) and laws[0][np.abs(x) >= params.eta].sum() >= 0.5:
                t_rec = float(step)
        means = laws @ x
        out_m[i], out_v[i] = means[0], laws[0] @ x ** 2 - means[0] ** 2
        out_se[i] = means[1:].std(ddof=1) / np.sqrt(n_groups)
        out_p[:, i] = laws
    return out_m, out_v, out_se, t_rec, x, out_p[0], out_p[1:]


def first_passage(params, steps, *, m0=None, grid=801, n_batches=20000, seed=0, n_groups=16, n_chi=24,
                  anchors=None):
    """Law of the first-passage time T = min{t : |m_t| >= eta} of one-pass SGD (p = k = 1, no label
    noise), from the overlap m0 (default ``params.m0``), for ``steps`` steps: the chain of
    ``dynamics(method="law")`` (:func:`_law_recursion`) made absorbing at |m| = eta.

    The weak-recovery time of Arnaboldi et al. (2024) ("High dimensional limit") is this first passage:
    a run that has reached eta counts as recovered even if it falls back. The law on the grid is carried
    only on the live points |x| < eta, with the kernel K of :func:`_law_kernels` restricted to them; the
    mass a step sends to grid points with |x| >= eta is absorbed, so

        P(T <= t) = 1 - sum_{|x| < eta} p_t(x),   p_{t+1} = p_t K_live.

    The boundary is exact up to the linear deposit: an m' between the last live grid point and eta is
    shared between that point and the first absorbed one, so the level is effectively blurred over one
    grid spacing h = 2 / (grid - 1) below eta (h = 0.0025 at 801 points, far below the one-step spread
    of m at the chapter's points; the grid must also satisfy _law_recursion's condition h^2 << 6 s^2).

    Returns
    -------
    xarray.Dataset
        ``passed`` (t): P(T <= t) on t = 0..steps (SGD steps); ``passed_se`` (t): its Monte Carlo error
        (spread over the ``n_groups`` groups' kernels / sqrt(n_groups)); ``passed_groups`` (group, t);
        ``t_median`` (): the median first-passage time, the crossing of P(T <= t) = 1/2 placed between
        the two steps around it by linear interpolation (inf if not within ``steps``), with
        ``t_median_se`` (spread of the groups' medians / sqrt(n_groups); nan if a group does not cross) and
        the groups' medians ``t_median_groups`` (group).

    ``anchors`` (an integer, default None: every live grid point): compute the step at that many equally
    spaced overlaps on [-eta, eta] and interpolate each batch's m' linearly in between
    (:func:`_law_kernels`); the kernel keeps each batch's whole step (its shape and tails, which decide a
    passage by fluctuations), and the cost of the steps falls from (live grid points) to ``anchors`` times
    n_batches n_b samples.

    These errors are first order in the kernel's noise, and the drift of a step is a small part of its
    spread when gamma is small, so a group's kernel can be far off in its drift: the errors hold only where
    the groups' own statistics scatter around the whole kernel's (their mean within their error of it). At
    d = 128, He2, correlation loss, n_b = 1, gamma = 0.0039 they do with 8000 batches per grid point (group
    medians' mean 367 against 371, error 18) and do not with 1600 (369 against 449): check it.
    """
    if not isinstance(params, Params):
        raise ValueError(f"params must be a largebatch.Params; got {type(params).__name__}")
    _validate.integer("steps", steps, low=1, doc="number of SGD steps")
    m0 = params.m0 if m0 is None else m0
    if m0 is None:
        raise ValueError("give m0 (or Params.m0): the first passage starts from a given overlap")
    _check_exact_step(params, m0, single=False)
    _validate.integer("n_groups", n_groups, low=2, doc="independent groups of batches (Monte Carlo error)")
    _validate.integer("n_batches", n_batches, low=2 * n_groups, doc="Monte Carlo batches per grid point")
    _validate.integer("grid", grid, low=3, doc="grid points on [-1, 1]")
    if grid > PASSAGE_MAX_GRID:
        raise ValueError(f"grid (grid points on [-1, 1]) must be <= {PASSAGE_MAX_GRID} (memory); got {grid}")
    x = np.linspace(-1.0, 1.0, grid)
    live = np.abs(x) < params.eta
    if abs(m0) >= params.eta:
        raise ValueError(f"m0 (start overlap) must satisfy |m0| < eta = {params.eta}; got {m0}")
    if anchors is not None:
        _validate.integer("anchors", anchors, low=3, doc="overlaps on [-eta, eta] at which the step is computed")
        anchors = np.linspace(-params.eta, params.eta, anchors)
    from scipy import sparse
    # each group's kernel restricted to the live points, kept sparse (a row spans a few step widths)
    groups = [sparse.csr_matrix(K[:, live]) for K in
              _law_kernel_groups(params, x, n_batches // n_groups, n_groups, n_chi, np.random.default_rng(seed),
                                 sources=x[live], anchors=anchors)]
    kernels = [sum(groups) / n_groups, *groups]
    start = _deposit(np.array([float(m0)]), np.ones(1), grid)[live]
    alive = np.empty((n_groups + 1, steps + 1))
    for g, K in enumerate(kernels):
        law, KT = start, K.T.tocsr()
        alive[g, 0] = law.sum()
        for t in range(1, steps + 1):
            law = KT @ law
            alive[g, t] = law.sum()
    passed = 1.0 - alive
    medians = np.array([_crossing(row) for row in passed])
    G = np.sqrt(n_groups)
    t_axis = np.arange(steps + 1, dtype=float)
    return xr.Dataset(
        {"passed": (("t",), passed[0], {"long_name": "P(T <= t): probability that a run has passed |m| >= eta"}),
         "passed_se": (("t",), passed[1:].std(axis=0, ddof=1) / G, {"long_name": "Monte Carlo error of passed"}),
         "passed_groups": (("group", "t"), passed[1:], {"long_name": "passed from each group's kernel"}),
         "t_median": ((), medians[0], {"units": "SGD steps", "long_name": "median first-passage time"}),
         "t_median_se": ((), float(medians[1:].std(ddof=1) / G) if np.all(np.isfinite(medians[1:])) else np.nan,
                         {"units": "SGD steps"}),
         "t_median_groups": (("group",), medians[1:], {"units": "SGD steps",
                                                       "long_name": "median first passage of each group's kernel"})},
        coords={"t": ("t", t_axis, {"units": "SGD steps", "samples_per_step": params.n_b}),
                "group": np.arange(n_groups)},
        attrs={**params.attrs(), "kind": "theory (law absorbed at eta: first passage)", "m0": float(m0),
               "grid": grid, "n_batches": n_batches, "seed": seed, "tsdyn_version": __version__},
    )


def _crossing(passed):
    """The time at which an increasing P(T <= t) on t = 0, 1, ... first reaches 1/2, interpolated linearly
    between the two steps around it; inf if it does not within the steps given."""
    above = np.nonzero(passed >= 0.5)[0]
    if not above.size:
        return np.inf
    t = int(above[0])
    if t == 0:
        return 0.0
    lo, hi = passed[t - 1], passed[t]
    return float(t - 1 + (0.5 - lo) / (hi - lo))


# --------------------------------------------------------------------------- the linear scaling rule (chapter 6)
#
# At a fixed temperature T = gamma / n_b, one step moves a small overlap by
# gamma (A - m B) - (gamma T / 2) m tr Cov(F z) + O(gamma^2)   (eqs. eq-largebatch-map, -small-m):
# on the clock tau = gamma t the drift and the noise depend on T only, and the samples
# n_b t = tau / T to reach eta are the same at every batch (the rule). What is left is O(gamma) =
# O(T n_b): the discreteness of a step, and for projected SGD its radial part 2 gamma B (B = -ell at
# m = 0, square loss), which is O(1) once gamma is. The functions below measure that remainder on
# the deterministic dynamics (:func:`recovery_time`), never calling the simulation.


def rule_samples(params, *, max_steps=10 ** 9, whole_steps=True):
    """Samples n_b T to weak recovery of the deterministic dynamics from ``params.m0`` (d^-1/2 if
    None), with the crossing of eta placed between steps (:func:`recovery_time`, ``fractional``); inf if
    never. With ``whole_steps`` (default) half a step is added, n_b (T + 1/2): SGD stops at the first
    whole step past eta and pays for that step's whole batch, and over runs whose crossings spread over
    many steps the part of the last step left over is uniform on average (the count a run reports)."""
    T = recovery_time(params, m0=params.m0, max_steps=max_steps, fractional=True)
    return float(params.n_b * (T + (0.5 if whole_steps else 0.0)))


def rule_law_samples(params, *, grid=801, n_batches=8000, seed=0, steps=None):
    """Median samples to weak recovery from the *law* of the overlap across runs (:func:`first_passage`:
    the exact one-step kernel, absorbed at eta), n_b (t_median + 1/2) with the half step of
    :func:`rule_samples`, and its Monte Carlo error. Where one step moves the overlap by a random amount
    comparable to itself (gamma of order one, n_b ~ d: the step's spread at m ~ d^-1/2 is
    gamma^2 (d / n_b) Var F of order one whatever d) the median run is not the deterministic dynamics'
    run, and this is the theory to compare with. The kernel costs grid x n_batches x n_b force
    evaluations; at small gamma its drift is lost in the Monte Carlo noise (:func:`first_passage`: check
    the groups), so use it at large batches. ``steps`` defaults to four times the deterministic time.

    Returns (samples, samples_se)."""
    if steps is None:
        T = recovery_time(params, m0=params.m0, fractional=True)
        steps = int(4 * T) + 20 if np.isfinite(T) else 10 ** 4
    fp = first_passage(params, int(steps), grid=grid, n_batches=n_batches, seed=seed)
    return float(params.n_b * (float(fp.t_median) + 0.5)), float(params.n_b * float(fp.t_median_se))


def rule_deviation(*, d, ell, temperature0, n_b, reference=1, variant="projected", eta=0.5):
    """The theory's deviation from the linear scaling rule at batch ``n_b``:
    S(n_b) / S(reference) - 1, S = :func:`rule_samples` at the fixed temperature gamma / n_b =
    temperature0 d^(-ell/2) (:func:`tsdyn.largebatch.params.fixed_temperature_params`); inf where
    the dynamics at n_b never recover."""
    from .params import fixed_temperature_params
    kw = dict(d=d, ell=ell, temperature0=temperature0, variant=variant, eta=eta)
    return rule_samples(fixed_temperature_params(n_b=n_b, **kw)) / rule_samples(
        fixed_temperature_params(n_b=reference, **kw)) - 1.0


def rule_limit_samples(*, d, ell, temperature0, variant="projected", eta=0.5):
    """The rule's own value: samples to weak recovery as gamma -> 0 at fixed gamma / n_b (the
    continuous-time, or SDE, limit), extrapolated linearly in gamma from n_b = 1 and 2 (error
    O(gamma^2) = O((temperature0 d^(-ell/2))^2))."""
    from .params import fixed_temperature_params
    kw = dict(d=d, ell=ell, temperature0=temperature0, variant=variant, eta=eta)
    s1, s2 = (rule_samples(fixed_temperature_params(n_b=n, **kw)) for n in (1, 2))
    return 2.0 * s1 - s2


def rule_critical_batch(*, d, ell, temperature0, tolerance=0.1, reference=1, variant="projected", eta=0.5,
                        n_max=2 ** 36):
    """The theory's critical batch: the smallest batch at which |:func:`rule_deviation`| reaches
    ``tolerance``, found by doubling from ``reference`` and then bisecting on whole batches; the
    last step is interpolated linearly in log n_b between the two neighbouring whole batches (inf
    deviation: the upper one). nan if it does not reach it by ``n_max``."""
    _validate.real("tolerance", tolerance, low=0.0, low_open=True, doc="relative deviation")
    from .params import fixed_temperature_params
    kw = dict(d=d, ell=ell, temperature0=temperature0, variant=variant, eta=eta)
    s_ref = rule_samples(fixed_temperature_params(n_b=reference, **kw))
    dev = functools.lru_cache(maxsize=None)(
        lambda n: abs(rule_samples(fixed_temperature_params(n_b=n, **kw)) / s_ref - 1.0))
    lo = hi = int(reference)
    while dev(hi) < tolerance:
        lo, hi = hi, 2 * hi
        if hi > n_max:
            return float("nan")
    if hi == lo:
        return float(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if dev(mid) < tolerance else (lo, mid)
    if not np.isfinite(dev(hi)):
        return float(hi)
    frac = (tolerance - dev(lo)) / (dev(hi) - dev(lo))
    return float(np.exp(np.log(lo) + frac * (np.log(hi) - np.log(lo))))


def rule_linear_stage(*, ell, temperature0, variant="projected"):
    """The d -> infinity step of a small overlap at fixed temperature (ell = 2 only, where the
    search is a linear growth): with A1 = dE[F nu]/dm, B0 = E[F lambda] and F2 = E[F^2] at m = 0 and
    noise gamma^2 (d / n_b) F2 = gamma temperature0 F2, one step multiplies m by

        rho(gamma) = (1 + gamma A1) / sqrt((1 + gamma B0)^2 + gamma temperature0 F2),

    against exp(gamma r), r = A1 - B0 - temperature0 F2 / 2, in the rule's limit. Samples to
    recovery scale as gamma / ln rho(gamma) (the search from d^-1/2 dominates as d grows), so the
    rule's deviation is r gamma / ln rho(gamma) - 1. Returns a dict with A1, B0, F2, r and the
    function ``deviation(gamma)`` (inf where rho <= 1: the noise wins)."""
    from .params import fixed_temperature_params
    if ell != 2:
        raise ValueError(f"ell (information exponent) must be 2 for the linear stage; got {ell}")
    p = fixed_temperature_params(d=64, ell=ell, temperature0=temperature0, n_b=1, variant=variant)
    h = 1e-4
    m_plus, m_zero = (moments(p, np.array([[m]]), np.eye(1)) for m in (h, 0.0))
    A1 = float((m_plus["F_nu"][0, 0] - m_zero["F_nu"][0, 0]) / h)
    B0, F2 = float(m_zero["F_lam"][0, 0]), float(m_zero["FF"][0, 0])
    r = A1 - B0 - temperature0 * F2 / 2

    def deviation(gamma):
        rho = (1 + gamma * A1) / np.sqrt((1 + gamma * B0) ** 2 + gamma * temperature0 * F2)
        return r * gamma / np.log(rho) - 1.0 if rho > 1 else np.inf

    return {"A1": A1, "B0": B0, "F2": F2, "r": r, "deviation": deviation}


def rule_linear_stage_gamma(*, ell, temperature0, tolerance=0.1, variant="projected"):
    """gamma_eps: the learning rate at which the linear-stage deviation
    (:func:`rule_linear_stage`) first reaches ``tolerance`` in absolute value (scan, then bisection);
    the critical batch is then n_b* = gamma_eps / T = gamma_eps d^(ell/2) / temperature0. nan if
    not below gamma = 100."""
    dev = rule_linear_stage(ell=ell, temperature0=temperature0, variant=variant)["deviation"]
    grid = np.geomspace(1e-4, 100, 400)
    above = [abs(dev(g)) >= tolerance for g in grid]
    if not any(above):
        return float("nan")
    i = above.index(True)
    lo, hi = grid[max(i - 1, 0)], grid[i]
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if abs(dev(mid)) < tolerance else (lo, mid)
    return float(np.sqrt(lo * hi))
