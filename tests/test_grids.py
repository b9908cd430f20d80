"""The shared whole-step recording grid."""

import numpy as np
import pytest

from tsdyn import _grids


@pytest.mark.parametrize("spacing", _grids.SPACINGS)
@pytest.mark.parametrize("total, n_points", [(1, 2), (7, 2), (100, 3), (1000, 30), (12345, 100)])
def test_grid_is_sorted_whole_steps_from_0_to_total(total, n_points, spacing):
    g = _grids.integer_grid(total, n_points, spacing)
    assert g.dtype == np.int64 and g[0] == 0 and g[-1] == total
    assert np.all(np.diff(g) > 0) and len(g) <= 2 * n_points + 1


def test_log_grid_is_geometric_and_union_contains_both():
    g = _grids.integer_grid(10**6, 8, "log")
    np.testing.assert_array_equal(g, [0, 1, 10, 100, 1000, 10**4, 10**5, 10**6])
    both = set(_grids.integer_grid(1000, 11, "log+linear"))
    assert set(_grids.integer_grid(1000, 11, "log")) <= both
    assert set(range(0, 1001, 100)) <= both


@pytest.mark.parametrize("args, match", [((0, 5, "log"), "steps"), ((10, 1, "log"), "n_points"),
                                         ((10, 5, "geometric"), "spacing")])
def test_bad_input_names_the_parameter(args, match):
    with pytest.raises(ValueError, match=match):
        _grids.integer_grid(*args)
