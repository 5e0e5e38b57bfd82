"""Event hooks: see what a ``Client`` or a ``Hub`` sends and receives, without OpenTelemetry.

In the spirit of httpx's event hooks: a mapping from an event kind to a list of plain
functions, each called with one ``Event``::

    def log_request(event):
        print("->", event.server, event.method, event.request_id)

    def log_response(event):
        print("<-", event.server, event.method, f"{event.duration * 1000:.1f} ms")

    client = mcp_lite.connect(target, event_hooks={"request": [log_request],
                                                   "response": [log_response]})

Kinds:

- ``request``: a request is about to be sent (``method``, ``request_id``, ``params`` as sent);
- ``response``: the server answered it (``result``, or ``error`` for a JSON-RPC error), with
  ``duration`` in seconds since it was first sent;
- ``notification``: the server sent a notification (``method``, ``params``);
- ``reconnect``: a new connection replaced a dead one (``error`` says why the old one died);
- ``error``: a request failed (``error``: the server's ``RpcError``, ``RequestTimeout``,
  ``ConnectionClosed``...; ``duration``), or the connection died (``method`` is None).

Hooks run inline on the thread where the event happens (the caller's for ``request``, the
connection's reader or deadline thread for the others): keep them quick and hand slow work to
a queue. A hook that raises is logged (logger ``mcp_lite.events``) and never breaks the call.
With no hook and no tracing, a connection pays one attribute check per message.

OpenTelemetry (``pip install mcp-lite-client[otel]``) is driven by the same machinery: it is
on by itself when ``opentelemetry-api`` is loaded and a tracer or meter provider is set
(``MCP_LITE_OTEL=0`` turns it off); see ``mcp_lite._otel``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, RpcError

if TYPE_CHECKING:
    from ._connection import Connection, _Call, _Waiter
    from ._otel import Tracing

__all__ = ["KINDS", "Event", "EventHook", "Observer", "normalize_hooks"]

log = logging.getLogger("mcp_lite.events")

KINDS = ("request", "response", "notification", "reconnect", "error")


@dataclass(frozen=True)
class Event:
    """One thing that happened on a connection (see the module docstring for the kinds)."""

    kind: str
    server: str
    method: str | None = None
    request_id: int | str | None = None
    params: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    duration: float | None = None


EventHook = Callable[[Event], Any]
Hooks = dict[str, tuple[EventHook, ...]]


def normalize_hooks(hooks: Mapping[str, Iterable[EventHook] | EventHook] | None) -> Hooks:
    """Check ``event_hooks=`` and return ``{kind: (fn, ...)}`` without the empty kinds.

    Raises:
        ConfigError: an unknown kind, or a hook that is not callable.
    """
    out: Hooks = {}
    for kind, fns in (hooks or {}).items():
        if kind not in KINDS:
            raise ConfigError(f"event_hooks: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        listed = (fns,) if callable(fns) else tuple(fns)
        for fn in listed:
            if not callable(fn):
                raise ConfigError(f"event_hooks[{kind!r}]: {fn!r} is not callable")
        if listed:
            out[kind] = listed
    return out


def emit(hooks: Hooks, event: Event) -> None:
    """Call every hook of ``event.kind``; a hook that raises is logged, never propagated."""
    for fn in hooks.get(event.kind, ()):
        try:
            fn(event)
        except Exception:
            log.exception("%s event hook %r raised", event.kind, getattr(fn, "__name__", fn))


def tracing_wanted() -> bool:
    """True when OpenTelemetry is loaded in this process and not turned off. Costs a dict
    look-up: ``opentelemetry`` is never imported here, only found when the app loaded it."""
    if "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        return False
    return os.environ.get("MCP_LITE_OTEL", "1").strip().lower() not in ("0", "false", "no", "off")


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

    def sent(self, conn: Connection, call: _Call, params: dict[str, Any] | None) -> Any:
        """Before a request goes out (each input round too): returns the params to send."""
        state: _CallState | None = call.trace
        if state is None:
            span = None
            if self.tracing is not None:
                try:
                    span = self.tracing.start(conn, call)
                except Exception:  # telemetry never breaks a call
                    log.exception("could not start the span of %s", call.method)
            state = _CallState(call.method, call.request_id, span)
            call.trace = state
            call.future.add_done_callback(lambda f: self._finished(conn, state, f))
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

    def lost(self, conn: Connection, error: BaseException) -> None:
        """The transport died under the connection (not a close() by the client)."""
        self.ended(conn, error)
        if "error" in self.hooks:
            emit(self.hooks, Event("error", self.server, error=error))

    def ended(self, conn: Connection, error: BaseException | None) -> None:
        if self.tracing is not None:
            try:
                self.tracing.session_ended(conn, time.monotonic() - self.opened, error)
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

    def _finished(self, conn: Connection, state: _CallState, future: Future[Any] | _Waiter) -> None:
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
                self.tracing.finish(conn, state.span, state.method, duration, result, error)
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
    tracing = None
    if tracing_wanted():
        from ._otel import Tracing

        tracing = Tracing.create(server, target)
    if not hooks and tracing is None:
        return None
    return Observer(server, hooks, tracing)


def emit_reconnect(hooks: Hooks, server: str, why: BaseException | None) -> None:
    """The Hub's reconnect event (its Clients do not reconnect by themselves)."""
    if "reconnect" in hooks:
        emit(hooks, Event("reconnect", server, error=why))
