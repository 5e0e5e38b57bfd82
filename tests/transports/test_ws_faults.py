"""The WebSocket transport against a hostile server (``tests/peers/ws_fault_server.py``):
a 300 MiB frame refused from its header, a message growing by fragments, a server that stops
reading, and bearer tokens bound to the server they are for.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.auth import MemoryTokenStore, OAuth
from mcp_lite.errors import ConfigError, ConnectionClosed, RemoteProtocolError, RequestTimeout

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


@pytest.fixture
def ws_fault(
    peer_python: str, peers_dir: Path, start_http_peer: Callable[..., Any], free_port: int
) -> Callable[..., str]:
    """``ws_fault(*flags)`` starts the hostile server and returns its ``ws://`` URL."""

    def start(*flags: str) -> str:
        cmd = [peer_python, str(peers_dir / "ws_fault_server.py"), "--port", str(free_port)]
        start_http_peer([*cmd, *flags], free_port)
        return f"ws://127.0.0.1:{free_port}/"

    return start


def test_a_300_mib_frame_is_refused_from_its_header(ws_fault: Callable[..., str]) -> None:
    with mcp_lite.connect(ws_fault(), timeout=30.0) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        # The server sends the frame header and 4 KiB of it, then waits: a client that read
        # the payload before checking its size would sit here until the deadline.
        with pytest.raises(ConnectionClosed) as info:
            client.call_tool("huge", {}, timeout=120.0)
        message = str(info.value)
        assert str(300 * 1024 * 1024) in message and "max_message_size" in message
        assert "refused from its header" in message
        assert client.call_tool("echo", {"text": "again"}).text == "again"  # reconnected


def test_a_message_growing_by_fragments_is_refused_at_the_limit(
    ws_fault: Callable[..., str],
) -> None:
    limit = 4 * 1024 * 1024
    with mcp_lite.connect(ws_fault(), timeout=30.0, max_message_size=limit) as client:
        with pytest.raises(ConnectionClosed) as info:
            client.call_tool("fragments", {}, timeout=120.0)
        assert f"over the limit of {limit}" in str(info.value)


def test_a_write_to_a_server_that_stopped_reading_ends_at_the_deadline(
    ws_fault: Callable[..., str],
) -> None:
    with mcp_lite.connect(ws_fault(), timeout=30.0) as client:
        stopped = client.submit("tools/call", {"name": "stop", "arguments": {}}, timeout=120.0)
        time.sleep(0.5)  # let the server read it and stop reading
        big = "b" * (24 * 1024 * 1024)  # far more than the socket buffers hold
        started = time.monotonic()
        # (A deadline that leaves time to encode and mask 24 MiB even on a loaded machine:
        # the write itself must start, or nothing is torn and the connection rightly stays.)
        with pytest.raises(RequestTimeout):
            client.call_tool("echo", {"text": big}, timeout=8.0)
        assert time.monotonic() - started < 30
        # Half a frame went out: the connection is closed, the other call fails at once.
        with pytest.raises(ConnectionClosed) as info:
            stopped.result(15)
        assert "middle of a frame" in str(info.value)
        assert client.call_tool("echo", {"text": "fresh"}).text == "fresh"


def test_an_answer_with_invalid_utf8_fails_only_its_call(ws_fault: Callable[..., str]) -> None:
    with mcp_lite.connect(ws_fault(), timeout=30.0) as client:
        with pytest.raises(RemoteProtocolError) as info:
            client.call_tool("bad-utf8", {}, timeout=60.0)
        assert "could not be read" in str(info.value)
        assert client.connected  # the connection (and other calls) carry on
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


class RecordingAuth:
    """A bearer provider like OAuth: bound to one server, refreshable once."""

    def __init__(self, first: str, then: str) -> None:
        self.tokens = [first, then]
        self.bound: list[str] = []
        self.lock = threading.Lock()

    def bind(self, url: str) -> None:
        self.bound.append(url)

    def token(self) -> str | None:
        return self.tokens[0]

    def refresh(self, sent: str | None) -> str | None:
        assert sent == self.tokens[0]
        self.tokens.pop(0)
        return self.tokens[0]


def test_the_token_is_bound_to_the_server_and_refreshed_after_a_401(
    ws_fault: Callable[..., str], tmp_path: Path
) -> None:
    record = tmp_path / "auth.jsonl"
    url = ws_fault("--token", "good", "--record", str(record))
    auth = RecordingAuth("stale", "good")
    with mcp_lite.connect({"type": "ws", "url": url}, auth=auth, timeout=30.0) as client:
        assert client.call_tool("echo", {"text": "in"}).text == "in"
    assert auth.bound and all(b == url.replace("ws://", "http://") for b in auth.bound)
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    # (None: the fixture's port probe, which sends no request)
    assert [s for s in seen if s is not None] == ["Bearer stale", "Bearer good"]


def test_an_oauth_token_for_server_a_is_never_sent_to_server_b(
    ws_fault: Callable[..., str], tmp_path: Path
) -> None:
    record = tmp_path / "auth.jsonl"
    url = ws_fault("--record", str(record))
    store = MemoryTokenStore()
    oauth = OAuth("http://127.0.0.1:9/server-a", store=store, open_browser=False)
    with pytest.raises(ConfigError) as info:
        mcp_lite.connect({"type": "ws", "url": url}, auth=oauth, timeout=30.0)
    assert "refusing to send them" in str(info.value)
    # Not even a handshake reached server B (None: the fixture's port probe).
    lines = record.read_text().splitlines() if record.exists() else []
    seen = [json.loads(line) for line in lines]
    assert all(s is None for s in seen)
