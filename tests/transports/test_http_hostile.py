"""Streamable HTTP and legacy SSE against hostile servers (issue 9): what the user sees.

A server that never sends headers, drips bytes, never acknowledges a POST, answers slowly
to DELETE, sends compressed bombs, broken bodies or transient errors. Every caller gets a
clear error at its deadline (or its answer), the worker and the socket are freed (the
server sees the hang-up), later calls keep working, and close() is prompt. Waits here are
generous hang guards, never timing assertions.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import (
    ConnectError,
    ConnectionClosed,
    McpError,
    MessageTooLarge,
    RequestTimeout,
)

HANDSHAKE = "2025-11-25"
GUARD = 30.0  # a hang guard: far beyond any deadline used here


@pytest.fixture(params=["tcp", "unix"])
def fault_server(request: pytest.FixtureRequest, fault_server: Any) -> Any:
    """Each test on TCP (``http://127.0.0.1``) and on a Unix socket (``unix://``: the
    client's lean HTTP path): the same faults, the same outcomes."""
    if request.param == "unix":
        return request.getfixturevalue("unix_fault_server")
    return fault_server


def tcp_only(server: Any, why: str) -> None:
    if server.url().startswith("unix://"):
        pytest.skip(f"TCP only: {why}")


def connect(url: str, **options: Any) -> mcp_lite.Client:
    options.setdefault("protocol_version", HANDSHAKE)
    options.setdefault("timeout", 10)
    return mcp_lite.connect(url, **options)


def http_threads(server: Any) -> list[threading.Thread]:
    """The threads of the transports connected to ``server`` (named after its URL)."""
    where = f"127.0.0.1:{server.server_address[1]}/"
    return [t for t in threading.enumerate() if t.name.startswith("mcp-lite-") and where in t.name]


@pytest.mark.parametrize("tool", ["hang", "drip"])
def test_no_headers_or_dripping_body_fails_at_deadline_and_frees_the_socket(
    fault_server: Any, wait_until: Callable[..., bool], tool: str
) -> None:
    with connect(fault_server.url()) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool(tool, timeout=1)
        assert time.monotonic() - started < GUARD
        # The socket was shut down at the deadline: the server sees the hang-up.
        assert wait_until(lambda: len(fault_server.state.disconnected) == 1, GUARD)
        assert client.call_tool("echo").text == "echo"  # the connection lives on


def test_many_hung_calls_neither_exhaust_the_pool_nor_block_later_calls(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    with connect(fault_server.url()) as client:
        futures = [client.submit("tools/call", {"name": "hang"}, timeout=1.5) for _ in range(20)]
        # While they hang, other calls still go through.
        assert client.call_tool("echo").text == "echo"
        done, _ = wait(futures, GUARD)
        assert len(done) == 20
        assert all(isinstance(f.exception(), RequestTimeout) for f in futures)
        assert wait_until(lambda: len(fault_server.state.disconnected) == 20, GUARD)
        assert wait_until(lambda: fault_server.state.hanging == 0, GUARD)
        # Blocking callers (POSTing on their own threads) are freed the same way.
        errors: list[BaseException] = []

        def call() -> None:
            try:
                client.call_tool("hang", timeout=1)
            except McpError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(GUARD)
        assert len(errors) == 16 and all(isinstance(e, RequestTimeout) for e in errors)
        assert wait_until(lambda: fault_server.state.hanging == 0, GUARD)
        assert client.call_tool("echo").text == "echo"
    assert wait_until(lambda: not http_threads(fault_server), GUARD)


def test_requests_queued_past_their_deadline_are_never_sent(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    # Every worker busy with a hung request; the requests queued behind them time out
    # while queued, and are never sent once the workers are free again.
    with connect(fault_server.url()) as client:
        busy = [client.submit("tools/call", {"name": "hang"}, timeout=4) for _ in range(64)]
        assert wait_until(lambda: fault_server.state.hanging == 64, GUARD)
        queued = [client.submit("tools/call", {"name": "hang"}, timeout=0.5) for _ in range(8)]
        wait(queued, GUARD)
        assert all(isinstance(f.exception(), RequestTimeout) for f in queued)
        wait(busy, GUARD)
        assert wait_until(lambda: fault_server.state.hanging == 0, GUARD)
        assert client.call_tool("echo").text == "echo"
        assert fault_server.state.counts["tool hang"] == 64


def test_interpreter_exit_does_not_wait_for_hung_requests(fault_server: Any) -> None:
    script = textwrap.dedent(
        f"""
        import mcp_lite
        client = mcp_lite.connect({fault_server.url()!r}, protocol_version={HANDSHAKE!r})
        for _ in range(3):
            client.submit("tools/call", {{"name": "hang"}}, timeout=600)
        print("submitted", flush=True)
        """
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "submitted" in proc.stdout
    assert time.monotonic() - started < 100  # not the 600 s of the hung requests


def test_close_does_not_wait_for_a_slow_delete(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    client = connect(fault_server.url("/slowdelete"))
    assert client.call_tool("echo").text == "echo"
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 10  # the DELETE answer comes after 20 s
    assert wait_until(lambda: fault_server.state.counts["slow DELETE"] == 1, GUARD)
    assert wait_until(lambda: not http_threads(fault_server), GUARD)


def test_gzip_body_is_decoded(fault_server: Any) -> None:
    with connect(fault_server.url()) as client:
        assert client.call_tool("gzip").text == "unzipped"


def test_gzip_bomb_fails_that_call_by_decoded_size(fault_server: Any) -> None:
    fault_server.state.bomb_size = 64 * 1024 * 1024
    with connect(fault_server.url(), max_message_size=1024 * 1024) as client:
        with pytest.raises(MessageTooLarge):
            client.call_tool("bomb")
        assert client.call_tool("echo").text == "echo"


@pytest.mark.parametrize("tool", ["chunked_broken", "truncated"])
def test_a_broken_body_fails_that_call_not_as_a_message(fault_server: Any, tool: str) -> None:
    with connect(fault_server.url()) as client:
        with pytest.raises(ConnectionClosed, match="broke"):
            client.call_tool(tool)
        assert client.call_tool("echo").text == "echo"


# --- transient errors (issue 10 §7) -----------------------------------------------------------


def test_429_with_retry_after_is_retried_even_for_tools_call(fault_server: Any) -> None:
    fault_server.state.busy = 2
    with connect(fault_server.url()) as client:
        assert client.call_tool("busy").text == "not busy"
    assert fault_server.state.counts["tool busy"] == 3


def test_retry_false_turns_retries_off(fault_server: Any) -> None:
    fault_server.state.busy = 2
    with connect(fault_server.url(), retry=False) as client, pytest.raises(McpError, match="429"):
        client.call_tool("busy")
    assert fault_server.state.counts["tool busy"] == 1


def test_5xx_retried_for_lists_with_backoff_never_for_tools_call(
    fault_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with connect(fault_server.url(), retry=mcp_lite.Retry(attempts=3, backoff=0.01)) as client:
        fault_server.state.list_503 = 2
        with caplog.at_level("DEBUG", logger="mcp_lite.http"):
            assert "echo" in [tool.name for tool in client.list_tools()]
        assert fault_server.state.counts["503 tools/list"] == 2
        assert "retry 2" in caplog.text
        with pytest.raises(McpError, match="503"):
            client.call_tool("unavailable")
        assert fault_server.state.counts["tool unavailable"] == 1
        # Out of attempts: the last refusal is the error.
        fault_server.state.list_503 = 10
        with pytest.raises(McpError, match="503"):
            client.list_tools()
        assert fault_server.state.counts["503 tools/list"] == 2 + 4


def test_retry_option_is_validated() -> None:
    with pytest.raises(mcp_lite.ConfigError):
        mcp_lite.Retry(attempts=-1)
    with pytest.raises(mcp_lite.ConfigError):
        mcp_lite.connect("http://127.0.0.1:9/mcp", retry="often")


# --- after close ------------------------------------------------------------------------------


def test_nothing_is_posted_and_no_token_fetched_after_close(fault_server: Any) -> None:
    asked: list[int] = []

    def token() -> str:
        asked.append(1)
        return "good"

    client = connect(fault_server.url("/auth"), auth=token)
    assert client.call_tool("echo").text == "echo"
    transport = client.transport
    client.close()
    before = len(asked)
    with pytest.raises(ConnectionClosed):
        client.notify("notifications/roots/list_changed")
    message = mcp_lite.transports.base.Outgoing(
        {"jsonrpc": "2.0", "method": "notifications/x"}, b"{}"
    )
    with pytest.raises(ConnectionClosed):
        transport.send(message)  # type: ignore[union-attr]
    time.sleep(0.2)
    assert len(asked) == before


# --- legacy HTTP+SSE --------------------------------------------------------------------------


def test_legacy_sse_unacknowledged_post_fails_at_deadline_without_stalling_others(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    tcp_only(fault_server, "legacy HTTP+SSE takes http(s):// URLs")
    with mcp_lite.connect(
        {"type": "sse", "url": fault_server.url("/slowack")}, timeout=10
    ) as client:
        assert client.call_tool("echo").text == "legacy echo"
        hung = client.submit("tools/call", {"name": "hang"}, timeout=1.5)
        # The unacknowledged POST stalls nobody: other calls and their deadlines go on.
        assert client.call_tool("echo").text == "legacy echo"
        with pytest.raises(RequestTimeout):
            client.call_tool("hang", timeout=1)
        assert isinstance(hung.exception(GUARD), RequestTimeout)
        assert wait_until(lambda: len(fault_server.state.disconnected) == 2, GUARD)
        assert client.call_tool("echo").text == "legacy echo"


def test_legacy_sse_huge_202_body_is_never_assembled(fault_server: Any) -> None:
    tcp_only(fault_server, "legacy HTTP+SSE takes http(s):// URLs")
    with mcp_lite.connect(
        {"type": "sse", "url": fault_server.url("/slowack")}, timeout=10
    ) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("big202", timeout=2)
        # The client hung up after a few KiB: the 300 MiB were never sent, let alone held.
        assert fault_server.state.sent202 < 32 * 1024 * 1024
        assert client.call_tool("echo").text == "legacy echo"


def test_legacy_sse_503_with_retry_after_is_retried(fault_server: Any) -> None:
    tcp_only(fault_server, "legacy HTTP+SSE takes http(s):// URLs")
    with mcp_lite.connect(
        {"type": "sse", "url": fault_server.url("/slowack")}, timeout=10
    ) as client:
        assert client.call_tool("busy").text == "legacy busy"
    assert fault_server.state.counts["legacy busy"] == 2


def test_hub_config_entry_accepts_and_validates_retry(fault_server: Any) -> None:
    from mcp_lite.hub.config import parse_servers

    url = fault_server.url()
    entries, issues = parse_servers(
        {
            "off": {"type": "http", "url": url, "retry": False},
            "tuned": {"type": "http", "url": url, "retry": {"attempts": 1, "backoff": 0.1}},
            "typo": {"type": "http", "url": url, "retry": {"attempt": 1}},
        },
        "user",  # type: ignore[arg-type]
        "test",
    )
    assert entries["off"].usable and entries["tuned"].usable
    assert entries["typo"].error is not None and "attempt" in entries["typo"].error
    assert len(issues) == 1
    # The entry's retry setting reaches the transport.
    fault_server.state.busy = 1
    target = entries["off"].target()
    with mcp_lite.connect(target, protocol_version=HANDSHAKE) as client:
        with pytest.raises(McpError, match="429"):
            client.call_tool("busy")
        assert client.call_tool("busy").text == "not busy"


def test_legacy_sse_stream_that_never_opens_fails_connect_in_time(
    fault_server: Any, wait_until: Callable[..., bool]
) -> None:
    tcp_only(fault_server, "legacy HTTP+SSE takes http(s):// URLs")
    target = {"type": "sse", "url": fault_server.url("/silentsse"), "connectTimeout": 1}
    with pytest.raises(ConnectError, match="did not open its SSE stream"):
        mcp_lite.connect(target, timeout=5)
    assert wait_until(lambda: fault_server.state.disconnected == ["GET"], GUARD)
