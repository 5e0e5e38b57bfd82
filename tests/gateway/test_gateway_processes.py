"""The gateway as a process (``mcp-lite gateway``): SIGTERM stops every server, SIGKILL and a
restart cost workers only a reconnect, 8 worker processes share one server process, a task
started by one process is collected by another."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from gateway_helpers import HERE, ROOT, GatewayProcess, Peers, server_processes, wait_for

import mcp_lite
from mcp_lite import Hub
from mcp_lite._http.peer import describe
from mcp_lite.errors import McpError

StartGateway = Callable[..., GatewayProcess]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MCP_LITE_GATEWAY", None)
    return env


def test_sigterm_stops_every_server_and_removes_the_socket(
    peers: Peers, gateway_process: StartGateway
) -> None:
    gw = gateway_process(peers.path)
    assert stat.S_IMODE(os.stat(gw.socket).st_mode) == 0o600
    with Hub.from_config(config_files=[str(peers.path)], gateway=gw.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}).text == "3"
        assert worker.call_tool("mcp__tasks__echo", {"text": "x"}).text == "x"
    assert len(server_processes(peers.marker)) == 2
    start = time.monotonic()
    assert gw.stop(signal.SIGTERM) == 0
    assert time.monotonic() - start < 5
    assert wait_for(lambda: server_processes(peers.marker) == [], 2.0)
    assert not os.path.exists(gw.socket)


def test_a_second_gateway_process_is_refused(peers: Peers, gateway_process: StartGateway) -> None:
    gw = gateway_process(peers.path)
    second = subprocess.run(
        [sys.executable, "-m", "mcp_lite", "gateway", "--socket", gw.socket,
         "--config", str(peers.path)],
        capture_output=True, text=True, timeout=30, env=_env(),
    )  # fmt: skip
    assert second.returncode == 2  # a configuration error, not a failed connection (3)
    who = f"is held by {describe(os.geteuid())}, pid {gw.proc.pid}"
    assert "configuration error: the gateway cannot listen on" in second.stderr
    assert who in second.stderr, second.stderr
    assert gw.proc.poll() is None  # the first one still runs


def test_gateway_killed_and_restarted_costs_workers_a_reconnect(
    peers: Peers, gateway_process: StartGateway
) -> None:
    gw = gateway_process(peers.path)
    with Hub.from_config(config_files=[str(peers.path)], gateway=gw.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 1}, timeout=10).text == "2"
        gw.stop(signal.SIGKILL)
        # its server dies with it (parent-death signal): nothing is left over
        assert wait_for(lambda: server_processes(peers.marker) == [], 5.0)
        start = time.monotonic()
        with pytest.raises(McpError) as caught:  # the gateway is gone: a prompt error
            worker.call_tool("mcp__plain__add", {"a": 1, "b": 1}, timeout=2)
        assert time.monotonic() - start < 3
        assert gw.socket in str(caught.value), caught.value
        assert server_processes(peers.marker) == []  # not started locally instead
        gateway_process(peers.path, gw.socket)  # the stale socket file is replaced
        answers = []
        for i in range(5):
            start = time.monotonic()
            answers.append(worker.call_tool("mcp__plain__add", {"a": i, "b": 1}, timeout=10).text)
            assert time.monotonic() - start < 11
        assert answers == ["1", "2", "3", "4", "5"]
        assert worker.status()["plain"].via == "gateway"
    assert len(server_processes(peers.marker)) == 1  # the new gateway's plain server


def test_eight_workers_share_one_server_process(
    peers: Peers, gateway_process: StartGateway
) -> None:
    gw = gateway_process(peers.path)
    workers = [
        subprocess.Popen(
            [sys.executable, str(HERE / "worker.py"), str(peers.path), gw.url, str(i), "25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )  # fmt: skip
        for i in range(8)
    ]
    seen_during: list[int] = []
    try:
        while any(w.poll() is None for w in workers):
            seen_during.append(len(server_processes(peers.marker)))
            time.sleep(0.1)
        outputs = [w.communicate(timeout=60) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
    for (out, err), w in zip(outputs, workers, strict=True):
        assert w.returncode == 0, err[-2000:]
        report = json.loads(out)
        assert report == {"ok": 25, "wrong": [], "via": "gateway"}
    # only `plain` was used: exactly one server process on the whole machine, all along
    assert max(seen_during, default=1) <= 1
    assert len(server_processes(peers.marker)) == 1


def test_a_task_outlives_the_process_that_started_it(
    peers: Peers, gateway_process: StartGateway
) -> None:
    gw = gateway_process(peers.path)
    url = f"{gw.url}/servers/tasks/mcp"
    started = subprocess.run(
        [sys.executable, str(HERE / "task_starter.py"), url, "1.0"],
        capture_output=True, text=True, timeout=30, env=_env(),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    task_id = started.stdout.strip()
    assert task_id
    with mcp_lite.connect(url, timeout=20) as client:  # another process, another session
        status = client.request("tasks/get", {"taskId": task_id})
        assert status["taskId"] == task_id
        assert status["status"] in ("working", "completed")
        result = client.request("tasks/result", {"taskId": task_id}, timeout=10)
        assert result["content"][0]["text"] == "slept 1.0"
        assert client.request("tasks/get", {"taskId": task_id})["status"] == "completed"
        with pytest.raises(McpError):
            client.request("tasks/get", {"taskId": "no-such-task"})


def _states(gw: GatewayProcess) -> dict[str, str]:
    from mcp_lite._deadline import Deadline
    from mcp_lite.hub._runtime.gateway_route import fetch_listing

    return {n: s["state"] for n, s in fetch_listing(gw.socket, Deadline.after(5)).items()}


def test_gateway_idle_timeout_stops_a_server_and_the_next_call_starts_it(
    peers: Peers, gateway_process: StartGateway
) -> None:
    """``mcp-lite gateway --idle-timeout 1``: the gateway's plain server stops once nobody
    used it for a second (its state "idle", its process gone), and a worker's next call
    through the gateway starts it again, in the gateway, not in the worker."""
    idle = 1.0
    gw = gateway_process(peers.path, None, "--idle-timeout", str(idle), "--max-lifetime", "600")
    with Hub.from_config(config_files=[str(peers.path)], gateway=gw.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 2}, timeout=10).text == "3"
        (first,) = server_processes(peers.marker)
        # stopped by the gateway after the idle time (the recycler's check plus a slack)
        assert wait_for(lambda: server_processes(peers.marker) == [], idle + 3.0)
        assert _states(gw)["plain"] == "idle"
        assert worker.call_tool("mcp__plain__add", {"a": 2, "b": 2}, timeout=10).text == "4"
        (second,) = server_processes(peers.marker)
        assert second != first
        with open(f"/proc/{second}/stat", "rb") as f:
            assert int(f.read().rsplit(b")", 1)[1].split()[1]) == gw.proc.pid  # the gateway's
        assert _states(gw)["plain"] == "connected"
        assert worker.status()["plain"].via == "gateway"


def test_gateway_refuses_a_bad_idle_timeout(peers: Peers) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_lite", "gateway", "--socket", "/tmp/never.sock",
         "--config", str(peers.path), "--idle-timeout", "0"],
        capture_output=True, text=True, timeout=30, env=_env(),
    )  # fmt: skip
    assert done.returncode != 0 and "positive number of seconds" in done.stderr


def test_a_restart_between_calls_costs_workers_no_error_and_keeps_via(
    peers: Peers, gateway_process: StartGateway
) -> None:
    """Killed and restarted while a worker made no call: its kept connections are stale (a
    handshake session the new gateway never issued; a 2026-07-28 connection the fresh gateway
    does not serve before its upstream is up), yet each next call answers right, reconnecting
    within its deadline. While the gateway is down an error names its socket and the phase,
    and ``status().via`` stays "gateway"."""
    from gateway_helpers import PEERS

    servers = dict(peers.servers)
    servers["official"] = {"command": sys.executable, "args": [str(PEERS / "official_server.py"),
                                                               "stdio"]}  # fmt: skip
    peers.write(servers)
    gw = gateway_process(peers.path)
    with Hub.from_config(config_files=[str(peers.path)], gateway=gw.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 1}, timeout=10).text == "2"
        assert worker.call_tool("mcp__official__echo", {"text": "x"}, timeout=10).text == "x"
        worker.reconnect("official", timeout=10)  # the upstream is up now: a 2026-07-28 one
        era = worker._conns.client("official").session.era
        assert worker.call_tool("mcp__official__echo", {"text": "y"}, timeout=10).text == "y"
        gw.stop(signal.SIGKILL)
        assert wait_for(lambda: server_processes(peers.marker) == [], 5.0)
        with pytest.raises(McpError) as caught:
            worker.call_tool("mcp__tasks__echo", {"text": "gap"}, timeout=1)
        assert f"the gateway on {gw.socket} is unreachable (" in str(caught.value), caught.value
        assert {worker.status()[n].via for n in ("plain", "official", "tasks")} == {"gateway"}
        gateway_process(peers.path, gw.socket)
        for i in range(3):
            assert worker.call_tool("mcp__plain__add", {"a": i, "b": 1}, timeout=10).text == str(
                i + 1
            )
            assert worker.call_tool("mcp__official__echo", {"text": f"{i}"}, timeout=10).text == (
                f"{i}"
            )
        assert worker.status()["official"].via == "gateway"
    print(f"\nofficial's era through the gateway before the restart: {era}")
