"""The small HTTP server's connection slots (``_http_slots``), with raw sockets: a request
never finished is ended after ``READ_TIMEOUT_S``; when every slot is taken an idle
kept-alive connection gives its slot up (closed so that its client knows nothing ran), and
a newcomer that cannot get one is told 503 with ``Retry-After``."""

from __future__ import annotations

import socket
import time

import pytest

from mcp_lite.server import Server, _http, _http_slots

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
            # the server is full: the idle connection is ended for the newcomer, who is served
            with socket.create_connection(("127.0.0.1", http.port)) as third:
                third.settimeout(10)
                third.sendall(GET)
                assert _answer(third).startswith(b"HTTP/1.1 404")
                idle.settimeout(10)
                assert _closed(idle)
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
