"""The gateway's failed starts, kept for the downstream connection whose request made them.

The HTTP layer asks an endpoint for its era (which may start the server) on the thread that
reads one downstream connection's requests. A start that fails there is that connection's
answer: its request gets that very failure (a client's discover probe and the initialize
after it, on the same connection, both get it), for ``KEEP`` seconds at most. Any other
connection, or this one later, starts the server again (within its own deadline), so one
failed start is never handed to the requests of others. Thread-local: a connection's thread
takes its failures with it (nothing to bound).
"""

from __future__ import annotations

import threading
import time
from typing import Generic, TypeVar

__all__ = ["StartFailures"]

F = TypeVar("F")


class StartFailures(Generic[F]):
    """``put`` the current thread's failed start; ``get`` it (while fresh); ``pop`` it once."""

    KEEP = 10.0  # seconds: a probe and the initialize after it are one connect

    def __init__(self) -> None:
        self._local = threading.local()

    def put(self, failure: F) -> None:
        self._local.held = (failure, time.monotonic() + self.KEEP)

    def get(self) -> F | None:
        held: tuple[F, float] | None = getattr(self._local, "held", None)
        if held is None:
            return None
        if held[1] <= time.monotonic():
            self._local.held = None
            return None
        return held[0]

    def pop(self) -> F | None:
        failure = self.get()
        self._local.held = None
        return failure
