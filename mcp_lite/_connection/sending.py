"""Sending a request and waiting for it: ``submit`` (a Future on the process-wide timer)
and ``call`` (the caller's own thread, which may lead the read), each on the caller's one
``Deadline``; withdrawal, expiry and the cancellation the server is told of; and the
2026-07-28 input rounds that re-send a call."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .. import _timer
from .._deadline import Deadline
from ..errors import (
    ConnectionClosed,
    McpError,
    RemoteProtocolError,
    RequestCancelled,
    RequestTimeout,
)
from ..protocol import jsonrpc
from ..protocol import session as proto
from .base import (
    _CANCEL_POLL,
    _CONTROL_WRITE_TIMEOUT,
    _LOST_GRACE,
    _MAX_INPUT_ROUNDS,
    _STREAMS,
    ConnectionBase,
)
from .call import Call, Submitted, Waiter, fail, resolve, still_asking
from .handlers import fulfil

if TYPE_CHECKING:
    from ..protocol.types import Progress

__all__ = ["Sending"]


class Sending(ConnectionBase):
    """Requests out, each on its caller's deadline; see the module docstring."""

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
    ) -> Submitted:
        """Send a request; the future gets the final result dict (after any input rounds),
        or the error: ``RpcError`` from the server, ``RequestTimeout``, ``ConnectionClosed``.
        ``future.cancel()`` withdraws the request and tells the server. ``deadline``: the
        caller's one deadline; input rounds and retries stay on it."""
        future = Submitted()
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
        future.request_id = call.request_id
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
        ``relayed``: see ``Call.relayed``.
        """
        waiter = Waiter()
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
    ) -> Call:
        timeout, soft = deadline.timeout, deadline.at
        if max_total_timeout is None:
            hard, total = deadline, timeout
        else:  # progress may move the deadline up to the total, counted from the start
            start = time.monotonic() if math.isinf(timeout) else soft - timeout  # inf - inf: NaN
            hard = Deadline(start + max_total_timeout, max_total_timeout)
            total = max_total_timeout
        return Call(
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
            fail(call.future, error)
        elif call.on_progress is None and not (
            self.info is not None and self.info.era == "stateless"
        ):
            resolve(call.future, result)
        else:  # the rarer paths (progress, input rounds) run again from the start
            self._resolve_answer(call, result)

    def _need_reader(self) -> None:
        """Someone else waits too, or the server talks: the reader thread takes the pipe."""
        self.transport.want_reader(True)

    def _await(self, call: Call, waiter: Waiter, cancel_event: threading.Event | None) -> None:
        """Wait until ``call`` completes, enforcing its (movable) deadline and the cancel."""
        while True:
            remaining = call.deadline - time.monotonic()
            if cancel_event is not None:
                if cancel_event.is_set():
                    self.cancel(call, "cancelled by the caller")
                    # cancel() completed it, unless an answer won the race or an input
                    # round is being answered (a handler may take long: do not wait on it).
                    if not waiter.wait(0.05):
                        fail(waiter, RequestCancelled(f"{call.method} was cancelled"))
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

    def _withdraw(self, call: Call) -> bool:
        """Take ``call`` out of the pending table; False when someone else already did."""
        with self._lock:
            if self._pending.get(call.request_id) is call:
                self._pending.pop(call.request_id)
                return True
            return False

    def cancel(self, call: Call, reason: str) -> None:
        """Withdraw ``call``: fail it with ``RequestCancelled`` and tell the server, unless
        its answer already arrived. A call between two input rounds is not sent again."""
        call.cancelled = True
        if not self._withdraw(call):
            return
        fail(
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

    def _send_call(self, call: Call, *, may_lead: bool = False, by_caller: bool = False) -> bool:
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
            blocking = type(call.future) is Waiter
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
            fail(call.future, exc)
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

    def _resolve_answer(self, call: Call, result: dict[str, Any]) -> None:
        try:
            input_required = (
                not call.relayed
                and self.info is not None
                and self.info.era == "stateless"
                and proto.is_input_required(result)
            )
        except McpError as exc:
            fail(call.future, exc)
            return
        if input_required:
            with self._lock:
                call.in_round = True
                call.sent = False  # the answered request needs no cancellation
                if self._asking:
                    still_asking(self._asking)  # (drops those that ended otherwise)
                self._asking.add(call)
                if type(call.future) is not Waiter:
                    self._rounds.add(call)
                    # Again: the entry of its answered request may have fired just now.
                    self._schedule(call)
            if not self._run(self._workers, self._answer_input_required, call, result):
                fail(call.future, self.closed_error or ConnectionClosed("connection closed"))
        elif call.on_progress is not None:
            # Resolve behind the progress callbacks already queued: the caller sees every
            # progress event before the call returns.
            if not self._run(self._notifier, resolve, call.future, result):
                resolve(call.future, result)
        else:
            resolve(call.future, result)

    def _answer_input_required(self, call: Call, result: dict[str, Any]) -> None:
        """2026-07-28 MRTR: fulfil every input request, then retry with a new id."""
        try:
            call.rounds += 1
            if call.rounds > _MAX_INPUT_ROUNDS:
                raise RemoteProtocolError(
                    f"{call.method}: server asked for input more than {_MAX_INPUT_ROUNDS} times"
                )
            responses = {
                key: fulfil(self.handlers, request["method"], request.get("params") or {})
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
            fail(call.future, exc)
        except Exception as exc:
            error = McpError(
                f"{call.method}: a handler answering the server's input request raised {exc!r}"
            )
            error.__cause__ = exc
            fail(call.future, error)

    # --- deadlines -----------------------------------------------------------------------------

    def _schedule(self, call: Call) -> None:
        """Put ``call``'s deadline on the process-wide timer (replacing the one it had);
        the caller holds ``self._lock``."""
        old = call.timer
        if old is not None:
            old.cancel()
        handle = call.timer = _timer.schedule(call.deadline, lambda: self._on_deadline(call))
        if call.future.done():  # completed meanwhile: its done callback saw the old handle
            handle.cancel()

    def _on_deadline(self, call: Call) -> None:
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

    def _expire_late(self, call: Call) -> None:
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

    def _expire(self, call: Call) -> None:
        why = (
            f"within {call.timeout:g} s"
            if call.deadline < call.hard.at
            else f"before its total deadline ({call.total:g} s)"
        )
        fail(
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
