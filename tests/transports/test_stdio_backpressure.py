"""A stdio server that stops reading its input (``fault_server.py slow-reader``): every write
is bounded by its caller's deadline, nothing waits behind a stuck write past its own
deadline, a torn frame closes the connection at once, and a request whose caller gave up is
never written later.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConnectionClosed, RequestTimeout

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

FaultCmd = Callable[..., list[str]]
BIG = "b" * (4 * 1024 * 1024)  # far more than a pipe holds


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pause_server(client: mcp_lite.Client, seconds: float) -> Future[dict[str, Any]]:
    """Ask the server to stop reading stdin for ``seconds`` (its answer never comes)."""
    return client.submit(
        "tools/call", {"name": "pause", "arguments": {"seconds": seconds}}, timeout=120.0
    )


def test_a_write_stuck_on_a_full_pipe_fails_at_its_deadline_and_closes_the_connection(
    fault_cmd: FaultCmd, tmp_path: Path, wait_until: Callable[..., bool]
) -> None:
    record = tmp_path / "calls.jsonl"
    with mcp_lite.connect(fault_cmd("slow-reader", record), timeout=30.0) as client:
        first_pid = client.transport.pid  # type: ignore[union-attr]
        paused = pause_server(client, 3600)
        assert wait_until(lambda: len(records(record)) == 1, timeout=20)

        started = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("echo", {"text": BIG}, timeout=1.5)
        elapsed = time.monotonic() - started
        # At the deadline, not after the transport's own 30 s write bound.
        assert elapsed < 15, elapsed
        assert "echo" in str(info.value) or "tools/call" in str(info.value)

        # Half a frame is in the pipe: the connection is closed and the other pending call
        # fails at once with a reason that says so, instead of waiting out its 120 s.
        with pytest.raises(ConnectionClosed) as closed:
            paused.result(15)
        assert "middle of a message" in str(closed.value)
        assert not client.connected

        # The next call starts a fresh server.
        assert [t.name for t in client.list_tools()] == ["echo"]
        assert client.transport.pid != first_pid  # type: ignore[union-attr]


def test_other_callers_do_not_wait_behind_a_stuck_write(
    fault_cmd: FaultCmd, tmp_path: Path, wait_until: Callable[..., bool]
) -> None:
    record = tmp_path / "calls.jsonl"
    with mcp_lite.connect(fault_cmd("slow-reader", record), timeout=30.0) as client:
        pause_server(client, 3600)
        assert wait_until(lambda: len(records(record)) == 1, timeout=20)
        outcome: dict[str, float] = {}

        def big() -> None:
            with pytest.raises(RequestTimeout):
                client.call_tool("echo", {"text": BIG}, timeout=8.0)
            outcome["big"] = time.monotonic()

        writer = threading.Thread(target=big)
        writer.start()
        # The big write holds the write lock; a small call's own deadline still rules.
        assert wait_until(lambda: client.transport._write_lock.locked(), timeout=10)  # type: ignore[union-attr]
        # (Its deadline or its wait for the lock, whichever comes first, says so. From a
        # worker thread, as in a web app: in the pure-Python build the main thread takes the
        # write lock with a plain `with`, for Ctrl-C safety, and so waits for the stuck
        # write's end instead.)
        small: Future[Any] = Future()

        def small_call() -> None:
            try:
                client.call_tool("echo", {"text": "small"}, timeout=1.0)
            except Exception as exc:
                outcome["small"] = time.monotonic()
                small.set_exception(exc)
            else:  # pragma: no cover - reported below
                small.set_result(None)

        threading.Thread(target=small_call).start()
        with pytest.raises(RequestTimeout):
            small.result(60)
        writer.join(30)
        assert not writer.is_alive()
        assert outcome["small"] < outcome["big"]


def test_a_request_whose_caller_gave_up_is_never_written_later(
    fault_cmd: FaultCmd, tmp_path: Path, wait_until: Callable[..., bool]
) -> None:
    record = tmp_path / "calls.jsonl"
    with mcp_lite.connect(fault_cmd("slow-reader", record), timeout=30.0) as client:
        pause_server(client, 4.0)  # stops reading for 4 s, then reads on
        assert wait_until(lambda: len(records(record)) == 1, timeout=20)
        big_done: Future[Any] = Future()

        def big() -> None:
            try:
                big_done.set_result(client.call_tool("echo", {"text": BIG}, timeout=60.0).text)
            except Exception as exc:  # pragma: no cover - reported below
                big_done.set_exception(exc)

        threading.Thread(target=big, daemon=True).start()
        assert wait_until(lambda: client.transport._write_lock.locked(), timeout=10)  # type: ignore[union-attr]
        # (From a worker thread: see the test above about the pure build's main thread.)
        gave_up: Future[Any] = Future()

        def late_call() -> None:
            try:
                gave_up.set_result(client.call_tool("echo", {"text": "gave-up"}, timeout=0.5))
            except Exception as exc:
                gave_up.set_exception(exc)

        threading.Thread(target=late_call, daemon=True).start()
        with pytest.raises(RequestTimeout):
            gave_up.result(60)
        # The server reads again: the big write completes and is answered.
        assert big_done.result(60) == BIG
        assert client.call_tool("echo", {"text": "after"}, timeout=30).text == "after"
        texts = [entry["text"] for entry in records(record)]
        assert "after" in texts
        assert "gave-up" not in texts
