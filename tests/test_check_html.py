"""scripts/check_html.py: the rendered-page checks, and that they fail on broken pages.

The browser tests open small hand-written pages in the headless Chromium the check
uses (skipped, with the reason, where Chromium is not installed): one whose MathJax is
the bundled copy (passes), and pages with a broken MathJax path or a TeX error (fail).
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "_ext"))
import cdp  # noqa: E402
import check_html as ch  # noqa: E402

PAGE = """<html><head><title>Chapter</title></head><body><h1>Chapter one</h1>{body}</body></html>"""
BASE = "http://127.0.0.1:1/"


def test_check_html_accepts_page_with_figure(tmp_path):
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "fig.png").write_bytes(b"\x89PNG")
    dom = PAGE.format(body='<img src="../_images/fig.png"><div class="output stderr">'
                           'RuntimeWarning: overflow</div>')
    assert ch.check_dom(dom, BASE + "book/ch.html", tmp_path, notebook=True, base_url=BASE) == []


def test_check_html_flags_errors_and_missing_figures(tmp_path):
    dom = PAGE.format(body='<img src="../_images/gone.png"><div class="cell_output docutils container">'
                           '<div class="output traceback highlight-ipythontb"><pre>'
                           '----\nValueError  Traceback (most recent call last)\nValueError: bad eta'
                           '</pre></div></div>')
    problems = ch.check_dom(dom, BASE + "book/ch.html", tmp_path, notebook=True, base_url=BASE)
    text = "\n".join(problems)
    assert "missing PNG" in text and "no figure" in text
    assert "error output cell: 'ValueError: bad eta'" in text
    assert "Traceback (most recent call last)" in text
    untitled = "<html><body><p>An Exception was encountered at In [3]</p></body></html>"
    problems = ch.check_dom(untitled, BASE + "book/x.html", tmp_path, notebook=False, base_url=BASE)
    assert any("<title>" in p for p in problems) and any("<h1>" in p for p in problems)
    assert any("An Exception was encountered" in p for p in problems)


def test_check_html_skips_without_chromium(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(ch, "find_chromium", lambda: None)
    assert ch.main([str(tmp_path)]) == 0
    assert "SKIPPED: chromium not installed" in capsys.readouterr().out


def _probe(**kw):
    return {"wants_mathjax": True, "loaded": True, "error": None, "math": 3, "typeset": 3,
            "containers": 3, "merrors": [], "text": "prose", **kw}


@pytest.mark.parametrize("probe, source, expected", [
    (_probe(), 3, []),
    (_probe(wants_mathjax=False, loaded=None, typeset=0), 3,
     ["3 equations but no MathJax script", "3 of 3 equations not typeset"]),
    (_probe(loaded=False, typeset=0, text=r"where \(x\) is"), 3,
     ["MathJax did not load", "3 of 3 equations not typeset", r"raw TeX in the text (1 places), e.g. where \(x\) is"]),
    (_probe(typeset=2), 3, ["1 of 3 equations not typeset"]),
    (_probe(merrors=["Missing argument for \\frac"]), 3, ["MathJax errors in equations"]),
    (_probe(text="a display $$E = mc^2$$ here"), 3, ["raw TeX"]),
    (_probe(text=r"the rate $\eta$ and \begin{align} x"), 3, ["raw TeX in the text (2 places)"]),
    (_probe(text="costs $5 or $6, and (a) [b]"), 3, []),  # dollars and brackets are not TeX
])
def test_check_math_flags_unrendered_tex(probe, source, expected):
    problems = ch.check_math(source, probe)
    assert len(problems) == len(expected), problems
    for problem, text in zip(problems, expected):
        assert text in problem


def test_check_requests_allows_only_the_local_server():
    requests = [{"url": BASE + "book/x.html", "failed": None}, {"url": "data:image/png;base64,", "failed": None},
                {"url": "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js", "failed": None},
                {"url": BASE + "_static/mathjax/tex-chtml.js", "failed": "net::ERR_FILE_NOT_FOUND"}]
    problems = ch.check_requests(requests, BASE)
    assert len(problems) == 2
    assert "1 requests to remote hosts" in problems[0] and "cdn.jsdelivr.net" in problems[0]
    assert "1 local files failed to load: ['_static/mathjax/tex-chtml.js']" in problems[1]
    assert ch.check_requests(requests[:2], BASE) == []


# ----------------------------------------------------------------- in Chromium

needs_chromium = pytest.mark.skipif(cdp.find_chromium() is None,
                                    reason="chromium not installed (apt-get install chromium)")

MATH_PAGE = """<html><head><title>Equations</title>
<script>window.MathJax = {{"options": {{"processHtmlClass": "tex2jax_process|mathjax_process|math|output_area"}}}}</script>
<script defer="defer" src="{src}"></script></head>
<body><h1>Equations</h1>
<p>Inline <span class="math notranslate nohighlight">\\({inline}\\)</span> in a sentence.</p>
<div class="math notranslate nohighlight">\\[\\frac{{dQ}}{{dt}} = -\\eta \\langle g'(\\lambda)\\Delta\\rangle\\]</div>
</body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A served folder with the bundled MathJax under _static/mathjax, and one Chromium tab."""
    from mathjax_offline import mathjax_files

    root = tmp_path_factory.mktemp("site")
    (root / "_static").mkdir()
    (root / "_static" / "mathjax").symlink_to(mathjax_files(), target_is_directory=True)
    with ch._Server(root) as server, cdp.Browser(cdp.find_chromium()) as browser:
        page = browser.new_page()

        def check(name, src="_static/mathjax/tex-chtml.js", inline="x^2"):
            html_file = root / f"{name}.html"
            html_file.write_text(MATH_PAGE.format(src=src, inline=inline))
            return ch.check_page(page, server.url + html_file.name, html_file, root, notebook=False,
                                 base_url=server.url, mathjax_timeout=5)

        yield check


@needs_chromium
def test_page_with_the_bundled_mathjax_passes(site):
    assert site("good") == []


@needs_chromium
def test_page_with_a_broken_mathjax_path_fails(site):
    problems = "\n".join(site("broken", src="_static/mathjax/no-such-file.js"))
    assert "local files failed to load: ['_static/mathjax/no-such-file.js']" in problems
    assert "MathJax did not load within 5 s" in problems
    assert "2 of 2 equations not typeset" in problems
    assert "raw TeX in the text" in problems and "\\(x^2\\)" in problems


@needs_chromium
def test_page_with_a_tex_error_fails(site):
    problems = site("bad_tex", inline="\\frac{1}")
    assert len(problems) == 1 and "1+ MathJax errors in equations" in problems[0]


def test_the_book_loads_mathjax_from_the_build_not_a_cdn():
    """_config.yml points mathjax_path at the bundled copy; the extension rejects anything else."""
    from types import SimpleNamespace

    import yaml
    from mathjax_offline import _check_path
    from sphinx.errors import ExtensionError

    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert config["local_extensions"]["mathjax_offline"] == "_ext"
    _check_path(None, SimpleNamespace(mathjax_path=config["config"]["mathjax_path"]))
    for path, match in [("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js", "must be a file"),
                        ("tex-chtml.js", "must be a file"),
                        ("mathjax/no-such-file.js", "ships no 'no-such-file.js'")]:
        with pytest.raises(ExtensionError, match=match):
            _check_path(None, SimpleNamespace(mathjax_path=path))
