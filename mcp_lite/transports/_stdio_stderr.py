"""A stdio server's stderr, from chunks to lines: each is logged and kept in the tail that
errors quote, cut at ``_STDERR_LINE_MAX`` bytes, so a server that writes megabytes without a
newline costs neither memory nor a system call per byte."""

from __future__ import annotations

import collections
import threading
from typing import Protocol

__all__ = ["_StderrLines"]

# One stderr line is kept up to this many bytes; the rest of it is dropped (and counted).
_STDERR_LINE_MAX = 8 * 1024


class _Owner(Protocol):
    """What ``_StderrLines`` needs of its transport."""

    _stderr_ended: threading.Event
    _stderr_tail: collections.deque[str]

    def _stderr_line(self, raw: bytes | bytearray, dropped: int, shown: bool) -> None: ...


class _StderrLines:
    """Stderr in chunks to lines: each is logged and kept in the tail, cut at
    ``_STDERR_LINE_MAX`` bytes (the rest of it is dropped and counted), so a server that
    writes megabytes without a newline costs neither memory nor a syscall per byte.

    A line not ended yet is in the tail too, as read so far: a server that dies while a
    child holds its stderr open, its reason unterminated, is quoted by the error at once."""

    def __init__(self, transport: _Owner) -> None:
        self._transport = transport
        self._line = bytearray()
        self._dropped = 0
        self._shown = False  # the tail's last entry is this unfinished line

    def feed(self, chunk: bytes) -> None:
        line = self._line
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            room = _STDERR_LINE_MAX - len(line)
            line += piece[:room]
            self._ended(self._dropped + max(0, len(piece) - room))
        room = _STDERR_LINE_MAX - len(line)
        kept = rest[:room]
        line += kept
        self._dropped += len(rest) - len(kept)
        if kept:  # it grew (past the cap it does not: no cost per chunk then)
            self._show()

    def end(self) -> None:
        if self._line or self._dropped:
            self._ended(self._dropped)
        self._transport._stderr_ended.set()

    def _ended(self, dropped: int) -> None:
        self._transport._stderr_line(self._line, dropped, self._shown)
        self._line.clear()
        self._dropped = 0
        self._shown = False

    def _show(self) -> None:
        text = self._line.decode("utf-8", "replace").rstrip()
        tail = self._transport._stderr_tail
        if self._shown:
            tail[-1] = text
        elif text:
            tail.append(text)
            self._shown = True
