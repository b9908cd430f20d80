"""Derivation of the coefficient tables of our own erf and its derivative
(:func:`tsdyn.activations.erf_g`, :func:`tsdyn.activations.erf_g_dg`).

Run ``python -m tsdyn._erf_fit`` to print the tables that ``activations.py`` holds;
``tests/test_erf.py`` re-derives them and checks that they are the ones in use.

The function is the erf activation on the library's scale, g(x) = erf(x / sqrt 2), in
two regions (all arithmetic here in decimal at 80 digits, rounded to double at the end):

- |x| < 2: g(x) = x P(x^2), P the degree-15 Chebyshev interpolant of g(sqrt u)/sqrt u on
  u in [0, 4] (analytic in u, its Chebyshev coefficients fall below 1e-18 of the first by
  degree 15), written as a polynomial in t = u - 2 (the centre of the interval);
- 2 <= |x| < 8.5: g(x) = sign(x) (1 - exp(-x^2/2) H(x)) with H(x) = erfc(x/sqrt 2) exp(x^2/2)
  (the scaled complementary error function), interpolated on 13 intervals of width 1/2 by
  Chebyshev polynomials of degree 11, each written as a polynomial in t = x - (centre of
  the interval). H needs only the absolute accuracy of g: the term exp(-x^2/2) H is below
  0.046 there, so 1e-16 of H is below 1e-17 of g, and from x = 4 on far less is needed;
  degree 11 is what the first interval needs, the others are over-resolved;
- |x| >= 8.5: g = sign(x), the double nearest to erf there (erfc(8.5/sqrt 2) < 2e-17).

Its derivative g'(x) = sqrt(2/pi) exp(-x^2/2) for |x| < 2 is, like P, the degree-15 Chebyshev
interpolant in u = x^2 on [0, 4], written in t = u - 2 (its coefficients fall as
1/(2^n n!)); the two share t and need no call to exp. Beyond, g' takes exp(-x^2/2),
which the tail of g needs anyway.

The reference values come from the Taylor series
erf(y) = 2/sqrt(pi) sum_n (-1)^n y^(2n+1) / (n! (2n+1)), summed in decimal arithmetic
with enough digits that its cancellation (terms up to ~e^(y^2) at y = 6) costs nothing, and
pi from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239). The Chebyshev interpolant
through the n + 1 Chebyshev points of the first kind is within a factor ~2 of the best
(minimax) polynomial of its degree.
"""

from decimal import Decimal, localcontext

DIGITS = 80
SMALL_X, SMALL_DEGREE = 2.0, 15
TAIL_X0, TAIL_WIDTH, TAIL_INTERVALS, TAIL_DEGREE = 2.0, 0.5, 13, 11


def _atan_inv(n, eps):
    """atan(1/n) by its Taylor series."""
    x = Decimal(1) / n
    term, total, k = x, x, 1
    while abs(term) > eps:
        term *= -x * x
        k += 2
        total += term / k
    return total


def _cos(t, eps):
    """cos(t) by its Taylor series (|t| <= pi here)."""
    term, total, n = Decimal(1), Decimal(1), 0
    while abs(term) > eps:
        n += 2
        term *= -t * t / ((n - 1) * n)
        total += term
    return total


def _constants(eps):
    pi = 16 * _atan_inv(5, eps) - 4 * _atan_inv(239, eps)
    return pi, Decimal(2).sqrt(), 2 / pi.sqrt()


def _g(x, consts, eps):
    """erf(x / sqrt 2) by the Taylor series of erf."""
    _, sqrt2, two_over_sqrt_pi = consts
    y = x / sqrt2
    term, total, n = y, y, 0
    while abs(term) > eps * (abs(total) + 1):
        n += 1
        term *= -y * y / n
        total += term / (2 * n + 1)
    return two_over_sqrt_pi * total


def _chebyshev_monomials(f, a, b, degree, pi, eps):
    """Coefficients c_i of the Chebyshev interpolant of f on [a, b] as sum_i c_i (x - mid)^i."""
    n = degree + 1
    mid, half = (a + b) / 2, (b - a) / 2
    nodes = [_cos(pi * (2 * j + 1) / (2 * n), eps) for j in range(n)]
    values = [f(mid + half * z) for z in nodes]
    # T_k as lists of monomial coefficients in z = (x - mid) / half
    T = [[Decimal(1)], [Decimal(0), Decimal(1)]]
    while len(T) < n:
        nxt = [Decimal(0)] + [2 * c for c in T[-1]]
        for i, c in enumerate(T[-2]):
            nxt[i] -= c
        T.append(nxt)
    mono = [Decimal(0)] * n
    for k in range(n):
        # c_k = (2 / n) sum_j f(z_j) T_k(z_j), halved for k = 0
        ck = sum(v * _polyval(T[k], z) for v, z in zip(values, nodes)) * 2 / n
        if k == 0:
            ck /= 2
        for i, c in enumerate(T[k]):
            mono[i] += ck * c
    return [m / half ** i for i, m in enumerate(mono)]


def _polyval(coeffs, z):
    total = Decimal(0)
    for c in reversed(coeffs):
        total = total * z + c
    return total


def derive():
    """The tables (small, dg_small, tail): the SMALL_DEGREE + 1 coefficients of P and of g' in
    t = x^2 - 2, and TAIL_INTERVALS rows of TAIL_DEGREE + 1 coefficients of H in t = x - centre."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        eps = Decimal(10) ** -DIGITS
        consts = _constants(eps)
        pi, sqrt2, two_over_sqrt_pi = consts

        def p_of_u(u):  # g(sqrt u) / sqrt u
            r = u.sqrt()
            return _g(r, consts, eps) / r

        def h(x):  # erfc(x / sqrt 2) exp(x^2 / 2)
            return (1 - _g(x, consts, eps)) * (x * x / 2).exp()

        def dg_of_u(u):  # g'(sqrt u)
            return two_over_sqrt_pi / sqrt2 * (-u / 2).exp()

        small, dg_small = (
            _chebyshev_monomials(f, Decimal(0), Decimal(SMALL_X) ** 2, SMALL_DEGREE, pi, eps)
            for f in (p_of_u, dg_of_u))
        tail = []
        for i in range(TAIL_INTERVALS):
            a = Decimal(TAIL_X0) + i * Decimal(TAIL_WIDTH)
            tail.append(_chebyshev_monomials(h, a, a + Decimal(TAIL_WIDTH), TAIL_DEGREE, pi, eps))
        return ([float(c) for c in small], [float(c) for c in dg_small],
                [[float(c) for c in row] for row in tail])


def reference(x):
    """erf(x / sqrt 2) for a float x, correct to ~1e-70 (for tests), as a Decimal. The series'
    terms grow to ~exp(x^2 / 2) before they fall, so the digits grow with x^2."""
    digits = DIGITS + int(float(x) ** 2 / 4.6) if abs(float(x)) < 1e3 else DIGITS
    if abs(float(x)) >= 1e3:  # erfc(x / sqrt 2) < 1e-200000: erf is +-1 to any digits used here
        return Decimal(1).copy_sign(Decimal(float(x)))
    with localcontext() as ctx:
        ctx.prec = digits
        eps = Decimal(10) ** -digits
        return _g(Decimal(x), _constants(eps), eps)


def _wrapped(items, indent, width=99):
    lines, line = [], indent
    for item in items:
        piece = f" {item!r},"
        if len(line) + len(piece) > width:
            lines.append(line)
            line = indent
        line += piece
    return lines + [line]


def source():
    """The tables as the Python source that activations.py holds."""
    small, dg_small, tail = derive()
    out = []
    for name, table in (("_ERF_SMALL", small), ("_DG_SMALL", dg_small)):
        out += [f"{name} = ("] + _wrapped(table, "   ") + [")"]
    out.append("_ERF_TAIL = np.array([")
    for row in tail:
        lines = _wrapped(row, "    ")
        lines[0] = "    [" + lines[0][5:]
        out += lines[:-1] + [lines[-1][:-1] + "],"]
    out.append("])")
    return "\n".join(out)


if __name__ == "__main__":
    print(source())
