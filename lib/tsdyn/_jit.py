"""The one numba policy of the library.

Every hot loop in :mod:`tsdyn` is compiled through :func:`njit` below so that the
options are chosen once, with their reasons:

- ``cache=True``: compiled kernels are written next to the source (or to
  ``NUMBA_CACHE_DIR``) so a chapter does not pay the compile time twice.
  Numba invalidates a cached kernel only when *its own* source file changes, not
  when a function it calls from another module does (e.g. an integral in
  ``activations.py`` called from ``committee/_kernels.py``). After editing such a
  function, clear the caches (``make clean``, or delete ``*.nbi``/``*.nbc``).
- ``error_model="numpy"``: a division by zero gives ``inf``/``nan`` instead of
  raising, so that a diverging run can be *detected and recorded* as an outcome.
- ``fastmath={"reassoc", "contract"}`` only (through :func:`njit_reduce`): lets
  LLVM vectorise dot products and fuse multiply-adds. The other fast-math flags
  (``nnan``, ``ninf``) are never used: they would let the compiler assume that no
  NaN or inf appears, which is exactly what divergence detection looks for.
"""

import numba

_OPTIONS = {"cache": True, "error_model": "numpy"}


def njit(fn=None, **extra):
    """``numba.njit`` with the library's options (see module docstring)."""
    if fn is None:
        return lambda f: numba.njit(f, **_OPTIONS, **extra)
    return numba.njit(fn, **_OPTIONS, **extra)


def njit_reduce(fn):
    """:func:`njit` plus re-association, for kernels dominated by reductions."""
    return numba.njit(fn, **_OPTIONS, fastmath={"reassoc", "contract"})
