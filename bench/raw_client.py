"""The smallest sync MCP client over stdio that still does the job: the physical limit.

A subprocess, one JSON object per line each way, and a blocking read loop on the caller's
thread. No reader thread, no futures, no models, no timeouts, no error handling beyond
"the server went away". Whatever mcp_lite spends above this is the price of its features.

    with RawClient([sys.executable, "tests/peers/fault_server.py", "echo"]) as c:
        c.call_tool("echo", {"text": "hi"})  # -> the result dict

``codec="json"`` (the default) is the standard library's ``json``, as a minimal client would
use; ``codec="pydantic_core"`` uses ``pydantic_core.to_json``/``from_json``, the codec
mcp_lite itself uses, to show the floor with the JSON cost taken out of the comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from typing import Any

_encode = json.JSONEncoder(separators=(",", ":")).encode


def _codec(name: str) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    if name == "json":
        return (lambda obj: _encode(obj).encode()), json.loads
    if name == "pydantic_core":
        from pydantic_core import from_json, to_json

        return to_json, from_json
    raise ValueError(f"unknown codec {name!r}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Close the server's stdin and wait for it to exit (killed after 2 s)."""
    try:
        proc.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
    try:
        proc.wait(2.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class RawClient:
    def __init__(self, command: list[str], codec: str = "json") -> None:
        self._dumps, self._loads = _codec(codec)
        self._proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin = self._proc.stdin
        self._stdout = self._proc.stdout
        self._next_id = 0
        self.server_info = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw-bench-client", "version": "0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        self._stdin.write(self._dumps(message) + b"\n")
        self._stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        while True:
            line = self._stdout.readline()
            if not line:
                raise ConnectionError("the server closed its stdout")
            reply = self._loads(line)
            if reply.get("id") != rid:
                continue  # a notification or a request from the server: ignored here
            if "error" in reply:
                raise RuntimeError(reply["error"])
            return reply["result"]  # type: ignore[no-any-return]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def list_tools(self) -> list[dict[str, Any]]:
        return self.request("tools/list")["tools"]  # type: ignore[no-any-return]

    def close(self) -> None:
        _stop(self._proc)
        self._stdout.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ThreadedRawClient:
    """The smallest client that lets several threads share one connection: the floor for
    the concurrency row. One reader thread routes each answer to its caller, who waits on
    a lock of its own; a caller writes its request whole under one write lock. Nothing
    else: no timeouts, no bounds, no error handling beyond "the server went away"."""

    READER_THREAD = True  # False: the callers read (TurnTakingRawClient)

    def __init__(self, command: list[str]) -> None:
        self._proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._fd = self._proc.stdin.fileno()
        self._write_lock = threading.Lock()
        self._waiting: dict[int, list[Any]] = {}  # id -> [lock held until answered, answer]
        self._next_id = 0
        self._reader: threading.Thread | None = None
        if self.READER_THREAD:
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()
        self.request("initialize", {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw-threaded-bench-client", "version": "0"},
        })
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _write(self, message: dict[str, Any]) -> None:
        os.write(self._fd, _encode(message).encode() + b"\n")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            reply = json.loads(line)
            slot = self._waiting.pop(reply.get("id"), None)
            if slot is not None:
                slot[1] = reply
                slot[0].release()
        for slot in list(self._waiting.values()):  # the server went away: wake everyone
            slot[0].release()

    def _send(self, method: str, params: dict[str, Any] | None) -> list[Any]:
        """Register and write a request; its slot: [lock held until answered, answer,
        a flag for TurnTakingRawClient]."""
        done = threading.Lock()
        done.acquire()
        slot: list[Any] = [done, None, False]
        with self._write_lock:
            self._next_id += 1
            rid = self._next_id
            self._waiting[rid] = slot
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
            if params is not None:
                message["params"] = params
            self._write(message)
        return slot

    def _wait(self, slot: list[Any]) -> None:
        slot[0].acquire()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        slot = self._send(method, params)
        self._wait(slot)
        reply = slot[1]
        if reply is None:
            raise ConnectionError("the server closed its stdout")
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["result"]  # type: ignore[no-any-return]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        _stop(self._proc)
        if self._reader is not None:
            self._reader.join(2.0)
        self._proc.stdout.close()  # type: ignore[union-attr]

    def __enter__(self) -> ThreadedRawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TurnTakingRawClient(ThreadedRawClient):
    """The other way to share one connection: no reader thread; the waiting callers take
    turns to read (leader/follower). The leader reads and routes every answer until its
    own is in, then hands the turn to the oldest caller still waiting. Answers for others
    still wake their callers: this shows what taking turns saves over a reader thread on
    the machine at that moment (the docs' performance page has the figures). One lock,
    ``_turn``, orders every hand-over and wake-up: a slot's lock is released only while its
    ``[2]`` flag is off; the flag is set with the release and reset by the slot's owner
    when it wakes."""

    READER_THREAD = False

    def __init__(self, command: list[str]) -> None:
        self._turn = threading.Lock()
        self._leading = False
        self._pending = b""
        super().__init__(command)

    def _wake(self, slot: list[Any]) -> None:  # holding _turn
        if not slot[2]:
            slot[2] = True
            slot[0].release()

    def _hand_over(self) -> None:  # holding _turn, the lead just given up
        # (a copy: callers register under the write lock, not _turn)
        for slot in list(self._waiting.values()):  # the oldest caller still waiting
            if slot[1] is None:
                self._wake(slot)
                return

    def _wait(self, slot: list[Any]) -> None:
        fd = self._proc.stdout.fileno()  # type: ignore[union-attr]
        while True:
            with self._turn:
                if slot[1] is not None:
                    if not self._leading:  # a turn handed to us while the answer came
                        self._hand_over()
                    return
                lead = not self._leading
                self._leading = True
            if not lead:
                slot[0].acquire()
                with self._turn:
                    slot[2] = False
                continue
            try:
                while slot[1] is None:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise ConnectionError("the server closed its stdout")
                    *lines, self._pending = (self._pending + chunk).split(b"\n")
                    for line in lines:
                        reply = json.loads(line)
                        with self._turn:
                            other = self._waiting.pop(reply.get("id"), None)
                            if other is not None:
                                other[1] = reply
                                if other is not slot:
                                    self._wake(other)
            finally:
                with self._turn:
                    self._leading = False
                    self._hand_over()
            return
