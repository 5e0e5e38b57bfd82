"""A scripted transport for client tests: a Python function plays the server.

``ScriptedTransport(answer)`` calls ``answer(message) -> list of frames`` for every message
the client sends; frames (dicts are encoded, bytes sent as is) reach the client through the
transport's own reader thread, as with a real transport. No subprocess, no socket.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest

from mcp_lite.client import Client
from mcp_lite.transports.base import OnClose, OnMessage, Outgoing, TransportBase


class Link:
    """Every transport a client made (a reconnect makes a new one); ``sent`` spans them all."""

    def __init__(self, factory: Callable[[], ScriptedTransport]) -> None:
        self.factory = factory
        self.transports: list[ScriptedTransport] = []

    def new(self, deadline: Any = None) -> ScriptedTransport:
        self.transports.append(self.factory())
        return self.transports[-1]

    @property
    def sent(self) -> list[dict[str, Any]]:
        return [m for t in self.transports for m in t.sent]

    def die(self, error: Exception) -> None:
        self.transports[-1].die(error)


LEGACY_INIT = {
    "protocolVersion": "2025-11-25",
    "serverInfo": {"name": "scripted", "version": "1"},
    "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
}


def legacy(answer: Callable[[dict[str, Any]], list[Any]]) -> Callable[[dict[str, Any]], list[Any]]:
    """Wrap ``answer`` with a handshake-era server's discover refusal and initialize."""

    def wrapped(message: dict[str, Any]) -> list[Any]:
        method = message.get("method")
        if method == "server/discover":
            return [
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            ]
        if method == "initialize":
            return [{"jsonrpc": "2.0", "id": message["id"], "result": LEGACY_INIT}]
        if method == "notifications/initialized":
            return []
        return answer(message)

    return wrapped


class ScriptedTransport(TransportBase):
    def __init__(self, answer: Callable[[dict[str, Any]], list[Any]]) -> None:
        self.answer = answer
        self.sent: list[dict[str, Any]] = []
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._on_close: OnClose | None = None
        self.closed = False

    def start(self, on_message: OnMessage, on_close: OnClose, *, deadline: Any = None) -> None:
        self._on_close = on_close
        threading.Thread(target=self._read, args=(on_message,), daemon=True).start()

    def _read(self, on_message: OnMessage) -> None:
        while (item := self._queue.get()) is not None:
            on_message(item)

    def send(self, message: Outgoing) -> None:
        payload = json.loads(message.data)
        self.sent.append(payload)
        for frame in self.answer(payload):
            self.push(frame)

    def push(self, frame: Any) -> None:
        self._queue.put(
            frame if not isinstance(frame, (dict, list)) else json.dumps(frame).encode()
        )

    def die(self, error: Exception) -> None:
        assert self._on_close is not None
        self._on_close(error)  # type: ignore[arg-type]

    def close(self) -> None:
        self.closed = True
        self._queue.put(None)


@pytest.fixture
def scripted_client() -> Callable[..., tuple[Client, ScriptedTransport]]:
    """``scripted_client(answer, handshake=True, **options)`` -> (connected client, Link).

    With ``handshake`` the script is wrapped as a handshake-era server (discover refused,
    initialize answered); without, ``answer`` sees every message, ``server/discover`` too.
    """
    made: list[Client] = []

    def make(
        answer: Callable[[dict[str, Any]], list[Any]], *, handshake: bool = True, **options: Any
    ):
        script = legacy(answer) if handshake else answer
        link = Link(lambda: ScriptedTransport(script))
        client = Client("scripted", **options)
        client._make_transport = link.new  # type: ignore[method-assign]
        client.open()
        made.append(client)
        return client, link

    yield make
    for client in made:
        client.close()


@pytest.fixture(params=["2026-07-28", "2025-11-25", "2025-06-18"])
def era(request: pytest.FixtureRequest) -> str:
    """Run a test in the stateless era and in two handshake revisions."""
    return request.param


@pytest.fixture
def reply() -> Callable[[dict[str, Any], dict[str, Any]], list[dict[str, Any]]]:
    """``reply(message, result)`` -> the frames answering ``message`` with ``result``."""
    return lambda message, value: [{"jsonrpc": "2.0", "id": message["id"], "result": value}]
