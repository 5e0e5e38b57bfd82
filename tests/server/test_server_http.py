"""``Server.run_http`` / ``serve_http``: Streamable HTTP at /mcp, both eras, stateful and
stateless, against mcp_lite's own client, the official SDK's client and raw requests."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

import mcp_lite
from mcp_lite.server import Context, HttpServer, Server

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _make_server() -> tuple[Server, threading.Event]:
    server = Server("http-test", version="1.2.3")
    cancelled = threading.Event()

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def slow_progress(ctx: Context, steps: int = 3) -> str:
        """Report progress, then finish."""
        for i in range(steps):
            ctx.report_progress(i + 1, steps, f"step {i + 1}")
        return "done"

    @server.tool()
    def ask_name(ctx: Context) -> str:
        """Ask the user for a name (elicitation)."""
        answer = ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"hello {answer.get('content', {}).get('name')}"

    @server.tool()
    def wait_cancel(ctx: Context) -> str:
        """Block until cancelled (at most 30 s)."""
        if ctx.cancelled.wait(30):
            cancelled.set()
        return "over"

    @server.resource("demo://readme")
    def readme() -> str:
        return "read me"

    return server, cancelled


@pytest.fixture(params=[False, True], ids=["stateful", "stateless"])
def http(request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    server, _ = _make_server()
    with server.serve_http(port=0, stateless=request.param) as running:
        yield running


@pytest.fixture
def stateful() -> Iterator[tuple[HttpServer, threading.Event, Server]]:
    server, cancelled = _make_server()
    with server.serve_http(port=0) as running:
        yield running, cancelled, server


@pytest.mark.parametrize("version", ["auto", "2025-03-26", "2025-06-18", "2025-11-25", MODERN])
def test_mcp_lite_client_every_version(http: HttpServer, version: str) -> None:
    with mcp_lite.connect(http.url, protocol_version=version, timeout=20) as client:
        assert client.protocol_version == (MODERN if version == "auto" else version)
        assert client.server_info.name == "http-test"
        assert {t.name for t in client.list_tools()} >= {"add", "slow_progress"}
        assert client.call_tool("add", {"a": 2, "b": 40}).structured_content == {"result": 42}
        assert client.read_resource("demo://readme").contents[0].text == "read me"


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
def test_progress_arrives_on_the_request_stream(http: HttpServer, version: str) -> None:
    seen: list[float] = []
    with mcp_lite.connect(http.url, protocol_version=version, timeout=20) as client:
        res = client.call_tool(
            "slow_progress", {"steps": 3}, on_progress=lambda p: seen.append(p.progress)
        )
    assert res.text == "done"
    assert seen == [1, 2, 3]


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
def test_elicitation_both_eras(stateful: Any, version: str) -> None:
    http, _, _ = stateful
    asked: list[str] = []

    def elicit(params: Any) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"name": "Ada"}}

    with mcp_lite.connect(
        http.url, protocol_version=version, timeout=20, elicitation_handler=elicit
    ) as client:
        assert client.call_tool("ask_name", {}).text == "hello Ada"
    assert asked == ["Your name?"]


def test_session_lifecycle_and_get_stream(stateful: Any) -> None:
    http, _, server = stateful
    got = threading.Event()

    def on_note(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            got.set()

    with mcp_lite.connect(
        http.url, protocol_version="2025-11-25", timeout=20, notification_handler=on_note
    ) as client:
        client.list_tools()
        # the list_changed goes out on the session's GET stream, once it is open
        for _ in range(100):
            server.notify_tools_changed()
            if got.wait(0.1):
                break
        assert got.is_set()
        sessions = list(http._app.sessions)
        assert len(sessions) == 1
    # the client's DELETE ended the session
    for _ in range(50):
        if not http._app.sessions:
            break
        threading.Event().wait(0.1)
    assert not http._app.sessions


def test_subscriptions_listen_modern(stateful: Any) -> None:
    http, _, server = stateful
    got = threading.Event()

    def on_note(method: str, params: Any) -> None:
        if method == "notifications/resources/updated" and params.uri == "demo://readme":
            got.set()

    with mcp_lite.connect(
        http.url, protocol_version=MODERN, timeout=20, notification_handler=on_note
    ) as client:
        client.subscribe_resource("demo://readme")  # opens a subscriptions/listen stream
        for _ in range(100):
            server.notify_resource_updated("demo://readme")
            if got.wait(0.1):
                break
        assert got.is_set()


def test_closing_the_stream_cancels_a_modern_request(stateful: Any) -> None:
    http, cancelled, _ = stateful
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "wait_cancel", "arguments": {}, "_meta": {**META, "progressToken": 1}},
    }
    data = json.dumps(body).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{http.port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: wait_cancel\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", http.port), timeout=10) as sock:
        sock.sendall(head.encode() + data)
        threading.Event().wait(0.5)  # the tool is running; nothing has been answered yet
    # the connection is closed: the server cancels the request
    assert cancelled.wait(15)


def _post(url: str, body: Any, **headers: str) -> requests.Response:
    base = {"Accept": "application/json, text/event-stream"}
    return requests.post(url, json=body, headers={**base, **headers}, timeout=10)


def _modern(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}


def test_modern_refusals_use_http_status(stateful: Any) -> None:
    http, _, _ = stateful
    url = http.url
    ok = _post(
        url, _modern("tools/list"), **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
    )
    assert ok.status_code == 200 and ok.json()["result"]["tools"]
    # header disagrees with the body
    r = _post(
        url, _modern("tools/list"), **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/list"}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    # Mcp-Name missing on tools/call
    r = _post(
        url,
        _modern("tools/call", name="add", arguments={"a": 1, "b": 2}),
        **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"},
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    # unsupported version
    body = _modern("tools/list")
    body["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    r = _post(url, body, **{"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32022
    assert MODERN in r.json()["error"]["data"]["supported"]
    # unknown method: 404 with -32601 (tells a modern server from a missing endpoint)
    r = _post(
        url, _modern("nope/nope"), **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "nope/nope"}
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == -32601
    # GET and DELETE are not part of 2026-07-28
    r = requests.get(url, headers={"MCP-Protocol-Version": MODERN}, timeout=10)
    assert r.status_code == 405


def test_bounds_and_guards(stateful: Any) -> None:
    http, _, _ = stateful
    url = http.url
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 << 20) + b'"}}'
    r = requests.post(
        url, data=big, headers={"Content-Type": "application/json", "Accept": "*/*"}, timeout=10
    )
    assert r.status_code == 413
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert _post(url, ping).status_code == 400  # no session id
    assert _post(url, ping, **{"Mcp-Session-Id": "nope"}).status_code == 404
    assert _post(url, ping, Origin="http://evil.example").status_code == 403
    assert requests.post(url.replace("/mcp", "/other"), json=ping, timeout=10).status_code == 404


def test_stateless_mode_has_no_sessions() -> None:
    server, _ = _make_server()
    with server.serve_http(port=0, stateless=True) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        r = _post(http.url, init)
        assert r.status_code == 200 and "mcp-session-id" not in r.headers
        r = _post(
            http.url,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            **{"MCP-Protocol-Version": "2025-11-25"},
        )
        assert r.status_code == 200 and r.json()["result"]["tools"]
        assert requests.get(http.url, timeout=10).status_code == 405
        assert requests.delete(http.url, timeout=10).status_code == 405


# --- the official SDK's client -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto", MODERN])
def test_official_sdk_client(http: HttpServer, mode: str) -> None:
    anyio = pytest.importorskip("anyio")
    from mcp import Client
    from mcp import types as mt

    async def elicit(context: Any, params: Any) -> Any:
        return mt.ElicitResult(action="accept", content={"name": "Grace"})

    async def main() -> tuple[list[str], Any, Any]:
        async with Client(http.url, mode=mode, elicitation_callback=elicit) as client:
            tools = await client.list_tools()
            added = await client.call_tool("add", {"a": 20, "b": 22})
            asked = await client.call_tool("ask_name", {})
            return [t.name for t in tools.tools], added, asked

    names, added, asked = anyio.run(main)
    assert "add" in names
    assert added.structured_content == {"result": 42}
    if mode == "legacy" and http._app.stateless:
        return  # no session: the client's answer to an elicitation has nowhere to go
    assert asked.content[0].text == "hello Grace"
