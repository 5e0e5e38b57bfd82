"""A small bounded pool of daemon worker threads that start on demand, leave when idle and reset
after ``fork()``, so a settled connection keeps no worker thread (see
docs/explanation/architecture.md, "Threads"). Standard library only.
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from . import _fork

__all__ = ["IDLE_EXIT", "Workers"]

log = logging.getLogger("mcp_lite")

# Seconds an idle worker waits for a task before it ends (starting one again costs ~0.1 ms).
IDLE_EXIT = 1.0

# Every pool, for the after-fork reset (weak: a pool ends with its transport).
_ALL_WORKERS: weakref.WeakSet[Workers] = weakref.WeakSet()


@_fork.on_child
def _reset_workers_after_fork() -> None:
    for workers in list(_ALL_WORKERS):
        workers._reset_after_fork()


class Workers:
    """Daemon worker threads, started on demand up to ``limit``; idle ones leave after a
    while. ``shutdown()`` drops what is queued and lets the workers end; ``on_drained`` runs
    once the last worker has left after a shutdown."""

    def __init__(self, name: str, limit: int, idle: float = IDLE_EXIT) -> None:
        self._name = name
        self._limit = limit
        self._idle_timeout = idle
        self._cond = threading.Condition()
        self._queue: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self._threads = 0
        self._idle = 0
        self._stopped = False
        self._on_drained: Callable[[], None] | None = None
        self._ids = itertools.count(1)
        _ALL_WORKERS.add(self)

    def _reset_after_fork(self) -> None:
        # A child has none of the parent's workers: counted as running (or idle), they
        # would keep submit() from starting any. What was queued was the parent's callers'.
        self._cond = threading.Condition()
        self._queue.clear()
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on a worker. Raises RuntimeError after ``shutdown()``."""
        with self._cond:
            if self._stopped:
                raise RuntimeError("workers shut down")
            self._queue.append((fn, args))
            if self._idle > len(self._queue) - 1:
                self._cond.notify()
                return
            if self._threads >= self._limit:
                return
            self._threads += 1
        thread = threading.Thread(
            target=self._loop, daemon=True, name=f"{self._name}_{next(self._ids)}"
        )
        thread.start()

    def shutdown(self, on_drained: Callable[[], None] | None = None) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._on_drained = on_drained
            self._cond.notify_all()
            drained = self._threads == 0
        if drained and on_drained is not None:
            on_drained()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._idle += 1
                    woke = self._cond.wait(self._idle_timeout)
                    self._idle -= 1
                    if not woke and not self._queue:
                        break
                if not self._queue:
                    self._threads -= 1
                    last = self._stopped and self._threads == 0
                    on_drained = self._on_drained if last else None
                    break
                fn, args = self._queue.popleft()
            try:
                fn(*args)
            except BaseException:  # a task must never take the worker down silently
                log.exception("mcp_lite: a worker task failed")
        if on_drained is not None:
            on_drained()
