"""A 2026-07-28 server that answers the ``server/discover`` probe only after
``discover_timeout`` (a slow start) then refuses the fallback ``initialize`` with -32022:
the client probes again instead of failing (seen with the official SDK under load)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import mcp_lite

SERVER = textwrap.dedent(
    """
    import json, sys, time
    modern = False
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method, rid = msg["method"], msg["id"]
        if method == "server/discover":
            if not modern:
                time.sleep(0.6)  # slower than the client's discover_timeout, once
            modern = True
            result = {
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "late", "version": "1"}},
            }
            out = {"jsonrpc": "2.0", "id": rid, "result": result}
        elif method == "initialize" and modern:
            err = {"code": -32022, "message": "serving 2026-07-28; no initialize",
                   "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}
            out = {"jsonrpc": "2.0", "id": rid, "error": err}
        elif method == "tools/list":
            out = {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "tools": []}}
        else:
            out = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}}
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
    """
)


def test_a_late_discover_answer_is_not_a_failed_handshake(tmp_path: Path) -> None:
    script = tmp_path / "late_server.py"
    script.write_text(SERVER)
    with mcp_lite.connect([sys.executable, str(script)], discover_timeout=0.2, timeout=10) as c:
        assert c.protocol_version == "2026-07-28"
        assert c.server_info.name == "late"
        assert c.list_tools() == []
