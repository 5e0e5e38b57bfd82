"""Tasks that outlive the process, through the gateway, in both eras: process A (a worker Hub
in a subprocess) starts a task with ``Hub.call_tool_as_task``, prints its id and exits; process
B (this test, another worker Hub) collects it with ``Hub.resume_task``. The server is one stdio
process run by a gateway process (``mcp-lite gateway``) on a Unix socket; the 2025-11-25 era
through a 2025-11-25-only server, the 2026-07-28 era through a server that speaks it. And the
cron flow: ``mcp-lite call ... --as-task`` in one run, ``mcp-lite task result ID`` in the next.
A forwarded request holds its server against the gateway's own recycling.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from gateway_helpers import PEERS, ROOT, GatewayProcess, Peers, server_processes

import mcp_lite
from mcp_lite import Gateway, Hub
from mcp_lite.errors import InvalidParams

StartGateway = Callable[..., GatewayProcess]

# era -> the configured server that runs tasks in that era behind the gateway
ERAS = {"2025-11-25": "old", "2026-07-28": "new"}

STARTER = """
import sys
import mcp_lite
config, gateway, era, server, seconds = sys.argv[1:6]
options = {"protocol_version": era}
with mcp_lite.Hub.from_config(
    config_files=[config], gateway=gateway, client_options=options
) as hub:
    task = hub.call_tool_as_task(f"mcp__{server}__slow", {"seconds": float(seconds)}, timeout=30)
    print(task.id, hub.client(server).session.era, hub.status()[server].via)
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MCP_LITE_GATEWAY", None)
    return env


@pytest.fixture
def task_peers(peers: Peers) -> Peers:
    """Two stdio task servers (tests/peers/task_server.py): ``old`` speaks 2025-11-25 only,
    ``new`` every version (its gateway connection runs 2026-07-28)."""
    server = str(PEERS / "task_server.py")
    peers.write(
        {
            "old": {
                "command": sys.executable,
                "args": [server, "stdio", "2025-11-25", peers.marker],
            },
            "new": {"command": sys.executable, "args": [server, "stdio", "all", peers.marker]},
        }
    )
    return peers


@pytest.mark.parametrize("era", list(ERAS))
def test_started_by_one_process_collected_by_another(
    task_peers: Peers, gateway_process: StartGateway, era: str
) -> None:
    server = ERAS[era]
    gw = gateway_process(task_peers.path)  # fresh: the first worker starts the server
    started = subprocess.run(
        [sys.executable, "-c", STARTER, str(task_peers.path), gw.url, era, server, "1.5"],
        capture_output=True, text=True, timeout=60, env=_env(), cwd=str(ROOT),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    task_id, started_era, via = started.stdout.split()
    expected_era = "handshake" if era == "2025-11-25" else "stateless"
    assert (started_era, via) == (expected_era, "gateway")
    with Hub.from_config(
        config_files=[str(task_peers.path)],
        gateway=gw.url,
        client_options={"protocol_version": era},
    ) as worker:
        task = worker.resume_task(server, task_id, timeout=20)
        assert worker.client(server).session.era == expected_era
        assert worker.status()[server].via == "gateway"
        assert task.id == task_id
        assert task.last_status.status == "working"  # the starter's exit ended nothing
        assert task.result(timeout=20).text == "slept 1.5"
        assert task.status(timeout=10).status == "completed"
        with pytest.raises(InvalidParams, match="task no-such-task is unknown"):
            worker.resume_task(server, "no-such-task", timeout=20)
    # one server process on the machine: the gateway's (no worker started its own)
    assert len(server_processes(task_peers.marker)) == 1


@pytest.mark.parametrize("era", list(ERAS))
def test_cancelled_by_another_process(
    task_peers: Peers, gateway_process: StartGateway, era: str
) -> None:
    server = ERAS[era]
    gw = gateway_process(task_peers.path)  # fresh: the first worker starts the server
    started = subprocess.run(
        [sys.executable, "-c", STARTER, str(task_peers.path), gw.url, era, server, "30"],
        capture_output=True, text=True, timeout=60, env=_env(), cwd=str(ROOT),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    task_id = started.stdout.split()[0]
    with mcp_lite.connect(f"{gw.url}/servers/{server}/mcp", protocol_version=era) as client:
        task = client.resume_task(task_id, timeout=20)
        assert task.last_status.status == "working"
        task.cancel(timeout=10)
        assert task.status(timeout=10).status == "cancelled"


def _cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_lite", *argv],
        capture_output=True, text=True, timeout=60, env=env, cwd=str(ROOT),
    )  # fmt: skip


@pytest.mark.parametrize("era", list(ERAS))
def test_cron_runs_start_then_collect(
    task_peers: Peers, gateway_process: StartGateway, era: str
) -> None:
    # two cron runs: the first starts the task and exits 0, the next prints its result
    server = ERAS[era]
    gw = gateway_process(task_peers.path)  # fresh: the first worker starts the server
    env = {**_env(), "MCP_LITE_GATEWAY": gw.url}
    config = str(task_peers.path)
    first = _cli(
        "call", f"mcp__{server}__slow", '{"seconds": 1}', "--as-task", "--config", config, env=env
    )
    assert first.returncode == 0, first.stderr[-2000:]
    task_id = first.stdout.strip()
    assert task_id and "\n" not in task_id
    status = _cli("task", "status", task_id, "--server", server, "--config", config, env=env)
    assert status.returncode == 0, status.stderr[-2000:]
    assert status.stdout.split()[:2][1] in ("working", "completed")
    assert status.stdout.split()[0] == task_id
    result = _cli(
        "task", "result", task_id, "--server", server, "--config", config, "--timeout", "20",
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "slept 1.0"
    assert len(server_processes(task_peers.marker)) == 1


def test_a_forwarded_request_holds_its_server_against_an_idle_recycle(short_dir: Path) -> None:
    # a call (a tools/call, a blocking tasks/result) longer than the gateway's idle_timeout
    # ends with its answer: the idle timer waits for it, then stops the server
    record = short_dir / "record.jsonl"
    slow = {"command": sys.executable, "args": [str(PEERS / "slow_server.py"), str(record)]}
    hub = Hub({"mcpServers": {"slow": slow}}, gateway=False, idle_timeout=0.2)
    with Gateway(hub).start(str(short_dir / "idle.sock")) as gw:
        url = f"{gw.url}/servers/slow/mcp"
        with mcp_lite.connect(url, protocol_version="2025-11-25", timeout=20) as client:
            assert client.call_tool("wait", {"seconds": 1.0}).text == "waited"
            assert hub.status()["slow"].recycles == 0
