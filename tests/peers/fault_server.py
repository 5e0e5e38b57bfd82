"""Misbehaving MCP servers for the stdio fault tests, in plain Python with no dependencies.

    python fault_server.py MODE [--record PATH]

Every mode speaks the handshake era like a legacy server: ``initialize`` is answered with the
requested version when it is one of 2024-11-05 / 2025-03-26 / 2025-06-18 / 2025-11-25 (else
2025-11-25), ``server/discover`` gets error -32601, ``ping`` gets ``{}``. ``tools/list`` offers
``echo`` (and ``big`` in ``oversized`` mode). ``echo`` answers with the ``text`` argument when
there is one, else the arguments as compact JSON. What each mode does wrong:

- ``echo``: nothing; a minimal, fast server (also used by the benchmarks).
- ``crash-mid-call``: on ``tools/call`` writes ``boom: fatal`` to stderr and exits with code 3.
- ``hang``: never answers ``tools/call``. With ``--record PATH`` it appends one JSON line per
  ``tools/call`` received (``{"method": "tools/call", "id": ...}``) and per
  ``notifications/cancelled`` received (``{"method": ..., "params": ...}``).
- ``garbage``: before every answer writes a non-JSON line, a blank line, a partial object and
  two JSON-RPC responses with ids nobody asked for.
- ``oversized``: ``tools/call`` of ``big`` is answered with a single line of about 3 MB.
- ``ignore-sigterm``: ignores SIGINT and SIGTERM and stays alive after stdin closes.
- ``grandchild``: at start spawns ``sleep 600`` and writes its pid to ``--record PATH``;
  a ``tools/call`` of ``crash`` then exits with code 3, leaving the grandchild behind.
- ``exit-during-initialize``: reads ``initialize``, writes a message to stderr and exits 7.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODES = (
    "echo",
    "crash-mid-call",
    "hang",
    "garbage",
    "oversized",
    "ignore-sigterm",
    "grandchild",
    "exit-during-initialize",
)
BIG_SIZE = 3 * 1024 * 1024
ECHO_TOOL = {
    "name": "echo",
    "description": "Echoes its arguments.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
BIG_TOOL = {
    "name": "big",
    "description": "Answers with a line of about 3 MB.",
    "inputSchema": {"type": "object", "properties": {}},
}
GARBAGE = (
    b"this line is not JSON at all\n"
    b"\n"
    b'{"jsonrpc": "2.0", "id": 987654321, "result": {"surprise": true}}\n'
    b"{broken json\n"
    b'{"jsonrpc": "2.0", "id": "nobody-asked", "error": {"code": -32603, "message": "stray"}}\n'
)

out = sys.stdout.buffer


def parse_args(argv: list[str]) -> tuple[str, str | None]:
    if not argv or argv[0] not in MODES:
        sys.stderr.write(f"usage: fault_server.py {{{'|'.join(MODES)}}} [--record PATH]\n")
        sys.exit(2)
    record = None
    if "--record" in argv:
        record = argv[argv.index("--record") + 1]
    return argv[0], record


def write(message: dict[str, object]) -> None:
    out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    out.flush()


def record_line(path: str | None, entry: dict[str, object]) -> None:
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()


def echo_text(arguments: object) -> str:
    if isinstance(arguments, dict) and isinstance(arguments.get("text"), str):
        return arguments["text"]
    return json.dumps(arguments, separators=(",", ":"), sort_keys=True)


def main() -> None:
    mode, record = parse_args(sys.argv[1:])
    if mode == "ignore-sigterm":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "grandchild":
        child = subprocess.Popen(
            ["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        if record is not None:
            with open(record, "w", encoding="utf-8") as f:
                f.write(str(child.pid))
    tools = [ECHO_TOOL, BIG_TOOL] if mode == "oversized" else [ECHO_TOOL]
    stdin = sys.stdin.buffer

    while True:
        line = stdin.readline()
        if not line:
            break
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        method = msg.get("method")
        if method is None:
            continue  # a response to something we never sent
        if "id" not in msg:
            if mode == "hang" and method == "notifications/cancelled":
                record_line(record, {"method": method, "params": msg.get("params")})
            continue
        rid = msg["id"]
        params = msg.get("params") or {}

        if method == "initialize":
            if mode == "exit-during-initialize":
                sys.stderr.write("fatal: cannot initialize, configuration missing\n")
                sys.stderr.flush()
                sys.exit(7)
            asked = params.get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            result: dict[str, object] = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": f"fault-{mode}", "version": "1.0.0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            if mode == "crash-mid-call" or (mode == "grandchild" and params.get("name") == "crash"):
                sys.stderr.write("boom: fatal\n")
                sys.stderr.flush()
                sys.exit(3)
            if mode == "hang":
                record_line(record, {"method": method, "id": rid})
                continue
            if mode == "oversized" and params.get("name") == "big":
                text = "x" * BIG_SIZE
            else:
                text = echo_text(params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            if mode == "garbage":
                out.write(GARBAGE)
            write(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )
            continue

        if mode == "garbage":
            out.write(GARBAGE)
        write({"jsonrpc": "2.0", "id": rid, "result": result})

    if mode == "ignore-sigterm":
        while True:  # stdin is closed; only SIGKILL ends us
            time.sleep(60)
    # grandchild: we exit on EOF and leave `sleep` behind in our process group on purpose.


if __name__ == "__main__":
    main()
