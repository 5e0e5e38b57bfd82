"""The acknowledgements of 2026-07-28 ``subscriptions/listen`` streams: a stream is open
only once the server's ``notifications/subscriptions/acknowledged`` naming it (by the listen
request's id) has come, so ``subscribe_resource`` waits for it on the caller's deadline and a
change made after it returns is never missed. The reader thread records each ack; the ack
may come before the caller knows its request's id, hence a short record, not a callback."""

from __future__ import annotations

import logging
import threading
from typing import Any

from .._connection.call import Submitted
from .._deadline import Deadline
from ..protocol import versions as pv

__all__ = ["ACKNOWLEDGED", "ListenAcks"]

log = logging.getLogger("mcp_lite.client")

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_KEPT = 8  # acks kept for a caller yet to look: one stream is open at a time, a few are late


class ListenAcks:
    """Acks by subscription id (the listen request's JSON-RPC id), the last ``_KEPT``."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._agreed: dict[Any, dict[str, Any]] = {}

    def record(self, params: dict[str, Any]) -> None:
        """An ack came (on the reader thread)."""
        meta = params.get("_meta")
        sid = meta.get(pv.META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if not isinstance(sid, (int, str)):
            log.debug("dropped a listen acknowledgement naming no subscription: %r", params)
            return
        agreed = params.get("notifications")
        with self._changed:
            while len(self._agreed) >= _KEPT:  # the bound holds before one more is kept
                del self._agreed[next(iter(self._agreed))]
            self._agreed[sid] = agreed if isinstance(agreed, dict) else {}
            self._changed.notify_all()

    def forget(self) -> None:
        """A new connection: ids start again, so an old stream's ack could pass for a new."""
        with self._changed:
            self._agreed.clear()

    def wait(self, listen: Submitted, wanted: list[str], deadline: Deadline, server: str) -> None:
        """Return once ``listen`` is acknowledged; raise the error that ended it first, or
        ``RequestTimeout`` when the caller's deadline came first (the stream stays open:
        a late ack still makes it work)."""
        listen.add_done_callback(lambda _: self._wake())
        sid = listen.request_id
        with self._changed:
            while sid not in self._agreed and not listen.done():
                left = deadline.remaining()
                if left <= 0:
                    raise deadline.error(
                        "subscribing",
                        f"MCP server {server!r} did not acknowledge subscriptions/listen",
                    )
                self._changed.wait(min(left, threading.TIMEOUT_MAX))
            agreed = self._agreed.pop(sid, None)
        if agreed is None:
            self._ended_unacknowledged(listen, server)
            return
        missing = sorted(set(wanted) - set(agreed.get("resourceSubscriptions") or ()))
        if missing:  # the server may agree to less; what it left out is told, not fatal
            log.warning(
                "MCP server %r did not agree to subscriptions to %s", server, ", ".join(missing)
            )

    def _ended_unacknowledged(self, listen: Submitted, server: str) -> None:
        if listen.cancelled():
            return  # replaced by a newer stream (another thread subscribed meanwhile)
        error = listen.exception()
        if error is not None:
            raise error
        # A result before any ack: the server closed the stream at once (spec: a graceful end).
        log.warning("MCP server %r ended the listen stream before acknowledging it", server)

    def _wake(self) -> None:
        with self._changed:
            self._changed.notify_all()
