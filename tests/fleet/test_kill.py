"""A Celery prefork pool process SIGKILLed in the middle of a tool call that never returns
(the OOM killer, a hard time limit) leaves no MCP server behind (issue 21, item 3).

examples/celery_app under a real Celery worker (Redis broker: tests/fleet/conftest.py), one
stdio server that starts a grandchild and whose tool sleeps forever without reading stdin
(tests/peers/blocker_server.py). No ``worker_process_shutdown`` runs for a killed process:
the process's server watcher (``mcp_lite.transports._reaper``) must stop the server's whole
process group within 2 s.
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
from pathlib import Path

import pytest

celery = pytest.importorskip("celery")
pytest.importorskip("redis")

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "examples" / "celery_app"
BLOCKER = ROOT / "tests" / "peers" / "blocker_server.py"
STOPPED_WITHIN = 2.0


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid), None when ``pid`` does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2])


def _running(marker: str, pgid: int) -> list[int]:
    """Living processes whose argv carries ``marker`` or that are in group ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if stat is not None and stat[0] != "Z" and (marker.encode() in cmdline or stat[2] == pgid):
            found.append(int(entry))
    return found


def _stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)


def test_a_pool_process_killed_mid_call_leaves_no_server(redis_server: str, tmp_path: Path) -> None:
    import redis

    broker, backend = f"{redis_server}/4", f"{redis_server}/5"
    for url in (broker, backend):
        redis.Redis.from_url(url).flushdb()
    marker = f"mcp_kill_{uuid.uuid4().hex[:10]}"
    server = tmp_path / f"{marker}_blocker.py"
    shutil.copy(BLOCKER, server)
    record = tmp_path / "record"
    config = tmp_path / "mcp_lite.json"
    config.write_text(json.dumps({"servers": {"block": {
        "command": sys.executable, "args": [str(server), marker, str(record)]}}}))
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "MCP_LITE_CELERY_BROKER": broker,
        "MCP_LITE_CELERY_BACKEND": backend,
        "MCP_LITE_CELERY_CONFIG": str(config),
        "PYTHONPATH": os.pathsep.join([str(APP_DIR), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool=prefork",
             "--concurrency=1", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "-n", f"kill-{uuid.uuid4().hex[:6]}@localhost"],
            cwd=APP_DIR, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    client = celery.Celery("kill-test", broker=broker, backend=backend)
    server_pid = -1
    try:
        client.send_task("mcp.call_tool", args=["mcp__block__block", {}],
                         kwargs={"timeout": 600})
        called = record.with_suffix(".called")
        deadline = time.monotonic() + 90
        while not called.exists():
            assert worker.poll() is None, f"the worker exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no call arrived:\n{log.read_text()[-3000:]}"
            time.sleep(0.05)
        grandchild = int(record.with_suffix(".grandchild").read_text())
        server_pid = _stat(grandchild)[1]  # type: ignore[index]
        pool = _stat(server_pid)[1]  # type: ignore[index]
        assert _stat(pool)[1] == worker.pid, "the server's parent is not a pool process"  # type: ignore[index]

        os.kill(pool, signal.SIGKILL)  # mid-call: no shutdown signal, no atexit, nothing
        end = time.monotonic() + STOPPED_WITHIN
        left = _running(marker, server_pid)
        while left and time.monotonic() < end:
            time.sleep(0.05)
            left = _running(marker, server_pid)
        assert left == [], (
            f"MCP server processes outlived their pool process by {STOPPED_WITHIN} s: {left}"
        )
    finally:
        _stop(worker)
        client.close()
        for pid in _running(marker, server_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
