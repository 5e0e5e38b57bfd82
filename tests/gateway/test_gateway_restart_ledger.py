"""A gateway SIGKILLed with calls running and restarted at once: no call runs a second time.

A stdio peer (``ledger_server.py``) notes each call's id in a ledger file when the call starts
and then waits for a release file; N calls are in flight through the gateway when it is
killed (the test waits for the ledger to show all N), the gateway is restarted on the same
socket at once and the calls are released. Each id must appear in the ledger once: a call that
was running inside the dead gateway fails with an error naming the gateway, never runs again
on the new one (it may have taken effect). Both eras: handshake sessions and 2026-07-28.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import HERE, GatewayProcess, wait_for

from mcp_lite import Hub
from mcp_lite.errors import McpError

CALLS = 8
CALL_TIMEOUT = 20.0


def _ledger_config(short_dir: Path, versions: str) -> tuple[Path, Path, Path]:
    ledger, release = short_dir / "ledger", short_dir / "release"
    config = short_dir / "mcp.json"
    entry = {
        "command": sys.executable,
        "args": [str(HERE / "ledger_server.py"), str(ledger), str(release), versions],
    }
    config.write_text(json.dumps({"mcpServers": {"ledger": entry}}))
    return config, ledger, release


def _ids(ledger: Path) -> list[str]:
    try:
        return ledger.read_text().split()
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("versions", ["2025-11-25", ""], ids=["handshake", "both-eras"])
def test_calls_running_in_a_killed_gateway_never_run_again(
    short_dir: Path, gateway_process: Callable[..., GatewayProcess], versions: str
) -> None:
    config, ledger, release = _ledger_config(short_dir, versions)
    gw = gateway_process(config)
    outcomes: dict[str, Any] = {}
    with Hub.from_config(config_files=[str(config)], gateway=gw.url) as worker:
        assert worker.call_tool("mcp__ledger__quick", {}, timeout=CALL_TIMEOUT).text == "ok"

        def call(i: int) -> None:
            try:
                got: Any = worker.call_tool(
                    "mcp__ledger__work", {"id": f"c{i}"}, timeout=CALL_TIMEOUT
                ).text
            except McpError as exc:
                got = exc
            outcomes[f"c{i}"] = got

        threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(CALLS)]
        for t in threads:
            t.start()
        # every call is running inside the gateway's server (an event: the ledger's lines)
        assert wait_for(lambda: len(_ids(ledger)) == CALLS, CALL_TIMEOUT), _ids(ledger)
        gw.stop(signal.SIGKILL)
        gateway_process(config, gw.socket)  # at once, on the same socket
        release.touch()
        for t in threads:
            t.join(CALL_TIMEOUT + 5)
        assert not any(t.is_alive() for t in threads)
        # the worker still works through the new gateway
        assert worker.call_tool("mcp__ledger__quick", {}, timeout=CALL_TIMEOUT).text == "ok"
    counts = Counter(_ids(ledger))
    assert sorted(counts) == sorted(f"c{i}" for i in range(CALLS)), counts
    twice = {k: n for k, n in counts.items() if n > 1}
    assert twice == {}, f"run more than once: {twice}; outcomes {outcomes}"
    # each call that died with the gateway failed, with an error naming the gateway
    for key, outcome in outcomes.items():
        assert isinstance(outcome, McpError), (key, outcome)
        assert gw.socket in str(outcome), (key, outcome)
