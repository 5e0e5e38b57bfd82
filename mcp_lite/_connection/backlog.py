"""``Backlog``: a counter with a ceiling for the work a connection queues for its threads
(notifications to deliver, server requests to answer). Past its limit it refuses, counts the
refusal and logs one warning per overload episode (an episode ends when the queue has
drained to half the limit).
"""

from __future__ import annotations

import logging
import threading

__all__ = ["Backlog"]

log = logging.getLogger("mcp_lite.client")


class Backlog:
    """A counter with a ceiling; see the module docstring. Thread-safe."""

    def __init__(self, what: str, limit: int, name: str) -> None:
        self.what = what
        self.limit = limit
        self.name = name
        self.queued = 0
        self.dropped = 0
        self._overloaded = False
        self._lock = threading.Lock()

    def enter(self) -> bool:
        """Admit one item (True), or refuse it past the limit (False, counted)."""
        with self._lock:
            if self.queued < self.limit:
                self.queued += 1
                return True
            self.dropped += 1
            first = not self._overloaded
            self._overloaded = True
        if first:
            log.warning(
                "MCP server %r floods the client: more than %d %s waiting; shedding the "
                "excess until the backlog drains (dropped so far: %d)",
                self.name,
                self.limit,
                self.what,
                self.dropped,
            )
        return False

    def leave(self) -> None:
        """One admitted item is done."""
        with self._lock:
            self.queued -= 1
            if self._overloaded and self.queued <= self.limit // 2:
                self._overloaded = False
                log.info(
                    "MCP server %r: %s backlog drained (%d dropped in total)",
                    self.name,
                    self.what,
                    self.dropped,
                )
