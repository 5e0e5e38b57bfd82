"""A request through the gateway is answered on its HTTP handler thread: one JSON body, or
an SSE stream once progress comes (relayed as it comes); a client that hangs up mid-request
withdraws the upstream call at once, before or after its progress; a client that stops
reading breaks its own relay (bounded), never the thread that relays."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_lite import Gateway, Hub
from mcp_lite.gateway.session import _Forwarder
from mcp_lite.server import Context, Server

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}  # fmt: skip


@pytest.fixture
def upstream() -> Iterator[tuple[str, threading.Event]]:
    server = Server("up")
    cancelled = threading.Event()

    @server.tool()
    def shout(text: str) -> str:
        """Upper-cases ``text``."""
        return text.upper()

    @server.tool()
    def steps(ctx: Context) -> str:
        """Reports two steps of progress."""
        ctx.report_progress(1, 2, "one")
        ctx.report_progress(2, 2, "two")
        return "stepped"

    @server.tool()
    def wait_cancel(ctx: Context) -> str:
        """Blocks until cancelled (at most 30 s)."""
        if ctx.cancelled.wait(30):
            cancelled.set()
        return "over"

    @server.tool()
    def step_then_wait(ctx: Context) -> str:
        """Reports one step, then blocks until cancelled (at most 30 s)."""
        ctx.report_progress(1, 2, "one")
        if ctx.cancelled.wait(30):
            cancelled.set()
        return "over"

    with server.serve_http(port=0) as http:
        yield http.url, cancelled


@pytest.fixture
def gateway(upstream: tuple[str, threading.Event], short_dir: Path) -> Iterator[Gateway]:
    config = {"mcpServers": {"up": {"type": "http", "url": upstream[0]}}}
    with Gateway(Hub(config, gateway=False)).start(str(short_dir / "gw.sock")) as gw:
        yield gw


def _post(
    sock: socket.socket,
    body: dict[str, Any],
    session: str | None = None,
    accept: str = "application/json, text/event-stream",
) -> None:
    data = json.dumps(body).encode()
    head = (
        "POST /servers/up/mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\n"
        + (f"Mcp-Session-Id: {session}\r\n" if session else "")
        + f"Content-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)


def _response(sock: socket.socket) -> tuple[bytes, dict[str, str], bytes]:
    f = sock.makefile("rb")
    status = f.readline()
    headers = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        k, v = line.decode().split(":", 1)
        headers[k.lower()] = v.strip()
    if "content-length" in headers:
        body = f.read(int(headers["content-length"]))
    else:  # chunked SSE: up to the last chunk
        body = b""
        while (size := int(f.readline(), 16)) != 0:
            body += f.read(size)
            f.readline()
        f.readline()
    return status, headers, body


def _session(gw: Gateway) -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    assert gw.socket_path is not None
    sock.connect(gw.socket_path)
    _post(sock, INIT)
    status, headers, _ = _response(sock)
    assert status.startswith(b"HTTP/1.1 200")
    return sock, headers["mcp-session-id"]


def _call(rid: int, name: str, progress: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {"text": "hi"} if name == "shout" else {}}
    if progress:
        params["_meta"] = {"progressToken": "tok"}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def test_a_plain_call_is_one_json_body_without_the_pool(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitted = []
    real = gateway._pool.submit
    monkeypatch.setattr(
        gateway._pool, "submit", lambda *a, **k: submitted.append(a) or real(*a, **k)
    )
    sock, sid = _session(gateway)
    with sock:
        writes = []
        for rid in (1, 2):
            _post(sock, _call(rid, "shout"), sid)
            status, headers, body = _response(sock)
            assert status.startswith(b"HTTP/1.1 200")
            assert headers["content-type"] == "application/json"
            answer = json.loads(body)
            assert answer["id"] == rid
            assert answer["result"]["content"][0]["text"] == "HI"
            writes.append(headers)
    assert submitted == []  # answered on the handler thread: no hand-off to the pool


def test_a_call_with_a_progress_token_streams_its_progress(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitted = []
    real = gateway._pool.submit
    monkeypatch.setattr(
        gateway._pool, "submit", lambda *a, **k: submitted.append(a) or real(*a, **k)
    )
    # heard raw by the gateway's hook, never as the client's Progress model (its notifier)
    monkeypatch.setattr(_Forwarder, "progress", lambda *a: pytest.fail("the Progress path"))
    sock, sid = _session(gateway)
    with sock:
        _post(sock, _call(1, "steps", progress=True), sid)
        status, headers, body = _response(sock)
    assert status.startswith(b"HTTP/1.1 200")
    assert headers["content-type"] == "text/event-stream"
    events = [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    progress = [e["params"] for e in events if e.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["message"]) for p in progress] == [
        ("tok", 1, "one"),
        ("tok", 2, "two"),
    ]
    assert events[-1]["result"]["content"][0]["text"] == "stepped"
    assert submitted == []  # relayed from the upstream's reader, answered on the handler
    assert gateway._progress == {}  # the request's token is gone with it


def test_a_json_only_client_gets_the_response_alone(gateway: Gateway) -> None:
    sock, sid = _session(gateway)
    with sock:
        _post(sock, _call(1, "steps", progress=True), sid, accept="application/json")
        status, headers, body = _response(sock)
    assert status.startswith(b"HTTP/1.1 200")
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["result"]["content"][0]["text"] == "stepped"


def test_hanging_up_after_progress_withdraws_the_upstream_call(
    gateway: Gateway, upstream: tuple[str, threading.Event]
) -> None:
    sock, sid = _session(gateway)
    _post(sock, _call(1, "step_then_wait", progress=True), sid)
    with sock, sock.makefile("rb") as f:  # (the socket closes once its file does too)
        assert f.readline().startswith(b"HTTP/1.1 200")
        while b"notifications/progress" not in f.readline():  # the stream is open
            pass
    assert upstream[1].wait(20)


@pytest.mark.parametrize("progress", [False, True], ids=["inline", "streamed"])
def test_hanging_up_withdraws_the_upstream_call(
    gateway: Gateway, upstream: tuple[str, threading.Event], progress: bool
) -> None:
    _, cancelled = upstream
    sock, sid = _session(gateway)
    _post(sock, _call(1, "wait_cancel", progress), sid)
    with sock:
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):  # the call is upstream, waiting
            sock.recv(1)
    assert cancelled.wait(20)  # the upstream saw notifications/cancelled
    sock2, sid2 = _session(gateway)  # and the gateway serves on
    with sock2:
        _post(sock2, _call(2, "shout"), sid2)
        assert json.loads(_response(sock2)[2])["result"]["content"][0]["text"] == "HI"
