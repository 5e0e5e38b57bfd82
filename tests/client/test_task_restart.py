"""An unknown task after a restart says so: a stdio server that died and was started again
by the client's reconnect knows none of the old process's tasks, and the handle's
``status()`` / ``result()`` raise ``InvalidParams`` naming that cause (the connection was
restarted; a stdio server's tasks end with its process). Real stdio task servers
(tests/peers/task_server.py), both eras."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.errors import InvalidParams

PEER = str(Path(__file__).parent.parent / "peers" / "task_server.py")
ERAS = ["2025-11-25", "2026-07-28"]


def _server(era: str) -> list[str]:
    return [sys.executable, PEER, "stdio", "2025-11-25" if era == "2025-11-25" else "all"]


def _gone(client: mcp_lite.Client) -> bool:
    end = time.monotonic() + 30
    while client.connected and time.monotonic() < end:
        time.sleep(0.02)
    return not client.connected


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("ask", ["status", "result"])
def test_a_task_of_a_restarted_stdio_server_is_unknown_and_the_error_says_why(
    era: str, ask: str, no_leftover_processes
) -> None:
    with mcp_lite.connect(_server(era), protocol_version=era, timeout=20) as client:
        task = client.call_tool_as_task("hold", {})
        assert task.status().status == "working"
        os.kill(client.transport.pid, signal.SIGKILL)  # the server dies with its task
        assert _gone(client)
        with pytest.raises(InvalidParams) as caught:
            if ask == "status":
                task.status(timeout=20)  # reconnects: a new server process
            else:
                task.result(timeout=20)
        message = str(caught.value)
        assert f"task {task.id} is unknown" in message
        assert "restarted" in message and "stdio server's tasks end with its process" in message
        assert client.connected  # the new process answers the rest
        assert client.call_tool_as_task("build", {}).result(timeout=20).text == "built in 1 steps"


def test_an_unknown_task_without_a_restart_names_the_causes(no_leftover_processes) -> None:
    with (
        mcp_lite.connect(_server("2025-11-25"), timeout=20) as client,
        pytest.raises(InvalidParams) as caught,
    ):
        client.resume_task("no-such-task")
    assert "stdio server's tasks end with the process that started it" in str(caught.value)
    assert "restarted since the task" not in str(caught.value)
