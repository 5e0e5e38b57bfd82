"""The client connections the small HTTP server holds: a bounded number of slots, which connection
gives its slot up when a new client needs one, and the bound on request bodies held at once
(``MAX_BODIES``); see docs/explanation/server.md."""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from collections import Counter
from typing import Any

__all__ = ["Slot", "Slots", "peer_of"]

READ_TIMEOUT_S = 30.0  # a request's head and body, from its first byte
IDLE_TIMEOUT_S = 120.0  # a kept-alive connection with no next request
GRACE_S = 1.0  # reading one request longer than this: evictable for a fairer peer
EVICT_WAIT_S = 1.0  # how long a newcomer waits for the slot an eviction frees
RETRY_AFTER_S = 1  # what a refused newcomer is told to wait
MAX_BODIES = 256 * 1024 * 1024  # request bodies held at once, every connection together
_SO_PEERCRED = getattr(socket, "SO_PEERCRED", None)
_READING, _BUSY, _IDLE = "reading", "busy", "idle"


def peer_of(sock: socket.socket, address: Any) -> Any:
    """Who holds ``sock``: the process id behind a Unix socket (its uid when no pid is
    known), else the client's address (TCP)."""
    if sock.family == getattr(socket, "AF_UNIX", None) and _SO_PEERCRED is not None:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _ = struct.unpack("3i", raw)
            return ("pid", pid) if pid > 0 else ("uid", uid)
        except OSError:
            return ("unix", None)
    if isinstance(address, tuple) and address:
        return ("addr", address[0])
    return ("unix", None)


class Slot:
    """One connection's slot: its peer and state (see the module docstring)."""

    __slots__ = ("sock", "peer", "state", "since", "ended")

    def __init__(self, sock: socket.socket, peer: Any) -> None:
        self.sock = sock
        self.peer = peer
        self.state = _READING
        self.since = time.monotonic()
        self.ended = False  # told to end (evicted, or its request read timed out)


class Slots:
    """The slots of one HTTP server (thread-safe)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._cond = threading.Condition()
        self._held: dict[int, Slot] = {}  # by id(sock)
        self._peers: Counter[Any] = Counter()
        self._bodies = 0  # bytes of request bodies reserved (``hold_body``)

    def __len__(self) -> int:
        return len(self._held)

    def admit(self, sock: socket.socket, peer: Any) -> Slot | None:
        """A slot for ``sock`` (on the accepting thread), freeing one when all are taken
        and waiting for it at most ``EVICT_WAIT_S``; None: refuse it (busy)."""
        with self._cond:
            if len(self._held) >= self.limit:
                victim = self._victim(peer)
                if victim is None:
                    return None
                _end(victim)
                if not self._cond.wait_for(lambda: len(self._held) < self.limit, EVICT_WAIT_S):
                    return None
            slot = Slot(sock, peer)
            self._held[id(sock)] = slot
            self._peers[peer] += 1
            return slot

    def release(self, slot: Slot) -> None:
        with self._cond:
            if self._held.pop(id(slot.sock), None) is slot:
                self._peers[slot.peer] -= 1
                if self._peers[slot.peer] <= 0:
                    del self._peers[slot.peer]
            self._cond.notify_all()

    def hold_body(self, size: int) -> bool:
        """Reserve ``size`` bytes for a request body about to be read; False when the
        bodies held now leave no room (the request is refused unread)."""
        with self._cond:
            if self._bodies and self._bodies + size > MAX_BODIES:
                return False
            self._bodies += size
            return True

    def release_body(self, size: int) -> None:
        with self._cond:
            self._bodies -= size

    def of(self, sock: socket.socket) -> Slot | None:
        return self._held.get(id(sock))

    def _victim(self, newcomer: Any) -> Slot | None:
        """The slot to free for a connection of ``newcomer`` (see the module docstring)."""
        peers = self._peers
        idle = [s for s in self._held.values() if s.state == _IDLE and not s.ended]
        if idle:
            return max(idle, key=lambda s: (peers[s.peer], -s.since))
        share = self.limit / (len(peers) + (newcomer not in peers))
        if peers[newcomer] >= share:
            return None
        now = time.monotonic()
        stalled = [
            s
            for s in self._held.values()
            if s.state == _READING
            and not s.ended
            and now - s.since > GRACE_S
            and peers[s.peer] > share
        ]
        if not stalled:
            return None
        return max(stalled, key=lambda s: (peers[s.peer], -s.since))

    # --- on the connection's own thread ------------------------------------------------

    def wait_request(self, slot: Slot) -> bool:
        """Between two requests: idle until the next one begins. True when it did (its
        read deadline starts); False when the connection is to end (evicted, idle past
        ``IDLE_TIMEOUT_S``, the peer left or the server closed it)."""
        with self._cond:
            if slot.ended:
                return False
            slot.state, slot.since = _IDLE, time.monotonic()
        try:
            poller = select.poll()
            poller.register(slot.sock.fileno(), select.POLLIN | select.POLLPRI)
            ready = bool(poller.poll(int(IDLE_TIMEOUT_S * 1000)))
        except (OSError, ValueError):
            ready = False
        with self._cond:
            if slot.ended or not ready:
                slot.ended = True
                return False
            slot.state, slot.since = _READING, time.monotonic()
            return True

    def busy(self, slot: Slot | None) -> None:
        """``slot``'s request is read whole: it is being answered (never evicted)."""
        if slot is not None:
            slot.state = _BUSY

    def sweep(self) -> None:
        """End the connections whose request has been read for longer than
        ``READ_TIMEOUT_S`` (the server's loop calls it a few times a second)."""
        now = time.monotonic()
        with self._cond:
            late = [
                s
                for s in self._held.values()
                if s.state == _READING and not s.ended and now - s.since > READ_TIMEOUT_S
            ]
            for slot in late:
                _end(slot)


def _end(slot: Slot) -> None:
    """Tell ``slot``'s thread to end its connection: its wait or read wakes (the caller
    holds the lock)."""
    slot.ended = True
    with contextlib.suppress(OSError):
        slot.sock.shutdown(socket.SHUT_RD)
