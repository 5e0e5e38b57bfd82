"""Connection states as ``Hub.status()`` shows them: lazy start, connected, failed with the
reason, pending with backoff, needs-auth (and its TTL file), disabled; memoized connections;
one broken server never breaks the others; close() leaves no process behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import AuthRequired, ConfigError, ConnectError
from mcp_lite.hub import Backoff, Hub
from mcp_lite.hub.config import HubConfig, SdkServerConfig, ServerEntry

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")
FAST = Backoff(base=0.01, max_attempts=3, cooldown=60.0)

# Exits with an error on its first FAILS starts (counted in a file), then serves the demo.
FLAKY = r"""
import os, runpy, sys
counter, fails, demo = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
if n < fails:
    sys.stderr.write(f"flaky: start {n + 1} fails on purpose\n")
    sys.exit(1)
sys.argv = [demo]
runpy.run_path(demo, run_name="__main__")
"""


def _demo() -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO]}


def _flaky(counter: Path, fails: int) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-c", FLAKY, str(counter), str(fails), DEMO]}


@pytest.fixture
def auth_file(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "needs-auth.json"




def test_servers_start_lazily_and_connect_on_first_use(no_leftover_processes) -> None:
    with Hub({"mcpServers": {"demo": _demo()}}) as hub:
        status = hub.status()["demo"]
        assert (status.state, status.scope, status.type, status.tools_count) == (
            "pending", "dynamic", "stdio", None)
        no_leftover_processes()  # nothing was started yet
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text == "3"
        status = hub.status()["demo"]
        assert (status.state, status.error, status.tools_count) == ("connected", None, 4)


def test_a_server_that_fails_twice_then_works_ends_connected(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    with Hub({"flaky": _flaky(counter, 2)}, backoff=FAST) as hub:
        assert hub.call_tool("mcp__flaky__add", {"a": 2, "b": 2}).text == "4"
        status = hub.status()["flaky"]
        assert (status.state, status.attempts) == ("connected", 3)
    assert counter.read_text() == "3"


def test_a_server_that_keeps_failing_is_failed_with_the_reason(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    with Hub({"flaky": _flaky(counter, 100)}, backoff=FAST) as hub:
        with pytest.raises(mcp_lite.TransportError, match="fails on purpose"):
            hub.client("flaky")
        status = hub.status()["flaky"]
        assert status.state == "failed" and "fails on purpose" in (status.error or "")
        assert status.attempts == 3 and counter.read_text() == "3"
        # Within the cool-down a use fails at once, without starting the server again.
        with pytest.raises(ConnectError, match="reconnect"):
            hub.call_tool("mcp__flaky__add", {"a": 1, "b": 1})
        assert counter.read_text() == "3"
        # reconnect() ignores the cool-down.
        snapshot = hub.reconnect("flaky")
        assert snapshot.status.state == "failed" and snapshot.tools == []
        assert counter.read_text() == "6"


def test_reconnect_returns_fresh_tools_resources_and_prompts() -> None:
    with Hub({"demo": _demo()}) as hub:
        first_pid = hub.client("demo").transport.pid
        snapshot = hub.reconnect("demo")
        assert snapshot.status.state == "connected" and snapshot.status.tools_count == 4
        assert {t.name for t in snapshot.tools} >= {"mcp__demo__add", "mcp__demo__now"}
        assert [r.uri for r in snapshot.resources] == ["demo://readme"]
        assert [p.name for p in snapshot.prompts] == ["mcp__demo__summarize"]
        assert hub.client("demo").transport.pid != first_pid


def test_one_broken_server_does_not_break_the_others(tmp_path: Path, inprocess_demo) -> None:
    config = {"mcpServers": {
        "good": inprocess_demo(),
        "missing": {"command": str(tmp_path / "no-such-program")},
        "crashy": _flaky(tmp_path / "c", 100),
        "invalid": {"type": "http", "url": "not a url"},
    }}
    with Hub(config, backoff=FAST) as hub:
        assert {t.server for t in hub.tools()} == {"good"}
        states = {n: s.state for n, s in hub.status().items()}
        assert states == {"good": "connected", "missing": "failed", "crashy": "failed",
                          "invalid": "failed"}
        assert "invalid" in [i.server for i in hub.issues]
        assert hub.call_tool("mcp__good__add", {"a": 1, "b": 1}).text == "2"
        with pytest.raises(ConfigError, match="invalid"):
            hub.call_tool("mcp__invalid__x")


def test_disable_and_enable(no_leftover_processes) -> None:
    with Hub({"demo": _demo()}) as hub:
        pid = hub.client("demo").transport.pid
        hub.disable("demo")
        assert hub.status()["demo"].state == "disabled"
        assert hub.tools() == []
        with pytest.raises(ConnectError, match="disabled"):
            hub.call_tool("mcp__demo__add", {"a": 1, "b": 1})
        no_leftover_processes()  # disabling stopped the server
        hub.enable("demo")
        assert hub.status()["demo"].state == "pending"
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 1}).text == "2"
        assert hub.client("demo").transport.pid != pid


def test_disabled_in_config_is_disabled_with_the_reason() -> None:
    with Hub({"demo": {**_demo(), "disabled": True}}) as hub:
        status = hub.status()["demo"]
        assert status.state == "disabled" and "disabled" in (status.error or "")
        assert hub.tools() == []
        with pytest.raises(ConfigError):
            hub.enable("demo")


def test_same_config_keeps_the_connection_a_changed_one_replaces_it(pid_gone) -> None:
    hub = Hub({"demo": _demo()})
    with hub:
        pid = hub.client("demo").transport.pid
        hub.update({"demo": _demo()})
        assert hub.client("demo").transport.pid == pid
        hub.update({"demo": {**_demo(), "env": {"DEMO_FLAVOUR": "2"}}})
        assert hub.status()["demo"].state == "pending"
        new_pid = hub.client("demo").transport.pid
        assert new_pid != pid and pid_gone(pid)
        hub.update({})
        assert hub.status() == {} and pid_gone(new_pid)


def test_hub_config_entries_keep_their_scope_and_source(inprocess_demo) -> None:
    # (the entries' kind is not the subject: in-process servers, nothing started)
    entry = ServerEntry(name="demo", scope="project", config=SdkServerConfig(
        server=inprocess_demo()), source="/p/.mcp.json")
    untrusted = ServerEntry(name="other", scope="project", config=SdkServerConfig(
        server=inprocess_demo()), source="/p/.mcp.json",
        disabled_reason="project server not trusted")
    with Hub(HubConfig(servers={"demo": entry, "other": untrusted})) as hub:
        status = hub.status()
        assert (status["demo"].scope, status["demo"].source) == ("project", "/p/.mcp.json")
        assert status["other"].state == "disabled"
        assert status["other"].error == "project server not trusted"
        assert [t.server for t in hub.tools()] == ["demo"] * 4


def test_close_stops_every_server_and_is_idempotent(no_leftover_processes) -> None:
    hub = Hub({f"s{i}": _demo() for i in range(4)})
    hub.connect_all()
    assert {s.state for s in hub.status().values()} == {"connected"}
    hub.close()
    hub.close()
    no_leftover_processes()
    with pytest.raises(mcp_lite.ConnectionClosed):
        hub.call_tool("mcp__s0__add", {"a": 1, "b": 1})


def test_401_is_needs_auth_and_is_remembered_for_15_minutes(fault_server, auth_file) -> None:
    config = {"secure": {"type": "http", "url": fault_server.url("/auth")}}
    with Hub(config, auth_cache_path=auth_file) as hub:
        with pytest.raises(AuthRequired):
            hub.client("secure")
        assert hub.status()["secure"].state == "needs-auth"
        assert hub.tools() == []
    hits = fault_server.state.counts["401"]
    assert hits >= 1
    entries = json.loads(auth_file.read_text())
    assert len(entries) == 1 and next(iter(entries)).startswith("secure:")
    # A new Hub (say, another worker process) does not try again within the TTL.
    with Hub(config, auth_cache_path=auth_file) as hub:
        assert hub.connect_all()["secure"].state == "needs-auth"
        with pytest.raises(AuthRequired):
            hub.call_tool("mcp__secure__echo")
        assert fault_server.state.counts["401"] == hits
        # reconnect() is the explicit "try again": it forgets the entry and asks the server.
        assert hub.reconnect("secure").status.state == "needs-auth"
        assert fault_server.state.counts["401"] > hits


def test_an_expired_needs_auth_entry_is_tried_again(fault_server, auth_file) -> None:
    from mcp_lite.hub._runtime.auth_cache import NeedsAuthCache

    config = {"secure": {"type": "http", "url": fault_server.url("/auth")}}
    with Hub(config, auth_cache_path=auth_file) as hub, pytest.raises(AuthRequired):
        hub.client("secure")
    hits = fault_server.state.counts["401"]
    # Age the entry past the 15-minute TTL.
    data = json.loads(auth_file.read_text())
    for value in data.values():
        value["timestamp"] -= 15 * 60 + 1
    auth_file.write_text(json.dumps(data))
    assert not any(NeedsAuthCache(auth_file).contains(k) for k in data)
    with Hub(config, auth_cache_path=auth_file) as hub, pytest.raises(AuthRequired):
        hub.client("secure")
    assert fault_server.state.counts["401"] > hits


def test_backoff_delays_double_up_to_the_cap() -> None:
    backoff = Backoff(base=1.0, max_delay=5.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    with pytest.raises(ConfigError):
        Backoff(max_attempts=0)


def test_unknown_server_and_tool_names_are_usage_errors(inprocess_demo) -> None:
    with Hub({"demo": inprocess_demo()}) as hub:
        with pytest.raises(ConfigError, match="no configured MCP server"):
            hub.call_tool("mcp__nope__add")
        with pytest.raises(ConfigError, match="no tool named"):
            hub.call_tool("mcp__demo__nope")
        with pytest.raises(ConfigError, match="no MCP server named"):
            hub.reconnect("nope")


def test_from_config_reads_the_project_and_reload_follows_edits(tmp_path: Path, pid_gone) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    mcp_json = project / ".mcp.json"
    mcp_json.write_text(json.dumps({"mcpServers": {"demo": _demo()}}))
    hub = mcp_lite.Hub.from_config(project, trust_project=True, user_dir=home,
                                   managed_path=tmp_path / "none.json", backoff=FAST)
    with hub:
        assert hub.status()["demo"].scope == "project"
        pid = hub.client("demo").transport.pid
        hub.reload()  # nothing changed: same connection
        assert hub.client("demo").transport.pid == pid
        mcp_json.write_text(json.dumps({"mcpServers": {
            "demo": {**_demo(), "env": {"CHANGED": "1"}}, "more": _demo()}}))
        hub.reload()
        assert pid_gone(pid)
        assert {t.server for t in hub.tools()} == {"demo", "more"}
    with pytest.raises(ConfigError, match="from_config"):
        Hub({}).reload()
