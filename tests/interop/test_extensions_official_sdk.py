"""Extension settings and MCP Apps against the official Python SDK's server (PyPI ``mcp``:
``MCPServer(extensions=[Apps(), ...])``, tests/peers/official_apps_server.py) over stdio, in
both eras: settings round-trip unchanged both ways, ``tool.ui`` and the app-only tool kept
from the model, ``app_call_tool``, the ``ui://`` resource with its ``_meta.ui``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import ToolUi
from mcp_lite.errors import PermissionDenied
from mcp_lite.hub import Hub

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

PEER = str(Path(__file__).resolve().parents[1] / "peers" / "official_apps_server.py")
ERAS = {"auto": "stateless", "2025-11-25": "handshake"}
UI = "io.modelcontextprotocol/ui"
# What the client declares: the conformance fixture's ui settings plus arbitrary ones.
OURS = {
    UI: {"mimeTypes": ["text/html;profile=mcp-app"]},
    "com.example/client": {"nested": {"list": [1, "two", None, False]}, "x-unknown": {"a": 1.5}},
}
# What the peer declares (see the peer): the SDK's Apps ({}), and these settings.
THEIRS = {"nested": {"list": [1, "two", None, True], "x-unknown": {"deep": 1.5}}, "flag": False}
SLOW_PROBE = 60.0  # an SDK server can be slow to answer the 2026-07-28 probe on a busy machine


@pytest.fixture(scope="module")
def peer() -> list[str]:
    try:
        import mcp.server.apps  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"the official SDK peer needs PyPI `mcp` >= 2.3 ({exc})", pytrace=False)
    return [sys.executable, PEER]


@pytest.mark.parametrize("era", list(ERAS))
def test_settings_round_trip_both_ways(peer: list[str], era: str) -> None:
    with mcp_lite.connect(
        peer, protocol_version=era, extensions=OURS, timeout=60.0, discover_timeout=SLOW_PROBE
    ) as client:
        assert client.session.era == ERAS[era]
        expected = {UI: {}, "com.example/settings": THEIRS}
        if era != "auto" and "extensions" not in client.server_capabilities:
            # mcp 2.3 writes its InitializeResult in the 2025-11-25 schema, which has no
            # extensions: its declaration reaches only a 2026-07-28 client (our own Server's
            # reaches both eras: tests/client/test_extensions.py)
            expected = {}
        assert client.server_extensions == expected
        seen = json.loads(client.call_tool("client_extensions").text)
        for ext_id, settings in OURS.items():
            assert seen[ext_id] == settings  # unchanged: no default added, no key dropped
        assert seen["io.modelcontextprotocol/tasks"] == {}


@pytest.mark.parametrize("era", list(ERAS))
def test_apps_surface(peer: list[str], era: str) -> None:
    entry = {"command": peer[0], "args": peer[1:]}
    options = {"protocol_version": era, "discover_timeout": SLOW_PROBE, "timeout": 60.0}
    with Hub({"apps": entry}, client_options=options, extensions={UI: OURS[UI]}) as hub:
        listed = {t.name: t for t in hub.client("apps").list_tools()}
        assert listed["clock"].ui == ToolUi("ui://clock/app.html", ("model", "app"))
        assert listed["tick"].ui == ToolUi("ui://clock/app.html", ("app",))
        assert listed["client_extensions"].ui is None
        assert {t.tool_name for t in hub.tools()} == {"clock", "client_extensions"}
        assert "tick" not in json.dumps(hub.tool_definitions())
        assert hub.search_tools("tick") == []
        with pytest.raises(PermissionDenied, match="visible only to apps"):
            hub.call_tool("mcp__apps__tick", {"n": 1})
        assert hub.app_call_tool("apps", "tick", {"n": 4}).text == "tick 4"
        assert hub.call_tool("mcp__apps__clock").text == "12:00"
        content = hub.read_resource("ui://clock/app.html", server="apps").contents[0]
        assert content.mime_type == "text/html;profile=mcp-app"
        assert content.text.startswith("<!doctype html>")
        meta: dict[str, Any] = content.meta or {}
        assert meta["ui"] == {
            "csp": {"connectDomains": ["https://api.example.com"]},
            "permissions": {"clipboardWrite": {}},
            "domain": "clock.example.com",
            "prefersBorder": True,
        }
