"""A remote server that dies mid-call: the pending call fails at once with a clear error, the
next call reconnects (and fails clearly while the server is gone), nothing hangs."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConnectError, TransportError

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


@pytest.mark.parametrize("mode", ["sse", "http"])
def test_server_death_fails_the_pending_call_at_once(
    mode: str,
    official_server_cmd: Callable[..., list[str]],
    start_http_peer: Callable[..., Any],
    free_port: int,
) -> None:
    peer = start_http_peer(official_server_cmd(mode, "--port", str(free_port)), free_port)
    target: Any = {"type": "sse", "url": peer.url + "/sse"} if mode == "sse" else peer.url + "/mcp"
    with mcp_lite.connect(target, protocol_version="2025-11-25", timeout=120.0) as client:
        future = client.submit(
            "tools/call", {"name": "slow", "arguments": {"steps": 600, "delay": 0.1}}
        )
        os.killpg(peer.pid, signal.SIGKILL)
        with pytest.raises(TransportError):
            future.result(timeout=60)  # the deadline is 120 s: this must come from the transport
        with pytest.raises((ConnectError, TransportError)):
            client.call_tool("echo", {"text": "x"})
