"""Legacy HTTP+SSE: a 401 on the stream's GET asks the auth provider once, like the POSTs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_lite._http.session import HttpOptions
from mcp_lite.errors import AuthRequired
from mcp_lite.transports.sse import SseTransport


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[str | None] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        if self.headers.get("Authorization") != "Bearer good":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: /messages\n\n")
        self.wfile.flush()
        time.sleep(0.5)  # keep the stream open while the test looks

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def sse_url() -> Iterator[str]:
    _Handler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/sse"
    server.shutdown()
    server.server_close()


class _Provider:
    def __init__(self, fresh: str | None) -> None:
        self.fresh, self.refreshed = fresh, []  # type: list[str | None]

    def token(self) -> str | None:
        return "stale"

    def refresh(self, sent: str | None) -> str | None:
        self.refreshed.append(sent)
        return self.fresh


def test_a_401_on_the_stream_is_refreshed_once_and_retried(sse_url: str) -> None:
    provider = _Provider("good")
    transport = SseTransport(HttpOptions(url=sse_url, headers={}, auth=provider))
    try:
        transport.start(lambda frame: None, lambda error: None)
        assert transport.endpoint is not None and transport.endpoint.endswith("/messages")
    finally:
        transport.close()
    assert provider.refreshed == ["stale"]
    assert _Handler.seen == ["Bearer stale", "Bearer good"]


def test_no_fresh_token_is_auth_required(sse_url: str) -> None:
    provider = _Provider(None)
    transport = SseTransport(HttpOptions(url=sse_url, headers={}, auth=provider))
    with pytest.raises(AuthRequired):
        transport.start(lambda frame: None, lambda error: None)
    assert provider.refreshed == ["stale"] and len(_Handler.seen) == 1
