"""Helpers of tsdyn.plotting that the chapters' prose relies on."""

from tsdyn.plotting import sci


def test_sci_writes_numbers_for_prose():
    assert sci(6.2e6) == "6.2·10⁶" and sci(2e-28) == "2·10⁻²⁸" and sci(1e6) == "10⁶"
    assert sci(0.045) == "0.045" and sci(1234.5) == "1200" and sci(0.0) == "0"
    assert sci(float("inf")) == "∞" and sci(float("nan")) == "NaN"
