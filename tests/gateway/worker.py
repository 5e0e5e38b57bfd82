"""One worker process of the gateway tests: a Hub on CONFIG through GATEWAY calling
``mcp__plain__add`` N times; prints one JSON line ``{"ok": n, "wrong": [...], "via": ...}``.

    python worker.py CONFIG GATEWAY INDEX N
"""

from __future__ import annotations

import json
import sys

from mcp_lite import Hub


def main() -> None:
    config, gateway, index, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    wrong = []
    with Hub.from_config(config_files=[config], gateway=gateway) as hub:
        for i in range(count):
            got = hub.call_tool("mcp__plain__add", {"a": index * 1000, "b": i}, timeout=30).text
            if got != str(index * 1000 + i):
                wrong.append(got)
        via = hub.status()["plain"].via
    print(json.dumps({"ok": count - len(wrong), "wrong": wrong, "via": via}), flush=True)


if __name__ == "__main__":
    main()
