"""``HttpServer``: the listening side of the small server's Streamable HTTP, on TCP or a
Unix socket; one daemon thread per HTTP connection, bounded by the endpoint's slots."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from .._context import log
from .endpoint import MAX_BODY, App, _Opener
from .handler import _LOOPBACK, Handler
from .hangup import HangupWatch
from .slots import RETRY_AFTER_S, Slots, peer_of
from .unix_socket import listen as _listen_unix
from .unix_socket import remove as _remove_unix

__all__ = ["HttpServer"]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # the stdlib's listen backlog of 5 drops the SYNs of a burst of clients, who then wait out
    # the kernel's 1 s SYN retry; a burst of callers is the normal case for a shared server
    request_queue_size = 128
    app: App

    @property
    def slots(self) -> Slots:
        return self.app.slots

    def process_request(self, request: Any, client_address: Any) -> None:
        # bounded: past MAX_CONNECTIONS connections, one is freed (_http_slots) or the new
        # one is refused at once, its request unread: it ran nothing, so it may come again
        if self.app.slots.admit(request, peer_of(request, client_address)) is None:
            with contextlib.suppress(OSError):
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                    b"Retry-After: %d\r\nConnection: close\r\n\r\n" % RETRY_AFTER_S
                )
            self.shutdown_request(request)
            return
        with self.app.lock:  # here, on the accepting thread: close() knows it once shut down
            self.app.requests.add(request)
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        slot = self.app.slots.of(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.app.lock:
                self.app.requests.discard(request)
            if slot is not None:
                self.app.slots.release(slot)

    def shutdown_request(self, request: Any) -> None:
        slot = self.app.slots.of(request)
        if slot is not None and slot.state == "idle":
            # Ended between two requests: a plain close, no half-close first, so a request
            # written meanwhile meets ECONNRESET (it ran nothing), never a clean end.
            self.close_request(request)
            return
        super().shutdown_request(request)

    def service_actions(self) -> None:
        self.app.slots.sweep()  # requests read for too long end

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left (or stalled) mid-request is its own business: one debug line,
        not the stdlib's traceback on stderr; anything else is logged with its traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("http client %s left (or stalled) mid-request: %s", client_address, exc)
        else:
            log.error("http request from %s failed", client_address, exc_info=True)

    def end_connections(self) -> None:
        """Shut every open client connection down: a kept-alive one would otherwise go on
        being served by its (daemon) thread after ``close()``."""
        with self.app.lock:
            requests = list(self.app.requests)
        for request in requests:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)


class _UnixHTTPServer(_HTTPServer):
    """The same server on a listening ``AF_UNIX`` socket (bound by ``_unix.listen``)."""

    address_family = socket.AF_UNIX

    def __init__(self, sock: socket.socket, handler: Any) -> None:
        super().__init__(sock.getsockname(), handler, bind_and_activate=False)
        self.socket.close()  # the unbound one socketserver made
        self.socket = sock

    def get_request(self) -> tuple[socket.socket, Any]:
        request, _ = self.socket.accept()
        return request, ("unix", 0)  # a Unix peer has no address; the handler logs one


class HttpServer:
    """A running Streamable HTTP endpoint (see ``Server.serve_http``); ``close()`` stops it.

    Attributes:
        url: the MCP endpoint, e.g. ``http://127.0.0.1:8000/mcp``, or
            ``unix:///path/srv.sock`` on a Unix socket (what ``mcp_lite.connect`` takes).
        host, port: where it listens (``port`` is the real one when 0 was asked for; ``""``
            and 0 on a Unix socket).
        socket_path: the Unix socket file (None on TCP).
    """

    def __init__(
        self,
        server: _Opener,
        host: str,
        port: int,
        stateless: bool,
        max_body: int = MAX_BODY,
        *,
        socket_path: str | None = None,
        socket_mode: int = 0o600,
        handler: type[Handler] | None = None,
    ) -> None:
        # handler: a subclass of Handler (the gateway's serves many endpoints on one socket)
        self._app = App(server, stateless, max_body)
        self._hangups = HangupWatch()
        # TCP_NODELAY (TCP only): an answer's head and body are two writes, and Nagle would
        # hold the body until the client's delayed ACK (~40 ms per call on loopback).
        nodelay = socket_path is None
        handler = type(
            "Handler",
            (handler or Handler,),
            {"app": self._app, "hangups": self._hangups, "disable_nagle_algorithm": nodelay},
        )
        self.socket_path = socket_path
        self._socket_id: tuple[int, int] | None = None
        if socket_path is not None:
            sock, self._socket_id = _listen_unix(socket_path, socket_mode)
            self._httpd: _HTTPServer = _UnixHTTPServer(sock, handler)
            self.host, self.port = "", 0
            self.url = f"unix://{socket_path}"
            where = socket_path
        else:
            self._httpd = _HTTPServer((host, port), handler)
            self._app.bound_loopback = host in _LOOPBACK or host.startswith("127.")
            self.host = host
            self.port = self._httpd.server_address[1]
            shown = f"[{host}]" if ":" in host else host
            self.url = f"http://{shown}:{self.port}/mcp"
            where = str(self.port)
        self._httpd.app = self._app
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"mcp-server-http[{where}]",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        """Stop listening, end every session and stream, and wait (bounded) for the loop."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._app.close()
        self._httpd.server_close()
        self._httpd.end_connections()
        self._hangups.close()
        if self.socket_path is not None and self._socket_id is not None:
            _remove_unix(self.socket_path, self._socket_id)
        self._thread.join(timeout=5.0)

    def wait(self) -> None:
        """Block until ``close()`` (from another thread) or KeyboardInterrupt."""
        while self._thread.is_alive():
            self._thread.join(timeout=0.5)

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<HttpServer {self.url}>"
