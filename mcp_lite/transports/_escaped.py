"""A stdio server's descendants that left its process group (``setsid()``), so that ``close()``
stops them too: on Linux, a snapshot of the server's descendants through ``/proc``, each one
outside the group pinned with a pidfd and checked after the pin, killed once the group is
over. What stays out of reach: ``docs/explanation/inside-the-connection.md``.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["Escaped"]

_SUPPORTED = (
    sys.platform == "linux"
    and hasattr(os, "pidfd_open")
    and hasattr(signal, "pidfd_send_signal")
    and os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
)
# At most this many descendants are pinned (one fd each) per server.
_MAX_PINNED = 256


class Escaped:
    """The descendants of ``root`` outside process group ``pgid``, pinned by pidfds."""

    def __init__(self, root: int, pgid: int) -> None:
        self._pgid = pgid
        self._pinned: dict[int, int] = {}  # pid -> pidfd
        if _SUPPORTED:
            self._collect(root, -1)

    def __len__(self) -> int:
        return len(self._pinned)

    def kill(self) -> None:
        """SIGKILL every pinned descendant still alive, and the children they made since
        the snapshot; then let go of the pins."""
        for pid, pidfd in list(self._pinned.items()):
            self._collect(pid, pidfd)
        for pidfd in self._pinned.values():
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:  # gone (or not ours to signal)
                pass
        self.release()

    def release(self) -> None:
        pinned, self._pinned = self._pinned, {}
        for pidfd in pinned.values():
            os.close(pidfd)

    def _collect(self, top: int, top_fd: int) -> None:
        """Pin the descendants of ``top`` (``top_fd``: its pidfd; -1: our own unreaped
        child, which holds its number) that are outside the group; walk through the rest."""
        walk: list[tuple[int, int]] = [(top, top_fd)]
        through: list[int] = []  # pidfds of in-group descendants, held during the walk only
        try:
            while walk:
                parent, parent_fd = walk.pop()
                for child in _children(parent):
                    if child in self._pinned or len(self._pinned) >= _MAX_PINNED:
                        continue
                    try:
                        pidfd = os.pidfd_open(child)
                    except OSError:
                        continue
                    stat = _stat(child)
                    if stat is None or stat[0] != parent or not _alive(parent_fd):
                        os.close(pidfd)  # gone, or the number is another process's now
                        continue
                    if stat[1] == self._pgid:
                        through.append(pidfd)
                    else:
                        self._pinned[child] = pidfd
                    walk.append((child, pidfd))
        finally:
            for pidfd in through:
                os.close(pidfd)


def _alive(pidfd: int) -> bool:
    """The process behind ``pidfd`` has not been reaped (-1: our own child, not reaped)."""
    if pidfd < 0:
        return True
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(word) for word in f.read().split())
        except (OSError, ValueError):
            pass
    return found


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, pgid) of ``pid``, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None
