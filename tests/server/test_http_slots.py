"""The small HTTP server's connection slots (``_http_slots``), with raw sockets: a request
never finished is ended after ``READ_TIMEOUT_S``; when every slot is taken an idle
kept-alive connection gives its slot up (closed so that its client knows nothing ran), and
a newcomer that cannot get one is told 503 with ``Retry-After``."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from mcp_lite.server import Server
from mcp_lite.server.http import endpoint as _http
from mcp_lite.server.http import slots as _http_slots

GET = b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"


def _answer(sock: socket.socket) -> bytes:
    """One whole answer (head and Content-Length body) read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return head


def _wait(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def _idle(slots: _http_slots.Slots) -> bool:
    return any(s.state == "idle" for s in list(slots._held.values()))


def _closed(sock: socket.socket) -> bool:
    """True when the server ended the connection (its end, or a reset)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_an_unfinished_request_is_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http_slots, "READ_TIMEOUT_S", 0.5)
    with (
        Server("s").serve_http(port=0) as http,
        socket.create_connection(("127.0.0.1", http.port)) as sock,
    ):
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Le")  # and nothing more
        sock.settimeout(10)
        start = time.monotonic()
        # ended: an error answer at most, then the end
        while sock.recv(65536):
            pass
        assert time.monotonic() - start < 5


def test_a_full_server_frees_an_idle_slot_and_says_busy_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_http, "MAX_CONNECTIONS", 2)
    with Server("s").serve_http(port=0) as http:
        idle = socket.create_connection(("127.0.0.1", http.port))
        stalled = socket.create_connection(("127.0.0.1", http.port))
        try:
            idle.sendall(GET)
            assert _answer(idle).startswith(b"HTTP/1.1 404")  # served: kept alive, idle
            stalled.sendall(b"POST /mcp HTTP/1.1\r\n")  # a request begun
            slots = http._app.slots
            assert _wait(lambda: len(slots) == 2 and _idle(slots))  # the first one idle now
            # the server is full: the idle connection is ended for the newcomer, who is served
            with socket.create_connection(("127.0.0.1", http.port)) as third:
                third.settimeout(10)
                third.sendall(GET)
                assert _answer(third).startswith(b"HTTP/1.1 404")
                idle.settimeout(10)
                assert _closed(idle)
                third.sendall(b"POST /mcp HTTP/1.1\r\n")  # a next request begun: not idle
                assert _wait(lambda: len(slots) == 2 and not _idle(slots))
                # full again, nothing idle, the newcomer's peer holds its share: busy
                with socket.create_connection(("127.0.0.1", http.port)) as fourth:
                    fourth.settimeout(10)
                    fourth.sendall(GET)
                    head = _answer(fourth)
                    assert head.startswith(b"HTTP/1.1 503"), head
                    assert b"Retry-After: 1" in head, head
        finally:
            idle.close()
            stalled.close()


def test_request_bodies_held_at_once_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http_slots, "MAX_BODIES", 100)
    post = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    with Server("s").serve_http(port=0) as http:
        with socket.create_connection(("127.0.0.1", http.port)) as first:
            first.sendall(post + b"Content-Length: 80\r\n\r\n{")  # its body still coming
            assert _wait(lambda: http._app.slots._bodies == 80)  # reserved
            with socket.create_connection(("127.0.0.1", http.port)) as second:
                second.settimeout(10)
                second.sendall(post + b"Content-Length: 40\r\n\r\n" + b" " * 40)
                head = _answer(second)
                assert head.startswith(b"HTTP/1.1 503"), head
                assert b"Retry-After: 1" in head, head
        # the first one's share is given back once it ended: a body fits again
        assert _wait(lambda: http._app.slots._bodies == 0)
        with socket.create_connection(("127.0.0.1", http.port)) as third:
            third.settimeout(10)
            body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
            third.sendall(post + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            assert not _answer(third).startswith(b"HTTP/1.1 503")
