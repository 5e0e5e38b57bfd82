"""What every adapter shares (``mcp_lite.contrib._adapter``), on in-process servers (fast
lane, no process): the sources (Hub, Client, ProcessHub), ``tools=`` names and rules, the
resource tools, the ``model_errors`` mapping and the async call's cancellation."""

from __future__ import annotations

import asyncio
import threading

import pytest

import mcp_lite
from mcp_lite.contrib import ProcessHub
from mcp_lite.contrib._adapter import Adapter, ModelError
from mcp_lite.errors import ConfigError, ConnectError, RequestCancelled, ToolError


def _server(
    started: threading.Event | None = None, told: threading.Event | None = None
) -> mcp_lite.Server:
    server = mcp_lite.Server("kit")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def boom() -> str:
        raise ValueError("exploded")

    @server.tool()
    def wait(ctx: mcp_lite.server.Context) -> str:
        if started is not None:
            started.set()
        if ctx.cancelled.wait(60) and told is not None:
            told.set()
        return "done"

    @server.resource("kit://readme")
    def readme() -> str:
        return "hello"

    return server


def _names(adapter: Adapter) -> list[str]:
    return [t.name for t in adapter.tools()]


def test_the_hub_offers_its_tools_and_resource_tools() -> None:
    with mcp_lite.Hub({"kit": _server(), "other": _server()}, deny=["mcp__other__boom"]) as hub:
        names = _names(Adapter(hub))
        assert "mcp__kit__add" in names and "mcp__other__boom" not in names
        assert names[-2:] == ["ListMcpResourcesTool", "ReadMcpResourceTool"]
        assert "ListMcpResourcesTool" not in _names(Adapter(hub, resource_tools=False))
        assert _names(Adapter(hub, tools=["mcp__kit"])) == [
            "mcp__kit__add",
            "mcp__kit__boom",
            "mcp__kit__wait",
        ]
        kept = _names(Adapter(hub, tools=["mcp__other__add", "ReadMcpResourceTool"]))
        assert kept == ["mcp__other__add", "ReadMcpResourceTool"]
        read = Adapter(hub).call("ReadMcpResourceTool", {"server": "kit", "uri": "kit://readme"})
        assert read.text == "hello"


def test_a_client_and_a_process_hub_are_sources_too() -> None:
    with mcp_lite.connect(_server(), name="kit") as client:
        adapter = Adapter(client, tools=["add", "mcp__kit__boom"])
        assert _names(adapter) == ["add", "boom"]  # the server's own names; rules work
        assert adapter.call("add", {"a": 1, "b": 2}).text == "3"
    process_hub = ProcessHub(lambda: mcp_lite.Hub({"kit": _server()}))
    try:
        adapter = Adapter(process_hub)
        assert not process_hub.started  # nothing starts before it is used
        assert adapter.call("mcp__kit__add", {"a": 2, "b": 2}).text == "4"
        assert adapter.resolve() is process_hub.get()
    finally:
        process_hub.close()


def test_options_are_checked() -> None:
    with mcp_lite.Hub({"kit": _server()}) as hub:
        with pytest.raises(ConfigError, match="model_errors"):
            Adapter(hub, model_errors="some")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="list of names"):
            Adapter(hub, tools="mcp__kit__add")
        with pytest.raises(ConfigError, match="rule"):
            Adapter(hub, tools=["mcp__"])
    with pytest.raises(TypeError, match="Hub, Client or ProcessHub"):
        Adapter("hub")  # type: ignore[arg-type]


def test_model_errors_decide_what_the_model_sees() -> None:
    with mcp_lite.Hub({"kit": _server()}) as hub:
        with pytest.raises(ModelError) as info:
            Adapter(hub).call("mcp__kit__boom", {})
        assert info.value.kind == "tool" and "exploded" in info.value.message
        with pytest.raises(ToolError, match="exploded"):
            Adapter(hub, model_errors="none").call("mcp__kit__boom", {})
        hub.disable("kit")
        with pytest.raises(ConnectError):
            Adapter(hub).call("mcp__kit__add", {"a": 1, "b": 1})
        with pytest.raises(ModelError) as info:
            Adapter(hub, model_errors="all").call("mcp__kit__add", {"a": 1, "b": 1})
        assert info.value.kind == "other" and "disabled" in info.value.message


def test_an_own_cancel_event_propagates() -> None:
    started, told = threading.Event(), threading.Event()
    with mcp_lite.Hub({"kit": _server(started, told)}) as hub:
        cancel = threading.Event()
        threading.Thread(target=lambda: (started.wait(30), cancel.set()), daemon=True).start()
        with pytest.raises(RequestCancelled):
            Adapter(hub, model_errors="all").call("mcp__kit__wait", {}, cancel)
        assert told.wait(30)


def test_cancelling_the_async_call_tells_the_server() -> None:
    started, told = threading.Event(), threading.Event()
    with mcp_lite.Hub({"kit": _server(started, told)}) as hub:
        adapter = Adapter(hub)

        async def main() -> None:
            call = asyncio.create_task(adapter.acall("mcp__kit__wait", {}))
            await asyncio.to_thread(started.wait, 30)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

        asyncio.run(main())
        assert told.wait(30)
