"""Sphinx extension of the book: numbers quoted from a kept run.

A chapter at the papers' scale takes hours, so the book build does not repeat it: one
run is kept instead, as its glued figures and ``glue.json``
(``python scripts/chapters.py snapshot EXECUTED_NB book/paper_runs/<name>``), and a page
shows them. That page quotes the run's numbers with the role ``{kept}`name:key```, which
reads ``key`` from ``book/paper_runs/<name>/glue.json`` at build time, so the prose cannot
drift from the files it describes. An unknown run or key is an error, which fails the
``-W`` build.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes

FOLDER = Path("book") / "paper_runs"  # kept runs, relative to the book's source root


def format_value(value) -> str:
    """A glued value as text: numbers and strings as glued, lists joined by commas."""
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def text_nodes(text: str) -> list:
    """Docutils nodes for a kept string: plain text, with ``$...$`` spans as inline math (a value
    glued for the chapter's text may carry symbols, such as "(b = 0.1)" written in TeX)."""
    parts = text.split("$")
    if len(parts) % 2 == 0:  # an unpaired dollar: keep the text as it is
        return [nodes.Text(text)]
    return [nodes.math(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


def lookup(root: Path, text: str):
    """``(value, path)`` for ``name:key``; ``KeyError`` with a message if either is missing."""
    name, sep, key = text.partition(":")
    if not sep or not name or not key:
        raise KeyError(f"kept-run reference must read 'run:key'; got {text!r}")
    path = Path(root) / FOLDER / name / "glue.json"
    if not path.is_file():
        raise KeyError(f"no kept run {name!r} (expected {path})")
    values = json.loads(path.read_text())
    if key not in values:
        raise KeyError(f"kept run {name!r} has no number {key!r} ({path})")
    return values[key], path


def kept_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    try:
        value, path = lookup(Path(env.srcdir), text)
    except KeyError as exc:
        msg = inliner.reporter.error(exc.args[0], line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    env.note_dependency(str(path))
    return text_nodes(format_value(value)), []


def setup(app):
    app.add_role("kept", kept_role)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
