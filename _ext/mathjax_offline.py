"""Sphinx extension of the book: MathJax 3 is served from the build, not from a CDN.

The pinned PyPI package ``django-static-mathjax`` (``requirements.txt``; it ships the
MathJax 3.2.2 ``es5`` build as package data and needs nothing else, Django included)
is copied into ``<html>/_static/mathjax/`` when the HTML build finishes, and
``_config.yml`` points Sphinx's ``mathjax_path`` at ``mathjax/tex-chtml.js`` in it
(a relative ``mathjax_path`` is read inside ``_static``). The built book therefore
renders its equations offline. A ``mathjax_path`` that is a URL, or that names a file
the package does not ship, fails the build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

PREFIX = "mathjax/"  # mathjax_path must start with this: the copy's folder in _static


def mathjax_files() -> Path:
    """The MathJax 3 ``es5`` folder of the installed ``django-static-mathjax`` package."""
    try:
        import mathjax  # the import name of django-static-mathjax
    except ImportError as exc:
        raise ExtensionError("MathJax is not installed: `pip install -r requirements.txt` "
                             "(package django-static-mathjax)") from exc
    folder = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (folder / "tex-chtml.js").is_file():
        raise ExtensionError(f"no MathJax 3 es5 build in {folder}")
    return folder


def _check_path(app, config):
    path = config.mathjax_path or ""
    if "//" in path or not path.startswith(PREFIX):
        raise ExtensionError(f"mathjax_path must be a file of the bundled MathJax, "
                             f"'{PREFIX}<file>.js' (e.g. {PREFIX}tex-chtml.js); got {path!r}")
    if not (mathjax_files() / path[len(PREFIX):]).is_file():
        raise ExtensionError(f"mathjax_path {path!r}: MathJax ships no "
                             f"{path[len(PREFIX):]!r} in {mathjax_files()}")


def _copy(app, exc):
    if exc is None and app.builder.format == "html":
        shutil.copytree(mathjax_files(), Path(app.outdir) / "_static" / PREFIX, dirs_exist_ok=True)


def setup(app):
    app.connect("config-inited", _check_path)
    app.connect("build-finished", _copy)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
