"""What the agent-framework adapter tests share: ``AgentPeer`` (the module's Hub over the
real stdio server ``agent_server.py``, with ``secret`` denied by a rule and ``refused``
refused by the permission handler; ``marks`` is the file the server writes ``started <n>``
and ``cancelled <n>`` lines to) and the server's constants."""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_server import PNG, SEARCH_SCHEMA

from mcp_lite.hub import Hub

__all__ = [
    "PNG",
    "SEARCH_SCHEMA",
    "SERVER",
    "AgentPeer",
    "close_thread_loop",
    "on_four_threads",
    "permission_handler",
]

SERVER = str(Path(__file__).with_name("agent_server.py"))


def permission_handler(tool: Any, arguments: Any) -> bool:
    return bool(tool.tool_name != "refused")


@dataclass
class AgentPeer:
    hub: Hub
    marks: Path
    config: dict[str, Any]

    def other_hub(self, **options: Any) -> Hub:
        """Another Hub on the same server (a process of its own), for options the shared
        Hub does not have."""
        return Hub(self.config, permission_handler=permission_handler, **options)

    def lines(self) -> list[str]:
        return self.marks.read_text().splitlines()

    def wait_for(self, prefix: str, after: int = 0, timeout: float = 30.0) -> str:
        """The first mark line starting with ``prefix`` past the first ``after`` lines."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines()[after:]:
                if line.startswith(prefix):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no {prefix!r} mark in {self.lines()!r}")
            time.sleep(0.02)


def close_thread_loop() -> None:
    """Close the event loop a framework's sync entry point left on this thread (pydantic-ai's
    ``run_sync`` and openai-agents' ``Runner.run_sync`` keep one per thread; its owner closes
    it, or it is collected unclosed)."""
    try:
        with warnings.catch_warnings():  # 3.12+: a DeprecationWarning when it makes one
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # none: asyncio.run() unset it
        return
    if not loop.is_closed():
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
    asyncio.set_event_loop(None)


def on_four_threads(run: Callable[[int], Any]) -> dict[int, Any]:
    """``run(i)`` for i in 0..7, two on each of four threads at once; the answers by i."""
    answers: dict[int, Any] = {}
    errors: list[BaseException] = []

    def worker(first: int) -> None:
        try:
            for i in (first, first + 4):
                answers[i] = run(i)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            close_thread_loop()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    return answers
