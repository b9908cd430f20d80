"""Numba kernels of the sparse teacher-student models: arithmetic only, no checks, no RNG.

Layouts (N inputs = N hidden units, m samples):

- inputs ``X[k, s]``, shape (N, m): input k of sample s (samples contiguous, so a
  move touching one unit streams over one row);
- a sparse matrix with D non-zeros per row is stored row-wise as ``idx`` (N, D),
  the column of each non-zero, and ``w`` (N, D), its value. For the two-matrix
  network, ``in_idx[j]`` are the inputs of hidden unit j and ``out_idx[i]`` the
  hidden units of output i; ``hid_out[j], hid_slot[j]`` list, for hidden unit j,
  the outputs i it feeds and the slot of j in ``out_idx[i]``;
- the one-matrix network stores column r of W (the inputs of hidden unit r) as
  ``idx[r], w[r]``.

A greedy move changes one weight. Only the pre-activations it touches are
recomputed: one hidden unit and its d outputs for a first-layer weight of the
two-matrix network (O(d m)), one output for a second-layer weight (O(m)), one
hidden unit and the scalar output for the one-matrix network (O(m)). A sweep of
2 N d moves therefore costs O(N d^2 m), against O(N d m) per move, O(N^2 d^2 m)
per sweep, for re-evaluating the network from scratch.
"""

import math

import numpy as np

from .._jit import njit, njit_reduce

_SQRT_HALF = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@njit
def leaky(x, a):
    """LeakyReLU of eq. (6): x for x >= 0, a x otherwise."""
    return x if x >= 0.0 else a * x


@njit
def phi_erf(x):
    """phi(x) = erf(x / sqrt 2) (eq. 7)."""
    return math.erf(x * _SQRT_HALF)


@njit
def dphi_erf(x):
    """phi'(x) = sqrt(2 / pi) exp(-x^2 / 2)."""
    return _SQRT_2_OVER_PI * math.exp(-0.5 * x * x)


@njit
def proposal(old, ternary, bit):
    """New value of a weight: -old for +-1 weights; for weights in {-1, 0, 1}, one of the
    two other values, the first (bit = 0) or second (bit = 1) in increasing order."""
    if not ternary:
        return -old
    if old < -0.5:
        return 0.0 if bit == 0 else 1.0
    if old > 0.5:
        return -1.0 if bit == 0 else 0.0
    return -1.0 if bit == 0 else 1.0


# ----------------------------------------------------------------- two matrices

@njit_reduce
def sparse_layer(idx, w, X, H, A, a):
    """One sparse layer on the samples X: H = W X with W stored as rows of (column
    index ``idx``, weight ``w``), and A = LeakyReLU_a(H)."""
    n, D = idx.shape
    m = X.shape[1]
    for j in range(n):
        for s in range(m):
            H[j, s] = 0.0
        for t in range(D):
            wt = w[j, t]
            if wt != 0.0:
                k = idx[j, t]
                for s in range(m):
                    H[j, s] += wt * X[k, s]
        for s in range(m):
            A[j, s] = leaky(H[j, s], a)


@njit_reduce
def forward2(in_idx, in_w, out_idx, out_w, X, a, H, A, Z, O):
    """Two-matrix network (eq. 1/3) on the samples X (N, m): fills H = W_in X,
    A = phi(H), Z = W_out A, O = psi(Z), all (N, m)."""
    sparse_layer(in_idx, in_w, X, H, A, a)
    sparse_layer(out_idx, out_w, A, Z, O, a)


@njit_reduce
def loss2(O, Y):
    """Loss of eq. (2), 1/2 sum over samples and outputs of (O - Y)^2."""
    total = 0.0
    N, m = O.shape
    for i in range(N):
        for s in range(m):
            r = O[i, s] - Y[i, s]
            total += r * r
    return 0.5 * total


@njit_reduce
def delta_in(j, t, new, in_idx, in_w, out_w, hid_out, hid_slot, X, a, H, A, Z, O, Y,
             hbuf, abuf, dabuf, zbuf, obuf):
    """Change of the mini-batch loss (eq. 4) if first-layer weight (j, t) becomes ``new``.

    Recomputes hidden unit j and the outputs it feeds into the buffers (used by
    :func:`accept_in`). Cost O(d m).
    """
    m = X.shape[1]
    k = in_idx[j, t]
    step = new - in_w[j, t]
    for s in range(m):
        h = H[j, s] + step * X[k, s]
        hbuf[s] = h
        abuf[s] = leaky(h, a)
        dabuf[s] = abuf[s] - A[j, s]
    dl = 0.0
    for u in range(hid_out.shape[1]):
        i = hid_out[j, u]
        wo = out_w[i, hid_slot[j, u]]
        if wo == 0.0:
            continue
        for s in range(m):
            z = Z[i, s] + wo * dabuf[s]
            o = leaky(z, a)
            zbuf[u, s] = z
            obuf[u, s] = o
            r_new = o - Y[i, s]
            r_old = O[i, s] - Y[i, s]
            dl += (r_new - r_old) * (r_new + r_old)
    return 0.5 * dl


@njit
def accept_in(j, t, new, in_w, out_w, hid_out, hid_slot, H, A, Z, O, hbuf, abuf, zbuf, obuf):
    """Apply the move evaluated by :func:`delta_in`."""
    m = H.shape[1]
    in_w[j, t] = new
    for s in range(m):
        H[j, s] = hbuf[s]
        A[j, s] = abuf[s]
    for u in range(hid_out.shape[1]):
        i = hid_out[j, u]
        if out_w[i, hid_slot[j, u]] == 0.0:
            continue
        for s in range(m):
            Z[i, s] = zbuf[u, s]
            O[i, s] = obuf[u, s]


@njit_reduce
def delta_out(i, t, new, out_idx, out_w, a, A, Z, O, Y, zbuf, obuf):
    """Change of the mini-batch loss if second-layer weight (i, t) becomes ``new``. O(m)."""
    m = Z.shape[1]
    j = out_idx[i, t]
    step = new - out_w[i, t]
    dl = 0.0
    for s in range(m):
        z = Z[i, s] + step * A[j, s]
        o = leaky(z, a)
        zbuf[0, s] = z
        obuf[0, s] = o
        r_new = o - Y[i, s]
        r_old = O[i, s] - Y[i, s]
        dl += (r_new - r_old) * (r_new + r_old)
    return 0.5 * dl


@njit
def greedy2_sweeps(t_in_idx, t_in_w, t_out_idx, t_out_w,
                   in_idx, in_w, out_idx, out_w, hid_out, hid_slot,
                   X, order, bits, a, ternary, accepted, batch_loss, dl_log):
    """Greedy zero-temperature sweeps of the two-matrix student, in place (eq. 4).

    For each sweep b: the teacher labels the fresh mini-batch X[b] (N, m); the
    student's state on it is computed once; then the 2 N D weights are visited in
    the order ``order[b]`` (slots < N D are first-layer weights (j, t) = divmod(slot, D),
    the others second-layer), each move accepted iff it does not increase the
    mini-batch loss. ``accepted[b]`` counts the accepted moves and ``batch_loss[b]``
    is the mini-batch loss after the sweep. If ``dl_log`` has one row per sweep, the
    loss change of every attempted move is written there (tests).
    """
    n_sweeps, N, m = X.shape
    D = in_idx.shape[1]
    H = np.empty((N, m))
    A = np.empty((N, m))
    Z = np.empty((N, m))
    O = np.empty((N, m))
    Y = np.empty((N, m))
    TH = np.empty((N, m))
    TA = np.empty((N, m))
    TZ = np.empty((N, m))
    hbuf = np.empty(m)
    abuf = np.empty(m)
    dabuf = np.empty(m)
    zbuf = np.empty((D, m))
    obuf = np.empty((D, m))
    log = dl_log.shape[0] == n_sweeps
    for b in range(n_sweeps):
        Xb = X[b]
        forward2(t_in_idx, t_in_w, t_out_idx, t_out_w, Xb, a, TH, TA, TZ, Y)
        forward2(in_idx, in_w, out_idx, out_w, Xb, a, H, A, Z, O)
        n_acc = 0
        for q in range(order.shape[1]):
            slot = order[b, q]
            if slot < N * D:
                j, t = slot // D, slot % D
                new = proposal(in_w[j, t], ternary, bits[b, q])
                dl = delta_in(j, t, new, in_idx, in_w, out_w, hid_out, hid_slot, Xb, a,
                              H, A, Z, O, Y, hbuf, abuf, dabuf, zbuf, obuf)
                if dl <= 0.0:
                    accept_in(j, t, new, in_w, out_w, hid_out, hid_slot, H, A, Z, O,
                              hbuf, abuf, zbuf, obuf)
                    n_acc += 1
            else:
                i, t = (slot - N * D) // D, (slot - N * D) % D
                new = proposal(out_w[i, t], ternary, bits[b, q])
                dl = delta_out(i, t, new, out_idx, out_w, a, A, Z, O, Y, zbuf, obuf)
                if dl <= 0.0:
                    out_w[i, t] = new
                    for s in range(m):
                        Z[i, s] = zbuf[0, s]
                        O[i, s] = obuf[0, s]
                    n_acc += 1
            if log:
                dl_log[b, q] = dl
        accepted[b] = n_acc
        batch_loss[b] = loss2(O, Y)


# ------------------------------------------------------------------- one matrix

@njit_reduce
def forward1(idx, w, X, scale, H, P, O):
    """One-matrix network (eq. 7/8): H[r] = scale (W^T X)_r, P = phi(H) (N, m),
    O = (1/N) sum_r P[r] (m,)."""
    N, D = idx.shape
    m = X.shape[1]
    for s in range(m):
        O[s] = 0.0
    for r in range(N):
        for s in range(m):
            H[r, s] = 0.0
        for t in range(D):
            wt = w[r, t]
            k = idx[r, t]
            for s in range(m):
                H[r, s] += wt * X[k, s]
        for s in range(m):
            H[r, s] *= scale
            P[r, s] = phi_erf(H[r, s])
            O[s] += P[r, s]
    for s in range(m):
        O[s] /= N


@njit_reduce
def loss1(O, Y):
    """Loss of eq. (2) for a scalar output: 1/2 sum over samples of (O - Y)^2."""
    total = 0.0
    for s in range(O.shape[0]):
        r = O[s] - Y[s]
        total += r * r
    return 0.5 * total


@njit_reduce
def delta1(r, t, idx, w, X, scale, H, P, O, Y, hbuf, pbuf, obuf):
    """Change of the mini-batch loss if weight (r, t) (row idx[r, t] of column r of W)
    flips sign; the new field, activation and output go to the buffers. O(m)."""
    m = X.shape[1]
    N = H.shape[0]
    k = idx[r, t]
    step = -2.0 * w[r, t] * scale
    dl = 0.0
    for s in range(m):
        h = H[r, s] + step * X[k, s]
        p = phi_erf(h)
        o = O[s] + (p - P[r, s]) / N
        hbuf[s] = h
        pbuf[s] = p
        obuf[s] = o
        r_new = o - Y[s]
        r_old = O[s] - Y[s]
        dl += (r_new - r_old) * (r_new + r_old)
    return 0.5 * dl


@njit
def greedy1_sweeps(t_idx, t_w, idx, w, X, order, scale, accepted, batch_loss, dl_log):
    """Greedy sweeps of the one-matrix student, in place (eq. 4 with eqs. 7-8).

    As :func:`greedy2_sweeps`: each sweep b labels X[b] (N, m) with the teacher and
    visits the N D signs in ``order[b]`` (slot -> (r, t) = divmod(slot, D)), flipping
    a sign iff the mini-batch loss does not increase.
    """
    n_sweeps, N, m = X.shape
    D = idx.shape[1]
    H = np.empty((N, m))
    P = np.empty((N, m))
    O = np.empty(m)
    TH = np.empty((N, m))
    TP = np.empty((N, m))
    Y = np.empty(m)
    hbuf = np.empty(m)
    pbuf = np.empty(m)
    obuf = np.empty(m)
    log = dl_log.shape[0] == n_sweeps
    for b in range(n_sweeps):
        Xb = X[b]
        forward1(t_idx, t_w, Xb, scale, TH, TP, Y)
        forward1(idx, w, Xb, scale, H, P, O)
        n_acc = 0
        for q in range(order.shape[1]):
            slot = order[b, q]
            r, t = slot // D, slot % D
            dl = delta1(r, t, idx, w, Xb, scale, H, P, O, Y, hbuf, pbuf, obuf)
            if dl <= 0.0:
                w[r, t] = -w[r, t]
                for s in range(m):
                    H[r, s] = hbuf[s]
                    P[r, s] = pbuf[s]
                    O[s] = obuf[s]
                n_acc += 1
            if log:
                dl_log[b, q] = dl
        accepted[b] = n_acc
        batch_loss[b] = loss1(O, Y)


# -------------------------------------------------------------- dense SGD student

@njit_reduce
def teacher1_outputs(t_idx, t_w, X, scale, Y):
    """Labels of eq. (7) for samples stored row-wise, X (n, N) -> Y (n,)."""
    N, D = t_idx.shape
    for s in range(X.shape[0]):
        acc = 0.0
        for r in range(N):
            h = 0.0
            for t in range(D):
                h += t_w[r, t] * X[s, t_idx[r, t]]
            acc += phi_erf(scale * h)
        Y[s] = acc / N


@njit_reduce
def dense_loss(W, X, Y, scale):
    """Mean over samples of 1/2 (y_hat - y)^2 for the dense student, X (n, N)."""
    N = W.shape[0]
    h = np.empty(N)
    total = 0.0
    for s in range(X.shape[0]):
        for r in range(N):
            h[r] = 0.0
        for i in range(N):
            xi = X[s, i]
            for r in range(N):
                h[r] += W[i, r] * xi
        out = 0.0
        for r in range(N):
            out += phi_erf(scale * h[r])
        e = out / N - Y[s]
        total += e * e
    return 0.5 * total / X.shape[0]


@njit_reduce
def sgd_steps(W, X, Y, m, lr, scale, mean):
    """len(X) // m mini-batch SGD steps of the dense student (eq. 5), in place.

    W (N, N) real; X (steps * m, N) inputs, Y their teacher labels. The gradient of
    the mini-batch loss 1/2 sum_s (y_hat_s - y_s)^2 (``mean``: divided by m) is
    dL/dW_ir = sum_s (y_hat_s - y_s) phi'(h_rs) scale x_is / N, with h_rs = scale (W^T x_s)_r.
    Returns the number of steps done: fewer if the weights became non-finite.
    """
    N = W.shape[0]
    n_steps = X.shape[0] // m
    h = np.empty(N)
    c = np.empty(N)
    G = np.empty((N, N))
    step_size = lr / m if mean else lr
    for q in range(n_steps):
        for i in range(N):
            for r in range(N):
                G[i, r] = 0.0
        for b in range(m):
            s = q * m + b
            for r in range(N):
                h[r] = 0.0
            for i in range(N):
                xi = X[s, i]
                for r in range(N):
                    h[r] += W[i, r] * xi
            out = 0.0
            for r in range(N):
                h[r] *= scale
                out += phi_erf(h[r])
            e = out / N - Y[s]
            for r in range(N):
                c[r] = e * dphi_erf(h[r]) * scale / N
            for i in range(N):
                xi = X[s, i]
                for r in range(N):
                    G[i, r] += xi * c[r]
        finite = True
        for i in range(N):
            for r in range(N):
                W[i, r] -= step_size * G[i, r]
                if not math.isfinite(W[i, r]):
                    finite = False
        if not finite:
            return q
    return n_steps


# ---------------------------------------------- population gradient descent (theory)

_TWO_OVER_PI = 2.0 / math.pi


@njit_reduce
def population_loss_grad(W, Wt, s, st, G):
    """Population loss E[1/2 (y_hat - y)^2] of the dense erf student and its gradient (into G).

    y_hat = (1/N) sum_r phi(s (W^T x)_r), y the same with (Wt, st), x ~ N(0, I),
    phi(t) = erf(t / sqrt 2). With F(a, b, c) = (2/pi) arcsin(c / sqrt((1+a)(1+b))) =
    E[phi(u) phi(v)] for (u, v) of variances a, b and covariance c,
    L = (1/2N^2) [sum_rs F(Q_rr, Q_ss, Q_rs) - 2 sum_rs F(Q_rr, T_ss, R_rs) + sum_rs F(T_rr, T_ss, T_rs)],
    Q = s^2 W^T W, R = s st W^T Wt, T = st^2 Wt^T Wt. dF/dc = (2/pi) / sqrt((1+a)(1+b) - c^2)
    and dF/da = -c / (2 (1+a)) dF/dc give G = dL/dW. Returns L.
    """
    N = W.shape[0]
    Q = np.zeros((N, N))
    R = np.zeros((N, N))
    T = np.zeros((N, N))
    for r in range(N):
        for u in range(N):
            q = 0.0
            p = 0.0
            t = 0.0
            for i in range(N):
                q += W[i, r] * W[i, u]
                p += W[i, r] * Wt[i, u]
                t += Wt[i, r] * Wt[i, u]
            Q[r, u] = s * s * q
            R[r, u] = s * st * p
            T[r, u] = st * st * t
    # coefficient matrices: G = W (2 s^2 CQ) + Wt (s st CR^T) pattern, built per column r
    CQ = np.zeros((N, N))   # multiplies s^2 W[:, u] in column r (u != r: off-diagonal; u == r: diagonal)
    CR = np.zeros((N, N))   # multiplies s st Wt[:, u] in column r
    total = 0.0
    for r in range(N):
        a = Q[r, r]
        diag = 0.0
        for u in range(N):
            b = Q[u, u]
            c = Q[r, u]
            if u == r:
                total += _TWO_OVER_PI * math.asin(a / (1.0 + a))
                diag += _TWO_OVER_PI / ((1.0 + a) * math.sqrt(1.0 + 2.0 * a))
            else:
                det = (1.0 + a) * (1.0 + b) - c * c
                total += _TWO_OVER_PI * math.asin(c / math.sqrt((1.0 + a) * (1.0 + b)))
                dc = _TWO_OVER_PI / math.sqrt(det)
                CQ[r, u] += 2.0 * dc
                diag += 2.0 * (-c / (2.0 * (1.0 + a))) * dc
            bt = T[u, u]
            ct = R[r, u]
            det2 = (1.0 + a) * (1.0 + bt) - ct * ct
            total -= 2.0 * _TWO_OVER_PI * math.asin(ct / math.sqrt((1.0 + a) * (1.0 + bt)))
            dc2 = _TWO_OVER_PI / math.sqrt(det2)
            CR[r, u] -= 2.0 * dc2
            diag -= 2.0 * (-ct / (2.0 * (1.0 + a))) * dc2
            bb = T[r, r]
            total += _TWO_OVER_PI * math.asin(T[r, u] / math.sqrt((1.0 + bb) * (1.0 + bt)))
        CQ[r, r] = 2.0 * diag   # d Q_rr / d W_ir = 2 s^2 W_ir
    norm = 1.0 / (2.0 * N * N)
    for i in range(N):
        for r in range(N):
            g = 0.0
            for u in range(N):
                g += s * s * CQ[r, u] * W[i, u] + s * st * CR[r, u] * Wt[i, u]
            G[i, r] = norm * g
    return norm * total


@njit
def population_gd(W, Wt, s, st, eta, max_steps, loss_stop, loss):
    """Gradient descent W <- W - eta grad L on the population loss, in place.

    ``loss[k]`` receives L before step k (k = 0 .. steps). Stops after the step whose
    result has L < ``loss_stop``, or when the weights become non-finite. Returns the
    number of steps done.
    """
    N = W.shape[0]
    G = np.empty((N, N))
    for k in range(max_steps):
        L = population_loss_grad(W, Wt, s, st, G)
        loss[k] = L
        if not math.isfinite(L):
            return k
        if L < loss_stop:
            return k
        for i in range(N):
            for r in range(N):
                W[i, r] -= eta * G[i, r]
    loss[max_steps] = population_loss_grad(W, Wt, s, st, G)
    return max_steps


# --- absorption runs: greedy sweeps that stop at the teacher (sparse.absorption) ---

@njit
def mismatches(w, target):
    """Number of entries where the student's row lists ``w`` (N, D) differ from ``target``,
    the teacher's values at the same positions of the student's support."""
    n = 0
    for j in range(w.shape[0]):
        for t in range(w.shape[1]):
            if w[j, t] != target[j, t]:
                n += 1
    return n


@njit
def greedy2_until_teacher(t_in_idx, t_in_w, t_out_idx, t_out_w, in_idx, in_w, out_idx, out_w,
                          hid_out, hid_slot, X, order, bits, a, ternary, target_in, target_out,
                          accepted, batch_loss):
    """Greedy sweeps of the two-matrix student (as :func:`._kernels.greedy2_sweeps`), in place,
    stopping after the first sweep that leaves the student equal to the teacher.

    Returns ``(done, wrong)``: the sweeps made (``X.shape[0]`` if the teacher was not reached)
    and the number of weights of the student's support that differ from the teacher's after
    the last of them (0 if and only if the run stopped at the teacher).
    """
    no_log = np.empty((0, 0))
    wrong = mismatches(in_w, target_in) + mismatches(out_w, target_out)
    for b in range(X.shape[0]):
        greedy2_sweeps(t_in_idx, t_in_w, t_out_idx, t_out_w, in_idx, in_w, out_idx, out_w, hid_out,
                       hid_slot, X[b:b + 1], order[b:b + 1], bits[b:b + 1], a, ternary,
                       accepted[b:b + 1], batch_loss[b:b + 1], no_log)
        wrong = mismatches(in_w, target_in) + mismatches(out_w, target_out)
        if wrong == 0:
            return b + 1, 0
    return X.shape[0], wrong
