"""CUDA kernels of the dense SGD student (numba.cuda): arithmetic only, no checks.

One thread block trains one run. Thread r owns hidden unit r, i.e. column r of the
student matrix W (input i, hidden r), so a sample's forward pass and its gradient
need no communication between threads except the two sums over hidden units (the
student's and the teacher's outputs), done as tree reductions in shared memory.
P sample lanes of N threads each split a mini-batch, so that a run's sequential
work per step is about m / P samples. The block keeps W in shared memory for a
whole launch; a launch runs many steps.

Layouts (R runs, N inputs = N hidden units <= NMAX):

- ``W`` (R, N, N): W[run, i, r], as :func:`tsdyn.sparse.sgd` stores it;
- the teacher of each run as row lists of W*^T (see ``_kernels.py``):
  ``t_idx`` (R, N, D), ``t_w`` (R, N, D);
- ``X`` (R, n, N): given inputs (tests), sample s of run ``run`` at X[run, s];
  with ``use_X`` false the inputs are drawn on the device from the xoroshiro128+
  generators ``states[(run P + p) N + r]`` (input r of the samples of lane p).

The arithmetic is that of ``_kernels.sgd_steps`` and ``_kernels.dense_loss``;
only the order of the sums over hidden units differs (rounding).
"""

import math

from numba import cuda, float64, int64
from numba.cuda.random import xoroshiro128p_normal_float64

NMAX = 64  # largest N: shared memory holds W (NMAX^2 doubles = 32 kB) per block
PMAX = 8  # most sample lanes per block (block of N x P threads; shared memory 32 + 1.5 P kB)

_SQRT_HALF = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@cuda.jit(device=True)
def _phi(x):
    """phi(x) = erf(x / sqrt 2) (eq. 7)."""
    return math.erf(x * _SQRT_HALF)


@cuda.jit(device=True)
def _dphi(x):
    """phi'(x) = sqrt(2 / pi) exp(-x^2 / 2)."""
    return _SQRT_2_OVER_PI * math.exp(-0.5 * x * x)


@cuda.jit(device=True)
def _normal(states, gen):
    """A standard normal from generator ``gen``: numba's xoroshiro128+ Box-Muller.

    It builds each normal from two float32 uniforms, so a draw carries about 1e-7 relative
    precision. A zero uniform (chance 2^-53 per draw) would give an infinite input, which
    the run would record as a divergence: it is drawn again instead.
    """
    z = xoroshiro128p_normal_float64(states, gen)
    while not math.isfinite(z):
        z = xoroshiro128p_normal_float64(states, gen)
    return z


@cuda.jit
def normals(states, out):
    """out[g, k] = the k-th draw of generator g (one thread per generator), as sgd_steps draws."""
    g = cuda.grid(1)
    if g < out.shape[0]:
        for k in range(out.shape[1]):
            out[g, k] = _normal(states, g)


@cuda.jit(device=True)
def _row_sums(a, b, p, r, n):
    """In place, for every lane p: a[p, 0] = sum a[p, :n], b[p, 0] = sum b[p, :n] (tree reduction).

    The caller has written a[p, r], b[p, r] and synchronised; returns synchronised.
    """
    stride = 1
    while stride < n:
        stride *= 2
    stride //= 2
    while stride > 0:
        if r < stride and r + stride < n:
            a[p, r] += a[p, r + stride]
            b[p, r] += b[p, r + stride]
        cuda.syncthreads()
        stride //= 2


@cuda.jit
def sgd_steps(W, t_idx, t_w, m, eta, t_scale, s_scale, q0, q1, states, X, use_X, fail):
    """Steps q0 <= q < q1 of mini-batch SGD (eq. 5) for every run not yet failed.

    Block ``run`` has N x P threads: thread (r, p) is hidden unit r in sample lane p.
    Each step the lanes share the run's ``m[run]`` fresh samples (lane p takes samples
    p, p + P, ...), label them with the run's teacher (eq. 7, scale ``t_scale``) and
    accumulate the gradient of 1/2 sum_s (y_hat_s - y_s)^2 in the thread's column; the
    lanes then apply W <- W - eta[run] grad one after the other. A step that leaves a
    non-finite weight sets ``fail[run]`` to its index q and ends the run (W stays as
    that step left it). Lane p of run ``run`` draws from ``states[(run P + p) N + r]``.
    """
    run = cuda.blockIdx.x
    r = cuda.threadIdx.x
    p = cuda.threadIdx.y
    P = cuda.blockDim.y
    N = W.shape[1]
    D = t_idx.shape[2]
    if fail[run] >= 0:
        return
    Ws = cuda.shared.array((NMAX, NMAX), float64)
    xs = cuda.shared.array((PMAX, NMAX), float64)
    sum_t = cuda.shared.array((PMAX, NMAX), float64)
    sum_s = cuda.shared.array((PMAX, NMAX), float64)
    bad = cuda.shared.array(1, int64)
    g = cuda.local.array(NMAX, float64)
    if p == 0:
        for i in range(N):
            Ws[i, r] = W[run, i, r]
    mr = m[run]
    step = eta[run]
    n_iter = (mr + P - 1) // P
    gen = (run * P + p) * N + r
    cuda.syncthreads()
    for q in range(q0, q1):
        for i in range(N):
            g[i] = 0.0
        for j in range(n_iter):
            b = j * P + p
            live = b < mr
            if not live:
                xs[p, r] = 0.0
            elif use_X:
                xs[p, r] = X[run, q * mr + b, r]
            else:
                xs[p, r] = _normal(states, gen)
            cuda.syncthreads()
            ht = 0.0
            for k in range(D):
                ht += t_w[run, r, k] * xs[p, t_idx[run, r, k]]
            h = 0.0
            for i in range(N):
                h += Ws[i, r] * xs[p, i]
            h *= s_scale
            sum_t[p, r] = _phi(t_scale * ht)
            sum_s[p, r] = _phi(h)
            cuda.syncthreads()
            _row_sums(sum_s, sum_t, p, r, N)
            if live:
                c = (sum_s[p, 0] - sum_t[p, 0]) / N * _dphi(h) * s_scale / N
                for i in range(N):
                    g[i] += xs[p, i] * c
            cuda.syncthreads()  # xs and the sums are rewritten by the next sample
        if r == 0 and p == 0:
            bad[0] = 0
        for lane in range(P):
            if p == lane:
                for i in range(N):
                    Ws[i, r] -= step * g[i]
            cuda.syncthreads()
        if p == 0:
            for i in range(N):
                if not math.isfinite(Ws[i, r]):
                    bad[0] = 1
        cuda.syncthreads()
        if bad[0] != 0:
            if r == 0 and p == 0:
                fail[run] = q
            break
    if p == 0:
        for i in range(N):
            W[run, i, r] = Ws[i, r]


@cuda.jit
def val_mse(W, X, Y, s_scale, out):
    """out[run] = mean over samples s of 1/2 (y_hat_s - Y[run, s])^2 for the student W[run]."""
    run = cuda.blockIdx.x
    r = cuda.threadIdx.x
    N = W.shape[1]
    Ws = cuda.shared.array((NMAX, NMAX), float64)
    xs = cuda.shared.array(NMAX, float64)
    sum_s = cuda.shared.array((1, NMAX), float64)
    unused = cuda.shared.array((1, NMAX), float64)
    for i in range(N):
        Ws[i, r] = W[run, i, r]
    total = 0.0
    n = X.shape[1]
    for s in range(n):
        xs[r] = X[run, s, r]
        cuda.syncthreads()
        h = 0.0
        for i in range(N):
            h += Ws[i, r] * xs[i]
        sum_s[0, r] = _phi(s_scale * h)
        unused[0, r] = 0.0
        cuda.syncthreads()
        _row_sums(sum_s, unused, 0, r, N)
        if r == 0:
            e = sum_s[0, 0] / N - Y[run, s]
            total += e * e
        cuda.syncthreads()
    if r == 0:
        out[run] = 0.5 * total / n
