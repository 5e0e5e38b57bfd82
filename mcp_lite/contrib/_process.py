"""``ProcessHub``: one ``Hub`` per process, built on first use in this process (and again in a
forked child) and closed at exit or by ``close()``, so forking web and Celery workers each own
their Hub (see docs/explanation/integrations.md, "One Hub per process").
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import _fork

if TYPE_CHECKING:
    from ..hub import Hub

__all__ = ["ProcessHub"]

_live: weakref.WeakSet[ProcessHub] = weakref.WeakSet()


class ProcessHub:
    """``get()`` returns this process's Hub, made by ``factory()`` on first use. Thread-safe:
    concurrent first calls build one Hub."""

    def __init__(self, factory: Callable[[], Hub]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._hub: Hub | None = None
        self._pid = 0
        _live.add(self)

    def get(self) -> Hub:
        hub = self._hub
        if hub is not None and self._pid == os.getpid():
            return hub
        with self._lock:
            pid = os.getpid()
            if self._hub is None or self._pid != pid:
                # An inherited Hub belongs to the parent: its clients were already set aside
                # by the at-fork handlers; this process builds its own.
                self._hub = self._factory()
                self._pid = pid
            return self._hub

    @property
    def started(self) -> bool:
        """True when this process has built its Hub."""
        return self._hub is not None and self._pid == os.getpid()

    def close(self) -> None:
        """Close this process's Hub (its servers stop); the next ``get()`` builds a new one.
        Idempotent; a Hub inherited from a parent is never closed from the child."""
        with self._lock:
            hub, mine = self._hub, self._pid == os.getpid()
            self._hub = None
        if hub is not None and mine:
            hub.close()

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()  # another thread may have held it at fork time


def _after_fork() -> None:
    for process_hub in list(_live):
        process_hub._after_fork_in_child()


def _close_all() -> None:
    for process_hub in list(_live):
        process_hub.close()


_fork.on_child(_after_fork)
atexit.register(_close_all)
