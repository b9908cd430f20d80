"""Test-session settings.

numba's CUDA kernels (``tsdyn.sparse.sgd_cuda``) run in numba's simulator unless the
environment says otherwise, so the tests need no GPU; the variable must be set before
numba is imported. On a GPU, run with ``NUMBA_ENABLE_CUDASIM=0``.
"""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
