"""Small input checks shared by the parameter classes (clear ``ValueError``s)."""

import math
import numbers


def _describe(name, doc):
    return f"{name} ({doc})" if doc else name


def integer(name, value, *, low, doc=""):
    """``value`` must be an integer >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{_describe(name, doc)} must be an integer >= {low}; got {value!r}")


def real(name, value, *, low=-math.inf, high=math.inf, low_open=False, high_open=False, doc=""):
    """``value`` must be a finite real number in the given interval."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ValueError(
            f"{_describe(name, doc)} must be a finite number in {left}{low}, {high}{right}; got {value!r}")


def flat_attrs(params, **extra):
    """A parameter dataclass as flat, netCDF-safe attributes, plus ``extra`` derived ones.

    None becomes the string "None", booleans become 0/1 and tuples become lists, so
    that a result's ``attrs`` survive saving to netCDF.
    """
    from dataclasses import asdict

    out = {}
    for key, value in {**asdict(params), **extra}.items():
        if value is None:
            value = "None"
        elif isinstance(value, bool):
            value = int(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out
