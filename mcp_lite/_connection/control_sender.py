"""``ControlSender``: one lazily started thread that writes a connection's own messages
(``notifications/cancelled``, overload refusals), so that neither the timer nor the reader
thread ever blocks in a write. The thread ends after ``_IDLE_EXIT`` with nothing queued and
starts again on the next post; its queue is bounded, and past it messages are dropped and
counted (all of them are advisory or answer a flood).
"""

from __future__ import annotations

import collections
import logging
import threading
import weakref
from collections.abc import Callable

from .. import _fork

__all__ = ["ControlSender"]

log = logging.getLogger("mcp_lite.client")

# Seconds the control thread waits with nothing queued before it ends.
_IDLE_EXIT = 1.0


class ControlSender:
    """One daemon thread, started on demand and ended when idle, running small send
    actions in order."""

    def __init__(self, name: str, limit: int = 256) -> None:
        self.name = name
        self.limit = limit
        self.dropped = 0
        self._queue: collections.deque[Callable[[], None]] = collections.deque()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        _SENDERS.add(self)

    def post(self, action: Callable[[], None]) -> bool:
        """Queue ``action``; False when stopped or full (then it is dropped and counted)."""
        with self._cond:
            if self._stopped:
                return False
            if len(self._queue) >= self.limit:
                self.dropped += 1
                return False
            self._queue.append(action)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name=f"mcp-lite-control[{self.name}]"
                )
                self._thread.start()
            self._cond.notify()
        return True

    def stop(self, timeout: float = 0.0) -> None:
        """Drop what is queued and end the thread (joined up to ``timeout``)."""
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread() and timeout > 0:
            thread.join(timeout)

    def _reset_after_fork(self) -> None:
        # The parent's thread does not exist in a child; what was queued was the parent's.
        self._cond = threading.Condition()
        self._queue.clear()
        self._thread = None

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue and not self._stopped:
                    self._cond.wait(_IDLE_EXIT)
                if self._stopped or not self._queue:
                    if self._thread is threading.current_thread():
                        self._thread = None  # the next post() starts a new one
                    return
                action = self._queue.popleft()
            try:
                action()
            except Exception:
                log.debug("control message to %r not sent", self.name, exc_info=True)


# Every sender, for the after-fork reset (weak: a sender ends with its connection).
_SENDERS: weakref.WeakSet[ControlSender] = weakref.WeakSet()


@_fork.on_child
def _reset_senders_after_fork() -> None:
    for sender in list(_SENDERS):
        sender._reset_after_fork()
