"""The solver's numba iteration against a plain NumPy reference; its random numbers."""

import sys
import tracemalloc

import numpy as np
import pytest
from scipy import stats

import tsdyn.dmft.solve  # noqa: F401  (the module, not the function the package exports)
from tsdyn import dmft
from tsdyn.dmft import _kernels, _rng
from tsdyn.dmft.model import codes

solve_mod = sys.modules["tsdyn.dmft.solve"]


def _reference(params, samples, kern, n_resp, dt):
    """One iteration in NumPy (vectorised over samples, loops over time), logistic loss."""
    c, y, h0, th0, S, Z = samples
    m, lamhat, MC, MR = kern
    n_t, N = S.shape
    D, lam, sD = params.Delta, params.lam, np.sqrt(params.Delta)
    Lc = _kernels.cholesky_shifted(MC, 1e-10)
    XI = Lc @ Z
    theta = np.empty((n_t, N))
    theta[0] = th0
    A1, A2, acc, r2 = np.empty((n_t, N)), np.empty((n_t, N)), np.empty(n_t), np.empty(n_t)
    r2_batch = np.empty(n_t)
    for k in range(n_t):
        r = c * m[k] + sD * (m[k] * h0 + theta[k])
        v = y * r
        sm = 1.0 / (1.0 + np.exp(v))  # sigma(-v)
        A1[k], A2[k] = S[k] * (-sm * y), S[k] * sm * (1 - sm)
        acc[k], r2[k], r2_batch[k] = np.count_nonzero(v > 0), r @ r, (S[k] * r) @ r
        if k + 1 < n_t:
            theta[k + 1] = ((1 - dt * (lam + lamhat[k])) * theta[k] - dt * sD * A1[k]
                            + dt * XI[k] + dt * dt * MR[k, :k] @ theta[:k])
    resp = np.zeros((n_t, n_t))
    B = A2[:, :n_resp]
    for j in range(n_t - 1):
        chi = np.zeros((n_t, n_resp))
        chi[j + 1] = 1.0
        for k in range(j + 1, n_t):
            resp[k, j] = (B[k] * chi[k] * B[j]).sum()
            if k + 1 < n_t:
                chi[k + 1] = chi[k] * (1 - dt * (lam + lamhat[k] + D * B[k])) \
                    + dt * dt * MR[k, j + 1:k] @ chi[j + 1:k]
    return dict(MC=np.tril(A1 @ A1.T), l2=A2.sum(1), acc=acc, proj=A1 @ (c + sD * h0), r2=r2,
                r2_batch=r2_batch, resp=resp)


def _kernels_for(n_t, rng):
    m = 0.3 * np.tanh(np.linspace(0, 2, n_t))
    lamhat = 0.2 + 0.05 * rng.random(n_t)
    G = rng.standard_normal((n_t, n_t)) / n_t
    MC = G @ G.T + 0.02 * np.eye(n_t)
    MR = np.tril(0.3 * rng.standard_normal((n_t, n_t)), -1)
    return m, lamhat, MC, MR


def _numba(params, keys, N, n_resp, kern, dt, chunk, resp_chunk, want_loss=False, groups=None,
           kernel=_kernels.iteration, closed=False):
    """One iteration; ``closed``: the closed-form kernels (``kernel`` then defaults to
    iteration_closed, resp_chunk is unused)."""
    n_t = len(kern[0])
    loss, model = codes(params)
    p01, p10 = params.switch_probabilities(dt)
    out = dict(MC=np.empty((n_t, n_t)), resp=np.empty((n_t, n_t)))
    sums = [np.empty(n_t) for _ in range(5)]
    m, lamhat, MC, MR = kern
    if closed:
        work = _kernels.workspace_closed(n_t, chunk, groups)
        kernel = _kernels.iteration_closed if kernel is _kernels.iteration else kernel
    else:
        work = _kernels.workspace(n_t, chunk, resp_chunk, n_resp, groups)
    kernel(keys, N, n_resp, work, model, loss, params.rho,
                       params.L, params.Delta, params.R0, params.b, p01, p10, params.lam, dt,
                       _kernels.cholesky_shifted(MC, 1e-10), m, lamhat, MR, want_loss,
                       out["MC"], *sums, out["resp"])
    out.update(l2=sums[0], loss=sums[1], acc=sums[2], proj=sums[3], r2=sums[4])
    return out


@pytest.mark.parametrize("chunk, resp_chunk", [(128, 1024), (37, 50)])
def test_iteration_matches_numpy_reference(chunk, resp_chunk):
    """The blocked, chunked numba iteration (n_t = 23: blocks of four with a remainder;
    chunks of 37 leave a partial last chunk, response batches of 50 straddle them) equals
    the straightforward NumPy iteration on the same samples up to float rounding (1e-10
    relative)."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.1, lam=0.05)
    n_t, N, n_resp, dt = 23, 300, 200, 0.2
    kern = _kernels_for(n_t, np.random.default_rng(0))
    ss = np.random.SeedSequence(4)
    ref = _reference(p, solve_mod._effective_samples(p, N, n_t, dt, ss), kern, n_resp, dt)
    got = _numba(p, solve_mod._keys(ss), N, n_resp, kern, dt, chunk, resp_chunk)
    for name, val in ref.items():
        scale = np.max(np.abs(val))
        assert scale > 0, name
        if name != "r2_batch":
            np.testing.assert_allclose(got[name], val, rtol=0, atol=1e-10 * scale, err_msg=name)


@pytest.mark.parametrize("chunk, b", [(128, 0.3), (37, 0.3), (64, 0.1), (64, 1.0)])
def test_closed_form_iteration_matches_numpy_reference(chunk, b):
    """The closed-form iteration (theta through the bulk response R and propagator P at the
    in-batch steps only, or at every step in the final pass; chi by the Dyson equation
    restricted to the in-batch steps) equals the step-by-step NumPy integration of the
    process and of every impulse response on the same samples (chunks of 37 leave a
    partial last chunk and straddle the n_resp = 200 response samples; b = 1 puts every
    step in the batch). Not bit for bit: the closed form sums the same terms in another
    order and through the products in R and Q = dt R Lc, so the difference is float
    rounding, a few ulps per term times the n_t = 23 terms and their O(1) growth through
    the random kernels below: 1e-10 relative to each output's largest entry, as for the
    step-by-step kernel above (machine epsilon is 2.2e-16; measured differences below
    1e-15)."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=b, eta=0.2, R0=0.1, lam=0.05)
    n_t, N, n_resp, dt = 23, 300, 200, 0.2
    kern = _kernels_for(n_t, np.random.default_rng(0))
    ss = np.random.SeedSequence(4)
    ref = _reference(p, solve_mod._effective_samples(p, N, n_t, dt, ss), kern, n_resp, dt)
    got = _numba(p, solve_mod._keys(ss), N, n_resp, kern, dt, chunk, None, closed=True)
    full = _numba(p, solve_mod._keys(ss), N, n_resp, kern, dt, chunk, None, want_loss=True,
                  closed=True)
    # iterations: r^2 over the in-batch samples only, no correctness; final pass: all
    got["r2_batch"], got["r2"], got["acc"] = got.pop("r2"), full["r2"], full["acc"]
    for name, val in ref.items():
        scale = np.max(np.abs(val))
        assert scale > 0, name
        np.testing.assert_allclose(got[name], val, rtol=0, atol=1e-10 * scale, err_msg=name)
        if name != "r2_batch":
            np.testing.assert_allclose(full[name], val, rtol=0, atol=1e-10 * scale, err_msg=name)
    assert np.all(got["loss"] == 0) and np.all(full["loss"] > 0)


@pytest.mark.parametrize("closed", [False, True])
def test_iteration_does_not_depend_on_chunking_and_is_deterministic(closed):
    """Counter-based samples: the chunk sizes change only the order of the sums."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.4, tau=1.0, eta=0.1, R0=0.1)
    kern = _kernels_for(17, np.random.default_rng(1))
    keys = solve_mod._keys(np.random.SeedSequence(2))
    a = _numba(p, keys, 250, 100, kern, 0.1, 128, 1024, want_loss=True, closed=closed)
    b = _numba(p, keys, 250, 100, kern, 0.1, 128, 1024, want_loss=True, closed=closed)
    c = _numba(p, keys, 250, 100, kern, 0.1, 50, 30, want_loss=True, closed=closed)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
        np.testing.assert_allclose(c[name], a[name], rtol=0, atol=1e-12 * np.max(np.abs(a[name])))
    assert np.all(a["loss"] > 0)


@pytest.mark.parametrize("closed", [False, True])
def test_iteration_is_bit_identical_for_any_number_of_threads(closed):
    """The samples are split into a fixed number of groups with their own partial sums,
    added in group order: the serial driver and the threaded one on 1 or 2 threads give the
    same bits (also through solve); a different number of groups only changes the order of
    the sums (float rounding)."""
    import numba

    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.1)
    kern = _kernels_for(19, np.random.default_rng(3))
    keys = solve_mod._keys(np.random.SeedSequence(5))
    args = (p, keys, 700, 300, kern, 0.2, 64, 100)
    serial = _numba(*args, want_loss=True, closed=closed)
    threaded = _kernels.iteration_closed_threads if closed else _kernels.iteration_threads
    before = numba.get_num_threads()
    try:
        runs = []
        for th in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(th)
            runs.append(_numba(*args, want_loss=True, kernel=threaded, closed=closed))
    finally:
        numba.set_num_threads(before)
    one_group = _numba(*args, want_loss=True, groups=1, closed=closed)
    for name in serial:
        for r in runs:
            np.testing.assert_array_equal(r[name], serial[name], err_msg=name)
        np.testing.assert_allclose(one_group[name], serial[name], rtol=0,
                                   atol=1e-12 * np.max(np.abs(serial[name])), err_msg=name)
    # solve dispatches on b: the closed form for b < 1, step by step for b = 1
    ps = p if closed else dmft.Params(alpha=2.0, Delta=0.5, b=1.0, eta=0.2, R0=0.1)
    a = dmft.solve(ps, 3.0, n_samples=600, n_resp=200)
    b = dmft.solve(ps, 3.0, n_samples=600, n_resp=200, threads=2)
    for v in ("m", "C_diag", "train_loss", "M_R"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
    assert numba.get_num_threads() == before


def test_counter_normals_are_standard_normal():
    """2e6 ziggurat normals: KS test and moments, each at about 4 standard errors
    (mean 1/sqrt(n), variance sqrt(2/n), kurtosis excess sqrt(24/n)); the tail beyond
    the ziggurat's base r = 3.654 (drawn by the slow path) at 4 binomial errors."""
    n = 2_000_000
    z = np.empty(n)
    _rng.fill_normals(np.uint64(12345), 0, z)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 4 / np.sqrt(n)
    assert abs(z.var() - 1) < 4 * np.sqrt(2 / n)
    assert abs(stats.kurtosis(z)) < 4 * np.sqrt(24 / n)
    p_tail = 2 * stats.norm.sf(_rng.ZIG_R)
    assert abs(np.mean(np.abs(z) > _rng.ZIG_R) - p_tail) < 4 * np.sqrt(p_tail / n)
    # a pure function of (key, index): same numbers again, different key different numbers
    z2, z3 = np.empty(1000), np.empty(1000)
    _rng.fill_normals(np.uint64(12345), 500, z2)
    _rng.fill_normals(np.uint64(12346), 500, z3)
    np.testing.assert_array_equal(z2, z[500:1500])
    assert abs(np.corrcoef(z2, z3)[0, 1]) < 4 / np.sqrt(1000)


@pytest.mark.parametrize("b, tau, dt", [(0.3, 2.0, 0.1), (0.2, None, 0.1)])
def test_solver_batch_paths_have_mean_b_and_stated_correlation(b, tau, dt):
    """The effective samples' batch indicators (counter-based chain): <s> = b and
    <s_k s_k+l> - b^2 = b(1-b)(1 - dt/(b tau))^l (derivation E3); 4 standard errors from
    the spread over the independent samples."""
    p = dmft.Params(alpha=1.0, Delta=1.0, b=b, tau=tau, eta=0.1)
    S = solve_mod._effective_samples(p, 4000, 200, dt, np.random.SeedSequence(3))[4].astype(float)
    per = S.mean(axis=0)
    assert abs(per.mean() - b) < 4 * per.std(ddof=1) / np.sqrt(S.shape[1])
    x = S - b
    decay = 1.0 - dt / (b * p.tau_eff)
    for lag in (1, 3, 10):
        prod = (x[:-lag] * x[lag:]).mean(axis=0)
        assert abs(prod.mean() - b * (1 - b) * decay ** lag) < 4 * prod.std(ddof=1) / np.sqrt(len(prod))


def test_solver_memory_does_not_grow_with_samples():
    """The iteration never stores per-sample paths: the peak memory of a solve (NumPy
    allocations, including the chunk buffers handed to the kernels) is the same for 300 and
    4000 effective samples (both above one chunk), up to 10% (allocator noise)."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
    dmft.solve(p, 4.0, n_samples=200, tol=1e-3, method="iterate")  # compile outside the measurement
    peaks = []
    assert solve_mod.CHUNK <= 300
    for n in (300, 4000):
        tracemalloc.start()
        dmft.solve(p, 16.0, n_samples=n, n_resp=100, tol=1e-3, method="iterate")
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.1 * peaks[0], peaks


def test_march_memory_is_the_sample_paths():
    """The march keeps every sample's normals and in-batch forces (O(N n_t)): its peak over
    the iteration's grows by about 4000 - 300 samples x n_t x (8 + 8 + 4 + 1) bytes (Z, F,
    B, S), within 20% (the response buffers and allocator noise are the rest)."""
    p = dmft.Params(alpha=2.0, Delta=0.5, b=0.3, eta=0.2, R0=0.01)
    dmft.solve(p, 4.0, n_samples=200)  # compile outside the measurement
    peaks = []
    for n in (300, 4000):
        tracemalloc.start()
        dmft.solve(p, 16.0, n_samples=n, n_resp=100)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    n_t = 81
    expected = (4000 - 300) * n_t * 21
    assert abs((peaks[1] - peaks[0]) - expected) < 0.2 * expected, (peaks, expected)


@pytest.mark.parametrize("b", [0.3, 1.0])
def test_drawn_samples_are_the_counter_functions_bit_for_bit(b):
    """draw_samples (row-wise, the ziggurat's fast path vectorised and the rejections
    redrawn) gives exactly Z[k, q] = normal(key_noise, (a << 32) + k) and the chain
    moved by uniform(key_batch, (a << 32) + k), sample a = a0 + q: the definitions of
    the counter-based generator, so the faster kernel changes no number."""
    n_t, a0, nc = 40, 700, 300  # 12000 normals: ~180 go through the slow path
    keys = np.array([5, 6, 7], np.uint64)
    p01, p10 = 0.2, 0.35
    c, y, h0, th0 = (np.empty(nc) for _ in range(4))
    S, Z = np.empty((n_t, nc), np.int8), np.empty((n_t, nc))
    _kernels.draw_samples(keys, a0, nc, codes(dmft.Params(alpha=2.0, Delta=0.5))[1], 0.5, 0.5,
                          0.01, b, p01, p10, c, y, h0, th0, S, Z)
    col = np.empty(n_t)
    for q in range(nc):
        base = np.uint64(a0 + q) << np.uint64(32)
        _rng.fill_normals(keys[2], base, col)
        np.testing.assert_array_equal(Z[:, q], col)
        s = (1 if _rng.uniform(keys[1], base) < b else 0) if b < 1 else 1
        path = [s]
        for k in range(1, n_t):
            if b < 1:
                u = _rng.uniform(keys[1], base + np.uint64(k))
                s = (1 if u < p01 else 0) if s == 0 else (0 if u < p10 else 1)
            path.append(s)
        np.testing.assert_array_equal(S[:, q], path)
    assert np.isfinite(Z).all()
