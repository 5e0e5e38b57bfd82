"""An unknown task after a restart behind the gateway says so: a task started through the
gateway is gone once the gateway (and with it its stdio server) restarts, or once the
server process dies and the gateway starts it again; a worker resuming it gets
``InvalidParams`` that names the restart (and that a stdio server's tasks end with its
process). Real gateway processes (``mcp-lite gateway``) and real stdio task servers."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gateway_helpers import PEERS, GatewayProcess, Peers

import mcp_lite
from mcp_lite import Gateway, Hub
from mcp_lite.errors import InvalidParams

ERAS = ["2025-11-25", "2026-07-28"]
StartGateway = Callable[..., GatewayProcess]


def _entry(era: str) -> dict[str, object]:
    version = "2025-11-25" if era == "2025-11-25" else "all"
    return {"command": sys.executable, "args": [str(PEERS / "task_server.py"), "stdio", version]}


@pytest.fixture
def task_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mcptr", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("era", ERAS)
def test_a_task_lost_to_a_gateway_restart_says_so(
    era: str, peers: Peers, gateway_process: StartGateway
) -> None:
    peers.write({"tasks": _entry(era)})
    gw = gateway_process(peers.path)
    url = f"{gw.url}/servers/tasks/mcp"
    with mcp_lite.connect(url, protocol_version=era, timeout=20) as client:
        task = client.call_tool_as_task("slow", {"seconds": 600})
        assert task.status(timeout=10).status == "working"
        gw.stop()  # the gateway's stdio server ends with it, and its task
        gw = gateway_process(peers.path, gw.socket)  # restarted on the same socket
        # the handle that lived through the restart
        with pytest.raises(InvalidParams) as held:
            task.status(timeout=20)
    # a worker that resumes the stored id later
    with (
        mcp_lite.connect(url, protocol_version=era, timeout=20) as client,
        pytest.raises(InvalidParams) as resumed,
    ):
        client.resume_task(task.id, timeout=20)
    for caught in (held, resumed):
        message = str(caught.value)
        assert f"task {task.id} is unknown" in message
        assert "restart" in message
        assert "stdio server's tasks end with its process" in message


@pytest.mark.parametrize("era", ERAS)
def test_a_task_lost_when_the_server_died_behind_the_gateway_says_so(
    era: str, task_dir: Path
) -> None:
    hub = Hub({"mcpServers": {"tasks": _entry(era)}}, gateway=False)
    with Gateway(hub).start(str(task_dir / "t.sock")) as gw:
        url = f"{gw.url}/servers/tasks/mcp"
        with mcp_lite.connect(url, protocol_version=era, timeout=20) as client:
            task_id = client.call_tool_as_task("slow", {"seconds": 600}).id
        pid = hub.status()["tasks"].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + 30
        while hub.status()["tasks"].state == "connected" and time.monotonic() < end:
            time.sleep(0.02)
        with (
            mcp_lite.connect(url, protocol_version=era, timeout=20) as client,
            pytest.raises(InvalidParams) as caught,
        ):
            client.resume_task(task_id, timeout=20)
        assert hub.status()["tasks"].pid != pid  # the gateway started a new process
    message = str(caught.value)
    assert f"task {task_id} was live on an earlier process" in message
    assert "stdio server's tasks end with its process" in message
