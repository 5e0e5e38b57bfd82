"""MCP Apps (``io.modelcontextprotocol/ui``) for a host without a UI, on mcp_lite's own Server:
``tool.ui``; app-only tools never offered to the model (the pool, definitions, search,
deferred loading, a model's call, the CLI); ``hub.app_call_tool`` (only the app's server, only
tools visible to ``"app"``, under the model's permissions); the ``ui://`` resource read with
its ``_meta.ui`` intact; ``ui`` declared only when the host passes it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import ToolUi
from mcp_lite.errors import ConfigError, PermissionDenied
from mcp_lite.hub import Hub

UI = "io.modelcontextprotocol/ui"
UI_SETTINGS = {"mimeTypes": ["text/html;profile=mcp-app"]}
PEER = Path(__file__).resolve().parents[1] / "peers" / "lite_apps_server.py"


def _peer() -> Any:
    spec = importlib.util.spec_from_file_location("lite_apps_server", PEER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_lite = _peer()
apps_server, HTML, RESOURCE_META = _lite.apps_server, _lite.HTML, _lite.RESOURCE_META


def stdio_entry(name: str = "clock") -> dict[str, Any]:
    """The same server as a process, for the CLI, which starts its servers itself."""
    return {"command": sys.executable, "args": [str(PEER), name]}


MODEL_TOOLS = {"now", "model_only", "legacy", "plain", "host_sees"}


def test_tool_ui_on_the_client_and_the_hub() -> None:
    with mcp_lite.connect(apps_server()) as client:
        tools = {t.name: t for t in client.list_tools()}
        assert tools["now"].ui == ToolUi("ui://clock/app.html", ("model", "app"))
        assert tools["tick"].ui == ToolUi("ui://clock/app.html", ("app",))
        assert tools["model_only"].ui == ToolUi(None, ("model",))
        assert tools["legacy"].ui == ToolUi("ui://clock/old.html", ("model", "app"))
        assert tools["plain"].ui is None
        assert "tick" in tools  # the protocol listing keeps every tool
        # the client's own model-facing list does not
        assert {d["name"] for d in client.tool_definitions()} == MODEL_TOOLS
    with Hub({"clock": apps_server()}) as hub:
        by_name = {t.tool_name: t for t in hub.tools()}
        assert by_name["now"].ui == ToolUi("ui://clock/app.html", ("model", "app"))
        assert by_name["plain"].ui is None


def test_app_only_tools_never_reach_the_model() -> None:
    with Hub({"clock": apps_server()}) as hub:
        assert {t.tool_name for t in hub.tools()} == MODEL_TOOLS
        for fmt in ("anthropic", "openai", "openai-responses"):
            text = json.dumps(hub.tool_definitions(fmt))
            assert "tick" not in text
        deferred = hub.tool_definitions(deferred=True)
        assert "tick" not in json.dumps(deferred)
        assert hub.search_tools("tick") == []
        assert hub.search_tools("select:mcp__clock__tick") == []
        found = hub.call_tool("ToolSearch", {"query": "only the app calls"})
        assert "tick" not in json.dumps(found.structured_content)
        with pytest.raises(PermissionDenied, match="visible only to apps"):
            hub.call_tool("mcp__clock__tick", {"n": 1})
        assert hub.reconnect("clock").tools and all(
            t.tool_name != "tick" for t in hub.reconnect("clock").tools
        )


def test_app_call_tool_only_for_app_visible_tools_of_its_own_server() -> None:
    with Hub({"clock": apps_server(), "other": apps_server("other")}) as hub:
        assert hub.app_call_tool("clock", "tick", {"n": 2}).text == "tick 2"
        assert hub.app_call_tool("clock", "mcp__clock__tick", {"n": 3}).text == "tick 3"
        assert hub.app_call_tool("clock", "now").text == "12:00"  # default: model and app
        assert hub.app_call_tool("clock", "plain").text == "plain"  # no _meta.ui: both
        with pytest.raises(PermissionDenied, match="not visible to apps"):
            hub.app_call_tool("clock", "model_only")
        with pytest.raises(PermissionDenied, match="only that server's tools"):
            hub.app_call_tool("clock", "mcp__other__tick", {"n": 1})
        with pytest.raises(ConfigError, match="no tool 'nope'"):
            hub.app_call_tool("clock", "nope")
        with pytest.raises(ConfigError):
            hub.app_call_tool("nowhere", "tick")


def test_app_call_tool_is_under_the_model_permissions(served) -> None:
    """Rules and the permission handler decide an app's call as they decide the model's (the
    server over HTTP on a thread: an in-process entry is never asked about)."""
    asked: list[tuple[str, dict[str, Any]]] = []

    def handler(tool: Any, arguments: Any) -> bool:
        asked.append((tool.name, dict(arguments)))
        return arguments.get("n") != 13

    for rule, tool in (("mcp__clock__tick", "tick"), ("mcp__clock", "now")):
        with (
            Hub({"clock": apps_server()}, deny=[rule]) as hub,
            pytest.raises(PermissionDenied, match="deny rule"),
        ):
            hub.app_call_tool("clock", tool, {"n": 1} if tool == "tick" else {})
    with Hub({"clock": served(apps_server())}, permission_handler=handler) as hub:
        assert hub.app_call_tool("clock", "tick", {"n": 1}).text == "tick 1"
        with pytest.raises(PermissionDenied):
            hub.app_call_tool("clock", "tick", {"n": 13})
        assert asked == [("mcp__clock__tick", {"n": 1}), ("mcp__clock__tick", {"n": 13})]
    with (
        Hub({"clock": served(apps_server())}, default_permission="deny") as hub,
        pytest.raises(PermissionDenied),
    ):
        hub.app_call_tool("clock", "tick", {"n": 1})


def test_the_ui_resource_reads_with_its_meta_intact() -> None:
    with Hub({"clock": apps_server()}) as hub:
        read = hub.read_resource("ui://clock/app.html", server="clock")
        wire = read.contents[0]
        assert wire.text == HTML
        assert wire.mime_type == "text/html;profile=mcp-app"
        assert wire.meta == RESOURCE_META
    with mcp_lite.connect(apps_server()) as client:
        assert client.read_resource("ui://clock/app.html").contents[0].meta == RESOURCE_META


def test_ui_is_declared_only_when_the_host_passes_it() -> None:
    with Hub({"clock": apps_server()}) as hub:
        declared = json.loads(hub.call_tool("mcp__clock__host_sees").text)
        assert UI not in declared
        assert hub.client("clock").server_extensions == {UI: {}}
    with Hub({"clock": apps_server()}, extensions={UI: UI_SETTINGS}) as hub:
        declared = json.loads(hub.call_tool("mcp__clock__host_sees").text)
        assert declared[UI] == UI_SETTINGS


def test_extensions_in_a_config_file_over_the_hub_over_client_options(
    hub_paths: Any, served
) -> None:
    """An entry's "extensions" (from .mcp.json) over Hub.from_config(extensions=) over
    client_options["extensions"]; a bad entry is that entry's error, not the whole config's.
    (A file holds no in-process server: the entries reach one over HTTP on a thread.)"""
    remote = served(apps_server())
    entry = {**remote, "extensions": {"com.example/x": {"from": "entry"}}}
    hub_paths.write(
        hub_paths.project / ".mcp.json",
        {"mcpServers": {"clock": entry, "bad": {**remote, "extensions": {UI: "yes"}}}},
    )
    with Hub.from_config(
        hub_paths.project,
        trust_project=True,
        user_dir=hub_paths.home,
        managed_path=hub_paths.managed,
        managed_settings_path=hub_paths.managed.with_name("managed-settings.json"),
        extensions={UI: UI_SETTINGS, "com.example/x": {"from": "hub"}},
        client_options={"extensions": {UI: {"from": "options"}, "com.example/y": {}}},
    ) as hub:
        declared = json.loads(hub.call_tool("mcp__clock__host_sees", timeout=30).text)
        assert declared[UI] == UI_SETTINGS
        assert declared["com.example/x"] == {"from": "entry"}
        assert declared["com.example/y"] == {}
        assert "extensions" in (hub.status()["bad"].error or "")


def test_changing_an_entry_extensions_reconnects_with_the_new_ones() -> None:
    server = apps_server()
    with Hub({"clock": {"type": "sdk", "server": server}}) as hub:
        assert UI not in json.loads(hub.call_tool("mcp__clock__host_sees").text)
        hub.update({"clock": {"type": "sdk", "server": server, "extensions": {UI: UI_SETTINGS}}})
        assert json.loads(hub.call_tool("mcp__clock__host_sees").text)[UI] == UI_SETTINGS


def test_the_cli_lists_no_app_only_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_lite import cli

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"clock": stdio_entry()}}))
    command = f"{sys.executable} {PEER}"
    for argv in (
        ["tools", "--config", str(config)],
        ["tools", "--config", str(config), "--json"],
        ["tools", "clock", "--config", str(config)],
        ["tools", "--stdio", command],
        ["tools", "--stdio", command, "--json"],
    ):
        assert cli.main(argv) == 0, argv
        out = capsys.readouterr().out
        assert "now" in out and "tick" not in out, argv


def test_app_call_tool_finds_a_tool_added_after_the_list_was_cached() -> None:
    server = apps_server()
    with Hub({"clock": server}) as hub:
        assert hub.app_call_tool("clock", "tick", {"n": 1}).text == "tick 1"  # list cached

        @server.tool(meta={"ui": {"visibility": ["app"]}})
        def late() -> str:
            return "late"

        assert hub.app_call_tool("clock", "late").text == "late"
