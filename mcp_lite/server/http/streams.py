"""Where the small server's HTTP messages go: one ``Stream`` per POST response (or a
session's GET stream), and the ``Router`` that sends each outgoing message of a connection
to the stream of the request it belongs to. Queues are bounded: a client that stops reading
loses its own stream, never the others'."""

from __future__ import annotations

import queue
import threading
from typing import Any

from .._context import log

__all__ = ["END", "Router", "Stream"]

_QUEUE_BOUND = 4096
END = object()  # put on a stream to end it


class Stream:
    """Where the messages of some requests go: one POST's response, or a session's GET."""

    def __init__(self, keys: set[str]) -> None:
        self.pending = set(keys)  # requests whose final response has not been queued
        self.queue: queue.Queue[Any] = queue.Queue(_QUEUE_BOUND)
        self.broken = False

    def put(self, message: Any) -> None:
        try:
            self.queue.put_nowait(message)
        except queue.Full:  # the client stopped reading: end this stream, not the others
            self.broken = True
            log.warning("HTTP stream overflowed (client not reading); dropping it")


class _Nowhere(Stream):
    def put(self, message: Any) -> None:
        log.debug("a message for a request answered without a stream; dropped")


_NOWHERE = _Nowhere(set())


class Router:
    """Sends each outgoing message of one connection to the stream its request owns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[str, Stream] = {}
        self.standalone: Stream | None = None

    def send(self, message: Any, related: str | None) -> None:
        with self._lock:
            stream = self._streams.get(related) if related is not None else None
            if stream is None:
                stream = self.standalone
        if stream is None:
            log.debug("no HTTP stream for a message (related to %s); dropped", related)
            return
        stream.put(message)

    def attach(self, stream: Stream) -> bool:
        with self._lock:
            if any(k in self._streams for k in stream.pending):
                return False
            for k in stream.pending:
                self._streams[k] = stream
            return True

    def reserve(self, key: str) -> bool:
        """Hold ``key`` for a request answered on its handler thread (nothing is streamed
        to it: a message sent for it is dropped); False when the id is in progress."""
        with self._lock:
            if key in self._streams:
                return False
            self._streams[key] = _NOWHERE
            return True

    def detach(self, keys: set[str]) -> None:
        with self._lock:
            for k in keys:
                self._streams.pop(k, None)

    def end_all(self) -> None:
        with self._lock:
            streams = {*self._streams.values(), self.standalone}
        for s in streams:
            if s is not None:
                s.put(END)
