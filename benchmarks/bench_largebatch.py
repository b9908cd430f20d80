"""Ratio benchmarks of large-batch one-pass SGD (run by `make bench`).

Everything is measured in one run and reported as ratios (plus samples per second
for the issue's reference point), because the machine is shared and noisy. Each
timing is the best of several interleaved repeats.

1. One SGD step at d = 1024, n_b = d^1.5 = 32768 (p = k = 1, He2 target and student,
   square loss, projected): the library's step (inputs drawn in 2 MiB chunks by
   numpy, fields and gradient in one numba pass per chunk) against a plain-NumPy
   step of the same algorithm (draw the whole batch, three BLAS products); target
   >= 2x end to end where the floor allows 2.5x or more, else at most 1.5x the floor
   (both contenders then wait on the draws). Also the arithmetic alone (same inputs), and the cost over the
   floor (drawing the n_b d normals, in chunks).
2. Peak memory of one step (tracemalloc, numpy's allocations) as n_b grows from d
   to d^2: flat for the library (one chunk), linear in n_b for plain NumPy.
3. The reduced sampler (the same chain in law, see `simulate`): steps per second
   against the full sampler at the same point, and its cost over its own floor (drawing
   the n_b (k + p) in-plane normals and the p d orthogonal ones).
4. Ways to lower the floor, measured on the same n_b d normals: float32 draws (numpy's
   ziggurat in single precision) and two threads drawing chunks from per-chunk generators
   spawned from one SeedSequence (standard_normal(out=...) releases the GIL). Either would
   change the input stream; the library adopts one only where it lowers the floor here.
"""

import importlib
import os
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tsdyn import largebatch as lb
from tsdyn.largebatch import _kernels
from _timing import best_of, smoke, verdict  # noqa: E402  (benchmarks/ is on sys.path)

simmod = importlib.import_module("tsdyn.largebatch.simulate")
D = smoke(1024, 256)
REPEATS = 4
SQ2 = np.sqrt(2.0)


def numpy_step(w, ws, rng, n_b, gamma, Z=None):
    """Plain NumPy: one projected SGD step on a He2 target with a He2 student, square loss."""
    if Z is None:
        Z = rng.standard_normal((n_b, len(w)))
    lam, nu = Z @ w, Z @ ws
    F = ((nu * nu - 1) / SQ2 - (lam * lam - 1) / SQ2) * SQ2 * lam
    w = w + gamma * (Z.T @ F) / n_b
    return w / np.linalg.norm(w)


def main():
    n_b = int(round(D ** 1.5))
    params = lb.Params(d=D, mu=1.5, gamma0=0.1, target="he2", activation="he2")
    run = simmod._Runner(params, 0, "full", stop_at_recovery=False)
    rng = np.random.default_rng(1)
    w0, ws = run.W[0].copy(), run.Wstar[0].copy()
    chunk = np.empty((simmod._BLOCK_NUMBERS // D, D))
    run.advance(1)  # compile

    def library():
        run.advance(1)

    def plain():
        numpy_step(w0, ws, rng, n_b, params.gamma)

    def floor():
        for _ in range(n_b // len(chunk)):
            rng.standard_normal(out=chunk)

    t_lib, t_np, t_floor = best_of([library, plain, floor], repeats=REPEATS)
    # the arithmetic alone, on one batch held in memory
    Z = rng.standard_normal((n_b, D))
    G, xi = np.zeros((1, D)), np.zeros(n_b)
    args = (params.activation_code, params.target_code, 0, 0.0)

    def kernel_arith():
        G[:] = 0.0
        _kernels.accumulate_full(run.W, run.Wstar, Z, xi, *args[:3], args[3], G)

    def numpy_arith():
        numpy_step(w0, ws, rng, n_b, params.gamma, Z)

    kernel_arith()
    a_kernel, a_numpy = best_of([kernel_arith, numpy_arith], repeats=REPEATS)
    del Z
    ratio, bound, over_floor = t_np / t_lib, t_np / t_floor, t_lib / t_floor
    # Target: 2x end to end where the floor leaves room for it (at most `bound`x is possible:
    # any step must draw the n_b d normals). Where drawing bounds both contenders below 2.5x,
    # the target is the step's own cost, at most 1.5x its floor (as for online SGD).
    floor_bound = bound < 2.5
    ok = over_floor <= 1.5 if floor_bound else ratio >= 2
    target = "bound by drawing the inputs: step / floor <= 1.5" if floor_bound else ">= 2x"
    print(f"largebatch: one projected SGD step, d={D}, n_b=d^1.5={n_b}, p=k=1 (ratios in one run)")
    print(f"  full sampler vs plain NumPy step: {ratio:5.2f}x faster end to end (at most "
          f"{bound:.2f}x possible with this floor; target {target}) -> {verdict(ok)}")
    print(f"  arithmetic alone (same inputs in memory): {a_numpy / a_kernel:5.2f}x faster than NumPy")
    print(f"  step cost / floor (drawing the n_b d normals in chunks): {over_floor:5.2f}")
    print(f"  samples per second: library {n_b / t_lib:,.0f}, plain NumPy {n_b / t_np:,.0f} "
          f"(machine-dependent; the ratios are the result)")

    # 2. peak memory as n_b grows (plain NumPy only up to d^1.5: at d^2 it needs 8 GiB)
    print("  peak memory of one step, buffers included (tracemalloc) as n_b grows:")
    peaks = []
    for mu in (1.0, 1.25, 1.5, 2.0):
        p = lb.Params(d=D, mu=mu, gamma0=0.1, target="he2", activation="he2")
        tracemalloc.start()
        simmod._Runner(p, 0, "full", stop_at_recovery=False).advance(1)
        lib_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        np_text = "(not run: n_b d 8 bytes = %.0f MiB)" % (p.n_b * D * 8 / 2**20)
        if mu <= 1.5:
            tracemalloc.start()
            numpy_step(w0, ws, rng, p.n_b, p.gamma)
            np_text = f"{tracemalloc.get_traced_memory()[1] / 2**20:8.1f} MiB"
            tracemalloc.stop()
        peaks.append(lib_peak)
        print(f"    n_b = d^{mu:<4} = {p.n_b:>8}: library {lib_peak / 2**20:6.2f} MiB, plain NumPy {np_text}")
    flat = max(peaks) / min(peaks)
    print(f"  library peak at n_b=d^2 / at n_b=d: {flat:.2f} (flat: <= 1.5) -> {verdict(flat <= 1.5)}")

    # 3. reduced sampler
    red = simmod._Runner(params, 0, "reduced", stop_at_recovery=False)
    red.advance(1)

    def reduced():
        red.advance(1)

    zeta = np.empty((n_b, params.k + params.p))

    def red_floor():
        rng.standard_normal(out=zeta)
        rng.standard_normal((params.p, D))

    t_red, t_full, t_red_floor = best_of([reduced, library, red_floor], repeats=REPEATS)
    print(f"  reduced sampler (the same chain in law; its one-step moments z-tested against the full sampler): "
          f"{t_full / t_red:,.0f}x the full sampler's steps per second, "
          f"{t_np / t_red:,.0f}x the plain-NumPy step's; step cost / its floor (the {n_b * 2 + D:,} normals "
          f"it draws): {t_red / t_red_floor:.2f}")

    # 4. lowering the floor: float32 draws, and two threads with per-chunk generators
    chunk32 = np.empty(chunk.shape, np.float32)
    n_chunks = n_b // len(chunk)
    chunks2 = np.empty((2,) + chunk.shape)
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence(2).spawn(n_chunks)]
    pool = ThreadPoolExecutor(2)

    def floor32():
        for _ in range(n_chunks):
            rng.standard_normal(out=chunk32, dtype=np.float32)

    def floor_threads():
        def work(t):
            for c in range(t, n_chunks, 2):
                gens[c].standard_normal(out=chunks2[t])
        list(pool.map(work, range(2)))

    f64, f32, f2 = best_of([floor, floor32, floor_threads], repeats=REPEATS)
    pool.shutdown()
    print(f"  floor options (same {n_b * D:,} normals; cores here: {os.cpu_count()}, shared): float32 draws "
          f"{f64 / f32:.2f}x faster, two threads {f64 / f2:.2f}x faster than one float64 thread; with the "
          f"faster one the end-to-end ratio could reach at most {t_np / min(f32, f2):.2f}x")


if __name__ == "__main__":
    main()
