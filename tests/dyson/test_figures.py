"""tsdyn.dyson.figures (the paper's Figs. 8 and 9 as drawn) and analysis.published_midpoint, each
against a case whose answer is known by hand."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tsdyn import dyson  # noqa: E402
from tsdyn.dyson import figures as fg  # noqa: E402

T = 2.0 ** np.arange(-5, 7)  # the paper's grid: T = 2^-5 ... 2^6, 1/sigma_W = 2^-8 ... 2^3
S = 2.0 ** np.arange(-8, 4)


def test_line_top_is_the_papers_T_087():
    # axvline(sqrt 2, ymax=0.436) on a log axis 2^-5 ... 2^6: 2^(-5 + 0.436 * 11), exactly
    assert fg.published_line_top() == pytest.approx(2.0 ** (-5 + 0.436 * 11), rel=1e-12)
    assert 0.86 < fg.published_line_top() < 0.88  # the "T ~ 0.87"
    assert fg.published_line_top((1.0, 100.0), 0.5) == pytest.approx(10.0, rel=1e-12)
    with pytest.raises(ValueError, match="T_axis"):
        fg.published_line_top((1.0, 0.5))


def test_mask_hides_exactly_T_over_sigma_at_most_one_tenth():
    m = fg.published_mask(T, S)
    assert m.shape == (12, 12)
    for i, t in enumerate(T):
        for j, s in enumerate(S):
            assert m[i, j] == (t * s <= 0.1)
    # on the paper's grid: T s = 2^(i + j - 13) <= 0.1 iff i + j <= 9 (2^-4 = 0.0625 hidden, 2^-3 = 0.125 shown)
    assert int(m.sum()) == sum(1 for i in range(12) for j in range(12) if i + j <= 9)
    # the lower loop the issue names (1/sigma_W 0.03-0.8, T 0.03-0.8) is hidden at its corner, T = 1/sigma_W = 2^-5
    assert m[0, 3]
    frac = np.ones((12, 12))
    mf = fg.masked_fraction(frac, T, S)
    assert np.ma.count_masked(mf) == int(m.sum())
    with pytest.raises(ValueError, match="shape"):
        fg.masked_fraction(np.ones((3, 3)), T, S)


def test_inside_and_levels_drawn():
    f = np.array([[1.0, 0.96, 0.7], [0.5, np.nan, 0.999]])
    assert fg.inside(f, 0.95).tolist() == [[True, True, False], [False, False, True]]
    assert fg.inside(f, 0.997).tolist() == [[True, False, False], [False, False, True]]
    masked = np.ma.array(f, mask=[[True, False, False], [False, False, False]])
    assert fg.inside(masked, 0.997).tolist() == [[False, False, False], [False, False, True]]
    assert fg.levels_drawn(f) == [0.68, 0.95, 0.997]
    assert fg.levels_drawn(np.full((2, 2), 0.9)) == []  # no point below a level and one at or above
    # with 8 models a fraction is k/8: 95% and 99.7% are both "all 8 pass", the same points
    f8 = np.arange(9)[:, None] / 8.0
    assert (fg.inside(f8, 0.95) == fg.inside(f8, 0.997)).all() and fg.inside(f8, 0.95).sum() == 1


def test_contour_capture_counts():
    frac = np.array([[1.0, 1.0, 0.9], [1.0, 0.5, 0.2]])
    ordered = np.array([[True, True, True], [False, False, False]])
    c68, c95, c997 = fg.contour_capture(frac, ordered)
    assert c68 == dict(level=0.68, n_ordered=3, ordered_inside=3, n_inside=4, inside_ordered=3)
    assert c95 == dict(level=0.95, n_ordered=3, ordered_inside=2, n_inside=3, inside_ordered=2)
    assert c997["ordered_inside"] == 2
    assert fg.ordered_by_loss(np.array([-4.0, -1.0, np.nan]), -2.5).tolist() == [True, False, False]
    flags = np.zeros((2, 3, 4), bool)
    flags[0, 0] = True
    flags[0, 1, :3] = True
    assert fg.pooled_pass(flags, ordered) == (7, 12)
    with pytest.raises(ValueError, match="same shape"):
        fg.contour_capture(frac, ordered[:, :2])


def test_draws_what_the_paper_draws():
    frac = np.clip(1.2 - np.log2(np.outer(T, 1 / S)) / 12, 0, 1)  # a smooth fraction, all three levels crossed
    fig, (a, b) = plt.subplots(1, 2)
    a.pcolormesh(S, T, frac, shading="nearest")
    a.set(xscale="log", yscale="log")
    assert fg.draw_published_fig8(a, T, S, frac) == [0.68, 0.95, 0.997]
    assert len(a.collections) == 2  # the heat map and one contour set with three levels
    b.pcolormesh(S, T, frac, shading="nearest")
    b.set(xscale="log", yscale="log")
    ylim = b.get_ylim()
    assert fg.draw_published_fig9(b, T, S, frac) == [0.68]
    assert b.get_ylim() == ylim  # the stopped line does not move the axis
    line = b.collections[-1].get_segments()[0]
    assert line[0, 0] == pytest.approx(math.sqrt(2)) and line[1, 1] == pytest.approx(fg.published_line_top())
    plt.close(fig)


def test_published_midpoint_is_the_arithmetic_midpoint_of_the_bracket():
    x = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    n = 10
    passed = np.array([10, 8, 9, 5, 7])  # fractions 1, .8, .9, .5, .7: the last one > 0.68 is x = 4 -> NaN
    flags = np.arange(n)[None, :] < passed[:, None]
    assert math.isnan(dyson.published_midpoint(x, flags, 0.68)[0])
    passed = np.array([10, 8, 9, 5, 6])  # last above 0.68 at x = 1 (0.9), next x = 2: (1 + 2) / 2
    flags = np.arange(n)[None, :] < passed[:, None]
    assert dyson.published_midpoint(x, flags, 0.68)[0] == 1.5
    # strictly greater: a fraction equal to the level does not count (the notebook's f > level)
    passed = np.array([10, 8, 9, 7, 6])
    flags = np.arange(n)[None, :] < passed[:, None]
    assert dyson.published_midpoint(x, flags, 0.7)[0] == 1.5
    # a level the fraction crosses three times (1, .8, .9, .7, .6 against 0.85): the midpoint takes the
    # last bracket (1, 2), the interpolated estimate the first (0.25, 0.5)
    assert dyson.published_midpoint(x, flags, 0.85)[0] == 1.5
    assert 0.25 < dyson.fraction_crossing(x, flags, 0.85)[0] < 0.5
    assert dyson.published_midpoint(x, flags, 0.68)[0] == 3.0
    assert 2.0 < dyson.fraction_crossing(x, flags, 0.68)[0] < 4.0
    # bootstrap: lo and hi are grid midpoints and bracket the estimate
    passed = np.array([10, 10, 10, 0, 0])
    flags = np.arange(n)[None, :] < passed[:, None]
    est, lo, hi = dyson.published_midpoint(x, flags, 0.68, n_boot=50, seed=1)
    assert est == lo == hi == 1.5
    with pytest.raises(ValueError, match="flags must have shape"):
        dyson.published_midpoint(x, flags[:3], 0.68)


def test_midpoint_resamples_see_a_far_point_that_passes_by_chance():
    # fractions 1, 1, 0, then six hotter points where exactly 8 of 16 models pass (a coin's plateau):
    # the estimate is (0.5 + 1) / 2, unless a resampled plateau point exceeds 0.68 by chance
    x = 2.0 ** np.arange(-2, 7)
    flags = np.zeros((9, 16), bool)
    flags[:2] = True
    flags[3:, :] = np.arange(16)[None, :] < 8  # exactly 8 of 16 at every hot point
    est = dyson.published_midpoint(x, flags, 0.68)[0]
    assert est == 0.75
    mids = dyson.published_midpoint_resamples(x, flags, 0.68, n_boot=400, seed=7)
    assert mids.shape == (400,)
    # the same draws as the bootstrap of published_midpoint: its quantiles are those of these resamples
    _, lo, hi = dyson.published_midpoint(x, flags, 0.68, n_boot=400, seed=7)
    if np.mean(np.isfinite(mids)) >= 0.9:
        assert (lo, hi) == tuple(np.nanquantile(mids, [0.16, 0.84]))
    # a resampled 8/16 column exceeds 0.68 (>= 11 of 16) with probability P(Bin(16, 1/2) >= 11) = 0.105;
    # six such columns: the bracket survives with probability 0.895^6 = 0.51. 400 resamples: s.e. 0.025,
    # so 0.1 is four of them
    same = np.mean(mids == 0.75)
    assert abs(same - (1 - 0.10506) ** 6) < 0.1
