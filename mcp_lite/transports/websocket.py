"""The WebSocket transport (``type: "ws"`` and ``"ws-ide"``) on ``websocket-client``.

One JSON-RPC message per text frame, subprotocol ``mcp``. A reader thread owns the socket's
receive side; it pings the server after ``ping_interval`` seconds of silence and declares
the connection dead when a second interval passes without any frame (a pong included).
A dropped socket is reported at once (``on_close``), so pending calls fail immediately and
the Client reconnects on the next call. ``close`` performs the close handshake (bounded).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping

import websocket

from ..errors import AuthRequired, ConnectError, ConnectionClosed, McpError, MessageTooLarge
from ._http_common import Auth
from .base import OnClose, OnMessage, Outgoing

__all__ = ["WebSocketTransport"]

log = logging.getLogger("mcp_lite.websocket")

_NETWORK_ERRORS = (websocket.WebSocketException, OSError, ValueError)


class WebSocketTransport:
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

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        """Connect and start reading.

        Raises:
            AuthRequired: the handshake got HTTP 401.
            ConnectError: unreachable, refused, or the server did not accept ``mcp``.
        """
        self._on_close = on_close
        headers = dict(self._headers)
        token = self._auth.token() if self._auth is not None else None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            ws = websocket.create_connection(
                self.url,
                timeout=self._connect_timeout,
                subprotocols=["mcp"],
                header=[f"{k}: {val}" for k, val in headers.items()],
                enable_multithread=True,
            )
        except websocket.WebSocketBadStatusException as exc:
            status = getattr(exc, "status_code", None)
            message = (
                f"WebSocket handshake with MCP server {self.name!r} ({self.url}) failed: {exc}"
            )
            if status == 401:
                raise AuthRequired(message) from exc
            raise ConnectError(message) from exc
        except _NETWORK_ERRORS as exc:
            raise ConnectError(
                f"cannot connect to MCP server {self.name!r} at {self.url}: {exc}"
            ) from exc
        ws.settimeout(self._ping_interval)
        self._ws = ws
        self._reader = threading.Thread(
            target=self._read,
            args=(ws, on_message),
            daemon=True,
            name=f"mcp-lite-ws-reader[{self.name}]",
        )
        self._reader.start()

    def send(self, message: Outgoing) -> None:
        ws = self._ws
        if ws is None or self._closing or self._reported:
            raise ConnectionClosed(f"the WebSocket to MCP server {self.name!r} is closed")
        text = message.data.rstrip(b"\n").decode("utf-8")
        try:
            ws.send(text)  # websocket-client holds its own write lock
        except _NETWORK_ERRORS as exc:
            error = ConnectionClosed(f"the WebSocket to MCP server {self.name!r} broke: {exc}")
            self._report(error)
            raise error from exc

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
        _quiet(lambda: ws.close(status=websocket.STATUS_NORMAL, timeout=1.0))
        _quiet(ws.shutdown)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(1.0)

    # --- internals ----------------------------------------------------------------------------

    def _read(self, ws: websocket.WebSocket, on_message: OnMessage) -> None:
        reason = "the server closed the WebSocket"
        waiting_pong = False
        try:
            while True:
                try:
                    opcode, frame = ws.recv_data_frame(control_frame=True)
                except websocket.WebSocketTimeoutException:
                    if waiting_pong:
                        reason = (
                            f"no answer to a ping within {self._ping_interval:g} s; "
                            "the connection is dead"
                        )
                        break
                    waiting_pong = True
                    ws.ping()
                    continue
                waiting_pong = False
                if opcode == websocket.ABNF.OPCODE_CLOSE:
                    code = _close_code(frame.data)
                    reason = f"the server closed the WebSocket (code {code})"
                    break
                if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                    data = bytes(frame.data)
                    if len(data) > self._max_message_size:
                        on_message(MessageTooLarge("too large", self._max_message_size, data[:256]))
                    elif data:
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


def _close_code(data: bytes) -> int | None:
    return int.from_bytes(data[:2], "big") if len(data) >= 2 else None


def _quiet(action: Callable[[], object]) -> None:
    try:
        action()
    except _NETWORK_ERRORS as exc:
        log.debug("ignored while closing a WebSocket: %s", exc)
