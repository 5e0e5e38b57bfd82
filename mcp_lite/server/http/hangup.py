"""``HangupWatch``: one thread that tells a request answered on its HTTP handler thread that
its client hung up (``EPOLLRDHUP``), so the work it asked for can be withdrawn at once
without the handler thread polling its socket; it also keeps the SSE streams of those
requests alive (``Relay.keepalive``, looked at every few seconds). Linux only (``select.epoll``): elsewhere
``HangupWatch.available`` is False and requests take the streamed path, which polls."""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import Any

from .relay import KEEPALIVE_S, Relay

__all__ = ["HangupWatch"]

_EPOLL: Any = getattr(select, "epoll", None)
_RDHUP: int = getattr(select, "EPOLLRDHUP", 0)
_GONE = _RDHUP | getattr(select, "EPOLLHUP", 0) | getattr(select, "EPOLLERR", 0)
_ONESHOT: int = getattr(select, "EPOLLONESHOT", 0)


class HangupWatch:
    """Sets a connection's event when its peer hangs up, while the connection is watched."""

    available = _EPOLL is not None and bool(_RDHUP) and bool(_ONESHOT)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[socket.socket, threading.Event, Relay | None]] = {}
        self._epoll: Any = None
        self._wake: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(
        self, sock: socket.socket, event: threading.Event, relay: Relay | None = None
    ) -> bool:
        """Set ``event`` once ``sock``'s peer hangs up, and keep ``relay``'s stream alive
        (until ``unwatch``); False when the watch is closed or not available here (the
        caller then polls itself)."""
        with self._lock:
            if self._closed or not self.available:
                return False
            if self._epoll is None:
                self._start()
            fd = sock.fileno()
            self._watched[fd] = (sock, event, relay)
            self._epoll.register(fd, _RDHUP | _ONESHOT)
            return True

    def unwatch(self, sock: socket.socket) -> None:
        with self._lock:
            fd = sock.fileno()
            if self._watched.pop(fd, None) is not None and self._epoll is not None:
                try:
                    self._epoll.unregister(fd)
                except OSError:
                    pass

    def _start(self) -> None:
        self._epoll = _EPOLL()
        self._wake = os.pipe()
        self._epoll.register(self._wake[0], select.EPOLLIN)
        self._thread = threading.Thread(
            target=self._run, name="mcp-server-http-hangups", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        epoll, wake = self._epoll, self._wake
        assert wake is not None
        while True:
            try:
                ready = epoll.poll(KEEPALIVE_S / 3)
            except InterruptedError:  # (PEP 475 retries; kept for safety)
                continue
            except (OSError, ValueError):  # closed under us
                return
            if not ready:
                self._keepalives()
            for fd, _ in ready:
                if fd == wake[0]:
                    return
                with self._lock:
                    entry = self._watched.get(fd)
                    if entry is None:
                        continue
                    sock, event, _ = entry
                    # The fd may have been unwatched and reused since poll returned: ask
                    # the socket watched now, and arm it again when it has not hung up.
                    if _hung_up(sock):
                        event.set()
                    else:
                        try:
                            epoll.modify(fd, _RDHUP | _ONESHOT)
                        except OSError:
                            pass

    def _keepalives(self) -> None:
        with self._lock:
            relays = [r for _, _, r in self._watched.values() if r is not None]
        now = time.monotonic()
        for relay in relays:
            relay.keepalive(now)

    def close(self) -> None:
        """Stop the thread (bounded); every watch ends."""
        with self._lock:
            self._closed = True
            self._watched.clear()
            thread, wake, epoll = self._thread, self._wake, self._epoll
        if wake is not None:
            os.write(wake[1], b"x")
        if thread is not None:
            thread.join(timeout=2.0)
        if epoll is not None:
            epoll.close()
        if wake is not None:
            os.close(wake[0])
            os.close(wake[1])


def _hung_up(sock: socket.socket) -> bool:
    """The peer of ``sock`` has hung up, at this moment (a poll of that socket alone)."""
    try:
        p = select.poll()
        p.register(sock.fileno(), select.POLLRDHUP)
        return any(ev & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, ev in p.poll(0))
    except (OSError, ValueError):
        return True
