"""The execution cache of the chapters (scripts/exec_cache.py, used by scripts/chapters.py run).

A toy chapter importing a toy library stands in for a book chapter: a prose edit is a
hit that shows the new prose, while a change to a code cell, a parameter, a preset the
chapter reads, a file it names or a library module it imports (even indirectly) is a miss.
Most checks are on the key alone (no kernel); one sequence runs the toy chapter for real.
"""

import ast
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402
import exec_cache  # noqa: E402


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A toy book: params/, requirements.txt, a library ``toylib`` and a chapter using it."""
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "quick.yaml").write_text("toy:\n  x: 1.0\nother:\n  z: 5\n")
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    book = tmp_path / "book"
    (book / "toylib").mkdir(parents=True)
    (book / "data").mkdir()
    (book / "data" / "table.txt").write_text("1 2 3\n")
    (book / "toylib" / "__init__.py").write_text("")
    (book / "toylib" / "model.py").write_text("from . import helper\n\ndef f(x):\n    return helper.k * x\n")
    (book / "toylib" / "helper.py").write_text("k = 2.0\n")
    (book / "toylib" / "unused.py").write_text("z = 0\n")
    monkeypatch.setattr(exec_cache, "LIBRARY", "toylib")
    monkeypatch.syspath_prepend(str(book))  # where the key finds toylib (the kernel: its cwd)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("x = 1.0  # a number")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# Toy\n\nOld prose."), params,
                nbformat.v4.new_code_cell("from myst_nb import glue\nfrom toylib import model\n"
                                          "if False:\n    presets.load('toy', 'quick')\n"
                                          "table = 'data/table.txt'"),
                nbformat.v4.new_markdown_cell("The value is {glue:}`y`."),
                nbformat.v4.new_code_cell("glue('y', model.f(x), display=False)")]
    path = book / "toy.ipynb"
    nbformat.write(nb, str(path))
    return path


def _edit(path, index, text):
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[index].source = text
    nbformat.write(nb, str(path))


def _key(path, **params):
    return exec_cache.key(path, {"scale": "quick", **params}, root=path.parents[1])[0]


def test_key_ignores_prose_and_sees_code_parameters_presets_data_and_library(toy):
    book = toy.parent
    base = _key(toy)
    assert _key(toy) == base  # stable
    _edit(toy, 0, "# Toy\n\nNew prose, one word changed.")
    assert _key(toy) == base, "a markdown edit must not change the key"
    assert _key(toy, x=2.0) != base, "a parameter is in the key"
    (toy.parents[1] / "params" / "quick.yaml").write_text("toy:\n  x: 1.0\nother:\n  z: 6\n")
    assert _key(toy) == base, "a preset section the chapter does not read is not in the key"
    (toy.parents[1] / "params" / "quick.yaml").write_text("toy:\n  x: 1.5\nother:\n  z: 6\n")
    changed = _key(toy)
    assert changed != base, "the chapter's preset section is in the key"
    (book / "toylib" / "unused.py").write_text("z = 1\n")
    assert _key(toy) == changed, "a library module the chapter does not import is not in the key"
    (book / "toylib" / "helper.py").write_text("k = 3.0\n")
    assert _key(toy) != changed, "a module imported by an imported module is in the key"
    changed = _key(toy)
    (book / "data" / "table.txt").write_text("1 2 4\n")
    assert _key(toy) != changed, "a file the code names is in the key"
    changed = _key(toy)
    (toy.parents[1] / "requirements.txt").write_text("numpy==2.4.7\n")
    assert _key(toy) != changed, "requirements.txt is in the key"
    changed = _key(toy)
    _edit(toy, 4, "glue('y', 2 * model.f(x), display=False)")
    assert _key(toy) != changed, "a code edit changes the key"


def test_library_closure_is_that_of_the_sweep_cache():
    """The key follows a chapter's imports as tsdyn.sweep.code_hash does (same modules)."""
    from tsdyn import committee, sweep

    mine = exec_cache.library_sources([ast.parse("import tsdyn.committee.simulate")])
    assert set(mine) == set(sweep._code_closure(committee.simulate))
    notebook = exec_cache.library_sources([ast.parse("from tsdyn import committee\n"
                                                     "from tsdyn.stats import fit_line")])
    assert {"tsdyn", "tsdyn.committee", "tsdyn.committee.sampler", "tsdyn.stats"} <= set(notebook)
    assert not any(m.startswith("tsdyn.dmft") for m in notebook)  # another chapter's package


def test_second_run_reuses_prose_edit_shows_and_a_library_change_reruns(toy, tmp_path):
    stage, cache = tmp_path / "stage", tmp_path / "cache"
    log = []

    def build(**kw):
        from io import StringIO

        stream = StringIO()
        outcomes = chapters.run([toy], out_dir=stage, cache_dir=cache, stream=stream, **kw)
        log.append(stream.getvalue())
        (outcome,) = outcomes
        assert outcome.status in ("ran", "reused"), outcome.error
        staged = stage / toy.name  # outside the repository: the notebook's name
        return outcome, nbformat.read(str(staged), as_version=4), chapters.read_glue(staged)

    first, _, glued = build()
    assert first.status == "ran" and glued["y"] == 2.0
    assert "chapter costs" in log[-1] and "ran" in log[-1]

    _edit(toy, 0, "# Toy\n\nNew prose.")
    second, staged, glued = build()
    assert second.status == "reused" and glued["y"] == 2.0
    assert staged.cells[0].source == "# Toy\n\nNew prose."  # the current prose, the cached outputs
    injected = [c for c in staged.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and staged.cells.index(injected[0]) == 2  # after the parameters cell
    assert "remove-cell" in injected[0].metadata["tags"]
    assert "reused" in log[-1] and "cached run took" in log[-1]

    (toy.parent / "toylib" / "helper.py").write_text("k = 3.0\n")
    third, _, glued = build()
    assert third.status == "ran" and glued["y"] == 3.0
    assert "toylib.helper" in third.note  # the report says what changed

    fourth, _, glued = build(use_cache=False)  # make book CACHE=0
    assert fourth.status == "ran" and fourth.note == "cache bypassed" and glued["y"] == 3.0


def test_restore_refuses_a_cached_run_of_other_code(toy, tmp_path):
    """Code cells are matched in order and compared: a stale entry is never staged."""
    nb = nbformat.read(str(toy), as_version=4)
    executed = tmp_path / "executed.ipynb"
    nb.cells[4].source = "glue('y', 0, display=False)"
    nbformat.write(nb, str(executed))
    assert not exec_cache.restore(executed, toy, tmp_path / "out.ipynb")
    assert not (tmp_path / "out.ipynb").exists()


def test_store_keeps_the_newest_entries_of_a_chapter(toy, tmp_path):
    import os

    cache = tmp_path / "cache"
    for i in range(exec_cache.KEEP + 2):
        path = exec_cache.store(toy, cache, toy, f"{i:064x}", {"i": i})
        os.utime(path, (i, i))
    kept = sorted(p.stem for p in (cache / toy.stem).glob("*.ipynb"))
    assert kept == [f"{i:064x}" for i in range(2, exec_cache.KEEP + 2)]
    assert len(list((cache / toy.stem).glob("*.json"))) == exec_cache.KEEP
    assert not list((cache / toy.stem).glob(".*tmp*"))  # no temporary left behind
