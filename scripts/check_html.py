#!/usr/bin/env python
"""Render every chapter page of the built book in headless Chromium and check it.

Serves the HTML directory on 127.0.0.1 (a free port, in a thread), loads each page of
``_toc.yml`` with ``chromium --headless --dump-dom`` (and takes a screenshot into
``_build/screenshots/``), and asserts on the rendered DOM:

- the page has a non-empty ``<title>`` and an ``<h1>``;
- a notebook chapter shows at least one PNG figure (``data:image/png`` inline, or a
  ``.png`` file that exists in the HTML directory), and no ``<img>`` points to a
  missing PNG;
- no execution error is shown: no error/traceback output block, no ``stderr`` output
  containing a traceback, no ``Traceback (most recent call last)`` in the text, no
  papermill "An Exception was encountered" banner, no unrendered ``{glue`` role.

Exit status 1 with the list of failing pages, 0 when all pass. Exit 0 with a
``SKIPPED`` message when Chromium is not installed.

    python scripts/check_html.py [_build/html] [--no-screenshots]
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chapters  # noqa: E402

ROOT = chapters.ROOT
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
]
ERROR_BANNERS = ("An Exception was encountered", "Traceback (most recent call last)")


def find_chromium() -> str | None:
    """Path of a Chromium executable: ``$CHROMIUM``, ``/usr/bin/chromium``, or on PATH."""
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium"]
    candidates += [shutil.which(n) for n in CHROMIUM_NAMES]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


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


def chromium(browser: str, url: str, *, dump_dom=True, screenshot: Path | None = None,
             budget_ms=10000, timeout=180) -> str:
    """Run headless Chromium on ``url``; returns the rendered DOM (or "" for a screenshot)."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
               f"--virtual-time-budget={budget_ms}"]
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--window-size=1280,1600", f"--screenshot={screenshot}"]
        elif dump_dom:
            cmd += ["--dump-dom"]
        proc = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"chromium exited with {proc.returncode}: {proc.stderr[-2000:]}")
        return proc.stdout


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
    parser.add_argument("--budget-ms", type=int, default=10000,
                        help="Chromium --virtual-time-budget per page (ms)")
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
    with _Server(html_dir) as server:
        for entry, page, notebook in pages(html_dir, args.toc):
            if not page.is_file():
                failures[entry] = [f"page not built: {page.relative_to(html_dir)} is missing"]
                continue
            rel = page.relative_to(html_dir).as_posix()
            url = server.url + rel
            try:
                dom = chromium(browser, url, budget_ms=args.budget_ms)
                problems = check_dom(dom, url, html_dir, notebook=notebook, base_url=server.url)
                if not args.no_screenshots:
                    shot = args.screenshots / (entry.replace("/", "__") + ".png")
                    chromium(browser, url, screenshot=shot, budget_ms=args.budget_ms)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
                problems = [f"chromium failed: {exc}"]
            status = "ok    " if not problems else "FAILED"
            kind = "notebook" if notebook else "page"
            print(f"{status} {rel} ({kind})", flush=True)
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
