"""Theory: linear mean-square stability of SGD at the teacher minimum, at finite step.

The chapter's Langevin equation (eq-dyson-langevin) carries the step only through
T = eps/|B|, so in its limit the linear scaling rule is exact. One SGD step is not that
equation: near a zero-loss minimum W* (the teacher, W^(2) = W̄^(2), where every
per-sample gradient vanishes: the labels carry no noise) write W = W* + delta. One step
is exactly linear to first order in delta,

    delta' = (1 - eps H_B) delta,   H_B = (1/|B|) sum_{a in B} J_a J_a^T,

with J_a = d y_hat(x_a) / d vec W^(2) (at W*, the per-sample Hessian of l = (y - y_hat)^2/2 is
J_a J_a^T exactly: the residual vanishes). With mini-batches drawn with replacement the
second moment Sigma = E[delta delta^T] evolves by the completely positive map

    Sigma' = Sigma - eps (H Sigma + Sigma H) + eps^2 H Sigma H + eps T (M(Sigma) - H Sigma H),   (*)

H = E[J J^T], M(Sigma) = E[J J^T Sigma J J^T], T = eps/|B|. Per unit tau = eps t the first
and last terms are the Langevin (Ornstein-Uhlenbeck) generator of eq-dyson-langevin linearised
at W*: a function of T alone. The middle term, eps H Sigma H per unit tau, is the square of
the mean step; it depends on eps alone and is what breaks the rule: it is the linear-order
form of the deterministic O(eps^2) term eps^2 E[Delta] E[Delta]^T that the chapter's Ito
analysis of X = W W^T keeps apart from the noise term T C.

The loss E[L] = tr(H Sigma)/2 stops decaying when the spectral radius of (*) reaches 1. In
the eigenbasis of H (eigenvalues lambda_i), with vec(Sigma) on symmetric matrices, (*) is
I - eps D_eps + eps T Q with D_eps = diag(lambda_i + lambda_j - eps lambda_i lambda_j) and
Q = M - Lambda (x) Lambda (a symmetric, positive map), so the marginal temperature at step
eps is explicit (for eps lambda_max < 2, D_eps > 0):

    1 / T_c(eps) = rho( D_eps^{-1/2} Q D_eps^{-1/2} ),       T_c(eps) = 0 for eps lambda_max >= 2.

T_c(0) is the Langevin equation's (rule-exact) boundary; T_c(eps) < T_c(0) is the finite-step
one. At fixed T the rule's critical batch is B_c with T = T_c(T B_c), and along the batch axis
the boundary is T_c(|B|), the root of T = T_c(T |B|). The noise-free limit is gradient descent's
curvature bound eps lambda_max = 2 (B_c -> 2 / (T lambda_max)). Cf. Wu, Ma & E (2018) and Ma &
Ying (2021) for the one-dimensional form of this criterion.

This module draws its own teachers and inputs (population moments from ``n_samples`` fresh
inputs) and never looks at a trained network: it meets the simulation only in the widths.
"""

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .. import _seeds, _validate
from .params import PAPER_LAYERS


@dataclass(frozen=True)
class MinimumMoments:
    """Curvature and noise moments of SGD at the teacher minimum, one row per teacher.

    ``lam`` (n_teachers, rank): the largest eigenvalues of H = E[J J^T], descending;
    ``Q`` (n_teachers, m, m), m = rank (rank + 1) / 2: the map M - Lambda (x) Lambda of (*) on
    symmetric matrices (orthonormal basis: E_ii and (E_ij + E_ji)/sqrt 2, i < j), in the
    eigenbasis of H restricted to the top ``rank`` directions; ``lam_sum`` (n_teachers,):
    tr H (all directions), for the fraction of the curvature that the top ``rank`` carry.
    """

    lam: np.ndarray
    Q: np.ndarray
    lam_sum: np.ndarray
    layers: tuple
    n_samples: int

    @property
    def n_teachers(self):
        return self.lam.shape[0]

    @property
    def rank(self):
        return self.lam.shape[1]

    @property
    def lam_max(self):
        """Largest curvature lambda_max of H per teacher."""
        return self.lam[:, 0]


def _sym_index(rank):
    i, j = np.triu_indices(rank)
    return i, j, np.where(i == j, 1.0, np.sqrt(2.0))


def minimum_moments(layers=PAPER_LAYERS, *, seed, n_teachers=16, n_samples=4000, rank=16):
    """Draw ``n_teachers`` teachers (Park et al. eq. 3.1) and measure H, M at W^(2) = W̄^(2).

    Teacher W̄^(l)_ij ~ N(0, 1/n_{l-1}), inputs x ~ N(0, I_{n0}) (``n_samples`` per teacher,
    fresh: population moments). At the teacher the student's per-sample output gradient is
    J_a = g_a (x) a_a with a = tanh(W^(1) x), g_i = W^(3)_i (1 - tanh^2(z_i)), z = W̄^(2) a.
    H's spectrum falls fast (three directions carry most of tr H, since x is 3-dimensional),
    so the map (*) is kept on the top ``rank`` eigendirections (16 moves T_c by ~1 % against
    48). Returns :class:`MinimumMoments`.
    """
    _validate.integer("n_teachers", n_teachers, low=1, doc="teachers drawn by the theory")
    _validate.integer("n_samples", n_samples, low=2, doc="inputs per teacher for the population moments")
    layers = tuple(int(n) for n in layers)
    if len(layers) != 4 or min(layers) < 1 or layers[3] != 1:
        raise ValueError(f"layers must be four positive widths (n0, n1, n2, 1); got {layers!r}")
    n0, n1, n2, _ = layers
    _validate.integer("rank", rank, low=1, doc="curvature directions kept")
    if rank > n1 * n2:
        raise ValueError(f"rank (curvature directions kept) must be <= n1 n2 = {n1 * n2}; got {rank}")
    lams, Qs, sums = [], [], []
    for k in range(n_teachers):
        rng = np.random.default_rng(_seeds.child(seed, k))
        W1 = rng.standard_normal((n1, n0)) / np.sqrt(n0)
        W2 = rng.standard_normal((n2, n1)) / np.sqrt(n1)
        W3 = rng.standard_normal(n2) / np.sqrt(n2)
        a = np.tanh(rng.standard_normal((n_samples, n0)) @ W1.T)
        g = W3 * (1.0 - np.tanh(a @ W2.T) ** 2)
        J = (g[:, :, None] * a[:, None, :]).reshape(n_samples, n2 * n1)
        lam, Q, tot, _ = _gradient_moments(J, rank)
        lams.append(lam)
        Qs.append(Q)
        sums.append(tot)
    return MinimumMoments(np.array(lams), np.array(Qs), np.array(sums), layers, int(n_samples))


def _gradient_moments(J, rank):
    """From per-sample output gradients J (n, P): the top ``rank`` eigenvalues of H = J^T J / n
    (descending), the map Q = M - Lambda (x) Lambda on symmetric matrices in that eigenbasis,
    tr H, and the eigenvectors (P, rank)."""
    n = J.shape[0]
    i, j, w = _sym_index(rank)
    lam, U = np.linalg.eigh(J.T @ J / n)
    lam, U = lam[::-1], U[:, ::-1]
    u = J @ U[:, :rank]
    Z = u[:, i] * u[:, j] * w  # svec(u u^T) per sample
    return lam[:rank], Z.T @ Z / n - np.diag(lam[i] * lam[j]), float(lam.sum()), U[:, :rank]


def _tc_one(lam, Q, eps, i, j):
    D = lam[i] + lam[j] - eps * lam[i] * lam[j]
    if eps * lam[0] >= 2.0:
        return 0.0
    s = 1.0 / np.sqrt(D)
    top = np.linalg.eigvalsh(s[:, None] * Q * s[None, :])[-1]
    return 1.0 / top if top > 0 else np.inf


def _check_moments(mom):
    if not isinstance(mom, MinimumMoments):
        raise ValueError(f"mom must be dyson.stability.MinimumMoments (from minimum_moments); got {type(mom).__name__}")


def stability_temperature(mom, eps):
    """T_c(eps) per teacher: the temperature at which (*) at step ``eps`` is marginal.

    1/T_c(eps) = rho(D_eps^{-1/2} Q D_eps^{-1/2}); 0 where eps lambda_max >= 2 (gradient descent
    itself overshoots the sharpest direction). ``eps`` = 0 gives the Langevin limit.
    """
    _check_moments(mom)
    _validate.real("eps", eps, low=0.0, doc="learning rate")
    i, j, _ = _sym_index(mom.rank)
    return np.array([_tc_one(l, q, float(eps), i, j) for l, q in zip(mom.lam, mom.Q)])


def growth_factor(mom, T, eps):
    """Spectral radius per teacher of the one-step map (*) at temperature T and step eps (> 0):
    E[L] grows (> 1) or decays (< 1) by this factor per SGD step in the slowest kept mode.
    A direct check of :func:`stability_temperature` (no closed form used)."""
    _check_moments(mom)
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature eps/|B|")
    _validate.real("eps", eps, low=0.0, low_open=True, doc="learning rate")
    i, j, _ = _sym_index(mom.rank)
    out = []
    for lam, Q in zip(mom.lam, mom.Q):
        A = np.diag(1.0 - eps * (lam[i] + lam[j]) + eps ** 2 * lam[i] * lam[j]) + eps * T * Q
        out.append(np.max(np.abs(np.linalg.eigvalsh(A))))
    return np.array(out)


def critical_temperature(mom, batch):
    """T_c(|B|) per teacher: the root of T = T_c(T |B|), where SGD with batch |B| loses
    mean-square stability at the teacher minimum (the boundary along the batch axis)."""
    _check_moments(mom)
    _validate.real("batch", batch, low=0.0, low_open=True, doc="mini-batch size |B|")
    i, j, _ = _sym_index(mom.rank)
    out = []
    for lam, Q in zip(mom.lam, mom.Q):
        t0 = _tc_one(lam, Q, 0.0, i, j)
        hi = min(t0, (2.0 / lam[0]) / batch * (1 - 1e-12))
        f = lambda T: T - _tc_one(lam, Q, T * batch, i, j)  # noqa: E731  increasing in T
        out.append(hi if f(hi) <= 0 else optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-10))
    return np.array(out)


def critical_batch(mom, T):
    """B_c per teacher at temperature T: T = T_c(T B_c), the batch (eps = T B_c) beyond which the
    teacher minimum is mean-square unstable; 0 where T >= T_c(0) (unstable at every batch, even
    in the Langevin limit). Its noise-free bound is 2 / (T lambda_max)."""
    _check_moments(mom)
    _validate.real("T", T, low=0.0, low_open=True, doc="temperature eps/|B|")
    i, j, _ = _sym_index(mom.rank)
    out = []
    for lam, Q in zip(mom.lam, mom.Q):
        emax = 2.0 / lam[0]
        if T >= _tc_one(lam, Q, 0.0, i, j):
            out.append(0.0)
            continue
        f = lambda e: _tc_one(lam, Q, e, i, j) - T  # noqa: E731  decreasing in eps, < 0 at emax
        out.append(optimize.brentq(f, 0.0, emax, xtol=1e-14, rtol=1e-10) / T)
    return np.array(out)
