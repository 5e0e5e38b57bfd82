"""The bridge from one ``Connection`` to what watches it: it turns what the connection does into
the public ``events.Event`` objects and into the facts ``_otel.Tracing`` records, so that
``events`` and ``_otel`` below it never see a connection (see
docs/explanation/architecture.md, "Observing a connection").
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .._otel import Tracing, tracing_wanted
from ..errors import RpcError
from ..events import Event, Hooks, emit

if TYPE_CHECKING:
    from .base import ConnectionBase
    from .call import Call, Waiter

__all__ = ["Observer", "observer"]

log = logging.getLogger("mcp_lite.events")


def _session_id(conn: ConnectionBase) -> str | None:
    return conn.transport.session_id or None


class _CallState:
    """What an observed request carries until its future completes."""

    __slots__ = ("method", "request_id", "span", "started")

    def __init__(self, method: str, request_id: int | str, span: Any) -> None:
        self.method = method
        self.request_id = request_id
        self.span = span
        self.started = time.monotonic()


class Observer:
    """What one connection reports to: the user's hooks and, when on, OpenTelemetry.

    The connection calls ``sent`` before writing each request, ``notification`` for each
    notification, ``lost`` when the transport died under it and ``ended`` once when it
    closes. Built by ``observer()`` only when there is something to report to.
    """

    def __init__(self, server: str, hooks: Hooks, tracing: Tracing | None) -> None:
        self.server = server
        self.hooks = hooks
        self.tracing = tracing
        self.opened = time.monotonic()

    # --- called by the Connection ----------------------------------------------------------------

    def sent(self, conn: ConnectionBase, call: Call, params: dict[str, Any] | None) -> Any:
        """Before a request goes out (each input round too): returns the params to send."""
        state: _CallState | None = call.trace
        if state is None:
            span = None
            if self.tracing is not None:
                try:
                    span = self.tracing.start(
                        call.method, call.params, call.request_id, conn.info, _session_id(conn)
                    )
                except Exception:  # telemetry never breaks a call
                    log.exception("could not start the span of %s", call.method)
            state = _CallState(call.method, call.request_id, span)
            call.trace = state
            call.future.add_done_callback(lambda f: self._finished(state, f))
        if state.span is not None and self.tracing is not None:
            try:
                params = self.tracing.inject(state.span, params)
            except Exception:
                log.exception("could not propagate the trace context of %s", call.method)
        if "request" in self.hooks:
            emit(
                self.hooks,
                Event("request", self.server, call.method, call.request_id, params=params),
            )
        return params

    def notification(self, method: str, params: dict[str, Any]) -> None:
        if "notification" in self.hooks:
            emit(self.hooks, Event("notification", self.server, method, params=params))

    def lost(self, conn: ConnectionBase, error: BaseException) -> None:
        """The transport died under the connection (not a close() by the client)."""
        self.ended(conn, error)
        if "error" in self.hooks:
            emit(self.hooks, Event("error", self.server, error=error))

    def ended(self, conn: ConnectionBase, error: BaseException | None) -> None:
        if self.tracing is not None:
            try:
                self.tracing.session_ended(conn.info, time.monotonic() - self.opened, error)
            except Exception:
                log.exception("could not record the session duration")

    # --- called by the Client ---------------------------------------------------------------------

    def reconnected(self, why: BaseException | None) -> None:
        if "reconnect" in self.hooks:
            emit(self.hooks, Event("reconnect", self.server, error=why))

    @contextlib.contextmanager
    def connecting(self, target: Any) -> Iterator[None]:
        """Around opening a connection: the ``connect`` span, parent of ``initialize``."""
        if self.tracing is None:
            yield
            return
        with self.tracing.connect_span(self.server, target):
            yield

    # --- internals ---------------------------------------------------------------------------------

    def _finished(self, state: _CallState, future: Future[Any] | Waiter) -> None:
        duration = time.monotonic() - state.started
        result: dict[str, Any] | None = None
        error: BaseException | None = None
        if future.cancelled():
            error = _Cancelled(f"{state.method} was cancelled by the caller")
        else:
            error = future.exception()
            if error is None:
                result = future.result()
        if self.tracing is not None and state.span is not None:
            try:
                self.tracing.finish(state.span, state.method, duration, result, error)
            except Exception:
                log.exception("could not end the span of %s", state.method)
        if not self.hooks:
            return
        rid = state.request_id
        if error is None or isinstance(error, RpcError):
            emit(
                self.hooks,
                Event("response", self.server, state.method, rid, None, result, error, duration),
            )
        if error is not None:
            emit(
                self.hooks,
                Event("error", self.server, state.method, rid, None, None, error, duration),
            )


class _Cancelled(Exception):
    """Stands for a future the caller cancelled (the event gets an exception, not None)."""


def observer(server: str, hooks: Hooks, target: Any = None) -> Observer | None:
    """An ``Observer`` for a new connection, or None when nobody listens (the usual case)."""
    tracing = Tracing.create(server, target) if tracing_wanted() else None
    if not hooks and tracing is None:
        return None
    return Observer(server, hooks, tracing)
