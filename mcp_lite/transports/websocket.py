"""The WebSocket transport (``type: "ws"`` and ``"ws-ide"``) on ``websocket-client``: one
JSON-RPC message per text frame (subprotocol ``mcp``), a reader thread that pings on silence,
and an opening, frames and close bounded by the caller's deadline and the size limit (see
docs/explanation/architecture.md, "Transports").
"""

from __future__ import annotations

import logging
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping

import websocket
from websocket._abnf import frame_buffer
from websocket._http import _ssl_socket as ssl_socket
from websocket._socket import DEFAULT_SOCKET_OPTION
from websocket._url import get_proxy_info, parse_url

from .._deadline import Deadline
from .._http import auth as _auth
from .._http.auth import Auth
from .._http.causes import network_cause
from .._http.resolve import LookupTimeout, TooManyLookups, connect_to, is_literal, lookup
from .._http.slots import Slot
from .._secrets import redact_text, redact_url
from ..errors import AuthRequired, ConnectError, ConnectionClosed, McpError, RequestTimeout
from .base import OnClose, OnMessage, Outgoing, TransportBase

__all__ = ["WebSocketTransport"]

log = logging.getLogger("mcp_lite.websocket")

_NETWORK_ERRORS = (websocket.WebSocketException, OSError, ValueError)
# A blocked write re-checks close() this often (it sleeps in select, never spins).
_WRITE_POLL = 0.25
_WRITE_PIECE = 64 * 1024
_MAX_CONTROL_PAYLOAD = 125  # RFC 6455 5.5
# close(): each of its two waits (the write lock, then the server's close frame; the
# reader after the shutdown) is at most this long.
_CLOSE_STEP = 0.4


class _Oversized(Exception):
    def __init__(self, size: int, limit: int, control: bool) -> None:
        super().__init__(size, limit)
        self.size, self.limit, self.control = size, limit, control


class _BoundedFrames(frame_buffer):
    """websocket-client's frame reader, refusing a frame from its length field when it (with
    the fragments before it) would pass the limit: its payload is never read."""

    def __init__(self, ws: websocket.WebSocket, limit: int) -> None:
        super().__init__(ws._recv, ws.frame_buffer.skip_utf8_validation)
        self._cont = ws.cont_frame
        self._limit = limit

    def recv_length(self) -> None:
        super().recv_length()
        header, length = self.header, self.length or 0
        opcode = header[4] if header is not None else 0
        if opcode >= 0x8:
            if length > _MAX_CONTROL_PAYLOAD:
                raise _Oversized(length, _MAX_CONTROL_PAYLOAD, True)
            return
        assembled = self._cont.cont_data
        before = len(assembled[1]) if opcode == 0x0 and assembled else 0
        if before + length > self._limit:
            raise _Oversized(before + length, self._limit, False)


class WebSocketTransport(TransportBase):
    """WebSocket to ``url``; see the module docstring.

    Args:
        url: ``ws://`` or ``wss://``.
        headers: extra handshake headers (``ws-ide`` puts its token here).
        auth: optional bearer-token provider (``Authorization: Bearer``).
        connect_timeout: seconds for the TCP, TLS and WebSocket handshakes.
        ping_interval: seconds of silence before a ping (None: never ping).
        max_message_size: the largest frame accepted from the server, in bytes.
        name: used in log records and error messages.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Auth | None = None,
        connect_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        max_message_size: int = 64 * 1024 * 1024,
        name: str = "",
    ) -> None:
        self.url = url
        self.name = name or url
        self._headers = dict(headers or {})
        self._auth = auth
        self._connect_timeout = connect_timeout
        self._ping_interval = ping_interval
        self._max_message_size = max_message_size
        self._owner_pid = os.getpid()
        self._ws: websocket.WebSocket | None = None
        self._lock = threading.Lock()
        self._closing = False
        self._reported = False
        self._reader: threading.Thread | None = None
        self._on_close: OnClose | None = None

    @property
    def subprotocol(self) -> str | None:
        return self._ws.subprotocol if self._ws is not None else None

    # --- Transport ----------------------------------------------------------------------------

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None:
        """Connect within ``deadline`` (the caller's; capped by ``connect_timeout``), then
        start reading.

        Raises:
            AuthRequired: the handshake got HTTP 401 (after one token refresh, with OAuth).
            ConnectError: unreachable, refused, too slow, redirected elsewhere, or the server
                did not accept ``mcp``.
            ConfigError: ``auth`` holds credentials for another server.
        """
        self._on_close = on_close
        limit = Deadline.of(deadline, self._connect_timeout).earlier(self._connect_timeout)
        # The token is for this server only: bind() refuses a provider tied to another one.
        http_url = _http_url(self.url)
        auth = self._auth
        token = _auth._token(auth, http_url, limit)  # bind(url), then the token
        shown = _auth.presentation(auth, token, "GET", http_url) if auth and token else {}
        try:
            ws = self._handshake(shown, limit)
        except websocket.WebSocketBadStatusException as exc:
            if getattr(exc, "status_code", None) != 401 or auth is None:
                raise self._handshake_error(exc) from exc
            fresh = _auth._refresh(auth, token, None, 401, limit)
            if not fresh or fresh == token:
                raise self._handshake_error(exc) from exc
            try:
                ws = self._handshake(_auth.presentation(auth, fresh, "GET", http_url), limit)
            except websocket.WebSocketBadStatusException as again:
                raise self._handshake_error(again) from again
        ws.frame_buffer = _BoundedFrames(ws, self._max_message_size)
        # The reader answers pings itself; it must never wait behind a blocked write (the
        # frames it would stop reading answer other calls): a pong is skipped then.
        pong = ws.pong
        ws.pong = lambda payload="": _unless_writing(ws, lambda: pong(payload))  # type: ignore[method-assign]
        ws.settimeout(self._ping_interval)
        self._ws = ws
        self._reader = threading.Thread(
            target=self._read,
            args=(ws, on_message),
            daemon=True,
            name=f"mcp-lite-ws-reader[{self.name}]",
        )
        self._reader.start()

    def _handshake(self, auth_headers: Mapping[str, str], limit: Deadline) -> websocket.WebSocket:
        """The host-name lookup, TCP connect, TLS and opening handshakes, all ended at
        ``limit``: the socket is registered with the exchange's ``Slot`` before it connects, so
        a server that never answers or drips its answer cannot stretch them."""
        headers = {**self._headers, **auth_headers}
        # UTF-8 is checked where the message is decoded: an answer with invalid UTF-8 then
        # fails its own call (by its id), not the whole connection.
        ws = websocket.WebSocket(enable_multithread=True, skip_utf8_validation=True)
        slot = Slot(limit)
        try:
            sock = self._open_socket(ws, slot, limit)
            ws.connect(  # type: ignore[no-untyped-call]
                self.url,
                timeout=max(limit.remaining(), 0.001),
                subprotocols=["mcp"],
                header=[f"{k}: {val}" for k, val in headers.items()],
                redirect_limit=0,
                **({} if sock is None else {"socket": sock}),
            )
        except websocket.WebSocketBadStatusException:
            raise
        except _NETWORK_ERRORS as exc:
            _quiet(ws.shutdown)
            if slot.aborted or limit.expired() or isinstance(exc, LookupTimeout):
                raise self._too_slow(limit) from exc
            raise ConnectError(
                f"connecting: cannot connect to MCP server {self.name!r} at "
                f"{redact_url(self.url)}: {redact_text(network_cause(exc))}"
            ) from exc
        finally:
            slot.release()  # from here a late abort cannot hit the live connection
        if slot.aborted:  # the deadline came just as the handshake completed
            _quiet(ws.shutdown)
            raise self._too_slow(limit)
        return ws

    def _open_socket(
        self, ws: websocket.WebSocket, slot: Slot, limit: Deadline
    ) -> socket.socket | None:
        """The TCP (and TLS) connection for the handshake, the lookup bounded by ``limit``;
        None when a proxy applies (websocket-client connects through it itself)."""
        host, port, _resource, secure = parse_url(self.url)
        if get_proxy_info(host, secure)[0]:
            return None
        if is_literal(host):
            addresses = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, socket.SOL_TCP)
        else:
            try:
                addresses = lookup(host, port, 0, limit.remaining())
            except TooManyLookups as exc:
                raise ConnectError(f"connecting: {exc}") from exc
        sock = connect_to(
            addresses,
            max(limit.remaining(), 0.001),
            socket_options=[*DEFAULT_SOCKET_OPTION, *ws.sock_opt.sockopt],
            arm=slot.arm,
        )
        if secure:
            try:
                sock = ssl_socket(sock, ws.sock_opt.sslopt, host)
            except BaseException:
                sock.close()
                raise
            slot.attach(sock)
        return sock

    def _too_slow(self, limit: Deadline) -> ConnectError:
        return ConnectError(
            f"connecting: the WebSocket handshake with MCP server {self.name!r} at "
            f"{redact_url(self.url)} did not complete within the {limit.describe()}"
        )

    def _handshake_error(self, exc: Exception) -> McpError:
        status = getattr(exc, "status_code", None)
        message = (
            f"WebSocket handshake with MCP server {self.name!r} ({redact_url(self.url)}) failed: "
            f"{redact_text(str(exc))}"
        )
        if status == 401:
            return AuthRequired(message)
        return ConnectError(message)

    def send(self, message: Outgoing) -> None:
        """Write one text frame, bounded by ``message.deadline`` (see the module docstring)."""
        ws = self._ws
        if ws is None or self._closing or self._reported:
            raise ConnectionClosed(f"the WebSocket to MCP server {self.name!r} is closed")
        text = message.data.rstrip(b"\n").decode("utf-8")
        data = websocket.ABNF.create_frame(text, websocket.ABNF.OPCODE_TEXT).format()
        limit = message.deadline if message.deadline is not None else Deadline.after(30.0)
        deadline = limit.at
        # websocket-client's own write lock: its pings, pongs and close frames take it too,
        # so frames never interleave.
        if not ws.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise self._write_timed_out(message, "another write is still blocked")
        try:
            if self._closing or self._reported:
                raise ConnectionClosed(f"the WebSocket to MCP server {self.name!r} is closed")
            if message.abandoned():
                raise RequestTimeout(
                    f"not sent to MCP server {self.name!r}: its caller already gave up", None
                )
            self._write_all(ws, data, deadline, message)
        except McpError:  # ours (RequestTimeout is an OSError too): as is
            raise
        except _NETWORK_ERRORS as exc:
            error = ConnectionClosed(
                f"the WebSocket to MCP server {self.name!r} broke: {network_cause(exc)}"
            )
            self._report(error)
            raise error from exc
        finally:
            ws.lock.release()

    def _write_all(
        self, ws: websocket.WebSocket, data: bytes, deadline: float, message: Outgoing
    ) -> None:
        sock = ws.sock
        if sock is None:
            raise ConnectionClosed(f"the WebSocket to MCP server {self.name!r} is closed")
        tls = isinstance(sock, ssl.SSLSocket)
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if self._closing:
                raise ConnectionClosed(f"the WebSocket to {self.name!r} is closing")
            if remaining <= 0:
                if len(view) < len(data):
                    self._tear(len(data) - len(view), len(data))
                raise self._write_timed_out(message, "the server is not reading")
            # Sleep until the socket takes more: no busy loop; capped so close() is noticed.
            _, writable, _ = select.select([], [sock], [], min(remaining, _WRITE_POLL))
            if not writable:
                continue
            try:
                if tls:  # TLS takes no MSG_DONTWAIT: a small piece once the socket has room
                    sent = sock.send(view[:16384])
                else:
                    sent = sock.send(view[:_WRITE_PIECE], socket.MSG_DONTWAIT)
            except (BlockingIOError, ssl.SSLWantWriteError):
                continue
            view = view[sent:]

    def _write_timed_out(self, message: Outgoing, why: str) -> RequestTimeout:
        method = message.payload.get("method") or "a response"
        return RequestTimeout(
            f"could not send {method} to MCP server {self.name!r} before its deadline: {why}",
            None,
        )

    def _tear(self, written: int, total: int) -> None:
        error = ConnectionClosed(
            f"MCP server {self.name!r} stopped reading the WebSocket in the middle of a frame "
            f"({written} of {total} bytes written before the deadline); the connection was "
            "closed"
        )
        log.warning("%s", error)
        self._report(error)
        ws = self._ws
        if ws is not None:
            _quiet(ws.shutdown)

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        ws = self._ws
        if ws is None:
            return
        if os.getpid() != self._owner_pid:
            return  # a forked child never writes to its parent's socket
        # Bounded whatever the server or the path does: the close frame goes out only if
        # the socket takes it at once; the server's answering close frame (read by the
        # reader) is waited for a moment; then the socket is shut down, which wakes a
        # reader still blocked in its receive, and closed.
        sock = ws.sock
        if sock is not None and ws.lock.acquire(timeout=_CLOSE_STEP):
            try:
                _send_close_frame(sock)
            finally:
                ws.lock.release()
        reader = self._reader
        alive = reader is not None and reader is not threading.current_thread()
        if alive and reader is not None:
            reader.join(_CLOSE_STEP)
        if sock is not None:
            _quiet(lambda: sock.shutdown(socket.SHUT_RDWR))
        if alive and reader is not None:
            reader.join(_CLOSE_STEP)
        _quiet(ws.shutdown)

    # --- internals ----------------------------------------------------------------------------

    def _read(self, ws: websocket.WebSocket, on_message: OnMessage) -> None:
        reason = "the server closed the WebSocket"
        waiting_pong = False
        try:
            while True:
                try:
                    opcode, frame = ws.recv_data_frame(control_frame=True)
                except _Oversized as exc:
                    what = "control frame" if exc.control else "message"
                    reason = (
                        f"it sent a WebSocket {what} of {exc.size} bytes, over the limit of "
                        f"{exc.limit} (max_message_size); refused from its header, so the "
                        "connection was closed"
                    )
                    break
                except websocket.WebSocketTimeoutException:
                    if waiting_pong:
                        reason = (
                            f"no answer to a ping within {self._ping_interval:g} s; "
                            "the connection is dead"
                        )
                        break
                    waiting_pong = True
                    _unless_writing(ws, ws.ping)
                    continue
                waiting_pong = False
                if opcode == websocket.ABNF.OPCODE_CLOSE:
                    code = _close_code(frame.data)
                    reason = f"the server closed the WebSocket (code {code})"
                    break
                if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                    data = bytes(frame.data)  # within the limit: checked from the headers
                    if data:
                        on_message(data)
        except _NETWORK_ERRORS as exc:
            reason = f"the WebSocket broke: {exc}"
        except Exception as exc:  # a bug in routing: report it, never die silently
            log.exception("WebSocket reader for %r crashed", self.name)
            reason = f"internal error reading the WebSocket: {exc!r}"
        if not self._closing:
            self._report(ConnectionClosed(f"MCP server {self.name!r}: {reason}"))
            _quiet(ws.shutdown)

    def _report(self, error: McpError) -> None:
        with self._lock:
            if self._reported or self._closing:
                return
            self._reported = True
        if self._on_close is not None:
            self._on_close(error)


def _send_close_frame(sock: socket.socket) -> None:
    """A normal-closure frame, written only if the socket has room for it now."""
    frame = websocket.ABNF.create_frame(
        websocket.STATUS_NORMAL.to_bytes(2, "big"), websocket.ABNF.OPCODE_CLOSE
    ).format()
    try:
        _, writable, _ = select.select([], [sock], [], 0)
        if writable:
            sock.send(frame)
    except (OSError, ValueError) as exc:
        log.debug("no close frame sent: %s", exc)


def _close_code(data: bytes) -> int | None:
    return int.from_bytes(data[:2], "big") if len(data) >= 2 else None


def _quiet(action: Callable[[], object]) -> None:
    try:
        action()
    except _NETWORK_ERRORS as exc:
        log.debug("ignored while closing a WebSocket: %s", exc)


def _http_url(url: str) -> str:
    """The http(s) URL of the handshake: what an OAuth token for this server is bound to."""
    scheme, sep, rest = url.partition("://")
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme) + sep + rest


def _unless_writing(ws: websocket.WebSocket, action: Callable[[], object]) -> None:
    """Run a control-frame send from the reader, unless a write holds the socket (then the
    frame is skipped: a server that stopped reading would block the reader behind it)."""
    if not ws.lock.locked():
        action()
