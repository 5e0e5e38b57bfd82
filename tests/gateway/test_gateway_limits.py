"""The gateway's limits equal the local path's where they can: a request as large as a
worker's client takes a message by default (64 MiB) goes through, so a 5 MB argument that
works on a server the worker runs itself works through the gateway too."""

from __future__ import annotations

import sys
from pathlib import Path

from gateway_helpers import HERE

import mcp_lite
from mcp_lite import Gateway, Hub
from mcp_lite.gateway import server as gateway_module
from mcp_lite.transports.stdio import DEFAULT_MAX_MESSAGE_SIZE

BIG = "x" * (5 * 1024 * 1024)


def test_a_5_mb_argument_works_locally_and_through_the_gateway(short_dir: Path) -> None:
    entry = {"command": sys.executable, "args": [str(HERE / "task_server.py")]}
    config = {"mcpServers": {"tasks": entry}}
    with mcp_lite.connect([sys.executable, str(HERE / "task_server.py")], timeout=60) as local:
        assert len(local.call_tool("echo", {"text": BIG}).text) == len(BIG)
    with (
        Gateway(Hub(config, gateway=False)).start(str(short_dir / "gw.sock")) as gw,
        mcp_lite.connect(f"{gw.url}/servers/tasks/mcp", timeout=60) as remote,
    ):
        assert len(remote.call_tool("echo", {"text": BIG}).text) == len(BIG)
    assert gateway_module.MAX_BODY == DEFAULT_MAX_MESSAGE_SIZE
