"""The one after-fork registry: every module that keeps process-global state registers a quick,
non-blocking reset here (``on_child``), run in the child before any user code (see
docs/explanation/architecture.md, "One reset at fork"). Standard library only.
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
