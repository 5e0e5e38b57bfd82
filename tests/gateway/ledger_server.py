"""A stdio peer for the gateway restart tests: ``work(id)`` appends ``id`` to the ledger file,
then waits until the release file exists (it is running while the test kills the gateway);
``quick()`` answers at once. ``VERSIONS`` (comma-separated, optional) picks the eras served.

    python ledger_server.py LEDGER RELEASE [VERSIONS]
"""

from __future__ import annotations

import os
import sys
import time

from mcp_lite.server import Server

ledger, release = sys.argv[1], sys.argv[2]
versions = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else None
server = Server("ledger", versions=versions) if versions else Server("ledger")


@server.tool()
def work(id: str) -> str:
    """Notes ``id`` in the ledger, then waits for the release file."""
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{id}\n".encode())  # one write: whole lines even from many threads
    finally:
        os.close(fd)
    while not os.path.exists(release):
        time.sleep(0.02)
    return f"done {id}"


@server.tool()
def quick() -> str:
    """Answers at once."""
    return "ok"


if __name__ == "__main__":
    server.run_stdio()
