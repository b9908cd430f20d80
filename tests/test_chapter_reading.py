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


# ------------------------------------------------------------------ the chapter form
# CONTRIBUTING.md: the form every chapter follows. These checks read the committed notebooks
# and pages (no execution): what a reader meets first, the closing sections, numbered figures,
# sources, links and the paper-scale page's provenance box.

HEADLINE = re.compile(r"^[`:]{3,}\{glue:figure\}\s+headline_fig\s*\n:name:\s+fig-[a-z]+-headline\s*$",
                      re.MULTILINE)
FIGURE_DIRECTIVE = re.compile(r"^([`:]{3,})\{(?:glue:figure|figure)\}[^\n]*\n((?::[a-z-]+:[^\n]*\n)*)",
                              re.MULTILINE)
NUMBERED_HEADING = re.compile(r"^#{2,}\s+\d+(?:\.\d+)*\.?\s", re.MULTILINE)


def markdown(nb):
    return [source(c) for c in cells(nb) if c["cell_type"] == "markdown"]


def paper_page(nb):
    return nb.with_name(f"{nb.stem}_paper.md")


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_the_opening_screen_is_the_question_and_the_headline_figure(nb):
    """The first cell is markdown with the title, a citation and the headline figure; no code
    cell (which would show a toggle or a parameter dump) comes before it."""
    first = cells(nb)[0]
    assert first["cell_type"] == "markdown", f"{nb.name}: the first cell is code"
    text = source(first)
    assert text.lstrip().startswith("# "), f"{nb.name}: the first cell does not open with the title"
    assert HEADLINE.search(text), f"{nb.name}: no headline figure (glue:figure headline_fig, " \
                                  f":name: fig-<chapter>-headline) in the first cell"
    assert "{cite:" in text, f"{nb.name}: the opening does not cite the paper it follows"


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_the_parameters_cell_shows_nothing(nb):
    params = [c for c in cells(nb) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1, f"{nb.name}: {len(params)} cells tagged parameters"
    tags = set(params[0]["metadata"]["tags"])
    assert tags & {"remove-input", "remove-cell"}, f"{nb.name}: the parameters cell is shown: {tags}"


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_the_chapter_closes_with_a_summary_and_try_it(nb):
    text = "\n".join(markdown(nb))
    assert re.search(r"^## Summary\s*$", text, re.MULTILINE), f"{nb.name}: no '## Summary'"
    assert re.search(r"^## Try it\s*$", text, re.MULTILINE), f"{nb.name}: no '## Try it'"
    assert text.index("## Summary") < text.index("## Try it")


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_figures_are_numbered_and_headings_are_not(nb):
    """Every figure directive has a label (so it is numbered and can be referred to); the book
    numbers the headings, so none carries a number of its own."""
    for page, text in ((nb.name, "\n".join(markdown(nb))), (paper_page(nb).name, paper_page(nb).read_text())):
        unnamed = [m.group(0).splitlines()[0] for m in FIGURE_DIRECTIVE.finditer(text)
                   if ":name:" not in m.group(2)]
        assert not unnamed, f"{page}: figures without :name: {unnamed}"
        assert not NUMBERED_HEADING.search(text), \
            f"{page}: a heading carries its own number: {NUMBERED_HEADING.search(text).group(0)!r}"


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_the_chapter_links_its_paper_scale_page(nb):
    assert f"{{doc}}`{paper_page(nb).stem}`" in "\n".join(markdown(nb)), \
        f"{nb.name}: no link to its paper-scale page {paper_page(nb).stem}"


@pytest.mark.parametrize("nb", chapters.chapter_notebooks(), ids=lambda p: p.stem)
def test_the_paper_scale_page_opens_with_figures_and_ends_with_its_provenance(nb):
    text = paper_page(nb).read_text()
    first_figure = re.search(r"^[`:]{3,}\{(?:figure|glue:figure)\}|^!\[", text, re.MULTILINE)
    assert first_figure, f"{paper_page(nb).name}: no figure"
    before = re.sub(r"^#.*$", "", text[:first_figure.start()], flags=re.MULTILINE)
    assert len(before.split()) < 250, \
        f"{paper_page(nb).name}: {len(before.split())} words before the first figure"
    boxes = [m.start() for m in re.finditer(r"^[`:]{3,}\{admonition\} Provenance", text, re.MULTILINE)]
    assert len(boxes) == 1, f"{paper_page(nb).name}: {len(boxes)} provenance boxes, want one"
    assert not FIGURE_DIRECTIVE.search(text, boxes[0]), f"{paper_page(nb).name}: a figure after the provenance box"


def test_no_page_or_docstring_points_outside_the_repository():
    """What the book relies on, it carries: no reference to the developers' shared/ folder."""
    found = [str(p.relative_to(ROOT)) for folder in ("book", "lib")
             for p in (ROOT / folder).rglob("*") if p.suffix in (".md", ".ipynb", ".py")
             and re.search(r"shared/(?:theory|papers|tools)|/work/", p.read_text())]
    assert not found, f"pages or modules that point outside the repository: {found}"
