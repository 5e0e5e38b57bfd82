"""The small server's HTTP framing, over raw sockets (TCP and Unix), for ``Server.serve_http``
and the gateway: a request whose body length two readers could read differently (RFC 9112
§6.3: two ``Content-Length``, ``Content-Length`` with ``Transfer-Encoding``, a length that is
no number) is refused with 400 and its connection closed, so a second request hidden in its
body never runs; a body the server does not read (a GET's) ends the connection too. A client
that leaves while its answer is written is a debug line, never a traceback on stderr."""

from __future__ import annotations

import json
import logging
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_lite import Gateway, Hub
from mcp_lite.server import Server
from mcp_lite.server.http.framing import AmbiguousFraming, body_length
from mcp_lite.server.http.head import Headers

READ_BOUND_S = 10.0  # an upper bound only: every exchange ends with the server's close


class Ledger:
    """A server whose ``mark`` tool writes down who called it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.server = Server("framing")

        @self.server.tool()
        def mark(who: str) -> str:
            """Writes ``who`` down."""
            self.calls.append(who)
            return who

        @self.server.tool()
        def big(size: int) -> str:
            """``size`` bytes of text."""
            return "x" * size


def _call(who: str, rid: int, close: bool = False) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "mark", "arguments": {"who": who}},
        }
    ).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-03-26\r\n"
    )
    if close:  # (so that a server that ran it ends the exchange at once, fix or not)
        head += "Connection: close\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _exchange(connect: Callable[[], socket.socket], raw: bytes) -> list[tuple[int, bytes]]:
    """Send ``raw`` on a new connection; the (status, rest) of every answer, read up to the
    server's close (the close is the event waited for; the bound only ends a failing test)."""
    sock = connect()
    sock.settimeout(READ_BOUND_S)
    try:
        sock.sendall(raw)
        data = b""
        end = time.monotonic() + READ_BOUND_S
        while time.monotonic() < end:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    parts = re.split(rb"(?=HTTP/1\.1 \d{3} )", data)
    return [(int(p[9:12]), p) for p in parts if p.startswith(b"HTTP/1.1 ")]


@pytest.fixture(params=["tcp", "unix"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Ledger, Callable[[], socket.socket]]]:
    ledger = Ledger()
    folder = tempfile.mkdtemp(prefix="mcpfr", dir="/tmp")
    if request.param == "tcp":
        http = ledger.server.serve_http(port=0, stateless=True)

        def connect() -> socket.socket:
            return socket.create_connection(("127.0.0.1", http.port), timeout=READ_BOUND_S)

    else:
        http = ledger.server.serve_http(stateless=True, socket=f"{folder}/s.sock")

        def connect() -> socket.socket:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(READ_BOUND_S)
            sock.connect(f"{folder}/s.sock")
            return sock

    try:
        yield ledger, connect
    finally:
        http.close()
        shutil.rmtree(folder, ignore_errors=True)


def _with_headers(request: bytes, extra: str, *, drop_length: bool = False) -> bytes:
    head, body = request.split(b"\r\n\r\n", 1)
    if drop_length:
        head = re.sub(rb"\r\nContent-Length: \d+", b"", head)
    return head + b"\r\n" + extra.encode() + b"\r\n\r\n" + body


def test_a_plain_request_still_works(served: Any) -> None:
    ledger, connect = served
    answers = _exchange(connect, _call("plain", 1, close=True))
    assert [status for status, _ in answers] == [200]
    assert ledger.calls == ["plain"]


def test_two_content_lengths_are_refused_and_the_hidden_request_never_runs(served: Any) -> None:
    ledger, connect = served
    first, hidden = _call("first", 1), _call("smuggled", 2, close=True)
    body_of_first = len(first.split(b"\r\n\r\n", 1)[1])
    # the first length frames the first call alone, the second one the hidden call too
    raw = _with_headers(
        first,
        f"Content-Length: {body_of_first}\r\nContent-Length: {body_of_first + len(hidden)}",
        drop_length=True,
    )
    answers = _exchange(connect, raw + hidden)
    assert [status for status, _ in answers] == [400], answers
    assert b"2 Content-Length headers" in answers[0][1]
    assert b"Connection: close" in answers[0][1]
    assert ledger.calls == []


def test_the_same_content_length_twice_is_refused_too(served: Any) -> None:
    ledger, connect = served
    first, hidden = _call("first", 1), _call("smuggled", 2, close=True)
    length = len(first.split(b"\r\n\r\n", 1)[1])
    raw = _with_headers(first, f"Content-Length: {length}")
    answers = _exchange(connect, raw + hidden)
    assert [status for status, _ in answers] == [400], answers
    assert ledger.calls == []


def test_content_length_with_transfer_encoding_is_refused(served: Any) -> None:
    ledger, connect = served
    first, hidden = _call("first", 1), _call("smuggled", 2, close=True)
    raw = _with_headers(first, "Transfer-Encoding: chunked")
    answers = _exchange(connect, raw + hidden)
    assert [status for status, _ in answers] == [400], answers
    assert b"both Content-Length and Transfer-Encoding" in answers[0][1]
    assert ledger.calls == []


@pytest.mark.parametrize("value", ["+5", "5 5", "0x10", "-1", "\u00b2", "5, 5", ""])
def test_an_invalid_content_length_is_refused(served: Any, value: str) -> None:
    ledger, connect = served
    first, hidden = _call("first", 1), _call("smuggled", 2, close=True)
    raw = _with_headers(first, f"Content-Length: {value}", drop_length=True)
    answers = _exchange(connect, raw.replace(b"\xc2\xb2", b"\xb2") + hidden)
    assert [status for status, _ in answers] == [400], answers
    assert b"invalid Content-Length" in answers[0][1]
    assert ledger.calls == []


@pytest.mark.parametrize("framing", ["Content-Length", "Transfer-Encoding"])
def test_an_unread_body_ends_the_connection(served: Any, framing: str) -> None:
    """A GET's body is never read: what follows it is not taken for a next request."""
    ledger, connect = served
    hidden = _call("smuggled", 2, close=True)
    value = str(len(hidden)) if framing == "Content-Length" else "chunked"
    raw = f"GET /mcp HTTP/1.1\r\nHost: localhost\r\n{framing}: {value}\r\n\r\n".encode()
    answers = _exchange(connect, raw + hidden)
    assert len(answers) == 1, answers
    assert ledger.calls == []


def test_a_huge_content_length_is_too_large_not_a_crash(served: Any) -> None:
    _, connect = served
    first = _call("first", 1)
    raw = _with_headers(first, "Content-Length: " + "9" * 5000, drop_length=True)
    answers = _exchange(connect, raw)
    assert [status for status, _ in answers] == [413], answers


def test_the_gateway_refuses_ambiguous_framing(short_dir_gw: Path) -> None:
    """The gateway's handler is the small server's: the same refusal, before any routing."""
    ledger = Ledger()
    with ledger.server.serve_http(port=0) as web:
        hub = Hub({"web": {"type": "http", "url": web.url}}, gateway=False)
        with Gateway(hub).start(str(short_dir_gw / "gw.sock")) as gw:
            assert gw.socket_path is not None
            path = gw.socket_path

            def connect() -> socket.socket:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(READ_BOUND_S)
                sock.connect(path)
                return sock

            note = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
            hidden = b"GET /servers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            for extra in (
                f"Content-Length: {len(note)}\r\nContent-Length: {len(note) + len(hidden)}",
                f"Content-Length: {len(note)}\r\nTransfer-Encoding: chunked",
            ):
                raw = (
                    "POST /servers/web/mcp HTTP/1.1\r\nHost: localhost\r\n"
                    f"Content-Type: application/json\r\n{extra}\r\n\r\n"
                ).encode()
                answers = _exchange(connect, raw + note + hidden)
                assert [status for status, _ in answers] == [400], answers
                assert b'"servers"' not in answers[0][1]  # the hidden GET never ran


@pytest.fixture
def short_dir_gw() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mcpgw", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_body_length_rules() -> None:
    def length(*items: tuple[str, str]) -> int | None:
        return body_length(Headers(list(items)))

    assert length() == 0
    assert length(("Content-Length", "42")) == 42
    assert length(("content-length", " 0042\t")) == 42
    assert length(("Transfer-Encoding", "chunked")) is None
    for bad in (
        [("Content-Length", "1"), ("content-length", "1")],
        [("Content-Length", "1"), ("Transfer-Encoding", "chunked")],
        [("Transfer-Encoding", "chunked"), ("Content-Length", "1")],
        [("Content-Length", "1e3")],
        [("Content-Length", "\u0665")],  # an Arabic-Indic five: isdigit(), not a length
    ):
        with pytest.raises(AmbiguousFraming):
            length(*bad)


def test_a_client_that_leaves_mid_answer_is_a_debug_line(
    served: Any, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:  # (caplog: the server's debug records are made, whatever the test run's level)
    """The answer (8 MB) is more than the socket holds: the client reads its first bytes,
    then leaves; the server's write fails. No traceback on stderr, a debug record instead."""
    _, connect = served
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "big", "arguments": {"size": 8 * 1024 * 1024}},
        }
    ).encode()
    raw = (
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Accept: application/json\r\nMCP-Protocol-Version: 2025-03-26\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    left = threading.Event()
    handler = _Waiter(left)
    logger = logging.getLogger("mcp_lite.server")
    logger.addHandler(handler)
    caplog.set_level(logging.DEBUG, logger="mcp_lite.server")
    try:
        sock = connect()
        sock.sendall(raw)
        assert sock.recv(16).startswith(b"HTTP/1.1 200")  # the answer is being written
        # leave with the rest unread (TCP: a reset; Unix: the writer's pipe breaks)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
        noticed = left.wait(READ_BOUND_S)
    finally:
        logger.removeHandler(handler)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert noticed, "the server logged nothing of the client that left"
    assert [r.levelno for r in handler.records] == [logging.DEBUG]


class _Waiter(logging.Handler):
    """Keeps the server's records of a client that left; sets ``event`` on the first."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__(logging.DEBUG)
        self.event = event
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "left" in record.getMessage() or record.exc_info:
            self.records.append(record)
            self.event.set()
