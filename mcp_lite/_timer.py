"""The one process-wide timer that keeps deadlines: ``schedule(when, callback)`` runs a short,
non-blocking callback on the ``mcp-lite-timer`` thread, which starts on demand, ends when idle
and starts empty after ``fork()`` (see docs/explanation/architecture.md, "Threads").
Standard library only.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from . import _fork

__all__ = ["Handle", "live", "schedule", "thread_name"]

log = logging.getLogger("mcp_lite")

thread_name = "mcp-lite-timer"
# Seconds the thread stays with nothing scheduled before it ends.
_IDLE_EXIT = 1.0
# Below this many entries a compaction is not worth it (lazy dropping suffices).
_COMPACT_MIN = 16


class Handle:
    """One scheduled callback; ``cancel()`` withdraws it (a no-op once it ran)."""

    __slots__ = ("when", "_callback", "_timer", "_epoch")

    def __init__(self, when: float, callback: Callable[[], object], timer: _Timer) -> None:
        self.when = when
        self._callback: Callable[[], object] | None = callback
        self._timer = timer
        self._epoch = timer.epoch

    def cancel(self) -> None:
        self._timer.cancel(self)

    @property
    def pending(self) -> bool:
        return self._callback is not None


class _Timer:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Handle]] = []
        self._seq = itertools.count()
        self._cancelled = 0  # cancelled entries still in the heap
        self._thread: threading.Thread | None = None
        self.epoch = 0  # a new one after fork: the parent's handles are no longer in the heap

    def schedule(self, when: float, callback: Callable[[], object]) -> Handle:
        handle = Handle(when, callback, self)
        with self._cond:
            handle._epoch = self.epoch
            heap = self._heap
            first = not heap or when < heap[0][0]
            heapq.heappush(heap, (when, next(self._seq), handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name=thread_name)
                self._thread.start()
            elif first:
                self._cond.notify()
        return handle

    def cancel(self, handle: Handle) -> None:
        with self._cond:
            if handle._callback is None:
                return  # already ran or cancelled
            handle._callback = None  # the entry keeps nothing alive from now on
            if handle._epoch != self.epoch:
                return  # scheduled before a fork: not in this heap
            self._cancelled += 1
            heap = self._heap
            if self._cancelled * 2 > len(heap) and len(heap) >= _COMPACT_MIN:
                heap[:] = [item for item in heap if item[2]._callback is not None]
                heapq.heapify(heap)
                self._cancelled = 0
                self._cond.notify()  # the first entry may have gone
            elif heap and heap[0][2] is handle:
                self._cond.notify()  # the thread waits for it: let it look again (or end)

    def live(self) -> int:
        """How many callbacks are scheduled and not cancelled (for tests and stats)."""
        with self._cond:
            return len(self._heap) - self._cancelled

    def _reset_after_fork(self) -> None:
        # The parent's thread does not exist in a child, and its entries belong to the
        # parent's calls: start from nothing (the next schedule() starts a thread).
        self._cond = threading.Condition(threading.Lock())
        self._heap = []
        self._cancelled = 0
        self._thread = None
        self.epoch += 1

    def _run(self) -> None:
        while True:
            due: list[Callable[[], object]] = []
            with self._cond:
                heap = self._heap
                now = time.monotonic()
                while heap and (heap[0][2]._callback is None or heap[0][0] <= now):
                    handle = heapq.heappop(heap)[2]
                    callback = handle._callback
                    if callback is None:
                        self._cancelled -= 1
                        continue
                    handle._callback = None
                    due.append(callback)
                if not due:
                    if not heap:
                        self._cond.wait(_IDLE_EXIT)
                        if not self._heap:
                            self._thread = None
                            return
                        continue
                    self._cond.wait(min(max(heap[0][0] - now, 0.001), 3600.0))
                    continue
            for callback in due:
                try:
                    callback()
                except Exception:  # one broken callback must not stop every deadline
                    log.exception("mcp_lite: a timer callback failed: %r", callback)


_timer = _Timer()
_fork.on_child(_timer._reset_after_fork)


def schedule(when: float, callback: Callable[[], object]) -> Handle:
    """Run ``callback()`` on the timer thread at ``when`` (``time.monotonic()``); see the
    module docstring for what a callback may do."""
    return _timer.schedule(when, callback)


def live() -> int:
    """How many callbacks are scheduled and not cancelled."""
    return _timer.live()
