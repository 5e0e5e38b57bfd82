"""Config discovery as Claude Code does it: .mcp.json walked up to the repository root,
CLAUDE_CONFIG_DIR, plugin folders, MCP_TIMEOUT / MCP_TOOL_TIMEOUT, url-only entries, and the
CLI run from a subdirectory. Real servers, config files in temporary folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mcp_lite.errors import RequestTimeout
from mcp_lite.hub import Hub
from mcp_lite.hub.config import load_config

if TYPE_CHECKING:
    from conftest import HubPaths  # tests/hub/conftest.py

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")


def _demo(*extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO, *extra]}


def _load(paths: HubPaths, project: Path, **kw: Any) -> Any:
    kw.setdefault("trust_project", True)
    kw.setdefault("user_dir", paths.home)
    return load_config(
        project,
        managed_path=paths.managed,
        managed_settings_path=paths.managed.with_name("managed-settings.json"),
        **kw,
    )


@pytest.fixture
def repo(hub_paths: HubPaths) -> Path:
    """project/ is a repository (``.git``) with a subfolder sub/deeper/."""
    (hub_paths.project / ".git").mkdir()
    deeper = hub_paths.project / "sub" / "deeper"
    deeper.mkdir(parents=True)
    return deeper


def test_mcp_json_is_found_walking_up_to_the_repository_root(
    hub_paths: HubPaths, repo: Path
) -> None:
    hub_paths.write(hub_paths.project.parent / ".mcp.json", {"mcpServers": {"outside": _demo()}})
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"a": _demo(), "b": _demo()}})
    hub_paths.write(repo.parent / ".mcp.json", {"mcpServers": {"b": _demo("--near")}})
    cfg = _load(hub_paths, repo)
    assert sorted(cfg.servers) == ["a", "b"]  # not above the repository root
    assert cfg.servers["a"].source == str(hub_paths.project / ".mcp.json")
    assert cfg.servers["b"].source == str(repo.parent / ".mcp.json")  # the nearest wins
    assert cfg.servers["b"].config.args[-1] == "--near"
    assert all(e.scope == "project" for e in cfg.servers.values())


def test_outside_a_repository_the_walk_goes_to_the_filesystem_root(
    hub_paths: HubPaths,
) -> None:
    deeper = hub_paths.project / "x" / "y"
    deeper.mkdir(parents=True)
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"top": _demo()}})
    top = _load(hub_paths, deeper).servers["top"]  # found, but above the project (deeper)
    assert "above the project root" in (top.disabled_reason or "")
    assert _load(hub_paths, deeper, trust_project=["top"]).servers["top"].usable


def test_project_servers_found_upwards_still_need_trust(hub_paths: HubPaths, repo: Path) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"a": _demo()}})
    cfg = _load(hub_paths, repo, trust_project=False)
    assert "not trusted" in (cfg.servers["a"].disabled_reason or "")


def test_claude_config_dir_replaces_the_user_folder(hub_paths: HubPaths, tmp_path: Path) -> None:
    config_dir = tmp_path / "cfg"
    hub_paths.write(config_dir / "settings.json", {"mcpServers": {"fromdir": _demo()}})
    hub_paths.write(config_dir / ".claude.json", {"mcpServers": {"fromjson": _demo("--x")}})
    hub_paths.write(hub_paths.home / ".claude.json", {"mcpServers": {"home": _demo()}})
    cfg = _load(
        hub_paths, hub_paths.project, user_dir=None, environ={"CLAUDE_CONFIG_DIR": str(config_dir)}
    )
    assert sorted(cfg.servers) == ["fromdir", "fromjson"]
    assert cfg.servers["fromdir"].scope == "user"
    assert cfg.servers["fromdir"].source == str(config_dir / "settings.json")


def test_plugins_are_dynamic_and_duplicates_of_manual_entries_dropped(
    hub_paths: HubPaths, tmp_path: Path
) -> None:
    plugins = tmp_path / "plugins"
    hub_paths.write(plugins / "weather" / ".mcp.json", {"mcpServers": {"weather": _demo("--w")}})
    hub_paths.write(plugins / "dup" / ".mcp.json", {"mcpServers": {"dupe": _demo()}})
    (plugins / "empty").mkdir()
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    cfg = _load(hub_paths, hub_paths.project, plugins_dir=plugins)
    assert cfg.servers["weather"].scope == "dynamic"
    assert cfg.servers["weather"].source == str(plugins / "weather" / ".mcp.json")
    assert "dupe" not in cfg.servers
    assert any(
        e.name == "dupe" and "same content" in (e.disabled_reason or "") for e in cfg.dropped
    )
    with Hub(cfg) as hub:
        assert hub.call_tool("mcp__weather__add", {"a": 1, "b": 1}).text == "2"


def test_url_only_entry_is_streamable_http_with_legacy_sse_fallback(
    hub_paths: HubPaths,
    official_server_cmd: Callable[..., list[str]],
    start_http_peer: Callable[..., Any],
    free_port: int,
) -> None:
    peer = start_http_peer(official_server_cmd("sse", "--port", str(free_port)), free_port)
    hub_paths.write(
        hub_paths.project / ".mcp.json", {"mcpServers": {"legacy": {"url": f"{peer.url}/sse"}}}
    )
    cfg = _load(hub_paths, hub_paths.project)
    assert cfg.servers["legacy"].config.type == "http"
    with Hub(cfg) as hub:
        assert hub.connect_all()["legacy"].state == "connected"
        assert hub.call_tool("mcp__legacy__echo", {"text": "hi"}).text == "hi"


def test_mcp_timeout_bounds_the_connect_and_requests_keep_their_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(120)"]}
    monkeypatch.setenv("MCP_TIMEOUT", "1500")
    with Hub({"silent": silent, "demo": _demo()}, client_options={"timeout": 45}) as hub:
        states = hub.connect_all()
        assert states["silent"].state in ("failed", "pending")
        assert "1.5" in (states["silent"].error or ""), states["silent"].error
        assert states["demo"].state == "connected"
        assert hub.client("demo").timeout == 45.0


def test_mcp_tool_timeout_bounds_tool_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "200")
    with Hub({"demo": _demo()}) as hub:
        with pytest.raises(RequestTimeout):
            hub.call_tool("mcp__demo__countdown", {"n": 10})
        assert hub.call_tool("mcp__demo__countdown", {"n": 2}, timeout=60).text == "liftoff"


def test_the_cli_run_from_a_subdirectory_finds_the_project(hub_paths: HubPaths, repo: Path) -> None:
    hub_paths.write(hub_paths.project / ".mcp.json", {"mcpServers": {"demo": _demo()}})
    env = {**os.environ, "HOME": str(hub_paths.home)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_lite",
            "call",
            "mcp__demo__add",
            '{"a": 2, "b": 5}',
            "--trust-project",
            "--json",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["content"][0]["text"] == "7"
