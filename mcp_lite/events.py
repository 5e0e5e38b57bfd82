"""Event hooks, in the spirit of httpx's: a mapping from an event kind (``request``,
``response``, ``notification``, ``reconnect``, ``error``) to plain functions called inline with
one ``Event``, so a caller sees what a ``Client`` or ``Hub`` sends and receives without
OpenTelemetry (see docs/guides/observability.md). This module is only the public hook API.
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
