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
    ``make test-library`` the rest beside it."""
    import pytest

    for item in items:
        if "glued" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.glued)
