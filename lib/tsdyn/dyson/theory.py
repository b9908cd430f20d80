"""Theory of the tanh teacher-student phase diagram (Park, Lucini & Aarts 2025).

Independent of the simulation: these functions take the parameters (or measured
gradient moments, for the level-spacing equation) and never look at a trained network.

- Marchenko-Pastur law of X = W W^T at initialisation (eq. 4.2) and its edges;
- the feature distribution p(phi) of eq. (2.21) and its single/double-well transition;
- the variance sigma_z^2 of the pre-activations at initialisation (eq. 2.19) for the
  paper's architecture, and the jamming boundary sigma_z^2 = 1/2 in 1/sigma_w;
- the one-particle level-spacing equation (4.8): its coefficients (B.7, B.9), an
  Euler-Maruyama integrator and its exact stationary law;
- the Dyson equation (4.3) of all levels: as written (``dyson_sde``) and with the Ito drift
  and Wishart-consistent coefficients, integrated in the singular values
  (``dyson_sde_wishart``, levels >= 0 by construction);
- the convergence criterion (4.15);
- the Wigner surmise (beta = 1) for level-spacing distributions.
"""

import math

import numpy as np
import xarray as xr
from scipy import optimize, special

from .. import __version__, _seeds, _validate
from . import _kernels


# ------------------------------------------------------------------ Marchenko-Pastur

def _check_mp(sigma_w, r):
    _validate.real("sigma_w", sigma_w, low=0.0, low_open=True, doc="initial weight scale")
    _validate.real("r", r, low=0.0, low_open=True, doc="aspect ratio n2/n1")


def marchenko_pastur_edges(sigma_w, r):
    """Edges (x_-, x_+) = sigma_w^2 (1 -/+ sqrt r)^2 of the Marchenko-Pastur law (eq. 4.2).

    Derivation: W = (sigma_w / sqrt n1) G with G (n2, n1) standard normal, so
    X = W W^T = sigma_w^2 (G G^T / n1). G G^T / n1 is a sample covariance with
    ratio r = n2 / n1, whose eigenvalues fill [(1 - sqrt r)^2, (1 + sqrt r)^2] as
    n1, n2 -> infinity at fixed r; the factor sigma_w^2 rescales both edges.
    """
    _check_mp(sigma_w, r)
    s2 = float(sigma_w) ** 2
    return s2 * (1.0 - math.sqrt(r)) ** 2, s2 * (1.0 + math.sqrt(r)) ** 2


def marchenko_pastur(x, sigma_w, r):
    """Marchenko-Pastur density of the eigenvalues of X = W W^T (Park et al. eq. 4.2).

    W has shape (n2, n1) and entries N(0, sigma_w^2 / n1), r = n2 / n1:

        P(x) = sqrt((x_+ - x)(x - x_-)) / (2 pi sigma_w^2 r x),   x_- < x < x_+,

    and 0 outside. For r <= 1 it integrates to 1; for r > 1 to 1/r, the remaining
    1 - 1/r being the zero eigenvalues of the rank-n1 matrix X (an atom at 0, not
    included). Mean sigma_w^2 and second moment sigma_w^4 (1 + r) (per eigenvalue,
    n -> infinity; at finite n1 the second moment is sigma_w^4 (1 + r + 1/n1)).
    """
    lo, hi = marchenko_pastur_edges(sigma_w, r)
    x = np.asarray(x, float)
    inside = (x > lo) & (x < hi)
    xs = np.where(inside, x, 0.5 * (lo + hi))
    dens = np.sqrt((hi - xs) * (xs - lo)) / (2.0 * np.pi * sigma_w ** 2 * r * xs)
    return np.where(inside, dens, 0.0)


def marchenko_pastur_cdf(x, sigma_w, r, n_quad=400):
    """Integrated density int_{x_-}^x P (for unfolding spectra); Gauss-Legendre in the
    angle x = c - d cos(theta), which removes the square-root edges (error < 1e-10)."""
    lo, hi = marchenko_pastur_edges(sigma_w, r)
    c, d = 0.5 * (hi + lo), 0.5 * (hi - lo)
    x = np.clip(np.asarray(x, float), lo, hi)
    theta_x = np.arccos(np.clip((c - x) / d, -1.0, 1.0))
    nodes, weights = np.polynomial.legendre.leggauss(n_quad)
    # integral over theta in [0, theta_x] of P(x(theta)) dx/dtheta
    th = 0.5 * theta_x[..., None] * (nodes + 1.0)
    xx = c - d * np.cos(th)
    integrand = (d * np.sin(th)) ** 2 / (2.0 * np.pi * sigma_w ** 2 * r * xx)
    return 0.5 * theta_x * np.sum(weights * integrand, axis=-1)


def initial_spacing_bound(sigma_w, n1, n2):
    """Upper bound (x_+ - x_-) / (n2 - 1) = 4 sigma_w^2 sqrt(r) / (n2 - 1) on S(0) (eq. 4.14)."""
    lo, hi = marchenko_pastur_edges(sigma_w, n2 / n1)
    return (hi - lo) / (n2 - 1)


# ------------------------------------------------------------------ features as soft spins

def feature_density(phi, sigma_z2):
    """p(phi) of phi = tanh(z), z ~ N(0, sigma_z2) (Park et al. eq. 2.21), normalised:

        p(phi) = exp(-artanh(phi)^2 / (2 sigma_z2)) / (sqrt(2 pi sigma_z2) (1 - phi^2)).
    """
    _validate.real("sigma_z2", sigma_z2, low=0.0, low_open=True, doc="pre-activation variance")
    phi = np.asarray(phi, float)
    inside = np.abs(phi) < 1.0
    ph = np.where(inside, phi, 0.0)
    dens = np.exp(-np.arctanh(ph) ** 2 / (2 * sigma_z2)) / (np.sqrt(2 * np.pi * sigma_z2) * (1 - ph ** 2))
    return np.where(inside, dens, 0.0)


def feature_potential(phi, sigma_z2):
    """V(phi) = artanh(phi)^2 / (2 sigma_z2) + ln(1 - phi^2), p ~ exp(-V) (eq. 2.21)."""
    _validate.real("sigma_z2", sigma_z2, low=0.0, low_open=True, doc="pre-activation variance")
    phi = np.asarray(phi, float)
    return np.arctanh(phi) ** 2 / (2 * sigma_z2) + np.log1p(-phi ** 2)


def feature_peaks(sigma_z2):
    """Location phi* >= 0 of the maximum of p(phi): 0 for sigma_z2 <= 1/2, else the
    positive root of phi = tanh(2 sigma_z2 phi) (V'(phi) = 0, below eq. 2.22)."""
    _validate.real("sigma_z2", sigma_z2, low=0.0, low_open=True, doc="pre-activation variance")
    if sigma_z2 <= 0.5:
        return 0.0
    return optimize.brentq(lambda p: p - np.tanh(2 * sigma_z2 * p), 1e-12, 1.0, xtol=1e-14)


SIGMA_C2 = 0.5  # critical sigma_z^2 of the single-/double-well transition (eq. 2.22)


def _chi2_nodes(k, n=60):
    """Nodes and weights for E[f(s)], s ~ chi^2_k (generalised Gauss-Laguerre in s/2)."""
    u, w = special.roots_genlaguerre(n, k / 2 - 1)
    return 2 * u, w / special.gamma(k / 2)


def _tanh2_gauss(var, n=80):
    """E[tanh(z)^2], z ~ N(0, var) (Gauss-Hermite; var may be an array)."""
    g, w = special.roots_hermitenorm(n)
    w = w / w.sum()
    var = np.asarray(var, float)
    return np.sum(w * np.tanh(np.sqrt(var)[..., None] * g) ** 2, axis=-1)


def first_layer_q(n0=3):
    """q = E[tanh(z1)^2] for a teacher unit z1 = w.x, w ~ N(0, I/n0), x ~ N(0, I_{n0}).

    Given x, z1 ~ N(0, |x|^2 / n0), and |x|^2 ~ chi^2_{n0}. Then the second-layer
    pre-activations of the student at initialisation have variance
    E[z^2] = sigma_w^2 E[a_j^2] = q sigma_w^2 (eqs. 2.13, 2.19).
    """
    _validate.integer("n0", n0, low=1, doc="input dimension")
    s, w = _chi2_nodes(n0)
    return float(np.sum(w * _tanh2_gauss(s / n0)))


def sigma_z2(sigma_w, n0=3):
    """sigma_z^2 = q sigma_w^2 at initialisation (eq. 2.19 with the bound made exact)."""
    _validate.real("sigma_w", sigma_w, low=0.0, low_open=True, doc="initial weight scale")
    return first_layer_q(n0) * float(sigma_w) ** 2


def feature_density_mixture(phi, sigma_w, n0=3):
    """p(phi) beyond the Gaussian assumption (2.19), for a wide first hidden layer.

    Given the input x, z = sum_j W_ij a_j is Gaussian with variance sigma_w^2 |a|^2/n1,
    and |a|^2/n1 -> kappa(|x|^2) = E_g[tanh(|x| g / sqrt n0)^2] as n1 -> infinity.
    So p(phi) = E_{|x|^2 ~ chi^2_{n0}} [ feature_density(phi, sigma_w^2 kappa) ], a
    scale mixture of eq. (2.21).
    """
    _validate.real("sigma_w", sigma_w, low=0.0, low_open=True, doc="initial weight scale")
    _validate.integer("n0", n0, low=1, doc="input dimension")
    s, w = _chi2_nodes(n0)
    kappa = _tanh2_gauss(s / n0)
    phi = np.asarray(phi, float)
    return sum(wi * feature_density(phi, float(sigma_w) ** 2 * ki) for wi, ki in zip(w, kappa))


def jamming_boundary(n0=3):
    """1/sigma_w at which sigma_z^2 = q sigma_w^2 reaches sigma_c^2 = 1/2: sqrt(2 q).

    Below it (larger sigma_w) the features sit in a double well near +-1, where tanh
    is flat and gradients vanish: the jamming phase (sec. 2.3, Fig. 9 dashed line).
    """
    return math.sqrt(first_layer_q(n0) / SIGMA_C2)


# ------------------------------------------------------------------ level spacing

def spacing_coefficients(K, V, C=None, T=None):
    """K_S, V_S, D_S of the level-spacing equation from the gradient moments (eqs. B.7, B.9).

    The moments are taken in the eigenbasis of X (the basis in which first-order
    perturbation theory gives delta x_i = delta X_ii), not in that of the mean change K
    as in the paper's App. B: the two differ when E[Delta^X] is not diagonal in X's basis.

    Parameters
    ----------
    K : array, shape (..., N)
        K_i = -E[Delta^X_ii] in the eigenbasis of X, ordered by ascending eigenvalue.
    V : array, shape (..., N, N)
        V_ij = Var[Delta^X_ij] in the same basis.
    C, T : array (..., N) and float, optional
        The Ito drift: C_ii = sum_k Var[Delta_ik] in the same basis (``train_ensemble``'s
        ``C``) and the temperature. X = W W^T changes by eps^2 Delta_B Delta_B^T at second
        order, whose noise part adds T C_ii per unit tau to the drift of x_i; eq. (4.3)
        leaves it out. Given both, K_S includes T (C_N - C_1)/(N - 1).

    Returns
    -------
    K_S, V_S, D_S : arrays of shape (...)
        K_S = (K_N - K_1)/(N - 1) [+ T (C_N - C_1)/(N - 1)]; D_S = (V_11 + V_NN) / (2 (N-1)^2);
        V_S = 2 V_N1/(N-1)^2 + 1/(N-1) sum_{k=1}^{N-2} (V_{N,N-k} + V_{1,k+1}) / k.
        (Indices 1..N as in the paper; the Coulomb terms of the extreme eigenvalues,
        with the spacings x_N - x_j, x_j - x_1 replaced by multiples of S, eq. B.5.)
    """
    K, V = np.asarray(K, float), np.asarray(V, float)
    N = K.shape[-1]
    if V.shape[-2:] != (N, N) or N < 2:
        raise ValueError(f"K must have shape (..., N) and V (..., N, N) with N >= 2; got "
                         f"{K.shape} and {V.shape}")
    K_S = (K[..., -1] - K[..., 0]) / (N - 1)
    if (C is None) != (T is None):
        raise ValueError("C (gradient covariance) and T (temperature) go together: give both or neither")
    if C is not None:
        C = np.asarray(C, float)
        if C.shape != K.shape:
            raise ValueError(f"C must have the shape of K, {K.shape}; got {C.shape}")
        _validate.real("T", T, low=0.0, low_open=True, doc="temperature")
        K_S = K_S + float(T) * (C[..., -1] - C[..., 0]) / (N - 1)
    D_S = (V[..., 0, 0] + V[..., -1, -1]) / (2 * (N - 1) ** 2)
    k = np.arange(1, N - 1)
    V_S = 2 * V[..., -1, 0] / (N - 1) ** 2
    if N > 2:
        V_S = V_S + np.sum((V[..., -1, N - 1 - k] + V[..., 0, k]) / k, axis=-1) / (N - 1)
    return K_S, V_S, D_S


def level_spacing_stationary(S, K_S, V_S, D_S, T):
    """Exact stationary density of eq. (4.8) for constant K_S < 0, V_S, D_S > 0.

    The Fokker-Planck equation of dS = (K_S + V_S T/S) dtau + sqrt(2 T D_S) dW has the
    zero-flux solution p(S) ~ S^(V_S/D_S) exp(K_S S / (T D_S)): a Gamma law with shape
    V_S/D_S + 1 and scale T D_S / |K_S|, mean T (V_S + D_S) / |K_S| (a generalised
    Wigner surmise, cf. Pimpinelli et al. 2005).
    """
    if not K_S < 0:
        raise ValueError(f"K_S must be < 0 for a stationary law; got {K_S!r}")
    shape, scale = V_S / D_S + 1.0, T * D_S / -K_S
    S = np.asarray(S, float)
    return np.where(S > 0, np.exp((shape - 1) * np.log(np.where(S > 0, S, 1.0)) - S / scale
                                  - special.gammaln(shape) - shape * np.log(scale)), 0.0)


def _coefficient(name, value, P, n_rec):
    arr = np.asarray(value, float)
    if arr.ndim == 0:
        arr = np.full((P, n_rec), float(arr))
    elif arr.ndim == 1 and arr.shape == (P,):
        arr = np.repeat(arr[:, None], n_rec, axis=1)
    elif arr.shape != (P, n_rec):
        raise ValueError(f"{name} must be a scalar, shape ({P},) (per path) or ({P}, {n_rec}) "
                         f"(per path and recording time); got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return np.ascontiguousarray(arr)


def _recording_times(tau):
    tau = np.asarray(tau, float)
    if tau.ndim != 1 or len(tau) < 2 or tau[0] != 0.0 or np.any(np.diff(tau) <= 0):
        raise ValueError("tau must be an increasing 1-D array of recording times starting at 0")
    return tau


def _substeps(tau, dt, min_substeps):
    """Euler steps per recording interval: at least ``min_substeps``, each at most ``dt`` long."""
    _validate.integer("min_substeps", min_substeps, low=1, doc="steps per recording interval")
    return np.maximum(min_substeps, np.ceil(np.diff(tau) / dt - 1e-9)).astype(np.int64)


# Bytes of pre-drawn unit normals held at once by `_step_pair`: the paths are integrated in
# blocks of this size. At the paper preset one path of the full Dyson equation needs 0.3 GB of
# normals (1.7 million half steps x 16 levels, and their coarse sums), all 200 paths 65 GB.
_NORMALS_BYTES = 2 ** 28


def _step_pair(kernel, start, tau, n_sub, args, *, seed, levels, check, tail=()):
    """Run an Euler-Maruyama ``kernel`` at the step of ``n_sub`` and, if ``check``, at half
    that step on the same Brownian paths.

    Unit normals are drawn on the fine (half-step) grid; each coarse increment is the sum of
    two fine ones divided by sqrt 2. ``kernel(start, tau, n_sub, *args, xi, out, *tail)`` fills
    ``out`` of shape (paths, n_rec) + levels; every array in ``args`` has the paths on its first
    axis. The paths are integrated in blocks whose normals fit in ``_NORMALS_BYTES``; the normals
    are drawn path by path in order and each path's arithmetic does not depend on the others, so
    the result does not depend on the blocks. Returns (coarse, fine or None, strong error or
    None), the strong error being the largest over recording times of mean |coarse - fine| /
    mean |fine|.
    """
    P, n_rec = len(start), len(tau)
    rng = np.random.default_rng(_seeds.seed_sequence(seed))
    shape = (2 * int(n_sub.sum()),) + levels  # one path's fine normals
    held = 8 * math.prod(shape) * (1.5 if check else 0.5)  # bytes per path: coarse, and fine if check
    block = int(min(P, max(1, _NORMALS_BYTES // held)))
    x = np.empty((P, n_rec) + levels)
    x2 = np.empty_like(x) if check else None
    for p0 in range(0, P, block):
        paths = slice(p0, min(P, p0 + block))
        n = paths.stop - p0
        fine = np.empty((n,) + shape) if check else None
        coarse = np.empty((n, shape[0] // 2) + levels)
        for q in range(n):
            f = rng.standard_normal(shape)
            coarse[q] = (f[0::2] + f[1::2]) / math.sqrt(2.0)
            if check:
                fine[q] = f
        part = [a[paths] if isinstance(a, np.ndarray) else a for a in args]
        kernel(start[paths], tau, n_sub, *part, coarse, x[paths], *tail)  # fills its block of x in place
        if check:
            kernel(start[paths], tau, 2 * n_sub, *part, fine, x2[paths], *tail)
    if not check:
        return x, None, None
    other = (0,) + tuple(range(2, x.ndim))
    strong = float(np.max(np.mean(np.abs(x - x2), axis=other) / np.mean(np.abs(x2), axis=other)))
    return x, x2, strong


def level_spacing_sde(S0, tau, *, K_S, V_S, D_S, T, dt, seed, n_paths=None, check=True, min_substeps=1,
                      interpolate="hold"):
    """Integrate the level-spacing Langevin equation (Park et al. eq. 4.8) by Euler-Maruyama.

        dS = (K_S + V_S T / S) dtau + sqrt(2 T D_S) dW,

    with the repulsive 1/S term taken implicitly (the positive root of a quadratic per
    step, see ``_kernels.level_spacing_em``), which keeps S > 0 and is stable where S is
    small; the rest is the explicit Euler-Maruyama step.

    with tau the time of the continuous Langevin equation (2.30): tau = eps x SGD steps.

    Parameters
    ----------
    S0 : float or array (P,)
        Initial spacings (> 0), one per path.
    tau : array (n_rec,)
        Recording times, increasing, starting at 0.
    K_S, V_S, D_S : float, array (P,) or array (P, n_rec)
        Coefficients, constant or per path, or given at each recording time, e.g.
        measured along a training run (see ``interpolate``).
    interpolate : {"hold", "linear"}
        Between recording times, hold the value at tau_r on [tau_r, tau_{r+1}) or
        interpolate linearly in tau (for coefficients that change, even sign, between
        records).
    T : float
        Temperature eps / |B|.
    dt : float
        Largest step; each interval between recording times is cut into equal steps <= dt.
    min_substeps : int
        At least this many steps per interval (for log-spaced recording times, whose
        early intervals are short while S is small and the 1/S drift stiff).
    seed : int or SeedSequence
    n_paths : int, optional
        Number of paths when S0 is a scalar (>= 1; default 1).
    check : bool
        Also integrate with steps dt/2 driven by the same Brownian path and report the
        strong error estimate ``attrs["strong_error"]`` = max over recording times of
        mean |S_dt - S_{dt/2}| / mean S_{dt/2} (strong order 1: the noise is additive).

    Returns
    -------
    xarray.Dataset
        ``S`` (tau, path) at step dt (and ``S_half`` at dt/2 when ``check``).
    """
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature")
    _validate.real("dt", dt, low=0.0, low_open=True, doc="time step")
    tau = _recording_times(tau)
    if interpolate not in ("hold", "linear"):
        raise ValueError(f"interpolate must be 'hold' or 'linear'; got {interpolate!r}")
    ss = _seeds.seed_sequence(seed)
    S0 = np.atleast_1d(np.asarray(S0, float))
    if n_paths is not None:
        _validate.integer("n_paths", n_paths, low=1, doc="number of SDE paths")
        if S0.size > 1 and n_paths != S0.size:
            raise ValueError(f"n_paths = {n_paths} but S0 has {S0.size} values, one per path")
    P = S0.size if S0.size > 1 else int(n_paths or 1)
    if S0.size == 1:
        S0 = np.full(P, float(S0[0]))
    if not np.all((S0 > 0) & np.isfinite(S0)):
        raise ValueError("S0 (initial level spacing) must be finite and > 0")
    n_rec = len(tau)
    K = _coefficient("K_S", K_S, P, n_rec)
    V = _coefficient("V_S", V_S, P, n_rec)
    D = _coefficient("D_S", D_S, P, n_rec)
    if np.any(D < 0) or np.any(V < 0):
        raise ValueError("V_S and D_S (variances) must be >= 0")
    n_sub = _substeps(tau, dt, min_substeps)
    S, S2, strong = _step_pair(_kernels.level_spacing_em, S0, tau, n_sub, (K, V, D, float(T)), seed=ss,
                               levels=(), check=check, tail=(interpolate == "linear",))
    data = {"S": (("tau", "path"), S.T, {"long_name": "average level spacing (4.8)"})}
    attrs = {"T": float(T), "dt": float(dt), "interpolate": interpolate, "tsdyn_version": __version__,
             "kind": "theory"}
    if check:
        data["S_half"] = (("tau", "path"), S2.T, {"long_name": "same paths at step dt/2"})
        attrs["strong_error"] = strong
    return xr.Dataset(data, coords={"tau": ("tau", tau, {"units": "eps x SGD steps"}),
                                    "path": np.arange(P)}, attrs=attrs)


def dyson_sde(x0, tau, *, K, V, T, dt, seed, check=True, min_substeps=1):
    """Integrate the Dyson Brownian motion of the eigenvalues of X (Park et al. eq. 4.3).

        dx_i = (K_i + T sum_{j != i} V_ij / (x_i - x_j)) dtau + sqrt(T V_ii) dW_i,

    by Euler-Maruyama (levels re-sorted after each step), tau = eps x SGD steps.

    Parameters
    ----------
    x0 : array (P, N)
        Initial eigenvalues of each path (ascending).
    tau : array (n_rec,)
        Recording times, increasing, from 0.
    K : array (P, n_rec, N)
        Drift K_i of each level, e.g. the recorded ``K`` of :func:`train_ensemble`
        (a (P, N) array is held constant in time).
    V : array (P, n_rec, N, N)
        Variances V_ij (likewise).
    T, dt, seed, check, min_substeps
        As in :func:`level_spacing_sde`; ``attrs["strong_error"]`` compares dt with dt/2 on
        the same Brownian paths (max over recording times of mean |dx| / mean |x|).

    Returns
    -------
    xarray.Dataset
        ``x`` (tau, path, eig) at step dt (and ``x_half`` at dt/2 when ``check``).
    """
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature")
    _validate.real("dt", dt, low=0.0, low_open=True, doc="time step")
    ss = _seeds.seed_sequence(seed)
    tau = _recording_times(tau)
    x0 = np.asarray(x0, float)
    if x0.ndim != 2 or x0.shape[1] < 2 or not np.all(np.isfinite(x0)) or np.any(np.diff(x0, axis=1) <= 0):
        raise ValueError("x0 must have shape (paths, N >= 2) with finite, strictly ascending levels")
    P, N = x0.shape
    n_rec = len(tau)
    K, V = np.asarray(K, float), np.asarray(V, float)
    if K.shape == (P, N):
        K = np.repeat(K[:, None], n_rec, axis=1)
    if V.shape == (P, N, N):
        V = np.repeat(V[:, None], n_rec, axis=1)
    if K.shape != (P, n_rec, N) or V.shape != (P, n_rec, N, N):
        raise ValueError(f"K must have shape ({P}, {n_rec}, {N}) or ({P}, {N}) and V shape "
                         f"({P}, {n_rec}, {N}, {N}) or ({P}, {N}, {N}); got {K.shape}, {V.shape}")
    if not (np.all(np.isfinite(K)) and np.all(np.isfinite(V)) and np.all(V >= 0)):
        raise ValueError("K must be finite and V finite and >= 0")
    args = (np.ascontiguousarray(K), np.ascontiguousarray(V), float(T))
    x, x2, strong = _step_pair(_kernels.dyson_em, x0, tau, _substeps(tau, dt, min_substeps), args, seed=ss,
                               levels=(N,), check=check)
    return _levels_dataset(x, x2, strong, tau, T, dt, "eigenvalues (4.3)")


def _levels_dataset(x, x2, strong, tau, T, dt, long_name):
    """The Dataset of a Dyson integrator: ``x`` (tau, path, eig), and ``x_half`` and
    ``attrs["strong_error"]`` when the half-step run exists."""
    data = {"x": (("tau", "path", "eig"), x.transpose(1, 0, 2), {"long_name": long_name})}
    attrs = {"T": float(T), "dt": float(dt), "tsdyn_version": __version__, "kind": "theory"}
    if x2 is not None:
        data["x_half"] = (("tau", "path", "eig"), x2.transpose(1, 0, 2), {"long_name": "same paths at dt/2"})
        attrs["strong_error"] = strong
    P, _, N = x.shape
    return xr.Dataset(data, coords={"tau": ("tau", tau, {"units": "eps x SGD steps"}),
                                    "path": np.arange(P), "eig": np.arange(N)}, attrs=attrs)


def dyson_sde_wishart(x0, tau, *, x_ref, K, V, C, T, dt, seed, check=True, min_substeps=1):
    """The Dyson equation (4.3) with the Ito drift, integrated in the singular values of W.

        dx_i = (K_i + T C_ii + T sum_{j != i} V_ij / (x_i - x_j)) dtau + sqrt(T V_ii) dW_i,

    with the diagonal coefficients following each path's own levels as the Wishart structure
    X = W W^T dictates: in the eigenbasis of X one sample changes X by
    Delta^X_ij = sqrt(x_i) b_i q_j + sqrt(x_j) b_j q_i, so K_i = sqrt(x_i) k_i and V_ii = x_i v_i
    (k_i, v_i measured as K_i / sqrt(x_ref_i), V_ii / x_ref_i at the recorded levels x_ref).
    The drift and noise of a level vanish at 0 while the Ito drift T C_ii > 0 does not, so
    the levels stay >= 0 as those of W W^T must. Integrated in s_i = sqrt(x_i), where the
    noise is additive (see ``_kernels.dyson_sv_em``); off-diagonal V_ij and C_ii are
    interpolated as given.

    Parameters
    ----------
    x0 : array (P, N)
        Initial levels of each path (ascending, > 0).
    tau : array (n_rec,)
        Recording times, increasing, from 0.
    x_ref, K, C : arrays (P, n_rec, N)
        Levels at which the moments were measured, K_i = -E[Delta^X_ii] and the Ito
        covariance C_ii, all in the eigenbasis of X (``train_ensemble``'s ``x``, ``K``, ``C``).
    V : array (P, n_rec, N, N)
        V_ij = Var[Delta^X_ij] in the same basis.
    T, dt, seed, check, min_substeps
        As in :func:`dyson_sde`.

    Returns
    -------
    xarray.Dataset
        ``x`` (tau, path, eig) (and ``x_half`` at dt/2 when ``check``; ``attrs["strong_error"]``
        = max over recording times of mean |x_dt - x_dt/2| / mean x_dt/2).
    """
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature")
    _validate.real("dt", dt, low=0.0, low_open=True, doc="time step")
    ss = _seeds.seed_sequence(seed)
    tau = _recording_times(tau)
    x0 = np.asarray(x0, float)
    if x0.ndim != 2 or x0.shape[1] < 2 or not np.all(np.isfinite(x0)) or np.any(x0 <= 0) \
            or np.any(np.diff(x0, axis=1) <= 0):
        raise ValueError("x0 must have shape (paths, N >= 2) with finite, positive, strictly ascending levels")
    P, N = x0.shape
    n_rec = len(tau)
    x_ref, K, C, V = (np.asarray(a, float) for a in (x_ref, K, C, V))
    for name, a, shape in (("x_ref", x_ref, (P, n_rec, N)), ("K", K, (P, n_rec, N)), ("C", C, (P, n_rec, N)),
                           ("V", V, (P, n_rec, N, N))):
        if a.shape != shape or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite with shape {shape}; got {a.shape}")
    if np.any(x_ref <= 0) or np.any(V < 0):
        raise ValueError("x_ref must be > 0 and V >= 0")
    k = K / np.sqrt(x_ref)
    v = np.diagonal(V, axis1=-2, axis2=-1) / x_ref
    args = (np.ascontiguousarray(k), np.ascontiguousarray(v), np.ascontiguousarray(C), np.ascontiguousarray(V),
            float(T))
    x, x2, strong = _step_pair(_kernels.dyson_sv_em, np.sqrt(x0), tau, _substeps(tau, dt, min_substeps), args,
                               seed=ss, levels=(N,), check=check)
    return _levels_dataset(x, x2, strong, tau, T, dt, "eigenvalues (4.3) + Ito drift")


# ------------------------------------------------------------------ phase boundaries

def convergence_lhs(T, sigma_w, n1=32, n2=16):
    """Left side of eq. (4.15): (n2 - 1) / (4 sqrt r) * T / sigma_w^2 = T / S0_max (eq. 4.14)."""
    return (n2 - 1) / (4 * math.sqrt(n2 / n1)) * np.asarray(T, float) / np.asarray(sigma_w, float) ** 2


def converged(T, sigma_w, K_S, V_S, n1=32, n2=16):
    """Criterion (4.15) per model: True where T/S0_max <= -K_S / V_S (signal beats noise)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rhs = -np.asarray(K_S, float) / np.asarray(V_S, float)
    return convergence_lhs(T, sigma_w, n1, n2) <= rhs


# ------------------------------------------------------------------ spacing statistics

# Mean ratio of consecutive spacings, r = min(s_i, s_{i+1}) / max(s_i, s_{i+1}), which needs
# no unfolding (Oganesyan & Huse 2007; Atas et al., PRL 110, 084101 (2013)). Poisson
# levels: P(r) = 2 / (1 + r)^2 on [0, 1], mean 2 ln 2 - 1. GOE 3x3 surmise:
# P(r) = (27/4) (r + r^2) / (1 + r + r^2)^(5/2), mean 4 - 2 sqrt 3 (large-N GOE: 0.5307).
MEAN_R_POISSON = 2 * math.log(2) - 1
MEAN_R_GOE = 4 - 2 * math.sqrt(3)


def wigner_surmise(s):
    """Wigner surmise for the GOE (beta = 1): P(s) = (pi s / 2) exp(-pi s^2 / 4), mean 1."""
    s = np.asarray(s, float)
    return np.where(s >= 0, 0.5 * np.pi * s * np.exp(-0.25 * np.pi * s ** 2), 0.0)


def wigner_cdf(s):
    """Cumulative Wigner surmise, 1 - exp(-pi s^2 / 4)."""
    s = np.maximum(np.asarray(s, float), 0.0)
    return 1.0 - np.exp(-0.25 * np.pi * s ** 2)
