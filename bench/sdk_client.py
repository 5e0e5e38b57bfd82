"""The official Python SDK client (PyPI ``mcp`` 2.x), used the way its docs show.

As a module: ``open_session(command)``, an async context manager that starts a stdio server,
runs the ``initialize`` handshake and yields a ``mcp.ClientSession``.

As a script, the SDK equivalent of ``python -m mcp_lite call --stdio CMD TOOL JSON`` (for the
one-shot benchmark): start the server, call one tool, print its text, exit::

    python bench/sdk_client.py --stdio "python tests/peers/fault_server.py echo" echo '{"text": "hi"}'
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


@asynccontextmanager
async def open_session(command: Sequence[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command[0], args=list(command[1:]))
    async with stdio_client(params) as (read_stream, write_stream), \
            ClientSession(read_stream, write_stream) as session:
        await session.initialize()
        yield session


async def call_once(command: Sequence[str], tool: str, arguments: dict[str, object]) -> int:
    async with open_session(command) as session:
        result = await session.call_tool(tool, arguments)
    for block in result.content:
        text = getattr(block, "text", None)
        if text is not None:
            print(text)
    return 1 if result.is_error else 0


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] != "--stdio":
        print("usage: sdk_client.py --stdio CMD TOOL JSON", file=sys.stderr)
        return 2
    return asyncio.run(call_once(shlex.split(argv[1]), argv[2], json.loads(argv[3])))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
