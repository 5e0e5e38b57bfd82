"""The documentation site: it builds with ``mkdocs build --strict`` (no broken link, no missing
reference), every page renders in headless Chromium (one browser, driven over the DevTools
protocol) with no console message, no uncaught error and no request that fails, and every internal link and image of every page points at something that exists.

The site is served from 127.0.0.1 by a small threaded server of the test's own, which records
each request's status, so a missing image or script shows up as a 404 against the page that
asked for it. Chromium is Debian's ``chromium`` (``make test`` installs it); where it cannot
be installed the render test skips and says why.
"""

from __future__ import annotations

import html.parser
import http.server
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websocket

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As the workplace's machines need it: no background traffic, no sandbox as root, a fresh
# profile per run.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (name in ("src", "href") and tag in ("a", "img", "link", "script")):
                self.targets.append(value)


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    built = {p.relative_to(site).as_posix() for p in pages(site)}
    for page in ("index.html", "getting-started/index.html", "migrating-from-the-sdk/index.html",
                 "reference/api/index.html", "reference/cli/index.html",
                 "explanation/performance/index.html", "changelog/index.html"):
        assert page in built
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in ("connect", "Client", "call_tool", "CallToolResult", "Server"):
        assert name in api, f"the API reference lost {name}"


def test_every_internal_link_and_image_exists(site: Path) -> None:
    broken: list[str] = []
    for page in pages(site):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for target in parser.targets:
            parts = urllib.parse.urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("#", "mailto:")):
                continue
            path = (page.parent / urllib.parse.unquote(parts.path)).resolve()
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                broken.append(f"{page.relative_to(site)} -> {target}")
    assert not broken, "broken links:\n" + "\n".join(broken)


class _Recorder(http.server.SimpleHTTPRequestHandler):
    failures: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        if code >= 400:
            self.failures.append(f"{code} {self.path} (from {self.headers.get('Referer')})")
        super().send_response(code, message)


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[tuple[str, list[str]]]:
    failures: list[str] = []
    handler = type("Handler", (_Recorder,), {"failures": failures})

    def make(*args: object, **kwargs: object) -> http.server.SimpleHTTPRequestHandler:
        return handler(*args, directory=str(site), **kwargs)  # type: ignore[arg-type]

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", failures
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


class _Browser:
    """One headless Chromium, driven over the DevTools protocol (a WebSocket on 127.0.0.1):
    one start-up for every page, where a browser per page spent most of its time starting."""

    def __init__(self, profile: Path, deadline: float) -> None:
        self.deadline = deadline
        self.process = subprocess.Popen(
            [CHROMIUM or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env={**os.environ, "HOME": str(profile)},
        )  # fmt: skip
        lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._drainer = threading.Thread(target=self._drain, args=(lines,), daemon=True)
        self._drainer.start()
        while not (line := lines.get(timeout=self._left())).startswith("DevTools listening on "):
            pass  # the browser tells where its DevTools socket listens, then keeps logging
        self.socket = websocket.create_connection(
            line.split()[-1], timeout=self._left(), suppress_origin=True
        )
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def _drain(self, lines: queue.SimpleQueue[str]) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:  # read to the end: a full pipe would stall it
            lines.put(line.strip())
        lines.put("")

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("Chromium did not render the pages in time")
        return left

    def send(self, method: str, params: dict[str, Any] | None = None, **route: str) -> Any:
        """Send one command and return its result; events on the way are kept."""
        command_id = next(self._ids)
        self.socket.send(json.dumps({"id": command_id, "method": method,
                                     "params": params or {}, **route}))  # fmt: skip
        while True:
            message = self.next()
            if message.get("id") == command_id:
                assert "error" not in message, f"{method}: {message['error']}"
                return message.get("result", {})
            self.events.append(message)

    def next(self) -> dict[str, Any]:
        self.socket.settimeout(self._left())
        return json.loads(self.socket.recv())

    def wait_for(self, method: str) -> None:
        while not any(event.get("method") == method for event in self.events):
            self.events.append(self.next())

    def close(self) -> None:
        self.socket.close()
        self.process.kill()
        self.process.wait(30)
        self._drainer.join(30)
        assert self.process.stderr is not None
        self.process.stderr.close()


def _console(event: dict[str, Any]) -> str | None:
    """What a page said on its console or threw, from one DevTools event (else ``None``)."""
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.consoleAPICalled":
        said = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"])
        return f"console.{params['type']}: {said}"
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return f"uncaught: {details.get('exception', {}).get('description', details['text'])}"
    if method == "Log.entryAdded" and params["entry"]["level"] == "error":
        return f"error: {params['entry']['text']} ({params['entry'].get('url')})"
    return None


def render(browser: _Browser, session: str, url: str) -> list[str]:
    """Load ``url`` in the browser's tab; what went wrong on that page."""
    browser.events.clear()
    browser.send("Page.navigate", {"url": url}, sessionId=session)
    browser.wait_for("Page.loadEventFired")
    settled = "new Promise(done => requestIdleCallback(done, {timeout: 3000}))"  # scripts ran
    browser.send("Runtime.evaluate", {"expression": settled, "awaitPromise": True},
                 sessionId=session)  # fmt: skip
    dom = browser.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                            "returnByValue": True}, sessionId=session)  # fmt: skip
    html_text = dom["result"]["value"]
    problems = [f"{url}: {said}" for event in browser.events if (said := _console(event))]
    if "<article" not in html_text:
        problems.append(f"{url}: did not render")
    if re.search(r"Traceback|mkdocstrings: error", html_text):
        problems.append(f"{url}: the page shows an error")
    return problems


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_every_page_renders_in_headless_chromium(
    site: Path, served: tuple[str, list[str]], tmp_path: Path
) -> None:
    # One browser, one tab, page after page; a failed request names its page in its Referer.
    base, failures = served
    urls = [f"{base}/{page.relative_to(site).as_posix()}" for page in pages(site)]
    browser = _Browser(tmp_path / "profile", time.monotonic() + 300)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        tab = session["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable", sessionId=tab)
        problems = [problem for url in urls for problem in render(browser, tab, url)]
    finally:
        browser.close()
    problems += [f"request failed: {failure}" for failure in failures]
    assert len(urls) >= 30
    assert not problems, "\n".join(problems)
