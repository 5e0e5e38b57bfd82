"""The transport interface declares what the layers above call, and the deadline reaches the
transport as the caller's one ``Deadline`` (issue 35): no ``getattr`` probing, no
``type: ignore`` for the members, no floats below the Client."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import mcp_lite
from mcp_lite._deadline import Deadline
from mcp_lite.client import Client
from mcp_lite.transports import base
from mcp_lite.transports.base import Outgoing, TransportBase
from mcp_lite.transports.http import HttpTransport
from mcp_lite.transports.inprocess import InProcessTransport
from mcp_lite.transports.sse import SseTransport
from mcp_lite.transports.stdio import StdioTransport
from mcp_lite.transports.websocket import WebSocketTransport

PACKAGE = pathlib.Path(mcp_lite.__file__).parent
MEMBERS = ("can_lead", "lead", "want_reader", "negotiated", "cancel_request", "dead", "pid")
MEMBERS += ("session_id",)


def test_every_member_the_layers_above_call_is_declared_with_a_default() -> None:
    declared = set(base.Transport.__annotations__) | set(vars(base.Transport))
    for member in MEMBERS:
        assert member in declared, member
        assert hasattr(TransportBase, member), member
    for cls in (StdioTransport, HttpTransport, SseTransport, WebSocketTransport):
        assert issubclass(cls, TransportBase), cls
    assert issubclass(InProcessTransport, TransportBase)


def test_no_layer_above_probes_the_transport() -> None:
    names = "|".join(MEMBERS)
    probe = re.compile(rf"getattr\([^)]*transport[^)]*[\"']({names})[\"']")
    ignored = re.compile(rf"transport\.({names})\b[^\n]*# type: ignore\[attr-defined\]")
    found = []
    for folder in ("_connection", "client"):
        for path in sorted((PACKAGE / folder).glob("*.py")):
            text = path.read_text()
            found += [f"{path.name}: {m.group(0)}" for m in probe.finditer(text)]
            found += [f"{path.name}: {m.group(0)}" for m in ignored.finditer(text)]
    for name in ("tasks.py",):
        text = (PACKAGE / name).read_text()
        found += [f"{name}: {m.group(0)}" for m in probe.finditer(text)]
    assert found == []


def test_the_transport_gets_the_callers_deadline_object() -> None:
    server = mcp_lite.Server("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    seen: list[Any] = []

    class Recording(InProcessTransport):
        def send(self, message: Outgoing) -> None:
            seen.append((message.payload.get("method"), message.deadline))
            super().send(message)

    client = Client(server, timeout=5.0)
    client._make_transport = lambda deadline=None: Recording(server)  # type: ignore[method-assign]
    with client.open():
        assert client.call_tool("add", {"a": 1, "b": 2}, timeout=3.0).data == {"result": 3}
    calls = [deadline for method, deadline in seen if method == "tools/call"]
    assert len(calls) == 1 and isinstance(calls[0], Deadline) and calls[0].timeout == 3.0
    assert all(d is None or isinstance(d, Deadline) for _, d in seen), seen
