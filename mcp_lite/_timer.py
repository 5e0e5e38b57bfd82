"""The one process-wide timer that keeps every time limit (DESIGN §3: "deadlines kept by one
process-wide timer"): ``schedule(when, callback)`` runs ``callback()`` on the timer thread
once ``time.monotonic()`` reaches ``when``, ``handle.cancel()`` withdraws it. Callbacks run one
after the other and must be short (fail a call, shut a socket down, post work elsewhere); a
raising one is logged. How it stays cheap on the hot path, bounded and fork-safe:
``docs/explanation/inside-http.md`` ("The timer").
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable

from . import _fork

__all__ = ["Handle", "live", "schedule", "thread_name"]

log = logging.getLogger("mcp_lite")

thread_name = "mcp-lite-timer"
# The longest the thread sleeps: a cancel does not wake it, so it looks again this often to
# drop cancelled entries.
_LOOK_AGAIN = 0.2
# Seconds the thread stays with an empty heap before it ends (a process with no live time
# limit keeps no timer thread; a call made meanwhile does not pay for a new one).
_IDLE_EXIT = 0.4
# Below this many entries a compaction is not worth it (the thread drops them lazily).
_COMPACT_MIN = 64


class Handle:
    """One scheduled callback; ``cancel()`` withdraws it (a no-op once it ran)."""

    __slots__ = ("when", "_callback")

    def __init__(self, when: float, callback: Callable[[], object]) -> None:
        self.when = when
        self._callback: Callable[[], object] | None = callback

    def cancel(self) -> None:
        # No lock and no wake-up (a cancel is on every call's path): the entry keeps nothing
        # alive from now on, and leaves the heap when the thread next looks, or in a
        # compaction. A callback the thread already took may still run (as with any timer:
        # callbacks check their own state).
        self._callback = None

    @property
    def pending(self) -> bool:
        return self._callback is not None


class _Timer:
    def __init__(self) -> None:
        # ``with self._lock`` (C) rather than ``with self._cond`` (Python): it is on every
        # call's path; the condition shares the lock, to wait and notify.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, Handle]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._wake_at = -math.inf  # when the sleeping thread wakes (-inf: it is not asleep)
        self._compact_at = _COMPACT_MIN  # compact when the heap grows past this

    def schedule(self, when: float, callback: Callable[[], object]) -> Handle:
        handle = Handle(when, callback)
        with self._lock:
            heap = self._heap
            if len(heap) >= self._compact_at:
                heap[:] = [item for item in heap if item[2]._callback is not None]
                heapq.heapify(heap)
                self._compact_at = max(_COMPACT_MIN, 2 * len(heap))
            heapq.heappush(heap, (when, next(self._seq), handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name=thread_name)
                self._thread.start()
            elif when < self._wake_at:  # due before the thread would look again
                self._cond.notify()
        return handle

    def live(self) -> int:
        """How many callbacks are scheduled and not cancelled (for tests and stats)."""
        with self._lock:
            return sum(1 for item in self._heap if item[2]._callback is not None)

    def _reset_after_fork(self) -> None:
        # The parent's thread does not exist in a child, and its entries belong to the
        # parent's calls: start from nothing (the next schedule() starts a thread).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap = []
        self._thread = None
        self._wake_at = -math.inf
        self._compact_at = _COMPACT_MIN

    def _run(self) -> None:
        while True:
            due: list[Callable[[], object]] = []
            with self._lock:
                heap = self._heap
                now = time.monotonic()
                while heap and (heap[0][2]._callback is None or heap[0][0] <= now):
                    handle = heapq.heappop(heap)[2]
                    callback = handle._callback
                    if callback is not None:
                        handle._callback = None
                        due.append(callback)
                if not due:
                    if not heap:
                        self._wake_at = now + _IDLE_EXIT
                        self._cond.wait(_IDLE_EXIT)
                        self._wake_at = -math.inf
                        if not self._heap:  # the next schedule() starts a new thread
                            self._thread = None
                            return
                        continue
                    wait = min(max(heap[0][0] - now, 0.001), _LOOK_AGAIN)
                    self._wake_at = now + wait
                    self._cond.wait(wait)
                    self._wake_at = -math.inf
                    continue
            for callback in due:
                try:
                    callback()
                except Exception:  # one broken callback must not stop every deadline
                    log.exception("mcp_lite: a timer callback failed: %r", callback)


_timer = _Timer()
_fork.on_child(_timer._reset_after_fork)


def schedule(when: float, callback: Callable[[], object]) -> Handle:
    """Run ``callback()`` on the timer thread at ``when`` (``time.monotonic()``); it must be
    short and never block."""
    return _timer.schedule(when, callback)


def live() -> int:
    """How many callbacks are scheduled and not cancelled."""
    return _timer.live()
