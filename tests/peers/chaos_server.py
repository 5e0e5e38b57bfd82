"""A stdio MCP server whose tools misbehave on request, for the soak run (stdlib only).

    python chaos_server.py

It speaks the handshake era (``initialize``; ``server/discover`` is -32601). Unlike
``fault_server.py``, where one process has one fault, every fault here is a tool, so one
long-lived connection meets all of them in random order:

- ``echo {text}``: answers ``text`` (the soak checks every answer against its own question).
- ``slow {text, delay}``: answers ``text`` after ``delay`` seconds (other calls go on meanwhile).
- ``hang``: never answers.
- ``crash``: writes ``chaos: crash`` to stderr and exits with code 3.
- ``garbage {text}``: writes a non-JSON line, a blank line, a broken object and two responses
  with ids nobody asked for, then answers ``text``.
- ``flood {text, n}``: sends ``n`` ``notifications/message`` first, then answers ``text``.
- ``big {size}``: answers with one line of ``size`` bytes (above the client's limit: the call
  must fail alone and the connection stay usable).
- ``stderr {n}``: writes ``n`` KiB to stderr without a newline, then answers ``"ok"``.
"""

from __future__ import annotations

import json
import sys
import threading

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOL_NAMES = ("echo", "slow", "hang", "crash", "garbage", "flood", "big", "stderr")
TOOLS = [
    {"name": name, "description": f"chaos: {name}", "inputSchema": {"type": "object"}}
    for name in TOOL_NAMES
]
GARBAGE = (
    b"chaos: this line is not JSON\n"
    b"\n"
    b"{broken json\n"
    b'{"jsonrpc": "2.0", "id": 987654321, "result": {"surprise": true}}\n'
    b'{"jsonrpc": "2.0", "id": "nobody-asked", "error": {"code": -32603, "message": "stray"}}\n'
)

_out = sys.stdout.buffer
_out_lock = threading.Lock()


def _write_raw(data: bytes) -> None:
    with _out_lock:
        try:
            _out.write(data)
            _out.flush()
        except (BrokenPipeError, ValueError):
            pass  # the client went away; the read loop ends on EOF


def _write(message: dict[str, object]) -> None:
    _write_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def _text_result(rid: object, text: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"content": [{"type": "text", "text": text}], "isError": False},
    }


def _call(rid: object, name: str, args: dict[str, object]) -> None:
    text = str(args.get("text", ""))
    if name == "echo":
        _write(_text_result(rid, text))
    elif name == "slow":
        delay = float(args.get("delay", 0.5))  # type: ignore[arg-type]
        timer = threading.Timer(delay, _write, args=(_text_result(rid, text),))
        timer.daemon = True
        timer.start()
    elif name == "hang":
        return
    elif name == "crash":
        sys.stderr.write("chaos: crash\n")
        sys.stderr.flush()
        sys.exit(3)
    elif name == "garbage":
        _write_raw(GARBAGE)
        _write(_text_result(rid, text))
    elif name == "flood":
        for i in range(int(args.get("n", 1000))):  # type: ignore[call-overload]
            _write(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "logger": "chaos", "data": f"flood {i}"},
                }
            )
        _write(_text_result(rid, text))
    elif name == "big":
        size = int(args.get("size", 2 * 1024 * 1024))  # type: ignore[call-overload]
        _write(_text_result(rid, "x" * size))
    elif name == "stderr":
        sys.stderr.write("e" * 1024 * int(args.get("n", 64)))  # type: ignore[call-overload]
        sys.stderr.flush()
        _write(_text_result(rid, "ok"))
    else:
        _write(
            {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"no tool {name}"}}
        )


def main() -> None:
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue  # notifications and stray responses
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            result: dict[str, object] = {
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}, "logging": {}},
                "serverInfo": {"name": "chaos", "version": "1.0.0"},
            }
            _write({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "ping" or method == "logging/setLevel":
            _write({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            _write({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            _call(rid, str(params.get("name")), params.get("arguments") or {})
        else:
            _write(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )


if __name__ == "__main__":
    main()
