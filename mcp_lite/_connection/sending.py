"""One live connection: a transport, its pending requests, their deadlines, and the workers
that answer the server.

Threads (all daemons, all named, all joined with a timeout on close):

- the transport's reader calls ``_on_frame``: it only routes — resolves futures, queues
  notifications, hands server requests to the pool — so user code never blocks it;
- the process-wide timer (``_timer``) fails a ``submit()`` future at its deadline with
  ``RequestTimeout``; the control sender then tells the server (``notifications/cancelled``);
- a blocking ``call()`` needs neither a Future nor the deadline thread: it waits on a lock
  of its own (one futex hand-off, no condition variable) and enforces its own deadline, so
  it can also withdraw itself at once (``cancel_event``, Ctrl-C) and tell the server;
- a bounded worker pool runs server-to-client requests (sampling, elicitation, roots) and
  2026-07-28 ``input_required`` rounds; one serial worker delivers notifications in order;
  their threads, and the control sender's, end when idle (a settled connection has none).

When the transport dies every pending future fails at once with the transport's error.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .. import _timer
from .._accel import Gate, ResponseIdScanner, decode_message, encode_message
from .._backlog import Backlog
from .._control_sender import ControlSender
from .._deadline import Deadline
from .._task_receiver import TaskReceiver
from .._workers import Workers
from ..errors import (
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    McpError,
    MessageTooLarge,
    MethodNotFound,
    ParseError,
    RemoteProtocolError,
    RequestCancelled,
    RequestTimeout,
    RpcError,
)
from ..protocol import jsonrpc
from ..protocol import session as proto
from ..protocol import versions as pv
from ..protocol.session import SessionInfo
from ..protocol.skills import SKILLS_EXTENSION
from ..protocol.tasks import RELATED_TASK, TASKS_EXTENSION
from ..transports.base import Outgoing, SendFailed, Transport

if TYPE_CHECKING:
    from ..protocol.types import Params, Progress

__all__ = ["LOAD_STATS_KEYS", "Connection", "Handlers"]

log = logging.getLogger("mcp_lite.client")

_MAX_INPUT_ROUNDS = 16
_TASKABLE = frozenset({"sampling/createMessage", "elicitation/create"})
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
    """What a connection tells its observer (``mcp_lite._observer.Observer``: event hooks and
    OpenTelemetry), declared here so that the connection imports neither."""

    def sent(self, conn: Connection, call: _Call, params: dict[str, Any] | None) -> Any: ...
    def notification(self, method: str, params: dict[str, Any]) -> None: ...
    def lost(self, conn: Connection, error: BaseException) -> None: ...
    def ended(self, conn: Connection, error: BaseException | None) -> None: ...


@dataclass
class Handlers:
    """What the client answers and declares; shared by every connection of one Client."""

    client_info: dict[str, Any]
    sampling: Callable[[Params], Any] | None = None
    elicitation: Callable[[Params], Any] | None = None
    roots: list[dict[str, Any]] | None = None
    roots_handler: Callable[[], Any] | None = None
    log_handler: Callable[[Params], Any] | None = None
    notification_handler: Callable[[str, Params], Any] | None = None
    log_level: str | None = None  # 2026-07-28: sent in _meta on every request
    # The Client's own look at every notification (cache invalidation), before delivery.
    observer: Callable[[str, dict[str, Any]], None] | None = None
    # 2025-11-25: runs the server's task-augmented sampling/elicitation (connect(task_receiver=))
    task_receiver: TaskReceiver | None = None
    # connect(extensions=): {id: settings}, checked, declared as given over our own
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def capabilities(self) -> dict[str, Any]:
        return proto.client_capabilities(
            sampling=self.sampling is not None,
            elicitation=self.elicitation is not None,
            roots=self.roots is not None or self.roots_handler is not None,
            task_requests=TaskReceiver.CAPABILITY if self.task_receiver is not None else None,
            extensions={**_OWN_EXTENSIONS, **self.extensions},
        )


# What mcp_lite itself supports: call_tool follows a task result by itself, and the skills
# calls are there (servers that serve skills only to a client declaring them exist).
_OWN_EXTENSIONS: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}, SKILLS_EXTENSION: {}}


@dataclass(eq=False, slots=True)
class _Call:
    """One request the caller waits for (across ``input_required`` rounds and their ids)."""

    future: Future[dict[str, Any]] | _Waiter
    method: str
    params: dict[str, Any] | None
    timeout: float  # the caller's timeout: progress moves ``deadline`` this far ahead
    deadline: float  # when it expires now (``time.monotonic()``; progress moves it)
    hard: Deadline  # the latest it may wait, progress or not: what the transport sees
    on_progress: Callable[[Progress], Any] | None = None
    reset_on_progress: bool = False
    cancel_on_timeout: bool = True
    total: float = 0.0
    inline: bool = False  # the caller blocks on the future: HTTP may POST on its thread
    request_id: jsonrpc.RequestId = 0
    rounds: int = 0
    sent: bool = False  # this round's request was handed to the transport
    expired: bool = False  # its deadline passed (set under the connection's lock)
    trace: Any = None  # the event observer's state for this call (mcp_lite.events)
    cancelled: bool = False  # withdrawn by the caller: never (re-)sent after this
    in_round: bool = False  # an input_required round is being answered for it
    timer: _timer.Handle | None = None  # a future's deadline on the process-wide timer
    # A relayed request (the gateway's): an input_required result is its answer, for the
    # caller to pass on, and the client capabilities in its own _meta are the ones sent.
    relayed: bool = False

    def current(self) -> Deadline:
        """Its deadline as it stands (progress may have moved it), as one ``Deadline``."""
        hard = self.hard
        return hard if self.deadline == hard.at else Deadline(self.deadline, self.timeout)


class _Waiter:
    """What a blocking call waits on: a lock taken at birth and released once on completion.

    Quacks like the part of ``Future`` that the routing code and the event observer use
    (``set_result``, ``set_exception``, ``done``, ``add_done_callback``, ``result``...), so a
    call is completed the same way whichever it has. Completion is claimed under one
    module-wide lock (held for a few attribute writes), so two racing completers (an answer
    and a shutdown) cannot both win, and a blocking call costs one ``Gate`` of its own (a
    kernel: the stdio reader can defer its wake-up until the woken thread would find the GIL
    free).
    """

    __slots__ = ("_callbacks", "_ready", "error", "value")

    def __init__(self) -> None:
        self._ready = Gate()
        self.value: Any = None
        self.error: BaseException | None = None
        # None: pending, no callback yet; a list: pending, callbacks to run; _FIRED: done.
        self._callbacks: list[Callable[[_Waiter], Any]] | None = None

    def done(self) -> bool:
        return self._callbacks is _FIRED

    def cancelled(self) -> bool:
        return False

    def set_result(self, result: Any) -> None:
        with _CALLBACKS_LOCK:
            callbacks = self._callbacks
            if callbacks is _FIRED:
                raise InvalidStateError("already completed")
            self.value = result
            self._callbacks = _FIRED  # after the value: done() means it can be read
        self._ready.open()
        if callbacks:
            self._run_callbacks(callbacks)

    def set_exception(self, error: BaseException) -> None:
        with _CALLBACKS_LOCK:
            callbacks = self._callbacks
            if callbacks is _FIRED:
                raise InvalidStateError("already completed")
            self.error = error
            self._callbacks = _FIRED
        self._ready.open()
        if callbacks:
            self._run_callbacks(callbacks)

    def _run_callbacks(self, callbacks: list[Callable[[_Waiter], Any]]) -> None:
        for fn in callbacks:
            _guarded(fn, self)

    def add_done_callback(self, fn: Callable[[_Waiter], Any]) -> None:
        with _CALLBACKS_LOCK:
            if self._callbacks is not _FIRED:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        _guarded(fn, self)

    def wait(self, timeout: float) -> bool:
        """True once completed (the outcome is then in ``value``/``error``), even when the
        wake-up itself is still queued (see ``Gate``)."""
        return self._ready.wait(timeout)

    def exception(self) -> BaseException | None:
        return self.error

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


_CALLBACKS_LOCK = threading.Lock()
_FIRED: list[Callable[[_Waiter], Any]] = []  # marks "callbacks already run"


@dataclass(eq=False)
class _Incoming:
    """A server-to-client request being answered; ``cancelled`` set by the server."""

    request: jsonrpc.Request
    cancelled: threading.Event = field(default_factory=threading.Event)


class Connection:
    """See the module docstring. ``info`` is set by the Client once the handshake is done."""

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
        self._pending: jsonrpc.PendingTable[_Call] = jsonrpc.PendingTable()
        self._streams = 0  # _STREAMS requests sent (see requests_sent)
        self._incoming: dict[jsonrpc.RequestId, _Incoming] = {}
        # Futures between two input_required rounds (in no pending entry): the timer fails
        # them at their deadline too (the entry of their last request stays scheduled).
        self._rounds: set[_Call] = set()
        # Every call whose input round is being answered (blocking ones too), for
        # ``in_flight``: a call waiting for its user between rounds still holds its server.
        self._asking: set[_Call] = set()
        self._writing = threading.local()  # .call: the _Call this thread is writing
        self._stopping = False
        # Leader/follower (stdio, compiled kernels): the one blocking call reading the pipe
        # on its own thread, and whether it must hand the pipe back to the reader thread.
        # A call with ``on_progress`` never leads: its answer is resolved on the notifier
        # thread (behind its progress callbacks), which cannot wake a leader in poll.
        self._can_lead = transport.can_lead
        self._leader: _Call | None = None
        self._routing: tuple[_Call, Any, RpcError | None, int] | None = None
        # Threads start on demand and end when idle: a settled connection keeps none.
        self._workers = Workers(f"mcp-lite-worker[{name}]", max_workers)
        self._notifier = Workers(f"mcp-lite-notify[{name}]", 1)
        self.notification_backlog = Backlog("notifications", max_queued_notifications, name)
        self.request_backlog = Backlog("server requests", max_queued_server_requests, name)
        # Cancellations and refusals are written from here: the timer and the reader
        # thread never block in a write.
        self._control = ControlSender(name, limit=_MAX_QUEUED_CONTROL)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self, deadline: Deadline | None = None) -> None:
        """Start the transport; ``deadline`` is the connect's one deadline (passed on)."""
        try:
            self.transport.start(self._on_frame, self._on_transport_closed, deadline=deadline)
        except BaseException:
            self._shutdown(ConnectionClosed("could not start"))
            raise

    @property
    def requests_sent(self) -> int:
        """Requests sent so far, notification streams (``_STREAMS``) left out: it moves
        with each use. No lock, no I/O."""
        return self._pending.issued - self._streams

    def in_flight(self) -> int:
        """Requests waiting for their answer, notification streams left out; no lock and
        no I/O (a hint: ``Client._in_flight``)."""
        pending = self._pending
        asking = _still_asking(self._asking) if self._asking else 0
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
                _fail(call.future, failure)
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

    # --- sending -------------------------------------------------------------------------------

    def submit(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        deadline: Deadline,
        max_total_timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
        reset_on_progress: bool = False,
        cancel_on_timeout: bool = True,
    ) -> Future[dict[str, Any]]:
        """Send a request; the future gets the final result dict (after any input rounds),
        or the error: ``RpcError`` from the server, ``RequestTimeout``, ``ConnectionClosed``.
        ``future.cancel()`` withdraws the request and tells the server. ``deadline``: the
        caller's one deadline; input rounds and retries stay on it."""
        future: Future[dict[str, Any]] = Future()
        call = self._new_call(
            future,
            method,
            params,
            deadline,
            max_total_timeout,
            on_progress,
            reset_on_progress,
        )
        call.cancel_on_timeout = cancel_on_timeout

        def on_done(done: Future[dict[str, Any]]) -> None:
            handle = call.timer
            if handle is not None:  # its deadline is no longer needed: off the timer
                handle.cancel()
            if done.cancelled():
                self.cancel(call, "the caller cancelled the request")

        future.add_done_callback(on_done)
        self._send_call(call)
        return future

    def call(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        deadline: Deadline,
        max_total_timeout: float | None = None,
        on_progress: Callable[[Progress], Any] | None = None,
        reset_on_progress: bool = False,
        cancel_event: threading.Event | None = None,
        relayed: bool = False,
    ) -> dict[str, Any]:
        """Send a request and wait for its result dict, on this thread.

        Raises what ``submit`` describes, and ``RequestCancelled`` when ``cancel_event`` is
        set first. A ``KeyboardInterrupt`` (or any exception raised into the waiting thread)
        withdraws the request, tells the server, and propagates. ``deadline``: see ``submit``.
        ``relayed``: see ``_Call.relayed``.
        """
        waiter = _Waiter()
        call = self._new_call(
            waiter,
            method,
            params,
            deadline,
            max_total_timeout,
            on_progress,
            reset_on_progress,
        )
        call.relayed = relayed
        if cancel_event is not None and cancel_event.is_set():
            raise RequestCancelled(f"{method} to MCP server {self.name!r} was cancelled")
        # Nothing but the deadline to watch: HTTP may do the exchange on this thread (its
        # transport aborts the socket at the deadline; _await then expires the call).
        call.inline = cancel_event is None and not reset_on_progress
        leading = self._send_call(call, may_lead=on_progress is None, by_caller=True)
        try:
            # Sent as the only one waiting (see ``_send_call``): read its answer on this
            # thread, until it is in or the Connection wants the reader (``want_reader(True)``
            # ends a lead: several callers, a future, server traffic).
            if leading:
                try:
                    if cancel_event is None:
                        # (the Gate's own check: C, no Python frame; it opens as the call
                        # is done)
                        self.transport.lead(waiter._ready.is_open, call.current())
                    else:  # a set() is seen within _CANCEL_POLL; _await then cancels
                        is_open, is_set = waiter._ready.is_open, cancel_event.is_set
                        self.transport.lead(
                            lambda: is_open() or is_set(), call.current(), _CANCEL_POLL
                        )
                finally:
                    self._leader = None
            if not waiter.done():  # (a leader has mostly read its answer by now)
                self._await(call, waiter, cancel_event)
        except BaseException:
            self._finish_interrupted_routing()
            if not waiter.done():
                self.cancel(call, "the caller was interrupted")
            raise
        if waiter.error is not None:
            raise waiter.error
        result: dict[str, Any] = waiter.value
        return result

    def _new_call(
        self,
        future: Any,
        method: str,
        params: dict[str, Any] | None,
        deadline: Deadline,
        max_total_timeout: float | None,
        on_progress: Callable[[Progress], Any] | None,
        reset_on_progress: bool,
    ) -> _Call:
        timeout, soft = deadline.timeout, deadline.at
        if max_total_timeout is None:
            hard, total = deadline, timeout
        else:  # progress may move the deadline up to the total, counted from the start
            start = time.monotonic() if math.isinf(timeout) else soft - timeout  # inf - inf: NaN
            hard = Deadline(start + max_total_timeout, max_total_timeout)
            total = max_total_timeout
        return _Call(
            future,
            method,
            params,
            timeout,
            soft if soft < hard.at else hard.at,
            hard,
            on_progress,
            reset_on_progress,
            True,
            total,
        )

    def _finish_interrupted_routing(self) -> None:
        """After an interrupt on a leading thread: complete the answer it was routing."""
        routing = self._routing
        if routing is None or routing[3] != threading.get_ident():
            return  # this thread was not routing: nothing of anyone else's is half done
        self._routing = None
        call, result, error, _ = routing
        if call.future.done():
            return
        if error is not None:
            _fail(call.future, error)
        elif call.on_progress is None and not (
            self.info is not None and self.info.era == "stateless"
        ):
            _resolve(call.future, result)
        else:  # the rarer paths (progress, input rounds) run again from the start
            self._resolve_answer(call, result)

    def _need_reader(self) -> None:
        """Someone else waits too, or the server talks: the reader thread takes the pipe."""
        self.transport.want_reader(True)

    def _await(self, call: _Call, waiter: _Waiter, cancel_event: threading.Event | None) -> None:
        """Wait until ``call`` completes, enforcing its (movable) deadline and the cancel."""
        while True:
            remaining = call.deadline - time.monotonic()
            if cancel_event is not None:
                if cancel_event.is_set():
                    self.cancel(call, "cancelled by the caller")
                    # cancel() completed it, unless an answer won the race or an input
                    # round is being answered (a handler may take long: do not wait on it).
                    if not waiter.wait(0.05):
                        _fail(waiter, RequestCancelled(f"{call.method} was cancelled"))
                    return
                remaining = min(remaining, _CANCEL_POLL)
            if remaining > 0:
                if waiter.wait(remaining):
                    return
                continue
            if self._withdraw(call):
                self._expire(call)
                return
            # Not pending and not done: being completed right now, or between two
            # input_required rounds: look again shortly. A call in a round ends at its
            # deadline (the round's handler may run on; nothing is sent after it). A
            # completion that never comes (its completer was interrupted half-way) ends
            # in a timeout a moment later, never in a stall.
            if waiter.wait(0.01):
                return
            if call.in_round or time.monotonic() > call.deadline + _LOST_GRACE:
                self._expire_late(call)
                return

    def _withdraw(self, call: _Call) -> bool:
        """Take ``call`` out of the pending table; False when someone else already did."""
        with self._lock:
            if self._pending.get(call.request_id) is call:
                self._pending.pop(call.request_id)
                return True
            return False

    def cancel(self, call: _Call, reason: str) -> None:
        """Withdraw ``call``: fail it with ``RequestCancelled`` and tell the server, unless
        its answer already arrived. A call between two input rounds is not sent again."""
        call.cancelled = True
        if not self._withdraw(call):
            return
        _fail(
            call.future,
            RequestCancelled(f"{call.method} to MCP server {self.name!r} was cancelled: {reason}"),
        )
        if call.method == "initialize":  # never cancelled, says the spec
            return
        # A request the server never got needs no cancellation; one still being written is
        # cancelled by its writer once the write is done (see _send_call). Written by the
        # control thread: the caller is free at once, even when the server stopped reading.
        with self._lock:
            call.expired = True
            sent = call.sent
        if sent:
            request_id = call.request_id
            self._control.post(lambda: self._cancel(request_id, reason))

    def _send_call(self, call: _Call, *, may_lead: bool = False, by_caller: bool = False) -> bool:
        """Register and write ``call``'s request. True: it is to lead (``may_lead``, and it
        is the only call waiting), and ``self._leader`` is set for it. ``by_caller``: this is
        the blocking caller's own thread, the only one that expires or cancels its call."""
        with self._lock:
            if self._stopping:
                raise self.closed_error or ConnectionClosed("connection closed")
            if call.cancelled:
                raise RequestCancelled(f"{call.method} was cancelled")
            pending = self._pending
            request_id = call.request_id = pending.register(call)
            call.sent = False
            call.in_round = False
            self._asking.discard(call)
            blocking = type(call.future) is _Waiter
            if not blocking:  # a blocking call keeps its own deadline
                self._schedule(call)
                if call.method in _STREAMS:
                    self._streams += 1
            leading = need_reader = False
            if self._can_lead:
                if not blocking or len(pending) > 1:
                    need_reader = True
                elif may_lead and self._leader is None:
                    leading = True
                    self._leader = call
                    self.transport.want_reader(False)
        if need_reader:
            self._need_reader()
        params = call.params
        info = self.info
        if info is not None and info.era == "stateless":  # its _meta goes on every request
            params = self._stateless_params(info, params, call.relayed)
        if call.on_progress is not None or call.reset_on_progress:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
        if self.events is not None:
            params = self.events.sent(self, call, params)
        # A transport whose write times out half-way closes the connection from this thread
        # (its on_close runs here): this call then fails with its own timeout, not the close.
        self._writing.call = call
        try:
            sent = self._write(
                jsonrpc.make_request(request_id, call.method, params),
                # The latest moment the caller may still wait (progress can move
                # call.deadline up to it): HTTP aborts the socket there.
                call.hard,
                call.future.done,
                call.inline,
            )
        except McpError as exc:
            self._unsend(request_id, leading)
            if isinstance(exc, ConnectionClosed):
                exc.unsent = True  # type: ignore[attr-defined]  # safe to retry elsewhere
            _fail(call.future, exc)
            return False
        except BaseException:  # Ctrl-C during an inline exchange: forget the call
            self._unsend(request_id, leading)
            raise
        finally:
            self._writing.call = None
        if by_caller:  # nothing can have expired it yet: it expires on this thread, later
            call.sent = sent
            return leading
        with self._lock:
            call.sent = sent
            late = sent and call.expired
        if late and call.cancel_on_timeout:  # it expired while being written: cancel it now
            why = "cancelled by the caller" if call.cancelled else "timeout"
            self._control.post(lambda: self._cancel(request_id, why))
        return leading

    def _unsend(self, request_id: jsonrpc.RequestId, leading: bool) -> None:
        """The request could not be written: forget it (and its lead)."""
        with self._lock:
            self._pending.pop(request_id)
            if leading:
                self._leader = None

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

    # --- deadlines -----------------------------------------------------------------------------

    def _schedule(self, call: _Call) -> None:
        """Put ``call``'s deadline on the process-wide timer (replacing the one it had);
        the caller holds ``self._lock``."""
        old = call.timer
        if old is not None:
            old.cancel()
        handle = call.timer = _timer.schedule(call.deadline, lambda: self._on_deadline(call))
        if call.future.done():  # completed meanwhile: its done callback saw the old handle
            handle.cancel()

    def _on_deadline(self, call: _Call) -> None:
        """On the timer thread: fail ``call`` if its deadline passed (short, never blocks:
        the cancellation is written by the control sender)."""
        with self._lock:
            now = time.monotonic()
            if call.deadline > now or call.future.done():
                return  # answered, or its deadline moved (a newer entry is scheduled)
            if self._pending.get(call.request_id) is call:
                self._pending.pop(call.request_id)
            elif call in self._rounds:  # between input rounds: in no pending entry
                self._rounds.discard(call)
                call.cancelled = True  # never sent again
                call.sent = False  # its last request was answered: no cancel
            else:
                return  # being completed or re-sent right now: its next entry decides
        self._expire(call)

    def _expire_late(self, call: _Call) -> None:
        """Expire a blocking call found in no pending entry past its deadline (between input
        rounds, or its completer lost): it is never sent again. The last round's request
        was answered and needs no cancellation; one re-sent just now is withdrawn."""
        with self._lock:
            call.cancelled = True
            self._rounds.discard(call)
            if self._pending.get(call.request_id) is call:
                self._pending.pop(call.request_id)  # re-sent meanwhile: cancelled if sent
            else:
                call.sent = False
        self._expire(call)

    def _expire(self, call: _Call) -> None:
        why = (
            f"within {call.timeout:g} s"
            if call.deadline < call.hard.at
            else f"before its total deadline ({call.total:g} s)"
        )
        _fail(
            call.future,
            RequestTimeout(
                f"{call.method} to MCP server {self.name!r} got no answer {why}", call.timeout
            ),
        )
        # A request the server never got needs no cancellation; one still being written is
        # cancelled by its writer once the write is done (see _send_call).
        with self._lock:
            call.expired = True
            sent = call.sent
        request_id = call.request_id
        if call.cancel_on_timeout and sent:
            self._control.post(lambda: self._cancel(request_id, "timeout"))
        elif call.inline and not sent:
            # The caller's own thread is still in the exchange (HTTP POSTs inline): free it
            # now; the server hears of it once that write returns (see _send_call).
            transport = self.transport

            def abort() -> None:
                transport.cancel_request(request_id)

            self._control.post(abort)

    def _cancel(self, request_id: jsonrpc.RequestId, reason: str) -> None:
        """Tell the server to stop working on ``request_id`` (on the control thread)."""
        if self.transport.cancel_request(request_id):
            return
        try:
            self._write(
                jsonrpc.make_notification(
                    "notifications/cancelled", {"requestId": request_id, "reason": reason}
                ),
                deadline=Deadline.after(_CONTROL_WRITE_TIMEOUT),
            )
        except McpError:
            pass

    # --- receiving -----------------------------------------------------------------------------

    def _on_frame(self, frame: bytes | MessageTooLarge | SendFailed) -> None:
        if type(frame) is not bytes:
            if isinstance(frame, MessageTooLarge):
                self._on_oversized(frame)
                return
            if isinstance(frame, SendFailed):
                with self._lock:
                    failed = self._pending.pop(frame.request_id)
                if failed is not None:
                    _fail(failed.future, frame.error)
                return
        # The common case, a plain result, goes straight to its call: no event object.
        try:
            message = decode_message(frame)
        except ValueError:
            message = None
        if type(message) is dict and "result" in message and "method" not in message:
            request_id = message.get("id")
            result = message["result"]
            if (
                type(result) is dict
                and type(request_id) in (int, str)
                and message.get("jsonrpc") == "2.0"
            ):
                try:
                    self._on_answer(request_id, result, None)
                except Exception:
                    log.exception("dropped a result from %r that could not be routed", self.name)
                return
        events = (
            [jsonrpc.classify(message)] if type(message) is dict else jsonrpc.parse_frame(frame)
        )
        for event in events:
            try:
                self._route(event)
            except Exception:  # one odd message (a bad _meta...) must not kill the connection
                log.exception("dropped a message from %r that could not be routed", self.name)

    def _route(self, event: jsonrpc.Incoming) -> None:
        if isinstance(event, (jsonrpc.Response, jsonrpc.ErrorResponse)):
            self._on_response(event)
            return
        if self._leader is not None:  # server traffic flows: the reader thread takes over
            self._need_reader()
        if isinstance(event, jsonrpc.Notification):
            self._on_notification(event)
        elif isinstance(event, jsonrpc.Request):
            self._on_request(event)
        elif event.id is not None and self._on_unreadable(event):
            return
        elif event.request_id is not None:
            self._refuse(
                event.request_id, ParseError(f"the client could not read it: {event.reason}")
            )
        else:
            log.warning(
                "dropped invalid message from %r: %s: %s", self.name, event.reason, event.raw
            )

    def _on_unreadable(self, event: jsonrpc.Invalid) -> bool:
        """An answer we cannot use (too deep, bad UTF-8, a number too long, a result that is
        not an object): fail the call it answers at once, instead of letting it time out."""
        with self._lock:
            call = self._pending.pop(event.id)
        if call is None:
            return False
        _fail(
            call.future,
            RemoteProtocolError(
                f"the answer to {call.method} from MCP server {self.name!r} could not be "
                f"read: {event.reason}"
            ),
        )
        return True

    def _on_oversized(self, error: MessageTooLarge) -> None:
        # Only the message's own top-level id names the call it answers: the transport
        # scanned the whole message for it, or (kept only the head) the head must show a
        # response's keys ("result"/"error", no "method") around a top-level id.
        if error.scanned:
            request_id = error.response_id
        else:
            scanner = ResponseIdScanner()
            scanner.feed(error.head)
            request_id = scanner.likely_response_id
        with self._lock:
            call = self._pending.pop(request_id)
        if call is None:
            log.warning("dropped a message over %d bytes from %r", error.max_size, self.name)
            if error.request_id is not None:
                self._refuse(
                    error.request_id,
                    InvalidRequest(
                        f"request larger than the client's max_message_size={error.max_size}"
                    ),
                )
            return
        _fail(
            call.future,
            MessageTooLarge(
                f"the answer to {call.method} from MCP server {self.name!r} is larger than "
                f"max_message_size={error.max_size} bytes",
                error.max_size,
                error.head,
                request_id,
                error.scanned,
            ),
        )

    def _on_response(self, event: jsonrpc.Response | jsonrpc.ErrorResponse) -> None:
        if isinstance(event, jsonrpc.ErrorResponse):
            self._on_answer(event.id, None, event.error)
        else:
            self._on_answer(event.id, event.result, None)

    def _on_answer(
        self, request_id: jsonrpc.RequestId | None, result: Any, error: RpcError | None
    ) -> None:
        with self._lock:
            # (the plain dict's pop first: no Python frame for the common case; the table's
            # own pop also takes an integer id the peer echoed back as a string)
            call = dict.pop(self._pending, request_id, None)  # type: ignore[misc]
            if call is None:
                call = self._pending.pop(request_id)
            # Remembered until resolved: a leader interrupted (Ctrl-C) between the pop and
            # the resolve finishes the job in call(), so no other caller loses its answer.
            self._routing = (
                (call, result, error, threading.get_ident()) if call is not None else None
            )
        if call is None:
            log.debug("dropped a response with unknown id %r from %r", request_id, self.name)
            return
        if error is not None:
            _fail(call.future, error)
        elif call.on_progress is None and (self.info is None or self.info.era != "stateless"):
            _resolve(call.future, result)  # the common case (``_resolve_answer``'s last)
        else:
            self._resolve_answer(call, result)
        self._routing = None

    def _resolve_answer(self, call: _Call, result: dict[str, Any]) -> None:
        try:
            input_required = (
                not call.relayed
                and self.info is not None
                and self.info.era == "stateless"
                and proto.is_input_required(result)
            )
        except McpError as exc:
            _fail(call.future, exc)
            return
        if input_required:
            with self._lock:
                call.in_round = True
                call.sent = False  # the answered request needs no cancellation
                if self._asking:
                    _still_asking(self._asking)  # (drops those that ended otherwise)
                self._asking.add(call)
                if type(call.future) is not _Waiter:
                    self._rounds.add(call)
                    # Again: the entry of its answered request may have fired just now.
                    self._schedule(call)
            if not self._run(self._workers, self._answer_input_required, call, result):
                _fail(call.future, self.closed_error or ConnectionClosed("connection closed"))
        elif call.on_progress is not None:
            # Resolve behind the progress callbacks already queued: the caller sees every
            # progress event before the call returns.
            if not self._run(self._notifier, _resolve, call.future, result):
                _resolve(call.future, result)
        else:
            _resolve(call.future, result)

    def _on_notification(self, event: jsonrpc.Notification) -> None:
        method, params = event.method, event.params
        if self.handlers.observer is not None:
            self.handlers.observer(method, params)
        if self.events is not None:
            self.events.notification(method, params)
        if method == "notifications/progress":
            self._on_progress(params)
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            incoming = (
                self._incoming.get(request_id) if isinstance(request_id, (int, str)) else None
            )
            if incoming is not None:
                incoming.cancelled.set()
            self._deliver(method, params)
        elif method == "notifications/message" and self.handlers.log_handler is not None:
            self._notice(self.handlers.log_handler, _params, params)
        else:
            self._deliver(method, params)

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        handler = self.handlers.notification_handler
        if handler is not None:
            self._notice(handler, _params, params, method)

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        with self._lock:
            call = self._pending.get(token) if isinstance(token, (int, str)) else None
            if call is not None and call.reset_on_progress:
                call.deadline = min(time.monotonic() + call.timeout, call.hard.at)
                if type(call.future) is not _Waiter:
                    self._schedule(call)
        if call is not None and call.on_progress is not None:
            self._notice(call.on_progress, _progress, params)

    # --- answering the server ----------------------------------------------------------------------

    def _on_request(self, request: jsonrpc.Request) -> None:
        backlog = self.request_backlog
        if not backlog.enter():
            refusal = jsonrpc.make_error(
                request.id,
                RpcError(
                    f"client overloaded: {backlog.limit} requests from this server are already "
                    f"waiting for an answer; {request.method} refused, retry later",
                    OVERLOADED,
                ),
            )
            self._control.post(lambda: self._send_control(refusal))
            return
        incoming = _Incoming(request)
        self._incoming[request.id] = incoming
        if not self._run(self._workers, self._answer_admitted, incoming):
            self._incoming.pop(request.id, None)
            backlog.leave()

    def _answer_admitted(self, incoming: _Incoming) -> None:
        try:
            self._answer(incoming)
        finally:
            self.request_backlog.leave()

    def _refuse(self, request_id: jsonrpc.RequestId, error: RpcError) -> None:
        """Answer a request from the server that we cannot take with ``error`` (so it does not
        wait for an answer that never comes); written on the control thread."""
        log.warning("refused a request from %r: %s", self.name, error.message)
        refusal = jsonrpc.make_error(request_id, error)
        self._control.post(lambda: self._send_control(refusal))

    def _send_control(self, message: dict[str, Any]) -> None:
        try:
            self._write(message, deadline=Deadline.after(_CONTROL_WRITE_TIMEOUT))
        except McpError as exc:
            log.debug(
                "could not send %s to %r: %s", message.get("method", "an answer"), self.name, exc
            )

    def _notice(
        self,
        fn: Callable[..., Any],
        convert: Callable[[dict[str, Any]], Any],
        params: dict[str, Any],
        *lead: Any,
    ) -> None:
        """Deliver one notification to ``fn`` on the serial notifier, within the backlog
        bound (past it the notification is dropped and counted). ``convert`` (the pydantic
        model) runs on the notifier, not on the reader thread."""
        backlog = self.notification_backlog
        if not backlog.enter():
            return
        if not self._run(self._notifier, _deliver_one, backlog, fn, convert, params, lead):
            backlog.leave()

    def _answer(self, incoming: _Incoming) -> None:
        request = incoming.request
        try:
            result = self.fulfil(request.method, request.params)
            meta = request.params.get("_meta")
            if isinstance(meta, dict) and RELATED_TASK in meta:  # an answer for a task says so
                extra = result.get("_meta")
                merged = {
                    **(extra if isinstance(extra, dict) else {}),
                    RELATED_TASK: meta[RELATED_TASK],
                }
                result = {**result, "_meta": merged}
            message = jsonrpc.make_result(request.id, result)
        except RpcError as exc:
            message = jsonrpc.make_error(request.id, exc)
        except Exception as exc:
            log.exception("handler for %s from %r failed", request.method, self.name)
            message = jsonrpc.make_error(request.id, InternalError(f"client handler failed: {exc}"))
        finally:
            self._incoming.pop(request.id, None)
        if incoming.cancelled.is_set():
            return  # the server withdrew the request: send nothing
        try:
            self._write(message)
        except McpError as exc:
            log.info("could not answer %s to %r: %s", request.method, self.name, exc)

    def fulfil(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one server-to-client request (or one 2026 ``inputRequests`` entry)."""
        h = self.handlers
        if method == "ping":
            return {}
        if h.task_receiver is not None:
            if method.startswith("tasks/"):
                return h.task_receiver.handle(method, params)
            if isinstance(params.get("task"), dict) and method in _TASKABLE:
                return h.task_receiver.create(method, params, self.fulfil)
        if method == "roots/list":
            if h.roots_handler is not None:
                roots = h.roots_handler()
            elif h.roots is not None:
                roots = h.roots
            else:
                raise MethodNotFound("this client does not expose roots")
            return {"roots": [_dump(root) for root in roots]}
        if method == "sampling/createMessage":
            if h.sampling is None:
                raise MethodNotFound("this client does not support sampling")
            if "tools" in params or "toolChoice" in params:
                raise InvalidParams("this client did not declare sampling.tools")
            return _as_result(h.sampling(_params(params)))
        if method == "elicitation/create":
            if h.elicitation is None:
                raise MethodNotFound("this client does not support elicitation")
            return _as_result(h.elicitation(_params(params)))
        raise MethodNotFound(f"method not found: {method}")

    def _answer_input_required(self, call: _Call, result: dict[str, Any]) -> None:
        """2026-07-28 MRTR: fulfil every input request, then retry with a new id."""
        try:
            call.rounds += 1
            if call.rounds > _MAX_INPUT_ROUNDS:
                raise RemoteProtocolError(
                    f"{call.method}: server asked for input more than {_MAX_INPUT_ROUNDS} times"
                )
            responses = {
                key: self.fulfil(request["method"], request.get("params") or {})
                for key, request in proto.input_requests(result).items()
            }
            call.params = proto.retry_params(call.params or {}, result, responses)
            # Every round runs on the call's one deadline (the caller's timeout is a total,
            # also over the time a handler takes); a call already expired is not sent again.
            with self._lock:
                self._rounds.discard(call)
            call.inline = False  # this is a worker thread, not the blocked caller
            self._send_call(call)
        except McpError as exc:
            _fail(call.future, exc)
        except Exception as exc:
            error = McpError(
                f"{call.method}: a handler answering the server's input request raised {exc!r}"
            )
            error.__cause__ = exc
            _fail(call.future, error)

    def _run(self, pool: Workers, fn: Callable[..., Any], *args: Any) -> bool:
        try:
            pool.submit(_guarded, fn, *args)
            return True
        except RuntimeError:  # pool shut down: the connection is closing
            return False


def _still_asking(asking: set[_Call]) -> int:
    """How many calls of ``asking`` are still between two input rounds; those that ended
    otherwise (failed, expired, cancelled in the round) are dropped from it here."""
    calls = list(asking)  # (one step under the GIL: other threads change the set)
    for call in calls:
        if not call.in_round or call.future.done():
            asking.discard(call)
    return sum(call.in_round and not call.future.done() for call in calls)


def _deliver_one(
    backlog: Backlog,
    fn: Callable[..., Any],
    convert: Callable[[dict[str, Any]], Any],
    params: dict[str, Any],
    lead: tuple[Any, ...],
) -> None:
    try:
        _guarded(lambda: fn(*lead, convert(params)))
    finally:
        backlog.leave()


def _progress(params: dict[str, Any]) -> Progress:
    from ..protocol.types import Progress

    return Progress.model_validate(params)


def _guarded(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("callback %r raised", getattr(fn, "__name__", fn))


# The wire models (pydantic) load only when a handler or callback needs them: a one-shot
# call that uses none never imports pydantic.
def _params(params: dict[str, Any]) -> Params:
    from ..protocol.types import Params

    return Params.model_validate(params)


def _dump(value: Any) -> Any:
    from ..protocol.types import dump

    return dump(value)


def _as_result(value: Any) -> dict[str, Any]:
    result = _dump(value)
    if not isinstance(result, dict):
        raise InternalError(f"handler returned {type(value).__name__}, not a dict or model")
    return result


def _resolve(future: Future[Any] | _Waiter, result: Any) -> None:
    try:
        future.set_result(result)
    except Exception:  # cancelled by the caller, or already resolved
        pass


def _fail(future: Future[Any] | _Waiter, error: BaseException) -> None:
    if not future.done():
        try:
            future.set_exception(error)
        except Exception:  # already resolved by a racing thread
            pass
