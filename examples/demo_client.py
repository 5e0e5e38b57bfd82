"""The demo from a script: connect to the demo server (``python -m mcp_lite.demo``) over stdio,
list its tools, call two.

python examples/demo_client.py
"""

from __future__ import annotations

import sys

import mcp_lite

SERVER = [sys.executable, "-m", "mcp_lite.demo"]  # the demo server shipped in the package


def main() -> None:
    with mcp_lite.connect(SERVER, timeout=30) as client:
        print(f"connected to {client.server_info.name} (protocol {client.protocol_version})")
        for tool in client.list_tools():
            print(f"  {tool.name}: {tool.description}")
        print("add(2, 3) =", client.call_tool("add", {"a": 2, "b": 3}).structured_content)
        print(client.call_tool("countdown", {"n": 3}, on_progress=show_progress).text)


def show_progress(progress: mcp_lite.Progress) -> None:
    print(f"  progress {progress.progress:g}/{progress.total or 0:g} {progress.message or ''}")


if __name__ == "__main__":
    main()
