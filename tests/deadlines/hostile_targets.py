"""The hostile peers of the deadline matrix as targets: the stdio script and an in-process
``mcp_lite.Server`` behaving the same way (both from ``tests/peers/hostile_stdio.py``)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_lite import Server

HOSTILE = Path(__file__).resolve().parent.parent / "peers" / "hostile_stdio.py"


def _peer_module() -> Any:
    spec = importlib.util.spec_from_file_location("hostile_stdio", HOSTILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


Peer = _peer_module().Peer


def stdio_target(mode: str, era: str = "handshake", tasks: bool = False) -> list[str]:
    """argv of the hostile stdio peer in ``mode``."""
    argv = [sys.executable, str(HOSTILE), mode, "--era", era]
    return [*argv, "--tasks"] if tasks else argv


class HostileServer(Server):
    """An in-process ``mcp_lite.Server`` that behaves as the hostile peer does."""

    def __init__(self, mode: str, era: str = "handshake", tasks: bool = False) -> None:
        super().__init__("hostile")
        self._how = (mode, era, tasks)

    def open_connection(self, send: Any, *, routed: bool = False) -> Any:
        return _HostileConnection(Peer(*self._how), send)


class _HostileConnection:
    def __init__(self, peer: Any, send: Callable[[dict[str, Any]], None]) -> None:
        self.peer, self.send = peer, send

    def receive(self, message: Any) -> None:
        reply = self.peer.answer(message)
        if reply is not None:
            self.send(reply)

    def close(self, timeout: float = 1.0) -> None:
        pass


def target(kind: str, mode: str, era: str = "handshake", tasks: bool = False) -> Any:
    if kind == "stdio":
        return stdio_target(mode, era, tasks)
    return HostileServer(mode, era, tasks)
