"""One after-fork registry for every piece of process-global state.

A child made by ``os.fork()`` (gunicorn ``--preload``, Celery prefork, multiprocessing) inherits
memory but only the forking thread: a lock another thread held stays held, a watchdog thread
"exists" but never runs, a pool's workers are gone. Every module that keeps such state
registers one reset here, at import time, next to the state it resets::

    _fork.on_child(_reset_after_fork)

The resets run in the child, in registration order, before any user code after ``fork()``
returns. A reset must be quick and must not block: replace locks, forget threads and pools
(they start again lazily), mark inherited connections dead. A failing reset is logged and the
others still run. Standard library only: every layer may use it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

__all__ = ["generation", "on_child"]

log = logging.getLogger("mcp_lite")

_resets: list[Callable[[], None]] = []
_registry_lock = threading.Lock()
_generation = 0


def on_child(reset: Callable[[], None]) -> Callable[[], None]:
    """Run ``reset()`` in every child forked from now on. Returns ``reset`` (a decorator)."""
    with _registry_lock:
        _resets.append(reset)
    return reset


def generation() -> int:
    """How many forks this process descends from: changes in a child, cheap to compare."""
    return _generation


def _run_resets() -> None:
    global _generation, _registry_lock
    _generation += 1
    _registry_lock = threading.Lock()  # the parent may have been registering at fork time
    for reset in list(_resets):
        try:
            reset()
        except Exception:  # one broken reset must not leave the rest undone
            log.exception("mcp_lite: an after-fork reset failed: %r", reset)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_run_resets)
