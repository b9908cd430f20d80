"""One overlay style for theory versus simulation.

Theory is drawn as lines, simulations as markers with error bars (standard error
over seeds where there are several); every chapter uses these helpers so that
the book reads the same throughout.
"""

import matplotlib.pyplot as plt
import numpy as np

RC = {
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "errorbar.capsize": 2,
}


def style():
    """Apply the book's matplotlib style."""
    plt.rcParams.update(RC)


def color(i):
    """The i-th colour of the cycle."""
    return f"C{i % 10}"


def theory(ax, x, y, *, label=None, c=None, ls="-", **kw):
    """A theory curve: a line."""
    return ax.plot(x, y, ls=ls, color=c, label=label, **kw)


def simulation(ax, x, y, yerr=None, *, label=None, c=None, marker="o", every=1, **kw):
    """Simulation points: open markers, with error bars when ``yerr`` is given."""
    sl = slice(None, None, every)
    x, y = np.asarray(x)[sl], np.asarray(y)[sl]
    yerr = None if yerr is None else np.asarray(yerr)[sl]
    return ax.errorbar(x, y, yerr=yerr, fmt=marker, ms=4, mfc="none", color=c, label=label,
                       elinewidth=0.8, **kw)


def mean_and_error(runs, var="eg"):
    """Mean over seeds and its standard error for a list of result Datasets.

    Returns (t, mean, standard error); the error is None for a single run.
    """
    values = np.stack([r[var].values for r in runs])
    mean = values.mean(axis=0)
    err = values.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else None
    return runs[0].t.values, mean, err


def rule_deviation(ax, scan, *, c=None, marker="o", label=None, scale=1.0, theory_label="theory"):
    """One model's deviation from the linear scaling rule against its batch size.

    ``scan``: a ``scaling_rule_scan`` Dataset (deviation_theory, deviation, deviation_lo,
    deviation_hi over ``batch``). The batch axis is divided by ``scale`` (for instance the
    predicted critical batch, to put several models on one axis). Theory: a line; simulation:
    markers with their interval. Returns the x values drawn.
    """
    x = scan.batch.values / scale
    if theory_label is not None:
        theory(ax, x, scan.deviation_theory.values, c=c, label=theory_label)
    dev = scan.deviation.values
    err = np.stack([dev - scan.deviation_lo.values, scan.deviation_hi.values - dev])
    simulation(ax, x, dev, err, c=c, marker=marker, label=label)
    return x


def time_label(ax, *, N=None, batch=None, axis="x"):
    """Label a time axis in SGD steps / N, with the number of samples per unit."""
    text = r"$t$ = SGD steps / $N$"
    if N is not None and batch is not None:
        text += f"  (one unit = $BN$ = {batch * N:,} samples)"
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(text)


def overlap_matrix(ax, M, *, title, vmax=None, cmap="RdBu_r"):
    """An overlap matrix as a heat map with its values written in the cells."""
    M = np.asarray(M)
    vmax = vmax or max(np.abs(M).max(), 1e-12)
    im = ax.imshow(M, cmap=cmap, vmin=-vmax, vmax=vmax)
    for (i, j), val in np.ndenumerate(M):
        ax.text(j, i, f"{val:.2f}", ha="center", va="center", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_xticks(range(M.shape[1]))
    ax.set_yticks(range(M.shape[0]))
    ax.grid(False)
    return im


def unit_order(R):
    """Order of student units for display: grouped by the teacher unit they overlap
    most with, strongest first. Which student unit specialises to which teacher
    unit is decided by fluctuations, so two runs are compared in this order."""
    R = np.asarray(R)
    best = np.argmax(np.abs(R), axis=1)
    return np.lexsort((-np.abs(R).max(axis=1), best))


def sliders(fn, **controls):
    """Sliders that re-run ``fn`` whenever one moves: the chapters' Explore sections.

    ``controls`` use the abbreviations of ``ipywidgets.interact`` (``(lo, hi)`` or
    ``(lo, hi, step)`` for a slider, a list for a drop-down), starting at ``fn``'s
    defaults. Unlike ``interact``, ``fn`` is not called when the widgets are created:
    the chapter draws the default figure itself, and a notebook run headless (papermill,
    CI) makes no output-widget capture, which can stall the notebook client (nbclient
    issue 312). Returns a widget box to ``display``.
    """
    import inspect

    import ipywidgets as widgets

    defaults = inspect.signature(fn).parameters
    inputs = {}
    for name, abbrev in controls.items():
        widget = widgets.interactive.widget_from_abbrev(abbrev, defaults[name].default)
        if widget is None:
            raise ValueError(f"cannot make a control for {name} from {abbrev!r}")
        widget.description = name
        inputs[name] = widget
    out = widgets.Output()

    def redraw(_change=None):
        with out:
            out.clear_output(wait=True)
            fn(**{name: w.value for name, w in inputs.items()})

    for widget in inputs.values():
        widget.observe(redraw, names="value")
    return widgets.VBox([*inputs.values(), out])


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(x, digits=2):
    """A number for prose: plain between 0.01 and 10^4 (``digits`` significant digits),
    otherwise as mantissa·10 to a superscript power (6.2·10⁶, 2·10⁻²⁸); inf and NaN as words."""
    x = float(x)
    if not np.isfinite(x):
        return "NaN" if np.isnan(x) else ("∞" if x > 0 else "−∞")
    if x == 0 or 0.01 <= abs(x) < 1e4:
        return f"{float(f'{x:.{digits}g}'):.6g}"  # rounded to ``digits``, never in e-notation
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa}·{power}"
