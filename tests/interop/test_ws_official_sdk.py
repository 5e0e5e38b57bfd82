"""The WebSocket transport against ``tests/peers/ws_server.py``: the official-SDK peer behind
an RFC 6455 bridge (neither PyPI ``mcp`` 2.3.0 nor the TypeScript SDK ships a WebSocket
server, only clients). Both eras, the ``ws-ide`` token header, a dropped socket, a silent peer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import AuthRequired, ConnectError, ConnectionClosed

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

ERAS = {"auto": "2026-07-28", "2025-11-25": "2025-11-25"}


@pytest.fixture
def ws_peer(
    peer_python: str,
    peers_dir: Path,
    start_http_peer: Callable[..., Any],
    free_port: int,
    official_server_cmd: Callable[..., list[str]],
) -> Callable[..., str]:
    """``ws_peer(*flags)`` starts the bridge and returns its ``ws://`` URL."""

    def start(*flags: str) -> str:
        cmd = [peer_python, str(peers_dir / "ws_server.py"), "--port", str(free_port), *flags]
        start_http_peer(cmd, free_port)
        return f"ws://127.0.0.1:{free_port}/"

    return start


@pytest.mark.parametrize("era", list(ERAS), ids=["auto-2026", "pinned-2025"])
def test_tour(ws_peer: Callable[..., str], era: str) -> None:
    seen: list[Any] = []
    with mcp_lite.connect(
        ws_peer(),
        protocol_version=era,
        timeout=30.0,
        elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Ada"}},
        roots=["file:///srv/data"],
    ) as client:
        assert client.transport.subprotocol == "mcp"  # type: ignore[union-attr]
        assert client.protocol_version == ERAS[era]
        assert len(client.list_tools()) == 20
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        res = client.call_tool("slow", {"steps": 3, "delay": 0.01}, on_progress=seen.append)
        assert res.text == "done after 3 steps"
        assert client.call_tool("ask_name", {}).text == "Hello, Ada!"
        assert client.call_tool("show_roots", {}).text == "file:///srv/data"
        assert client.read_resource("memo://readme").text == "This is the readme."
    assert [p.progress for p in seen] == [1, 2, 3]


def test_ws_ide_sends_its_token_header(ws_peer: Callable[..., str]) -> None:
    url = ws_peer("--token", "s3cret")
    config = {"type": "ws-ide", "url": url, "authToken": "s3cret"}
    with mcp_lite.connect(config, timeout=30.0) as client:
        assert client.call_tool("echo", {"text": "ide"}).text == "ide"
    with pytest.raises(AuthRequired):
        mcp_lite.connect({"type": "ws-ide", "url": url, "authToken": "wrong"}, timeout=30.0)


def test_custom_token_header_name(ws_peer: Callable[..., str]) -> None:
    url = ws_peer("--token", "t", "--token-header", "X-Ide-Token")
    config = {"type": "ws-ide", "url": url, "authToken": "t", "authHeaderName": "X-Ide-Token"}
    with mcp_lite.connect(config, timeout=30.0) as client:
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


def test_dropped_socket_fails_the_call_at_once_then_reconnects(ws_peer: Callable[..., str]) -> None:
    url = ws_peer("--drop-on", "DROP-ME")
    with mcp_lite.connect(url, timeout=60.0) as client:
        first = client.transport
        started = time.monotonic()
        with pytest.raises(ConnectionClosed):
            client.call_tool("echo", {"text": "DROP-ME"})
        assert time.monotonic() - started < 30  # long before the 60 s timeout
        assert client.call_tool("echo", {"text": "again"}).text == "again"
        assert client.transport is not first


def test_silent_peer_is_declared_dead_by_ping(ws_peer: Callable[..., str]) -> None:
    url = ws_peer("--no-pong")
    config = {"type": "ws", "url": url, "pingInterval": 0.3}
    client = mcp_lite.connect(config, protocol_version="2025-11-25", timeout=60.0)
    with client, pytest.raises(ConnectionClosed, match="ping"):
        client.call_tool("slow", {"steps": 200, "delay": 0.1})


def test_unreachable_ws_server_is_a_connect_error(free_port: int) -> None:
    with pytest.raises(ConnectError):
        mcp_lite.connect(f"ws://127.0.0.1:{free_port}/", timeout=5.0)
