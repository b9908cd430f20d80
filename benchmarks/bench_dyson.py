"""Ratio benchmarks of the tanh teacher-student ensemble (run by `make bench`).

Everything is measured in one run and reported as ratios, never bare seconds
(the machine is shared and noisy); each timing is the best of interleaved repeats.

1. Ensemble training throughput, model-steps per second, paper architecture
   3 -> 32 -> 16 -> 1, |B| = 4, |D| = 4000, an ensemble of 32 models:
   - the library's lockstep kernel (one numba call advances every model through a
     block of steps; mini-batch indices drawn by numpy in blocks) against a
     plain-NumPy per-model loop of the same algorithm (one vectorised NumPy update
     per step and model, the same indices), end to end; target >= 10x. Shown with
     numba on one thread (the algorithmic gain) and on all threads;
   - the cost per model-step against the floor of the arithmetic: two
     (|B| x n1) x (n1 x n2) matrix products per step (forward pass and gradient) done
     by NumPy on the whole ensemble at once (batched matmul), which any
     implementation must at least perform.
2. The level-spacing SDE integrator: Euler-Maruyama paths per second in the numba
   kernel against the same scheme vectorised over paths in NumPy; target >= 1x.
"""


import numba
import numpy as np

from tsdyn import dyson
from tsdyn.dyson import _kernels
from _timing import best_of, smoke  # noqa: E402  (benchmarks/ is on sys.path)

REPEATS = 3
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

    a = A1[np.arange(M)[:, None, None], idx]  # (M, STEPS, B, n1), gathered once

    def floor():
        w = net["W2"]
        for s in range(STEPS):
            z = a[:, s] @ w.transpose(0, 2, 1)  # (M, B, n2)
            _ = z.transpose(0, 2, 1) @ a[:, s]  # (M, n2, n1)

    # same result from both implementations (rounding only)
    w_k, w_n = net["W2"].copy(), net["W2"].copy()
    _kernels.sgd_block(w_k, A1, Y, W3, idx[:, :50], p.eps, 1e6, alive, div, 0)
    numpy_sgd(w_n, A1, Y, W3, idx[:, :50], p.eps)
    assert np.allclose(w_k, w_n, rtol=1e-9, atol=1e-12)

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    t_k1, t_np, t_floor = best_of([kernel, numpy_loop, floor], repeats=REPEATS)
    numba.set_num_threads(threads)
    (t_kn,) = best_of([kernel], repeats=REPEATS)
    return {"one_thread": t_np / t_k1, "threads": threads, "all_threads": t_np / t_kn,
            "over_floor": t_k1 / t_floor}


def numpy_em(S0, K, V, D, T, h, xi):
    S = S0.copy()
    for n in range(xi.shape[1]):
        S = np.abs(S + (K + V * T / S) * h + np.sqrt(2 * T * D * h) * xi[:, n])
    return S


def bench_sde():
    P, n = smoke((2000, 2000), (100, 100))
    rng = np.random.default_rng(1)
    xi = rng.standard_normal((P, n))
    S0 = np.ones(P)
    K, V, D = np.full((P, 2), -0.5), np.full((P, 2), 1.0), np.full((P, 2), 0.3)
    tau = np.array([0.0, n * 0.005])
    out = np.empty((P, 2))
    sub = np.array([n])
    _kernels.level_spacing_em(S0, tau, sub, K, V, D, 0.5, xi, out, False)

    def kernel():
        _kernels.level_spacing_em(S0, tau, sub, K, V, D, 0.5, xi, out, False)

    def numpy_version():
        numpy_em(S0, K[:, 0], V[:, 0], D[:, 0], 0.5, 0.005, xi)

    t_k, t_n = best_of([kernel, numpy_version], repeats=REPEATS)
    return t_n / t_k, (P, n)


def main():
    print(f"dyson: ensemble SGD, 3-32-16-1 tanh, |B|=4, {M} models x {STEPS} steps (ratios measured in one run)")
    r = bench_training()
    print(f"  model-steps/s vs plain-NumPy per-model loop: {r['one_thread']:6.1f}x on 1 thread "
          f"(target >= 10x) -> {'ok' if r['one_thread'] >= 10 else 'MISSED'}; "
          f"{r['all_threads']:6.1f}x on {r['threads']} threads")
    print(f"  per model-step cost / floor (the two batched matrix products in NumPy): {r['over_floor']:5.2f}")
    ratio, (paths, steps) = bench_sde()
    print(f"dyson: level-spacing SDE, Euler-Maruyama, {paths} paths x {steps} steps: numba kernel "
          f"{ratio:5.1f}x faster than NumPy vectorised over paths -> {'ok' if ratio >= 1 else 'MISSED'}")


if __name__ == "__main__":
    main()
