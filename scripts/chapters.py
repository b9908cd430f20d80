#!/usr/bin/env python
"""Run the book's chapter notebooks with papermill and stage them for Jupyter Book.

The chapters are committed without outputs; the book is built from executed copies in
``_build/stage`` (``_config.yml`` says ``execute_notebooks: "off"``). Used by the
Makefile (``make book``, ``make chapter``) and importable by the tests::

    python scripts/chapters.py run [--scale quick] [--jobs N] [--no-cache] [-p NAME VALUE ...] [NB ...]
    python scripts/chapters.py stage
    python scripts/chapters.py params-doc [--check] [NB ...]
    python scripts/chapters.py snapshot EXECUTED_NB OUT_DIR

``run`` executes the given notebooks (default: every notebook chapter of ``_toc.yml``),
one at a time unless ``--jobs`` says otherwise (a chapter's sweeps already use every
core), each in its own process with its working directory set to the notebook's own
folder (as in Jupyter opened in ``book/``). A chapter whose code, parameters, presets
and library code are those of a run in the execution cache (``scripts/exec_cache.py``,
``_build/exec-cache``) is not run again: its current notebook is staged with the cached
outputs, so a prose edit shows without re-running anything. It collects failures and
prints, for each failed chapter, its name and the error with the traceback tail, then
the cost report (each chapter: ran or reused, wall time; also in
``_build/chapter-costs.txt``); the exit status is 1 if a chapter failed, so ``make`` stops.

``stage`` copies the book's other sources beside the executed chapters.

``snapshot`` keeps an executed chapter's glued figures (PNG) and numbers (``glue.json``)
for a page that shows a run the book build does not repeat (the papers' scale).

``params-doc`` appends "(quick: <value>, paper: <value>)" from ``params/*.yaml`` to the
comment of every chapter parameter filled from a preset (idempotent), so that
``papermill --help-notebook`` says where each default comes from; it refuses comments
that papermill cannot parse (holding ``=``). ``--check`` only reports.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import shutil
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import exec_cache  # noqa: E402  (scripts/exec_cache.py)

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
STAGE = BUILD / "stage"
FAILURES = BUILD / "chapter-failures.txt"
COSTS = BUILD / "chapter-costs.txt"  # the last `run`'s cost report (CI prints it)
CACHE = BUILD / "exec-cache"  # executed chapters, by key (scripts/exec_cache.py)
KERNEL_NAME = "python3"
# Inline backend for the kernel, whatever MPLBACKEND the caller has (the Makefile
# exports Agg for tests and benchmarks; a kernel on Agg would produce no figures).
KERNEL_MPLBACKEND = "module://matplotlib_inline.backend_inline"
TRACEBACK_TAIL = 25  # lines of traceback printed per failed chapter
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ---------------------------------------------------------------------------- toc

def toc_entries(toc: Path | str | None = None) -> list[str]:
    """Every ``file`` of a jb-book ``_toc.yml`` in reading order (root first), no suffix."""
    toc = Path(toc or ROOT / "_toc.yml")
    with open(toc) as f:
        data = yaml.safe_load(f)
    entries = [data["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                entries.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk({k: v for k, v in data.items() if k in ("parts", "chapters")})
    return [str(Path(e).with_suffix("")) if Path(e).suffix in (".md", ".ipynb") else e
            for e in entries]


def resolve_entry(entry: str, root: Path | str | None = None) -> Path:
    """The source file of a toc entry: ``.ipynb`` if present, else ``.md``.

    An entry with neither file resolves to the ``.ipynb`` (a chapter that should exist),
    so that running it fails loudly rather than being skipped.
    """
    root = Path(root or ROOT)
    nb, md = root / f"{entry}.ipynb", root / f"{entry}.md"
    if nb.exists() or not md.exists():
        return nb
    return md


def chapter_notebooks(root: Path | str | None = None, toc: Path | str | None = None) -> list[Path]:
    """Paths of the ``.ipynb`` chapters listed in ``_toc.yml``, in toc order."""
    root = Path(root or ROOT)
    toc = Path(toc or root / "_toc.yml")
    paths = [resolve_entry(e, root) for e in toc_entries(toc)]
    return [p for p in paths if p.suffix == ".ipynb"]


# ------------------------------------------------------------------------ execute

def kernel_dir() -> Path:
    """A Jupyter data dir holding a ``python3`` kernelspec that runs *this* interpreter.

    It is put first on ``JUPYTER_PATH`` while a chapter runs, so that a ``python3``
    kernelspec in the user's home (pointing to another Python) cannot shadow the venv.
    """
    base = BUILD / "jupyter"
    spec = base / "kernels" / KERNEL_NAME / "kernel.json"
    from ipykernel.kernelspec import get_kernel_dict

    content = get_kernel_dict()  # ipykernel's own spec (metadata, protocol version)...
    content["argv"][0] = sys.executable  # ...pinned to this interpreter
    content["display_name"] = f"Python 3 ({sys.prefix})"
    if not spec.exists() or json.loads(spec.read_text()) != content:
        spec.parent.mkdir(parents=True, exist_ok=True)
        tmp = spec.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(content, indent=1))
        tmp.replace(spec)
    return base


@contextlib.contextmanager
def _kernel_env():
    env = {
        "JUPYTER_PATH": os.pathsep.join(
            [str(kernel_dir())] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]),
        "MPLBACKEND": KERNEL_MPLBACKEND,
        "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(BUILD / "numba-cache")),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # silences a debugger warning on stderr
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# A quick-scale cell takes at most a minute or two; one that runs for this long is
# stuck (a kernel-client deadlock, say) and fails the run instead of stalling CI.
QUICK_CELL_TIMEOUT_S = 900


def execute(nb, out, parameters: dict | None = None, cwd=None, *, log_output=False,
            execution_timeout=None):
    """Execute notebook ``nb`` with papermill into ``out``; returns the executed notebook.

    ``parameters`` are injected after the cell tagged ``parameters``; ``cwd`` is the
    kernel's working directory (default: the notebook's folder). The kernel is
    ``python3`` from the current interpreter (see :func:`kernel_dir`). Raises
    ``papermill.PapermillExecutionError`` if a cell fails; ``out`` is written anyway,
    with the error shown in it.
    """
    import tempfile

    import papermill as pm

    nb, out = Path(nb), Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _kernel_env(), tempfile.TemporaryDirectory(prefix="tsdyn-kernel-") as sockets:
        return pm.execute_notebook(
            str(nb), str(out), parameters=dict(parameters or {}),
            cwd=str(cwd if cwd is not None else nb.parent),
            kernel_name=KERNEL_NAME, progress_bar=False, log_output=log_output,
            execution_timeout=execution_timeout, config=_ipc_config(sockets),
        )


def _ipc_config(folder):
    """Kernel over local (Unix-socket) IPC in ``folder`` instead of TCP.

    ipykernel warns on stderr, for every kernel, that TCP without encryption exposes the
    code and outputs to the network; IPC sockets are files only this user can reach.
    Each run gets its own folder: the default socket name ("kernel-ipc-N", relative to
    the working directory) would collide between chapters run in parallel in book/.
    Windows has no IPC transport in ZeroMQ: there the kernel stays on TCP.
    """
    from traitlets.config import Config

    if os.name == "nt":
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(str(folder), "kernel")}})


def _as_notebook(executed_nb):
    """An ``nbformat`` notebook from a path, or the notebook itself."""
    import nbformat

    if hasattr(executed_nb, "cells"):
        return executed_nb
    return nbformat.read(str(executed_nb), as_version=4)


def _glue_outputs(executed_nb):
    """``(name, data)`` of every ``myst_nb.glue`` output of an executed notebook.

    myst-nb 1.x emits each glue as a ``display_data`` output whose metadata holds
    ``{"scrapbook": {"name": ..., "mime_prefix": ...}}``; with ``display=False`` the
    mime types carry the prefix, which is stripped here. ``executed_nb`` is a path or
    an ``nbformat`` notebook.
    """
    for cell in _as_notebook(executed_nb).cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            meta = output.get("metadata", {}).get("scrapbook")
            if not meta or "name" not in meta:
                continue
            prefix = meta.get("mime_prefix", "") or ""
            yield meta["name"], {k[len(prefix):] if k.startswith(prefix) else k: v
                                 for k, v in output.get("data", {}).items()}


def read_glue(executed_nb) -> dict:
    """Values recorded with ``myst_nb.glue(name, value)`` in an executed notebook.

    Returns name -> the ``text/plain`` value, parsed with ``ast.literal_eval`` where
    possible (numbers, strings, lists...), else the text; a glue without text (a
    figure) maps to its mime bundle.
    """
    values = {}
    for name, data in _glue_outputs(executed_nb):
        text = data.get("text/plain")
        if text is None:
            values[name] = data
            continue
        if isinstance(text, list):
            text = "".join(text)
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            values[name] = text
    return values


def snapshot(executed_nb, out_dir) -> list[Path]:
    """Keep what an executed chapter showed: its glued figures as PNG files (``<name>.png``),
    the figures its cells displayed without a glue as ``<cell id>-<k>.png`` (the k-th
    image of that cell, from 1; cell ids are fixed in the chapter's source), its glued
    numbers in ``glue.json``.

    For a run the book build does not repeat (a chapter at the papers' scale, hours
    long): the files go into the book's sources, and a page shows them with their
    provenance. Returns the paths written.
    """
    import base64

    executed_nb = _as_notebook(executed_nb)  # read once, walked three times below
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, numbers = [], {}
    for name, data in _glue_outputs(executed_nb):
        if "image/png" in data:
            path = out_dir / f"{name}.png"
            path.write_bytes(base64.b64decode(data["image/png"]))
            written.append(path)
    figures = {path.stem for path in written}
    for cell in executed_nb.cells:
        shown = [o for o in cell.get("outputs", []) if cell.cell_type == "code"
                 and "image/png" in o.get("data", {}) and "scrapbook" not in o.get("metadata", {})]
        for k, output in enumerate(shown, start=1):
            path = out_dir / f"{cell.id}-{k}.png"
            path.write_bytes(base64.b64decode(output["data"]["image/png"]))
            written.append(path)
    for name, value in read_glue(executed_nb).items():
        if name in figures:
            continue
        if isinstance(value, (int, float, str, bool)) or value is None:
            numbers[name] = value
        elif isinstance(value, (list, tuple)):
            numbers[name] = list(value)
    path = out_dir / "glue.json"
    path.write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")
    written.append(path)
    return written


# ---------------------------------------------------------------------------- run

def output_path(nb: Path, out_dir: Path) -> Path:
    """Where ``run`` writes the executed ``nb``: same relative path inside ``out_dir``."""
    nb = Path(nb).resolve()
    try:
        return Path(out_dir) / nb.relative_to(ROOT)
    except ValueError:
        return Path(out_dir) / nb.name


def _format_error(exc: BaseException) -> str:
    """The error line and the traceback tail of a failed chapter."""
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        tb = _ANSI.sub("", "\n".join(exc.traceback)).splitlines()
        head = f"{exc.ename}: {exc.evalue} (cell In [{exc.exec_count}])"
    else:
        tb = "".join(traceback.format_exception(exc)).splitlines()
        head = f"{type(exc).__name__}: {exc}"
    tail = tb[-TRACEBACK_TAIL:]
    return "\n".join([head, *(["    ..."] if len(tb) > len(tail) else []),
                      *("    " + line for line in tail)])


def _run_one(nb: str, out: str, parameters: dict, log_output: bool, timeout):
    """Worker: returns (nb, out, None or error text, wall seconds). Never raises."""
    import time

    start = time.perf_counter()
    try:
        execute(nb, out, parameters, cwd=Path(nb).resolve().parent, log_output=log_output,
                execution_timeout=timeout)
        hide_injected_parameters(out)
        return nb, out, None, time.perf_counter() - start
    except BaseException as exc:  # noqa: BLE001 - every failure is reported, not raised
        return nb, out, _format_error(exc), time.perf_counter() - start


def hide_injected_parameters(path) -> None:
    """Tag the cell papermill injects (``injected-parameters``) ``remove-cell``.

    A chapter's first screen is its question and headline figure (CONTRIBUTING.md): no
    code toggle. The values a build passed (``scale`` and any ``-p``) are those of the
    command that ran it, recorded on the paper-scale pages' provenance boxes.
    """
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = False
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell["metadata"]["tags"] = [t for t in tags if t != "hide-cell"] + ["remove-cell"]
            changed = True
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@dataclass
class Outcome:
    """What ``run`` did with one chapter: ``status`` "ran", "reused" or "FAILED"."""

    name: str
    status: str
    seconds: float  # wall time of this build's work on the chapter
    error: str | None = None
    note: str = ""  # why it ran (what changed), or what the reused run had cost


def run(notebooks, *, scale="quick", parameters=None, jobs=None, out_dir=None,
        log_output=False, timeout=None, cache_dir=CACHE, use_cache=True,
        stream=sys.stdout) -> list[Outcome]:
    """Execute ``notebooks`` (``jobs`` at a time), reusing cached runs; returns one Outcome each.

    A chapter whose key (``exec_cache.key``: code cells, parameters, presets, library
    code...) has an entry in ``cache_dir`` is staged from it without running (unless
    ``use_cache`` is False); every chapter that runs without error is stored there
    (``cache_dir=None``: no cache at all). Ends with the cost report (:func:`costs`).
    """
    import time

    out_dir = Path(out_dir or STAGE)
    params = {"scale": scale, **(parameters or {})}
    notebooks = [Path(nb) for nb in notebooks]
    outcomes, todo, keys = {}, [], {}
    for nb in notebooks:
        name, out = _display_name(nb), output_path(nb, out_dir)
        if cache_dir is None:
            todo.append((nb, out, ""))
            continue
        start = time.perf_counter()
        digest, parts = exec_cache.key(nb, params, root=ROOT)
        keys[name] = (digest, parts)
        cached = exec_cache.entry(cache_dir, nb, digest)
        if use_cache and cached.is_file() and exec_cache.restore(cached, nb, out):
            hide_injected_parameters(out)  # the tag of this version, whatever the cached run had
            before = exec_cache.cached_duration(cached)
            note = f"cached run took {before:.0f} s" if before is not None else ""
            outcomes[name] = Outcome(name, "reused", time.perf_counter() - start, note=note)
            print(f"reused  {name} -> {_display_name(out)} (cache; {note})", file=stream, flush=True)
        else:
            todo.append((nb, out, exec_cache.why_missed(parts, cached.parent) if use_cache
                         else "cache bypassed"))
    jobs = max(1, min(jobs or 1, len(todo) or 1))
    if todo:
        print(f"running {len(todo)} chapter(s) with papermill, {jobs} at a time, "
              f"parameters {params}", file=stream, flush=True)
    notes = {_display_name(nb): note for nb, _, note in todo}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_run_one, str(nb), str(out), params, log_output, timeout)
                   for nb, out, _ in todo]
        for fut in as_completed(futures):
            nb, out, err, seconds = fut.result()
            name = _display_name(nb)
            if err is None:
                outcomes[name] = Outcome(name, "ran", seconds, note=notes[name])
                if cache_dir is not None:
                    exec_cache.store(out, cache_dir, nb, *keys[name])
                print(f"ok      {name} -> {_display_name(out)} ({seconds:.0f} s)", file=stream, flush=True)
            else:
                outcomes[name] = Outcome(name, "FAILED", seconds, error=err, note=notes[name])
                print(f"FAILED  {name} -> {_display_name(out)}", file=stream, flush=True)
    ordered = [outcomes[_display_name(nb)] for nb in notebooks]
    print("\n" + costs(ordered, jobs=jobs), file=stream, flush=True)
    return ordered


def costs(outcomes, *, jobs=1) -> str:
    """The cost report: per chapter whether it ran or was reused, and its wall time."""
    width = max([len(o.name) for o in outcomes] + [7])
    lines = [f"chapter costs (wall time; {jobs} chapter(s) at a time):"]
    for o in outcomes:
        lines.append(f"  {o.name:<{width}}  {o.status:<6}  {o.seconds:7.1f} s" + (f"  ({o.note})" if o.note else ""))
    lines.append(f"  {'total':<{width}}  {'':<6}  {sum(o.seconds for o in outcomes):7.1f} s")
    return "\n".join(lines)


def _display_name(path) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def report(failures, stream=sys.stdout) -> str:
    """Human-readable summary of failed chapters (empty string when none failed)."""
    if not failures:
        return ""
    lines = [f"{len(failures)} chapter(s) failed:"]
    for name, err in failures:
        lines += ["", f"=== {name} ===", err]
    text = "\n".join(lines) + "\n"
    print("\n" + text, file=stream, flush=True)
    return text


# -------------------------------------------------------------------------- stage

def stage(out_dir=None, root=None) -> Path:
    """Copy ``_config.yml``, ``_toc.yml``, ``_ext/`` and ``book/`` (except notebooks) into the stage.

    The executed notebooks are already there (``run`` writes them); a toc notebook that
    has no executed copy is reported, since the build would show it empty or fail.
    """
    root = Path(root or ROOT)
    out_dir = Path(out_dir or STAGE)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml", "references.bib"):
        if (root / name).exists():
            shutil.copy2(root / name, out_dir / name)
    ignore = shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints", "__pycache__")
    if (root / "book").is_dir():
        shutil.copytree(root / "book", out_dir / "book", ignore=ignore, dirs_exist_ok=True)
    if (root / "_ext").is_dir():  # the book's Sphinx extensions (_config.yml: local_extensions)
        shutil.copytree(root / "_ext", out_dir / "_ext", ignore=ignore, dirs_exist_ok=True)
    missing = [nb for nb in chapter_notebooks(root)
               if not (out_dir / nb.relative_to(root)).exists()]
    for nb in missing:
        print(f"warning: no executed copy of {nb.relative_to(root)} in {out_dir}; "
              f"run `python scripts/chapters.py run` first", file=sys.stderr)
    return out_dir


# --------------------------------------------------------------------- params-doc
#
# A chapter's parameters cell holds ``name: Optional[type] = None  # comment`` lines,
# filled from the ``scale`` preset by ``presets.load(section, scale, overrides)``.
# ``params-doc`` appends to each comment where the default comes from,
# "(quick: <value>, paper: <value>)", read from params/*.yaml, so that
# ``papermill --help-notebook`` documents it. Running it again replaces the suffix.

PRESET_SCALES = ("quick", "paper")
_SUFFIX = re.compile(r"\s*\(quick: .*\)\s*$")
LIST_ITEMS_SHOWN = 6  # longer preset lists are abbreviated in the help (the YAML has them all)


class ParamsDocError(ValueError):
    """A parameters cell the tool cannot document (the message names the line)."""


def parameters_cell(nb: dict) -> dict | None:
    """The first code cell tagged ``parameters`` of a notebook (JSON dict), or None."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return cell
    return None


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _parse_code(text: str):
    """AST of a code cell, IPython magics and shell lines blanked; None if it does not parse."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def preset_map(nb: dict) -> dict[str, tuple[str, str]]:
    """parameter name -> (preset section, preset key), from the ``presets.load`` calls.

    A call ``presets.load("committee", scale, dict(g=g, t=t_max))`` (or with a dict
    display ``{"g": g}``) maps the variable ``t_max`` to the key ``t`` of section
    ``committee``.
    """
    mapping = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or cell is parameters_cell(nb):
            continue
        tree = _parse_code(_source(cell))
        for node in ast.walk(tree) if tree else ():
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "presets"):
                continue
            args = list(node.args) + [k.value for k in node.keywords if k.arg == "overrides"]
            if not (args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
                continue
            section = args[0].value
            overrides = args[2] if len(args) > 2 else None
            pairs = []
            if isinstance(overrides, ast.Call) and getattr(overrides.func, "id", None) == "dict":
                pairs = [(k.arg, k.value) for k in overrides.keywords if k.arg]
            elif isinstance(overrides, ast.Dict):
                pairs = [(k.value, v) for k, v in zip(overrides.keys, overrides.values)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            for key, value in pairs:
                if isinstance(value, ast.Name):
                    mapping[value.id] = (section, key)
    return mapping


def preset_text(value) -> str:
    """A preset value as the help shows it: ``erf``, ``0.2``, ``[2, 4, 6]``, ``None``."""
    if isinstance(value, (list, tuple)):
        items = [preset_text(v) for v in value]
        if len(items) > LIST_ITEMS_SHOWN:
            return f"[{', '.join(items[:3])}, ..., {items[-1]}] ({len(items)} values)"
        return f"[{', '.join(items)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {preset_text(v)}" for k, v in value.items()) + "}"
    return value if isinstance(value, str) else repr(value)


def preset_suffix(section: str, key: str, presets: dict) -> str:
    """"(quick: <value>, paper: <value>)" for one preset key; ParamsDocError if a scale lacks it."""
    texts = []
    for scale in PRESET_SCALES:
        table = presets[scale].get(section)
        if table is None or key not in table:
            raise ParamsDocError(f"params/{scale}.yaml has no key {key!r} in section {section!r}")
        texts.append(f"{scale}: {preset_text(table[key])}")
    return f"({', '.join(texts)})"


def load_presets(params_dir=None) -> dict:
    params_dir = Path(params_dir or ROOT / "params")
    return {scale: yaml.safe_load((params_dir / f"{scale}.yaml").read_text()) or {}
            for scale in PRESET_SCALES}


def _comments(text: str) -> dict[int, tuple[int, str]]:
    """line number (1-based) -> (column, text without '#') of each comment."""
    import io
    import tokenize

    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = (tok.start[1], tok.string[1:].strip())
    return out


def document_parameters(text: str, mapping: dict, presets: dict) -> tuple[str, list[str]]:
    """The parameters cell ``text`` with preset suffixes; returns (new text, parameter names).

    Raises ParamsDocError for a line papermill's ``--help-notebook`` would drop or
    misread: a definition over several lines, a comment holding ``=``, a parameter
    without a comment, or a preset key missing from a scale.
    """
    tree = _parse_code(text)
    if tree is None:
        raise ParamsDocError("the parameters cell is not valid Python")
    comments = _comments(text)
    lines = text.split("\n")
    names, errors = [], []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        else:
            errors.append(f"line {node.lineno}: only one `name: type = default  # comment` per "
                          f"line, imports and comments belong in a parameters cell")
            continue
        names.append(name)
        where = f"line {node.lineno} ({name})"
        if node.end_lineno != node.lineno:
            errors.append(f"{where}: a parameter must fit on one line "
                          f"(papermill reads only the last line's comment)")
            continue
        if node.lineno not in comments:
            errors.append(f"{where}: no comment; say what the parameter is after '#'")
            continue
        column, comment = comments[node.lineno]
        if "=" in comment:
            errors.append(f"{where}: the comment holds '=', which makes papermill "
                          f"--help-notebook drop the line; reword it: {comment!r}")
            continue
        comment = _SUFFIX.sub("", comment)
        if name in mapping:
            try:
                suffix = preset_suffix(*mapping[name], presets)
            except ParamsDocError as exc:
                errors.append(f"{where}: {exc}")
                continue
            if "=" in suffix:
                errors.append(f"{where}: a preset value holds '=', which papermill cannot show: {suffix}")
                continue
            comment = f"{comment} {suffix}"
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = f"{line[:column].rstrip()}  # {comment}"
    if errors:
        raise ParamsDocError("\n        ".join(errors))
    return "\n".join(lines), names


def params_doc(notebooks, *, check=False, params_dir=None, stream=sys.stdout) -> int:
    """Document (or with ``check``, verify) the parameters of ``notebooks``; returns the exit status."""
    presets = load_presets(params_dir)
    status = 0
    for nb_path in notebooks:
        nb_path = Path(nb_path)
        raw = nb_path.read_text(encoding="utf-8")
        nb = json.loads(raw)
        cell = parameters_cell(nb)
        name = _display_name(nb_path)
        if cell is None:
            print(f"error   {name}: no code cell tagged 'parameters'", file=stream)
            status = 1
            continue
        try:
            text, names = document_parameters(_source(cell), preset_map(nb), presets)
        except ParamsDocError as exc:
            print(f"error   {name}: {exc}", file=stream)
            status = 1
            continue
        if text == _source(cell):
            print(f"ok      {name}: {len(names)} parameters documented", file=stream)
            continue
        if check:
            old = _source(cell).split("\n")
            changed = [new for old_line, new in zip(old, text.split("\n")) if old_line != new]
            print(f"stale   {name}: {len(changed)} parameter comments differ from params/*.yaml, e.g.\n"
                  f"        {changed[0].strip()}", file=stream)
            status = 1
            continue
        cell["source"] = text.splitlines(keepends=True)
        nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"updated {name}: {len(names)} parameters documented", file=stream)
    if status and check:
        print("run `python scripts/chapters.py params-doc` to update the comments", file=stream)
    return status


# ---------------------------------------------------------------------------- CLI

def _parse_value(text: str):
    """A ``-p`` value: int, float, or YAML (lists, null, true/false), else the string."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (list, dict, bool, type(None), str)) else text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="execute chapters with papermill into the stage")
    p_run.add_argument("notebooks", nargs="*", type=Path,
                       help="chapter notebooks (default: all notebook chapters of _toc.yml)")
    p_run.add_argument("--scale", default="quick", help="preset in params/ (default: quick)")
    p_run.add_argument("--jobs", "-j", type=int, default=1,
                       help="chapters run at the same time (default 1: each chapter's sweeps "
                            "already use every core)")
    p_run.add_argument("--no-cache", action="store_true",
                       help="run every chapter even if the execution cache holds its run "
                            "(the new runs are still stored)")
    p_run.add_argument("--cache-dir", type=Path, default=CACHE,
                       help=f"execution cache (default: {CACHE})")
    p_run.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                       metavar=("NAME", "VALUE"),
                       help="extra parameter (value parsed as number / YAML), repeatable")
    p_run.add_argument("--out", type=Path, default=STAGE, help=f"output dir (default: {STAGE})")
    p_run.add_argument("--timeout", type=int, default=None,
                       help=f"per-cell timeout in seconds (default at quick scale: {QUICK_CELL_TIMEOUT_S}; "
                            "none at paper scale)")
    p_run.add_argument("--log-output", action="store_true", help="stream cell output to the log")
    p_stage = sub.add_parser("stage", help="copy config and non-notebook book files into the stage")
    p_stage.add_argument("--out", type=Path, default=STAGE)
    sub.add_parser("list", help="print the notebook chapters in toc order")
    p_snap = sub.add_parser("snapshot", help="write an executed chapter's glued figures (PNG) "
                                             "and numbers (glue.json) into a folder")
    p_snap.add_argument("executed", type=Path, help="an executed chapter notebook")
    p_snap.add_argument("out", type=Path, help="folder for the PNG files and glue.json")
    p_doc = sub.add_parser("params-doc", help="append '(quick: ..., paper: ...)' from params/*.yaml "
                                              "to every parameter comment")
    p_doc.add_argument("notebooks", nargs="*", type=Path,
                       help="chapter notebooks (default: all notebook chapters of _toc.yml)")
    p_doc.add_argument("--check", action="store_true",
                       help="change nothing; exit 1 if a comment is stale or cannot be documented")
    args = parser.parse_args(argv)

    if args.command == "params-doc":
        return params_doc(args.notebooks or chapter_notebooks(), check=args.check)
    if args.command == "list":
        for nb in chapter_notebooks():
            print(nb.relative_to(ROOT))
        return 0
    if args.command == "snapshot":
        for path in snapshot(args.executed, args.out):
            print(path)
        return 0
    if args.command == "stage":
        print(f"staged book sources in {stage(args.out)}")
        return 0

    notebooks = args.notebooks or chapter_notebooks()
    if not notebooks:
        print("no notebook chapters in _toc.yml: nothing to run")
        return 0
    params = {name: _parse_value(value) for name, value in args.parameter}
    outcomes = run(notebooks, scale=args.scale, parameters=params, jobs=args.jobs,
                   out_dir=args.out, log_output=args.log_output,
                   timeout=args.timeout or (QUICK_CELL_TIMEOUT_S if args.scale == "quick" else None),
                   cache_dir=args.cache_dir, use_cache=not args.no_cache)
    failures = [(o.name, o.error) for o in outcomes if o.status == "FAILED"]
    text = report(failures)
    if args.out.resolve() == STAGE.resolve():
        FAILURES.parent.mkdir(parents=True, exist_ok=True)
        FAILURES.write_text(text)
        COSTS.write_text(costs(outcomes, jobs=args.jobs) + "\n")
    if len(notebooks) == 1 and not failures:
        print(output_path(notebooks[0], args.out))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
