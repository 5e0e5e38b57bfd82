"""stdio servers that misbehave (``tests/peers/fault_server.py``): what the user sees.

Each test asserts the error (type and message) or the result a caller gets, that nothing
hangs (pytest-timeout would fail the test), and that no process is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConnectError, ConnectionClosed, MessageTooLarge, RequestTimeout

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

FaultCmd = Callable[..., list[str]]


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _reap_stray(pid: int) -> None:
    """Kill a process a failed test would otherwise leave running for ten minutes."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_echo_server_works(fault_cmd: FaultCmd) -> None:
    with mcp_lite.connect(fault_cmd("echo"), timeout=10.0) as client:
        assert client.server_info.name == "fault-echo"
        # A legacy server: server/discover is -32601, so "auto" settles on the handshake.
        assert client.protocol_version == "2025-11-25"
        assert [t.name for t in client.list_tools()] == ["echo"]
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert client.call_tool("echo", {"n": 1}).text == '{"n":1}'


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_pinned_handshake_versions(fault_cmd: FaultCmd, version: str) -> None:
    with mcp_lite.connect(fault_cmd("echo"), protocol_version=version, timeout=10.0) as client:
        assert client.protocol_version == version
        assert client.call_tool("echo", {"text": version}).text == version


def test_crash_mid_call_fails_at_once_with_exit_code_and_stderr(fault_cmd: FaultCmd) -> None:
    # A long timeout: the error must come from the crash, not from the deadline.
    with (
        mcp_lite.connect(fault_cmd("crash-mid-call"), timeout=10.0) as client,
        pytest.raises(ConnectionClosed) as info,
    ):
        client.call_tool("echo", {"text": "hi"}, timeout=60.0)
    err = info.value
    assert err.exit_code == 3
    assert "boom" in err.stderr_tail
    assert "3" in str(err) and "boom" in str(err)


def test_hang_times_out_and_sends_cancelled(
    fault_cmd: FaultCmd, tmp_path: Path, wait_until: Callable[..., bool]
) -> None:
    record = tmp_path / "hang.jsonl"
    with mcp_lite.connect(fault_cmd("hang", record), timeout=10.0) as client:
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("echo", {"text": "never"}, timeout=0.5)
        assert isinstance(info.value, TimeoutError)

        def cancelled_for_the_call() -> bool:
            records = read_records(record)
            calls = [r["id"] for r in records if r["method"] == "tools/call"]
            cancelled = [
                r["params"].get("requestId")
                for r in records
                if r["method"] == "notifications/cancelled"
            ]
            return len(calls) == 1 and calls[0] in cancelled

        assert wait_until(cancelled_for_the_call), f"records: {read_records(record)}"
        # The connection itself is still fine.
        assert [t.name for t in client.list_tools()] == ["echo"]


def test_garbage_on_stdout_is_skipped(fault_cmd: FaultCmd) -> None:
    with mcp_lite.connect(fault_cmd("garbage"), timeout=10.0) as client:
        assert [t.name for t in client.list_tools()] == ["echo"]
        for i in range(5):
            assert client.call_tool("echo", {"text": f"call {i}"}).text == f"call {i}"


def test_oversized_message_fails_only_that_call(fault_cmd: FaultCmd) -> None:
    with mcp_lite.connect(
        fault_cmd("oversized"), timeout=10.0, max_message_size=1_000_000
    ) as client:
        with pytest.raises(MessageTooLarge):
            client.call_tool("big", {})
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_oversized_message_within_the_limit_is_delivered(fault_cmd: FaultCmd) -> None:
    with mcp_lite.connect(
        fault_cmd("oversized"), timeout=10.0, max_message_size=8_000_000
    ) as client:
        assert client.call_tool("big", {}).text == "x" * (3 * 1024 * 1024)


def test_close_kills_a_server_that_ignores_sigterm(fault_cmd: FaultCmd) -> None:
    client = mcp_lite.connect(fault_cmd("ignore-sigterm"), timeout=10.0)
    pid = client.transport.pid
    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    client.close()
    # close() returned, so the server must already be dead and reaped.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_close_kills_the_grandchild(
    fault_cmd: FaultCmd, tmp_path: Path, pid_gone: Callable[..., bool]
) -> None:
    record = tmp_path / "grandchild.pid"
    with mcp_lite.connect(fault_cmd("grandchild", record), timeout=10.0) as client:
        grandchild = int(record.read_text())
        assert not pid_gone(grandchild, wait=0.0), "the grandchild should be running"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    survived = not pid_gone(grandchild)
    _reap_stray(grandchild)
    assert not survived, f"grandchild pid {grandchild} survived close()"


def test_close_after_a_crash_still_kills_the_grandchild(
    fault_cmd: FaultCmd, tmp_path: Path, pid_gone: Callable[..., bool]
) -> None:
    record = tmp_path / "grandchild.pid"
    with mcp_lite.connect(fault_cmd("grandchild", record), timeout=10.0) as client:
        grandchild = int(record.read_text())
        with pytest.raises(ConnectionClosed):
            client.call_tool("crash", {}, timeout=60.0)
    # The server is dead, but its process group still holds the grandchild.
    survived = not pid_gone(grandchild)
    _reap_stray(grandchild)
    assert not survived, f"grandchild pid {grandchild} survived close()"


def test_exit_during_initialize_names_exit_code_and_stderr(fault_cmd: FaultCmd) -> None:
    with pytest.raises((ConnectionClosed, ConnectError)) as info:
        mcp_lite.connect(fault_cmd("exit-during-initialize"), timeout=10.0)
    message = str(info.value)
    assert "7" in message
    assert "cannot initialize, configuration missing" in message
    if isinstance(info.value, ConnectionClosed):
        assert info.value.exit_code == 7


def test_bad_command_is_a_connect_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-server"
    with pytest.raises(ConnectError) as info:
        mcp_lite.connect([str(missing), "--flag"], timeout=10.0)
    assert "no-such-server" in str(info.value)


def test_pending_calls_from_many_threads_all_fail_when_the_server_dies(
    fault_cmd: FaultCmd,
) -> None:
    with mcp_lite.connect(fault_cmd("crash-mid-call"), timeout=10.0) as client:

        def call(i: int) -> BaseException | None:
            try:
                client.call_tool("echo", {"text": str(i)}, timeout=60.0)
            except BaseException as exc:
                return exc
            return None

        with ThreadPoolExecutor(max_workers=4) as pool:
            errors = list(pool.map(call, range(4)))
    assert all(isinstance(e, ConnectionClosed) for e in errors), errors
