"""The fork-safety proof: the Flask and Django examples under gunicorn ``--preload`` with 3
workers (4 threads each) on 127.0.0.1, 60 concurrent requests that each call an MCP tool,
and no MCP server process left once the app has stopped.

With ``--preload`` the master imports the app, builds the Hub and connects it (the examples
warm up at start-up); the workers inherit that connection, must not touch it, and start their
own servers on first use.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
REQUESTS = 60


def _processes_with(marker: str) -> dict[int, str]:
    """pid -> command line of every living (non-zombie) process whose command line has
    ``marker``."""
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


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as response:
        assert response.status == 200
        return json.loads(response.read())


def _run_app(start_http_peer, free_port: int, tmp_path: Path, chdir: Path,
             app: str) -> None:
    pytest.importorskip("gunicorn")
    # A copy of the demo server under a unique name: its processes are easy to find.
    marker = f"mcp_demo_{uuid.uuid4().hex[:12]}.py"
    server_script = tmp_path / marker
    shutil.copy(EXAMPLES / "demo_server.py", server_script)
    cmd = [sys.executable, "-m", "gunicorn", "--preload", "-w", "3", "--threads", "4",
           "-b", f"127.0.0.1:{free_port}", "--graceful-timeout", "10", "--chdir", str(chdir),
           app]
    peer = start_http_peer(cmd, free_port, env={"MCP_DEMO_SERVER": str(server_script)},
                           cwd=str(chdir), wait=60.0)
    base = f"http://127.0.0.1:{free_port}"

    def one(i: int) -> tuple[str, int]:
        data = _get(f"{base}/add?a={i}&b=1000")
        return data["result"], data["pid"]

    with ThreadPoolExecutor(REQUESTS) as pool:
        answers = list(pool.map(one, range(REQUESTS)))
    assert [int(result) for result, _ in answers] == [i + 1000 for i in range(REQUESTS)]
    workers = {pid for _, pid in answers}
    assert peer.pid not in workers  # the master never serves
    running = _processes_with(marker)
    # The master's warm-up server, plus one per worker that served.
    assert len(running) == 1 + len(workers), running

    peer.proc.send_signal(signal.SIGTERM)
    try:
        peer.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gunicorn did not stop within 30 s; stderr:\n{peer.stderr()[-3000:]}")
    deadline = time.monotonic() + 5.0
    left = _processes_with(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _processes_with(marker)
    assert left == {}, f"MCP servers outlived the app: {left}\n{peer.stderr()[-3000:]}"


def test_flask_app_under_gunicorn_preload(start_http_peer, free_port, tmp_path) -> None:
    pytest.importorskip("flask")
    _run_app(start_http_peer, free_port, tmp_path, EXAMPLES / "flask_app", "app:app")


def test_django_app_under_gunicorn_preload(start_http_peer, free_port, tmp_path) -> None:
    pytest.importorskip("django")
    _run_app(start_http_peer, free_port, tmp_path, EXAMPLES / "django_app",
             "demo_site.wsgi:application")
