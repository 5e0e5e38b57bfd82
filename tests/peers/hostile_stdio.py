"""Hostile stdio MCP servers for the deadline matrix, in plain Python with no dependencies.

    python hostile_stdio.py MODE [--era handshake|stateless] [--tasks] [--delay S]

Modes (each reads stdin until it closes, then exits):

- ``silent``: answers nothing at all, not even ``initialize``.
- ``mute``: answers the handshake, then nothing. ``--era handshake`` (the default) answers
  ``server/discover`` with -32601 and ``initialize`` with the requested version (2025-11-25
  when it is not a handshake version); ``--era stateless`` answers the first
  ``server/discover`` as a 2026-07-28 server (later ones, e.g. a 2026 ``ping``, get nothing;
  ``initialize`` gets -32022). The capabilities declare tools,
  resources, prompts, completions, logging and the skills extension; ``--tasks`` adds the
  2025-11-25 ``tasks`` capability (list, tools/call), which makes a client look up the tool
  list before a call.
- ``pages``: as ``mute``, but every list method (``tools/list``, ``resources/list``,
  ``resources/templates/list``, ``prompts/list``, ``tasks/list``, ``skills/list``) is answered
  after ``--delay`` seconds (default 0.05) with an empty page and a new cursor, forever.
  Nothing else is answered.
- ``lists``: as ``mute``, but ``tools/list`` is answered (one tool, ``echo``): every call
  of it then goes unanswered.
- ``asks``: as ``mute``, but ``tools/call`` (and every retry of it) is answered with a
  2026-07-28 ``input_required`` result asking for ``roots/list``, forever (use ``--era
  stateless``).
- ``deaf``: as ``mute``, but once ``notifications/initialized`` came it closes its stdin and
  its stderr and keeps running (a write to it fails; no last words, no exit code).
- ``no-discover``: never answers ``server/discover``; answers ``initialize`` (handshake era),
  ``ping`` and ``tools/list`` (one tool, ``echo``) and ``tools/call`` of ``echo``.
"""

from __future__ import annotations

import json
import os
import sys
import time

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
STATELESS_VERSION = "2026-07-28"
LISTS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
    "tasks/list": "tasks",
    "skills/list": "skills",
}
SERVER_INFO = {"name": "hostile", "version": "1"}


def capabilities(tasks: bool) -> dict:
    caps: dict = {
        "tools": {},
        "resources": {"subscribe": True},
        "prompts": {},
        "completions": {},
        "logging": {},
        "extensions": {"io.modelcontextprotocol/skills": {}},
    }
    if tasks:
        caps["tasks"] = {"list": {}, "requests": {"tools": {"call": {}}}}
    return caps


class Peer:
    """One hostile server's behaviour: ``answer(message)`` is its reply, or None (no answer).
    The in-process rows of the matrix use it directly, inside a ``mcp_lite.Server``."""

    def __init__(
        self, mode: str, era: str = "handshake", tasks: bool = False, delay: float = 0.05
    ) -> None:
        self.mode, self.era, self.tasks, self.delay = mode, era, tasks, delay
        self.page = 0
        self.discovered = False  # a 2026-07-28 handshake happened: later probes get nothing

    def answer(self, message: object) -> dict | None:
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            return None  # notifications and answers: nothing to do
        method, rid = message["method"], message["id"]
        if self.mode == "silent":
            return None
        if method == "server/discover":
            if self.mode == "no-discover" or self.discovered:
                return None
            if self.era == "stateless":
                self.discovered = True
                result = {
                    "supportedVersions": [STATELESS_VERSION],
                    "capabilities": capabilities(self.tasks),
                    "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
                    "resultType": "complete",
                }
                return {"jsonrpc": "2.0", "id": rid, "result": result}
            return _error(rid, -32601, "method not found")
        if method == "initialize":
            if self.era == "stateless":
                return _error(rid, -32022, "unsupported protocol version", [STATELESS_VERSION])
            asked = (message.get("params") or {}).get("protocolVersion")
            result = {
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else "2025-11-25",
                "capabilities": capabilities(self.tasks),
                "serverInfo": SERVER_INFO,
            }
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        if self.mode == "no-discover":
            if method == "ping":
                return {"jsonrpc": "2.0", "id": rid, "result": {}}
            if method == "tools/list":
                tool = {"name": "echo", "inputSchema": {"type": "object"}}
                return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}}
            if method == "tools/call":
                content = [{"type": "text", "text": "echo"}]
                return {"jsonrpc": "2.0", "id": rid, "result": {"content": content}}
            return None
        if self.mode == "asks" and method == "tools/call":
            result = {
                "resultType": "input_required",
                "inputRequests": {"roots": {"method": "roots/list", "params": {}}},
                "requestState": f"round-{rid}",
            }
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        if self.mode == "lists" and method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object"}}
            return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}}
        if self.mode == "pages" and method in LISTS:
            time.sleep(self.delay)
            self.page += 1
            result = {LISTS[method]: [], "nextCursor": f"c{self.page}"}
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        return None  # mute (and pages, for anything but a list): never answered


def _error(rid: object, code: int, text: str, supported: list[str] | None = None) -> dict:
    error: dict = {"code": code, "message": text}
    if supported is not None:
        error["data"] = {"supported": supported}
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def main(argv: list[str]) -> None:
    peer = Peer(
        argv[0],
        argv[argv.index("--era") + 1] if "--era" in argv else "handshake",
        "--tasks" in argv,
        float(argv[argv.index("--delay") + 1]) if "--delay" in argv else 0.05,
    )
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        reply = peer.answer(message)
        if reply is not None:
            send(reply)
        if peer.mode == "deaf" and message.get("method") == "notifications/initialized":
            os.close(0)
            os.close(2)
            while True:
                time.sleep(60)  # running, stopped reading: the client's close kills it


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (BrokenPipeError, KeyboardInterrupt):
        pass
