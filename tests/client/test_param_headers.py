"""SEP-2243 against a peer that checks: mcp_lite's own Server over HTTP validates every
``Mcp-Param-*`` header against the body (400 HeaderMismatch otherwise), so each call below
passing means the client mirrored, encoded and omitted exactly as the spec says."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_lite
from mcp_lite.server import HttpServer, Server

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "nested": {
            "type": "object",
            "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}},
        },
        "query": {"type": "string"},
    },
}
BAD: dict[str, Any] = {  # an x-mcp-header on a number: the tool must be left out
    "type": "object",
    "properties": {"score": {"type": "number", "x-mcp-header": "Score"}},
}


@pytest.fixture
def http() -> Iterator[HttpServer]:
    server = Server("headers")
    seen: list[dict[str, Any]] = []

    @server.tool(input_schema=SCHEMA)
    def route(
        region: str = "",
        priority: int = 0,
        verbose: bool | None = None,
        nested: dict[str, Any] | None = None,
        query: str = "",
    ) -> str:
        seen.append({"region": region, "priority": priority, "verbose": verbose})
        return f"{region}|{priority}|{verbose}|{(nested or {}).get('tenant')}"

    @server.tool(input_schema=BAD)
    def scored(score: float = 0) -> str:
        return "should never be called"

    @server.tool()
    def plain() -> str:
        return "plain"

    with server.serve_http(port=0) as running:
        yield running


@pytest.mark.parametrize(
    "value",
    [
        "us-west1",
        "us west 1",  # internal spaces: plain
        "Hello, 世界",  # non-ASCII: base64
        " padded ",  # leading/trailing space: base64
        "line1\nline2",  # control character: base64
        "\tindented",
        "=?base64?literal?=",  # looks like the sentinel: base64 too
        "",
    ],
)
def test_values_are_mirrored_and_encoded(http: HttpServer, value: str) -> None:
    with mcp_lite.connect(http.url, protocol_version="2026-07-28") as client:
        assert {t.name for t in client.list_tools()} == {"route", "plain"}
        args = {"region": value, "priority": -7, "verbose": False, "nested": {"tenant": "ä"}}
        result = client.call_tool("route", args)
        assert not result.is_error, result.text
        assert result.text == f"{value}|-7|False|ä"


def test_null_and_absent_values_send_no_header(http: HttpServer) -> None:
    with mcp_lite.connect(http.url, protocol_version="2026-07-28") as client:
        client.list_tools()
        assert client.call_tool("route", {"region": "x", "verbose": None}).text == "x|0|None|None"
        assert client.call_tool("route", {"query": "only"}).text == "|0|None|None"


def test_a_malformed_annotation_leaves_out_that_tool_only(
    http: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="mcp_lite.client"),
        mcp_lite.connect(http.url, protocol_version="2026-07-28") as client,
    ):
        names = {t.name for t in client.list_tools()}
        assert names == {"route", "plain"}
        assert client.call_tool("plain").text == "plain"
        assert client.call_tool("route", {"region": "eu"}).text == "eu|0|None|None"
    assert any("scored" in r.getMessage() for r in caplog.records)


def test_the_server_refuses_a_missing_header(http: HttpServer) -> None:
    import requests

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "route", "arguments": {"region": "eu"}, "_meta": meta},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "route",
    }
    r = requests.post(http.url, json=body, headers=headers, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    r = requests.post(
        http.url, json=body, headers={**headers, "Mcp-Param-Region": "us"}, timeout=10
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    r = requests.post(
        http.url, json=body, headers={**headers, "Mcp-Param-Region": "eu"}, timeout=10
    )
    assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "eu|0|None|None"
