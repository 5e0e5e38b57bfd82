"""Tasks: 2025-11-25 (core, experimental) and the 2026-07-28 extension
``io.modelcontextprotocol/tasks``, against mcp_lite's own Server in-process and over HTTP.
(The official TypeScript reference server is in tests/interop/test_tasks_everything.py.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import LocalProtocolError, McpError, RequestTimeout, RpcError
from mcp_lite.server import Context, Server

ERAS = ["2025-11-25", "2026-07-28"]


def _server(release: threading.Event, seen: list[str]) -> Server:
    server = Server("tasks")

    @server.tool(task_support="required")
    def build(ctx: Context, steps: int = 2) -> str:
        """A long job."""
        for _ in range(steps):
            time.sleep(0.05)
        return f"built in {steps} steps"

    @server.tool(task_support="required")
    def approve(ctx: Context) -> str:
        """Asks the user, from inside the task."""
        answer = ctx.elicit(
            "Approve?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        return f"approved={answer.get('content', {}).get('ok')}"

    @server.tool(task_support="required")
    def hold(ctx: Context) -> str:
        """Runs until released or cancelled."""
        while not (release.is_set() or ctx.cancelled.is_set()):
            time.sleep(0.02)
        seen.append("cancelled" if ctx.cancelled.is_set() else "released")
        return "held"

    @server.tool(task_support="required")
    def broken() -> str:
        """Fails with a JSON-RPC error."""
        raise mcp_lite.errors.InvalidParams("no such build")

    @server.tool(task_support="optional")
    def quick(a: int) -> int:
        """May run as a task."""
        return a * 2

    @server.tool()
    def plain() -> str:
        """Never a task."""
        return "plain"

    return server


@pytest.fixture(params=["inprocess", "http"])
def target(request: pytest.FixtureRequest) -> Iterator[tuple[Any, threading.Event, list[str]]]:
    release, seen = threading.Event(), []
    server = _server(release, seen)
    try:
        if request.param == "http":
            with server.serve_http(port=0) as http:
                yield http.url, release, seen
        else:
            yield server, release, seen
    finally:
        release.set()


def _accept(params: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


@pytest.mark.parametrize("era", ERAS)
def test_required_tool_is_a_task_transparently(target: Any, era: str) -> None:
    url, _, _ = target
    with mcp_lite.connect(url, protocol_version=era, elicitation_handler=_accept) as client:
        tools = {t.name: t for t in client.list_tools()}
        assert (tools["build"].model_extra or {})["execution"] == {"taskSupport": "required"}
        assert client.call_tool("build", {"steps": 3}).text == "built in 3 steps"
        # input_required inside the task, answered by the same elicitation handler
        assert client.call_tool("approve").text == "approved=True"
        assert client.call_tool("plain").text == "plain"
        assert client.call_tool("quick", {"a": 4}).structured_content == {"result": 8}


@pytest.mark.parametrize("era", ERAS)
def test_task_handle_status_result_cancel(target: Any, era: str) -> None:
    url, release, seen = target
    with mcp_lite.connect(url, protocol_version=era) as client:
        task = client.call_tool_as_task("hold", {})
        assert task.id
        assert task.status().status == "working"
        with pytest.raises(RequestTimeout):
            task.result(timeout=0.3)  # bounded by the caller's deadline, the task lives on
        task.cancel()
        assert task.status().status == "cancelled"
        with pytest.raises(McpError, match="cancelled"):
            task.result(timeout=5)
        for _ in range(100):
            if seen:
                break
            time.sleep(0.05)
        assert seen == ["cancelled"]  # the handler saw ctx.cancelled

        done = client.call_tool_as_task("build", {"steps": 1}, ttl=60_000)
        assert done.result(timeout=10).text == "built in 1 steps"
        assert done.result(timeout=10).text == "built in 1 steps"  # kept
        done.cancel()  # a finished task: nothing happens


@pytest.mark.parametrize("era", ERAS)
def test_failed_task_raises_its_rpc_error(target: Any, era: str) -> None:
    url, _, _ = target
    with mcp_lite.connect(url, protocol_version=era) as client:
        with pytest.raises(RpcError, match="no such build") as info:
            client.call_tool("broken")
        assert info.value.code == -32602


def test_list_tasks_handshake_era(target: Any) -> None:
    url, _, _ = target
    with mcp_lite.connect(url, protocol_version="2025-11-25") as client:
        first = client.call_tool_as_task("build", {"steps": 1})
        first.result(timeout=10)
        listed = {t.task_id: t.status for t in client.list_tasks()}
        assert listed[first.id] == "completed"
    with (
        mcp_lite.connect(url, protocol_version="2026-07-28") as client,
        pytest.raises(LocalProtocolError, match="tasks/list"),
    ):
        client.list_tasks()


def test_required_tool_without_the_extension_is_refused() -> None:
    server = _server(threading.Event(), [])
    from mcp_lite.server._connection import ServerConnection

    sent: list[Any] = []
    conn = ServerConnection(server, sent.append)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},  # no tasks extension
    }
    conn.receive(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "build", "arguments": {}, "_meta": meta},
        }
    )
    for _ in range(100):
        if sent:
            break
        time.sleep(0.02)
    conn.close()
    assert sent[0]["error"]["code"] == -32021
    assert "io.modelcontextprotocol/tasks" in str(sent[0]["error"]["data"])


def test_server_without_tasks() -> None:
    server = Server("none")

    @server.tool()
    def plain() -> str:
        return "x"

    for era in ERAS:
        with mcp_lite.connect(server, protocol_version=era) as client:
            assert client.call_tool("plain").text == "x"
            with pytest.raises(LocalProtocolError):
                client.call_tool_as_task("plain")
