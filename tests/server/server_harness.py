"""A client-less harness for ``mcp_lite.Server``: drive a ``ServerConnection`` with dicts.

``Peer`` plays the client: ``request()`` sends one request and waits for its response,
keeping every other message (notifications, server → client requests) in ``inbox`` order.
"""

from __future__ import annotations

import itertools
import queue
import time
from typing import Any

import pytest

from mcp_lite.protocol import versions as pv
from mcp_lite.server import Server, ServerConnection

MODERN = pv.V2026_07_28


def modern_meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta = {
        pv.META_PROTOCOL_VERSION: MODERN,
        pv.META_CLIENT_CAPABILITIES: {} if caps is None else caps,
        pv.META_CLIENT_INFO: {"name": "test", "version": "0"},
    }
    meta.update(extra)
    return meta


class Peer:
    """The client side of one ``ServerConnection``."""

    def __init__(self, server: Server) -> None:
        self.queue: queue.Queue[Any] = queue.Queue()
        self.conn: ServerConnection = server.open_connection(self.queue.put)
        self.inbox: list[Any] = []
        self._ids = itertools.count(1)

    def send(self, message: Any) -> None:
        self.conn.receive(message)

    def next(self, timeout: float = 5.0) -> Any:
        """The next message, from the inbox first."""
        if self.inbox:
            return self.inbox.pop(0)
        return self.queue.get(timeout=timeout)

    def wait_for(self, pred: Any, timeout: float = 5.0) -> Any:
        """The first message matching ``pred`` (others stay in the inbox, in order)."""
        for i, msg in enumerate(self.inbox):
            if pred(msg):
                return self.inbox.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            msg = self.queue.get(timeout=max(deadline - time.monotonic(), 0.001))
            if pred(msg):
                return msg
            self.inbox.append(msg)

    def response(self, rid: Any, timeout: float = 5.0) -> dict[str, Any]:
        return self.wait_for(  # type: ignore[no-any-return]
            lambda m: isinstance(m, dict) and m.get("id") == rid and "method" not in m, timeout
        )

    def notification(self, method: str, timeout: float = 5.0) -> dict[str, Any]:
        return self.wait_for(  # type: ignore[no-any-return]
            lambda m: isinstance(m, dict) and m.get("method") == method and "id" not in m, timeout
        )

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        rid: Any = None,
        timeout: float = 5.0,
    ) -> dict[str, Any]:
        """Send a request and return its whole response message."""
        rid = next(self._ids) if rid is None else rid
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.response(rid, timeout)

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.request(method, params)
        assert "result" in response, response
        return response["result"]  # type: ignore[no-any-return]

    def modern(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        caps: dict[str, Any] | None = None,
        **meta: Any,
    ) -> dict[str, Any]:
        """A 2026-07-28 request: ``params`` plus the per-request ``_meta``."""
        return self.request(method, {**(params or {}), "_meta": modern_meta(caps, **meta)})

    def initialize(
        self, version: str = pv.V2025_11_25, caps: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        result = self.result(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": caps or {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def assert_quiet(self, wait: float = 0.2) -> None:
        """Nothing more arrives within ``wait`` seconds."""
        assert not self.inbox, self.inbox
        with pytest.raises(queue.Empty):
            extra = self.queue.get(timeout=wait)
            raise AssertionError(f"unexpected message {extra!r}")
