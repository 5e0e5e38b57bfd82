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
(``MCP_LITE_OTEL=0`` turns it off); see ``mcp_lite._otel``. What feeds both from a
connection is ``mcp_lite._observer``; this module is only the public hook API.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

__all__ = ["KINDS", "Event", "EventHook", "normalize_hooks"]

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


def emit_reconnect(hooks: Hooks, server: str, why: BaseException | None) -> None:
    """The Hub's reconnect event (its Clients do not reconnect by themselves)."""
    if "reconnect" in hooks:
        emit(hooks, Event("reconnect", server, error=why))
