"""One deadline per public operation, made at the API boundary and passed down: a blocking
public call turns its ``timeout`` into one ``Deadline`` and hands that same object to every
step it causes, which may only ask for less (``bound``, ``earlier``); when time runs out the
error names the phase (``"connecting: initialize got no answer within the 2 s timeout"``).
Standard library only: every layer may use it.
"""

from __future__ import annotations

import math
import time

from .errors import RequestTimeout

__all__ = ["Deadline"]


class Deadline:
    """An absolute moment (``time.monotonic()``) and the timeout it was made from.

    ``Deadline.after(None)`` is "no deadline" (``at`` is ``inf``): used only where the user asked
    for none; every default in mcp_lite is finite.
    """

    __slots__ = ("at", "timeout")

    def __init__(self, at: float, timeout: float) -> None:
        self.at = at
        self.timeout = timeout

    @classmethod
    def after(cls, timeout: float | None) -> Deadline:
        """The deadline ``timeout`` seconds from now (``None`` or ``inf``: none)."""
        if timeout is None or math.isinf(timeout):
            return cls(math.inf, math.inf)
        return cls(time.monotonic() + timeout, float(timeout))

    @classmethod
    def of(cls, deadline: Deadline | None, timeout: float | None) -> Deadline:
        """The caller's deadline when there is one, else a new one from ``timeout``."""
        return deadline if deadline is not None else cls.after(timeout)

    def remaining(self) -> float:
        """Seconds left, never negative (``inf`` when there is no deadline)."""
        left = self.at - time.monotonic()
        return left if left > 0.0 else 0.0

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def bound(self, seconds: float | None) -> float:
        """A step's own cap, never past what is left: ``min(seconds, remaining())``."""
        left = self.remaining()
        return left if seconds is None or seconds > left else seconds

    def earlier(self, seconds: float | None) -> Deadline:
        """This deadline, or ``seconds`` from now when that comes first (same ``timeout``)."""
        if seconds is None:
            return self
        at = time.monotonic() + seconds
        return self if self.at <= at else Deadline(at, self.timeout)

    def error(self, phase: str, what: str = "got no answer") -> RequestTimeout:
        """The timeout error naming the phase, e.g. ``connecting: initialize got no answer
        within the 2 s timeout``."""
        return RequestTimeout(f"{phase}: {what} within the {self.describe()}", self.timeout)

    def check(self, phase: str, what: str = "did not finish") -> None:
        """Raise ``error(phase, what)`` when the deadline has passed."""
        if time.monotonic() >= self.at:
            raise self.error(phase, what)

    def describe(self) -> str:
        return "no timeout" if math.isinf(self.timeout) else f"{self.timeout:g} s timeout"

    def __repr__(self) -> str:
        return f"Deadline({self.remaining():.3f} s left of {self.describe()})"
