"""``ConnectionBase``: one connection's state (its transport, pending table, workers and
backlogs), its lifecycle (close, loss, after fork) and its one write path; ``sending`` and
``routing`` build on it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._accel import encode_message
from .._deadline import Deadline
from .._workers import Workers
from ..errors import ConnectionClosed, McpError, RpcError
from ..protocol import jsonrpc
from ..protocol import session as proto
from ..protocol import versions as pv
from ..protocol.session import SessionInfo
from ..transports.base import Outgoing, Transport
from .backlog import Backlog
from .call import Call, fail, guarded, still_asking
from .control_sender import ControlSender
from .handlers import Handlers

__all__ = ["ConnectionBase", "ConnectionObserver", "Incoming"]

log = logging.getLogger("mcp_lite.client")

_MAX_INPUT_ROUNDS = 16
# Requests that stay open while nothing else happens (a notification stream): no use.
_STREAMS = frozenset({"subscriptions/listen"})
# Past these, a flooding server is shed: notifications are dropped (counted), requests are
# refused with a JSON-RPC error. See README, "Guarantees, precisely".
MAX_QUEUED_NOTIFICATIONS = 1024
MAX_QUEUED_SERVER_REQUESTS = 64
OVERLOADED = -32000  # JSON-RPC "server error" range: the client is overloaded
# How long a cancellation or an overload refusal may wait to be written, and how many may
# wait (a refusal is ~200 bytes; past this they are dropped and counted).
_CONTROL_WRITE_TIMEOUT = 2.0
_MAX_QUEUED_CONTROL = 4096
LOAD_STATS_KEYS = (
    "notifications_queued",
    "notifications_dropped",
    "server_requests_queued",
    "server_requests_refused",
    "control_dropped",
)
# How often a blocking call with a cancel_event looks at it (a threading.Event cannot wake
# another waiter); the caller is freed at most this late after set(). A call that leads
# (stdio) waits in its reads at most this long for the same reason.
_CANCEL_POLL = 0.02
# How long past its deadline a call that is neither pending nor completed may stay so.
_LOST_GRACE = 1.0


class ConnectionObserver(Protocol):
    """What a connection tells its observer (``mcp_lite._connection.observer.Observer``: event hooks and
    OpenTelemetry), declared here so that the connection imports neither."""

    def sent(self, conn: ConnectionBase, call: Call, params: dict[str, Any] | None) -> Any: ...
    def notification(self, method: str, params: dict[str, Any]) -> None: ...
    def lost(self, conn: ConnectionBase, error: BaseException) -> None: ...
    def ended(self, conn: ConnectionBase, error: BaseException | None) -> None: ...


@dataclass(eq=False)
class Incoming:
    """A server-to-client request being answered; ``cancelled`` set by the server."""

    request: jsonrpc.Request
    cancelled: threading.Event = field(default_factory=threading.Event)


class ConnectionBase:
    """A connection's state and lifecycle; ``info`` is set by the Client once the handshake
    is done. See ``mcp_lite._connection.Connection``."""

    def __init__(
        self,
        transport: Transport,
        handlers: Handlers,
        *,
        name: str,
        max_workers: int = 4,
        max_queued_notifications: int = MAX_QUEUED_NOTIFICATIONS,
        max_queued_server_requests: int = MAX_QUEUED_SERVER_REQUESTS,
    ) -> None:
        self.transport = transport
        self.handlers = handlers
        self.name = name
        self.info: SessionInfo | None = None
        self.closed_error: McpError | None = None
        self.events: ConnectionObserver | None = None  # hooks / OpenTelemetry, set by the Client
        self._lock = threading.Lock()
        self._pending: jsonrpc.PendingTable[Call] = jsonrpc.PendingTable()
        self._streams = 0  # _STREAMS requests sent (see requests_sent)
        self._incoming: dict[jsonrpc.RequestId, Incoming] = {}
        # Futures between two input_required rounds (in no pending entry): the timer fails
        # them at their deadline too (the entry of their last request stays scheduled).
        self._rounds: set[Call] = set()
        # Every call whose input round is being answered (blocking ones too), for
        # ``in_flight``: a call waiting for its user between rounds still holds its server.
        self._asking: set[Call] = set()
        self._writing = threading.local()  # .call: the Call this thread is writing
        self._stopping = False
        # Leader/follower (stdio, compiled kernels): the one blocking call reading the pipe
        # on its own thread, and whether it must hand the pipe back to the reader thread.
        # A call with ``on_progress`` never leads: its answer is resolved on the notifier
        # thread (behind its progress callbacks), which cannot wake a leader in poll.
        self._can_lead = transport.can_lead
        self._leader: Call | None = None
        self._routing: tuple[Call, Any, RpcError | None, int] | None = None
        # Threads start on demand and end when idle: a settled connection keeps none.
        self._workers = Workers(f"mcp-lite-worker[{name}]", max_workers)
        self._notifier = Workers(f"mcp-lite-notify[{name}]", 1)
        self.notification_backlog = Backlog("notifications", max_queued_notifications, name)
        self.request_backlog = Backlog("server requests", max_queued_server_requests, name)
        # Cancellations and refusals are written from here: the timer and the reader
        # thread never block in a write.
        self._control = ControlSender(name, limit=_MAX_QUEUED_CONTROL)

    @property
    def requests_sent(self) -> int:
        """Requests sent so far, notification streams (``_STREAMS``) left out: it moves
        with each use. No lock, no I/O."""
        return self._pending.issued - self._streams

    def in_flight(self) -> int:
        """Requests waiting for their answer, notification streams left out; no lock and
        no I/O (a hint: ``Client._in_flight``)."""
        pending = self._pending
        asking = still_asking(self._asking) if self._asking else 0
        if not self._streams:
            return len(pending) + asking
        # (list(): one step under the GIL, as other threads change the table)
        return asking + sum(call.method not in _STREAMS for call in list(pending.values()))

    def load_stats(self) -> dict[str, int]:
        """Backlogs and what was shed; see ``Client.load_stats``."""
        notes, asks = self.notification_backlog, self.request_backlog
        values = (notes.queued, notes.dropped, asks.queued, asks.dropped, self._control.dropped)
        return dict(zip(LOAD_STATS_KEYS, values, strict=True))

    @property
    def alive(self) -> bool:
        if self.closed_error is not None:
            return False
        # A death the reader has not reported yet (a stdio server already reaped): close
        # now with the transport's reason, so the next call reconnects instead of failing.
        error = self.transport.dead()
        if error is not None:
            self._on_transport_closed(error)
            return False
        return True

    def close(self, reason: str = "the client closed the connection") -> None:
        """Close the transport and fail what is still pending; idempotent, bounded."""
        if self._shutdown(ConnectionClosed(reason)) and self.events is not None:
            self.events.ended(self, None)
        self.transport.close()  # also after the transport died: it still holds pipes/sockets
        self._control.stop(0.5)

    def abandon(self) -> None:
        """After fork: forget this connection without touching the parent's process or pipes."""
        self.closed_error = ConnectionClosed("connection inherited across fork")
        self._stopping = True
        self.transport.close()  # transports only drop their fds when not in the owner pid

    def _shutdown(self, error: McpError) -> bool:
        with self._lock:
            if self._stopping:
                return False
            self._stopping = True
            self.closed_error = self.closed_error or error
            calls = self._pending.drain()
            calls.extend(self._rounds)  # between input rounds: they fail now too
            self._rounds.clear()
        failure = self.closed_error
        writing = getattr(self._writing, "call", None)
        for call in calls:
            if call is not writing:  # the writer fails its own call (see _send_call)
                fail(call.future, failure)
        self._workers.shutdown()
        self._notifier.shutdown()
        self._control.stop()
        return True

    def lost(self, error: McpError) -> None:
        """The Client found the transport dead before it said so itself (a write failed)."""
        self._on_transport_closed(error)

    def _on_transport_closed(self, error: McpError) -> None:
        log.info("connection to %r closed: %s", self.name, error)
        with self._lock:
            self.closed_error = self.closed_error or error
        if self._shutdown(error) and self.events is not None:
            self.events.lost(self, error)

    def notify(
        self, method: str, params: dict[str, Any] | None = None, deadline: Deadline | None = None
    ) -> None:
        """Send a notification; ``deadline`` bounds the write (None: the transport's own)."""
        self._write(jsonrpc.make_notification(method, params), deadline)

    def _stateless_params(
        self, info: SessionInfo, params: dict[str, Any] | None, relayed: bool = False
    ) -> dict[str, Any] | None:
        caps = self.handlers.capabilities
        if relayed:  # the capabilities of the client it is relayed for, when it says them
            meta = (params or {}).get("_meta")
            theirs = meta.get(pv.META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
            caps = theirs if isinstance(theirs, dict) else caps
        return proto.add_stateless_meta(
            params,
            version=info.protocol_version,
            capabilities=caps,
            client_info=self.handlers.client_info,
            log_level=self.handlers.log_level,
        )

    def _write(
        self,
        message: dict[str, Any],
        deadline: Deadline | None = None,
        given_up: Callable[[], bool] | None = None,
        inline: bool = False,
    ) -> bool:
        """Hand one message to the transport; ``deadline`` bounds the write, and nothing is
        written once ``given_up()`` says its caller stopped waiting (checked here and again
        by the transport when the write lock is won). False: skipped for that reason.
        ``inline``: see ``Outgoing``."""
        if self.closed_error is not None:
            raise self.closed_error
        if given_up is not None and given_up():
            return False
        self.transport.send(Outgoing(message, encode_message(message), deadline, given_up, inline))
        return True

    def _run(self, pool: Workers, fn: Callable[..., Any], *args: Any) -> bool:
        try:
            pool.submit(guarded, fn, *args)
            return True
        except RuntimeError:  # pool shut down: the connection is closing
            return False
