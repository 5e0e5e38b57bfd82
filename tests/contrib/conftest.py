"""The shared peer of the agent-framework adapter tests: one Hub per test module over the
real stdio server ``agent_server.py`` (see ``agent_peer``)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_peer import SERVER, AgentPeer, close_thread_loop, permission_handler

from mcp_lite.hub import Hub


@pytest.fixture(autouse=True)
def _close_thread_loop() -> Iterator[None]:
    """Close what a framework's sync entry point left on the test's thread."""
    yield
    close_thread_loop()


@pytest.fixture(scope="module")
def agent_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentPeer]:
    marks = tmp_path_factory.mktemp("agent") / "marks"
    marks.write_text("")
    config = {
        "mcpServers": {
            "agent": {
                "command": sys.executable,
                "args": [SERVER],
                "env": {"AGENT_MARKS": str(marks)},
            }
        }
    }
    with Hub(config, deny=["mcp__agent__secret"], permission_handler=permission_handler) as hub:
        yield AgentPeer(hub, marks, config)
        # No thread is left in a call (idle worker threads of a framework's loop may stay).
        deadline = time.monotonic() + 10
        while (busy := _in_calls()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not busy, f"threads left in a call: {busy}"


def _in_calls() -> list[str]:
    """The threads (other than this one) with a frame in ``call_tool``."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return [
        names.get(ident, str(ident))
        for ident, frame in sys._current_frames().items()
        if ident != threading.get_ident() and _calling(frame)
    ]


def _calling(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "call_tool" and "mcp_lite" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False
