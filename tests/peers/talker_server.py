"""A stdio MCP server for the one-thread tests: it talks on stderr and ends in odd ways.

    python talker_server.py

Plain Python, no dependencies; answers ``initialize`` (with the requested version),
``ping``, ``tools/list`` and these ``tools/call`` names (anything else gets -32601):

- ``echo`` ``{"text": T, "noise": N}``: writes N lines of 100 bytes to stderr, then answers T.
- ``sleep`` ``{"seconds": S}``: answers ``"slept"`` after S seconds.
- ``exit`` ``{"code": C}``: writes ``goodbye: exiting with C`` to stderr and exits with code C
  without answering.
- ``close-stdout``: closes its stdout (no answer) and keeps running until killed.
- ``exit-held`` ``{"code": C, "record": PATH}``: starts ``sleep 600`` holding its stdout
  (pid written to PATH), writes ``goodbye`` to stderr and exits with code C.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("echo", "sleep", "exit", "close-stdout", "exit-held")
]


def answer(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict[str, object]:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(request_id: object, name: str, args: dict[str, object]) -> None:
    if name == "echo":
        for i in range(int(args.get("noise", 0))):  # type: ignore[call-overload]
            sys.stderr.write(f"noise {i:06d} " + "n" * 87 + "\n")
        sys.stderr.flush()
        answer(request_id, text(str(args.get("text", ""))))
    elif name == "sleep":
        time.sleep(float(args.get("seconds", 0)))  # type: ignore[arg-type]
        answer(request_id, text("slept"))
    elif name == "exit":
        code = int(args.get("code", 1))  # type: ignore[call-overload]
        sys.stderr.write(f"goodbye: exiting with {code}\n")
        sys.stderr.flush()
        os._exit(code)
    elif name == "close-stdout":
        sys.stdout.flush()
        os.close(1)
        while True:
            time.sleep(600)
    elif name == "exit-held":
        # the grandchild inherits stdout (and keeps it open), not stdin or stderr
        child = subprocess.Popen(
            ["sleep", "600"], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        with open(str(args["record"]), "w", encoding="utf-8") as f:
            f.write(str(child.pid))
        sys.stderr.write("goodbye: leaving a grandchild on stdout\n")
        sys.stderr.flush()
        os._exit(int(args.get("code", 1)))  # type: ignore[call-overload]


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        params = message.get("params") or {}
        if method == "initialize":
            answer(
                request_id,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "talker-server", "version": "1"},
                },
            )
        elif method == "ping":
            answer(request_id, {})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            call(request_id, params.get("name", ""), params.get("arguments") or {})
        else:
            sys.stdout.write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": {"code": -32601, "message": f"no method {method}"},
                    }
                )
                + "\n"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
