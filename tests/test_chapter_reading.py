"""What a reader of the online book sees: long code hidden, no talk about how it was made.

For every chapter notebook of ``_toc.yml``:

- a code cell of more than ``MAX_SHOWN_LINES`` non-blank lines (analysis, figure assembly,
  glue bookkeeping, the configuration cell) carries a tag that hides its input in the
  HTML (``hide-input``, ``remove-input``, ``hide-cell`` or ``remove-cell``): the reader
  sees prose, figures and the few lines that call the library;
- the prose (markdown cells) does not talk about the project's machinery: issues,
  the test suite, work sessions, the machine or its cores, or build jargon. The words are
  matched in the senses that are jargon only: "a two-sample test", "the test error" or
  "the core of the argument" are statistics and mathematics, and pass.
"""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import chapters  # noqa: E402

MAX_SHOWN_LINES = 12  # "the few lines that call the library"
HIDING_TAGS = {"hide-input", "remove-input", "hide-cell", "remove-cell"}

# (what it is, pattern): each pattern names the machinery, not an ordinary English word
JARGON = [
    ("an issue", r"\bissues?\b|#\d+\b"),
    ("the tests", r"\bpytest\b|\btests?/|\b(?:the|our|these|its|chapter|unit|regression|notebook)"
                  r" tests\b|\b(?:chapter|unit|regression|notebook) test\b|\btest suite\b"),
    ("a session", r"\bsessions?\b"),
    ("the machine", r"\b(?:this|our|the build|a shared|the same) (?:machine|computer|laptop)\b(?! learn)"),
    ("cores", r"\bcores\b|\bcore-hours?\b|\bCPUs?\b|\b(?:one|two|\d+)[- ]cores?\b"),
    ("build jargon", r"\bglue[ds]?\b|\bTODO\b|\bFIXME\b|\bXXX\b|\b(?:the lead|reviewer|engineer)s?\b"),
]


def cells(nb):
    return json.loads(Path(nb).read_text())["cells"]


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def long_shown_cells(nb):
    """(cell number, non-blank lines) of code cells longer than the limit that are not hidden."""
    out = []
    for i, cell in enumerate(cells(nb)):
        if cell["cell_type"] != "code":
            continue
        n = sum(1 for line in source(cell).splitlines() if line.strip())
        if n > MAX_SHOWN_LINES and not HIDING_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            out.append((i, n))
    return out


# MyST markup that names glued values or figures (not prose): {glue:text}`name`, and
# the first line of a {glue:figure} directive
_MARKUP = re.compile(r"\{glue(?::\w*)?\}`[^`]*`|^[`:]{3,}\{glue(?::\w*)?\}.*$", re.MULTILINE)


def jargon(text):
    """(kind, the sentence around it) for every match in ``text``."""
    text = _MARKUP.sub("", text)
    found = []
    for kind, pattern in JARGON:
        for m in re.finditer(pattern, text, flags=re.IGNORECASE if kind != "build jargon" else 0):
            found.append((kind, " ".join(text[max(0, m.start() - 50):m.end() + 50].split())))
    return found


def prose_jargon(nb):
    return [(i, kind, where) for i, cell in enumerate(cells(nb)) if cell["cell_type"] == "markdown"
            for kind, where in jargon(source(cell))]


@pytest.mark.parametrize("text", [
    "a two-sample test rejects at 5%", "the test error decreases", "a Kolmogorov-Smirnov test",
    "the core of the argument", "at the core", "a t-test on 20 seeds", "tested against theory",
    "we test the prediction", "the 95% CI of the slope", "this machine learning model",
    "the gap is {glue:text}`gap_max`, {glue:}`y` and {glue}`x`", "```{glue:figure} fig_gap\n:name: fig-gap",
    "the tests of Secs. 2 and 3 agree",  # "the tests" is jargon only in the suite's sense...
])
def test_ordinary_words_pass(text):
    if text.startswith("the tests"):  # ...which a pattern cannot tell apart: reword such prose
        assert jargon(text)
    else:
        assert jargon(text) == []


@pytest.mark.parametrize("text, kind", [
    ("as issue 11 asks", "an issue"), ("see #4", "an issue"), ("the chapter tests assert it", "the tests"),
    ("checked in tests/sparse", "the tests"), ("pytest reads it", "the tests"),
    ("measured in this session", "a session"), ("on this machine", "the machine"),
    ("2.5 minutes on two cores", "cores"), ("about 67 core-hours", "cores"), ("one CPU", "cores"),
    ("the glued gap", "build jargon"), ("TODO: rerun", "build jargon"),
])
def test_jargon_is_found(text, kind):
    assert kind in [k for k, _ in jargon(text)]


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_long_code_cells_are_hidden(nb):
    shown = long_shown_cells(nb)
    assert not shown, (f"{nb.name}: code cells over {MAX_SHOWN_LINES} lines shown in the book "
                       f"(cell number, lines): {shown}; tag them hide-input or move the code "
                       f"into the library")


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_prose_does_not_talk_about_the_project(nb):
    found = prose_jargon(nb)
    assert not found, f"{nb.name}: " + "; ".join(f"cell {i} ({kind}): ...{where}..."
                                                 for i, kind, where in found)
