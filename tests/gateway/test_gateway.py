"""The gateway in-process (``Gateway.start``): forwarding is a direct connection's twin,
``GET /servers``, fingerprints, the socket's mode, a second gateway refused, an unreachable
gateway, the peer check."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import Peers, server_processes, wait_for

import mcp_lite
from mcp_lite import Gateway, Hub
from mcp_lite._http.peer import describe
from mcp_lite.errors import ConnectError, McpError
from mcp_lite.hub import Backoff
from mcp_lite.hub._runtime.gateway_route import fingerprint
from mcp_lite.server import Server


def _get(sock: str, path: str) -> tuple[int, Any]:
    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(5)
            self.sock.connect(sock)

    conn = Conn("localhost", timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        return response.status, json.loads(body) if body else None
    finally:
        conn.close()


@pytest.fixture
def gateway(peers: Peers, short_dir: Path) -> Iterator[Gateway]:
    hub = Hub(json.loads(peers.path.read_text()), gateway=False)
    with Gateway(hub).start(str(short_dir / "gw.sock")) as gw:
        yield gw


@pytest.fixture
def http_peer() -> Iterator[str]:
    server = Server("web")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-cases ``text``."""
        return text.upper()

    @server.tool()
    def grow() -> str:
        """Adds the tool ``extra`` and sends tools/list_changed."""
        server.tool(name="extra")(lambda: "extra")
        server.notify_tools_changed()
        return "grown"

    with server.serve_http(port=0) as http:
        yield http.url


def _config(peers: Peers) -> dict[str, Any]:
    return {"mcpServers": peers.servers}


def test_forwarding_matches_a_direct_connection(gateway: Gateway, peers: Peers) -> None:
    with (
        Hub(_config(peers), gateway=gateway.url) as worker,
        Hub(_config(peers), gateway=False) as direct,
    ):
        assert [t.name for t in worker.tools()] == [t.name for t in direct.tools()]
        assert worker.call_tool("mcp__plain__add", {"a": 2, "b": 40}).to_wire() == (
            direct.call_tool("mcp__plain__add", {"a": 2, "b": 40}).to_wire()
        )
        assert worker.call_tool("mcp__plain__stats", {}).to_wire() == (
            direct.call_tool("mcp__plain__stats", {}).to_wire()
        )
        errors = []
        for hub in (worker, direct):
            with pytest.raises(McpError) as caught:
                hub.call_tool("mcp__plain__add", {"a": 1})  # the peer answers -32602 'b'
            errors.append((type(caught.value), str(caught.value)))
        assert errors[0] == errors[1]
        status = worker.status()
        assert status["plain"].via == "gateway" and status["tasks"].via == "gateway"
        assert direct.status()["plain"].via == "local"
    # one server process per configured server: the gateway's (the direct Hub closed its own)
    assert wait_for(lambda: len(server_processes(peers.marker)) == 2)


def test_raw_requests_and_errors_are_forwarded_unchanged(gateway: Gateway, peers: Peers) -> None:
    plain = peers.servers["plain"]
    with (
        mcp_lite.connect(f"{gateway.url}/servers/plain/mcp") as through,
        mcp_lite.connect([plain["command"], *plain["args"]]) as direct,
    ):
        assert through.server_info.name == direct.server_info.name == "plain"
        assert through.server_capabilities == direct.server_capabilities
        assert through.request("tools/list", {}) == direct.request("tools/list", {})
        through.ping()
        for method, params in (
            ("resources/templates/list", {}),
            ("tools/call", {"name": "nope", "arguments": {}}),
        ):
            got = []
            for client in (through, direct):
                with pytest.raises(McpError) as caught:
                    client.request(method, params)
                got.append((type(caught.value), str(caught.value), caught.value.code))  # type: ignore[attr-defined]
            assert got[0] == got[1]


def test_get_servers_lists_names_fingerprints_and_states(
    gateway: Gateway, peers: Peers, http_peer: str
) -> None:
    assert gateway.socket_path is not None
    status, body = _get(gateway.socket_path, "/servers")
    assert status == 200
    listed = {s["name"]: s for s in body["servers"]}
    assert set(listed) == {"plain", "tasks"}
    plain = peers.servers["plain"]
    assert listed["plain"]["fingerprint"] == fingerprint("stdio", plain)
    assert len(listed["plain"]["fingerprint"]) == 64
    assert listed["plain"]["state"] == "pending"  # not started until first used
    # env and headers are part of it (by digest), as the URL of a remote server is
    assert fingerprint("stdio", {**plain, "env": {"TOKEN": "x"}}) != fingerprint("stdio", plain)
    assert fingerprint("http", {"type": "http", "url": http_peer, "headers": {"A": "b"}}) != (
        fingerprint("http", {"type": "http", "url": http_peer})
    )
    assert _get(gateway.socket_path, "/servers/nope/mcp")[0] == 404
    assert _get(gateway.socket_path, "/elsewhere")[0] == 404


def test_an_http_peer_through_the_gateway(peers: Peers, short_dir: Path, http_peer: str) -> None:
    config = {"mcpServers": {"web": {"type": "http", "url": http_peer}}}
    gw = Gateway(Hub(config, gateway=False)).start(str(short_dir / "web.sock"))
    with gw, Hub(config, gateway=gw.url) as worker:
        assert worker.call_tool("mcp__web__shout", {"text": "hi"}).text == "HI"
        assert worker.status()["web"].via == "gateway"


def test_a_fingerprint_mismatch_runs_the_server_locally(gateway: Gateway, peers: Peers) -> None:
    plain = peers.servers["plain"]
    mine = {"mcpServers": {"plain": {**plain, "args": [*plain["args"], "--other"]}}}
    with Hub(mine, gateway=gateway.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}).text == "3"
        assert worker.status()["plain"].via == "local"
        assert len(server_processes("--other")) >= 1  # its own process, not the gateway's


def test_socket_is_0600_and_a_second_gateway_is_refused(gateway: Gateway, peers: Peers) -> None:
    assert gateway.socket_path is not None
    assert stat.S_IMODE(os.stat(gateway.socket_path).st_mode) == 0o600
    second = Gateway(Hub(_config(peers), gateway=False))
    held = re.escape(f"is held by {describe(os.geteuid())}, pid {os.getpid()}")
    with pytest.raises(FileExistsError, match=held):  # who holds it, not a guess
        second.start(gateway.socket_path)
    second.close()
    # the first still serves
    with Hub(_config(peers), gateway=gateway.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 1}).text == "2"


def test_a_stale_socket_file_is_replaced_and_close_removes_it(
    peers: Peers, short_dir: Path
) -> None:
    path = str(short_dir / "stale.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()  # a socket file nobody listens on
    gw = Gateway(Hub(_config(peers), gateway=False)).start(path)
    assert _get(path, "/servers")[0] == 200
    gw.close()
    assert not os.path.exists(path)
    other = short_dir / "file.sock"
    other.write_text("not a socket")
    with pytest.raises(FileExistsError):
        Gateway(Hub(_config(peers), gateway=False)).start(str(other))


def test_unreachable_gateway_is_a_clear_error_then_recovers(peers: Peers, short_dir: Path) -> None:
    path = str(short_dir / "later.sock")
    with Hub(_config(peers), gateway=f"unix://{path}") as worker:
        start = time.monotonic()
        with pytest.raises(ConnectError) as caught:
            worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}, timeout=2)
        assert time.monotonic() - start < 3
        assert path in str(caught.value) and "server list" in str(caught.value)
        assert server_processes(peers.marker) == []  # nothing started locally instead
        with Gateway(Hub(_config(peers), gateway=False)).start(path):
            assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}, timeout=10).text == "3"
            assert worker.status()["plain"].via == "gateway"


def test_env_variable_selects_the_gateway_and_false_disables_it(
    gateway: Gateway, peers: Peers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_LITE_GATEWAY", gateway.url)
    with Hub(_config(peers)) as worker:
        worker.call_tool("mcp__plain__add", {"a": 1, "b": 2})
        assert worker.status()["plain"].via == "gateway"
    with Hub(_config(peers), gateway=False) as local:
        local.call_tool("mcp__plain__add", {"a": 1, "b": 2})
        assert local.status()["plain"].via == "local"


def test_connection_failure_names_server_and_phase(short_dir: Path) -> None:
    config = {"mcpServers": {"broken": {"command": sys.executable, "args": ["-c", "pass"]}}}
    gw = Gateway(Hub(config, gateway=False)).start(str(short_dir / "b.sock"))
    # the upstream is connected at the downstream's initialize: that is where it fails
    with gw, pytest.raises(McpError) as caught:
        mcp_lite.connect(f"{gw.url}/servers/broken/mcp", timeout=20)
    err = caught.value
    assert "'broken'" in str(err) and "connecting" in str(err)
    assert err.data["phase"] == "connecting" and err.data["error"]  # type: ignore[attr-defined]


@pytest.mark.skipif(
    os.getuid() != 0 or not os.access("/usr/bin/python3", os.X_OK),
    reason="needs root (to connect as another user) and a system python3",
)
def test_another_user_is_refused(gateway: Gateway, short_dir: Path) -> None:
    assert gateway.socket_path is not None
    os.chmod(gateway.socket_path, 0o666)  # only the peer check stands in the way now
    os.chmod(short_dir, 0o755)
    code = (
        "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]);"
        "print(s.recv(100))"  # refused at once, before any request
    )
    out = subprocess.run(
        ["/usr/bin/python3", "-c", code, gateway.socket_path],
        user=65534, capture_output=True, text=True, timeout=20,
    )  # fmt: skip
    assert "403 Forbidden" in out.stdout, out.stderr


def test_list_changed_reaches_the_workers(gateway: Gateway, peers: Peers) -> None:
    with Hub(_config(peers), gateway=gateway.url) as worker:
        names = {t.name for t in worker.tools()}
        assert "mcp__tasks__extra" not in names and "mcp__tasks__grow" in names
        assert worker.call_tool("mcp__tasks__grow", {}).text == "grown"
        assert wait_for(lambda: "mcp__tasks__extra" in {t.name for t in worker.tools()})


def test_a_server_that_cannot_start_raises_the_local_class(short_dir: Path) -> None:
    config = {"mcpServers": {"broken": {"command": sys.executable, "args": ["-c", "pass"]}}}
    one = Backoff(max_attempts=1)
    with Hub(config, gateway=False, backoff=one) as local, pytest.raises(McpError) as direct:
        local.client("broken")
    gw = Gateway(Hub(config, gateway=False)).start(str(short_dir / "c.sock"))
    with gw, Hub(config, gateway=gw.url, backoff=one) as worker:
        with pytest.raises(McpError) as through:
            worker.client("broken")
        assert worker.status()["broken"].via == "gateway"
    assert type(through.value) is type(direct.value)
    assert "'broken'" in str(through.value) and "connecting" in str(through.value)


def test_permissions_are_the_workers_not_the_gateways(peers: Peers, short_dir: Path) -> None:
    # the gateway's Hub denies `add`: workers still get it (their own Hub decides)
    hub = Hub(_config(peers), gateway=False, deny=["mcp__plain__add"])
    gw = Gateway(hub).start(str(short_dir / "p.sock"))
    with gw, Hub(_config(peers), gateway=gw.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}).text == "3"
    errors = []
    gw = Gateway(Hub(_config(peers), gateway=False)).start(str(short_dir / "q.sock"))
    with gw:
        for route in (gw.url, False):
            with (
                Hub(_config(peers), gateway=route, deny=["mcp__plain__add"]) as worker,
                pytest.raises(McpError) as caught,
            ):
                worker.call_tool("mcp__plain__add", {"a": 1, "b": 2})
            errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]
    assert errors[0][0].__name__ == "PermissionDenied"


def test_the_gateways_own_hub_ignores_the_env_variable(
    peers: Peers, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(short_dir / "self.sock")
    monkeypatch.setenv("MCP_LITE_GATEWAY", f"unix://{path}")
    with Gateway(Hub(_config(peers))).start(path) as gw, Hub(_config(peers)) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}, timeout=10).text == "3"
        assert gw.hub.status()["plain"].via == "local"
        assert worker.status()["plain"].via == "gateway"


def test_a_server_dying_mid_call_raises_the_local_class(gateway: Gateway, peers: Peers) -> None:
    got = []
    for route in (gateway.url, False):
        with Hub(_config(peers), gateway=route) as worker, pytest.raises(McpError) as caught:
            worker.call_tool("mcp__tasks__die", {}, timeout=10)
        got.append(type(caught.value))
    assert got[0] is got[1], got
    assert "'tasks'" in str(caught.value)
    with Hub(_config(peers), gateway=gateway.url) as worker:  # the gateway starts it again
        assert worker.call_tool("mcp__tasks__echo", {"text": "back"}, timeout=10).text == "back"


def test_a_2026_server_is_offered_in_both_eras(short_dir: Path, http_peer: str) -> None:
    config = {"mcpServers": {"web": {"type": "http", "url": http_peer}}}
    gw = Gateway(Hub(config, gateway=False)).start(str(short_dir / "era.sock"))
    url = f"{gw.url}/servers/web/mcp"
    with gw, mcp_lite.connect(url, protocol_version="2025-11-25") as old:
        assert old.session.era == "handshake"
        assert old.call_tool("shout", {"text": "a"}).text == "A"
        # the upstream now runs 2026-07-28: a new client is offered it too
        with mcp_lite.connect(url) as new, mcp_lite.connect(http_peer) as direct:
            assert new.session.era == direct.session.era == "stateless"
            params = {"name": "shout", "arguments": {"text": "b"}}
            assert new.request("tools/call", params) == direct.request("tools/call", params)
            errors = []
            for client in (new, direct):
                with pytest.raises(McpError) as caught:
                    client.request("tools/call", {"name": "nope", "arguments": {}})
                errors.append((type(caught.value), str(caught.value)))
            assert errors[0] == errors[1]
        with Hub(config, gateway=gw.url) as worker:  # its list_changed on a listen stream
            assert worker.client("web").session.era == "stateless"
            assert "mcp__web__extra" not in {t.name for t in worker.tools()}
            assert worker.call_tool("mcp__web__grow", {}).text == "grown"
            assert wait_for(lambda: "mcp__web__extra" in {t.name for t in worker.tools()})
