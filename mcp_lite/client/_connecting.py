"""A ``Client``'s connection: made on first use and again after the server died or a fork
(the child never touches the parent's process or pipes), on the caller's deadline; and the
``weakref.finalize`` backstop that closes a forgotten client."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from .. import _fork
from .._connection import Connection
from .._connection import observer as _observer
from .._deadline import Deadline
from ..errors import ConnectError, ConnectionClosed, ServerExitedAtStart, SessionExpired
from ..protocol import caching as _cache
from ..protocol.session import SessionInfo
from ..transports.base import Transport
from ._listen_acks import ACKNOWLEDGED, ListenAcks
from ._negotiate import Negotiating

__all__ = ["Connecting", "close_holder", "live_clients", "weak_observer"]

log = logging.getLogger("mcp_lite.client")


live_clients: weakref.WeakSet[Connecting] = weakref.WeakSet()


class Connecting(Negotiating):
    """The live connection of a ``Client`` (a base class of it)."""

    target: Any
    timeout: float
    auto_reconnect: bool
    _lock: threading.RLock
    _closed: bool
    _closed_why: str | None
    _conn: Connection | None
    _conn_holder: list[Connection | None]
    _connects: int
    _last_session: SessionInfo | None
    _results: _cache.ResultCache
    _results_lock: threading.Lock
    _subscriptions: set[str]
    _listen_future: Future[dict[str, Any]] | None
    _listen_acks: ListenAcks
    _transport_options: dict[str, Any]
    _event_hooks: Any
    _max_workers: int

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called (no I/O): the client is done, and nothing
        reconnects it. A client whose server died is not closed (see ``connected``)."""
        return self._closed

    @property
    def connected(self) -> bool:
        """True while a live connection exists (no I/O; a dead server shows as False)."""
        conn = self._conn
        return conn is not None and conn.alive

    @property
    def transport(self) -> Transport | None:
        """The current transport (``transport.pid`` for stdio), or None when not connected."""
        conn = self._conn
        return conn.transport if conn is not None else None

    @property
    def session(self) -> SessionInfo:
        """What the handshake (or discovery) said. After ``close()`` the last known values
        stay readable, so ``server_info``, ``protocol_version``... still answer."""
        if self._closed and self._last_session is not None:
            return self._last_session
        info: SessionInfo = self._connection().info  # type: ignore[assignment]
        self._last_session = info
        return info

    def _connection(self, deadline: Deadline | None = None) -> Connection:
        """The live connection; a new one when there is none (or it died), on ``deadline``
        (the caller's; default: one of the client's ``timeout``)."""
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        return self._reconnect(deadline if deadline is not None else Deadline.after(self.timeout))

    def _reconnect(self, deadline: Deadline) -> Connection:
        # Another thread may be connecting: wait for it only as long as this caller may.
        wait = deadline.remaining()
        if not self._lock.acquire(timeout=-1 if wait > threading.TIMEOUT_MAX else wait):
            raise deadline.error(
                "connecting", f"another thread's connect to MCP server {self.name!r} did not end"
            )
        try:
            if self._closed:
                why = self._closed_why
                raise ConnectionClosed(
                    f"client for {self.name!r} is closed" + (f": {why}" if why else "")
                )
            conn = self._conn
            if conn is not None and conn.alive:
                return conn
            old = conn
            if old is not None:
                if not self.auto_reconnect:
                    raise old.closed_error or ConnectionClosed("connection closed")
                old.close()
                log.info("reconnecting to %r", self.name)
            conn = self._opened(deadline)
            self._last_session = conn.info
            if old is not None and isinstance(conn.events, _observer.Observer):
                conn.events.reconnected(old.closed_error)
            with self._results_lock:
                self._results.clear()  # a new connection may reach a changed server
            self._listen_acks.forget()
            self._conn = conn
            self._conn_holder[0] = conn
            self._connects += 1
        finally:
            self._lock.release()
        if self._subscriptions:
            self._restore_subscriptions(deadline)
        return conn

    def _opened(self, deadline: Deadline) -> Connection:
        """A new connection; a server that goes away while it connects is a
        ``ServerExitedAtStart`` (a ``ConnectError`` and still a ``ConnectionClosed``)."""
        try:
            return self._open_connection(deadline)
        except ConnectionClosed as exc:
            if isinstance(exc, (ConnectError, SessionExpired)):
                raise
            raise ServerExitedAtStart(
                f"connecting: {exc.args[0]}",  # the phase, as a Deadline names it
                exc.exit_code,
                exc.stderr_tail,
            ) from exc

    def _make_transport(self, deadline: Deadline | None = None) -> Transport:
        from ..transports import make_transport

        # The deadline: a config's headersHelper runs within the connect's.
        return make_transport(
            self.target, name=self.name, deadline=deadline, **self._transport_options
        )

    def _open_connection(self, deadline: Deadline) -> Connection:
        events = _observer.observer(self.name, self._event_hooks, self.target)
        if events is not None:
            with events.connecting(self.target):
                return self._open(events, deadline)
        return self._open(None, deadline)

    def _open(self, events: _observer.Observer | None, deadline: Deadline) -> Connection:
        conn = Connection(
            self._make_transport(deadline),
            self._handlers,
            name=self.name,
            max_workers=self._max_workers,
        )
        conn.events = events
        conn.start(deadline)
        try:
            conn.info = self._negotiate(conn, deadline)
        except BaseException:
            conn.close("the handshake failed")
            raise
        log.debug("connected to %r: protocol %s", self.name, conn.info.protocol_version)
        return conn

    def _restore_subscriptions(self, deadline: Deadline) -> None:
        """Subscribe again on a new connection (``Calls``)."""
        raise NotImplementedError

    def _observe(self, method: str, params: dict[str, Any]) -> None:
        """Runs on the reader thread for every notification: keep the result cache true."""
        if method.endswith("list_changed") or method == "notifications/resources/updated":
            with self._results_lock:  # never the client lock: a handshake may hold it
                self._results.invalidate(method, params)
        elif method == ACKNOWLEDGED:
            self._listen_acks.record(params)

    def _after_fork_in_child(self) -> None:
        self._lock = threading.RLock()
        self._results_lock = threading.Lock()
        conn, self._conn = self._conn, None
        self._conn_holder[0] = None
        self._listen_future = None
        self._listen_acks = ListenAcks()
        if conn is not None:
            conn.abandon()


def weak_observer(client: Connecting) -> Callable[[str, dict[str, Any]], None]:
    """``client._observe`` without a strong reference: the connection (alive in its reader
    thread) must not keep a forgotten client from being collected and closed."""
    ref = weakref.ref(client)

    def observe(method: str, params: dict[str, Any]) -> None:
        target = ref()
        if target is not None:
            target._observe(method, params)

    return observe


def close_holder(holder: list[Connection | None]) -> None:
    conn = holder[0]
    if conn is not None:
        conn.close("the client was garbage-collected or the interpreter is exiting")


def _after_fork() -> None:
    for client in list(live_clients):
        client._after_fork_in_child()


_fork.on_child(_after_fork)
