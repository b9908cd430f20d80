"""Two-layer erf network on a two-direction erf target: the exact low-dimensional asymptotics
of projected one-pass SGD with batch n_b = n0 d^mu and learning rate gamma = gamma0 d^-delta
(Arnaboldi et al. 2024, "Exact low-dimensional asymptotic dynamics").

Model (the paper's erf experiment): student f(z) = (1/p) sum_j g(<w_j, z>) with unit rows w_j
and fixed second layer a_j = 1, target f*(z) = (1/k) sum_r g(<w*_r, z>) with orthonormal rows
w*_r, labels y = f*(z) + sqrt(noise) xi, g(x) = erf(x / sqrt 2) (:mod:`tsdyn.activations`'
"erf"; note that :mod:`tsdyn.largebatch.functions`' "erf" is erf(x)). One step draws n_b fresh
samples and moves w_j <- (w_j + gamma g_j) / ||.||, g_j = (1/n_b) sum_nu g'(lambda_j^nu)
(y^nu - f^nu) z^nu / p. Time is counted in SGD steps.

The state is the Gram matrix Om of the rows of [W; W*] (students first): Q = W W^T,
M = W W*^T, P = W* W*^T = I. Two independent code paths share only this state:

- the theory, :func:`expected_map`: the paper's expected one-step map on (M, Q) with the
  drift term of order gamma (Saad & Solla's I3 integrals) and the noise term of order
  gamma^2 d / n_b (I4 and J2), each switched on where it leads (:func:`leading_terms`);
- the simulation, :func:`simulate`: the SGD Markov chain on Om drawn exactly in law at a cost
  O(n_b (p + k)^2) per step, whatever d (:func:`tsdyn.largebatch._erf_kernels.erf_overlap_steps`).

The test error is eps_g = E[(f(z) - f*(z))^2] / 2 on a fresh noiseless sample, closed-form in
Om (:func:`test_error`).
"""

import math

import numpy as np
import xarray as xr

from .. import _grids, _seeds, _validate
from . import _erf_kernels

# The paper's three settings of its erf figure (p = k = 2, d = 10^4, noise 1e-2, start with
# M = 0): batch n_b = round(n0 d^mu), learning rate gamma0 d^-delta. gamma d / n_b =
# gamma0 d^(1 - mu - delta) is the ratio of the noise term to the drift term of one step.
REGIMES = {
    "noise": dict(mu=0.25, delta=0.125, gamma0=0.3, n0=1.0, label="noise-dominated"),
    "saad_solla": dict(mu=0.5, delta=0.5, gamma0=8.0, n0=1.0, label="Saad–Solla-like"),
    "population": dict(mu=0.5, delta=1.0, gamma0=10.0, n0=1.0, label="population flow"),
}


def leading_terms(mu, delta):
    """Which terms of the step map survive as d -> infinity on the time scale of the leading one.

    Per step the drift moves the overlaps by O(gamma) and the noise by O(gamma^2 d / n_b); their
    ratio is gamma0 d^(1 - mu - delta). Returns (drift, noise): (False, True) for mu + delta < 1
    (noise-dominated), (True, True) on the line mu + delta = 1 (Saad-Solla-like: both of the same
    order, as for n_b = 1, gamma ~ 1/d), (True, False) for mu + delta > 1 (population gradient flow).
    """
    _validate.real("mu", mu, low=0.0, doc="batch-size exponent")
    _validate.real("delta", delta, low=-4.0, high=4.0, doc="learning-rate exponent")
    s = 1.0 - mu - delta
    if abs(s) < 1e-12:
        return True, True
    return (False, True) if s > 0 else (True, False)


def regime_setting(name, d):
    """Batch, learning rate and leading terms of one of :data:`REGIMES` at input dimension d."""
    if name not in REGIMES:
        raise ValueError(f"regime must be one of {tuple(REGIMES)}; got {name!r}")
    _validate.integer("d", d, low=8, doc="input dimension")
    r = REGIMES[name]
    drift, noise = leading_terms(r["mu"], r["delta"])
    return {"n_b": max(1, int(round(r["n0"] * d ** r["mu"]))), "gamma": r["gamma0"] * d ** -r["delta"],
            "drift": drift, "noise_term": noise, "label": r["label"], "mu": r["mu"], "delta": r["delta"]}


def _check_state(Om, p):
    Om = np.array(Om, dtype=float)
    _validate.integer("p", p, low=1, doc="student units")
    if Om.ndim != 2 or Om.shape[0] != Om.shape[1] or Om.shape[0] <= p:
        raise ValueError(f"Om (overlaps of [W; W*]) must be square with more than p={p} rows; got shape {Om.shape}")
    if not np.allclose(Om, Om.T) or np.linalg.eigvalsh(Om).min() <= 0:
        raise ValueError("Om (overlaps of [W; W*]) must be symmetric positive definite")
    if not np.allclose(np.diag(Om)[:p], 1.0):
        raise ValueError("Om (overlaps of [W; W*]): the student rows must have unit norm (projected SGD)")
    return Om


def initial_overlaps(p, k, d, seed):
    """Overlaps at t = 0 as in the paper's erf figure: M = 0 (students orthogonal to the teacher
    subspace), P = I, and Q the Gram matrix of p independent uniform unit vectors of the (d - k)-
    dimensional complement (Bartlett draw of Wishart_p(d - k, I), normalised)."""
    _validate.integer("p", p, low=1, doc="student units")
    _validate.integer("k", k, low=1, doc="target directions")
    _validate.integer("d", d, low=2 * (p + k), doc="input dimension, at least 2 (p + k)")
    rng = np.random.default_rng(_seeds.child(seed, 0))
    L = np.zeros((p, p))
    for i in range(p):
        L[i, i] = math.sqrt(rng.chisquare(d - k - i))
        L[i, :i] = rng.standard_normal(i)
    G = L @ L.T
    s = np.sqrt(np.diag(G))
    Om = np.eye(p + k)
    Om[:p, :p] = G / np.outer(s, s)
    return Om


def test_error(Om, p):
    """eps_g = E[(f - f*)^2] / 2 for the overlaps Om (closed form: Saad & Solla's I2 for erf)."""
    return float(_erf_kernels.erf_test_error(np.ascontiguousarray(Om, dtype=float), int(p)))


def _dataset(kind, record, eg, Om, p, attrs):
    k = Om.shape[1] - p
    return xr.Dataset(
        {"eg": (("t",), eg, {"long_name": "test error E[(f - f*)^2] / 2 (noiseless)"}),
         "M": (("t", "j", "r"), Om[:, :p, p:], {"long_name": "<w_j, w*_r>"}),
         "Q": (("t", "j", "j2"), Om[:, :p, :p], {"long_name": "<w_j, w_l>"})},
        coords={"t": ("t", record.astype(float), {"units": "SGD steps"}), "j": np.arange(p),
                "j2": np.arange(p), "r": np.arange(k)},
        attrs={"kind": kind, "p": p, "k": k, **attrs})


def expected_map(Om0, p, steps, *, gamma, d, n_b, noise=0.0, drift=True, noise_term=True, square_drift=False,
                 n_points=40):
    """The paper's deterministic map on the overlaps, iterated ``steps`` times from ``Om0``.

    Arnaboldi et al. (2024), "Exact low-dimensional asymptotic dynamics" (the mu = 0 equations of
    Veiga et al. 2022 with gamma / n_b in the noise term): per step
        dM = (gamma/p) E[g'(lambda_j) nu_r (f* - f)],
        dQ = (gamma/p) (E[g'(lambda_j) lambda_l (f* - f)] + (j <-> l))
             + (gamma/p)^2 (d/n_b) E[g'(lambda_j) g'(lambda_l) ((f* - f)^2 + noise)],
    then the projection (each student row divided by its new norm); see
    :func:`tsdyn.largebatch._erf_kernels.erf_expected_map_steps`. ``drift`` / ``noise_term`` keep the
    first / second line (:func:`leading_terms` gives the d -> infinity choice); ``square_drift``
    adds the O(gamma^2) squared norm of the batch-mean gradient, (gamma/p)^2 (1 - 1/n_b) |E[c_j z]|^2,
    which vanishes against the drift as gamma -> 0 (a finite-d correction).

    Returns an xarray.Dataset with ``eg`` (t), ``M`` (t, j, r), ``Q`` (t, j, j2); t in SGD steps on
    ``n_points`` log-spaced whole steps (0 included).
    """
    Om = _check_state(Om0, p)
    _validate.integer("steps", steps, low=1, doc="number of SGD steps")
    _validate.real("gamma", gamma, low=0.0, low_open=True, doc="learning rate")
    _validate.integer("d", d, low=1, doc="input dimension")
    _validate.integer("n_b", n_b, low=1, doc="batch size")
    _validate.real("noise", noise, low=0.0, doc="label-noise variance")
    record = _grids.integer_grid(steps, n_points, "log")
    out = np.full((len(record), *Om.shape), np.nan)
    eg = np.full(len(record), np.nan)
    t = 0
    for i, target in enumerate(record):
        if not _erf_kernels.erf_expected_map_steps(Om, int(target - t), int(p), float(gamma), d / n_b, float(noise),
                                               bool(drift), bool(noise_term), bool(square_drift), int(n_b)):
            break
        t = target
        out[i], eg[i] = Om, test_error(Om, p)
    return _dataset("theory", record, eg, out, p, dict(gamma=gamma, d=d, n_b=n_b, noise=noise,
                                                      drift=int(drift), noise_term=int(noise_term),
                                                      square_drift=int(square_drift)))


def simulate(Om0, p, steps, *, gamma, d, n_b, seed, noise=0.0, n_points=40):
    """One projected-SGD run from the overlaps ``Om0``, drawn exactly in law on the overlaps.

    A step costs O(n_b (p + k)^2) whatever d (see
    :func:`tsdyn.largebatch._erf_kernels.erf_overlap_steps` for why it is exact: the fields of the
    batch live in span(W, W*), and the rest of the step enters the overlaps only through a
    p x p Wishart matrix with d - p - k degrees of freedom). Same output as :func:`expected_map`,
    plus ``diverged``.
    """
    Om = _check_state(Om0, p)
    n = Om.shape[0]
    _validate.integer("steps", steps, low=1, doc="number of SGD steps")
    _validate.real("gamma", gamma, low=0.0, low_open=True, doc="learning rate")
    _validate.integer("d", d, low=n + p, doc=f"input dimension, at least p + k + p = {n + p}")
    _validate.integer("n_b", n_b, low=1, doc="batch size")
    _validate.real("noise", noise, low=0.0, doc="label-noise variance")
    rngs = [np.random.default_rng(_seeds.child(seed, i)) for i in range(1, 5)]
    record = _grids.integer_grid(steps, n_points, "log")
    out = np.full((len(record), n, n), np.nan)
    eg = np.full(len(record), np.nan)
    block = max(1, 2 ** 18 // (n_b * n))
    dof = d - n - np.arange(p)
    t, diverged = 0, False
    for i, target in enumerate(record):
        while t < target and not diverged:
            m = int(min(block, target - t))
            A = rngs[0].standard_normal((m * n_b, n))
            xi = rngs[1].standard_normal(m * n_b)
            chi2 = rngs[2].chisquare(dof, size=(m, p))
            off = rngs[3].standard_normal((m, p * (p - 1) // 2))
            done, diverged = _erf_kernels.erf_overlap_steps(Om, A, xi, chi2, off, int(n_b), int(p), float(gamma),
                                                        math.sqrt(noise))
            t += int(done)
        if diverged:
            break
        out[i], eg[i] = Om, test_error(Om, p)
    ds = _dataset("simulation", record, eg, out, p, dict(gamma=gamma, d=d, n_b=n_b, noise=noise))
    ds["diverged"] = ((), diverged)
    return ds


def regime_runs(*, regime, d, steps, runs, seed, p=2, k=2, noise=0.01, n_points=30):
    """``runs`` SGD runs of one of :data:`REGIMES` (distinct child seeds of ``seed``, each from its
    own :func:`initial_overlaps`). Returns ``t``, ``eg`` (runs, t), ``M`` (runs, t, p, k),
    ``Q`` (runs, t, p, p) and ``diverged`` (runs,)."""
    _validate.integer("runs", runs, low=2, doc="number of SGD runs")
    s = regime_setting(regime, d)
    sim = [simulate(initial_overlaps(p, k, d, child), p, steps, seed=child, gamma=s["gamma"], d=d,
                    n_b=s["n_b"], noise=noise, n_points=n_points)
           for child in _seeds.children(_seeds.seed_sequence(seed), runs)]
    return {"t": sim[0].t.values, "eg": np.array([r.eg.values for r in sim]),
            "M": np.array([r.M.values for r in sim]), "Q": np.array([r.Q.values for r in sim]), "diverged": np.array([bool(r.diverged) for r in sim])}


def regime_map(*, regime, d, steps, p=2, k=2, noise=0.01, n_points=30, full=False):
    """The map of one of :data:`REGIMES` from the symmetric start M = 0, Q = I (the mean of
    :func:`initial_overlaps` up to O(d^-1/2)), with the regime's leading terms only (``full``
    False: the d -> infinity theory) or with every term (``full`` True: the finite-d map, with
    the O(gamma^2) square of the drift too)."""
    s = regime_setting(regime, d)
    drift, noise_term = (True, True) if full else (s["drift"], s["noise_term"])
    return expected_map(np.eye(p + k), p, steps, gamma=s["gamma"], d=d, n_b=s["n_b"], noise=noise,
                        drift=drift, noise_term=noise_term, square_drift=bool(full), n_points=n_points)
