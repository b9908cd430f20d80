"""Publication: the GitHub Pages workflow, and the launch buttons switched by one URL.

The workflow file is validated against GitHub's workflow schema (vendored by
check-jsonschema, offline) and for what it must do: build with the README's command,
whose make targets exist, run the tests on the chapters just built, and publish ``_build/html`` with upload-pages-artifact and
deploy-pages. The launch buttons are checked in a small book built like ours (``-W``):
none while ``repository.url`` is empty, Binder and Colab links once it is set.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
sys.path.insert(0, str(ROOT / "_ext"))


def tool(name):
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else shutil.which(name)


def load_workflow():
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def makefile_targets():
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.MULTILINE))


@pytest.mark.parametrize("schema", ["vendor.github-workflows", "custom.github-workflows-require-timeout"])
def test_workflow_matches_githubs_schema(schema):
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", schema, str(WORKFLOW)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflow_builds_with_the_readmes_commands_and_publishes_the_html():
    wf = load_workflow()
    assert wf["on"]["push"]["branches"] == ["main"] and "workflow_dispatch" in wf["on"]
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    uses = [step.get("uses", "") for step in build["steps"]]
    assert uses[0].startswith("actions/checkout@")
    python = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"  # the Makefile's python3.11
    commands = [line.strip() for step in build["steps"] for line in step.get("run", "").splitlines()
                if line.strip()]
    assert commands[0] == "make book"
    # the tests run on the chapters just built, before anything is uploaded: a book whose
    # tests fail is not published (a failing step stops the job)
    assert commands[1] == "make test"
    test_step = next(s for s in build["steps"] if s.get("run", "").strip() == "make test")
    assert test_step["env"]["TSDYN_EXECUTED"] == "_build/stage/book"
    assert "continue-on-error" not in test_step
    assert build["steps"].index(test_step) < len(build["steps"]) - 1
    readme = (ROOT / "README.md").read_text()
    for command in commands:
        target = re.fullmatch(r"make ([\w-]+)", command)
        assert target, f"the workflow runs {command!r}: only make targets, as in the README"
        assert target.group(1) in makefile_targets(), f"no Makefile target {target.group(1)!r}"
        assert command in readme, f"{command!r} is not one of the README's commands"
    upload = build["steps"][-1]
    assert upload["uses"].startswith("actions/upload-pages-artifact@")
    html = re.search(r"^HTML := (\S+)", (ROOT / "Makefile").read_text(), flags=re.MULTILINE).group(1)
    assert upload["with"]["path"] == html == "_build/html"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
    assert deploy["environment"]["url"] == "${{ steps.deployment.outputs.page_url }}"
    assert deploy["steps"][0]["id"] == "deployment"


def test_launch_buttons_follow_the_repository_url():
    from launch_buttons import switch

    options = {"repository_url": "", "use_repository_button": False, "launch_buttons": {
        "binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab", "thebe": True}}
    off = switch(options)
    assert off["launch_buttons"] == {"binderhub_url": "", "colab_url": "", "notebook_interface": "jupyterlab",
                                     "thebe": False}
    assert off["use_repository_button"] is False
    on = switch({**options, "repository_url": "https://github.com/example/tsdyn"})
    assert on["launch_buttons"] == options["launch_buttons"] and on["use_repository_button"] is True
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["url"] == ""  # set it to publish the buttons
    assert config["launch_buttons"]["binderhub_url"] and config["launch_buttons"]["colab_url"]
    assert "launch_buttons" in config["sphinx"]["local_extensions"]


def _small_book(folder, url):
    """Our _config.yml and _ext with one notebook chapter; repository.url set to ``url``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"]["url"] = url
    (folder / "book").mkdir(parents=True)
    (folder / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True))
    (folder / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/ch\n")
    (folder / "book" / "intro.md").write_text("# Intro\n\nThe rate $\\eta$.\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter\n\nWith $x^2$."), nbformat.v4.new_code_cell("1 + 1")]
    nbformat.write(nb, str(folder / "book" / "ch.ipynb"))
    shutil.copytree(ROOT / "_ext", folder / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "references.bib", folder / "references.bib")  # _config.yml's bibtex_bibfiles
    proc = subprocess.run([tool("jupyter-book"), "build", "-W", "--path-output", ".", "."],
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return (folder / "_build" / "html" / "book" / "ch.html").read_text()


@pytest.mark.slow
def test_a_book_built_without_a_url_has_no_launch_buttons_and_with_one_has_both(tmp_path):
    page = _small_book(tmp_path / "off", "")
    assert "mybinder.org" not in page and "colab.research.google.com" not in page
    page = _small_book(tmp_path / "on", "https://github.com/example/tsdyn")
    assert "https://mybinder.org/v2/gh/example/tsdyn/main?urlpath=lab/tree/book/ch.ipynb" in page
    assert "https://colab.research.google.com/github/example/tsdyn/blob/main/book/ch.ipynb" in page
    assert "https://github.com/example/tsdyn" in page  # the repository button
    # both builds carry the bundled MathJax
    assert (tmp_path / "on" / "_build" / "html" / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_kept_run_lookup_reads_glue_json_and_names_what_is_missing(tmp_path):
    import json

    from kept_runs import format_value, lookup

    run = tmp_path / "book" / "paper_runs" / "toy"
    run.mkdir(parents=True)
    (run / "glue.json").write_text(json.dumps({"slope": 9.03, "Ks": [2, 4, 8]}))
    value, path = lookup(tmp_path, "toy:slope")
    assert value == 9.03 and path == run / "glue.json"
    assert format_value(lookup(tmp_path, "toy:Ks")[0]) == "2, 4, 8"
    for text, message in [("toy:nope", "has no number 'nope'"), ("other:slope", "no kept run 'other'"),
                          ("slope", "must read 'run:key'")]:
        with pytest.raises(KeyError, match=message):
            lookup(tmp_path, text)


def test_kept_text_renders_its_dollar_spans_as_math():
    from docutils import nodes
    from kept_runs import text_nodes

    out = text_nodes("1.04 ± 0.01 ($b$ = 0.1), 1.09 ($\\eta$ = 0.2)")
    assert [type(n) for n in out] == [nodes.Text, nodes.math, nodes.Text, nodes.math, nodes.Text]
    assert out[1].astext() == "b" and out[3].astext() == "\\eta"
    assert text_nodes("costs $5") == [nodes.Text("costs $5")]  # an unpaired dollar stays text


def test_every_kept_number_quoted_in_the_book_exists():
    """What the -W build would stop on, found without building: each {kept}`run:key`
    of a page names a number of a kept run in book/paper_runs/."""
    from kept_runs import lookup

    quoted = [(page.name, ref) for page in sorted((ROOT / "book").glob("*.md"))
              for ref in re.findall(r"\{kept\}`([^`]+)`", page.read_text())]
    assert any(page == "01_committee_paper.md" for page, _ in quoted)  # the scan reads the pages
    for page, ref in quoted:
        lookup(ROOT, ref)  # raises KeyError naming the missing run or key
