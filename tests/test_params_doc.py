"""Every chapter parameter is documented by ``papermill --help-notebook``, with its presets.

``scripts/chapters.py params-doc`` appends "(quick: <value>, paper: <value>)" from
``params/*.yaml`` to each parameter comment and refuses comments papermill cannot parse
(holding ``=``). The tool is tested on small notebooks; then, for every chapter of
``_toc.yml``, ``papermill --help-notebook`` must list exactly the parameters of its
``parameters`` cell, each with its comment and the current preset values, and print no
"Unable to parse line" warning.
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402

PRESETS = {"quick": {"toy": {"eta": 0.2, "Ks": [2, 4], "long": list(range(10)), "g": "erf", "t": 5.0}},
           "paper": {"toy": {"eta": 0.1, "Ks": [2, 4, 8], "long": list(range(20)), "g": "relu", "t": 50.0}}}

CELL = """from typing import Optional

scale: str = "quick"  # preset from params/<scale>.yaml
eta: Optional[float] = None  # learning rate
Ks: Optional[list] = None  # student sizes
long: Optional[list] = None  # a long grid
g: Optional[str] = None  # activation
t_max: Optional[float] = None  # length of the runs, in SGD steps / N
dask_scheduler: Optional[str] = None  # address of a Dask scheduler (None: local processes)"""

LOADER = 'cfg = presets.load("toy", scale, dict(eta=eta, Ks=Ks, long=long, g=g, t=t_max))'


def toy_notebook(path, cell=CELL, loader=LOADER):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell(cell)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# Toy"), params,
                nbformat.v4.new_code_cell(f"from tsdyn import presets\n%matplotlib inline\n{loader}")]
    nbformat.write(nb, str(path))
    return path


@pytest.fixture
def params_dir(tmp_path):
    import yaml

    folder = tmp_path / "params"
    folder.mkdir()
    for scale, table in PRESETS.items():
        (folder / f"{scale}.yaml").write_text(yaml.safe_dump(table))
    return folder


def cell_text(path):
    return chapters._source(chapters.parameters_cell(json.loads(Path(path).read_text())))


def test_params_doc_appends_both_presets_and_is_idempotent(tmp_path, params_dir):
    nb = toy_notebook(tmp_path / "toy.ipynb")
    assert chapters.params_doc([nb], check=True, params_dir=params_dir) == 1  # not documented yet
    assert chapters.params_doc([nb], params_dir=params_dir) == 0
    text = cell_text(nb)
    assert "eta: Optional[float] = None  # learning rate (quick: 0.2, paper: 0.1)" in text
    assert "Ks: Optional[list] = None  # student sizes (quick: [2, 4], paper: [2, 4, 8])" in text
    assert "# a long grid (quick: [0, 1, 2, ..., 9] (10 values), paper: [0, 1, 2, ..., 19] (20 values))" in text
    assert "# activation (quick: erf, paper: relu)" in text
    # the variable t_max fills the preset key t
    assert "# length of the runs, in SGD steps / N (quick: 5.0, paper: 50.0)" in text
    # parameters that are not preset keys keep their comment
    assert 'scale: str = "quick"  # preset from params/<scale>.yaml\n' in text
    assert text.endswith("# address of a Dask scheduler (None: local processes)")
    # a second run changes nothing, and --check agrees
    before = nb.read_bytes()
    assert chapters.params_doc([nb], params_dir=params_dir) == 0
    assert nb.read_bytes() == before
    assert chapters.params_doc([nb], check=True, params_dir=params_dir) == 0
    # the file keeps Jupyter's layout (indent 1, final newline): only the comments change
    assert before.decode() == json.dumps(json.loads(before), indent=1, ensure_ascii=False) + "\n"


def test_params_doc_replaces_a_stale_suffix(tmp_path, params_dir):
    nb = toy_notebook(tmp_path / "toy.ipynb")
    chapters.params_doc([nb], params_dir=params_dir)
    (params_dir / "paper.yaml").write_text((params_dir / "paper.yaml").read_text().replace("0.1", "0.05"))
    out = []
    assert chapters.params_doc([nb], check=True, params_dir=params_dir, stream=_Lines(out)) == 1
    assert any("stale" in line and "(quick: 0.2, paper: 0.05)" in line for line in out)
    chapters.params_doc([nb], params_dir=params_dir)
    assert "# learning rate (quick: 0.2, paper: 0.05)\n" in cell_text(nb)
    assert cell_text(nb).count("(quick:") == 5


class _Lines(list):
    def __init__(self, sink):
        self.sink = sink

    def write(self, text):
        self.sink.append(text)

    def flush(self):
        pass


@pytest.mark.parametrize("cell, match", [
    ("t_max: Optional[float] = None  # length (time = steps x eta)",
     r"line 1 \(t_max\): the comment holds '=', which makes papermill --help-notebook drop the line"),
    ("eta: Optional[float] = None", r"line 1 \(eta\): no comment"),
    ("Ks: Optional[list] = [\n    2, 4]  # sizes", r"line 1 \(Ks\): a parameter must fit on one line"),
    ("a = b = 1  # two names", r"line 1: only one `name: type = default  # comment` per line"),
    ("extra: Optional[int] = None  # not in the presets", None),  # not a preset key: fine
])
def test_params_doc_refuses_what_papermill_cannot_parse(tmp_path, params_dir, cell, match):
    loader = 'cfg = presets.load("toy", scale, dict(eta=eta, Ks=Ks))'
    nb = toy_notebook(tmp_path / "toy.ipynb", cell="scale = 'quick'  # preset\n" + cell, loader=loader)
    before = nb.read_bytes()
    out = []
    status = chapters.params_doc([nb], params_dir=params_dir, stream=_Lines(out))
    if match is None:
        assert status == 0
        return
    assert status == 1 and nb.read_bytes() == before  # nothing written
    assert re.search(match.replace("line 1", "line 2"), "".join(out)), out


def test_params_doc_refuses_a_preset_value_with_an_equals_sign(tmp_path, params_dir):
    (params_dir / "quick.yaml").write_text((params_dir / "quick.yaml").read_text().replace("g: erf", "g: a=b"))
    nb = toy_notebook(tmp_path / "toy.ipynb")
    out = []
    assert chapters.params_doc([nb], params_dir=params_dir, stream=_Lines(out)) == 1
    assert "(g): a preset value holds '='" in "".join(out)


def test_params_doc_refuses_a_key_missing_from_a_preset(tmp_path, params_dir):
    loader = 'cfg = presets.load("toy", scale, {"eta": eta, "zeta": zeta})'
    nb = toy_notebook(tmp_path / "toy.ipynb", cell="zeta: Optional[float] = None  # new knob", loader=loader)
    out = []
    assert chapters.params_doc([nb], params_dir=params_dir, stream=_Lines(out)) == 1
    assert "params/quick.yaml has no key 'zeta' in section 'toy'" in "".join(out)


# ------------------------------------------------------- papermill --help-notebook

def papermill_help(nb):
    """Output of ``papermill --help-notebook nb`` and its parameters: name -> help text."""
    exe = Path(sys.executable).with_name("papermill")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "papermill"]
    proc = subprocess.run(cmd + ["--help-notebook", str(nb)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    params, name = {}, None
    for line in proc.stdout.splitlines():
        head = re.match(r"^  (\w+): .*? \(default .*?\)\s*(.*)$", line)
        if head:
            name = head.group(1)
            params[name] = head.group(2).strip()
        elif name and line.startswith(" " * 34):
            params[name] = (params[name] + " " + line.strip()).strip()
    return proc.stdout + proc.stderr, params


def cell_parameters(nb):
    """name -> comment of every assignment in the notebook's parameters cell."""
    text = cell_text(nb)
    comments = chapters._comments(text)
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.AnnAssign, ast.Assign)):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            out[target.id] = comments.get(node.end_lineno, (0, ""))[1]
    return out


def test_help_notebook_lists_the_documented_toy_parameters(tmp_path, params_dir):
    nb = toy_notebook(tmp_path / "toy.ipynb")
    chapters.params_doc([nb], params_dir=params_dir)
    output, listed = papermill_help(nb)
    assert "Unable to parse" not in output
    assert listed == cell_parameters(nb)
    assert listed["Ks"] == "student sizes (quick: [2, 4], paper: [2, 4, 8])"


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_help_notebook_lists_every_chapter_parameter_with_its_presets(nb):
    output, listed = papermill_help(nb)
    assert "Unable to parse" not in output, output
    expected = cell_parameters(nb)
    assert sorted(listed) == sorted(expected), "papermill --help-notebook drops or invents parameters"
    assert listed == expected
    # every comment is current: what `params-doc` would write from params/*.yaml
    out = []
    status = chapters.params_doc([nb], check=True, stream=_Lines(out))
    assert status == 0, "".join(out)
    mapping = chapters.preset_map(json.loads(nb.read_text()))
    presets = chapters.load_presets()
    for name, (section, key) in mapping.items():
        assert listed[name].endswith(chapters.preset_suffix(section, key, presets)), name
