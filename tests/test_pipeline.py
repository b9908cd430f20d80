"""Tests of the notebook pipeline in scripts/chapters.py (papermill runs, glue, toc)."""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402


def _notebook(path, *sources, parameters="x = 1.0"):
    """A notebook with a cell tagged ``parameters`` followed by ``sources``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, str(path))
    return path


def test_read_glue_values_and_kernel_interpreter(tmp_path):
    nb = _notebook(
        tmp_path / "glued.ipynb",
        "import os, sys\nfrom myst_nb import glue",
        'glue("x", x * 1.5, display=False)\n'
        'glue("label", "hello", display=False)\n'
        'glue("shown", [1, 2, 3])\n'
        'glue("exe", sys.executable, display=False)\n'
        'glue("cwd", os.getcwd(), display=False)\n'
        'glue("backend", __import__("matplotlib").get_backend(), display=False)',
    )
    (tmp_path / "work").mkdir()
    out = tmp_path / "out" / "glued.ipynb"
    chapters.execute(nb, out, {"x": 1.0}, cwd=tmp_path / "work")
    values = chapters.read_glue(out)
    assert values["x"] == 1.5
    assert values["label"] == "hello"
    assert values["shown"] == [1, 2, 3]
    # The kernel is this interpreter (the venv's python when run by `make test`),
    # started in the requested working directory, with inline figures.
    assert Path(values["exe"]) == Path(sys.executable)
    assert Path(values["cwd"]).resolve() == (tmp_path / "work").resolve()
    assert "inline" in values["backend"]
    # read_glue also takes a notebook object
    assert chapters.read_glue(nbformat.read(str(out), as_version=4)) == values


def test_snapshot_keeps_glued_figures_and_numbers(tmp_path):
    """A kept run: each glued figure as the PNG the notebook holds, each displayed figure
    by its cell, every glued number and short list in glue.json, nothing else."""
    import base64
    import json

    nb = _notebook(
        tmp_path / "snap.ipynb",
        "import matplotlib.pyplot as plt\nfrom myst_nb import glue",
        'fig, ax = plt.subplots(); ax.plot([0, 1], [x, 2 * x])\n'
        'glue("line_fig", fig, display=False); plt.close(fig)\n'
        'glue("slope", x, display=False)\nglue("label", "two", display=False)\n'
        'glue("ks", [2, 4], display=False)',
        'for s in (1, 2):\n    plt.plot([0, s]); plt.show()',
    )
    out = tmp_path / "out.ipynb"
    chapters.execute(nb, out, {"x": 3.0})
    written = chapters.snapshot(out, tmp_path / "kept")
    shown = nbformat.read(str(out), as_version=4).cells[-1]
    assert sorted(p.name for p in written) == sorted(
        ["glue.json", "line_fig.png", f"{shown.id}-1.png", f"{shown.id}-2.png"])
    assert (tmp_path / "kept" / f"{shown.id}-2.png").read_bytes() == base64.b64decode(
        shown.outputs[1]["data"]["image/png"])  # a displayed figure, by its cell and order
    png = (tmp_path / "kept" / "line_fig.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    stored = dict(chapters._glue_outputs(out))["line_fig"]["image/png"]
    assert png == base64.b64decode(stored)  # the notebook's own bytes, not a re-rendering
    assert json.loads((tmp_path / "kept" / "glue.json").read_text()) == {
        "slope": 3.0, "label": "two", "ks": [2, 4]}


def test_chapter_kernels_run_over_ipc_with_a_quiet_log(tmp_path, capfd):
    """No "running over TCP without encryption" warning from the kernel, no papermill
    "Unable to parse line" for a parameters cell that follows the rules."""
    nb = _notebook(tmp_path / "quiet.ipynb",
                   "import json\nfrom ipykernel import get_connection_info\nfrom myst_nb import glue",
                   'glue("transport", json.loads(get_connection_info())["transport"], display=False)',
                   parameters="x: float = 1.0  # a number, no equals sign\ny: int = 2  # another")
    capfd.readouterr()
    chapters.execute(nb, tmp_path / "out.ipynb", {"x": 2.0, "y": 3})
    log = capfd.readouterr()
    assert chapters.read_glue(tmp_path / "out.ipynb")["transport"] == "ipc"
    for noise in ("without encryption", "Unable to parse", "Passed unknown parameter", "WARNING"):
        assert noise not in log.err + log.out


def test_read_glue_of_notebook_without_glue(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("text"), nbformat.v4.new_code_cell("1 + 1")]
    assert chapters.read_glue(nb) == {}


def _toc_files(toc):
    data = yaml.safe_load(Path(toc).read_text())
    files = []

    def walk(items):
        for item in items or []:
            if "file" in item:
                files.append(item["file"])
            walk(item.get("sections"))
            walk(item.get("chapters"))

    walk(data.get("chapters"))
    for part in data.get("parts") or []:
        walk(part.get("chapters"))
    return [data["root"], *files]


def test_chapter_notebooks_follow_toc():
    expected = [ROOT / f"{f}.ipynb" for f in _toc_files(ROOT / "_toc.yml")
                if not (ROOT / f"{f}.md").exists()]
    assert chapters.chapter_notebooks() == expected
    assert chapters.chapter_notebooks(), "_toc.yml lists no notebook chapter"
    assert ROOT / "book" / "01_committee.ipynb" in expected
    assert chapters.toc_entries()[0] == "book/intro"


def test_chapter_notebooks_on_temporary_toc(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    _notebook(tmp_path / "book" / "b.ipynb")
    _notebook(tmp_path / "book" / "a.ipynb")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: One\n    chapters:\n"
        "      - file: book/b\n        sections:\n          - file: book/a.ipynb\n")
    assert chapters.chapter_notebooks(tmp_path) == [tmp_path / "book" / "b.ipynb",
                                                    tmp_path / "book" / "a.ipynb"]


@pytest.mark.parametrize("text, value", [("6", 6), ("0.5", 0.5), ("1e-3", 1e-3),
                                         ("[2, 4]", [2, 4]), ("null", None),
                                         ("erf", "erf"), ("true", True)])
def test_parameter_values_from_command_line(text, value):
    assert chapters._parse_value(text) == value


def test_run_reports_failed_chapter(tmp_path):
    good = _notebook(tmp_path / "good.ipynb", "y = x + 1")
    bad = _notebook(tmp_path / "bad_chapter.ipynb",
                    "raise ValueError(f'eta must be > 0; got {x}')", parameters="x = 0")
    out = tmp_path / "stage"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "chapters.py"), "run", "--jobs", "2",
         "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "-p", "x", "-0.1", str(good), str(bad)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    report = proc.stdout.split("chapter(s) failed:")[-1]
    assert "bad_chapter.ipynb" in report
    assert "ValueError: eta must be > 0; got -0.1" in report
    assert "good.ipynb" not in report  # only the failed chapter is reported
    # the cost report names every chapter, with what was done; only the good one is cached
    costs = proc.stdout.split("chapter costs")[-1]
    assert re.search(r"good\.ipynb +ran ", costs) and re.search(r"bad_chapter\.ipynb +FAILED ", costs)
    assert [p.parent.name for p in (tmp_path / "cache").glob("*/*.ipynb")] == ["good"]
    assert (out / "good.ipynb").exists() and (out / "bad_chapter.ipynb").exists()
    # the cell papermill injects is folded in the book
    injected = [c for c in nbformat.read(str(out / "good.ipynb"), as_version=4).cells
                if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "remove-cell" in injected[0].metadata["tags"]
    # papermill marks the failing cell in the executed copy
    assert "An Exception was encountered" in (out / "bad_chapter.ipynb").read_text()


def test_reproducibility_index_has_a_section_per_chapter():
    """DESIGN: the book carries an index of every figure; each chapter has its section."""
    index = (ROOT / "book" / "reproducibility.md").read_text()
    for nb in chapters.chapter_notebooks():
        assert f"{{doc}}`{nb.stem}`" in index, f"book/reproducibility.md has no section for {nb.stem}"


def test_explore_sliders_run_only_when_moved():
    """plotting.sliders builds the Explore controls without calling the function (no
    output capture in headless runs) and re-runs it with every value when one moves."""
    from tsdyn import plotting

    calls = []

    def explore(K=2, g="erf", eta=0.2):
        calls.append((K, g, eta))

    box = plotting.sliders(explore, K=(1, 8), g=["erf", "linear"], eta=(0.05, 2.0, 0.05))
    assert calls == []
    assert [w.description for w in box.children[:-1]] == ["K", "g", "eta"]
    box.children[0].value = 5
    box.children[1].value = "linear"
    assert calls == [(5, "erf", 0.2), (5, "linear", 0.2)]
