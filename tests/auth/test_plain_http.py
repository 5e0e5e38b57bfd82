"""Plain http and where credentials go.

Servers "on another machine" are reached honestly without leaving 127.0.0.1: the client is
given ``HTTP_PROXY`` pointing at a small forward proxy on loopback, and the proxy delivers
every request for ``http://mcp.example.test`` to a local server. The client's decisions
(OAuth or not, warnings) see the real non-loopback URL; the bytes never leave the machine.
"""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from authserver import AuthServer

import mcp_lite
from mcp_lite._secrets import is_loopback_host, plain_text_off_loopback
from mcp_lite.auth import MemoryTokenStore, OAuth, fetch_redirect
from mcp_lite.auth.discovery import Challenge, prm_urls
from mcp_lite.errors import AuthRequired, ConfigError

Start = Callable[..., AuthServer]
PINNED = "2025-11-25"
REMOTE = "http://mcp.example.test/mcp"
CANARY = "plain-http-canary-s3cr3t"


class _Proxy(BaseHTTPRequestHandler):
    backend: tuple[str, int]
    seen: list[tuple[str, str, dict[str, str]]]
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _forward(self) -> None:
        target = urlsplit(self.path)  # absolute-form: http://mcp.example.test/mcp
        headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"}
        self.seen.append(
            (target.hostname or "", target.path, {k.lower(): v for k, v in headers.items()})
        )
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection(*self.backend, timeout=30)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            conn.request(self.command, path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        finally:
            conn.close()

    do_GET = do_POST = do_DELETE = _forward


@pytest.fixture
def via_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], list[Any]]]:
    """``via_proxy(backend_url)``: from now on ``http://mcp.example.test`` is that backend,
    reached through a loopback proxy; returns the list of requests the proxy forwarded."""
    servers: list[ThreadingHTTPServer] = []

    def start(backend_url: str) -> list[Any]:
        parts = urlsplit(backend_url)
        seen: list[Any] = []
        handler = type("P", (_Proxy,), {"backend": (parts.hostname, parts.port), "seen": seen})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{httpd.server_address[1]}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{httpd.server_address[1]}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        return seen

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def plain_server() -> Iterator[str]:
    server = mcp_lite.Server("plain")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    running = server.serve_http(port=0, stateless=True)
    try:
        yield running.url
    finally:
        running.close()


@pytest.fixture(autouse=True)
def _isolated_tokens(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_LITE_AUTH_DIR", str(tmp_path / "oauth"))


def test_the_decision() -> None:
    assert plain_text_off_loopback("http://mcp.example.test/mcp")
    assert plain_text_off_loopback("ws://10.0.0.5/ws")
    for url in (
        "https://mcp.example.test/mcp",
        "wss://mcp.example.test/ws",
        "http://127.0.0.1:8000/mcp",
        "http://localhost/mcp",
        "http://[::1]:9/mcp",
        "http://[::ffff:127.0.0.1]:9/mcp",
    ):
        assert not plain_text_off_loopback(url), url
    assert is_loopback_host("127.8.9.10") and not is_loopback_host("127.0.0.1.example.test")


def test_a_plain_http_server_off_loopback_that_needs_no_auth_works(
    via_proxy: Callable[[str], list[Any]], plain_server: str
) -> None:
    seen = via_proxy(plain_server)
    with mcp_lite.connect(REMOTE, timeout=20) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"
    assert seen and all(host == "mcp.example.test" for host, _, _ in seen)
    assert all("authorization" not in headers for _, _, headers in seen)
    assert not [path for _, path, _ in seen if path.startswith("/.well-known")]


def test_oauth_never_runs_over_plain_http_off_loopback(
    via_proxy: Callable[[str], list[Any]], auth_server: Start
) -> None:
    server = auth_server()
    seen = via_proxy(server.url)
    with pytest.raises(AuthRequired):
        mcp_lite.connect(REMOTE, timeout=20, protocol_version=PINNED)
    with pytest.raises(AuthRequired, match="https"):
        OAuth(REMOTE, store=MemoryTokenStore())
    # The 401 was the end of it: no metadata, no registration, no token request.
    assert {path for _, path, _ in seen} == {"/mcp"}
    assert server.requests_to("/.well-known/oauth-protected-resource/mcp") == []


def test_a_static_header_over_plain_http_off_loopback_warns_once(
    via_proxy: Callable[[str], list[Any]],
    plain_server: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen = via_proxy(plain_server)
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        with mcp_lite.connect(REMOTE, headers={"X-Api-Key": CANARY}, timeout=20) as client:
            client.list_tools()
            client.list_tools()
    warnings = [r for r in caplog.records if "plain http" in r.getMessage()]
    assert len(warnings) == 1
    assert "X-Api-Key" in warnings[0].getMessage()
    assert CANARY not in caplog.text
    assert all(headers.get("x-api-key") == CANARY for _, _, headers in seen)  # still sent


def test_a_static_header_to_loopback_does_not_warn(
    plain_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with mcp_lite.connect(plain_server, headers={"X-Api-Key": CANARY}, timeout=20) as client:
        client.list_tools()
    assert not [r for r in caplog.records if "plain http" in r.getMessage()]


def test_a_plain_http_metadata_url_from_a_challenge_is_followed_only_for_loopback() -> None:
    evil = Challenge(resource_metadata="http://169.254.169.254/latest/meta-data")
    assert evil.resource_metadata not in prm_urls("https://mcp.example.test/mcp", evil)
    local = Challenge(resource_metadata="http://127.0.0.1:9/prm")
    assert prm_urls("http://127.0.0.1:8000/mcp", local)[0] == local.resource_metadata
    assert local.resource_metadata not in prm_urls("https://mcp.example.test/mcp", local)
    safe = Challenge(resource_metadata="https://mcp.example.test/.well-known/x")
    assert prm_urls("https://mcp.example.test/mcp", safe)[0] == safe.resource_metadata


@pytest.mark.parametrize("kind", ["http", "sse", "proxy"])
def test_a_token_goes_only_to_the_resource_it_was_issued_for(auth_server: Start, kind: str) -> None:
    first, other = auth_server(), auth_server()
    auth = OAuth(first.url, authorization_handler=fetch_redirect, store=MemoryTokenStore())
    with mcp_lite.connect(first.url, auth=auth, timeout=20, protocol_version=PINNED) as client:
        client.list_tools()
    assert auth.authorized
    target: dict[str, Any] = {"type": kind, "url": other.url}
    options: dict[str, Any] = {"auth": auth}
    if kind == "proxy":
        target["auth"], options = auth, {}
    with pytest.raises(ConfigError, match="refusing to send them"):
        mcp_lite.connect(target, timeout=10, protocol_version=PINNED, **options)
    assert all("authorization" not in s.headers for s in other.seen)
