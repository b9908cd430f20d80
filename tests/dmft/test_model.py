"""The model's pointwise functions shared by the simulation and the DMFT: the loss
derivatives the solver uses, and the generalisation-error formula both report."""

import numpy as np
import pytest

from tsdyn import dmft
from tsdyn.dmft import model
from tsdyn.dmft.simulate import training_set

CASES = [(model.LOGISTIC, model.TWO_CLUSTER), (model.LOGISTIC, model.THREE_CLUSTER),
         (model.SQUARE, model.TWO_CLUSTER), (model.SQUARE, model.THREE_CLUSTER),
         (model.SQUARE, model.TEACHER)]


@pytest.mark.parametrize("loss, mdl", CASES)
def test_loss_derivatives_match_finite_differences(loss, mdl):
    """Lambda'(y, r) and Lambda''(y, r) (loss_derivatives, used by the DMFT kernels; and
    loss_terms, used by the simulation) against central differences of the loss value,
    step h = 1e-4: truncation h^2/6 times the third derivative or h^2/12 times the fourth,
    ~ 1e-8 (the quartic three-cluster square loss has fourth derivative 12); rounding
    4 eps |Lambda|/h^2 ~ 1e-7 |Lambda| in the second difference; tolerance 1e-6 (1 + |Lambda|)."""
    L, h = 0.7, 1e-4
    ys = [-1.0, 1.0] if mdl != model.TEACHER else [-0.8, 0.3, 1.7]
    for y in ys:
        for r in np.linspace(-3.0, 3.0, 41):
            val = lambda x: model.loss_terms(loss, mdl, y, x, L)[0]  # noqa: E731
            fd1 = (val(r + h) - val(r - h)) / (2 * h)
            fd2 = (val(r + h) - 2 * val(r) + val(r - h)) / h ** 2
            d1, d2 = model.loss_derivatives(loss, mdl, y, r, L)
            _, t1, t2, _ = model.loss_terms(loss, mdl, y, r, L)
            tol = 1e-6 * (1 + abs(val(r)))
            assert d1 == pytest.approx(fd1, abs=tol), (y, r)
            assert d2 == pytest.approx(fd2, abs=tol), (y, r)
            assert (t1, t2) == (d1, d2)
    # large margins: the logistic value and derivatives stay finite (no overflow)
    if loss == model.LOGISTIC:
        for r in (-60.0, 60.0):
            assert np.all(np.isfinite(model.loss_terms(loss, mdl, 1.0, r, L)[:3]))


@pytest.mark.parametrize("kind, extra, m, C", [
    ("two-cluster", {"rho": 0.5}, 0.6, 1.1),
    ("two-cluster", {"rho": 0.3}, 0.3, 0.5),
    ("three-cluster", {"rho": 0.5, "L": 0.7}, 0.8, 1.3),
    ("three-cluster", {"rho": 0.6, "L": 0.5}, 0.4, 2.0),
])
def test_generalisation_error_is_the_test_error_on_fresh_samples(kind, extra, m, C):
    """eps_g(m, C) against the error of one fixed w (with exactly these overlaps, d = 100)
    on 4e5 fresh samples of the data model drawn as the simulation draws its training
    set: within 4 binomial standard errors sqrt(eps (1 - eps)/n) ~ 3e-3."""
    p = dmft.Params(alpha=4000.0, Delta=0.4, model=kind, **extra)
    d, rng = 100, np.random.default_rng(11)
    v, X, c, y = training_set(p, d, rng)  # 4e5 samples
    g = rng.standard_normal(d)
    g -= (g @ v) / d * v
    w = m * v + g * np.sqrt((C - m * m) * d) / np.linalg.norm(g)
    assert w @ v / d == pytest.approx(m) and w @ w / d == pytest.approx(C)
    r = X @ w / np.sqrt(d)
    phi = r if kind == "two-cluster" else r ** 2 - p.L ** 2
    n_err, n_tot = np.count_nonzero(y * phi <= 0), len(y)
    eps = float(dmft.generalisation_error(p, m, C))
    assert 0.02 < eps < 0.5  # a non-trivial error rate
    assert abs(n_err / n_tot - eps) < 4 * np.sqrt(eps * (1 - eps) / n_tot)


def test_teacher_error_is_the_mean_square_error_on_fresh_samples():
    """Teacher model: eps_g = E(y - r)^2/2 on fresh samples, 4 standard errors of the mean."""
    p = dmft.Params(alpha=4000.0, Delta=0.7, model="teacher", loss="square")
    d, rng = 100, np.random.default_rng(3)
    v, X, c, y = training_set(p, d, rng)
    g = rng.standard_normal(d)
    g -= (g @ v) / d * v
    m, C = 0.4, 0.9
    w = m * v + g * np.sqrt((C - m * m) * d) / np.linalg.norm(g)
    se2 = 0.5 * (y - X @ w / np.sqrt(d)) ** 2
    eps = float(dmft.generalisation_error(p, m, C))
    assert abs(se2.mean() - eps) < 4 * se2.std(ddof=1) / np.sqrt(len(se2))
