"""examples/celery_app under a real Celery worker: a prefork pool of 4 processes, a Redis
broker (tests/fleet/conftest.py), 200 tasks against a stdio server (the demo server) and a
Streamable HTTP server (the official SDK's), and a task whose server hangs.

What must hold: every result right; the hanging call fails at its deadline with
``RequestTimeout`` while the other tasks go on; each worker process builds its own Hub (the
parent none); no MCP server process is left once the worker has stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

celery = pytest.importorskip("celery")
pytest.importorskip("redis")

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "examples" / "celery_app"
FAULT_SERVER = ROOT / "tests" / "peers" / "fault_server.py"
TASKS = 200
HANG_DEADLINE = 3.0


def _processes_with(marker: str) -> dict[int, str]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().decode(errors="replace").rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found[int(entry)] = cmdline
    return found


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            pytest.fail(f"the Celery worker did not stop within 60 s:\n{log.read_text()[-3000:]}")


def test_a_prefork_fleet_on_redis(
    redis_server: str,
    tmp_path: Path,
    official_server_cmd: Callable[..., list[str]],
    start_http_peer: Any,
    free_port: int,
) -> None:
    import redis

    broker, backend = f"{redis_server}/2", f"{redis_server}/3"
    for url in (broker, backend):
        redis.Redis.from_url(url).flushdb()
    # Copies of the servers under a unique name: their processes are easy to find.
    marker = f"mcp_fleet_{uuid.uuid4().hex[:10]}"
    demo = tmp_path / f"{marker}_demo.py"
    shutil.copy(ROOT / "examples" / "demo_server.py", demo)
    hang = tmp_path / f"{marker}_hang.py"
    shutil.copy(FAULT_SERVER, hang)
    peer = start_http_peer(official_server_cmd("http", "--port", str(free_port)), free_port)
    config = tmp_path / "mcp_lite.json"
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "demo": {"command": sys.executable, "args": [str(demo)]},
                    "web": {"type": "http", "url": peer.url + "/mcp"},
                    "hang": {"command": sys.executable, "args": [str(hang), "hang"]},
                },
                "client_options": {"timeout": 30},
            }
        )
    )
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "MCP_LITE_CELERY_BROKER": broker,
        "MCP_LITE_CELERY_BACKEND": backend,
        "MCP_LITE_CELERY_CONFIG": str(config),
        "PYTHONPATH": os.pathsep.join([str(APP_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool=prefork",
             "--concurrency=4", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "-n", f"fleet-{uuid.uuid4().hex[:6]}@localhost"],
            cwd=APP_DIR, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    client = celery.Celery("fleet-test", broker=broker, backend=backend)
    try:
        # The hanging calls go first: they must not hold up the 200 that follow.
        hanging = [
            client.send_task("mcp.call_tool", args=["mcp__hang__echo", {"text": "x"}],
                             kwargs={"timeout": HANG_DEADLINE})
            for _ in range(2)
        ]
        calls = []
        for i in range(TASKS):
            server = "demo" if i % 2 == 0 else "web"
            calls.append(
                (i, server, client.send_task(
                    "mcp.call_tool", args=[f"mcp__{server}__add", {"a": i, "b": 1000}]))
            )
        pids = set()
        for i, server, result in calls:
            value = result.get(timeout=120)
            expected = i + 1000
            if server == "demo":
                assert value["text"] == str(expected), value
            else:
                assert value["structured"] == {"result": expected}, value
            assert value["is_error"] is False
            pids.add(value["pid"])
        for result in hanging:
            with pytest.raises(Exception) as caught:
                result.get(timeout=120)
            assert type(caught.value).__name__ == "RequestTimeout", repr(caught.value)
            assert result.state == "FAILURE"
        assert worker.pid not in pids and 1 <= len(pids) <= 4
        # Each worker process that served has its own stdio servers; the parent has none.
        running = _processes_with(marker)
        assert running, "no MCP server process found while the worker runs"
        parents = {_ppid(pid) for pid in running}
        assert worker.pid not in parents, running
        assert {_ppid(pid) for pid in parents} == {worker.pid}, running  # pool processes
    finally:
        _stop(worker, log)
        client.close()
    deadline = time.monotonic() + 10
    left = _processes_with(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _processes_with(marker)
    assert left == {}, f"MCP servers outlived the worker: {left}\n{log.read_text()[-3000:]}"
