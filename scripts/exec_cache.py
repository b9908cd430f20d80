"""Execution cache of the book's chapters: an executed notebook is reused while nothing it ran changed.

A chapter's key (:func:`key`) is the SHA-256 of what determines its outputs:

- the sources of its *code* cells, in order, and which one is tagged ``parameters``
  (markdown is left out: a prose edit re-runs nothing);
- the parameters it is run with (``scale`` and every ``-p``);
- the sections of ``params/*.yaml`` it reads (the first argument of each
  ``presets.load("section", ...)``; every preset file whole if a call names its
  section otherwise);
- the source of every module of the library that its code cells import, followed
  transitively through the modules' own imports, parents' ``__init__`` included: the
  rule of ``tsdyn.sweep.code_hash``, applied here to files without importing the
  library (the build's own process stays light), so an edit to one chapter's
  sub-package re-runs that chapter alone;
- the files its code names by a path relative to the notebook (``"data/run.nc"``);
- ``requirements.txt`` and the Python version.

The executed copy is kept as ``<cache>/<chapter>/<key>.ipynb``, beside ``<key>.json``
(the key's parts, used to say why a later run missed), both written to a temporary
name and renamed. On a hit, :func:`restore` stages the *current* notebook, its markdown
included, with the cached outputs copied into its code cells (identical by construction,
matched in order and checked): glued values live in those outputs and stay valid.
The newest :data:`KEEP` entries of each chapter are kept.

What the key cannot see: a file opened under a computed name, data outside the
repository, or a change of the machine. ``make book CACHE=0`` (``--no-cache``) runs
every chapter again; ``make clean`` empties the cache with the rest of ``_build``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

FORMAT = 1  # bump to invalidate every entry (a change to what is stored or how it is staged)
KEEP = 4  # newest entries kept per chapter (e.g. quick and paper, before and after an edit)
LIBRARY = "tsdyn"  # the package whose modules are followed into the key


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _parse(text: str) -> ast.AST | None:
    """AST of a code cell, IPython magics and shell lines blanked; None if it does not parse."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


# ------------------------------------------------------------------ the library's code

def _package_dir(package: str) -> Path | None:
    """The folder of a top-level package, found without importing it."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def _module_file(module: str, package_dir: Path) -> Path | None:
    """``a.b.c`` -> ``<a>/b/c.py`` or ``<a>/b/c/__init__.py``; None if neither exists."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts)
    for path in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if path is not None and path.is_file():
            return path
    return None


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Absolute names of the modules (or candidates: ``from pkg import name``) a tree imports."""
    package = module if is_package else module.rpartition(".")[0]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names += [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def library_sources(trees, package: str | None = None) -> dict[str, str]:
    """{module: SHA-256 of its source} of the ``package`` modules that ``trees`` import, transitively.

    Importing ``a.b.c`` counts ``a``, ``a.b`` and ``a.b.c`` (Python runs their
    ``__init__``); a name that is not a module of the package (``from a.b import f``)
    is skipped. The same closure as ``tsdyn.sweep.code_hash``, by file paths.
    """
    package = package or LIBRARY
    folder = _package_dir(package)
    if folder is None:
        return {}

    def ours(name):
        return name == package or name.startswith(package + ".")

    queue = [name for tree in trees for name in _imported(tree, "__main__", False) if ours(name)]
    hashes = {}
    while queue:
        module = queue.pop()
        if module in hashes:
            continue
        path = _module_file(module, folder)
        if path is None:
            continue
        source = path.read_bytes()
        hashes[module] = _sha(source)
        parts = module.split(".")
        queue += [".".join(parts[:i]) for i in range(1, len(parts))]
        tree = _parse(source.decode("utf-8", "replace"))
        if tree is not None:
            queue += [n for n in _imported(tree, module, path.name == "__init__.py") if ours(n)]
    return dict(sorted(hashes.items()))


# ------------------------------------------------------------------------------ key

def _presets(trees, params_dir: Path) -> dict:
    """The preset sections the chapter reads, from every scale file; the files whole if unsure."""
    import yaml

    sections, unsure = set(), False
    for tree in trees:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "presets"):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    sections.add(first.value)
                else:
                    unsure = True
    out = {}
    for path in sorted(params_dir.glob("*.yaml")):
        if unsure:
            out[path.name] = _sha(path.read_bytes())
            continue
        data = yaml.safe_load(path.read_text()) or {}
        out[path.name] = {s: json.dumps(data.get(s), sort_keys=True, default=repr) for s in sorted(sections)}
    return out


def _data_files(trees, folder: Path) -> dict[str, str]:
    """{path: SHA-256} of each existing file named by a string constant, relative to ``folder``."""
    out = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 0 < len(node.value) < 300 \
                    and "\n" not in node.value:
                with_path = folder / node.value
                try:
                    if with_path.is_file():
                        out[node.value] = _sha(with_path.read_bytes())
                except (OSError, ValueError):
                    pass
    return dict(sorted(out.items()))


def key(nb_path, parameters: dict, *, root) -> tuple[str, dict]:
    """(SHA-256 hex key, its parts) of notebook ``nb_path`` run with ``parameters``."""
    nb_path, root = Path(nb_path), Path(root)
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    code = [(_source(c), "parameters" in c.get("metadata", {}).get("tags", []))
            for c in nb["cells"] if c["cell_type"] == "code"]
    trees = [t for t in (_parse(src) for src, _ in code) if t is not None]
    requirements = root / "requirements.txt"
    parts = {
        "format": FORMAT,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "code_cells": _sha(json.dumps(code).encode()),
        "parameters": json.dumps(parameters, sort_keys=True, default=repr),
        "presets": _presets(trees, root / "params"),
        "library": library_sources(trees),
        "data": _data_files(trees, nb_path.parent),
        "requirements": _sha(requirements.read_bytes()) if requirements.exists() else None,
    }
    return _sha(json.dumps(parts, sort_keys=True).encode()), parts


def why_missed(parts: dict, folder: Path) -> str:
    """What changed since the newest entry in ``folder``, in a few words ("" if none to compare)."""
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) \
        if folder.is_dir() else []
    if not entries:
        return "not in the cache"
    try:
        old = json.loads(entries[0].read_text())
    except (OSError, ValueError):
        return "not in the cache"
    changed = []
    for name in parts:
        if old.get(name) == parts[name]:
            continue
        if name == "library" and isinstance(old.get(name), dict):
            mods = sorted(m for m in set(parts[name]) | set(old[name])
                          if parts[name].get(m) != old[name].get(m))
            changed.append("library " + ", ".join(mods[:3]) + (" ..." if len(mods) > 3 else ""))
        else:
            changed.append(name.replace("_", " "))
    return "changed: " + "; ".join(changed) if changed else "not in the cache"


# ---------------------------------------------------------------------- entries

def entry(cache_dir, nb_path, digest: str) -> Path:
    """Where the executed copy of ``nb_path`` under key ``digest`` is kept."""
    return Path(cache_dir) / Path(nb_path).stem / f"{digest}.ipynb"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(path)


def store(executed, cache_dir, nb_path, digest: str, parts: dict) -> Path:
    """Keep an executed notebook under its key; prune the chapter's oldest entries."""
    path = entry(cache_dir, nb_path, digest)
    _write_atomic(path.with_suffix(".json"), json.dumps(parts, indent=1, sort_keys=True).encode())
    _write_atomic(path, Path(executed).read_bytes())
    entries = sorted(path.parent.glob("*.ipynb"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".json").unlink(missing_ok=True)
    return path


def restore(cached, nb_path, out) -> bool:
    """Stage ``nb_path`` (its current cells) with the outputs of the ``cached`` run into ``out``.

    Code cells are matched in order (the cell papermill injected is put back after the
    cell tagged ``parameters``, as papermill places it); returns False, writing nothing,
    if the code cells differ (then the chapter must run).
    """
    import nbformat

    cached, out = Path(cached), Path(out)
    try:
        run_nb = nbformat.read(str(cached), as_version=4)
    except (OSError, ValueError):
        return False
    source = nbformat.read(str(nb_path), as_version=4)

    def injected(cell):
        return "injected-parameters" in cell.get("metadata", {}).get("tags", [])

    ran = [c for c in run_nb.cells if c.cell_type == "code" and not injected(c)]
    code = [c for c in source.cells if c.cell_type == "code"]
    if len(ran) != len(code) or any(_source(a) != _source(b) for a, b in zip(ran, code)):
        return False
    for cell, done in zip(code, ran):
        cell.outputs = done.get("outputs", [])
        cell.execution_count = done.get("execution_count")
        for name in ("papermill", "execution"):
            if name in done.get("metadata", {}):
                cell.metadata[name] = done.metadata[name]
    at = next((i + 1 for i, c in enumerate(source.cells)
               if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])), 0)
    source.cells[at:at] = [c for c in run_nb.cells if injected(c)]
    source.metadata = run_nb.metadata
    _write_atomic(out, nbformat.writes(source).encode("utf-8"))
    os.utime(cached)  # a reused entry counts as new when pruning
    return True


def cached_duration(cached) -> float | None:
    """Wall time of the run that made a cache entry (papermill's record), in seconds."""
    try:
        meta = json.loads(Path(cached).read_text(encoding="utf-8")).get("metadata", {})
        return float(meta["papermill"]["duration"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
