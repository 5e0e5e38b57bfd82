"""Fixtures of the gateway tests: configs of real stdio peers (each with a marker argument so
the test can count its processes in /proc), and a gateway run as ``mcp-lite gateway`` in a
subprocess (``gateway_process(config)`` -> its socket path; stopped with SIGTERM at the end).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gateway_helpers import HERE, PEERS, GatewayProcess, Peers, start_gateway_process


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory (a socket path must fit in 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="mcpgw", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def peers(short_dir: Path) -> Peers:
    marker = f"gwtest-{uuid.uuid4().hex[:12]}"
    p = Peers(short_dir / "mcp.json", marker)
    p.write(
        {
            "plain": {"command": sys.executable, "args": [str(PEERS / "plain_server.py"), marker]},
            "tasks": {"command": sys.executable, "args": [str(HERE / "task_server.py"), marker]},
        }
    )
    return p


@pytest.fixture
def gateway_process(short_dir: Path) -> Iterator[Callable[..., GatewayProcess]]:
    """``gateway_process(config_path, socket=None)``: a gateway subprocess for that config;
    each is stopped (SIGTERM, then SIGKILL) at the end of the test."""
    started: list[GatewayProcess] = []

    def start(config: Path, socket: str | None = None, *extra: str) -> GatewayProcess:
        gw = start_gateway_process(config, socket or str(short_dir / "gw.sock"), *extra)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()
        if gw.proc.stdout is not None:
            gw.proc.stdout.close()
        if gw.proc.stderr is not None:
            gw.proc.stderr.close()
