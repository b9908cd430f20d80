"""Ratio benchmarks of the DMFT solver (run by `make bench`).

Everything is a ratio measured in one run (the machine is shared and noisy); each timing
is the best of interleaved repeats. BLAS is pinned to one thread so that the NumPy
baseline is not slowed down (or sped up) by threads fighting over the cores.

1. One fixed-point iteration of :func:`tsdyn.dmft.solve` (effective process for
   n_samples samples, noise from the Cholesky factor, kernels, exact responses chi for
   n_resp samples) with the numba kernels, against a plain-NumPy version of the same
   iteration (vectorised over samples, Python loops over time); target >= 10x.
2. The same iteration against the floor: drawing its n_samples x n_t normals (what any
   Monte Carlo solver must at least do once).
3. Scaling with n_t: the cost of one iteration for n_t = 41..321, and the log-log slopes
   of its two parts (the process, O(n_t^2 n_samples); the response, O(b n_t^3 n_resp)).
4. Peak memory of a whole solve over the size of one n_t x n_t kernel, as n_t doubles.
5. The chapter's two-cluster solve against one finite-d simulation of the same curve.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from tsdyn import dmft  # noqa: E402
from tsdyn.dmft import _kernels  # noqa: E402
from tsdyn.dmft.model import codes  # noqa: E402
from tsdyn.dmft.solve import _effective_samples  # noqa: E402
from tsdyn.dmft.simulate import _seed_sequence  # noqa: E402

P = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
REPEATS = 3


def best_of(fns, repeats=REPEATS):
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def converged_kernels(n_t, n_samples):
    """Kernels of a converged solve, so that the timed iteration is a realistic one."""
    ds = dmft.solve(P, (n_t - 1) * P.eta, n_samples=n_samples, n_resp=min(n_samples, 500), tol=1e-4)
    return ds.m.values, ds.lamhat.values, ds.M_C.values, np.nan_to_num(ds.M_R.values)


def setup(n_t, n_samples):
    c, y, h0, th0, S, Z = _effective_samples(P, n_samples, n_t, P.eta, _seed_sequence(0))
    return c, y, h0, th0, S, Z


def numba_iteration(data, kern, n_resp):
    c, y, h0, th0, S, Z = data
    m, lamhat, MC, MR = kern
    N, n_t = S.shape
    loss, model = codes(P)
    A2, MC_sum, resp = np.empty((N, n_t)), np.empty((n_t, n_t)), np.empty((n_t, n_t))
    sums = [np.empty(n_t) for _ in range(4)]
    Lc = _kernels.cholesky_shifted(MC, 1e-10)
    _kernels.effective_process(c, y, h0, th0, S, Z, Lc, m, lamhat, MR, P.eta, P.lam, P.Delta,
                               loss, model, P.L, A2, MC_sum, *sums)
    _kernels.response_kernel(np.ascontiguousarray(A2[:n_resp]), lamhat, MR, P.eta, P.lam, P.Delta,
                             resp)
    return sums[3], MC_sum, resp


def _logistic_terms(y, r):
    v = y * r
    sig_minus = 0.5 * (1 - np.tanh(v / 2))  # sigma(-v)
    return -sig_minus * y, sig_minus * (1 - sig_minus)


def numpy_iteration(data, kern, n_resp):
    """The same iteration in plain NumPy: samples vectorised, loops over time steps."""
    c, y, h0, th0, S, Z = data
    m, lamhat, MC, MR = kern
    N, n_t = S.shape
    dt, D = P.eta, P.Delta
    sD = np.sqrt(D)
    scale = np.max(np.diag(MC))
    Lc = np.linalg.cholesky(MC + 1e-10 * scale * np.eye(n_t))
    XI = Z @ Lc.T
    theta = np.empty((n_t, N))
    theta[0] = th0
    A1, A2 = np.empty((n_t, N)), np.empty((n_t, N))
    Sf = S.T.astype(float)
    for k in range(n_t):
        r = c * m[k] + sD * (m[k] * h0 + theta[k])
        d1, d2 = _logistic_terms(y, r)
        A1[k], A2[k] = Sf[k] * d1, Sf[k] * d2
        if k + 1 < n_t:
            mem = MR[k, :k] @ theta[:k]
            theta[k + 1] = theta[k] - dt * ((P.lam + lamhat[k]) * theta[k] + sD * A1[k]
                                            - dt * mem - XI[:, k])
    proj = (A1 * (c + sD * h0)).sum(1)
    MC_sum = A1 @ A1.T
    resp = np.zeros((n_t, n_t))
    B = A2[:, :n_resp]
    for j in range(n_t - 1):
        chi = np.zeros((n_t, n_resp))
        chi[j + 1] = 1.0
        for k in range(j + 1, n_t):
            resp[k, j] = (B[k] * chi[k] * B[j]).sum()
            if k + 1 < n_t:
                chi[k + 1] = chi[k] * (1 - dt * (P.lam + lamhat[k] + D * B[k])) \
                    + dt * dt * (MR[k, j + 1:k] @ chi[j + 1:k])
    return proj, MC_sum, resp


def main():
    # 1-2: one iteration, n_t = 61, 2000 samples (responses for 500)
    n_t, N, n_resp = 61, 2000, 500
    kern = converged_kernels(n_t, N)
    data = setup(n_t, N)
    a = numba_iteration(data, kern, n_resp)
    b = numpy_iteration(data, kern, n_resp)
    # the kernel fills only the lower triangle (l <= k) of the M_C sums
    pairs = [(a[0], b[0]), (np.tril(a[1]), np.tril(b[1])), (a[2], b[2])]
    agree = max(np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-300) for x, y in pairs)
    rng = np.random.default_rng(1)
    t_nb, t_np, t_floor = best_of([lambda: numba_iteration(data, kern, n_resp),
                                   lambda: numpy_iteration(data, kern, n_resp),
                                   lambda: rng.standard_normal((N, n_t))])
    print(f"one iteration, n_t={n_t}, n_samples={N}, n_resp={n_resp} "
          f"(numba and NumPy agree to {agree:.1e} relative)")
    print(f"  numba vs plain NumPy: {t_np / t_nb:6.1f}x faster (target >= 10x)")
    print(f"  numba over the floor (drawing the normals): {t_nb / t_floor:6.1f}x")

    # 3: scaling with n_t
    sizes = [41, 81, 161, 321]
    N, n_resp = 1000, 250
    t_proc, t_resp = [], []
    for n_t in sizes:
        kern = converged_kernels(n_t, 400) if n_t <= 161 else _extend(kern, n_t)
        data = setup(n_t, N)
        c, y, h0, th0, S, Z = data
        m, lamhat, MC, MR = kern
        loss, model = codes(P)
        A2, MC_sum, resp = np.empty((N, n_t)), np.empty((n_t, n_t)), np.empty((n_t, n_t))
        sums = [np.empty(n_t) for _ in range(4)]
        Lc = _kernels.cholesky_shifted(MC, 1e-10)

        def proc():
            _kernels.effective_process(c, y, h0, th0, S, Z, Lc, m, lamhat, MR, P.eta, P.lam,
                                       P.Delta, loss, model, P.L, A2, MC_sum, *sums)

        def response():
            _kernels.response_kernel(np.ascontiguousarray(A2[:n_resp]), lamhat, MR, P.eta, P.lam,
                                     P.Delta, resp)

        proc()
        tp, tr = best_of([proc, response], repeats=2)
        t_proc.append(tp)
        t_resp.append(tr)
    x = np.log(sizes)
    sp = np.polyfit(x[1:], np.log(t_proc[1:]), 1)[0]
    sr = np.polyfit(x[1:], np.log(t_resp[1:]), 1)[0]
    st = np.polyfit(x[1:], np.log(np.add(t_proc, t_resp)[1:]), 1)[0]
    print(f"scaling with n_t in {sizes} (n_samples={N}, n_resp={n_resp}, b={P.b}), log-log slopes "
          f"over the last three sizes:")
    print(f"  process O(n_t^2 n_samples): {sp:.2f};  response O(b n_t^3 n_resp): {sr:.2f};  "
          f"one iteration: {st:.2f}")
    print("  response / process cost: " + ", ".join(
        f"n_t={n}: {r / p:.2f}" for n, p, r in zip(sizes, t_proc, t_resp)))

    # 4: memory of a whole solve
    print("peak memory of solve(n_samples=500) / (8 n_t^2 bytes) and / (8 n_samples n_t bytes):")
    for n_t in (51, 101, 201):
        tracemalloc.start()
        dmft.solve(P, (n_t - 1) * P.eta, n_samples=500, tol=1e-3)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  n_t={n_t}: {peak / (8 * n_t ** 2):6.1f}   {peak / (8 * 500 * n_t):6.1f}")

    # 5: chapter solve vs one simulation
    t_max = 20.0
    t0 = time.perf_counter()
    ds = dmft.solve(P, t_max, n_samples=3000)
    t_solve = time.perf_counter() - t0
    t_sim = best_of([lambda: dmft.simulate(P, t_max, d=500, seed=0)], repeats=2)[0]
    print(f"chapter grid (t_max={t_max}, dt={P.eta}, n_samples=3000, {int(ds.n_iter)} iterations): "
          f"solve / one simulation at d=500 = {t_solve / t_sim:.1f}")


def _extend(kern, n_t):
    """Pad converged kernels to a longer grid by holding the last values (timing only)."""
    m, lamhat, MC, MR = kern
    n0 = len(m)
    idx = np.minimum(np.arange(n_t), n0 - 1)
    MCn = MC[np.ix_(idx, idx)] + 1e-3 * np.eye(n_t)
    MRn = np.tril(MR[np.ix_(idx, idx)], -1)
    return m[idx], lamhat[idx], MCn, MRn


if __name__ == "__main__":
    main()
