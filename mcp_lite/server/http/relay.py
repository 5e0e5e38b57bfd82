"""``Relay``: the messages that go out before the response of a request answered on its HTTP
handler thread (the gateway's progress). The first one turns the response into an SSE
stream (its head goes out with it); each is written at once from the thread that relays it,
without blocking that thread (the upstream reader): what the socket does not take at once
waits, bounded, and goes out with the response. A client that stops reading past the bound,
or has gone, breaks the relay and its ``cancel`` is set (the request is withdrawn)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from .._context import log

__all__ = ["Relay"]

_NOSIGNAL: int = getattr(socket, "MSG_NOSIGNAL", 0)
MAX_PENDING = 1024 * 1024  # bytes waiting for a client that does not read
KEEPALIVE_S = 15.0  # an SSE stream silent this long gets a comment (as the streamed path)


class Relay:
    """Call it with each message (any thread); ``finish`` ends it (the handler's thread)."""

    def __init__(
        self,
        sock: socket.socket,
        head: Callable[[], bytes],
        chunked: bool,
        cancel: threading.Event,
    ) -> None:
        self._sock = sock
        self._out: socket.socket | None = None  # a non-blocking twin, made on first write
        # a socket with a timeout is non-blocking underneath (its twin shares that flag):
        # one without waits in pending for the response's write (never made non-blocking)
        self._direct = sock.gettimeout() is not None
        self._head = head
        self._chunked = chunked
        self._cancel = cancel
        self._lock = threading.Lock()
        self._pending = bytearray()
        self.started = False  # the SSE head has gone out (or waits in pending)
        self.broken = False
        self._done = False
        self._written = 0.0  # when the stream last had something written

    def frame(self, message: Any) -> bytes:
        data = b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"
        return self._chunk(data)

    def _chunk(self, data: bytes) -> bytes:
        return b"%x\r\n%s\r\n" % (len(data), data) if self._chunked else data

    def keepalive(self, now: float) -> None:
        """A comment on a started stream silent for ``KEEPALIVE_S`` (``HangupWatch``)."""
        if self.started and not self._done and now - self._written >= KEEPALIVE_S:
            self._write(self._chunk(b":\n\n"), start=False)

    def __call__(self, message: Any) -> None:
        self._write(self.frame(message), start=True)

    def _write(self, data: bytes, start: bool) -> None:
        with self._lock:
            if self._done or self.broken or not (start or self.started):
                return
            self._written = time.monotonic()
            if not self.started:
                data, self.started = self._head() + data, True
            if self._pending or not self._direct:
                if len(self._pending) + len(data) > MAX_PENDING:
                    self._break("the HTTP client stopped reading; its request is withdrawn")
                    return
                self._pending += data
                return
            try:
                if self._out is None:
                    # A twin of the socket (dup) with timeout 0: its send never waits
                    # (the handler's socket, with a timeout, polls first) and, with
                    # MSG_NOSIGNAL, a client gone is an error here, never a SIGPIPE.
                    self._out = socket.socket(fileno=os.dup(self._sock.fileno()))
                    self._out.setblocking(False)
                n = self._out.send(data, _NOSIGNAL)
            except BlockingIOError:
                n = 0
            except OSError:
                self._break("the HTTP client went away; its request is withdrawn")
                return
            if n < len(data):
                self._pending += data[n:]

    def _break(self, why: str) -> None:
        self.broken = True
        self._cancel.set()
        log.debug("HTTP relay: %s", why)

    def finish(self) -> bytes:
        """No more relaying; what is still to be written before the response."""
        with self._lock:
            self._done = True
            pending, self._pending = bytes(self._pending), bytearray()
            out, self._out = self._out, None
        if out is not None:
            out.close()  # (the twin only: the handler's socket stays open)
        return pending
