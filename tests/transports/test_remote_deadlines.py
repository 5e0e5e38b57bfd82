"""The remote transports on the caller's deadline, and what their close() leaves (issue 21).

Through the public API against the hostile peers of ``tests/peers/hostile_http.py`` (all on
127.0.0.1): the WebSocket host-name lookup ends at the deadline; a WebSocket ``close()`` and
interpreter exit are bounded when the server ignores the close frame; a connect that gets no
SYN-ACK leaves no worker behind; after ``close()`` no socket of an HTTP or SSE client is left
open (counted without a garbage collection) and the socket watchdog's thread is gone. The only
timings asserted are "within its timeout (or bound) plus a slack of under a second".
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import McpError

PEERS = Path(__file__).resolve().parent.parent / "peers"
SLACK = 1.0


def _load_peer() -> Any:
    name = "hostile_http"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PEERS / "hostile_http.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


hostile = _load_peer()


@pytest.fixture
def peer(request: pytest.FixtureRequest) -> Iterator[Any]:
    server = hostile.HostileServer(getattr(request, "param", "normal")).start()
    yield server
    server.stop()


def settle(predicate: Callable[[], bool], window: float) -> bool:
    end = time.monotonic() + window
    while not predicate():
        if time.monotonic() > end:
            return predicate()
        time.sleep(0.02)
    return True


def threads(prefix: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix)]


def sockets_to(port: int) -> int:
    """Open fds of this process that are TCP sockets connected to 127.0.0.1:``port``
    (from /proc: no garbage collection, no psutil)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port:  # the remote end is the peer
                inodes.add(fields[9])
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            count += 1
    return count


# --- close() leaves nothing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "options"),
    [
        ("/mcp", {"protocol_version": "2025-11-25"}),
        ("/modern", {"protocol_version": "2026-07-28"}),
        ("/sse", {}),
    ],
    ids=["http-2025", "http-2026", "sse"],
)
def test_close_leaves_no_socket_and_no_thread(peer: Any, path: str, options: Any) -> None:
    target = {"type": "sse", "url": peer.url(path)} if path == "/sse" else peer.url(path)
    client = mcp_lite.connect(target, timeout=5, **options)
    client.call_tool("t1", {})
    client.list_tools()
    assert sockets_to(peer.port) > 0  # keep-alive connections (and the SSE stream) are open
    client.close()
    # Closed by close() itself, not left to the garbage collector (none runs here).
    assert settle(lambda: sockets_to(peer.port) == 0, 0.5), sockets_to(peer.port)
    # The watchdog thread (its slots all released) and the workers are gone as well.
    assert settle(lambda: not threads("mcp-lite"), SLACK), threads("mcp-lite")


# --- WebSocket ----------------------------------------------------------------------------------


@pytest.mark.parametrize("peer", ["ignore_close"], indirect=True)
def test_websocket_close_is_bounded_when_the_server_ignores_the_close_frame(peer: Any) -> None:
    client = mcp_lite.connect(peer.url("/ws"), timeout=5)
    client.call_tool("t1", {})
    started = time.monotonic()
    client.close()
    # The reader sat in a receive of ping_interval (20 s) seconds: it is shut down under it.
    # close() promises about a second; the slack comes on top, as for calls.
    assert time.monotonic() - started < 1.0 + SLACK
    assert settle(lambda: not threads("mcp-lite"), SLACK), threads("mcp-lite")
    assert settle(lambda: sockets_to(peer.port) == 0, 0.5)


@pytest.mark.parametrize("peer", ["ignore_close"], indirect=True)
def test_interpreter_exit_is_not_delayed_by_an_open_websocket(peer: Any) -> None:
    script = textwrap.dedent(
        f"""
        import mcp_lite
        client = mcp_lite.connect({peer.url("/ws")!r}, timeout=5)
        client.call_tool("t1", {{}})
        print("connected", flush=True)
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent.parent,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "connected" in done.stdout
    # Starting Python and importing take a moment; a 20 s receive would show.
    assert elapsed < 10, elapsed


class _HangingResolver:
    def __init__(self, real: Any) -> None:
        self.real = real
        self.release = threading.Event()

    def __call__(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "hangs.mcp-lite.test":
            self.release.wait(30)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.real(host, *args, **kwargs)


def test_websocket_host_name_lookup_ends_at_the_deadline(
    peer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = _HangingResolver(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    try:
        started = time.monotonic()
        with pytest.raises(McpError) as info:
            mcp_lite.connect(f"ws://hangs.mcp-lite.test:{peer.port}/ws", timeout=2)
        assert time.monotonic() - started < 2 + SLACK
        assert "connecting" in str(info.value) and "2 s" in str(info.value)
        assert "not known" not in str(info.value)  # it did not wait for the lookup's end
    finally:
        resolver.release.set()


# --- a connect that gets no SYN-ACK --------------------------------------------------------------


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose listener never accepts and whose queue is full: further SYNs are dropped
    (Linux), so a connect waits for a SYN-ACK that never comes, as across a partition."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(8):  # fill the accept queue (its size is backlog + 1)
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        fillers.append(sock)
    time.sleep(0.1)
    probe = socket.socket()
    probe.settimeout(0.5)
    try:
        probe.connect(("127.0.0.1", port))
        pytest.skip("the kernel answered a connect to a full queue")
    except OSError:
        pass
    finally:
        probe.close()
    yield port
    for sock in fillers:
        sock.close()
    listener.close()


@pytest.mark.parametrize("protocol_version", ["2025-11-25", "2026-07-28"])
def test_a_connect_without_syn_ack_ends_at_the_deadline_and_leaves_no_worker(
    unanswered_port: int, protocol_version: str
) -> None:
    started = time.monotonic()
    with pytest.raises(McpError):
        mcp_lite.connect(
            f"http://127.0.0.1:{unanswered_port}/mcp", timeout=2, protocol_version=protocol_version
        )
    assert time.monotonic() - started < 2 + SLACK
    # The worker's socket was registered before its TCP connect: shut down at the deadline
    # (or by close()), the connect ends at once instead of running its own timeout out.
    assert settle(lambda: not threads("mcp-lite-http"), 0.5), threads("mcp-lite-http")
