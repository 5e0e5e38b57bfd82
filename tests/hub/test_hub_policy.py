"""Managed policy (allowedMcpServers / deniedMcpServers) and permission rules from settings
files, with the Hub's own config files in temporary folders. A server that is only started
to see a call pass is the demo server in this process, reached over HTTP on a thread (policy
and permissions wave an in-process entry through); stdio entries where the command is what a
rule matches."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError, ConnectError, PermissionDenied
from mcp_lite.hub import Hub
from mcp_lite.hub.config import load_config

if TYPE_CHECKING:
    from conftest import HubPaths  # tests/hub/conftest.py

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")


def _marker_server(marker: Path) -> dict[str, Any]:
    """A stdio entry that leaves ``marker`` behind if it is ever started."""
    code = f"open({str(marker)!r}, 'w').close()"
    return {"command": sys.executable, "args": ["-c", code]}


def _demo() -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO]}


def _load(paths: HubPaths, settings: dict[str, Any] | None = None, **kw: Any) -> Any:
    managed_settings = paths.managed.with_name("managed-settings.json")
    if settings is not None:
        paths.write(managed_settings, settings)
    kw.setdefault("trust_project", True)
    return load_config(
        paths.project,
        user_dir=paths.home,
        managed_path=paths.managed,
        managed_settings_path=managed_settings,
        **kw,
    )


def _from_config(paths: HubPaths, **kw: Any) -> Hub:
    kw.setdefault("trust_project", True)
    return Hub.from_config(
        paths.project,
        user_dir=paths.home,
        managed_path=paths.managed,
        managed_settings_path=paths.managed.with_name("managed-settings.json"),
        **kw,
    )


# --- server policy -------------------------------------------------------------------------


def test_a_denied_server_is_disabled_with_the_policy_as_reason_and_never_starts(
    hub_paths: HubPaths, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"x": _marker_server(marker)}})
    hub_paths.write(
        hub_paths.managed.with_name("managed-settings.json"),
        {"deniedMcpServers": [{"serverName": "x"}]},
    )
    with _from_config(hub_paths) as hub:
        status = hub.connect_all()["x"]
        assert status.state == "disabled"
        assert "deniedMcpServers" in (status.error or "")
        assert "managed-settings.json" in (status.error or "")
        with pytest.raises(ConnectError, match="blocked by policy"):
            hub.call_tool("mcp__x__anything", {})
    assert not marker.exists()


def test_allow_list_by_exact_command(hub_paths: HubPaths) -> None:
    demo = _demo()
    other = {"command": sys.executable, "args": [DEMO, "--extra"]}
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"a": demo, "b": other}})
    cfg = _load(
        hub_paths,
        {"allowedMcpServers": [{"serverCommand": [sys.executable, DEMO]}, {"serverName": "b"}]},
    )
    assert cfg.servers["a"].usable
    # a serverCommand entry makes the command decisive for stdio servers: the name is not enough
    assert "its command matches no allowedMcpServers entry" in cfg.servers["b"].disabled_reason
    with Hub(cfg) as hub:
        assert hub.call_tool("mcp__a__add", {"a": 1, "b": 2}).text == "3"


def test_allow_and_deny_by_url_pattern_deny_wins(hub_paths: HubPaths) -> None:
    servers = {
        "corp": {"url": "https://api.corp.example/mcp"},
        "blocked": {"url": "https://secret.corp.example/mcp"},
        "evil": {"type": "sse", "url": "https://evil.example/sse"},
    }
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": servers})
    cfg = _load(
        hub_paths,
        {
            "allowedMcpServers": [{"serverUrl": "https://*.corp.example/*"}],
            "deniedMcpServers": [{"serverUrl": "https://secret.*"}],
        },
    )
    assert cfg.servers["corp"].usable
    assert "deniedMcpServers" in cfg.servers["blocked"].disabled_reason
    assert "its URL matches no allowedMcpServers entry" in cfg.servers["evil"].disabled_reason


def test_an_empty_allow_list_admits_only_in_process_servers(hub_paths: HubPaths) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    server = mcp_lite.Server("inproc")

    @server.tool()
    def ping() -> str:
        return "pong"

    cfg = _load(hub_paths, {"allowedMcpServers": []}, dynamic={"inproc": server})
    assert "is empty" in cfg.servers["demo"].disabled_reason
    with Hub(cfg) as hub:
        assert hub.call_tool("mcp__inproc__ping").text == "pong"
        assert hub.status()["demo"].state == "disabled"


def test_a_malformed_managed_policy_fails_closed(hub_paths: HubPaths) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    cfg = _load(hub_paths, {"deniedMcpServers": [{"serverNam": "demo"}]})
    assert any("exactly one of serverName" in str(i) for i in cfg.issues)
    assert "blocked by policy" in cfg.servers["demo"].disabled_reason


def test_hub_arguments_apply_the_same_policy(served, inprocess_demo) -> None:
    config = {"mcpServers": {"demo": served(inprocess_demo()), "other": served(inprocess_demo())}}
    with Hub(config, denied_servers=[{"serverName": "other"}]) as hub:
        states = hub.status()
        assert states["other"].state == "disabled" and "Hub(" in (states["other"].error or "")
        assert states["demo"].state != "disabled"
    with Hub(config, allowed_servers=[{"serverName": "demo"}]) as hub:
        assert hub.status()["other"].state == "disabled"
        assert hub.call_tool("mcp__demo__add", {"a": 2, "b": 2}).text == "4"
    with pytest.raises(ConfigError, match="serverCommand"):
        Hub(config, allowed_servers=[{"serverCommand": "python"}])


def test_from_config_takes_the_policy_arguments_too(hub_paths: HubPaths) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    with _from_config(hub_paths, denied_servers=[{"serverCommand": [sys.executable, DEMO]}]) as hub:
        assert hub.status()["demo"].state == "disabled"
        hub.reload()
        assert hub.status()["demo"].state == "disabled"


# --- permission rules from settings files ------------------------------------------------------


def test_deny_rules_from_user_settings_and_allow_rules_from_the_project(
    hub_paths: HubPaths, served, inprocess_demo
) -> None:
    demo = served(inprocess_demo())
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": demo}})
    hub_paths.write(
        hub_paths.home / ".claude" / "settings.json",
        {"permissions": {"deny": ["mcp__demo__add", "Bash(rm:*)"]}},
    )
    hub_paths.write(
        hub_paths.project / ".claude" / "settings.json",
        {"permissions": {"allow": ["mcp__demo__*"]}},
    )
    with _from_config(hub_paths, default_permission="deny") as hub:
        names = [d["name"] for d in hub.tool_definitions()]
        assert "mcp__demo__add" not in names
        with pytest.raises(PermissionDenied, match="deny rule"):
            hub.call_tool("mcp__demo__add", {"a": 1, "b": 1})
        assert hub.call_tool("mcp__demo__word_count", {"text": "a b"}).text  # project allow


def test_project_allow_rules_need_trust(hub_paths: HubPaths, served, inprocess_demo) -> None:
    hub_paths.write(
        hub_paths.home / ".claude.json", {"mcpServers": {"demo": served(inprocess_demo())}}
    )  # a user-scope server
    hub_paths.write(
        hub_paths.project / ".claude" / "settings.local.json",
        {"permissions": {"allow": ["mcp__demo"]}},
    )
    untrusted = _from_config(hub_paths, trust_project=False, default_permission="deny")
    with untrusted as hub, pytest.raises(PermissionDenied, match="default policy is deny"):
        hub.call_tool("mcp__demo__add", {"a": 1, "b": 1})
    with _from_config(hub_paths, trust_project=["demo"], default_permission="deny") as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 1}).text == "2"


def test_an_always_answer_is_remembered_and_saved_to_local_settings(
    hub_paths: HubPaths, served, inprocess_demo
) -> None:
    demo = served(inprocess_demo())
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": demo}})
    local = hub_paths.project / ".claude" / "settings.local.json"
    hub_paths.write(local, {"permissions": {"allow": ["Read(*)"]}, "other": 1})
    asked: list[str] = []

    def handler(tool: Any, args: Any) -> str:
        asked.append(tool.name)
        return "always"

    with _from_config(hub_paths, permission_handler=handler) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text == "3"
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 3}).text == "4"
    assert asked == ["mcp__demo__add"]
    saved = json.loads(local.read_text())
    assert saved == {"permissions": {"allow": ["Read(*)", "mcp__demo__add"]}, "other": 1}

    def never(tool: Any, args: Any) -> bool:
        raise AssertionError("the saved rule decides")

    with _from_config(hub_paths, permission_handler=never) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 2, "b": 2}).text == "4"


def test_an_always_answer_on_a_code_hub_lasts_for_the_hub(served, inprocess_demo) -> None:
    asked: list[str] = []

    def handler(tool: Any, args: Any) -> str:
        asked.append(tool.name)
        return "always"

    with Hub({"demo": served(inprocess_demo())}, permission_handler=handler) as hub:
        hub.call_tool("mcp__demo__add", {"a": 1, "b": 2})
        hub.call_tool("mcp__demo__add", {"a": 1, "b": 2})
    assert asked == ["mcp__demo__add"]


def test_malformed_rules_in_settings_are_issues(hub_paths: HubPaths) -> None:
    hub_paths.write(
        hub_paths.home / ".claude" / "settings.json", {"permissions": {"deny": ["mcp__"]}}
    )
    cfg = _load(hub_paths)
    assert any("mcp__" in str(i) for i in cfg.issues)
    assert cfg.deny_rules == []
