"""A worker behaves as if it ran the server itself while its gateway is down or its server
cannot start: a call made while the gateway restarts waits for it within the call's timeout;
``tools()`` with the gateway down costs one wait, not one per server in series; a server the
gateway cannot start is ``failed`` with its cause, as locally, and not tried on every use."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import PEERS, GatewayProcess, Peers, server_processes, wait_for

from mcp_lite import Hub
from mcp_lite.errors import ConfigError, McpError


def test_a_call_while_the_gateway_restarts_waits_for_it(
    peers: Peers, gateway_process: Callable[..., GatewayProcess]
) -> None:
    gw = gateway_process(peers.path)
    with Hub.from_config(config_files=[str(peers.path)], gateway=gw.url) as worker:
        assert worker.call_tool("mcp__plain__add", {"a": 1, "b": 1}, timeout=10).text == "2"
        gw.stop(signal.SIGKILL)
        assert wait_for(lambda: server_processes(peers.marker) == [], 5.0)
        outcome: dict[str, Any] = {}

        def call() -> None:
            try:
                outcome["text"] = worker.call_tool(
                    "mcp__plain__add", {"a": 1, "b": 2}, timeout=30
                ).text
            except McpError as exc:
                outcome["error"] = exc

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        # the call found its connection dead (the gateway is down): then the gateway comes back
        assert wait_for(
            lambda: worker.status()["plain"].state != "connected" or not caller.is_alive(), 10.0
        )
        gateway_process(peers.path, gw.socket)
        caller.join(35)
        assert outcome == {"text": "3"}, outcome
        assert worker.status()["plain"].via == "gateway"


def _four_servers(short_dir: Path) -> Path:
    config = short_dir / "four.json"
    servers = {
        f"s{i}": {"command": sys.executable, "args": [str(PEERS / "plain_server.py"), f"s{i}"]}
        for i in range(4)
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    return config


def test_tools_with_the_gateway_down_costs_one_wait(short_dir: Path) -> None:
    """4 servers, timeout 3 s, a gateway nobody listens for: one wait of the connect total
    for them all (each server's own in series took 4 x 3 s and more)."""
    config = _four_servers(short_dir)
    gateway = f"unix://{short_dir}/down.sock"
    with Hub.from_config(
        config_files=[str(config)], gateway=gateway, client_options={"timeout": 3}
    ) as worker:
        start = time.monotonic()
        assert worker.tools() == []
        took = time.monotonic() - start
        status = worker.status()
        assert took < 3 + 2.0, took
        for i in range(4):
            assert status[f"s{i}"].state == "failed", status[f"s{i}"]
            assert f"the gateway on {short_dir}/down.sock is unreachable" in (
                status[f"s{i}"].error or ""
            ), status[f"s{i}"]
        assert server_processes(f"s{0}") == []  # never started locally instead


FAILS = "import sys; sys.exit(3)"


def test_a_server_the_gateway_cannot_start_is_failed_with_its_cause(
    peers: Peers, gateway_process: Callable[..., GatewayProcess]
) -> None:
    servers = dict(peers.servers)
    servers["broken"] = {"command": sys.executable, "args": ["-c", FAILS, peers.marker]}
    peers.write(servers)
    gw = gateway_process(peers.path)
    with Hub.from_config(config_files=[str(peers.path)], gateway=gw.url) as worker:
        names = {t.name for t in worker.tools(timeout=30)}
        assert "mcp__plain__add" in names
        broken = worker.status()["broken"]
        assert broken.state == "failed", broken
        assert broken.via == "gateway"
        assert "broken" in (broken.error or "") and "exit" in (broken.error or ""), broken
        # as locally: not tried again on every use (within the cool-down)
        start = time.monotonic()
        assert "mcp__plain__add" in {t.name for t in worker.tools(timeout=30)}
        with pytest.raises(ConfigError):
            worker.call_tool("mcp__nosuch__tool", {}, timeout=30)
        assert time.monotonic() - start < 1.5
        assert worker.status()["broken"].state == "failed"
