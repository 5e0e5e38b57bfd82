"""The Python API as a person meets it: default client names they recognise, properties that
still answer after close(), informative reprs, and ``CallToolResult.data``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.client._targets import target_name as _target_name

ROOT = Path(__file__).resolve().parents[2]
PLAIN = [sys.executable, str(ROOT / "tests" / "peers" / "plain_server.py")]
DEMO = [sys.executable, str(ROOT / "examples" / "demo_server.py")]


@pytest.mark.parametrize(
    ("target", "name"),
    [
        (
            ["npx", "-y", "@modelcontextprotocol/server-everything@1.2", "stdio"],
            "@modelcontextprotocol/server-everything",
        ),
        (["npx", "-y", "mcp-server-kubernetes"], "mcp-server-kubernetes"),
        (["python", "-m", "mcp_server_time", "--local-timezone", "UTC"], "mcp_server_time"),
        (["python3", "path/to/server.py", "--db", "t.db"], "server.py"),
        (["/usr/bin/python3.11", "-u", "srv/weather.py", "stdio"], "weather.py"),
        (["uvx", "mcp-server-time", "--local-timezone", "UTC"], "mcp-server-time"),
        (["uv", "run", "--with", "httpx", "server.py"], "server.py"),
        (["node", "dist/index.js", "stdio"], "index.js"),
        (["mcp-server-sqlite", "--db-path", "t.db"], "mcp-server-sqlite"),
        ({"command": "npx", "args": ["-y", "@scope/pkg"]}, "@scope/pkg"),
        ({"command": "npx", "args": ["-y", "pkg"], "name": "mine"}, "mine"),
        ("https://user:secret@mcp.example.com:8443/mcp?key=abc", "mcp.example.com:8443"),
        ({"type": "http", "url": "https://mcp.example.com/mcp"}, "mcp.example.com"),
    ],
)
def test_default_names_a_person_recognises(target: Any, name: str) -> None:
    assert _target_name(target) == name


def test_name_option_wins() -> None:
    with mcp_lite.connect(DEMO, name="calculator") as client:
        assert client.name == "calculator"
        assert "calculator" in repr(client)


def test_properties_answer_after_close() -> None:
    client = mcp_lite.connect(DEMO, timeout=30)
    version, info = client.protocol_version, client.server_info
    instructions = client.instructions
    client.close()
    assert client.protocol_version == version
    assert client.server_info.name == info.name == "demo"
    assert client.instructions == instructions
    assert "tools" in client.server_capabilities
    assert "closed" in repr(client)
    with pytest.raises(mcp_lite.ConnectionClosed):
        client.list_tools()  # calls still fail: the client is closed


def test_server_repr_counts_with_grammar() -> None:
    server = mcp_lite.Server("calc", version="2.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    assert repr(server) == (
        "<mcp_lite.Server 'calc' 2.0: 1 tool, 0 resources, 0 resource templates, 0 prompts>"
    )


def test_hub_repr_says_states_and_closed() -> None:
    server = mcp_lite.Server("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    hub = mcp_lite.Hub({"mcpServers": {"calc": server}})
    try:
        hub.tools()
        assert repr(hub) == "<mcp_lite.Hub 1 server: calc=connected (1 tool)>"
    finally:
        hub.close()
    assert repr(hub) == "<mcp_lite.Hub closed, 1 server>"


def test_data_is_structured_content() -> None:
    with mcp_lite.connect(DEMO, timeout=30) as client:
        client.list_tools()
        assert client.call_tool("add", {"a": 2, "b": 3}).data == {"result": 5}


def test_data_parses_text_when_an_output_schema_is_declared() -> None:
    with mcp_lite.connect(PLAIN, timeout=30) as client:
        client.list_tools()  # learns the outputSchema
        result = client.call_tool("stats")
        assert result.structured_content is None
        assert result.data == {"count": 3}
        # no schema declared: text stays text
        assert client.call_tool("add", {"a": 1, "b": 2}).data is None


def test_hub_keeps_data() -> None:
    config = {"mcpServers": {"plain": {"command": PLAIN[0], "args": PLAIN[1:]}}}
    with mcp_lite.Hub(config) as hub:
        hub.tools()
        assert hub.call_tool("mcp__plain__stats", {}).data == {"count": 3}
