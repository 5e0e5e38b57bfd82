"""A server that floods the client (``fault_server.py flood``): tens of thousands of log
notifications, thousands of sampling requests. Memory stays bounded: past the bounds the
client drops notifications (counted), refuses requests with a JSON-RPC error, and logs once
per overload episode. Asserted by counting, never by timing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite._connection import MAX_QUEUED_NOTIFICATIONS, MAX_QUEUED_SERVER_REQUESTS, OVERLOADED

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

FaultCmd = Callable[..., list[str]]


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    # the server may be writing its last line as we read: only whole lines count
    lines = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in lines if line.strip()]


def test_a_notification_flood_is_dropped_past_the_bound_and_counted(
    fault_cmd: FaultCmd, wait_until: Callable[..., bool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_lite.client")
    gate = threading.Event()
    seen: list[Any] = []

    def slow_log_handler(params: Any) -> None:
        gate.wait(60)  # the user's handler is stuck: everything else must queue or drop
        seen.append(params)

    flood = 20_000
    with mcp_lite.connect(fault_cmd("flood"), timeout=60.0, log_handler=slow_log_handler) as client:
        result = client.call_tool("flood", {"notifications": flood, "requests": 0})
        assert result.text  # the answer arrives behind every notification
        stats = client.load_stats()
        assert stats["notifications_queued"] == MAX_QUEUED_NOTIFICATIONS
        assert stats["notifications_dropped"] == flood - MAX_QUEUED_NOTIFICATIONS
        warnings = [r for r in caplog.records if "floods the client" in r.getMessage()]
        assert len(warnings) == 1  # once per episode, not once per dropped message

        gate.set()
        assert wait_until(lambda: len(seen) == MAX_QUEUED_NOTIFICATIONS, timeout=60)
        assert wait_until(lambda: client.load_stats()["notifications_queued"] == 0, timeout=10)
        assert any("backlog drained" in r.getMessage() for r in caplog.records)
        # Calls keep working after the episode.
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_a_sampling_flood_is_refused_with_a_json_rpc_error_past_the_bound(
    fault_cmd: FaultCmd, tmp_path: Path, wait_until: Callable[..., bool]
) -> None:
    record = tmp_path / "answers.jsonl"
    gate = threading.Event()

    def slow_sampling(params: Any) -> dict[str, Any]:
        gate.wait(60)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    flood = 2_000
    refused = flood - MAX_QUEUED_SERVER_REQUESTS
    with mcp_lite.connect(
        fault_cmd("flood", record), timeout=60.0, sampling_handler=slow_sampling
    ) as client:
        client.call_tool("flood", {"notifications": 0, "requests": flood})
        stats = client.load_stats()
        assert stats["server_requests_queued"] == MAX_QUEUED_SERVER_REQUESTS
        assert stats["server_requests_refused"] == refused

        def errors() -> list[dict[str, Any]]:
            return [r for r in records(record) if "error" in r]

        # Every refused request gets its answer: an error that says what and why.
        assert wait_until(lambda: len(errors()) == refused, timeout=60), len(errors())
        first = errors()[0]
        assert first["error"]["code"] == OVERLOADED
        assert "overloaded" in first["error"]["message"]
        assert "sampling/createMessage" in first["error"]["message"]
        assert len({r["id"] for r in errors()}) == refused

        # The admitted ones are answered once the handler moves again.
        gate.set()

        def results() -> int:
            return sum(1 for r in records(record) if r.get("result"))

        assert wait_until(lambda: results() == MAX_QUEUED_SERVER_REQUESTS, timeout=60)
        assert client.load_stats()["control_dropped"] == 0
