"""The gateway's failed starts, kept for the downstream connection whose request made them, for
``KEEP`` seconds at most and never handed to another connection. The record is thread-local (see
docs/explanation/inside-the-hub.md)."""

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
