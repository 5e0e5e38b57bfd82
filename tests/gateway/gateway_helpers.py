"""Helpers of the gateway tests (imported by conftest.py and the tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PEERS = Path(__file__).resolve().parents[1] / "peers"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def server_processes(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` (the peers' extra argument)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in cmdline and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue  # a zombie is not a running server
            except OSError:
                continue
            found.append(int(entry))
    return found


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


@dataclass
class Peers:
    """A config file of stdio peers; ``marker`` is in each peer's command line."""

    path: Path
    marker: str
    servers: dict[str, Any] = field(default_factory=dict)

    def write(self, servers: dict[str, Any]) -> Path:
        self.servers = servers
        self.path.write_text(json.dumps({"mcpServers": servers}))
        return self.path


@dataclass
class GatewayProcess:
    socket: str
    proc: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)


def start_gateway_process(config: Path, socket: str, *extra: str) -> GatewayProcess:
    """``mcp-lite gateway`` on ``socket``; returns once it printed its listening line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MCP_LITE_GATEWAY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_lite", "gateway", "--socket", socket,
         "--config", str(config), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(config.parent), env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the one line, or "" when it exited
    if "gateway on" not in line:
        proc.kill()
        _, err = proc.communicate(timeout=5)
        raise RuntimeError(f"the gateway did not start: {line!r} {err[-2000:]!r}")
    return GatewayProcess(socket, proc)
