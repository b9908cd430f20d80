"""The paper's Figs. 8 and 9 as the authors drew them, and the measurements that test them.

Park, Lucini & Aarts (2025), Sec. 4.3 and Figs. 8-9. Their public notebook
(``empirical_phase.ipynb`` in chanjure/phase_ml) draws, over the (1/sigma_W, T) grid, the
fraction of models that pass their convergence test, eq. (4.15) (here
:func:`tsdyn.dyson.published_criterion`):

- Fig. 8 (centre, right): its contours at 68%, 95% and 99.7% ("1, 2 and 3 sigma"), over the
  whole grid (no mask);
- Fig. 9 (all four panels): its 68% contour only, of the fraction *masked* where
  ``T * (1/sigma_W) <= 0.1`` (:func:`published_mask`), and the jamming line drawn at
  ``1/sigma_W = sqrt(2)`` from the bottom of the axis up to 43.6% of its height, which on their
  axis ``T = 2^-5 ... 2^6`` ends at ``T = 2^(-5 + 0.436 * 11) = 0.868`` (:func:`published_line_top`).

The paper says of Fig. 8 that the 2 and 3 sigma boundaries "capture the ordered phase";
:func:`contour_capture` counts which grid points of an ordered phase (defined independently,
e.g. by the loss, :func:`ordered_by_loss`) lie inside each contour, and which points inside are
ordered. A contour at level ``c`` of a grid fraction ``f`` encloses exactly the grid points with
``f >= c`` (:func:`inside`), so the counts are read off the grid, not off the drawn lines.
"""

import math

import numpy as np

from .. import _validate

SIGMA_LEVELS = (0.68, 0.95, 0.997)  # the paper's 1, 2 and 3 sigma fractions of models passing (4.15)
MASK_PRODUCT = 0.1  # Fig. 9 hides the grid points with T * (1/sigma_W) <= this
PUBLISHED_JAMMING_LINE = math.sqrt(2.0)  # 1/sigma_W of Fig. 9's dashed line (the book's is sqrt(2 q))
PUBLISHED_LINE_TOP = 0.436  # that line's top, as a fraction of the height of the T axis
PUBLISHED_T_AXIS = (2.0 ** -5, 2.0 ** 6)  # the paper's T axis (its grid of learning rates / 4)


def published_line_top(T_axis=PUBLISHED_T_AXIS, top=PUBLISHED_LINE_TOP):
    """Temperature at which Fig. 9's jamming line stops: ``T_lo (T_hi / T_lo)^top`` on a log axis.

    The notebook draws ``axvline(sqrt(2), ymax=0.436)``: from the bottom of the axis to 43.6% of
    its height. On the paper's axis ``2^-5 ... 2^6`` that is ``2^(-5 + 0.436 * 11) = 0.868``.
    """
    lo, hi = (float(v) for v in T_axis)
    if not 0 < lo < hi:
        raise ValueError(f"T_axis must be (T_lo, T_hi) with 0 < T_lo < T_hi; got {T_axis!r}")
    _validate.real("top", top, low=0.0, high=1.0, doc="fraction of the axis height")
    return lo * (hi / lo) ** top


def published_mask(T, inv_sigma_w, product=MASK_PRODUCT):
    """(len(T), len(inv_sigma_w)) booleans, True where Fig. 9 hides the grid point: ``T / sigma_W <= product``."""
    T, s = np.asarray(T, float), np.asarray(inv_sigma_w, float)
    if T.ndim != 1 or s.ndim != 1 or not (np.all(T > 0) and np.all(s > 0)):
        raise ValueError("T and inv_sigma_w must be 1-D arrays of positive values")
    _validate.real("product", product, low=0.0, low_open=True, doc="T * (1/sigma_W) below which Fig. 9 masks")
    return np.outer(T, s) <= product


def masked_fraction(frac, T, inv_sigma_w, product=MASK_PRODUCT):
    """``frac`` (len(T), len(inv_sigma_w)) as the masked array Fig. 9 contours (:func:`published_mask`)."""
    frac = np.asarray(frac, float)
    mask = published_mask(T, inv_sigma_w, product)
    if frac.shape != mask.shape:
        raise ValueError(f"frac must have shape (len(T), len(inv_sigma_w)) = {mask.shape}; got {frac.shape}")
    return np.ma.array(frac, mask=mask)


def inside(frac, level):
    """Grid points enclosed by the contour at ``level``: ``frac >= level`` (False where masked or NaN)."""
    _validate.real("level", level, low=0.0, high=1.0, low_open=True, doc="fraction of models")
    f = np.ma.filled(np.ma.masked_invalid(np.ma.asarray(frac, float)), -np.inf)
    return f >= level


def levels_drawn(frac, levels=SIGMA_LEVELS):
    """The levels whose contour exists on the grid: some unmasked point below, some at or above.

    (matplotlib draws nothing, with a warning, for a level outside the data's range.)
    """
    f = np.ma.compressed(np.ma.masked_invalid(np.ma.asarray(frac, float)))
    if f.size == 0:
        return []
    return [lv for lv in levels if f.min() < lv <= f.max()]


def ordered_by_loss(mean_log_loss, level):
    """Grid points of the ordered phase by the loss: mean log10 loss below ``level``.

    The chapter's level is the one that defines its transition temperature T_1/2: half-way
    between the mean log10 loss at the coldest and the hottest temperature of its scan at
    1/sigma_W = 8 (:func:`tsdyn.dyson.halfway_crossing`). Jammed and hot points lie above it.
    """
    _validate.real("level", level, doc="log10 loss")
    m = np.asarray(mean_log_loss, float)
    return np.isfinite(m) & (m < level)


def contour_capture(frac, ordered, levels=SIGMA_LEVELS):
    """How well each contour of ``frac`` encloses the ``ordered`` grid points.

    ``frac`` and ``ordered`` (len(T), len(inv_sigma_w)); ``frac`` may be masked. Returns one dict
    per level with ``n_ordered`` (ordered points), ``ordered_inside`` (of those, inside the
    contour, :func:`inside`), ``n_inside`` (points inside) and ``inside_ordered`` (of those,
    ordered). "The contour captures the ordered phase" means both ratios near 1.
    """
    ordered = np.asarray(ordered, bool)
    if np.shape(frac) != ordered.shape:
        raise ValueError(f"frac and ordered must have the same shape; got {np.shape(frac)} and {ordered.shape}")
    out = []
    for lv in levels:
        ins = inside(frac, lv)
        out.append(dict(level=float(lv), n_ordered=int(ordered.sum()), ordered_inside=int((ins & ordered).sum()),
                        n_inside=int(ins.sum()), inside_ordered=int((ins & ordered).sum())))
    return out


def pooled_pass(flags, ordered):
    """(k, n): models passing the test, and models, pooled over the ``ordered`` grid points.

    ``flags`` (len(T), len(inv_sigma_w), n_models) booleans; ``ordered`` (len(T), len(inv_sigma_w)).
    The paper's reading of Fig. 8, "essentially all models converge" in the ordered phase, is
    k/n near 1; :func:`tsdyn.dyson.clopper_pearson` gives its interval.
    """
    flags, ordered = np.asarray(flags, bool), np.asarray(ordered, bool)
    if flags.ndim != 3 or flags.shape[:2] != ordered.shape:
        raise ValueError(f"flags must have shape {ordered.shape} + (n_models,); got {flags.shape}")
    sel = flags[ordered]
    return int(sel.sum()), int(sel.size)


def draw_published_fig8(ax, T, inv_sigma_w, frac, *, colors=("w", "orange", "r"), levels=SIGMA_LEVELS):
    """Fig. 8's contours as published: ``levels`` of ``frac`` over the whole grid, dash-dotted.

    Draws only the levels that exist on the grid (:func:`levels_drawn`); returns them.
    """
    drawn = levels_drawn(frac, levels)
    style = dict(zip(levels, colors))
    if drawn:
        ax.contour(inv_sigma_w, T, np.asarray(frac, float), levels=drawn, colors=[style[lv] for lv in drawn],
                   linestyles="-.", linewidths=[1.4 + 0.4 * i for i, _ in enumerate(drawn)])
    return drawn


def draw_published_fig9(ax, T, inv_sigma_w, frac, *, color="w"):
    """Fig. 9's overlay as published: the 68% contour of ``frac`` masked by :func:`published_mask`,
    and the jamming line at ``1/sigma_W = sqrt(2)`` stopped at :func:`published_line_top`.

    Call after the heat map (the line starts at the bottom of the current T axis). Returns the
    levels drawn (empty if the masked fraction never crosses 68%).
    """
    masked = masked_fraction(frac, T, inv_sigma_w)
    drawn = levels_drawn(masked, SIGMA_LEVELS[:1])
    if drawn:
        ax.contour(inv_sigma_w, T, masked, levels=drawn, colors=color, linestyles="-.", linewidths=1.8)
    lo, hi = ax.get_ylim()
    ax.vlines(PUBLISHED_JAMMING_LINE, lo, published_line_top(), colors=color, linestyles="--", linewidth=1.8)
    ax.set_ylim(lo, hi)
    return drawn
