"""An ext-apps 2.0 example MCP App server (npm ``@modelcontextprotocol/server-system-monitor``,
stdio, no browser) as a real peer of the Hub: its app-only tool (``poll-system-stats``,
``_meta.ui.visibility: ["app"]``) is in no model-facing list and refused to the model, an app
calls it through ``app_call_tool``, and its ``ui://`` HTML reads whole."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_lite import ToolUi
from mcp_lite.errors import PermissionDenied
from mcp_lite.hub import Hub

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

MONITOR = ("node_modules", "@modelcontextprotocol", "server-system-monitor", "dist", "index.js")
UI = "io.modelcontextprotocol/ui"


@pytest.fixture
def hub(node_bin: str, peers_dir: Path, shared_dir: Path) -> Iterator[Hub]:
    main = peers_dir.joinpath(*MONITOR)
    if not main.is_file():
        pytest.fail(f"missing {main}: run `make peers`", pytrace=False)
    loopback = shared_dir / "peers" / "force-loopback.cjs"  # were it to listen: 127.0.0.1
    entry = {"command": node_bin, "args": ["--require", str(loopback), str(main), "--stdio"]}
    settings = {UI: {"mimeTypes": ["text/html;profile=mcp-app"]}}
    with Hub({"monitor": entry}, client_options={"timeout": 60.0}, extensions=settings) as hub:
        yield hub


def test_the_app_only_tool_is_for_the_app_alone(hub: Hub) -> None:
    listed = {t.name: t for t in hub.client("monitor").list_tools()}
    assert listed["poll-system-stats"].ui == ToolUi(None, ("app",))
    ui = listed["get-system-info"].ui
    assert ui is not None and ui.resource_uri == "ui://system-monitor/mcp-app.html"
    assert {t.tool_name for t in hub.tools()} == set(listed) - {"poll-system-stats"}
    for fmt in ("anthropic", "openai", "openai-responses"):
        assert "poll-system-stats" not in json.dumps(hub.tool_definitions(fmt))
        assert "poll" not in json.dumps(hub.tool_definitions(fmt, deferred=True))
    assert all(t.tool_name != "poll-system-stats" for t in hub.search_tools("poll system"))
    with pytest.raises(PermissionDenied, match="visible only to apps"):
        hub.call_tool("mcp__monitor__poll-system-stats")
    stats = json.loads(hub.app_call_tool("monitor", "poll-system-stats").text)
    assert "cpu" in stats and "memory" in stats


def test_the_ui_resource_reads_whole(hub: Hub) -> None:
    content = hub.read_resource("ui://system-monitor/mcp-app.html", server="monitor").contents[0]
    assert content.mime_type == "text/html;profile=mcp-app"
    assert "<html" in content.text.lower() and len(content.text) > 10_000
