"""A kept-alive downstream connection keeps the route of its last path (no path parsing
per request): every answer on it equals the answer on a fresh connection (the general
routing), for valid, unknown and hostile paths in any order; a route the gateway dropped
is not used again."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_lite import Gateway, Hub
from mcp_lite.server import Server

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}  # fmt: skip

PATHS = [
    "/servers/up/mcp",
    "/servers/up/mcp/",
    "/servers/%75p/mcp",
    "//servers/up/mcp",
    "/servers/up/mcp?x=1",
    "/servers/nope/mcp",
    "/servers/gone/mcp",
    "/servers/up/other",
    "/servers/up",
    "/mcp",
]


@pytest.fixture
def gateway(short_dir: Path) -> Iterator[Gateway]:
    server = Server("up")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-cases ``text``."""
        return text.upper()

    with server.serve_http(port=0) as http:
        config = {
            "mcpServers": {
                "up": {"type": "http", "url": http.url},
                "gone": {"command": str(short_dir / "no-such-command")},
            }
        }
        with Gateway(Hub(config, gateway=False)).start(str(short_dir / "gw.sock")) as gw:
            yield gw


def _connect(gw: Gateway) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    assert gw.socket_path is not None
    sock.connect(gw.socket_path)
    return sock


def _exchange(sock: socket.socket, path: str, body: dict[str, Any]) -> tuple[int, Any, bool]:
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    f = sock.makefile("rb")
    status = int(f.readline().split()[1])
    headers = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        k, v = line.decode().split(":", 1)
        headers[k.lower()] = v.strip()
    answer = f.read(int(headers["content-length"]))
    return status, json.loads(answer), headers.get("connection") == "close"


def _fresh(gw: Gateway, path: str, body: dict[str, Any]) -> tuple[int, Any, bool]:
    with _connect(gw) as sock:
        return _exchange(sock, path, body)


def _shape(answer: tuple[int, Any, bool]) -> tuple[int, Any, bool]:
    """An answer without what differs between two starts of a failing server."""
    status, body, closed = answer
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and "'gone'" in error.get("message", ""):
        return status, {"gone": True, "data": error.get("data", {}).get("server")}, closed
    return status, body, closed


def test_a_kept_alive_connection_answers_every_path_as_a_fresh_one(gateway: Gateway) -> None:
    expected = {path: _shape(_fresh(gateway, path, INIT)) for path in PATHS}
    assert expected["/servers/up/mcp"][0] == 200
    assert expected["/servers/up/mcp"][1]["result"]["serverInfo"]["name"] == "up"
    assert expected["/servers/gone/mcp"][1] == {"gone": True, "data": "gone"}
    assert expected["/servers/nope/mcp"][:1] == (404,)
    assert expected["/servers/nope/mcp"][2]  # closed: the refused request's body unread
    assert not expected["/servers/up/mcp"][2]
    sock = _connect(gateway)
    try:
        # each path twice in a row (its route kept), then after another (its route replaced)
        for path in PATHS + PATHS[::-1] + [p for p in PATHS for _ in (0, 1)]:
            answer = _shape(_exchange(sock, path, INIT))
            assert answer == expected[path], path
            if answer[2]:  # the gateway closed it: go on on a new one
                sock.close()
                sock = _connect(gateway)
    finally:
        sock.close()


def test_a_refused_path_does_not_read_its_body_as_the_next_request(gateway: Gateway) -> None:
    with _connect(gateway) as sock:
        status, body, closed = _exchange(sock, "/servers/nope/mcp", INIT)
        assert (status, closed) == (404, True)
        assert sock.recv(100) == b""  # nothing more: no answer to the body as a request


def test_a_route_the_gateway_dropped_is_routed_again(gateway: Gateway) -> None:
    with _connect(gateway) as sock:
        status, body, _ = _exchange(sock, "/servers/up/mcp", INIT)
        assert status == 200
        old = gateway._apps["up"]
        with gateway._lock:
            del gateway._apps["up"]  # (as a closing gateway drops them)
        status, body, _ = _exchange(sock, "/servers/up/mcp", INIT)
        assert status == 200 and body["result"]["serverInfo"]["name"] == "up"
        assert gateway._apps["up"] is not old  # routed the general way: a new app
