"""The documentation site: it builds with ``mkdocs build --strict`` (no broken link, no missing
reference), every page renders in headless Chromium with no console message and no request
that fails, and every internal link and image of every page points at something that exists.

The site is served from 127.0.0.1 by a small threaded server of the test's own, which records
each request's status, so a missing image or script shows up as a 404 against the page that
asked for it. Chromium is Debian's ``chromium`` (``make test`` installs it); where it cannot
be installed the render test skips and says why.
"""

from __future__ import annotations

import concurrent.futures
import html.parser
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    "--virtual-time-budget=3000",
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


def render(url: str, profile: Path) -> list[str]:
    """Load ``url`` in a fresh headless Chromium; what went wrong, page by page."""
    done = subprocess.run(
        [CHROMIUM or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(profile)},
    )
    problems = [f"{url}: console: {line}" for line in done.stderr.splitlines() if ":CONSOLE" in line]
    if done.returncode != 0 or "<article" not in done.stdout:
        problems.append(f"{url}: did not render (exit {done.returncode})")
    if re.search(r"Traceback|mkdocstrings: error", done.stdout):
        problems.append(f"{url}: the page shows an error")
    return problems


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")
def test_every_page_renders_in_headless_chromium(
    site: Path, served: tuple[str, list[str]], tmp_path: Path
) -> None:
    # Two browsers at a time: a browser's start-up is most of a page's time, and this test has
    # the machine to itself (serial pass). A failed request names its page in its Referer.
    base, failures = served
    urls = [f"{base}/{page.relative_to(site).as_posix()}" for page in pages(site)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        found = pool.map(render, urls, [tmp_path / f"profile-{i % 2}-{i}" for i in range(len(urls))])
        problems = [problem for page in found for problem in page]
    problems += [f"request failed: {failure}" for failure in failures]
    assert len(urls) >= 30
    assert not problems, "\n".join(problems)
