"""The in-process transport: a linked pair between a ``Client`` and a ``mcp_lite.Server``, no
subprocess and no socket, messages crossing as encoded JSON and the server's delivered in order
on one reader thread, as with stdio.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any

from .._accel import decode_message, encode_message
from .._deadline import Deadline
from ..errors import ConnectionClosed
from .base import OnClose, OnMessage, Outgoing, TransportBase

if TYPE_CHECKING:
    from ..server import Server

__all__ = ["InProcessTransport"]

_STOP = object()


class InProcessTransport(TransportBase):
    """Connects to ``server`` inside this process. See the module docstring."""

    def __init__(self, server: Server, *, name: str = "") -> None:
        self.server = server
        self.name = name or getattr(server, "name", "in-process")
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._connection: Any = None
        self._reader: threading.Thread | None = None
        self._closed = False

    def start(
        self, on_message: OnMessage, on_close: OnClose, *, deadline: Deadline | None = None
    ) -> None:
        self._connection = self.server.open_connection(self._from_server)
        self._reader = threading.Thread(
            target=self._read,
            args=(on_message,),
            daemon=True,
            name=f"mcp-lite-inprocess-reader[{self.name}]",
        )
        self._reader.start()

    def _from_server(self, message: dict[str, Any]) -> None:
        if not self._closed:
            self._queue.put(encode_message(message))

    def _read(self, on_message: OnMessage) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            on_message(item)

    def send(self, message: Outgoing) -> None:
        if self._closed or self._connection is None:
            raise ConnectionClosed(f"in-process server {self.name!r} connection is closed")
        self._connection.receive(decode_message(message.data))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._connection is not None:
            self._connection.close()
        self._queue.put(_STOP)
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(1.0)
