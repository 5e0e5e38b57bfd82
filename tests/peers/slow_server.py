"""An mcp_lite.Server over stdio with a slow tool that records what the client cancelled.

    python slow_server.py RECORD_PATH

Tools:
- ``wait(seconds)``: waits up to ``seconds`` for the client to cancel the request. When the
  cancellation arrives (``ctx.cancelled`` is set by ``notifications/cancelled``) it appends
  ``{"cancelled": <request id>}`` as a JSON line to RECORD_PATH; it always appends
  ``{"started": <request id>}`` first, so a test can wait until the call is running.
- ``echo(text)``: answers at once.
- ``notify_then_echo(text, n)``: sends ``n`` log notifications, then answers.
- ``roots_echo(text)``: asks the client for its roots (a server-to-client request on the
  handshake era, an input round on 2026-07-28), answers ``"<text>:<number of roots>"``.

Speaks both protocol eras (the client chooses with ``protocol_version``).
"""

from __future__ import annotations

import json
import sys
import threading

from mcp_lite.server import Context, Server

RECORD = sys.argv[1]
_lock = threading.Lock()
server = Server("slow")


def record(entry: dict[str, object]) -> None:
    with _lock, open(RECORD, "a") as f:
        f.write(json.dumps(entry) + "\n")


@server.tool()
def wait(seconds: float, ctx: Context) -> str:
    """Waits for a cancellation, at most ``seconds``."""
    record({"started": ctx.request_id})
    if ctx.cancelled.wait(seconds):
        record({"cancelled": ctx.request_id})
        return "cancelled"
    return "waited"


@server.tool()
def echo(text: str) -> str:
    """Echoes ``text``."""
    return text


@server.tool()
def notify_then_echo(text: str, n: int, ctx: Context) -> str:
    """Sends ``n`` log messages, then echoes ``text``."""
    for i in range(n):
        ctx.log("info", f"{text} {i}")
    return text


@server.tool()
def roots_echo(text: str, ctx: Context) -> str:
    """Lists the client's roots, then echoes ``text`` with their number."""
    return f"{text}:{len(ctx.list_roots())}"


if __name__ == "__main__":
    server.run_stdio()
