"""The lean HTTP/1.1 client of ``unix://`` URLs (``mcp_lite/_http/unix_client.py``): kept-alive
connections, a server that closes them, bounded response heads, chunked bodies, fork.

Real peers: the fault server on a Unix socket (``tests/peers/fault_http_server.py``) and raw
``AF_UNIX`` listeners for answers no real server gives. What is asserted is behaviour and
counts (connections accepted, answers), never a timing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from unix_raw_listener import RawUnixListener

import mcp_lite
from mcp_lite._http import body as _body
from mcp_lite._http import errors as _errors
from mcp_lite._http import session as _session
from mcp_lite._http import unix_client as lean
from mcp_lite._http.slots import Slot
from mcp_lite.errors import ConnectionClosed, McpError, TransportError

HANDSHAKE = "2025-11-25"


def connect(url: str, **options: Any) -> mcp_lite.Client:
    options.setdefault("protocol_version", HANDSHAKE)
    options.setdefault("timeout", 10)
    return mcp_lite.connect(url, **options)


def _post(session: Any, url: str) -> tuple[int, bytes]:
    slot = Slot()
    with slot.active():
        response = _session.request(
            session,
            "POST",
            url,
            headers={"Accept": "application/json"},
            data=b"{}",
            timeout=(5.0, 5.0),
        )
    with response:
        body = _body.read_limited(response, 1 << 20, strict=True)
    slot.release()
    return response.status_code, body


@pytest.fixture
def session_for() -> Iterator[Callable[[str], Any]]:
    sessions: list[Any] = []

    def make(url: str) -> Any:
        session = _session.make_session(_session.HttpOptions(url=url, headers={}))
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        _session.close_session(session)


def test_calls_share_one_kept_alive_connection(unix_fault_server: Any) -> None:
    with connect(unix_fault_server.url()) as client:
        for _ in range(20):
            assert client.call_tool("echo").text == "echo"
        # the handshake's POSTs, the 20 calls: one connection (the GET stream has its own)
        assert unix_fault_server.accepted <= 2


def test_a_connection_the_server_closed_between_calls_is_replaced(
    unix_fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    unix_fault_server.one_shot = True  # every connection ends after one answer
    server = unix_fault_server
    with connect(server.url()) as client:
        # connect's GET for the server's stream runs on a thread of its own (answered 405,
        # never sent again): once it came, no connection opens behind the waits below
        assert wait_until(lambda: server.state.counts["GET /mcp"] >= 1)
        for i in range(5):
            # every connection so far closed by the server (so none of our requests races
            # its close: a server that read a request and closed unanswered is a failure)
            assert wait_until(lambda: server.finished == server.accepted)
            assert client.call_tool("echo").text == "echo", i
    assert unix_fault_server.state.counts["POST initialize"] == 1  # never a new session


def test_a_write_refused_by_a_closed_connection_is_sent_again_once(
    sock_dir: Path,
    session_for: Callable[[str], Any],
    monkeypatch: pytest.MonkeyPatch,
    wait_until: Callable[..., bool],
) -> None:
    path = str(sock_dir / "s.sock")
    raw = RawUnixListener(path, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", close=True)
    try:
        session = session_for(f"unix://{path}/mcp")
        assert _post(session, f"unix://{path}/mcp") == (200, b"ok")
        assert wait_until(lambda: raw.connections == 1 and raw.requests == 1)
        # The closed connection looks alive (the race the idle check cannot see): the write
        # fails (EPIPE) and the request goes out once more, on a new connection.
        monkeypatch.setattr(lean._Conn, "dropped", lambda self: False)
        assert _post(session, f"unix://{path}/mcp") == (200, b"ok")
        assert raw.requests == 2  # the server saw the request once
    finally:
        raw.close()


def test_a_cookie_the_server_sets_is_sent_back(
    sock_dir: Path, session_for: Callable[[str], Any]
) -> None:
    path = str(sock_dir / "k.sock")
    raw = RawUnixListener(
        path, b"HTTP/1.1 200 OK\r\nSet-Cookie: lb=node7; Path=/\r\nContent-Length: 2\r\n\r\nok"
    )
    try:
        session = session_for(f"unix://{path}/mcp")
        assert _post(session, f"unix://{path}/mcp") == (200, b"ok")
        assert _post(session, f"unix://{path}/mcp") == (200, b"ok")
        assert b"Cookie: lb=node7" not in raw.heads[0]
        assert b"Cookie: lb=node7" in raw.heads[1]  # the jar, on the requests path
    finally:
        raw.close()


def test_a_chunked_body_is_read_and_the_connection_reused(
    sock_dir: Path, session_for: Callable[[str], Any]
) -> None:
    path = str(sock_dir / "c.sock")
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b'\r\n3;x=y\r\n{"a\r\n5\r\n": 1}\r\n0\r\nTrailer: t\r\n\r\n'
    )
    raw = RawUnixListener(path, answer)
    try:
        session = session_for(f"unix://{path}/mcp")
        for _ in range(3):
            assert _post(session, f"unix://{path}/mcp") == (200, b'{"a": 1}')
        assert raw.connections == 1
    finally:
        raw.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(200)) + b"\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"v" * (300 * 1024),  # never ends
        b"garbage\r\n\r\n",
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"a"',
    ],
    ids=["too-many-headers", "oversized-head", "no-status-line", "truncated-body"],
)
def test_a_malformed_answer_fails_initialize_clearly(sock_dir: Path, answer: bytes) -> None:
    path = str(sock_dir / "m.sock")
    raw = RawUnixListener(path, answer, close=True)
    try:
        with pytest.raises(TransportError, match="initialize|broke|lost|connection"):
            connect(f"unix://{path}/mcp", timeout=5)
    finally:
        raw.close()


def test_the_oversized_head_is_not_held(sock_dir: Path, session_for: Callable[[str], Any]) -> None:
    path = str(sock_dir / "o.sock")
    raw = RawUnixListener(path, b"HTTP/1.1 200 OK\r\nX-Big: " + b"v" * (4 * 1024 * 1024))
    try:
        session = session_for(f"unix://{path}/mcp")
        with pytest.raises(Exception) as caught:
            _post(session, f"unix://{path}/mcp")
        assert isinstance(_errors.map_error(caught.value, "POST"), ConnectionClosed)
        assert "too long" in str(caught.value).lower() or "line" in str(caught.value).lower()
    finally:
        raw.close()


def test_a_forked_child_never_uses_the_parents_socket(
    unix_fault_server: Any,
    in_fork: Callable[[Callable[[], str]], str],
    wait_until: Callable[..., bool],
) -> None:
    with connect(unix_fault_server.url()) as client:
        assert client.call_tool("echo").text == "echo"
        unix = client.transport._session.__dict__["_mcp_lite_unix"]  # type: ignore[union-attr]
        (pool,) = unix._pools.values()
        # The GET for the server's stream is made at connect on a thread of its own and a
        # connection of its own: wait until the server has had it and every connection is
        # back in the pool, or that one joins the pool after the snapshot (a loaded machine).
        counts = unix_fault_server.state.counts
        assert wait_until(
            lambda: counts["GET /mcp"] >= 1 and len(pool._idle) == unix_fault_server.accepted
        )
        before = unix_fault_server.accepted
        idle = list(pool._idle)
        assert idle  # the parent holds a kept-alive connection

        def child() -> str:
            inherited = len(pool._idle)  # dropped at fork
            text = client.call_tool("echo").text
            mine = [conn for conn in pool._idle if conn in idle]
            return f"{inherited} {text} {len(mine)}"

        assert in_fork(child) == "0 echo 0"
        assert unix_fault_server.accepted > before  # the child connected on its own
        after = unix_fault_server.accepted
        assert client.call_tool("echo").text == "echo"  # the parent's socket still works
        assert unix_fault_server.accepted == after  # on the same connection
        assert set(pool._idle) <= set(idle)


def test_a_server_error_never_shows_the_headers_sent(
    sock_dir: Path,
) -> None:
    path = str(sock_dir / "e.sock")
    echo = b"token SECRET-abc"
    raw = RawUnixListener(
        path,
        b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n%s" % (len(echo), echo),
        close=True,
    )
    try:
        with pytest.raises(McpError) as caught:
            connect(f"unix://{path}/mcp", headers={"X-Key": "token SECRET-abc"}, timeout=5)
        assert "SECRET-abc" not in str(caught.value)
        assert "500" in str(caught.value)
    finally:
        raw.close()


def test_after_close_no_descriptor_is_left(
    unix_fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    with connect(unix_fault_server.url()) as warm:
        warm.call_tool("echo")
    before = set(os.listdir("/proc/self/fd"))
    client = connect(unix_fault_server.url())
    client.call_tool("echo")
    client.close()
    # the in-process server closes its ends on its own threads: give it a moment
    assert wait_until(lambda: set(os.listdir("/proc/self/fd")) - before == set())
