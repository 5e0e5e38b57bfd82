"""Hub configuration: sources, precedence, enterprise exclusivity, dedup, trust, validation.

Every test builds its files under tmp_path (``hub_paths``) and passes every path and the
environment explicitly: nothing reads the real home directory or ``/etc``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError
from mcp_lite.hub.config import (
    HttpServerConfig,
    HubConfig,
    SdkServerConfig,
    ServerEntry,
    StdioServerConfig,
    WsIdeServerConfig,
    load_config,
    parse_servers,
)

if TYPE_CHECKING:
    from conftest import HubPaths  # tests/hub/conftest.py


def load(p: HubPaths, **kwargs: Any) -> HubConfig:
    kwargs.setdefault("environ", {})
    return load_config(p.project, user_dir=p.home, managed_path=p.managed, **kwargs)


def stdio(command: str, *args: str) -> dict[str, Any]:
    return {"command": command, "args": list(args)}


def servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


def dropped_names(cfg: HubConfig) -> list[tuple[str, str]]:
    return [(e.name, e.scope) for e in cfg.dropped]


# --- sources and precedence -----------------------------------------------------------------


def write_everywhere(p: HubPaths, name: str = "db") -> dict[str, Path]:
    """One server ``name`` in every source, each with a distinct command."""
    return {
        "user-settings": p.write(
            p.home / ".claude" / "settings.json", servers(**{name: stdio("user-settings")})
        ),
        "claude-json": p.write(
            p.home / ".claude.json",
            {
                "mcpServers": {name: stdio("user-claude-json")},
                "projects": {str(p.project): {"mcpServers": {name: stdio("local-claude-json")}}},
            },
        ),
        "settings-local": p.write(
            p.project / ".claude" / "settings.local.json",
            servers(**{name: stdio("local-settings")}),
        ),
        "mcp-json": p.write(p.project / ".mcp.json", servers(**{name: stdio("project")})),
    }


def test_every_source_is_read_with_its_scope(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude" / "settings.json", servers(u1=stdio("a")))
    p.write(
        p.home / ".claude.json",
        {
            "mcpServers": {"u2": stdio("b")},
            "projects": {
                str(p.project): {"mcpServers": {"l1": stdio("c")}},
                "/some/other/project": {"mcpServers": {"other": stdio("z")}},
            },
        },
    )
    p.write(p.project / ".claude" / "settings.local.json", servers(l2=stdio("d")))
    p.write(p.project / ".mcp.json", servers(p1=stdio("e")))
    extra = p.write(p.project / "extra.json", servers(x1=stdio("f")))
    cfg = load(
        p,
        config_files=[extra],
        dynamic={"d1": stdio("g")},
        remote=lambda: servers(r1={"type": "http", "url": "https://r.example/mcp"}),
    )
    scopes = {name: e.scope for name, e in cfg.servers.items()}
    assert scopes == {
        "u1": "user",
        "u2": "user",
        "l1": "local",
        "l2": "local",
        "p1": "project",
        "x1": "local",
        "d1": "dynamic",
        "r1": "remote",
    }
    assert list(cfg.servers) == sorted(cfg.servers)
    assert cfg.servers["l2"].source == str(p.project / ".claude" / "settings.local.json")
    assert cfg.servers["p1"].source == str(p.project / ".mcp.json")
    assert cfg.servers["x1"].source == str(extra)
    assert cfg.servers["d1"].source == "dynamic"
    assert cfg.servers["r1"].source.startswith("remote:")
    assert str(p.project) in cfg.servers["l1"].source
    assert cfg.issues == [] and not cfg.exclusive
    assert str(p.home / ".claude.json") in cfg.sources


@pytest.mark.parametrize(
    ("remove", "winner_scope", "winner_command"),
    [
        ((), "local", "local-settings"),
        (("settings-local",), "local", "local-claude-json"),
        (("settings-local", "claude-json-local"), "project", "project"),
        (("settings-local", "claude-json-local", "mcp-json"), "user", "user-claude-json"),
        (
            ("settings-local", "claude-json-local", "mcp-json", "claude-json"),
            "user",
            "user-settings",
        ),
        (
            ("settings-local", "claude-json-local", "mcp-json", "claude-json", "user-settings"),
            "dynamic",
            "dynamic",
        ),
    ],
)
def test_precedence_local_project_user_dynamic_remote(
    hub_paths: HubPaths, remove: tuple[str, ...], winner_scope: str, winner_command: str
) -> None:
    p = hub_paths
    files = write_everywhere(p)
    for key in remove:
        if key == "claude-json-local":
            p.write(p.home / ".claude.json", {"mcpServers": {"db": stdio("user-claude-json")}})
        elif key == "claude-json":
            p.write(p.home / ".claude.json", {})
        else:
            files[key].unlink()
    cfg = load(
        p,
        trust_project=True,
        dynamic={"db": stdio("dynamic")},
        remote=lambda: servers(db=stdio("remote")),
    )
    entry = cfg.servers["db"]
    assert (entry.scope, entry.target()["command"]) == (winner_scope, winner_command)
    # every loser is recorded with the reason, none is lost silently
    assert all(e.name == "db" and "overridden by" in (e.disabled_reason or "") for e in cfg.dropped)
    assert len(cfg.dropped) == 6 - len(remove)


def test_remote_is_lowest(hub_paths: HubPaths) -> None:
    cfg = load(hub_paths, remote=lambda: servers(db=stdio("remote"), only=stdio("r")))
    assert cfg.servers["db"].scope == "remote"
    cfg = load(hub_paths, dynamic={"db": stdio("dyn")}, remote=lambda: servers(db=stdio("remote")))
    assert cfg.servers["db"].scope == "dynamic"
    assert dropped_names(cfg) == [("db", "remote")]


def test_explicit_config_file_wins_over_other_local_sources(hub_paths: HubPaths) -> None:
    p = hub_paths
    write_everywhere(p)
    extra = p.write(p.project / "cli.json", servers(db=stdio("explicit")))
    cfg = load(p, config_files=[str(extra)])
    assert cfg.servers["db"].target()["command"] == "explicit"
    assert cfg.servers["db"].scope == "local"
    assert cfg.servers["db"].usable  # explicit files need no trust


def test_missing_explicit_config_file_is_an_issue(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(ok=stdio("x")))
    cfg = load(p, config_files=[p.project / "nope.json"])
    assert [(i.source, i.message) for i in cfg.issues] == [
        (str(p.project / "nope.json"), "file not found")
    ]
    assert "ok" in cfg.servers


def test_an_invalid_winner_is_kept_so_its_error_shows(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(db=stdio("good")))
    p.write(p.project / ".claude" / "settings.local.json", servers(db={"command": 3}))
    cfg = load(p)
    assert cfg.servers["db"].scope == "local"
    assert cfg.servers["db"].config is None and not cfg.servers["db"].usable
    assert dropped_names(cfg) == [("db", "user")]


# --- enterprise -----------------------------------------------------------------------------


def test_managed_file_is_the_only_source(hub_paths: HubPaths) -> None:
    p = hub_paths
    write_everywhere(p, name="mine")
    p.write(p.managed, servers(corp={"type": "http", "url": "https://corp.example/mcp"}))
    calc = mcp_lite.Server("calc")
    called: list[int] = []

    def remote() -> dict[str, Any]:
        called.append(1)
        return servers(r=stdio("r"))

    cfg = load(p, trust_project=True, dynamic={"calc": calc, "dyn": stdio("d")}, remote=remote)
    assert cfg.exclusive
    assert set(cfg.servers) == {"corp", "calc"}
    assert cfg.servers["corp"].scope == "enterprise" and cfg.servers["corp"].usable
    assert cfg.servers["corp"].source == str(p.managed)
    assert cfg.servers["calc"].target() is calc  # in-process servers are exempt
    assert called == []  # remote sources are not even asked
    assert cfg.sources == ["dynamic", str(p.managed)]
    assert dropped_names(cfg) == [("dyn", "dynamic")]
    assert "managed-mcp.json is in force" in (cfg.dropped[0].disabled_reason or "")
    assert cfg.issues == []


def test_empty_managed_file_disables_every_file_server(hub_paths: HubPaths) -> None:
    p = hub_paths
    write_everywhere(p)
    p.write(p.managed, {"mcpServers": {}})
    cfg = load(p)
    assert cfg.exclusive and cfg.servers == {}


def test_broken_managed_file_still_excludes_the_rest(hub_paths: HubPaths) -> None:
    p = hub_paths
    write_everywhere(p)
    p.write(p.managed, "{not json")
    cfg = load(p)
    assert cfg.exclusive and cfg.servers == {}
    assert len(cfg.issues) == 1 and cfg.issues[0].source == str(p.managed)
    assert "not valid JSON" in cfg.issues[0].message


def test_no_managed_file_means_not_exclusive(hub_paths: HubPaths) -> None:
    write_everywhere(hub_paths)
    assert not load(hub_paths).exclusive


# --- signature dedup ------------------------------------------------------------------------


def test_dynamic_duplicate_of_manual_entry_is_dropped(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(github=stdio("npx", "-y", "gh-mcp")))
    cfg = load(
        p,
        dynamic={
            "plugin-github": stdio("npx", "-y", "gh-mcp"),
            "plugin-other": stdio("npx", "-y", "other"),
        },
    )
    assert set(cfg.servers) == {"github", "plugin-other"}
    assert dropped_names(cfg) == [("plugin-github", "dynamic")]
    reason = cfg.dropped[0].disabled_reason or ""
    assert "same content" in reason and "'github'" in reason and "user" in reason


def test_different_args_are_not_duplicates(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(a=stdio("npx", "x", "--flag")))
    cfg = load(p, dynamic={"b": stdio("npx", "x")})
    assert set(cfg.servers) == {"a", "b"}


def test_remote_duplicate_by_normalized_url_is_dropped(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(
        p.project / ".mcp.json",
        servers(notion={"type": "http", "url": "https://MCP.Notion.com:443/mcp/"}),
    )
    remote = lambda: servers(  # noqa: E731
        connector={"type": "http", "url": "https://mcp.notion.com/mcp"},
        other={"type": "http", "url": "https://mcp.notion.com/other"},
    )
    cfg = load(p, trust_project=True, remote=remote)
    assert set(cfg.servers) == {"notion", "other"}
    assert dropped_names(cfg) == [("connector", "remote")]


def test_remote_duplicate_of_dynamic_is_dropped(hub_paths: HubPaths) -> None:
    cfg = load(hub_paths, dynamic={"d": stdio("x")}, remote=lambda: servers(r=stdio("x")))
    assert set(cfg.servers) == {"d"} and dropped_names(cfg) == [("r", "remote")]


def test_unusable_manual_entry_does_not_suppress_a_duplicate(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.project / ".mcp.json", servers(proj=stdio("same")))  # untrusted
    p.write(p.home / ".claude.json", servers(off={"command": "other", "disabled": True}))
    cfg = load(p, dynamic={"dyn": stdio("same"), "dyn2": stdio("other")})
    assert {"proj", "off", "dyn", "dyn2"} == set(cfg.servers)
    assert cfg.dropped == []


# --- names ----------------------------------------------------------------------------------


def test_in_process_server_names_are_reserved(hub_paths: HubPaths) -> None:
    p = hub_paths
    calc = mcp_lite.Server("calc")
    p.write(p.project / ".claude" / "settings.local.json", servers(calc=stdio("evil")))
    cfg = load(p, dynamic={"calc": calc})
    entry = cfg.servers["calc"]
    assert entry.scope == "dynamic" and isinstance(entry.config, SdkServerConfig)
    assert entry.target() is calc and entry.signature() is None
    [issue] = cfg.issues
    assert issue.server == "calc" and "reserved" in issue.message
    assert issue.source == str(p.project / ".claude" / "settings.local.json")
    assert dropped_names(cfg) == [("calc", "local")]


def test_dynamic_non_sdk_names_are_not_reserved(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(tool=stdio("mine")))
    cfg = load(p, dynamic={"tool": stdio("plugin")})
    assert cfg.servers["tool"].scope == "user" and cfg.issues == []


@pytest.mark.parametrize("name", ["a__b", "bad name", "dots.too", "_lead", "trail_", "café", ""])
def test_bad_names_are_refused(hub_paths: HubPaths, name: str) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(**{name: stdio("x"), "fine-name_1": stdio("y")}))
    cfg = load(p)
    assert cfg.servers["fine-name_1"].usable
    entry = cfg.servers[name]
    assert entry.config is None and "invalid server name" in (entry.error or "")
    [issue] = cfg.issues
    assert issue.server == name and issue.source == str(p.home / ".claude.json")


# --- ${VAR} expansion -----------------------------------------------------------------------


def test_variables_are_expanded_in_values(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(
        p.home / ".claude.json",
        servers(
            s={
                "command": "${BIN}/srv",
                "args": ["--db", "${DB:-sqlite://}", "${EMPTY:-fallback}"],
                "env": {"TOKEN": "${TOKEN}", "${KEY}": "k"},
                "cwd": "${BIN}",
            },
            h={
                "type": "http",
                "url": "https://${HOST}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            },
        ),
    )
    environ = {"BIN": "/opt/bin", "TOKEN": "t0k", "HOST": "api.example", "EMPTY": "", "KEY": "no"}
    cfg = load(p, environ=environ)
    assert cfg.servers["s"].target() == {
        "command": "/opt/bin/srv",
        "args": ["--db", "sqlite://", "fallback"],
        "env": {"TOKEN": "t0k", "${KEY}": "k"},  # keys are never expanded
        "cwd": "${BIN}",  # only command, args, env, url and headers are expanded
    }
    target = cfg.servers["h"].target()
    assert isinstance(target, dict)
    assert target["url"] == "https://api.example/mcp"
    assert target["headers"] == {"Authorization": "Bearer t0k"}


def test_missing_variable_is_a_per_server_error(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(
        p.home / ".claude.json",
        servers(
            needs={"command": "srv", "env": {"K": "${API_KEY}"}, "args": ["${ALSO}"]},
            fine={"command": "srv", "env": {"K": "${API_KEY:-none}"}},
        ),
    )
    cfg = load(p)
    assert cfg.servers["needs"].error == "missing environment variables ALSO, API_KEY" or (
        cfg.servers["needs"].error == "missing environment variables API_KEY, ALSO"
    )
    assert cfg.servers["needs"].config is None
    assert cfg.servers["fine"].usable
    assert [(i.server, i.source) for i in cfg.issues] == [("needs", str(p.home / ".claude.json"))]


def test_single_missing_variable_message() -> None:
    entries, issues = parse_servers(servers(s=stdio("${NOPE}")), "user", "x.json", environ={})
    assert entries["s"].error == "missing environment variable NOPE"
    assert issues[0].message == "missing environment variable NOPE"


def test_expansion_is_not_recursive() -> None:
    entries, _ = parse_servers(
        servers(s=stdio("${A}", "${B:-${A}}")), "user", "x", environ={"A": "${B}", "B": ""}
    )
    target = entries["s"].target()
    assert isinstance(target, dict)
    # the value of A is not expanded again, nor is a default
    assert target["command"] == "${B}"
    # the default is taken literally: "${B:-${A}" + "}" gives "${A" + "}", never A's value
    assert target["args"] == ["${A}"]


# --- validation -----------------------------------------------------------------------------


def test_bad_entry_names_file_server_and_field(hub_paths: HubPaths) -> None:
    p = hub_paths
    mcp_json = p.write(
        p.project / ".mcp.json",
        servers(
            good=stdio("ok"),
            badargs={"command": "x", "args": ["a", 2]},
            badurl={"type": "sse", "url": "ftp://nope"},
            badtype={"type": "carrier-pigeon", "url": "https://x"},
            notype={"args": []},
            notobj=["x"],
            badtimeout={"command": "x", "timeout": -1},
        ),
    )
    cfg = load(p, trust_project=True)
    assert cfg.servers["good"].usable
    messages = {i.server: i.message for i in cfg.issues}
    assert all(i.source == str(mcp_json) for i in cfg.issues)
    assert messages["badargs"].startswith("args.1: ")
    assert messages["badurl"].startswith("url: must be a http:// or https:// URL")
    assert messages["badtype"].startswith("type: ") and "carrier-pigeon" in messages["badtype"]
    assert messages["notype"].startswith("type: missing")
    assert messages["notobj"] == "expected an object, got list"
    assert messages["badtimeout"].startswith("timeout: ")
    error = cfg.servers["badargs"].error or ""
    assert str(mcp_json) in error and "'badargs'" in error and "args.1" in error
    assert str(cfg.issues[0]).startswith(f"{mcp_json}: server ")


def test_invalid_json_file_is_one_issue_and_others_load(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.project / ".mcp.json", '{"mcpServers": {"x": ')
    p.write(p.home / ".claude.json", servers(u=stdio("u")))
    cfg = load(p)
    assert set(cfg.servers) == {"u"}
    [issue] = cfg.issues
    assert issue.source == str(p.project / ".mcp.json") and issue.server is None
    assert "not valid JSON" in issue.message


def test_mcp_servers_must_be_an_object(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude" / "settings.json", {"mcpServers": ["x"]})
    p.write(p.project / ".mcp.json", [1, 2])
    cfg = load(p)
    assert cfg.servers == {}
    assert sorted(i.message.split(",")[0] for i in cfg.issues) == [
        "'mcpServers' must be an object",
        "expected a JSON object with 'mcpServers'",
    ]


def test_settings_files_without_mcp_servers_are_fine(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude" / "settings.json", {"theme": "dark", "permissions": {}})
    p.write(p.home / ".claude.json", {"numStartups": 3})
    cfg = load(p)
    assert cfg.servers == {} and cfg.issues == []


def test_types_are_inferred_and_aliases_accepted() -> None:
    entries, issues = parse_servers(
        {
            "a": {"url": "https://x.example/mcp"},
            "b": {"url": "wss://x.example/ws"},
            "c": {"type": "streamable-http", "url": "https://x.example/mcp"},
            "d": {"type": "claudeai-proxy", "url": "https://proxy.example/x", "id": "srv_1"},
            "e": {"command": "x", "alwaysLoad": True},
        },
        "user",
        "x",
    )
    assert issues == []
    assert [entries[n].config.type for n in "abcde"] == [  # type: ignore[union-attr]
        "http",
        "ws",
        "http",
        "proxy",
        "stdio",
    ]
    assert entries["e"].config.model_extra == {"alwaysLoad": True}  # type: ignore[union-attr]


def test_disabled_in_config(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(off={"command": "x", "disabled": True}))
    entry = load(p).servers["off"]
    assert entry.config is not None and not entry.usable
    assert "disabled" in (entry.disabled_reason or "")


def test_sdk_type_cannot_come_from_a_file(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(s={"type": "sdk", "name": "s"}))
    cfg = load(p)
    assert cfg.servers["s"].config is None
    assert cfg.issues[0].message.startswith("server: ")


# --- project trust --------------------------------------------------------------------------


def write_project(p: HubPaths) -> None:
    p.write(
        p.project / ".mcp.json",
        servers(local=stdio("run-me"), web={"type": "http", "url": "https://web.example/mcp"}),
    )


def test_project_servers_are_untrusted_by_default(hub_paths: HubPaths) -> None:
    write_project(hub_paths)
    cfg = load(hub_paths)
    for name in ("local", "web"):  # remote project servers need trust too (conservative)
        entry = cfg.servers[name]
        assert entry.config is not None and not entry.usable
        reason = entry.disabled_reason or ""
        assert "not trusted" in reason and "trust_project=True" in reason
        assert f"trust_project=[{name!r}]" in reason
    assert cfg.issues == []


def test_trust_all_by_flag(hub_paths: HubPaths) -> None:
    write_project(hub_paths)
    cfg = load(hub_paths, trust_project=True)
    assert cfg.servers["local"].usable and cfg.servers["web"].usable


@pytest.mark.parametrize("trust", [["local"], ("local",), "local", {"local"}])
def test_trust_by_name(hub_paths: HubPaths, trust: Any) -> None:
    write_project(hub_paths)
    cfg = load(hub_paths, trust_project=trust)
    assert cfg.servers["local"].usable
    assert not cfg.servers["web"].usable


def test_approvals_from_the_users_own_files(hub_paths: HubPaths) -> None:
    p = hub_paths
    write_project(p)
    p.write(
        p.home / ".claude.json",
        {
            "projects": {
                str(p.project): {
                    "enabledMcpjsonServers": ["local"],
                    "disabledMcpjsonServers": ["web"],
                }
            }
        },
    )
    cfg = load(p)
    assert cfg.servers["local"].usable
    assert "rejected" in (cfg.servers["web"].disabled_reason or "")
    # a name given explicitly beats a recorded rejection
    assert load(p, trust_project=["web"]).servers["web"].usable
    p.write(
        p.home / ".claude.json", {"projects": {str(p.project): {"disabledMcpjsonServers": ["web"]}}}
    )
    assert not load(p).servers["local"].usable
    p.write(p.home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    cfg = load(p)
    assert cfg.servers["local"].usable and not cfg.servers["web"].usable


def test_approvals_shipped_inside_the_project_are_ignored(hub_paths: HubPaths) -> None:
    p = hub_paths
    write_project(p)
    p.write(
        p.project / ".claude" / "settings.local.json",
        {"enableAllProjectMcpServers": True, "enabledMcpjsonServers": ["local"]},
    )
    p.write(p.project / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    cfg = load(p)
    assert not cfg.servers["local"].usable and not cfg.servers["web"].usable


def test_local_and_user_servers_need_no_trust(hub_paths: HubPaths) -> None:
    files = write_everywhere(hub_paths)
    files["settings-local"].unlink()  # in the project folder: see the next test
    entry = load(hub_paths).servers["db"]
    assert entry.scope == "local" and entry.usable  # ~/.claude.json projects[...]: the user's


def test_settings_local_inside_the_project_needs_trust(hub_paths: HubPaths) -> None:
    # The project could ship .claude/settings.local.json itself: its servers wait for the
    # same trust as .mcp.json ones (issue 9, principle 5), though their scope is local.
    p = hub_paths
    p.write(p.project / ".claude" / "settings.local.json", servers(db=stdio("local-settings")))
    entry = load(p).servers["db"]
    assert entry.scope == "local" and not entry.usable
    assert "not trusted" in (entry.disabled_reason or "")
    assert load(p, trust_project=["db"]).servers["db"].usable
    assert load(p, trust_project=True).servers["db"].usable


# --- remote ---------------------------------------------------------------------------------


def test_remote_callable(hub_paths: HubPaths) -> None:
    def connectors() -> dict[str, Any]:
        return servers(notion={"type": "http", "url": "https://mcp.notion.com/mcp"})

    cfg = load(hub_paths, remote=connectors)
    entry = cfg.servers["notion"]
    assert entry.scope == "remote" and entry.usable
    assert entry.source.startswith("remote:") and "connectors" in entry.source


def test_remote_failure_becomes_an_issue(hub_paths: HubPaths) -> None:
    p = hub_paths
    p.write(p.home / ".claude.json", servers(u=stdio("u")))

    def broken() -> dict[str, Any]:
        raise RuntimeError("service down")

    cfg = load(p, remote=broken)
    assert set(cfg.servers) == {"u"}
    [issue] = cfg.issues
    assert issue.server is None and "broken" in issue.source
    assert "RuntimeError: service down" in issue.message


def test_remote_url_failure_becomes_an_issue(hub_paths: HubPaths) -> None:
    cfg = load(hub_paths, remote="not-a-url")  # requests refuses it without any I/O
    [issue] = cfg.issues
    assert issue.source == "remote:not-a-url" and "could not load remote servers" in issue.message


def _serve_once(body: bytes, drip: bool = False) -> tuple[str, Any]:
    """A loopback HTTP server answering every GET with ``body`` (one byte per 0.2 s when
    ``drip``); returns its URL and the server (``shutdown()`` it)."""
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            head = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
            try:
                if not drip:
                    self.wfile.write(head + body)
                    return
                for i in range(600):
                    self.wfile.write((head + b" " * 1000)[i : i + 1])
                    time.sleep(0.2)
            except OSError:
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}/list?key=s3cr3t-remote", httpd


def test_remote_url_is_fetched(hub_paths: HubPaths) -> None:
    url, httpd = _serve_once(
        json.dumps(servers(r={"type": "sse", "url": "https://sse.example/sse"})).encode()
    )
    try:
        cfg = load(hub_paths, remote=url)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert cfg.servers["r"].scope == "remote" and cfg.servers["r"].usable
    assert "s3cr3t-remote" not in cfg.servers["r"].source  # the URL's query is not shown


def test_remote_url_is_bounded_in_time_and_refused_over_plain_http(
    hub_paths: HubPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_lite.hub.config import _sources as _config_sources

    monkeypatch.setattr(_config_sources, "REMOTE_TIMEOUT", 1.0)
    url, httpd = _serve_once(b"", drip=True)
    try:
        cfg = load(hub_paths, remote=url)  # a drip is cut off at the total deadline
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert cfg.servers == {} and "could not load remote servers" in cfg.issues[0].message
    assert "s3cr3t-remote" not in str(cfg.issues[0])
    cfg = load(hub_paths, remote="http://connectors.example.test/list")
    assert "https" in cfg.issues[0].message  # refused before any request


def test_remote_returning_garbage_is_an_issue(hub_paths: HubPaths) -> None:
    cfg = load(hub_paths, remote=lambda: ["not", "a", "mapping"])  # type: ignore[arg-type,return-value]
    assert cfg.servers == {} and "expected a JSON object" in cfg.issues[0].message


# --- target() and signature() ---------------------------------------------------------------


def entry_for(raw: dict[str, Any], name: str = "s") -> ServerEntry:
    entries, issues = parse_servers({name: raw}, "user", "t.json", environ={})
    assert issues == [], issues
    return entries[name]


def test_target_stdio() -> None:
    entry = entry_for(
        {
            "command": "python",
            "args": ["srv.py"],
            "env": {"A": "1"},
            "timeout": 30,
            "disabled": False,
        }
    )
    assert isinstance(entry.config, StdioServerConfig) and entry.config.timeout == 30
    assert entry.target() == {
        "command": "python",
        "args": ["srv.py"],
        "env": {"A": "1"},
        "cwd": None,
    }
    assert entry.signature() == 'stdio:["python", "srv.py"]'


def test_target_http_keeps_oauth_and_unknown_fields() -> None:
    entry = entry_for(
        {
            "type": "http",
            "url": "https://x.example/mcp",
            "headers": {"A": "b"},
            "oauth": {"clientId": "cid", "callbackPort": 8123, "extra": 1},
            "connectTimeout": 5,
            "timeout": 9,
        }
    )
    assert isinstance(entry.config, HttpServerConfig)
    assert entry.target() == {
        "type": "http",
        "url": "https://x.example/mcp",
        "headers": {"A": "b"},
        "connectTimeout": 5,
        "oauth": {"clientId": "cid", "callbackPort": 8123, "extra": 1},
    }
    assert entry.signature() == "url:https://x.example/mcp"


def test_target_ws_ide_uses_the_transport_header_key() -> None:
    entry = entry_for(
        {"type": "ws-ide", "url": "ws://127.0.0.1:9000", "authToken": "tok", "ideName": "vscode"}
    )
    assert isinstance(entry.config, WsIdeServerConfig)
    assert entry.target() == {
        "type": "ws-ide",
        "url": "ws://127.0.0.1:9000",
        "headers": {},
        "ideName": "vscode",
        "authToken": "tok",
        "authHeaderName": "X-Claude-Code-Ide-Authorization",
    }


def test_target_proxy_and_sse_ide() -> None:
    def provider() -> str:
        return "t"

    proxy = entry_for({"type": "proxy", "url": "https://p.example/mcp", "token_provider": provider})
    assert proxy.target() == {
        "type": "proxy",
        "url": "https://p.example/mcp",
        "headers": {},
        "token_provider": provider,
    }
    ide = entry_for({"type": "sse-ide", "url": "http://127.0.0.1:1234/sse", "ideName": "jb"})
    assert ide.target() == {
        "type": "sse-ide",
        "url": "http://127.0.0.1:1234/sse",
        "headers": {},
        "ideName": "jb",
    }


def test_target_of_an_invalid_entry_raises() -> None:
    entries, _ = parse_servers({"s": {"command": 1}}, "user", "t.json")
    with pytest.raises(ConfigError, match="no valid config"):
        entries["s"].target()
    assert entries["s"].signature() is None


def test_target_connects(hub_paths: HubPaths) -> None:
    """The dict target() gives is accepted by the transport factory as is."""
    from mcp_lite.transports import make_transport

    server = mcp_lite.Server("calc")
    cfg = load(hub_paths, dynamic={"calc": server})
    transport = make_transport(cfg.servers["calc"].target())
    assert type(transport).__name__ == "InProcessTransport"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://Example.com/mcp/", "https://example.com/mcp"),
        ("https://example.com:443/mcp", "https://example.com/mcp"),
        ("http://example.com:80/mcp#frag", "http://example.com/mcp"),
    ],
)
def test_url_signatures_normalize(a: str, b: str) -> None:
    assert (
        entry_for({"type": "http", "url": a}).signature()
        == entry_for({"type": "http", "url": b}).signature()
    )


def test_url_signature_keeps_port_path_and_query() -> None:
    base = entry_for({"type": "http", "url": "https://example.com/mcp"}).signature()
    for other in (
        "https://example.com:8443/mcp",
        "https://example.com/mcp2",
        "https://example.com/mcp?x=1",
        "http://example.com/mcp",
    ):
        assert entry_for({"type": "http", "url": other}).signature() != base


def test_the_entry_schema_sits_below_the_client_and_the_hub_loader() -> None:
    # connect(dict) and the Hub share one validator in mcp_lite._server_config: the client
    # imports nothing from hub/, and hub/config/_discovery (where files are) not the loader
    # (the package's own names: only its private modules).
    import ast

    root = Path(mcp_lite.__file__).parent

    def imported(path: Path) -> set[str]:
        return {
            "." * node.level + (node.module or "")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom)
        }

    for module in (root / "client").glob("*.py"):
        assert not {m for m in imported(module) if "hub" in m}, module.name
    discovery = ast.parse((root / "hub" / "config" / "_discovery.py").read_text())
    assert all(
        alias.name.startswith("_")
        for node in ast.walk(discovery)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module
        for alias in node.names
    )
    assert ".." not in imported(root / "hub" / "config" / "_discovery.py")
    assert not {m for m in imported(root / "_server_config.py") if "hub" in m}
    from mcp_lite import _server_config
    from mcp_lite.hub import config

    assert config.validate_target is _server_config.validate_target
    assert config.StdioServerConfig is _server_config.StdioServerConfig
