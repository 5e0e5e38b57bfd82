"""``Server.run_stdio()`` as a real subprocess: raw JSON lines in, only JSON lines out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo_server.py"


def run(script: Path, messages: list[Any], timeout: float = 20.0) -> tuple[list[Any], str, float]:
    """Write ``messages`` as NDJSON (a str as is), close stdin, and return (stdout messages, stderr, seconds)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(script)],
        input="".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(line.strip() for line in lines), proc.stdout
    return [json.loads(line) for line in lines], proc.stderr, elapsed  # each line is JSON


def by_id(out: list[Any]) -> dict[Any, Any]:
    return {m["id"]: m for m in out if isinstance(m, dict) and "id" in m}


def test_demo_server_over_stdio() -> None:
    out, _, _ = run(
        DEMO,
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 20, "b": 22}},
            },
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "word_count", "arguments": {"text": "one two\nthree"}},
            },
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "resources/read",
                "params": {"uri": "demo://notes/todo"},
            },
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "prompts/get",
                "params": {"name": "summarize", "arguments": {"text": "abc"}},
            },
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "countdown",
                    "arguments": {"n": 2},
                    "_meta": {"progressToken": "p"},
                },
            },
        ],
    )
    answers = by_id(out)
    assert answers[1]["result"]["serverInfo"] == {"name": "demo", "version": "1.0.0"}
    assert answers[1]["result"]["protocolVersion"] == "2025-06-18"
    tools = {t["name"]: t for t in answers[2]["result"]["tools"]}
    assert set(tools) == {"add", "word_count", "now", "countdown"}
    assert tools["countdown"]["inputSchema"]["properties"] == {
        "n": {"type": "integer", "minimum": 0, "maximum": 60}
    }
    assert tools["now"]["inputSchema"]["properties"]["tz"]["default"] == "UTC"
    assert answers[3]["result"]["structuredContent"] == {"result": 42}
    assert answers[4]["result"]["structuredContent"] == {"words": 3, "lines": 2, "characters": 13}
    assert answers[5]["result"]["contents"][0]["text"] == "Write more demos."
    assert "abc" in answers[6]["result"]["messages"][0]["content"]["text"]
    # countdown was still running at EOF: it finished within the grace second.
    assert answers[7]["result"]["content"][0]["text"] == "liftoff"
    progress = [m["params"]["progress"] for m in out if m.get("method") == "notifications/progress"]
    assert progress == [0, 1, 2]


def test_demo_server_stateless_era() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    out, _, _ = run(
        DEMO,
        [
            {"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": meta}},
            {
                "jsonrpc": "2.0",
                "id": "n",
                "method": "resources/read",
                "params": {"_meta": meta, "uri": "demo://notes/none"},
            },
            {
                "jsonrpc": "2.0",
                "id": "c",
                "method": "completion/complete",
                "params": {
                    "_meta": meta,
                    "ref": {"type": "ref/resource", "uri": "demo://notes/{name}"},
                    "argument": {"name": "name", "value": "w"},
                },
            },
        ],
    )
    answers = by_id(out)
    assert "2026-07-28" in answers["d"]["result"]["supportedVersions"]
    assert answers["n"]["error"]["code"] == -32602  # not found is -32602 in this era
    assert answers["c"]["result"]["completion"]["values"] == ["welcome"]


def test_print_in_a_tool_goes_to_stderr_and_eof_is_bounded(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(
        textwrap.dedent("""
        import time
        from mcp_lite.server import Server

        server = Server("noisy")

        @server.tool()
        def shout() -> str:
            print("this must not reach stdout")
            return "ok"

        @server.tool()
        def hang() -> str:
            time.sleep(30)
            return "never"

        server.run_stdio()
    """)
    )
    out, err, elapsed = run(
        script,
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout"}},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hang"}},
            "this line is not JSON",
            '"a JSON string, not a message"',
        ],
    )
    assert "this must not reach stdout" in err
    answers = by_id(out)
    assert answers[2]["result"]["content"][0]["text"] == "ok"
    assert 3 not in answers  # still hanging at EOF: abandoned after the grace period
    codes = [m["error"]["code"] for m in out if "error" in m]
    assert codes == [-32700, -32600]
    assert elapsed < 10
