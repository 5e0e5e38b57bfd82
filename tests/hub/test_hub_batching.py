"""connect_all() connects in parallel batches: at most 3 local servers at a time (or
MCP_SERVER_CONNECTION_BATCH_SIZE), and the limit is observed by the servers themselves."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_lite.hub import Hub

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")

# While it starts, a server holds a marker file in DIR and records how many markers it saw
# (itself included) in its own log line: that is how many servers were starting at once.
SLOW_START = r"""
import os, runpy, sys, time
markers, name, demo = sys.argv[1], sys.argv[2], sys.argv[3]
mine = os.path.join(markers, name + ".starting")
open(mine, "w").close()
time.sleep(0.3)
seen = len([f for f in os.listdir(markers) if f.endswith(".starting")])
with open(os.path.join(markers, "log"), "a") as log:
    log.write(f"{seen}\n")
os.unlink(mine)
sys.argv = [demo]
runpy.run_path(demo, run_name="__main__")
"""


def _servers(markers: Path, count: int) -> dict[str, Any]:
    return {f"s{i}": {"command": sys.executable, "args": ["-c", SLOW_START, str(markers),
                                                          f"s{i}", DEMO]}
            for i in range(count)}


def _overlaps(markers: Path) -> list[int]:
    return [int(line) for line in (markers / "log").read_text().split()]


@pytest.mark.parametrize(("env", "limit"), [(None, 3), ("2", 2), ("1", 1)])
def test_local_servers_connect_at_most_batch_size_at_a_time(tmp_path: Path, monkeypatch,
                                                            env: str | None, limit: int) -> None:
    if env is None:
        monkeypatch.delenv("MCP_SERVER_CONNECTION_BATCH_SIZE", raising=False)
    else:
        monkeypatch.setenv("MCP_SERVER_CONNECTION_BATCH_SIZE", env)
    markers = tmp_path / "markers"
    markers.mkdir()
    with Hub({"mcpServers": _servers(markers, 7)}) as hub:
        states = hub.connect_all()
        assert {s.state for s in states.values()} == {"connected"}
        overlaps = _overlaps(markers)
        assert len(overlaps) == 7
        assert max(overlaps) <= limit
        assert len(hub.tools()) == 7 * 4


class _FakeClient:
    """Stands in for a connected Client: the Hub only asks it for its session and closes it."""

    session = SimpleNamespace(era="handshake", capabilities={})
    name = "fake"
    connected = True

    def close(self) -> None:
        pass


@pytest.mark.parametrize(("env", "limit"), [(None, 20), ("4", 4)])
def test_remote_servers_connect_at_most_remote_batch_size_at_a_time(monkeypatch, env, limit):
    from mcp_lite.hub._for_model.tools import Catalog
    from mcp_lite.hub._runtime.auth_cache import NeedsAuthCache
    from mcp_lite.hub._runtime.connections import Connections
    from mcp_lite.hub._runtime.elicitation import Elicitation
    from mcp_lite.hub._runtime.server_status import Backoff
    from mcp_lite.hub._runtime.spec import make_spec

    if env is None:
        monkeypatch.delenv("MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE", raising=False)
    else:
        monkeypatch.setenv("MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE", env)
    lock = threading.Lock()
    now = {"http": 0, "stdio": 0}
    peak = {"http": 0, "stdio": 0}

    def open_client(spec, options):
        with lock:
            now[spec.type] += 1
            peak[spec.type] = max(peak[spec.type], now[spec.type])
        time.sleep(0.1)
        with lock:
            now[spec.type] -= 1
        return _FakeClient()

    specs = [make_spec(f"r{i}", "user", {"type": "http", "url": f"http://127.0.0.1:1/{i}"})
             for i in range(45)]
    specs += [make_spec(f"l{i}", "user", {"command": "true", "args": [str(i)]})
              for i in range(9)]
    conns = Connections(specs, client_options={}, backoff=Backoff(),
                        auth_cache=NeedsAuthCache(os.devnull), catalog=Catalog(),
                        elicitation=Elicitation(), open_client=open_client)
    conns.connect_all()
    assert {s.state for s in conns.status().values()} == {"connected"}
    assert 1 < peak["http"] <= limit  # 45 servers at 0.1 s each: parallel, within the limit
    assert peak["stdio"] <= 3
    conns.close()
