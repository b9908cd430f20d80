"""A chapter run interactively: JupyterLab in headless Chromium, a slider moved, the figure redrawn.

End to end, as a reader would: start JupyterLab on a notebook, open it in the system
Chromium (driven through the DevTools protocol, ``scripts/cdp.py``), run it from the
browser, press the arrow key on a slider of the Explore section, and check that the
figure below the sliders is redrawn with the new value, twice. To keep it cheap the
notebook holds only the chapter's set-up cells (the code before its first section)
and its Explore section up to the cell that builds the sliders. Skipped only where
Chromium is not installed; ``.ci/run`` installs it.
"""

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import cdp  # noqa: E402
import chapters  # noqa: E402

CHAPTER = ROOT / "book" / "05_sparse.ipynb"  # its Explore run takes well under a second
SCREENSHOT = ROOT / "_build" / "screenshots" / "interactive.png"
TIMEOUT_S = 240  # each wait; a loaded 2-core machine needs tens of seconds for Lab and the kernel

pytestmark = pytest.mark.skipif(cdp.find_chromium() is None,
                                reason="chromium not installed (apt-get install chromium): "
                                       "the interactive test needs a real browser")


def _text(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def explore_notebook(chapter: Path) -> dict:
    """The chapter's set-up code cells and its Explore section, up to the sliders."""
    nb = json.loads(chapter.read_text())
    cells = nb["cells"]
    headings = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                and _text(c).lstrip().startswith("## ")]
    explore = [i for i in headings if "Explore" in _text(cells[i]).lstrip().splitlines()[0]]
    assert headings and explore, f"{chapter.name} has no '## ... Explore' section"
    end = next((i for i in range(explore[0], len(cells))
                if cells[i]["cell_type"] == "code" and "sliders(" in _text(cells[i])), None)
    assert end is not None, f"{chapter.name}: no cell of its Explore section builds sliders"
    setup = [c for c in cells[:headings[0]] if c["cell_type"] == "code"]
    nb["cells"] = setup + cells[explore[0]:end + 1]
    return nb


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on 127.0.0.1 serving ``work/explore.ipynb``; yields (url, server log)."""
    work, state = tmp_path / "work", tmp_path / "jupyter"
    work.mkdir()
    (work / "explore.ipynb").write_text(json.dumps(explore_notebook(CHAPTER), indent=1))
    labconfig = state / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    # no "news" prompt: it would ask to fetch from the internet
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, MPLBACKEND=chapters.KERNEL_MPLBACKEND, TSDYN_PARAMS=str(ROOT / "params"),
               JUPYTER_PATH=str(chapters.kernel_dir()), JUPYTER_CONFIG_DIR=str(state / "config"),
               JUPYTER_RUNTIME_DIR=str(state / "runtime"), JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", f"--ServerApp.root_dir={work}",
             f"--IdentityProvider.token={token}", "--ServerApp.terminals_enabled=False",
             "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True"],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield f"{base}/lab/tree/explore.ipynb?token={token}", log
    finally:
        try:  # shuts the kernels down too
            urllib.request.urlopen(urllib.request.Request(f"{base}/api/shutdown?token={token}",
                                                          method="POST"), timeout=10)
        except OSError:
            pass
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


NOTEBOOK = "jupyterapp.shell.currentWidget"
ALL_RUN = f"""(() => {{
  const panel = {NOTEBOOK}, model = panel.content.model;
  const cells = [...Array(model.cells.length).keys()].map(i => model.cells.get(i))
      .filter(c => c.type === 'code');
  if (panel.sessionContext.session.kernel.status !== 'idle') return null;
  if (!cells.every(c => c.executionCount !== null)) return null;
  const errors = cells.flatMap(c => c.outputs.toJSON()).filter(o => o.output_type === 'error');
  return {{counts: cells.map(c => c.executionCount),
           errors: errors.map(e => e.ename + ': ' + e.evalue)}};
}})()"""
SLIDER = "document.querySelector('.jp-Cell .widget-hslider')"  # the first slider
SLIDER_STATE = f"""(() => {{
  const s = {SLIDER}, h = s.querySelector('.noUi-handle');
  h.scrollIntoView({{block: 'center'}});
  const r = h.getBoundingClientRect();
  return {{name: s.querySelector('label').textContent, value: h.getAttribute('aria-valuenow'),
           x: r.x + r.width / 2, y: r.y + r.height / 2}};
}})()"""
# the figures of the cell holding the sliders: above them the default drawn by the cell,
# in the sliders' output widget the redrawn one
FIGURES = f"""(() => {{
  const cell = {SLIDER}.closest('.jp-Cell');
  const redrawn = [...cell.querySelectorAll('.widget-output img')].map(i => i.src);
  const all = [...cell.querySelectorAll('.jp-OutputArea-output img')].map(i => i.src);
  return {{default: all.filter(s => !redrawn.includes(s)), redrawn: redrawn}};
}})()"""


def test_moving_a_slider_of_explore_redraws_the_figure(lab):
    url, log = lab
    try:
        with cdp.Browser(cdp.find_chromium(), window=(1400, 1800), timeout=TIMEOUT_S) as browser:
            page = browser.new_page()
            page.goto(url)
            page.wait_for(f"!!(window.jupyterapp && {NOTEBOOK} && {NOTEBOOK}.sessionContext)",
                          timeout=TIMEOUT_S)
            page.evaluate(f"(async () => {{ await {NOTEBOOK}.context.ready; "
                          f"await {NOTEBOOK}.sessionContext.ready; }})()")
            page.evaluate("jupyterapp.commands.execute('notebook:run-all-cells')")  # Run > Run All Cells
            run = page.wait_for(ALL_RUN, timeout=TIMEOUT_S)
            assert run["errors"] == [], run["errors"]
            assert run["counts"] == list(range(1, len(run["counts"]) + 1))
            figures = page.wait_for(f"(() => {{ const f = {FIGURES}; return f.default.length ? f : null }})()",
                                    timeout=TIMEOUT_S)
            assert figures["redrawn"] == []  # the sliders draw nothing until one moves
            shown = figures["default"]

            slider = page.evaluate(SLIDER_STATE)
            page.click(slider["x"], slider["y"])  # focus the handle, as a reader's click does
            for step in (1, 2):
                page.press("ArrowRight")
                moved = page.evaluate(SLIDER_STATE)
                assert float(moved["value"]) > float(slider["value"]), (slider, moved)
                redrawn = page.wait_for(
                    f"(() => {{ const r = {FIGURES}.redrawn; "
                    f"return r.length && !{json.dumps(shown)}.includes(r[0]) ? r : null }})()",
                    timeout=TIMEOUT_S)
                assert len(redrawn) == 1 and redrawn[0].startswith("data:image/png")
                shown, slider = shown + redrawn, moved
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(SCREENSHOT)
    except cdp.CDPError as exc:
        pytest.fail(f"{exc}\nJupyterLab log:\n{log.read_text()[-3000:]}")
