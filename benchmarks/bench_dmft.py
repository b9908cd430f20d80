"""Ratio benchmarks of the DMFT solver (run by `make bench`).

Everything is a ratio or a slope measured in one run (the machine is shared and noisy);
each timing is the best of interleaved repeats. BLAS is pinned to one thread so that
the NumPy baseline is not slowed down (or sped up) by threads fighting over the cores;
the numba iteration is serial (solve's default), and is also timed with its sample groups
on numba's threads (solve(threads=...), NUMBA_NUM_THREADS).

1. One fixed-point iteration of :func:`tsdyn.dmft.solve` (draw the effective samples,
   noise from the Cholesky factor of M_C, integrate the process, accumulate the kernels,
   exact responses chi for n_resp samples), numba against a plain-NumPy version of the
   same iteration: samples vectorised, Python loops over time, BLAS for the memory
   sums and M_C, only in-batch samples in the response (as the kernel does), and its
   samples drawn beforehand (not timed: the baseline is not charged for them). At the
   chapter's grid, a smaller and a larger one; target >= 10x. Also against the baseline
   of earlier versions of this file, which propagated every response sample (more work).
2. The same iteration against the floor: drawing its n_samples x n_t normals with NumPy.
3. Scaling with n_t: one iteration for n_t = 41..321, its log-log slope, and that of the
   process alone (n_resp = 1); expected 2 (process, O(n_t^2 n_samples)) to 3 (response,
   O(b n_t^3 n_resp)).
4. Peak memory of a whole solve (tracemalloc: NumPy arrays, including the chunk
   buffers handed to the kernels) over 8 n_t^2 bytes, for n_t = 51..401 and for
   n_samples = 500 and 4000: O(GROUPS (n_t^2 + chunk n_t) + n_resp n_t), independent of
   n_samples.
5. The chapter's two-cluster solve against one finite-d simulation of the same curve.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

import tsdyn.dmft.solve  # noqa: E402,F401
from tsdyn import dmft  # noqa: E402
from tsdyn.dmft import _kernels  # noqa: E402
from tsdyn.dmft.model import codes  # noqa: E402
from tsdyn._seeds import seed_sequence  # noqa: E402
from _timing import best_of, smoke  # noqa: E402  (benchmarks/ is on sys.path)

solve_mod = sys.modules["tsdyn.dmft.solve"]
P = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
REPEATS = 5


def converged_kernels(n_t, n_samples):
    """Kernels of a converged solve, so that the timed iteration is a realistic one."""
    ds = dmft.solve(P, (n_t - 1) * P.eta, n_samples=n_samples, n_resp=min(n_samples, 500), tol=1e-4)
    return ds.m.values, ds.lamhat.values, ds.M_C.values, np.nan_to_num(ds.M_R.values)


def numba_iteration(N, n_t, kern, n_resp, keys, work=None, kernel=None):
    """One iteration as :func:`tsdyn.dmft.solve` runs it (without the loss value)."""
    m, lamhat, MC, MR = kern
    loss, model = codes(P)
    p01, p10 = P.switch_probabilities(P.eta)
    work = _kernels.workspace(n_t, solve_mod.CHUNK, solve_mod.RESP_CHUNK) if work is None else work
    kernel = _kernels.iteration if kernel is None else kernel
    MC_sum, resp = np.empty((n_t, n_t)), np.empty((n_t, n_t))
    sums = [np.empty(n_t) for _ in range(5)]  # l2, loss, acc, proj, r2
    Lc = _kernels.cholesky_shifted(MC, 1e-10)
    kernel(keys, N, n_resp, work, model, loss, P.rho, P.L, P.Delta, P.R0, P.b, p01,
           p10, P.lam, P.eta, Lc, m, lamhat, MR, False, MC_sum, *sums, resp)
    return dict(proj=sums[3], MC=np.tril(MC_sum), resp=resp, l2=sums[0], acc=sums[2], r2=sums[4])


def numpy_iteration(data, kern, n_resp, gather=True):
    """The same iteration in plain NumPy on pre-drawn samples (S, Z time-major).

    ``gather=False``: the response propagates every one of the n_resp samples for each
    impulse time j (those out of the batch at j contribute zero), as the baseline of
    earlier versions of this benchmark did: more work, reported for comparison only.
    """
    c, y, h0, th0, S, Z = data
    m, lamhat, MC, MR = kern
    n_t, N = S.shape
    dt, D, lam = P.eta, P.Delta, P.lam
    sD = np.sqrt(D)
    scale = np.max(np.diag(MC))
    Lc = np.linalg.cholesky(MC + 1e-10 * scale * np.eye(n_t))
    XI = Lc @ Z
    theta = np.empty((n_t, N))
    theta[0] = th0
    A1, A2 = np.empty((n_t, N)), np.empty((n_t, N))
    r2, acc = np.empty(n_t), np.empty(n_t)
    Sf = S.astype(float)
    for k in range(n_t):
        r = c * m[k] + sD * (m[k] * h0 + theta[k])
        v = y * r
        sm = 0.5 * (1 - np.tanh(v / 2))  # sigma(-v)
        r2[k], acc[k] = r @ r, np.count_nonzero(v > 0)
        A1[k], A2[k] = Sf[k] * (-sm * y), Sf[k] * (sm * (1 - sm))
        if k + 1 < n_t:
            theta[k + 1] = ((1 - dt * (lam + lamhat[k])) * theta[k] - dt * sD * A1[k]
                            + dt * XI[k] + dt * dt * (MR[k, :k] @ theta[:k]))
    proj = A1 @ (c + sD * h0)
    MC_sum = A1 @ A1.T
    resp = np.zeros((n_t, n_t))
    B = A2[:, :n_resp]
    for j in range(n_t - 1):
        idx = np.flatnonzero(B[j]) if gather else np.arange(B.shape[1])
        if idx.size == 0:
            continue
        G = B[:, idx]
        chi = np.zeros((n_t, idx.size))
        chi[j + 1] = 1.0
        for k in range(j + 1, n_t):
            resp[k, j] = G[k] @ (chi[k] * G[j])
            if k + 1 < n_t:
                chi[k + 1] = chi[k] * (1 - dt * (lam + lamhat[k] + D * G[k])) \
                    + dt * dt * (MR[k, j + 1:k] @ chi[j + 1:k])
    return dict(proj=proj, MC=np.tril(MC_sum), resp=resp, l2=A2.sum(1), acc=acc, r2=r2)


def compare(n_t, N, n_resp, what):
    kern = converged_kernels(n_t, min(N, 3000))
    ss = seed_sequence(0)
    keys = solve_mod._keys(ss)
    data = solve_mod._effective_samples(P, N, n_t, P.eta, ss)
    work = _kernels.workspace(n_t, solve_mod.CHUNK, solve_mod.RESP_CHUNK)  # once per solve
    a = numba_iteration(N, n_t, kern, n_resp, keys, work)
    b = numpy_iteration(data, kern, n_resp)
    agree = max(np.max(np.abs(a[k] - b[k])) / max(np.max(np.abs(b[k])), 1e-300) for k in a)
    rng = np.random.default_rng(1)
    threads = numba.get_num_threads()
    numba_iteration(N, n_t, kern, n_resp, keys, work, _kernels.iteration_threads)  # compile
    t_nb, t_thr, t_np, t_all, t_floor = best_of(
        [lambda: numba_iteration(N, n_t, kern, n_resp, keys, work),
         lambda: numba_iteration(N, n_t, kern, n_resp, keys, work, _kernels.iteration_threads),
         lambda: numpy_iteration(data, kern, n_resp),
         lambda: numpy_iteration(data, kern, n_resp, False),
         lambda: rng.standard_normal((N, n_t))],
        repeats=REPEATS if N * n_t < 10 ** 6 else 2)
    print(f"one iteration, {what}: n_t={n_t}, n_samples={N}, n_resp={n_resp} "
          f"(numba and NumPy agree to {agree:.1e} relative)")
    print(f"  numba (serial, {_kernels.GROUPS} sample groups) vs plain NumPy (one BLAS thread): "
          f"{t_np / t_nb:6.1f}x faster (target >= 10x); the groups on {threads} threads: "
          f"{t_np / t_thr:5.1f}x (threads gain {t_nb / t_thr:.2f}x on this machine's {os.cpu_count()} "
          f"cores, shared with whatever else runs); vs the earlier baseline propagating all "
          f"n_resp samples: {t_all / t_nb:5.1f}x")
    print(f"  numba over the floor (drawing the normals with NumPy): {t_nb / t_floor:6.1f}x")


def main():
    # 1-2: one iteration at the chapter's quick grid (t_max = 20, dt = eta = 0.2,
    # n_samples = 6000, default n_resp = 1000), at the earlier one (n_samples = 1500) and
    # at a smaller one
    grids = smoke([(101, 6000, 1000, "the chapter's quick grid"),
                   (101, 1500, 1000, "the chapter's earlier grid"), (61, 2000, 500, "a smaller grid"),
                   (251, 8000, 1000, "towards paper scale")], [(21, 200, 50, "a smoke grid")])
    for grid in grids:
        compare(*grid)

    # 3: scaling with n_t
    sizes = smoke([41, 81, 161, 321], [11, 21, 41])
    N, n_resp = smoke((1000, 250), (100, 20))
    keys = solve_mod._keys(seed_sequence(0))
    t_full, t_proc = [], []
    for n_t in sizes:
        kern = converged_kernels(n_t, 400) if n_t <= 161 else _extend(kern, n_t)
        work = _kernels.workspace(n_t, solve_mod.CHUNK, solve_mod.RESP_CHUNK)
        numba_iteration(N, n_t, kern, n_resp, keys, work)
        tf, tp = best_of([lambda: numba_iteration(N, n_t, kern, n_resp, keys, work),
                          lambda: numba_iteration(N, n_t, kern, 1, keys, work)], repeats=5)
        t_full.append(tf)
        t_proc.append(tp)
    x = np.log(sizes)
    sf = np.polyfit(x[1:], np.log(t_full[1:]), 1)[0]
    sp = np.polyfit(x[1:], np.log(t_proc[1:]), 1)[0]
    print(f"scaling with n_t in {sizes} (n_samples={N}, n_resp={n_resp}, b={P.b}), log-log slopes "
          f"over the last three sizes:")
    t_resp = np.maximum(np.subtract(t_full, t_proc), 1e-9)
    sr = np.polyfit(x[1:], np.log(t_resp[1:]), 1)[0]
    print(f"  one iteration: {sf:.2f};  process alone (n_resp=1, O(n_t^2 n_samples) plus O(n_t "
          f"n_samples) sampling): {sp:.2f};  the responses (difference, O(b n_t^3 n_resp)): {sr:.2f}")
    print("  iteration time relative to n_t=41: " + ", ".join(
        f"n_t={n}: {t / t_full[0]:.1f}" for n, t in zip(sizes, t_full)))

    # 4: memory of a whole solve
    n_list = smoke((500, 4000), (100, 200))
    print(f"peak memory of a solve / (8 n_t^2 bytes), n_samples = {n_list[0]} | {n_list[1]}; and without the "
          f"chunk buffers (chunk = {solve_mod.CHUNK}, response batch = min(n_resp, "
          f"{solve_mod.RESP_CHUNK}), O(chunk n_t)):")
    dmft.solve(P, 2.0, n_samples=300, tol=1e-3)
    for n_t in smoke((51, 101, 201, 401), (21,)):
        peaks = []
        for n in n_list:
            tracemalloc.start()
            dmft.solve(P, (n_t - 1) * P.eta, n_samples=n, n_resp=50, tol=1e-2)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        work = sum(a.nbytes for a in _kernels.workspace(n_t, solve_mod.CHUNK, 50, 50))
        unit = 8 * n_t ** 2
        print(f"  n_t={n_t}: {peaks[0] / unit:6.1f} | {peaks[1] / unit:6.1f};   without the chunk "
              f"buffers: {(peaks[0] - work) / unit:5.1f} | {(peaks[1] - work) / unit:5.1f}")

    # 5: chapter solve vs one simulation
    t_max, n_samples, d = smoke((20.0, 6000, 400), (2.0, 200, 50))
    t0 = time.perf_counter()
    ds = dmft.solve(P, t_max, n_samples=n_samples)
    t_solve = time.perf_counter() - t0
    t_sim = best_of([lambda: dmft.simulate(P, t_max, d=d, seed=0)], repeats=2)[0]
    print(f"chapter grid (t_max={t_max}, dt={P.eta}, n_samples={n_samples}, {int(ds.n_iter)} iterations): "
          f"solve / one simulation at d={d} = {t_solve / t_sim:.1f}")


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
