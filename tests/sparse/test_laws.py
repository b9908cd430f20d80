"""Fits of candidate laws m_c(d): each recovers its own law, and the comparison ranks them."""

import numpy as np
import pytest

from tsdyn.sparse import laws

D = np.array([3.0, 4.0, 5.0, 6.0])


@pytest.mark.parametrize("name, params", [("proportional", (2.3,)), ("linear", (-4.8, 3.4)),
                                          ("power", (1.05, 1.5)), ("d_log_d", (1.5,))])
def test_each_form_recovers_its_own_noiseless_law(name, params):
    y = laws.FORMS[name][0](D, *params)
    fit = laws.fit_form(name, D, y, np.full(4, 0.5))
    # exact data: the fit returns the law to solver precision (curve_fit's default xtol 1e-8)
    np.testing.assert_allclose(fit["params"], params, rtol=1e-6)
    assert fit["chi2"] < 1e-10 and fit["dof"] == 4 - len(params) and fit["aic"] == pytest.approx(2 * len(params))


def test_chi2_and_parameter_errors_follow_the_given_errors():
    # one point off a proportional law by 2 of its errors: chi^2 is that of a one-parameter fit
    # of four points, computed by hand (weighted mean of y/d with weights d^2/err^2)
    y = 2.0 * D
    y[0] += 2 * 0.5
    fit = laws.fit_form("proportional", D, y, np.full(4, 0.5))
    w = D ** 2 / 0.25
    c = np.sum(w * y / D) / np.sum(w)
    assert fit["params"][0] == pytest.approx(c, rel=1e-9)
    assert fit["chi2"] == pytest.approx(np.sum(((y - c * D) / 0.5) ** 2), rel=1e-9)
    assert np.sqrt(fit["cov"][0, 0]) == pytest.approx(1 / np.sqrt(np.sum(w)), rel=1e-6)
    yhat, se = laws.predict("proportional", fit, np.array([10.0]))
    assert yhat[0] == pytest.approx(10 * c) and se[0] == pytest.approx(10 / np.sqrt(np.sum(w)), rel=1e-5)


def test_comparison_prefers_the_true_law_and_finds_where_the_laws_part():
    # data from 1.5 d ln d with 3 % errors, no noise: that law has chi^2 = 0 and the best AIC;
    # a proportional law, far from it at these d, has a tiny weight
    y = 1.5 * D * np.log(D)
    r = laws.compare_forms(D, y, 0.03 * y)
    assert r["order"][0] == "d_log_d" and r["fits"]["d_log_d"]["delta_aic"] == 0
    assert r["fits"]["proportional"]["weight"] < 1e-6
    # predictions that part by more than 2 combined errors at the returned d, and not at the one before
    a, b = "d_log_d", "proportional"
    d_star = r["pairs"][a, b] if (a, b) in r["pairs"] else r["pairs"][b, a]
    assert d_star in r["d_new"]
    for dd, apart in ((d_star, True), (d_star - 1, False)):
        if dd <= D.max():
            continue
        ya, sa = laws.predict(a, r["fits"][a], np.array([dd]))
        yb, sb = laws.predict(b, r["fits"][b], np.array([dd]))
        s_new = r["rel_err"] * (ya + yb) / 2
        assert bool(abs(ya - yb)[0] > 2 * np.sqrt(sa ** 2 + sb ** 2 + s_new ** 2)[0]) is apart


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="name must be one of"):
        laws.fit_form("cubic", D, D, D)
    with pytest.raises(ValueError, match="err must be finite and > 0"):
        laws.fit_form("linear", D, D, np.zeros(4))
    with pytest.raises(ValueError, match=r"d must be finite and > 1"):
        laws.fit_form("d_log_d", [1.0, 2.0], [1.0, 2.0], [1.0, 1.0])
