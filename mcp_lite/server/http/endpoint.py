"""The state behind one Streamable HTTP endpoint (``App``): its sessions (handshake era),
the per-request connections (stateless era) and their bounds, and what the HTTP layer needs
of a connection and of its ``Server`` (``_Conn``, ``_Inline``, ``_Opener``)."""

from __future__ import annotations

import functools
import secrets
import socket
import threading
import time
from typing import Any, Protocol

from ...protocol import versions as pv
from .relay import Relay
from .slots import Slots
from .streams import Router as _Router

__all__ = ["MAX_BODY", "MAX_CONNECTIONS", "MAX_SESSIONS", "SESSION_IDLE_S", "App"]

MAX_BODY = 4 * 1024 * 1024
MAX_SESSIONS = 1024
MAX_CONNECTIONS = 256
SESSION_IDLE_S = 3600.0


class _Conn(Protocol):
    """What the HTTP layer needs of a connection (a ``ServerConnection``, or the gateway's
    forwarding one)."""

    protocol_version: str | None

    def receive(self, message: Any) -> None: ...

    def close(self, timeout: float = 1.0) -> None: ...


class _Inline(Protocol):
    """A connection that can answer some requests on the HTTP handler's thread (the
    gateway's forwarder): ``can_inline`` says which (nothing goes to their stream but what
    ``relay`` is given, e.g. progress, then the response), ``answer`` gives the response, or
    None when ``cancel`` stopped it (set when the HTTP client hangs up or stops reading)."""

    def can_inline(self, msg: dict[str, Any]) -> bool: ...

    def answer(
        self, msg: dict[str, Any], key: str, cancel: threading.Event, relay: Relay
    ) -> dict[str, Any] | None: ...


class _Opener(Protocol):
    """What the HTTP layer needs of its ``Server``."""

    @property
    def versions(self) -> tuple[str, ...]: ...

    def open_connection(self, send: Any, *, routed: bool = False) -> _Conn: ...

    def _tool_schema(self, name: str) -> Any: ...


class _Session:
    def __init__(self, server: _Opener) -> None:
        self.id = secrets.token_urlsafe(24)
        self.router = _Router()
        self.conn = server.open_connection(self.router.send, routed=True)
        self.last_used = time.monotonic()

    def close(self) -> None:
        self.router.end_all()
        self.conn.close(timeout=1.0)


def _rpc_error(code: int, message: str, rid: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


class App:
    """The state behind one HTTP endpoint."""

    def __init__(self, server: _Opener, stateless: bool, max_body: int) -> None:
        self.server = server
        self.stateless = stateless
        self.max_body = max_body
        self.sessions: dict[str, _Session] = {}
        self.lock = threading.Lock()
        self.slots = Slots(MAX_CONNECTIONS)  # (the HttpServer's own app's are the ones used)
        self.closed = False
        self.bound_loopback = True
        self._open: set[_Conn] = set()  # per-POST connections, for close()
        self.requests: set[socket.socket] = set()  # open client connections, for close()

    def is_modern(self, msg: Any, header: str | None, versions: tuple[str, ...]) -> bool:
        """Mirrors ``ServerConnection._is_modern`` (plus the version header); ``versions``:
        the server's, as read once for this request."""
        if not _any_stateless(versions):
            return False
        params = msg.get("params") if isinstance(msg, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        v = meta.get(pv.META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        if v is None:
            return header is not None and pv.is_stateless(header)
        return not (isinstance(v, str) and v in pv.HANDSHAKE_VERSIONS and v in versions)

    def new_session(self) -> _Session | None:
        now = time.monotonic()
        with self.lock:
            if self.closed:
                return None
            stale = [s for s in self.sessions.values() if now - s.last_used > SESSION_IDLE_S]
            for s in stale:
                del self.sessions[s.id]
            if len(self.sessions) >= MAX_SESSIONS:
                session = None
            else:
                session = _Session(self.server)
                self.sessions[session.id] = session
        for s in stale:
            s.close()
        return session

    def one_shot(self, router: _Router) -> _Conn:
        conn = self.server.open_connection(router.send, routed=True)
        with self.lock:
            self._open.add(conn)
        return conn

    def done(self, conn: _Conn) -> None:
        with self.lock:
            self._open.discard(conn)
        conn.close(timeout=1.0)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            sessions = list(self.sessions.values())
            self.sessions.clear()
            conns = list(self._open)
        for s in sessions:
            s.close()
        for c in conns:
            c.close(timeout=1.0)


@functools.lru_cache(maxsize=16)
def _any_stateless(versions: tuple[str, ...]) -> bool:
    """True when ``versions`` (a server's: a few constant tuples) has a stateless one."""
    return any(pv.is_stateless(v) for v in versions)
