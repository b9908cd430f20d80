#!/usr/bin/env python
r"""Render every page of the built book in headless Chromium and check it.

Serves the HTML directory on 127.0.0.1 (a free port, in a thread), opens each page of
``_toc.yml`` in one headless Chromium driven through the DevTools protocol
(``cdp.py``), waits for the load event and for MathJax to finish typesetting, takes a
screenshot into ``_build/screenshots/`` and asserts on the rendered page:

- the page has a non-empty ``<title>`` and an ``<h1>``;
- a notebook chapter shows at least one PNG figure (``data:image/png`` inline, or a
  ``.png`` file that exists in the HTML directory), and no ``<img>`` points to a
  missing PNG;
- no execution error is shown: no error/traceback output block, no ``stderr`` output
  containing a traceback, no ``Traceback (most recent call last)`` in the text, no
  papermill "An Exception was encountered" banner, no unrendered ``{glue`` role;
- every equation is typeset: each math element of the page's HTML (Sphinx's
  ``.math`` spans and divs, counted in the file as served) holds an ``mjx-container``
  once MathJax has finished, none is a MathJax error (``mjx-merror``), and the visible
  text outside code holds no raw TeX (``\(``, ``\[``, ``$$``, ``\begin{``, or a
  ``$...$`` with a TeX command);
- every request the page makes goes to the local server and succeeds: no CDN, no
  other remote host, no missing file (a broken ``mathjax_path`` is a failed request).

Exit status 1 with the list of failing pages, 0 when all pass. Exit 0 with a
``SKIPPED`` message when Chromium is not installed.

    python scripts/check_html.py [_build/html] [--no-screenshots]
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import re
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cdp  # noqa: E402
import chapters  # noqa: E402

ROOT = chapters.ROOT
CHROMIUM_NAMES = cdp.CHROMIUM_NAMES
ERROR_BANNERS = ("An Exception was encountered", "Traceback (most recent call last)")
MATHJAX_TIMEOUT_S = 60  # MathJax typesets a chapter in a few seconds; a minute means it is stuck


def find_chromium() -> str | None:
    """Path of a Chromium executable: ``$CHROMIUM``, ``/usr/bin/chromium``, or on PATH."""
    return cdp.find_chromium()


class _Server:
    """``http.server`` on 127.0.0.1, a free port, serving ``directory`` from a thread."""

    def __init__(self, directory: Path):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the report readable
        pass


class _DomScan(HTMLParser):
    """Collects <title>, <h1>, <img src> and the text of error/stderr output blocks."""

    ERROR_CLASSES = ("traceback", "output_error", "error")
    STDERR_CLASSES = ("stderr",)
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
            "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title, self.h1, self.imgs, self.text = "", [], [], []
        self.blocks = []  # [kind, depth, text]
        self._depth = 0
        self._in_title = False
        self._in_h1 = 0
        self._skip = 0  # inside <script>/<style>/<button> (copy-button labels)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.imgs.append(attrs.get("src") or "")
        if tag in self.VOID:
            return
        self._depth += 1
        if tag in ("script", "style", "button"):
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if tag == "h1":
            self._in_h1 += 1
            self.h1.append("")
        classes = (attrs.get("class") or "").split()
        if tag == "div" and ("output" in classes or "cell_output" in classes):
            kind = None
            if any(c in self.ERROR_CLASSES for c in classes):
                kind = "error"
            elif any(c in self.STDERR_CLASSES for c in classes):
                kind = "stderr"
            if kind:
                self.blocks.append([kind, self._depth, ""])

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if tag in ("script", "style", "button"):
            self._skip = max(0, self._skip - 1)
        if tag == "title":
            self._in_title = False
        if tag == "h1":
            self._in_h1 = max(0, self._in_h1 - 1)
        for block in self.blocks:
            if block[1] == self._depth:
                block[1] = -1  # closed
        self._depth -= 1

    def handle_data(self, data):
        if self._skip:
            return
        if self._in_title:
            self.title += data
        if self._in_h1 and self.h1:
            self.h1[-1] += data
        self.text.append(data)
        for block in self.blocks:
            if block[1] > 0:
                block[2] += data


def check_dom(dom: str, page_url: str, html_dir: Path, *, notebook: bool, base_url: str) -> list[str]:
    """Problems found in one rendered page (empty list: the page passes)."""
    scan = _DomScan()
    scan.feed(dom)
    problems = []
    if not scan.title.strip():
        problems.append("no <title>")
    if not any(h.strip() for h in scan.h1):
        problems.append("no <h1> heading")

    pngs, missing = 0, []
    for src in scan.imgs:
        if src.startswith("data:image/png"):
            pngs += 1
            continue
        absolute = urljoin(page_url, src)
        if not absolute.startswith(base_url):
            continue  # external images are not ours to check
        rel = unquote(urlparse(absolute).path)[len(urlparse(base_url).path):]
        if rel.lower().endswith(".png"):
            if (html_dir / rel).is_file():
                pngs += 1
            else:
                missing.append(rel)
    if missing:
        problems.append(f"{len(missing)} <img> point to missing PNG files: {missing[:5]}")
    if notebook and pngs == 0:
        problems.append("no figure: no <img> with a data:image/png or an existing .png src")

    for kind, _, text in scan.blocks:
        # the most telling line: the exception ("ValueError: ...") closes a traceback
        lines = [ln.strip() for ln in text.splitlines() if ln.strip().strip("-")]
        first = lines[-1] if lines else ""
        if kind == "error":
            problems.append(f"error output cell: {first[:200]!r}")
        elif "Traceback" in text:
            problems.append(f"stderr output with a traceback: {first[:200]!r}")
    text = html.unescape("".join(scan.text))
    for banner in ERROR_BANNERS:
        if banner in text:
            i = text.index(banner)
            problems.append(f"{banner!r} in the page: "
                            f"{' '.join(text[i:i + 300].split())[:200]!r}")
    if re.search(r"\{glue(:\w*)?\}`", text):
        problems.append("unrendered {glue} role in the text")
    return problems


class _MathCount(HTMLParser):
    """Counts the math elements Sphinx writes (``class="math ..."``) in a page's HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.count = 0

    def handle_starttag(self, tag, attrs):
        if "math" in (dict(attrs).get("class") or "").split():
            self.count += 1


def math_in_source(html_file: Path) -> int:
    """Number of equations in a built page, read from the file (before any script runs)."""
    scan = _MathCount()
    scan.feed(Path(html_file).read_text(encoding="utf-8", errors="replace"))
    return scan.count


# Runs in the page: waits for MathJax (if the page loads it) to finish its first
# typesetting, then reports what is on the page. %(timeout)d is in milliseconds.
MATH_PROBE = """(async () => {
  const started = Date.now();
  const wantsMathJax = [...document.scripts].some(s => /mathjax/i.test(s.src || ""));
  const ready = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
  while (wantsMathJax && !ready() && Date.now() - started < %(timeout)d) {
    await new Promise(r => setTimeout(r, 100));
  }
  let loaded = null, error = null;
  if (wantsMathJax) {
    loaded = Boolean(ready());
    if (loaded) {
      try { await MathJax.startup.promise; } catch (e) { error = String(e); }
    }
  }
  const math = [...document.querySelectorAll(".math")];
  const body = document.body.cloneNode(true);
  body.querySelectorAll("pre, code, script, style, textarea, mjx-container, .highlight")
      .forEach(e => e.remove());
  return {
    wants_mathjax: wantsMathJax, loaded: loaded, error: error,
    version: loaded ? MathJax.version : null,
    math: math.length,
    typeset: math.filter(e => e.querySelector("mjx-container")).length,
    containers: document.querySelectorAll("mjx-container").length,
    merrors: [...document.querySelectorAll("mjx-merror")]
        .map(e => e.getAttribute("data-mjx-error") || e.textContent).slice(0, 5),
    text: body.textContent,
  };
})()"""

RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\begin\{|\$[^$\n]*\\[A-Za-z]+[^$\n]*\$")


def check_math(source_math: int, probe: dict, timeout=MATHJAX_TIMEOUT_S) -> list[str]:
    """Problems with the equations of one page (``probe``: what MATH_PROBE returned)."""
    problems = []
    if source_math and not probe["wants_mathjax"]:
        problems.append(f"{source_math} equations but no MathJax script on the page")
    if probe["wants_mathjax"] and not probe["loaded"]:
        problems.append(f"MathJax did not load within {timeout:g} s "
                        f"(window.MathJax.startup missing: a broken mathjax_path?)")
    if probe["error"]:
        problems.append(f"MathJax failed: {probe['error'][:200]}")
    if source_math and probe["typeset"] < source_math:
        problems.append(f"{source_math - probe['typeset']} of {source_math} equations not typeset "
                        f"(no mjx-container in their .math element)")
    if probe["merrors"]:
        problems.append(f"{len(probe['merrors'])}+ MathJax errors in equations: {probe['merrors']}")
    raw = [m for m in RAW_TEX.finditer(probe["text"])]
    if raw:
        text = probe["text"]
        snippets = [" ".join(text[max(0, m.start() - 30):m.end() + 40].split()) for m in raw[:3]]
        problems.append(f"raw TeX in the text ({len(raw)} places), e.g. {' | '.join(snippets)}")
    return problems


def check_requests(requests: list[dict], base_url: str) -> list[str]:
    """Every request must go to ``base_url`` and succeed (the book works offline)."""
    remote = sorted({r["url"] for r in requests
                     if not r["url"].startswith((base_url, "data:", "blob:", "about:"))})
    failed = sorted({r["url"][len(base_url):] for r in requests
                     if r["failed"] and r["url"].startswith(base_url)})
    problems = []
    if remote:
        problems.append(f"{len(remote)} requests to remote hosts (the book must work offline): "
                        f"{remote[:5]}")
    if failed:
        problems.append(f"{len(failed)} local files failed to load: {failed[:5]}")
    return problems


def check_page(page: "cdp.Page", url: str, html_file: Path, html_dir: Path, *, notebook: bool,
               base_url: str, screenshot: Path | None = None,
               mathjax_timeout: float = MATHJAX_TIMEOUT_S) -> list[str]:
    """Load ``url`` in ``page``, wait for MathJax, and return the page's problems."""
    page.goto(url)
    probe = page.evaluate(MATH_PROBE % {"timeout": mathjax_timeout * 1000},
                          timeout=mathjax_timeout + 30)
    dom = page.evaluate("document.documentElement.outerHTML")
    problems = check_dom(dom, url, html_dir, notebook=notebook, base_url=base_url)
    problems += check_math(math_in_source(html_file), probe, mathjax_timeout)
    problems += check_requests(page.requests(), base_url)
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(screenshot)
    return problems


def pages(html_dir: Path, toc=None) -> list[tuple[str, Path, bool]]:
    """(toc entry, HTML file, is a notebook chapter) for every page of ``_toc.yml``."""
    out = []
    for entry in chapters.toc_entries(toc):
        source = chapters.resolve_entry(entry, ROOT)
        out.append((entry, html_dir / f"{entry}.html", source.suffix == ".ipynb"))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html_dir", nargs="?", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml")
    parser.add_argument("--screenshots", type=Path, default=ROOT / "_build" / "screenshots")
    parser.add_argument("--no-screenshots", action="store_true")
    args = parser.parse_args(argv)

    browser = find_chromium()
    if browser is None:
        print("SKIPPED: chromium not installed (looked for $CHROMIUM, /usr/bin/chromium, "
              f"{', '.join(CHROMIUM_NAMES)} on PATH); install it, e.g. "
              "`apt-get install -y chromium`, to check the rendered pages")
        return 0
    html_dir = args.html_dir.resolve()
    if not (html_dir / "index.html").is_file():
        print(f"FAILED: {html_dir}/index.html not found; run `make book` first")
        return 1

    failures = {}
    with _Server(html_dir) as server, cdp.Browser(browser) as chromium:
        print(f"checking pages in {chromium.version} (headless)", flush=True)
        page = chromium.new_page()
        for entry, html_file, notebook in pages(html_dir, args.toc):
            if not html_file.is_file():
                failures[entry] = [f"page not built: {html_file.relative_to(html_dir)} is missing"]
                continue
            rel = html_file.relative_to(html_dir).as_posix()
            shot = None if args.no_screenshots else args.screenshots / (entry.replace("/", "__") + ".png")
            try:
                problems = check_page(page, server.url + rel, html_file, html_dir, notebook=notebook,
                                      base_url=server.url, screenshot=shot)
            except (cdp.CDPError, OSError) as exc:
                problems = [f"chromium failed: {exc}"]
            status = "ok    " if not problems else "FAILED"
            kind = "notebook" if notebook else "page"
            print(f"{status} {rel} ({kind}, {math_in_source(html_file)} equations)", flush=True)
            if problems:
                failures[entry] = problems

    if failures:
        print(f"\n{len(failures)} page(s) failed the rendered-HTML check:")
        for entry, problems in failures.items():
            print(f"  {entry}:")
            for p in problems:
                print(f"    - {p}")
        return 1
    if not args.no_screenshots:
        print(f"screenshots in {args.screenshots}")
    print("check-html: all pages OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
