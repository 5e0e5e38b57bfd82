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
- ``slow-reader``: a ``tools/call`` of ``pause`` with ``{"seconds": S}`` stops reading stdin
  for S seconds (no answer to it). With ``--record PATH`` every ``tools/call`` read is
  appended as ``{"method", "id", "text"}`` (the first 40 characters of its ``text``).
- ``flood``: a ``tools/call`` of ``flood`` with ``{"notifications": N, "requests": M}``
  first writes N ``notifications/message`` and M ``sampling/createMessage`` requests (ids
  ``"s1"`` ... ``"sM"``), then answers. With ``--record PATH`` every response the client
  sends back is appended as ``{"id", "error"}`` or ``{"id", "result": true}``.
- ``bad-answers``: a ``tools/call`` of ``wait`` is left unanswered (its id remembered) until a
  ``tools/call`` of ``release``; one of ``answer`` with ``{"kind": K}`` answers with a broken
  message (see ``bad_answer``): oversized with the id last and the waiting call's id inside
  it, an oversized notification or server request carrying the waiting call's id, JSON nested
  too deep, invalid UTF-8, a 5000-digit number, a result that is not an object, no
  ``jsonrpc`` member, or a line of noise before a normal answer; ``deep-request``: a server
  request nested too deep (id ``"deep-1"``) before a normal answer. With ``--record PATH``
  the client's answers to server requests are appended as in ``flood``.
  ``max_message_size`` in the tests is 1 MiB; oversized lines are 2 MiB.
- ``stderr-noise``: at start writes 200 KB to stderr without a newline, then ``ready``; a
  ``tools/call`` then writes 300 KB to stderr without a newline and exits with code 3.
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
    "slow-reader",
    "flood",
    "bad-answers",
    "stderr-noise",
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
BAD_SIZE = 2 * 1024 * 1024
waiting: list[object] = []  # bad-answers: ids of unanswered ``wait`` calls


def bad_answer(kind: str, rid: object) -> bytes:
    """The line(s) ``bad-answers`` writes for ``answer`` of ``kind`` (``rid``: its id)."""
    other = json.dumps(waiting[-1] if waiting else 0).encode()
    me = json.dumps(rid).encode()
    pad = b"x" * BAD_SIZE
    ok = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}\n' % me
    if kind == "oversized-id-last":
        # The first "id" in the bytes is the waiting call's, deep in the result.
        return (
            b'{"jsonrpc":"2.0","result":{"meta":{"id":%s},"content":[{"type":"text","text":"%s"}]},"id":%s}\n'
            % (other, pad, me)
        )
    if kind == "oversized-notification":
        line = (
            b'{"jsonrpc":"2.0","method":"notifications/message","params":{"id":%s,"data":"%s"}}\n'
        )
        return line % (other, pad) + ok
    if kind == "oversized-request":
        line = b'{"jsonrpc":"2.0","id":%s,"method":"sampling/createMessage","params":{"x":"%s"}}\n'
        return line % (other, pad) + ok
    if kind == "deep":
        return b'{"jsonrpc":"2.0","result":{"deep":%s%s},"id":%s}\n' % (
            b"[" * 5000,
            b"]" * 5000,
            me,
        )
    if kind == "bad-utf8":
        return b'{"jsonrpc":"2.0","id":%s,"result":{"text":"caf\xc3\x28 \xff"}}\n' % me
    if kind == "long-number":
        return b'{"jsonrpc":"2.0","id":%s,"result":{"n":%s}}\n' % (me, b"9" * 5000)
    if kind == "result-not-object":
        return b'{"jsonrpc":"2.0","id":%s,"result":[1,2]}\n' % me
    if kind == "deep-request":  # a request from the server the client cannot decode
        line = b'{"jsonrpc":"2.0","id":"deep-1","method":"roots/list","params":{"x":%s%s}}\n'
        return line % (b"[" * 5000, b"]" * 5000) + ok
    if kind == "no-jsonrpc":
        return b'{"id":%s,"result":{"content":[]}}\n' % me
    if kind == "noise":
        return b"{this is not JSON, and has no id\n" + ok
    raise ValueError(kind)


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
    if mode == "stderr-noise":
        sys.stderr.write("n" * 200_000)
        sys.stderr.write("\nready\n")
        sys.stderr.flush()

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
            if mode in ("flood", "bad-answers"):  # the client's answer to one of our requests
                entry = {"id": msg.get("id")}
                entry.update({"error": msg["error"]} if "error" in msg else {"result": True})
                record_line(record, entry)
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
            name = params.get("name")
            arguments = params.get("arguments") or {}
            if mode == "slow-reader":
                text = str(arguments.get("text", ""))[:40]
                record_line(record, {"method": method, "id": rid, "text": text})
                if name == "pause":
                    time.sleep(float(arguments.get("seconds", 3600)))
                    continue
            if mode == "stderr-noise":
                sys.stderr.write("e" * 300_000)
                sys.stderr.flush()
                sys.exit(3)
            if mode == "flood" and name == "flood":
                for i in range(int(arguments.get("notifications", 0))):
                    note = {"level": "info", "data": f"log {i}"}
                    write({"jsonrpc": "2.0", "method": "notifications/message", "params": note})
                for i in range(int(arguments.get("requests", 0))):
                    ask = {"messages": [], "maxTokens": 1}
                    write(
                        {
                            "jsonrpc": "2.0",
                            "id": f"s{i + 1}",
                            "method": "sampling/createMessage",
                            "params": ask,
                        }
                    )
            if mode == "bad-answers":
                if name == "wait":
                    waiting.append(rid)
                    continue
                if name == "answer":
                    out.write(bad_answer(str(arguments.get("kind")), rid))
                    out.flush()
                    continue
                if name == "release":
                    for wid in waiting:
                        done = {"content": [{"type": "text", "text": "released"}]}
                        write({"jsonrpc": "2.0", "id": wid, "result": done})
                    waiting.clear()
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
