"""Ratio benchmarks of the tanh teacher-student ensemble (run by `make bench`).

Everything is measured in one run and reported as ratios, never bare seconds
(the machine is shared and noisy); each timing is the best of interleaved repeats.

1. Ensemble training throughput, model-steps per second, paper architecture
   3 -> 32 -> 16 -> 1, |B| = 4, |D| = 4000, an ensemble of 32 models:
   - the library's lockstep kernel (one numba call advances every model through a
     block of steps; mini-batch indices drawn by numpy in blocks) against two plain-NumPy
     versions of the same algorithm with the same indices, end to end: a per-model loop
     (one vectorised NumPy update per step and model) and a loop over the steps only,
     each step one batched update of the whole ensemble (a gather, two stacked matmuls
     and the elementwise terms: about seven times faster than the per-model loop at 32
     models, its Python cost shared by the models). Targets: >= 10x against the per-model
     loop (the same algorithm, model by model, as the library runs it), and faster than the
     whole-ensemble NumPy (> 1x): that version does the same two products per step in BLAS
     and the same tanh evaluations, so the kernel can only gain what fusing the elementwise
     passes saves (measured 1.8-1.9x).
     Shown with numba on one thread (the algorithmic gain) and on all threads;
   - the cost per model-step against the floor of the arithmetic: two
     (|B| x n1) x (n1 x n2) matrix products per step (forward pass and gradient) done
     by NumPy on the whole ensemble at once (batched matmul), which any
     implementation must at least perform.
2. The level-spacing SDE integrator (drift-implicit Euler-Maruyama, the library's
   scheme): path-steps per second in the numba kernel against the same scheme vectorised
   over paths in NumPy (one array operation per step and term, the root taken as the
   kernel takes it; with held coefficients the per-interval factors computed once, as
   the kernel does), both for coefficients held over each interval and interpolated
   linearly; target >= 5x. The two agree bit for bit.
"""


import numba
import numpy as np

from tsdyn import dyson
from tsdyn.dyson import _kernels
from _timing import best_of, smoke, verdict  # noqa: E402  (benchmarks/ is on sys.path)

REPEATS = 7  # best of seven: a burst of load on the shared cores rarely hits every round
M, STEPS = smoke((32, 1000), (4, 50))


def numpy_sgd(W2, A1, Y, W3, idx, eps):
    """Plain NumPy, model by model and step by step: the algorithm of _kernels.sgd_block."""
    for m in range(W2.shape[0]):
        w = W2[m]
        for s in range(idx.shape[1]):
            k = idx[m, s]
            a = A1[m, k]  # (B, n1)
            phi = np.tanh(a @ w.T)  # (B, n2)
            e = (phi @ W3[m] - Y[m, k]) / len(k)
            w -= eps * ((e[:, None] * W3[m] * (1 - phi ** 2)).T @ a)


def numpy_sgd_ensemble(W2, A1, Y, W3, idx, eps):
    """Plain NumPy, step by step, each step for the whole ensemble at once (stacked matmuls):
    the algorithm of _kernels.sgd_block."""
    M, B = W2.shape[0], idx.shape[2]
    mi = np.arange(M)[:, None]
    for s in range(idx.shape[1]):
        k = idx[:, s]
        a = A1[mi, k]  # (M, B, n1)
        phi = np.tanh(a @ W2.transpose(0, 2, 1))  # (M, B, n2)
        e = ((phi @ W3[:, :, None])[..., 0] - Y[mi, k]) / B  # (M, B)
        W2 -= eps * ((e[:, :, None] * W3[:, None, :] * (1 - phi ** 2)).transpose(0, 2, 1) @ a)


def bench_training():
    p = dyson.Params.from_temperature(0.25, 2.0)
    net = dyson.networks(p, seed=0, n_models=M)
    rng = np.random.default_rng(0)
    A1, Y, W3 = net["A1_train"], net["y_train"], net["W3"]

    def draw():
        return np.stack([rng.integers(0, p.n_train, size=(STEPS, p.batch), dtype=np.int32) for _ in range(M)])

    idx = draw()
    alive, div = np.ones(M, bool), np.full(M, -1, np.int64)

    def kernel():
        i = draw()
        _kernels.sgd_block(net["W2"].copy(), A1, Y, W3, i, p.eps, 1e6, alive, div, 0)

    def numpy_loop():
        i = draw()
        numpy_sgd(net["W2"].copy(), A1, Y, W3, i, p.eps)

    def numpy_ensemble():
        i = draw()
        numpy_sgd_ensemble(net["W2"].copy(), A1, Y, W3, i, p.eps)

    a = A1[np.arange(M)[:, None, None], idx]  # (M, STEPS, B, n1), gathered once

    def floor():
        w = net["W2"]
        for s in range(STEPS):
            z = a[:, s] @ w.transpose(0, 2, 1)  # (M, B, n2)
            _ = z.transpose(0, 2, 1) @ a[:, s]  # (M, n2, n1)

    # same result from both implementations (rounding only)
    w_k, w_n, w_e = net["W2"].copy(), net["W2"].copy(), net["W2"].copy()
    _kernels.sgd_block(w_k, A1, Y, W3, idx[:, :50], p.eps, 1e6, alive, div, 0)
    numpy_sgd(w_n, A1, Y, W3, idx[:, :50], p.eps)
    numpy_sgd_ensemble(w_e, A1, Y, W3, idx[:, :50], p.eps)
    assert np.allclose(w_k, w_n, rtol=1e-9, atol=1e-12)
    assert np.allclose(w_k, w_e, rtol=1e-9, atol=1e-12)

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    t_k1, t_np, t_ens, t_floor = best_of([kernel, numpy_loop, numpy_ensemble, floor],
                                         repeats=REPEATS)
    numba.set_num_threads(threads)
    (t_kn,) = best_of([kernel], repeats=REPEATS)
    best_np = min(t_np, t_ens)
    return {"loop": t_np / t_k1, "ensemble": t_ens / t_k1,
            "threads": threads, "all_threads": best_np / t_kn, "over_floor": t_k1 / t_floor}


def numpy_em(S0, tau, n_sub, K, V, D, T, xi, linear):
    """Plain NumPy, vectorised over paths: the algorithm of _kernels.level_spacing_em."""
    S = S0.copy()
    out = np.empty((len(S0), len(tau)))
    out[:, 0] = S
    n = 0
    for r in range(len(tau) - 1):
        m = n_sub[r]
        h = (tau[r + 1] - tau[r]) / m
        if not linear:
            kh, c, amp = K[:, r] * h, 4.0 * V[:, r] * T * h, np.sqrt(2.0 * T * D[:, r] * h)
        for j in range(m):
            if linear:
                f = j / m
                k_ = K[:, r] + f * (K[:, r + 1] - K[:, r])
                v_ = V[:, r] + f * (V[:, r + 1] - V[:, r])
                d_ = D[:, r] + f * (D[:, r + 1] - D[:, r])
                kh, c, amp = k_ * h, 4.0 * v_ * T * h, np.sqrt(2.0 * T * d_ * h)
            b = S + kh + amp * xi[:, n + j]
            root = np.sqrt(b * b + c)
            with np.errstate(divide="ignore", invalid="ignore"):  # the branch not taken
                S = np.where(b >= 0.0, 0.5 * (b + root), 0.5 * c / (root - b))
        n += m
        out[:, r + 1] = S
    return out


def bench_sde(linear):
    P, n_rec, n = smoke((2000, 11, 2000), (100, 3, 100))
    rng = np.random.default_rng(1)
    tau = np.linspace(0.0, n * 0.005, n_rec)
    sub = np.full(n_rec - 1, n // (n_rec - 1))
    xi = rng.standard_normal((P, sub.sum()))
    S0 = rng.uniform(0.5, 1.5, P)
    K = rng.uniform(-0.6, -0.4, (P, n_rec))
    V, D = rng.uniform(0.8, 1.2, (P, n_rec)), rng.uniform(0.2, 0.4, (P, n_rec))
    out = np.empty((P, n_rec))
    _kernels.level_spacing_em(S0, tau, sub, K, V, D, 0.5, xi, out, linear)
    assert np.array_equal(out, numpy_em(S0, tau, sub, K, V, D, 0.5, xi, linear))  # bit for bit

    def kernel():
        _kernels.level_spacing_em(S0, tau, sub, K, V, D, 0.5, xi, out, linear)

    def numpy_version():
        numpy_em(S0, tau, sub, K, V, D, 0.5, xi, linear)

    t_k, t_n = best_of([kernel, numpy_version], repeats=REPEATS)
    return t_n / t_k, (P, int(sub.sum()))


def main():
    print(f"dyson: ensemble SGD, 3-32-16-1 tanh, |B|=4, {M} models x {STEPS} steps (ratios measured in one run)")
    r = bench_training()
    print(f"  model-steps/s on 1 thread vs plain-NumPy per-model loop: {r['loop']:6.1f}x; vs plain "
          f"NumPy over the whole ensemble per step: {r['ensemble']:5.1f}x (targets: >= 10x against "
          f"the per-model loop -> {verdict(r['loop'] >= 10)}; faster than the whole-ensemble NumPy "
          f"-> {verdict(r['ensemble'] > 1)}); "
          f"{r['all_threads']:6.1f}x on {r['threads']} threads")
    print(f"  per model-step cost / floor (the two batched matrix products in NumPy): {r['over_floor']:5.2f}")
    for linear in (False, True):
        ratio, (paths, steps) = bench_sde(linear)
        print(f"dyson: level-spacing SDE, drift-implicit Euler-Maruyama, {paths} paths x {steps} steps, "
              f"coefficients {'interpolated' if linear else 'held'}: numba kernel {ratio:5.1f}x faster "
              f"than NumPy vectorised over paths (target >= 5x) -> {verdict(ratio >= 5)}")


if __name__ == "__main__":
    main()
