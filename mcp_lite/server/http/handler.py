"""The request handler of the small server's Streamable HTTP endpoint (``/mcp``): both
eras on one endpoint, told apart per request; a POST answers with one JSON body or an SSE
stream, GET opens a session's stream, DELETE ends a session. How it works:
``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import queue
import select
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from ..._accel import encode_message
from ...protocol import versions as pv
from .._context import _id_key, log
from .endpoint import App, _Conn, _Inline, _rpc_error, _Session
from .framing import AmbiguousFraming, body_length
from .hangup import HangupWatch
from .head import read_headers
from .headers import check_headers
from .relay import Relay
from .response_head import _STATUS_LINES, _http_date, _http_version
from .slots import RETRY_AFTER_S, Slots
from .streams import END as _END
from .streams import Router as _Router
from .streams import Stream as _Stream

__all__ = ["Handler"]

_KEEPALIVE_S = 15.0
_POLL_S = 0.25
# Refusals of a 2026-07-28 request itself (not of the work it asked for) are HTTP 400.
_BAD_REQUEST_CODES = frozenset({-32020, -32021, -32022})
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mcp-lite-server"
    # socket timeout: an idle keep-alive connection (or a stalled body) gives its slot back
    timeout = 120
    app: App  # set on the subclass made per HttpServer
    hangups: HangupWatch  # likewise
    versions: tuple[str, ...] = ()  # the server's, read once per POST
    body_length: int | None = 0  # of the request being served (None: Transfer-Encoding)

    def log_message(self, format: str, *args: Any) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("http %s " + format, self.address_string(), *args)

    _served = False  # a request was handled on this connection already
    _body_held = 0  # bytes of the body budget this request holds (``Slots.hold_body``)

    def handle_one_request(self) -> None:
        """The next request, after an idle wait between two (``Slots.wait_request``: an
        idle connection gives its slot up when a new client needs one)."""
        slots: Slots | None = getattr(self.server, "slots", None)
        slot = None if slots is None else slots.of(self.connection)
        if self._served and slot is not None and not slots.wait_request(slot):  # type: ignore[union-attr]
            self.close_connection = True
            return
        self._served = True
        try:
            super().handle_one_request()
        finally:
            if self._body_held and slots is not None:
                slots.release_body(self._body_held)
            self._body_held = 0

    def _hold_body(self, size: int) -> bool:
        """Reserve ``size`` bytes of the server's body budget for this request; when there
        is no room, answer 503 (the body unread: the request ran nothing) and say False."""
        slots: Slots | None = getattr(self.server, "slots", None)
        if slots is None or slots.hold_body(size):
            self._body_held = size
            return True
        self.close_connection = True  # the body stays unread
        self._plain(
            503,
            _rpc_error(-32603, "Service Unavailable: too many request bodies at once"),
            {"Retry-After": str(RETRY_AFTER_S)},
        )
        return False

    def _read_whole(self) -> None:
        """This connection's request is read whole: it is answered now, never evicted."""
        slots: Slots | None = getattr(self.server, "slots", None)
        if slots is not None:
            slots.busy(slots.of(self.connection))

    # --- the request head ---------------------------------------------------------------

    def parse_request(self) -> bool:
        """``BaseHTTPRequestHandler.parse_request`` (the same checks, refusals and bounds),
        with the header block read by ``_http_head.read_headers`` (the stdlib's reading,
        without the ``email`` parser for plain lines)."""
        self.command = None  # type: ignore[assignment]
        self.request_version = version = self.default_request_version
        self.close_connection = True
        raw: bytes = self.raw_requestline  # type: ignore[attr-defined]
        requestline = str(raw, "iso-8859-1").rstrip("\r\n")
        self.requestline = requestline
        words = requestline.split()
        if not words:
            return False
        if len(words) >= 3:  # enough to tell the protocol version
            version = words[-1]
            number = _http_version(version)
            if number is None:
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
                return False
            if number >= (1, 1) and self.protocol_version >= "HTTP/1.1":
                self.close_connection = False
            if number >= (2, 0):
                self.send_error(
                    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED,
                    f"Invalid HTTP version ({version.split('/', 1)[1]})",
                )
                return False
            self.request_version = version
        if not 2 <= len(words) <= 3:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({requestline!r})")
            return False
        command, path = words[:2]
        if len(words) == 2:
            self.close_connection = True
            if command != "GET":
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad HTTP/0.9 request type ({command!r})")
                return False
        self.command, self.path = command, path
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")  # reduce to a single /
        try:
            self.headers = read_headers(self.rfile)  # type: ignore[assignment]
        except http.client.LineTooLong as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(err)
            )
            return False
        try:
            self.body_length = body_length(self.headers)
        except AmbiguousFraming as exc:  # RFC 9112 §6.3: refuse it, read no further
            self.close_connection = True
            self._refuse(400, -32600, f"Bad Request: {exc}")
            return False
        conntype = self.headers.get("Connection", "").lower()
        if conntype == "close":
            self.close_connection = True
        elif conntype == "keep-alive" and self.protocol_version >= "HTTP/1.1":
            self.close_connection = False
        if self.body_length != 0 and command != "POST":
            self.close_connection = True  # only a POST's body is read: no next request
        expect = self.headers.get("Expect", "")
        if (
            expect.lower() == "100-continue"
            and self.protocol_version >= "HTTP/1.1"
            and self.request_version >= "HTTP/1.1"
        ):
            return bool(self.handle_expect_100())
        return True

    # --- small helpers ----------------------------------------------------------------

    def _plain(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        """A whole response (head and JSON body) in one write."""
        # compact UTF-8 JSON (the stdio codec's; NaN and infinities as null)
        data = b"" if body is None else encode_message(body)[:-1]
        if self.request_version == "HTTP/0.9":  # (no head at all: the stdlib's way)
            self.send_response(status)
            self.end_headers()
            self.wfile.write(data)
            return
        if log.isEnabledFor(logging.DEBUG):
            self.log_request(status)
        head = f"{self._status_line(status)}Date: {_http_date()}\r\n"
        if headers:
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        if body is not None:
            head += "Content-Type: application/json\r\n"
        if self.close_connection:
            head += "Connection: close\r\n"
        self.wfile.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode("latin-1") + data)

    def _status_line(self, status: int) -> str:
        """``<version> <status> <reason>`` and the ``Server`` header, made once per status."""
        # Keyed by what the line is made of, not by the handler class: a class per
        # HttpServer holds its app and server, which a class key would keep alive.
        key = (self.protocol_version, self.server_version, self.sys_version, status)
        line = _STATUS_LINES.get(key)
        if line is None:
            reason = self.responses[status][0] if status in self.responses else ""
            line = (
                f"{self.protocol_version} {status} {reason}\r\nServer: {self.version_string()}\r\n"
            )
            if len(_STATUS_LINES) < 256:
                _STATUS_LINES[key] = line
        return line

    def _refuse(self, status: int, code: int, message: str, rid: Any = None) -> None:
        self._plain(status, _rpc_error(code, message, rid))

    def _path_ok(self) -> bool:
        if urlsplit(self.path).path.rstrip("/") != "/mcp":
            self._plain(404, _rpc_error(-32600, "Not Found: the MCP endpoint is /mcp"))
            return False
        origin = self.headers.get("Origin")
        if origin and self.app.bound_loopback:
            host = (urlsplit(origin).hostname or "").lower()
            if host not in _LOOPBACK:  # DNS rebinding guard for a loopback server
                self._refuse(403, -32600, "Forbidden: invalid Origin")
                return False
        return True

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True

    # --- POST -------------------------------------------------------------------------

    def do_POST(self) -> None:
        keep = self.close_connection
        self.close_connection = True  # a refused path's body stays unread: no next request
        if not self._path_ok():
            return
        self.close_connection = keep
        length = self.body_length
        if length is None or "Content-Length" not in self.headers:
            self.close_connection = True
            self._refuse(411, -32600, "Length Required: a Content-Length is required")
            return
        if length > self.app.max_body:
            self.close_connection = True  # the body stays unread
            self._refuse(413, -32600, f"Payload Too Large: more than {self.app.max_body} bytes")
            return
        if not self._hold_body(length):
            return
        body = self.rfile.read(length)
        self._read_whole()
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            self._refuse(415, -32600, "Unsupported Media Type: expected application/json")
            return
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:  # (nested too deep: a parse error)
            self._refuse(400, -32700, f"Parse error: {exc}")
            return
        accept = self.headers.get("Accept", "")
        sse_ok = "text/event-stream" in accept or "*/*" in accept or not accept
        header_version = self.headers.get("MCP-Protocol-Version")
        # the server's versions, read once per request (the gateway's may start its server)
        self.versions = self.app.server.versions
        if self.app.is_modern(message, header_version, self.versions):
            self._modern(message, sse_ok)
        elif self.app.stateless:
            self._legacy_stateless(message, sse_ok, header_version)
        else:
            self._legacy_session(message, sse_ok, header_version)

    def _modern(self, msg: Any, sse_ok: bool) -> None:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self._refuse(400, -32600, "Invalid Request: one JSON-RPC message per POST")
            return
        if "id" not in msg:
            self._plain(202)  # notifications/cancelled is not used over HTTP; others unknown
            return
        rid = msg.get("id")
        problem = check_headers(self.headers, msg, self.app.server._tool_schema)
        if problem is not None:
            self._refuse(400, -32020, f"Header mismatch: {problem}", rid)
            return
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(pv.META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        if version not in self.versions:
            body = _rpc_error(-32022, "Unsupported protocol version", rid)
            body["error"]["data"] = {
                "supported": list(self.versions),
                "requested": version,
            }
            self._plain(400, body)
            return
        if not isinstance(meta, dict) or not isinstance(
            meta.get(pv.META_CLIENT_CAPABILITIES), dict
        ):
            self._refuse(400, -32602, f"_meta[{pv.META_CLIENT_CAPABILITIES!r}] is required", rid)
            return
        router = _Router()
        conn = self.app.one_shot(router)
        try:
            self._serve(conn, router, msg, sse_ok, modern=True)
        finally:
            self.app.done(conn)

    def _legacy_stateless(self, msg: Any, sse_ok: bool, header_version: str | None) -> None:
        if header_version is not None and header_version not in self.versions:
            self._refuse(
                400, -32600, f"Bad Request: unsupported MCP-Protocol-Version {header_version!r}"
            )
            return
        router = _Router()
        conn = self.app.one_shot(router)
        if not _has_initialize(msg):
            # no session to remember the handshake: take the version from the header
            conn.protocol_version = header_version or pv.V2025_03_26
        try:
            self._serve(conn, router, msg, sse_ok, modern=False)
        finally:
            self.app.done(conn)

    def _legacy_session(self, msg: Any, sse_ok: bool, header_version: str | None) -> None:
        headers: dict[str, str] = {}
        if _has_initialize(msg):
            session = self.app.new_session()
            if session is None:
                self._refuse(503, -32603, "Service Unavailable: too many sessions")
                return
            headers["Mcp-Session-Id"] = session.id
        else:
            session = self._session()
            if session is None:
                return
            if header_version is not None and header_version not in self.versions:
                self._refuse(
                    400, -32600, f"Bad Request: unsupported MCP-Protocol-Version {header_version!r}"
                )
                return
        self._serve(session.conn, session.router, msg, sse_ok, modern=False, headers=headers)

    def _session(self) -> _Session | None:
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            self._refuse(400, -32600, "Bad Request: Mcp-Session-Id header is required")
            return None
        with self.app.lock:
            session = self.app.sessions.get(sid)
            if session is not None:
                session.last_used = time.monotonic()
        if session is None:
            self._refuse(404, -32001, "Session not found")
        return session

    # --- answering --------------------------------------------------------------------

    def _serve(
        self,
        conn: _Conn,
        router: _Router,
        msg: Any,
        sse_ok: bool,
        modern: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        if isinstance(msg, dict):  # one message (as a batch of one)
            keys = {_id_key(msg["id"])} if "method" in msg and "id" in msg else set()
        else:
            items = msg if isinstance(msg, list) else [msg]
            keys = {
                _id_key(m["id"])
                for m in items
                if isinstance(m, dict) and "method" in m and "id" in m
            }
        if not keys:  # notifications and responses only
            conn.receive(msg)
            self._plain(202, headers=headers)
            return
        inline: _Inline | None = getattr(conn, "can_inline", None) and conn  # type: ignore[assignment]
        if (
            inline is not None
            and self.hangups.available
            and isinstance(msg, dict)
            and inline.can_inline(msg)
        ):
            (key,) = keys
            self._answer_inline(inline, router, msg, key, sse_ok, modern, headers or {})
            return
        stream = _Stream(keys)
        if not router.attach(stream):
            self._refuse(400, -32600, "Invalid Request: a request with this id is in progress")
            return
        try:
            conn.receive(msg)
            self._pump(conn, stream, sse_ok, modern, headers or {}, batch=isinstance(msg, list))
        finally:
            router.detach(keys)

    def _answer_inline(
        self,
        conn: _Inline,
        router: _Router,
        msg: dict[str, Any],
        key: str,
        sse_ok: bool,
        modern: bool,
        headers: dict[str, str],
    ) -> None:
        """One request answered on this thread (no hand-off to another thread and back):
        one JSON body, or an SSE stream once something is relayed before the response (an
        SSE-capable client only: the others get the response alone); the client hanging up
        withdraws it (``HangupWatch``)."""
        if not router.reserve(key):
            self._refuse(400, -32600, "Invalid Request: a request with this id is in progress")
            return
        cancel = threading.Event()
        chunked = self.request_version == "HTTP/1.1"
        relay = Relay(self.connection, lambda: self._sse_head(headers, chunked), chunked, cancel)
        if not sse_ok:
            relay.finish()  # JSON only: the response, nothing else
        try:
            if not self.hangups.watch(self.connection, cancel, relay):
                self._refuse(503, -32603, "the server is shutting down")
                return
            try:
                response = conn.answer(msg, key, cancel, relay)
            finally:
                self.hangups.unwatch(self.connection)
        finally:
            router.detach({key})
            pending = relay.finish()
        if relay.broken:
            self.close_connection = True
            return
        if relay.started:  # an SSE stream: what waits, then the response, then its end
            if response is None:
                self.close_connection = True  # withdrawn: the stream ends without it
                with contextlib.suppress(OSError):
                    self.wfile.write(pending)
                return
            end = relay.frame(response) + (b"0\r\n\r\n" if chunked else b"")
            try:
                self.wfile.write(pending + end)
            except OSError:
                self.close_connection = True
            if not chunked:
                self.close_connection = True
            return
        if response is None:  # withdrawn: the client went away, cancelled it, or ended its session
            self.close_connection = True
            if not self._client_gone():
                self._refuse(
                    503, -32603, "the request was withdrawn (cancelled, or its session ended)"
                )
            return
        status = 200
        if sse_ok and modern and "error" in response:
            code = response["error"].get("code")
            status = 404 if code == -32601 else 400 if code in _BAD_REQUEST_CODES else 200
        self._plain(status, response, headers)

    def _sse_head(self, headers: dict[str, str], chunked: bool) -> bytes:
        """The head of an SSE response (as ``_sse`` sends it), for a ``Relay``."""
        self.log_request(200)
        head = [
            f"{self.protocol_version} 200 OK\r\nServer: {self.version_string()}"
            f"\r\nDate: {_http_date()}\r\n"
        ]
        head.extend(f"{k}: {v}\r\n" for k, v in headers.items())
        head.append("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n")
        head.append("X-Accel-Buffering: no\r\n")
        head.append(
            "Transfer-Encoding: chunked\r\n\r\n" if chunked else "Connection: close\r\n\r\n"
        )
        return "".join(head).encode("latin-1")

    def _next(self, conn: _Conn, stream: _Stream) -> Any:
        """The next message for ``stream``; None when the client went away (its requests
        are then cancelled) or the stream broke."""
        idle = 0.0
        while True:
            if stream.broken:
                self._cancel(conn, stream)
                return None
            try:
                return stream.queue.get(timeout=_POLL_S)
            except queue.Empty:
                idle += _POLL_S
            if self._client_gone():
                self._cancel(conn, stream)
                return None
            if idle >= _KEEPALIVE_S:
                idle = 0.0
                return ":"  # a keep-alive comment (only written on an open SSE stream)

    def _cancel(self, conn: _Conn, stream: _Stream) -> None:
        for key in list(stream.pending):
            conn.receive(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": json.loads(key), "reason": "HTTP stream closed"},
                }
            )

    @staticmethod
    def _final(stream: _Stream, message: Any) -> bool:
        """Mark the responses in ``message``; True when it carried one of ours."""
        items = message if isinstance(message, list) else [message]
        hit = False
        for m in items:
            if isinstance(m, dict) and "method" not in m and "id" in m:
                key = _id_key(m["id"])
                if key in stream.pending:
                    stream.pending.discard(key)
                    hit = True
        return hit

    def _pump(
        self,
        conn: _Conn,
        stream: _Stream,
        sse_ok: bool,
        modern: bool,
        headers: dict[str, str],
        batch: bool,
    ) -> None:
        if not sse_ok:  # JSON only: the responses, nothing else
            out: list[Any] = []
            while stream.pending:
                m = self._next(conn, stream)
                if m is None or m is _END:
                    return
                if m != ":" and self._final(stream, m):
                    out.extend(m if isinstance(m, list) else [m])
            self._plain(200, out if batch else out[0], headers)
            return
        first = self._next(conn, stream)
        while first == ":":
            first = self._next(conn, stream)
        if first is None or first is _END:
            if first is _END:
                self._refuse(503, -32603, "the server is shutting down")
            return
        if self._final(stream, first) and not stream.pending:
            status = 200
            if modern and isinstance(first, dict) and "error" in first:
                code = first["error"].get("code")
                status = 404 if code == -32601 else 400 if code in _BAD_REQUEST_CODES else 200
            self._plain(status, first, headers)
            return
        self._sse(conn, stream, first, headers)

    def _sse(self, conn: _Conn, stream: _Stream, first: Any, headers: dict[str, str]) -> None:
        chunked = self.request_version == "HTTP/1.1"
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Accel-Buffering", "no")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

        def write(data: bytes) -> bool:
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
                self.wfile.flush()
                return True
            except OSError:
                return False

        message = first
        while True:
            if message == ":":
                ok = write(b":\n\n")
            else:
                ok = write(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")
            if not ok:
                self._cancel(conn, stream)
                self.close_connection = True
                return
            if not stream.pending:
                break
            message = self._next(conn, stream)
            if message is None or message is _END:
                self.close_connection = True
                return
            self._final(stream, message)
        if chunked:
            with contextlib.suppress(OSError):
                self.wfile.write(b"0\r\n\r\n")

    # --- GET and DELETE (handshake-era sessions only) ---------------------------------

    def do_GET(self) -> None:
        self._read_whole()
        if not self._path_ok():
            return
        if self.app.stateless or (
            (v := self.headers.get("MCP-Protocol-Version")) is not None and pv.is_stateless(v)
        ):
            self._plain(405, headers={"Allow": "POST"})
            return
        if "text/event-stream" not in self.headers.get("Accept", "text/event-stream"):
            self._refuse(406, -32600, "Not Acceptable: the GET stream is text/event-stream")
            return
        session = self._session()
        if session is None:
            return
        stream = _Stream({"standalone"})
        with session.router._lock:
            busy = session.router.standalone is not None
            if not busy:
                session.router.standalone = stream
        if busy:
            self._refuse(409, -32600, "Conflict: this session already has a GET stream")
            return
        try:
            self._sse_forever(stream)
        finally:
            with session.router._lock:
                if session.router.standalone is stream:
                    session.router.standalone = None

    def _sse_forever(self, stream: _Stream) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Accel-Buffering", "no")
        self.send_header("Connection", "close")
        self.end_headers()
        idle = 0.0
        while not stream.broken:
            try:
                m = stream.queue.get(timeout=_POLL_S)
            except queue.Empty:
                idle += _POLL_S
                if self._client_gone():
                    return
                if idle < _KEEPALIVE_S:
                    continue
                idle, data = 0.0, b":\n\n"
            else:
                if m is _END:
                    return
                data = b"event: message\ndata: " + json.dumps(m).encode() + b"\n\n"
            try:
                self.wfile.write(data)
                self.wfile.flush()
            except OSError:
                return

    def do_DELETE(self) -> None:
        self._read_whole()
        if not self._path_ok():
            return
        if self.app.stateless:
            self._plain(405, headers={"Allow": "POST"})
            return
        session = self._session()
        if session is None:
            return
        with self.app.lock:
            self.app.sessions.pop(session.id, None)
        session.close()
        self._plain(200)


def _has_initialize(msg: Any) -> bool:
    if isinstance(msg, dict):
        return msg.get("method") == "initialize"
    items = msg if isinstance(msg, list) else [msg]
    return any(isinstance(m, dict) and m.get("method") == "initialize" for m in items)
