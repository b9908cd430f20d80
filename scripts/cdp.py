"""Drive headless Chromium through the Chrome DevTools Protocol, over a pipe.

A minimal client for the checks that need a real browser (``check_html.py`` and the
interactive test): no browser download, no driver, no network port, no dependency.
Chromium is started with ``--remote-debugging-pipe`` and reads protocol messages
(JSON, each ended by a NUL byte) on its file descriptor 3 and writes them on 4.

    with Browser(find_chromium()) as browser:
        page = browser.new_page()
        page.goto("http://127.0.0.1:8000/index.html")
        title = page.evaluate("document.title")
        png = page.screenshot()

Protocol reference: the DevTools protocol's domains Target, Page, Runtime, Network,
Emulation and Input (flattened sessions: one ``sessionId`` per page).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--no-default-browser-check",
    "--disable-extensions", "--disable-features=Translate,MediaRouter,OptimizationHints",
]


class CDPError(RuntimeError):
    """The browser answered a command with an error, died, or did not answer in time."""


def find_chromium() -> str | None:
    """Path of a Chromium executable: ``$CHROMIUM``, ``/usr/bin/chromium``, or on PATH."""
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium"]
    candidates += [shutil.which(n) for n in CHROMIUM_NAMES]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _above_nine(fd: int) -> int:
    """A duplicate of ``fd`` numbered 10 or more (the original is closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """A headless Chromium process spoken to over ``--remote-debugging-pipe``."""

    def __init__(self, executable: str, *, window=(1280, 1600), flags=(), timeout=60.0):
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's ends go above fd 9, clear of the 3 and 4 they are moved to
        to_browser_r, from_browser_w = (_above_nine(fd) for fd in (to_browser_r, from_browser_w))
        cmd = [executable, *FLAGS, *flags, "--remote-debugging-pipe",
               f"--user-data-dir={self._profile}", f"--window-size={window[0]},{window[1]}",
               "about:blank"]
        # The browser expects the pipe on fds 3 (in) and 4 (out): bash moves ours there
        # (dash, /bin/sh on Debian, handles only one-digit descriptors in redirections).
        shell = f'exec "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        self.proc = subprocess.Popen([shutil.which("bash") or "/bin/bash", "-c", shell, "bash", *cmd],
                                     pass_fds=(to_browser_r, from_browser_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        try:
            self.version = self.send("Browser.getVersion")["product"]
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ protocol

    def send(self, method: str, params: dict | None = None, *, session: str | None = None,
             timeout: float | None = None) -> dict:
        """Send one command and wait for its result (events meanwhile are kept)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline, f"an answer to {method}")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error'].get('message')} "
                                   f"{reply['error'].get('data', '')}".strip())
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, method: str, *, session: str | None = None, timeout: float | None = None,
                   predicate=None) -> dict:
        """The first event ``method`` (of ``session``) not yet consumed; waits for it."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, event in enumerate(self._events):
                if (event["method"] == method and (session is None or event.get("sessionId") == session)
                        and (predicate is None or predicate(event.get("params", {})))):
                    del self._events[i]
                    return event.get("params", {})
            reply = self._receive(deadline, f"the event {method}")
            if "method" in reply:
                self._events.append(reply)

    def events(self, method: str, *, session: str | None = None) -> list[dict]:
        """Consume and return the parameters of every event ``method`` received so far."""
        self._poll()
        keep, out = [], []
        for event in self._events:
            if event["method"] == method and (session is None or event.get("sessionId") == session):
                out.append(event.get("params", {}))
            else:
                keep.append(event)
        self._events = keep
        return out

    def _poll(self):
        """Read whatever the browser has already sent, without waiting."""
        while True:
            message = self._parse()
            if message is None:
                ready, _, _ = select.select([self._from_browser], [], [], 0)
                if not ready:
                    return
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    return
                self._buffer += chunk
                continue
            if "method" in message:
                self._events.append(message)

    def _parse(self):
        end = self._buffer.find(b"\0")
        if end < 0:
            return None
        message, self._buffer = self._buffer[:end], self._buffer[end + 1:]
        return json.loads(message)

    def _receive(self, deadline: float, what: str) -> dict:
        while True:
            message = self._parse()
            if message is not None:
                return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"timed out waiting for {what}")
            ready, _, _ = select.select([self._from_browser], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise CDPError(f"chromium closed the pipe while waiting for {what}: "
                                   f"{self._stderr_tail()}")
                self._buffer += chunk
            elif self.proc.poll() is not None:
                raise CDPError(f"chromium exited ({self.proc.returncode}) while waiting for "
                               f"{what}: {self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    # ------------------------------------------------------------------- pages

    def new_page(self) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return Page(self, target, session)

    def close(self):
        if getattr(self, "proc", None) and self.proc.poll() is None:
            try:
                self.send("Browser.close", timeout=10)
            except (CDPError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in ("_to_browser", "_from_browser"):
            if hasattr(self, fd):
                try:
                    os.close(getattr(self, fd))
                except OSError:
                    pass
        if getattr(self, "proc", None) and self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    """One tab: navigation, script evaluation, network log, screenshots and input."""

    def __init__(self, browser: Browser, target: str, session: str):
        self.browser, self.target, self.session = browser, target, session
        for domain in ("Page", "Runtime", "Network"):
            self.send(f"{domain}.enable")

    def send(self, method, params=None, **kw):
        return self.browser.send(method, params, session=self.session, **kw)

    def goto(self, url: str, *, timeout: float | None = None):
        """Navigate and wait for the ``load`` event; returns the requests made so far."""
        self.browser.events("Page.loadEventFired", session=self.session)  # drop stale ones
        self.requests()
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CDPError(f"navigating to {url}: {result['errorText']}")
        self.browser.wait_event("Page.loadEventFired", session=self.session, timeout=timeout)

    def requests(self) -> list[dict]:
        """Requests since the last call: ``{"url", "failed" (error text or None)}`` each."""
        sent = self.browser.events("Network.requestWillBeSent", session=self.session)
        failed = {e["requestId"]: e.get("errorText", "failed")
                  for e in self.browser.events("Network.loadingFailed", session=self.session)}
        self.browser.events("Network.responseReceived", session=self.session)
        return [{"url": e["request"]["url"], "failed": failed.get(e["requestId"])} for e in sent]

    def evaluate(self, expression: str, *, timeout: float | None = None):
        """Value of a JavaScript expression (promises awaited); JS exceptions raise CDPError."""
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CDPError(f"JavaScript error: {text}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 30.0, interval: float = 0.25):
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"timed out after {timeout:g} s waiting for: {expression}")
            time.sleep(interval)

    def screenshot(self, path=None) -> bytes:
        """PNG of the viewport (the ``window`` size of the browser); written to ``path`` if given."""
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        if path is not None:
            with open(path, "wb") as f:
                f.write(data)
        return data

    def press(self, key: str, code: str | None = None, key_code: int | None = None):
        """Press and release one key in the focused element (e.g. "ArrowRight")."""
        codes = {"ArrowRight": 39, "ArrowLeft": 37, "ArrowUp": 38, "ArrowDown": 40, "Enter": 13}
        params = {"key": key, "code": code or key,
                  "windowsVirtualKeyCode": key_code or codes.get(key, 0)}
        self.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **params})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **params})

    def click(self, x: float, y: float):
        """A left click at viewport coordinates (CSS pixels)."""
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                   "button": "left", "clickCount": 1})
