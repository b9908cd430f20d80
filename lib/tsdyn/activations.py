"""Activation functions and their Gaussian integrals.

For jointly Gaussian local fields x = (x_1, ..., x_n) with zero mean and
covariance C, the order-parameter ODEs of two-layer networks need four kinds of
averages (Saad & Solla 1995, PRE 52, 4225; Goldt et al. 2020, SM sec. B):

    I2(a, b)       = < g(x_a) g(x_b) >
    I3(a, b, c)    = < g'(x_a) x_b g(x_c) >
    I4(a, b, c, d) = < g'(x_a) g'(x_b) g(x_c) g(x_d) >
    J2(a, b)       = < g'(x_a) g'(x_b) >

Closed forms are implemented for

- ``"erf"``: g(x) = erf(x / sqrt 2) (Saad & Solla's sigmoid, on the scale
  where g'(0) = sqrt(2/pi)); all four integrals;
- ``"linear"``: g(x) = x; all four integrals (moments of a Gaussian);
- ``"relu"``: g(x) = max(x, 0); I2 (the arc-cosine kernel), I3 and J2 in closed
  form. I4 is a Gaussian orthant moment E[x_c x_d 1{x_a, x_b, x_c, x_d > 0}];
  repeated Gaussian integration by parts reduces it to orthant probabilities of
  up to four variables, all closed-form except the four-variable one, which is a
  one-dimensional integral (Plackett's identity) done by Gauss-Legendre
  quadrature to ~1e-12.

The integrals are numba functions taking the activation code (``ERF``,
``LINEAR``, ``RELU``), the covariance matrix and indices into it, so the ODE
kernels can call them in their inner loops.
"""

import math

import numpy as np

from ._jit import njit

ERF, LINEAR, RELU = 0, 1, 2
NAMES = ("erf", "linear", "relu")
_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def code(name):
    """Integer code of the activation called ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"g (activation) must be one of {NAMES}; got {name!r}")
    return NAMES.index(name)


# --- the functions themselves, element-wise -------------------------------------


@njit
def g(act, x):
    """Activation g(x) for the activation code ``act``."""
    if act == ERF:
        return math.erf(x / _SQRT2)
    if act == LINEAR:
        return x
    return x if x > 0.0 else 0.0


@njit
def dg(act, x):
    """Derivative g'(x) (for ReLU, the step function with g'(0) = 0)."""
    if act == ERF:
        return _SQRT_2_OVER_PI * math.exp(-0.5 * x * x)
    if act == LINEAR:
        return 1.0
    return 1.0 if x > 0.0 else 0.0


# --- our own erf, with g' alongside -----------------------------------------------------
#
# numba's math.erf costs ~10 ns and a call; the overlap sampler evaluates eight per step.
# erf_g is g(x) = erf(x / sqrt 2) from our own piecewise fit, derived and documented in
# tsdyn._erf_fit (`python -m tsdyn._erf_fit` prints the tables below; tests/test_erf.py
# re-derives them and measures the error against an 80-digit reference, scipy and
# math.erf: a few ulp at most, as scipy's). For |x| < 2 (95% of unit Gaussian fields):
#   g(x) = x P(t), g'(x) = D(t), t = x^2 - 2, P = _ERF_SMALL, D = _DG_SMALL (degree 15);
# for 2 <= |x| < 8.5, with H(x) = erfc(x / sqrt 2) exp(x^2 / 2) on the interval
# 2 + i/2 <= |x| < 2.5 + i/2 a polynomial in |x| - (2.25 + i/2) (row i of _ERF_TAIL):
#   g(x) = sign(x) (1 - exp(-x^2 / 2) H(|x|)), g'(x) = sqrt(2/pi) exp(-x^2 / 2);
# beyond, g = sign(x) (the double nearest to erf there). All inline (no call), so
# that a kernel's loop keeps its registers. A kernel compiled with numba's cache does
# not see a change here (see tsdyn._jit): clear the caches after editing the tables.
_ERF_SMALL = (
    0.5958794452060241, -0.07558852971463607, 0.010000365746271044, -0.00110926357816002,
    0.00010310838009672539, -8.179327508699313e-06, 5.639048135895477e-07, -3.4316261457224337e-08,
    1.867204571717114e-09, -9.181643970097691e-11, 4.1168586373630975e-12, -1.6959267120901226e-13,
    6.4594598733981795e-15, -2.2880052197274952e-16, 7.683676177642382e-18,
    -2.3823261674080416e-19,
)
_DG_SMALL = (
    0.2935253263474798, -0.1467626631737399, 0.03669066579343499, -0.006115110965572496,
    0.0007643888706964892, -7.643888706965406e-05, 6.369907255950368e-06, -4.549933754188994e-07,
    2.843708582039104e-08, -1.579838104877404e-09, 7.89919816794646e-11, -3.5905433962038873e-12,
    1.4958338805470772e-13, -5.753411511248313e-15, 2.089543401782349e-16, -6.95152534952155e-18,
)
_ERF_TAIL = np.array([
    [0.3073038748476833, -0.10645084239557798, 0.03389473972881719, -0.010062559335247174,
     0.002813495305982502, -0.0007464389792628657, 0.00018900127702560078, -4.588373459566744e-05,
     1.0720053151307078e-05, -2.4180416398693276e-06, 5.3230033155001e-07, -1.1270467031308859e-07],
    [0.26144946820149423, -0.07889852324875622, 0.022239264633707522, -0.005913515168687091,
     0.001494274479913416, -0.0003608520697547312, 8.365521748699205e-05, -1.8685747580760305e-05,
     4.033589865615687e-06, -8.436656815414658e-07, 1.7258257984465743e-07, -3.409022142046059e-08],
    [0.2269041242585973, -0.06044615696242419, 0.015227057065359397, -0.0036527405000021354,
     0.0008389126100755434, -0.00018525490344093934, 3.9472363173728826e-05,
     -8.138532424828342e-06, 1.6277401101650934e-06, -3.1647211074397207e-07,
     6.029735083360951e-08, -1.1132738976683348e-08],
    [0.20007841927090642, -0.047590488536966326, 0.010807043628641372, -0.0023546916431870907,
     0.000494237491668314, -0.00010026020988239984, 1.9710284383644366e-05, -3.763806404072865e-06,
     6.994925903735722e-07, -1.2674039678041734e-07, 2.2545437028839088e-08,
     -3.898627750066255e-09],
    [0.17871863723934284, -0.03833035253565829, 0.007907319481397565, -0.0015747482465728899,
     0.000303659858364246, -5.683876970351035e-05, 1.034918128638095e-05, -1.8363928235965607e-06,
     3.1806091826741034e-07, -5.384629435869811e-08, 8.964869518369019e-09, -1.454984028681942e-09],
    [0.16135079834509872, -0.031468268663646416, 0.00593826109638912, -0.0010871761519327045,
     0.00019354359367665313, -3.356881639312771e-05, 5.681952671767549e-06, -9.399344879184095e-07,
     1.5215684349356958e-07, -2.4131396322884582e-08, 3.769461231100084e-09,
     -5.754154267400371e-10],
    [0.14697646170538575, -0.02625813684959019, 0.00456062162251862, -0.0007716244437891474,
     0.0001273983231561864, -2.0556649443580898e-05, 3.2459856107486573e-06, -5.02175011072047e-07,
     7.619540231676128e-08, -1.1349581767738336e-08, 1.667381978812909e-09,
     -2.3991206730253116e-10],
    [0.1348984627029174, -0.02221840026109045, 0.003571330600823641, -0.0005610831021181728,
     8.627569091094886e-05, -1.2999575875930577e-05, 1.9213549433992304e-06,
     -2.788264273530003e-07, 3.976268786335331e-08, -5.576631803452985e-09, 7.723424951067663e-10,
     -1.0496794667828375e-10],
    [0.12461697381672415, -0.01902847444833939, 0.0028445042573014816, -0.00041677428006837715,
     5.991625171849296e-05, -8.459541365506802e-06, 1.1740196999490988e-06, -1.602740370532299e-07,
     2.153829071281849e-08, -2.8510141820636064e-09, 3.730877886865567e-10,
     -4.7993447874864744e-11],
    [0.11576526344775999, -0.016469032530485407, 0.0022996469334917507, -0.00031547190980536305,
     4.255288557637034e-05, -5.647986432947338e-06, 7.381628601724712e-07, -9.505530510042055e-08,
     1.2067407537130537e-08, -1.5111133708982184e-09, 1.8725560727582755e-10,
     -2.2845319772208392e-11],
    [0.10806871881847108, -0.014386349368950065, 0.0018838429467915553, -0.00024282933490376272,
     3.0832567184810815e-05, -3.858644562764205e-06, 4.7623235134775777e-07,
     -5.7994288562523086e-08, 6.971702852800702e-09, -8.277002067904014e-10, 9.733021969365159e-11,
     -1.1283338616511391e-11],
    [0.10131796467039382, -0.012670334607313267, 0.0015614357318579977, -0.00018973589513792866,
     2.274563613475866e-05, -2.691443018703282e-06, 3.144921235704364e-07, -3.6304151902973694e-08,
     4.141859987235744e-09, -4.671849546919603e-10, 5.223575206746586e-11, -5.76484024000968e-12],
    [0.0953507814531017, -0.011240613814776293, 0.00130785874059864, -0.00015025973494583818,
     1.705398182386676e-05, -1.9128769797840073e-06, 2.1212445691013985e-07,
     -2.326431592709468e-08, 2.5242271370205705e-09, -2.710448570783926e-10,
     2.8870114245241216e-11, -3.0385333491198054e-12],
])
_ERF_SMALL_X, _ERF_TAIL_X0, _ERF_TAIL_STEPS, _ERF_ONE_X = 2.0, 2.0, 2.0, 8.5


@njit(inline="always")
def _poly15(c, t):
    """sum_i c[i] t^i for 16 coefficients: c[0] + t Q(t), Q by Estrin's scheme (a short
    dependency chain; the last step, one fused multiply-add onto the leading term, keeps
    the rounding near half an ulp of the result)."""
    t2 = t * t
    t4 = t2 * t2
    low = c[1] + c[2] * t + (c[3] + c[4] * t) * t2 + (c[5] + c[6] * t + (c[7] + c[8] * t) * t2) * t4
    high = c[9] + c[10] * t + (c[11] + c[12] * t) * t2 + (c[13] + c[14] * t + c[15] * t2) * t4
    return c[0] + t * (low + high * (t4 * t4))


@njit(inline="always")
def _erfc_scaled(ax):
    """H(ax) = erfc(ax / sqrt 2) exp(ax^2 / 2) for 2 <= ax < 8.5 (Horner on its interval)."""
    i = int((ax - _ERF_TAIL_X0) * _ERF_TAIL_STEPS)
    t = ax - (_ERF_TAIL_X0 + (i + 0.5) / _ERF_TAIL_STEPS)
    row = _ERF_TAIL[i]
    h = row[row.shape[0] - 1]
    for j in range(row.shape[0] - 2, -1, -1):
        h = h * t + row[j]
    return h


@njit(inline="always")
def erf_g(x):
    """g(x) = erf(x / sqrt 2) from our own fit (see the tables above); NaN stays NaN."""
    ax = abs(x)
    if ax < _ERF_SMALL_X:
        return x * _poly15(_ERF_SMALL, x * x - 2.0)
    if ax < _ERF_ONE_X:
        return math.copysign(1.0 - math.exp(-0.5 * x * x) * _erfc_scaled(ax), x)
    if ax >= _ERF_ONE_X:
        return math.copysign(1.0, x)
    return x


@njit(inline="always")
def erf_g_dg(x):
    """(g(x), g'(x)) for g(x) = erf(x / sqrt 2), from our own fit (see the tables above).

    For |x| < 2 both are polynomials in x^2 - 2, without exp; beyond, they share exp(-x^2/2).
    g' agrees with :func:`dg` to rounding (a few ulp), g is :func:`erf_g`.
    """
    ax = abs(x)
    if ax < _ERF_SMALL_X:
        t = x * x - 2.0
        return x * _poly15(_ERF_SMALL, t), _poly15(_DG_SMALL, t)
    e = math.exp(-0.5 * x * x)
    if ax < _ERF_ONE_X:
        return math.copysign(1.0 - e * _erfc_scaled(ax), x), _SQRT_2_OVER_PI * e
    if ax >= _ERF_ONE_X:
        return math.copysign(1.0, x), _SQRT_2_OVER_PI * e
    return x, x


@njit(inline="always")
def g_fit(act, x):
    """:func:`g`, with erf from our own fit (:func:`erf_g`): for kernels' inner loops."""
    if act == ERF:
        return erf_g(x)
    return g(act, x)


@njit(inline="always")
def g_dg_fit(act, x):
    """(g(x), g'(x)) as :func:`g` and :func:`dg`, with erf from our own fit (:func:`erf_g_dg`)."""
    if act == ERF:
        return erf_g_dg(x)
    return g(act, x), dg(act, x)

def apply(name, x):
    """Vectorised g(x) for an array ``x`` (convenience for plots and tests)."""
    act = code(name)
    return np.vectorize(lambda u: g(act, u), otypes=[float])(np.asarray(x, float))


def apply_derivative(name, x):
    """Vectorised g'(x) for an array ``x``."""
    act = code(name)
    return np.vectorize(lambda u: dg(act, u), otypes=[float])(np.asarray(x, float))


# --- Gaussian integrals ------------------------------------------------------------


@njit
def _clip_unit(x):
    return min(1.0, max(-1.0, x))


@njit
def _orthant2(c11, c12, c22):
    """P(x_1 > 0, x_2 > 0) for a centred bivariate Gaussian (Sheppard's formula)."""
    return 0.25 + math.asin(_clip_unit(c12 / math.sqrt(c11 * c22))) / (2.0 * math.pi)


@njit
def i2(act, C, a, b):
    """I2 = < g(x_a) g(x_b) >."""
    caa, cab, cbb = C[a, a], C[a, b], C[b, b]
    if act == ERF:
        return (2.0 / math.pi) * math.asin(cab / math.sqrt((1.0 + caa) * (1.0 + cbb)))
    if act == LINEAR:
        return cab
    # ReLU: arc-cosine kernel of degree one (Cho & Saul 2009).
    det = max(caa * cbb - cab * cab, 0.0)
    rho = _clip_unit(cab / math.sqrt(caa * cbb))
    return (math.sqrt(det) + cab * (math.pi - math.acos(rho))) / (2.0 * math.pi)


@njit
def i3(act, C, a, b, c):
    """I3 = < g'(x_a) x_b g(x_c) >."""
    caa, cab, cac, cbc, ccc = C[a, a], C[a, b], C[a, c], C[b, c], C[c, c]
    if act == ERF:
        lam3 = (1.0 + caa) * (1.0 + ccc) - cac * cac
        return (2.0 / math.pi) * (cbc * (1.0 + caa) - cab * cac) / ((1.0 + caa) * math.sqrt(lam3))
    if act == LINEAR:
        return cbc
    # ReLU, by Gaussian integration by parts over x_b:
    # <x_b h> = C_ba <d_a h> + C_bc <d_c h>, h = Theta(x_a) relu(x_c).
    det = max(caa * ccc - cac * cac, 0.0)
    boundary = cab * math.sqrt(det) / (2.0 * math.pi * caa)
    return boundary + cbc * _orthant2(caa, cac, ccc)


@njit
def i4(act, C, a, b, c, d):
    """I4 = < g'(x_a) g'(x_b) g(x_c) g(x_d) >."""
    if act == LINEAR:
        return C[c, d]
    if act == RELU:
        # g'(x) g(x) = g(x) and g(x)^2 = x^2 Theta(x): a moment over the orthant of
        # the distinct fields among a, b, c, d.
        idx = np.empty(4, np.int64)
        n = 0
        for u in (a, b, c, d):
            seen = False
            for q in range(n):
                seen = seen or idx[q] == u
            if not seen:
                idx[n] = u
                n += 1
        local = np.empty((n, n))  # work on the covariance of the distinct fields only
        for p in range(n):
            for q in range(n):
                local[p, q] = C[idx[p], idx[q]]
        lc = ld = 0
        for q in range(n):
            if idx[q] == c:
                lc = q
            if idx[q] == d:
                ld = q
        return _orthant_moment2(local, np.arange(n), lc, ld)
    # erf (Saad & Solla 1995, eq. (A8) in their notation, indices 1..4 = a, b, c, d).
    c11, c12, c13, c14 = C[a, a], C[a, b], C[a, c], C[a, d]
    c22, c23, c24 = C[b, b], C[b, c], C[b, d]
    c33, c34, c44 = C[c, c], C[c, d], C[d, d]
    lam4 = (1.0 + c11) * (1.0 + c22) - c12 * c12
    lam0 = (lam4 * c34 - c23 * c24 * (1.0 + c11) - c13 * c14 * (1.0 + c22)
            + c12 * c13 * c24 + c12 * c14 * c23)
    lam1 = (lam4 * (1.0 + c33) - c23 * c23 * (1.0 + c11) - c13 * c13 * (1.0 + c22)
            + 2.0 * c12 * c13 * c23)
    lam2 = (lam4 * (1.0 + c44) - c24 * c24 * (1.0 + c11) - c14 * c14 * (1.0 + c22)
            + 2.0 * c12 * c14 * c24)
    return (4.0 / (math.pi ** 2 * math.sqrt(lam4))) * math.asin(
        _clip_unit(lam0 / math.sqrt(lam1 * lam2)))


@njit
def j2(act, C, a, b):
    """J2 = < g'(x_a) g'(x_b) >."""
    caa, cab, cbb = C[a, a], C[a, b], C[b, b]
    if act == ERF:
        return (2.0 / math.pi) / math.sqrt((1.0 + caa) * (1.0 + cbb) - cab * cab)
    if act == LINEAR:
        return 1.0
    return _orthant2(caa, cab, cbb)


# --- Gaussian orthant moments (ReLU I4) ---------------------------------------------
#
# For centred Gaussian x with covariance C and a set S of indices, write
# P(S) = P(x_s > 0 for s in S), M1(S; j) = E[x_j 1_S] and M2(S; a, b) = E[x_a x_b 1_S]
# (j, a, b in S). Integration by parts, E[x_a h(x)] = sum_l C_al E[d_l h(x)], with
# d_l Theta(x_l) = delta(x_l), gives
#
#   M1(S; j)    = sum_{l in S} C_jl p_l(0) P(S - l | x_l = 0)
#   M2(S; a, b) = C_ab P(S) + sum_{l in S, l != b} C_al p_l(0) M1(S - l; b | x_l = 0)
#
# where p_l(0) = 1 / sqrt(2 pi C_ll) and "| x_l = 0" replaces C by its Schur
# complement (the conditional mean stays zero). Orthant probabilities of up to
# three variables are closed-form; four variables need one quadrature.

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)


@njit
def _condition(C, l):
    """Covariance of x given x_l = 0 (Schur complement; row and column l become 0)."""
    return C - np.outer(C[:, l], C[l, :]) / C[l, l]


@njit
def _without(idx, l):
    out = np.empty(len(idx) - 1, np.int64)
    q = 0
    for u in idx:
        if u != l:
            out[q] = u
            q += 1
    return out


@njit
def _density0(var):
    return 1.0 / math.sqrt(2.0 * math.pi * var)


@njit
def _orthant(C, idx):
    """P(x_s > 0 for s in idx), up to four variables."""
    n = len(idx)
    if n == 0:
        return 1.0
    if n == 1:
        return 0.5
    if n == 2:
        return _orthant2(C[idx[0], idx[0]], C[idx[0], idx[1]], C[idx[1], idx[1]])
    if n == 3:
        total = 0.125
        for p in range(3):
            for q in range(p + 1, 3):
                i, j = idx[p], idx[q]
                total += math.asin(_clip_unit(C[i, j] / math.sqrt(C[i, i] * C[j, j]))) / (4.0 * math.pi)
        return total
    return _orthant4(C, idx)


@njit
def _orthant4(C, idx):
    """Four-variable orthant probability by Plackett's identity.

    Along R(s) = I + s (R - I) from independent variables (P = 1/16) to the
    correlation matrix R, dP/d rho_ij = phi_2(0, 0; rho_ij) P(x_k, x_l > 0 | x_i = x_j = 0).
    With u = asin(s r_ij) each pair's term is a smooth integral over u in
    [0, asin r_ij], done by 24-point Gauss-Legendre quadrature.
    """
    R = np.empty((4, 4))
    for p in range(4):
        for q in range(4):
            R[p, q] = C[idx[p], idx[q]] / math.sqrt(C[idx[p], idx[p]] * C[idx[q], idx[q]])
    total = 1.0 / 16.0
    for i in range(4):
        for j in range(i + 1, 4):
            r = _clip_unit(R[i, j])
            if r == 0.0:
                continue
            k, l = [q for q in range(4) if q != i and q != j]
            half = 0.5 * math.asin(r)
            acc = 0.0
            for node, weight in zip(_GL_NODES, _GL_WEIGHTS):
                s = math.sin(half * (node + 1.0)) / r
                # covariance of (x_k, x_l) given x_i = x_j = 0 under R(s)
                a = s * R[i, j]
                det = 1.0 - a * a
                bki, bkj, bli, blj = s * R[k, i], s * R[k, j], s * R[l, i], s * R[l, j]
                ckk = 1.0 - (bki * bki - 2 * a * bki * bkj + bkj * bkj) / det
                cll = 1.0 - (bli * bli - 2 * a * bli * blj + blj * blj) / det
                ckl = s * R[k, l] - (bki * bli - a * (bki * blj + bkj * bli) + bkj * blj) / det
                acc += weight * _orthant2(ckk, ckl, cll)
            total += half * acc / (2.0 * math.pi)
    return total


@njit
def _orthant_moment1(C, idx, j):
    """E[x_j 1{x_s > 0 for s in idx}], j in idx."""
    total = 0.0
    for l in idx:
        if C[j, l] != 0.0:
            total += C[j, l] * _density0(C[l, l]) * _orthant(_condition(C, l), _without(idx, l))
    return total


@njit
def _orthant_moment2(C, idx, a, b):
    """E[x_a x_b 1{x_s > 0 for s in idx}], a and b in idx (a == b allowed)."""
    total = C[a, b] * _orthant(C, idx)
    for l in idx:
        if l != b and C[a, l] != 0.0:
            total += C[a, l] * _density0(C[l, l]) * _orthant_moment1(_condition(C, l), _without(idx, l), b)
    return total
