"""Hermite expansions of one-dimensional functions and the exponents built on them.

For x ~ N(0, 1) and the probabilists' Hermite polynomials He_k (He_0 = 1,
He_1 = x, He_{k+1} = x He_k - k He_{k-1}), which satisfy E[He_j He_k] = k! delta_jk,
a square-integrable f has the expansion f = sum_k c_k He_k / sqrt(k!) with the
*normalised* coefficients

    c_k = E[f(x) He_k(x)] / sqrt(k!),        sum_k c_k^2 = E[f(x)^2].

The information exponent of a single-index target h* is the index of its first
non-zero coefficient beyond the mean (Ben Arous, Gheissari & Jagannath 2021;
Arnaboldi et al. 2024, "Information exponent" box):  ell = min{k >= 1 : c_k != 0}.
"""

import math
import numbers

import numpy as np

# Integration range: beyond |x| = 12 the Gaussian weight is below 6e-32, so for the
# polynomially bounded functions of this chapter the tails are far below 1e-12 even
# against He_k(x) ~ x^k with k <= 20. The tails are integrated anyway (see _tails).
_CUT = 12.0
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)
_MAX_INTERVALS = 20000


def gauss_hermite_grid(k, n):
    """Tensor Gauss-Hermite rule for E over x ~ N(0, I_k), n nodes per axis.

    Returns (grids, weights): ``grids`` a list of k arrays of shape (n,) * k (the
    coordinates, as numpy.meshgrid with indexing="ij") and ``weights`` of the same
    shape, summing to 1. Exact for polynomials of degree <= 2n - 1 in each coordinate.
    """
    x, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * k), indexing="ij")
    weights = np.ones([n] * k)
    for r in range(k):
        weights = weights * w.reshape([n if i == r else 1 for i in range(k)])
    return grids, weights


def hermite_he(k_max, x):
    """He_0(x), ..., He_{k_max}(x) by the three-term recursion; shape (k_max + 1, *x.shape)."""
    x = np.asarray(x, float)
    out = np.empty((k_max + 1, *x.shape))
    out[0] = 1.0
    if k_max >= 1:
        out[1] = x
    for k in range(1, k_max):
        out[k + 1] = x * out[k] - k * out[k - 1]
    return out


def _normalised_he(k_max, x):
    """He_k(x) / sqrt(k!), k = 0..k_max, by the stable recursion
    h_{k+1} = (x h_k - sqrt(k) h_{k-1}) / sqrt(k + 1)."""
    out = np.empty((k_max + 1, *x.shape))
    out[0] = 1.0
    if k_max >= 1:
        out[1] = x
    for k in range(1, k_max):
        out[k + 1] = (x * out[k] - math.sqrt(k) * out[k - 1]) / math.sqrt(k + 1)
    return out


def _vectorised(f):
    """``f`` applied element-wise to an array of floats, with a clear error if it is unusable."""
    if not callable(f):
        raise ValueError(f"f (the function to expand) must be callable; got {type(f).__name__}")

    def call(x):
        try:
            y = np.asarray(f(x), dtype=float)
            if y.shape != x.shape:
                raise TypeError
        except Exception:  # not vectorised (e.g. math.tanh): call it point by point
            try:
                y = np.array([float(f(float(v))) for v in x.ravel()]).reshape(x.shape)
            except Exception as err:
                raise ValueError(f"f must map a real number to a real number; calling it raised "
                                 f"{type(err).__name__}: {err}") from err
        if not np.all(np.isfinite(y)):
            bad = x[~np.isfinite(y)][0]
            raise ValueError(f"f must return finite values on the real line; f({bad:g}) = "
                             f"{y[~np.isfinite(y)][0]}")
        return y

    return call


def _gauss_legendre(call, a, b, k_max):
    """E[f He_k / sqrt(k!) ; x in [a, b]], k = 0..k_max, by 20-point Gauss-Legendre."""
    half, mid = 0.5 * (b - a), 0.5 * (b + a)
    x = mid + half * _GL_NODES
    weight = half * _GL_WEIGHTS * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return _normalised_he(k_max, x) @ (weight * call(x))


def _adaptive(call, a, b, k_max, tol):
    """Adaptive bisection on [a, b]: an interval is accepted when its 20-point rule and the
    sum over its two halves agree to ``tol * width / (b - a)`` in every moment.

    A kink or a jump inside an interval makes the two estimates disagree, so the
    intervals around it are bisected until the disagreement is below the tolerance
    (about 40 levels for a jump at 1e-12); smooth parts are accepted at once.
    """
    total = np.zeros(k_max + 1)
    stack = [(a, b, _gauss_legendre(call, a, b, k_max))]
    n_intervals = 0
    while stack:
        lo, hi, whole = stack.pop()
        mid = 0.5 * (lo + hi)
        left, right = _gauss_legendre(call, lo, mid, k_max), _gauss_legendre(call, mid, hi, k_max)
        n_intervals += 1
        if (np.max(np.abs(left + right - whole)) <= tol * (hi - lo) / (b - a)
                or hi - lo < 1e-13 * max(1.0, abs(mid))):
            total += left + right
        elif n_intervals > _MAX_INTERVALS:
            raise ValueError("hermite_coefficients did not converge: f is too irregular "
                             "(more than 20000 subintervals)")
        else:
            stack.append((lo, mid, left))
            stack.append((mid, hi, right))
    return total


def _tails(call, k_max):
    """Contribution of |x| > _CUT, by the substitution x = _CUT + s on a few long intervals."""
    total = np.zeros(k_max + 1)
    for lo, hi in ((_CUT, 20.0), (20.0, 40.0)):
        total += _gauss_legendre(call, lo, hi, k_max) + _gauss_legendre(call, -hi, -lo, k_max)
    return total


def hermite_coefficients(f, k_max, *, breakpoints=(0.0,), tol=1e-10):
    """Normalised Hermite coefficients c_k = E[f(x) He_k(x)] / sqrt(k!), k = 0..k_max.

    Arnaboldi et al. (2024), definition of the information exponent. The Gaussian
    integral is done on [-12, 12] by adaptive Gauss-Legendre quadrature, split at
    ``breakpoints`` (known kinks or jumps of ``f``; the default 0 covers ReLU, |x|
    and sign). Kinks elsewhere are found by the adaptive bisection, so the result
    holds to ~``tol`` for any piecewise-smooth ``f`` (plain Gauss-Hermite
    quadrature would converge only like 1/n at a kink). The tests check He_k, ReLU,
    |x| and sign against their closed forms to 1e-9.

    Parameters
    ----------
    f : callable
        A real function of one real variable; vectorised (numpy) or not.
    k_max : int
        Highest order, 0 <= k_max <= 30.
    breakpoints : sequence of float
        Points where f is known not to be smooth.
    tol : float
        Target absolute accuracy of each normalised coefficient.

    Returns
    -------
    ndarray, shape (k_max + 1,)
    """
    if isinstance(k_max, bool) or not isinstance(k_max, numbers.Integral) or not 0 <= k_max <= 30:
        raise ValueError(f"k_max (highest Hermite order) must be an integer in [0, 30]; got {k_max!r}")
    if not (isinstance(tol, numbers.Real) and 0 < tol < 1e-3):
        raise ValueError(f"tol (quadrature accuracy) must be in (0, 1e-3); got {tol!r}")
    call = _vectorised(f)
    points = sorted({-_CUT, _CUT, *(float(b) for b in breakpoints if -_CUT < float(b) < _CUT)})
    moments = _tails(call, k_max)
    for a, b in zip(points[:-1], points[1:]):
        moments += _adaptive(call, a, b, k_max, tol * (b - a) / (2 * _CUT))
    return moments


def information_exponent(f, tol=1e-6, *, k_max=12, breakpoints=(0.0,)):
    """Information exponent ell = min{k >= 1 : |c_k| > tol} of a single-index target.

    Arnaboldi et al. (2024), "Information exponent"; Ben Arous et al. (2021). The
    coefficients are those of :func:`hermite_coefficients` (accurate to ~1e-10),
    so ``tol`` separates true zeros from non-zeros whenever the first non-zero
    coefficient exceeds it. Raises ``ValueError`` if no coefficient up to
    ``k_max`` exceeds ``tol`` (e.g. a constant target).
    """
    if not (isinstance(tol, numbers.Real) and 1e-9 <= tol < 1):
        raise ValueError(f"tol (threshold for a non-zero coefficient) must be in [1e-9, 1); got {tol!r}")
    c = hermite_coefficients(f, k_max, breakpoints=breakpoints)
    nonzero = np.flatnonzero(np.abs(c[1:]) > tol)
    if len(nonzero) == 0:
        raise ValueError(f"f has no Hermite coefficient above tol={tol:g} for 1 <= k <= {k_max}: "
                         "its information exponent is undefined or larger than k_max")
    return int(nonzero[0] + 1)


def hermite_coefficients_nd(f, k, degree, *, n_nodes=None):
    """Tensor Hermite coefficients c_alpha = E[f(x) prod_r He_{alpha_r}(x_r)] / sqrt(alpha!)
    of a function of k independent standard Gaussians, for all |alpha|_inf <= degree.

    Tensor Gauss-Hermite quadrature with ``n_nodes`` per axis (default 2 * degree + 20):
    exact for polynomial targets of degree < 2 n_nodes - degree, accurate to
    O(1/n) only at kinks, so use it for smooth multi-index targets.

    Returns
    -------
    ndarray, shape (degree + 1,) * k
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= 4:
        raise ValueError(f"k (number of target directions) must be an integer in [1, 4]; got {k!r}")
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or not 1 <= degree <= 8:
        raise ValueError(f"degree (highest order per direction) must be an integer in [1, 8]; got {degree!r}")
    if not callable(f):
        raise ValueError(f"f (the target) must be callable; got {type(f).__name__}")
    n = n_nodes or 2 * degree + 20
    x = np.polynomial.hermite_e.hermegauss(n)[0]
    grids, weights = gauss_hermite_grid(k, n)
    values = np.asarray(f(*grids), dtype=float)
    if values.shape != weights.shape or not np.all(np.isfinite(values)):
        raise ValueError("f must take k arrays and return finite values of the same shape")
    he = hermite_he(degree, x) / np.sqrt([math.factorial(j) for j in range(degree + 1)])[:, None]
    c = values * weights
    for r in range(k):  # contract axis r with He_j(x_r)
        c = np.tensordot(he, c, axes=([1], [r]))
        c = np.moveaxis(c, 0, r)
    return c


def closed_form_coefficients(name, k_max):
    """Normalised coefficients c_0..c_k_max of ``"relu"``, ``"abs"`` or ``"sign"`` in closed form.

    With phi the standard normal density and He_k phi = (-1)^k phi^(k), integrating by
    parts gives E[max(x, 0) He_k(x)] = He_{k-2}(0) phi(0) (k >= 2) and
    E[sign(x) He_k(x)] = 2 He_{k-1}(0) phi(0) (k >= 1), where He_n(0) = 0 for odd n and
    (-1)^(n/2) (n - 1)!! for even n; c_0, c_1 of ReLU are phi(0) and 1/2, and
    |x| = 2 max(x, 0) - x. Used to check :func:`hermite_coefficients` at kinks.
    """
    if isinstance(k_max, bool) or not isinstance(k_max, numbers.Integral) or k_max < 1:
        raise ValueError(f"k_max (highest Hermite order) must be an integer >= 1; got {k_max!r}")
    phi0 = 1.0 / math.sqrt(2 * math.pi)
    he0 = hermite_he(k_max, np.zeros(()))  # He_n(0), n = 0..k_max
    norm = np.sqrt([math.factorial(k) for k in range(k_max + 1)])
    relu = np.array([phi0, 0.5] + [he0[k - 2] * phi0 for k in range(2, k_max + 1)]) / norm
    if name == "relu":
        return relu
    if name == "abs":
        return 2 * relu - (np.arange(k_max + 1) == 1)
    if name == "sign":
        return np.array([0.0] + [2 * he0[k - 1] * phi0 for k in range(1, k_max + 1)]) / norm
    raise ValueError(f"name must be one of ('relu', 'abs', 'sign'); got {name!r}")


def leap_exponent(f, k, tol=1e-6, *, degree=4):
    """Leap exponent of a multi-index target h*(x_1, ..., x_k) in its own basis.

    Abbe, Boix-Adsera & Misiakiewicz (2023), used by Arnaboldi et al. (2024) for
    multi-index targets. Directions are learned in stages: with a set S of learned
    directions, a non-zero coefficient c_alpha can be picked up at a cost equal to
    its degree in the unlearned directions, sum_{r not in S} alpha_r; the cheapest
    ones are taken and their directions added to S. The leap is the largest cost
    paid along the way. Greedy is optimal here because learning more directions
    never raises a later cost. For k = 1 this is the information exponent.

    Returns
    -------
    int
    """
    c = hermite_coefficients_nd(f, k, degree)
    alphas = [a for a in np.ndindex(*c.shape) if any(a) and abs(c[a]) > tol]
    if not alphas:
        raise ValueError(f"f has no Hermite coefficient above tol={tol:g} up to degree {degree}")
    learned, leap = set(), 0
    support = {r for a in alphas for r in range(k) if a[r]}
    while learned != support:
        costs = [(sum(a[r] for r in range(k) if r not in learned), a) for a in alphas]
        costs = [(cost, a) for cost, a in costs if cost > 0]
        cheapest = min(cost for cost, _ in costs)
        leap = max(leap, cheapest)
        for cost, a in costs:
            if cost == cheapest:
                learned |= {r for r in range(k) if a[r]}
    return leap
