"""A stdio peer whose tools ask the client (elicitation, sampling, roots), for the tests of
server-to-client requests through a Hub or a gateway, and a resource that can be subscribed.

    python asking_server.py ERA [MARKER]   (ERA: 2025-11-25 or 2026-07-28; MARKER: ignored,
                                            lets a test find the process)

- ``ask(question)``: elicits ``{"answer": str}``; returns ``"<action>: <answer>"``;
- ``sample(prompt)``: asks the client's LLM; returns its text;
- ``roots()``: the client's root URIs, comma-separated;
- ``pid()``: this process's id;
- ``bump()``: tells the clients subscribed to ``mem://counter`` that it changed;
- ``ask_later(question)``: ``ask`` that must run as a task;
- ``wait(seconds)``: answers ``"waited"`` after ``seconds``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from mcp_lite.server import Context, Server

server = Server("asking", versions=[sys.argv[1] if len(sys.argv) > 1 else "2025-11-25"])
_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


@server.tool()
def ask(question: str, ctx: Context) -> str:
    """Asks the user ``question``."""
    reply: dict[str, Any] = ctx.elicit(question, _SCHEMA)
    return f"{reply.get('action')}: {(reply.get('content') or {}).get('answer')}"


@server.tool(task_support="required")
def ask_later(question: str, ctx: Context) -> str:
    """Asks the user ``question``, as a task."""
    return ask(question, ctx)


@server.tool()
def wait(seconds: float) -> str:
    """Answers after ``seconds``."""
    time.sleep(seconds)
    return "waited"


@server.tool()
def sample(prompt: str, ctx: Context) -> str:
    """Asks the client's model."""
    reply = ctx.sample(prompt, 50)
    return str((reply.get("content") or {}).get("text"))


@server.tool()
def roots(ctx: Context) -> str:
    """The client's roots."""
    return ",".join(str(root.get("uri")) for root in ctx.list_roots())


@server.tool()
def pid() -> str:
    """This process's id."""
    return str(os.getpid())


@server.resource("mem://counter")
def counter() -> str:
    return "counter"


@server.tool()
def bump() -> str:
    """Tells the subscribers of mem://counter that it changed."""
    server.notify_resource_updated("mem://counter")
    return "bumped"


if __name__ == "__main__":
    server.run_stdio()
