"""Test-session settings.

numba's CUDA kernels (``tsdyn.sparse.sgd_cuda``) run in numba's simulator unless the
environment says otherwise, so the tests need no GPU; the variable must be set before
numba is imported. On a GPU, run with ``NUMBA_ENABLE_CUDASIM=0``.
"""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


def pytest_collection_modifyitems(items):
    """Mark the tests that read a chapter's glued numbers (the ``glued`` fixture of
    ``tests/_chapter.py``) as ``glued``: ``make test-chapters`` runs these after the book,
    from the files ``tests/<model>/test_chapter.py`` alone, ``make test-library`` the rest
    beside it. A glued test in any other file would be run by neither, so it is refused."""
    import pytest

    for item in items:
        if "glued" in getattr(item, "fixturenames", ()):
            if item.path.name != "test_chapter.py":
                raise pytest.UsageError(f"{item.nodeid} reads glued numbers: it belongs in a "
                                        "tests/<model>/test_chapter.py (make test-chapters runs those)")
            item.add_marker(pytest.mark.glued)
