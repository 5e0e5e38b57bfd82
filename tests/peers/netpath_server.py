"""The server end of the network-fault test: a small mcp_lite server on Streamable HTTP, bound
to the address given (an address of the test's own network namespace, never another host).

    python netpath_server.py HOST PORT

Tools: ``echo(text)`` answers its text (so every answer can be matched to its caller) and
``blob(size)`` answers ``size`` bytes of text (for the slow link).
"""

from __future__ import annotations

import sys
import time

from mcp_lite.server import Server

server = Server("netpath")


@server.tool()
def echo(text: str) -> str:
    """Answer the text as it came."""
    return text


@server.tool()
def blob(size: int) -> str:
    """``size`` bytes of text."""
    return "x" * size


if __name__ == "__main__":
    http = server.serve_http(host=sys.argv[1], port=int(sys.argv[2]))
    print(http.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        http.close()
