"""Shared pieces of the chapter tests (tests/<model>/test_chapter.py).

Each chapter test runs its notebook once per module at quick scale and asserts the
agreement figures the notebook glued. With ``TSDYN_EXECUTED`` set to a directory of
already executed chapters (``make book`` leaves them in ``_build/stage/book``), the
tests read those instead of running the chapters a second time.
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402


def notebook(stem):
    return ROOT / "book" / f"{stem}.ipynb"


def glued_fixture(stem):
    """A module-scoped fixture: the glued values of chapter ``stem`` run at quick scale."""

    @pytest.fixture(scope="module")
    def glued(tmp_path_factory):
        executed = os.environ.get("TSDYN_EXECUTED")
        if executed and (Path(executed) / f"{stem}.ipynb").is_file():
            return chapters.read_glue(Path(executed) / f"{stem}.ipynb")
        out = tmp_path_factory.mktemp(stem) / f"{stem}.ipynb"
        chapters.execute(notebook(stem), out, {"scale": "quick"},
                         execution_timeout=chapters.QUICK_CELL_TIMEOUT_S)
        return chapters.read_glue(out)

    return glued


def assert_fails_in_first_cells(stem, tmp_path, parameters, match):
    """Chapter ``stem`` run with bad ``parameters`` stops in its first cells with ``match``."""
    import papermill

    with pytest.raises(papermill.PapermillExecutionError, match=match) as info:
        chapters.execute(notebook(stem), tmp_path / "bad.ipynb", parameters,
                         execution_timeout=chapters.QUICK_CELL_TIMEOUT_S)
    assert info.value.exec_count <= 3  # the parameters, the injected ones, the checks
