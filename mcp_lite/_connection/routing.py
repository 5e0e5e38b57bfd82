"""``Connection``: the routing of what the server sends, on the transport's reader thread
(answers to their calls, notifications to the serial notifier, progress to its call,
server requests to the bounded worker pool and their answers back), on top of ``Sending``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._accel import ResponseIdScanner, decode_message
from .._deadline import Deadline
from ..errors import (
    ConnectionClosed,
    InternalError,
    InvalidRequest,
    McpError,
    MessageTooLarge,
    ParseError,
    RemoteProtocolError,
    RpcError,
)
from ..protocol import jsonrpc
from ..protocol.tasks import RELATED_TASK
from ..transports.base import SendFailed
from .backlog import Backlog
from .base import _CONTROL_WRITE_TIMEOUT, OVERLOADED, Incoming
from .call import Waiter, fail, guarded, resolve
from .handlers import as_params, fulfil
from .sending import Sending

if TYPE_CHECKING:
    from ..protocol.types import Progress

__all__ = ["Connection"]

log = logging.getLogger("mcp_lite.client")


class Connection(Sending):
    """One live connection: ``submit``/``call`` send (``Sending``), the reader thread routes
    what comes back (here), ``close`` ends it (``ConnectionBase``)."""

    def start(self, deadline: Deadline | None = None) -> None:
        """Start the transport; ``deadline`` is the connect's one deadline (passed on)."""
        try:
            self.transport.start(self._on_frame, self._on_transport_closed, deadline=deadline)
        except BaseException:
            self._shutdown(ConnectionClosed("could not start"))
            raise

    def _on_frame(self, frame: bytes | MessageTooLarge | SendFailed) -> None:
        if type(frame) is not bytes:
            if isinstance(frame, MessageTooLarge):
                self._on_oversized(frame)
                return
            if isinstance(frame, SendFailed):
                with self._lock:
                    failed = self._pending.pop(frame.request_id)
                if failed is not None:
                    fail(failed.future, frame.error)
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
        fail(
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
        fail(
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
            fail(call.future, error)
        elif call.on_progress is None and (self.info is None or self.info.era != "stateless"):
            resolve(call.future, result)  # the common case (``_resolve_answer``'s last)
        else:
            self._resolve_answer(call, result)
        self._routing = None

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
            self._notice(self.handlers.log_handler, as_params, params)
        else:
            self._deliver(method, params)

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        handler = self.handlers.notification_handler
        if handler is not None:
            self._notice(handler, as_params, params, method)

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        with self._lock:
            call = self._pending.get(token) if isinstance(token, (int, str)) else None
            if call is not None and call.reset_on_progress:
                call.deadline = min(time.monotonic() + call.timeout, call.hard.at)
                if type(call.future) is not Waiter:
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
        incoming = Incoming(request)
        self._incoming[request.id] = incoming
        if not self._run(self._workers, self._answer_admitted, incoming):
            self._incoming.pop(request.id, None)
            backlog.leave()

    def _answer_admitted(self, incoming: Incoming) -> None:
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

    def _answer(self, incoming: Incoming) -> None:
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
        return fulfil(self.handlers, method, params)


def _deliver_one(
    backlog: Backlog,
    fn: Callable[..., Any],
    convert: Callable[[dict[str, Any]], Any],
    params: dict[str, Any],
    lead: tuple[Any, ...],
) -> None:
    try:
        guarded(lambda: fn(*lead, convert(params)))
    finally:
        backlog.leave()


def _progress(params: dict[str, Any]) -> Progress:
    from ..protocol.types import Progress

    return Progress.model_validate(params)
