"""The loopback redirect receiver of an interactive login (RFC 8252 §7.3): a one-shot server on
``127.0.0.1`` that completes only on the redirect carrying the login's own ``state``, and
hands the redirect URL to the flow (see docs/explanation/security.md, "Credentials go only to
their issuer").
"""

from __future__ import annotations

import hmac
import http.server
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import AuthRequired
from ._net import log

__all__ = ["LoopbackReceiver"]

_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mcp-lite</title>"
    b"<p>Authorization received. You can close this window and return to the "
    b"application.</p>"
)


_REFUSED = (
    b"<!doctype html><meta charset=utf-8><title>mcp-lite</title>"
    b"<p>This response does not belong to the login in progress; it was ignored.</p>"
)

_MAX_CONNECTIONS = 16
_SOCKET_TIMEOUT = 5.0


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    timeout = _SOCKET_TIMEOUT  # per connection: an idle preconnect ends, never blocks others

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != self.server.callback_path:
            self.send_error(404)
            return
        if not self.server.matches(parts.query):
            self._page(400, _REFUSED)  # not ours: keep waiting for the real one
            return
        with self.server.result_lock:
            first = self.server.result is None
            if first:
                self.server.result = f"http://{self.server.host_label}{self.path}"
        if not first:
            self.send_error(404)
            return
        self._page(200, _PAGE)
        self.server.done.set()

    def _page(self, status: int, page: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:
        return  # the request line holds the authorization code: never log it


class _Server(http.server.ThreadingHTTPServer):
    callback_path = "/callback"
    host_label = ""
    result: str | None = None
    expected_state: str | None = None  # set by ``LoopbackReceiver.expect``
    daemon_threads = True

    def matches(self, query: str) -> bool:
        """True when ``query`` carries exactly one ``state``, the expected one."""
        expected = self.expected_state
        states = parse_qs(query, keep_blank_values=True).get("state", [])
        if expected is None or len(states) != 1:
            return False
        return hmac.compare_digest(states[0].encode(), expected.encode())

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.done = threading.Event()
        self.result_lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)
        self.timeout = 0.25

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # too many at once: this one is dropped
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(_SOCKET_TIMEOUT)
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("OAuth callback server: a connection failed")


class LoopbackReceiver:
    """Listen on ``127.0.0.1:port`` (0: any free port) for one redirect to ``path``.

    Use as a context manager; ``redirect_uri`` is ready once entered.
    """

    def __init__(self, port: int = 0, path: str = "/callback") -> None:
        self._server = _Server(port)
        self._server.callback_path = path
        self.port = int(self._server.server_address[1])
        self._server.host_label = f"127.0.0.1:{self.port}"
        self.redirect_uri = f"http://127.0.0.1:{self.port}{path}"
        self._thread = threading.Thread(
            target=self._serve, daemon=True, name=f"mcp-lite-oauth-callback[{self.port}]"
        )
        self._stop = threading.Event()

    def expect(self, state: str) -> None:
        """Complete only on a redirect carrying this ``state`` (before the URL is shown)."""
        self._server.expected_state = state

    def __enter__(self) -> LoopbackReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        while not self._stop.is_set() and not self._server.done.is_set():
            try:
                self._server.handle_request()
            except Exception as exc:  # one bad request must not end the wait
                log.debug("OAuth callback server: %s", type(exc).__name__)

    def wait(self, timeout: float) -> str:
        """The redirect URL the browser came back with.

        Raises:
            AuthRequired: nothing arrived within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while not self._server.done.wait(0.25):
            if time.monotonic() >= deadline:
                raise AuthRequired(
                    f"no authorization arrived on {self.redirect_uri} within {timeout:g} seconds"
                )
        assert self._server.result is not None
        return self._server.result

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)
        self._server.server_close()  # handler threads end by their socket timeout
