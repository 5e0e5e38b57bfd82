"""Deferred tool loading: how much of the model's context a 500-tool pool costs with and
without ``Hub.tool_definitions(deferred=True)``.

    .venv/bin/python bench/bench_tool_search.py

The pool is ``bench/tool_list_server.py 500`` (realistic names, descriptions and schemas)
over stdio. Characters of JSON-encoded definitions stand in for tokens (about 4 characters
per token for English and JSON). "After one search" adds what a ``ToolSearch`` call returns
(5 full definitions) to the deferred list: what the model carries on its next turn.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
POOL = 500


def run(print: Callable[..., Any] = print, targets: Any = None) -> dict[str, float]:
    from mcp_lite.hub import Hub

    config = {"svc": {"command": sys.executable, "args": [str(BENCH / "tool_list_server.py"),
                                                         str(POOL)]}}
    with Hub(config) as hub:
        hub.connect_all()
        full = len(json.dumps(hub.tool_definitions()))
        deferred_defs = hub.tool_definitions(deferred=True)
        deferred = len(json.dumps(deferred_defs))
        start = time.perf_counter()
        rounds = 50
        for _ in range(rounds):
            found = hub.call_tool("ToolSearch", {"query": "create github issue", "max_results": 5})
        search_ms = (time.perf_counter() - start) / rounds * 1e3
        loaded = found.structured_content["tools"]
        after = deferred + len(json.dumps(loaded))
        count = len(hub.tools())
    saving = 1 - deferred / full
    print(f"  pool: {count} tools from bench/tool_list_server.py over stdio")
    print(f"  all definitions            {full:>9,} chars  (~{full // 4:,} tokens)")
    print(f"  deferred (search tool)     {deferred:>9,} chars  (~{deferred // 4:,} tokens)")
    print(f"  after one search (+{len(loaded)})     {after:>9,} chars  (~{after // 4:,} tokens)")
    print(f"  saving                     {saving:>9.1%} of the definitions' characters")
    print(f"  ToolSearch call            {search_ms:>9.2f} ms (mean of {rounds} calls)")
    print(f"  first match for 'create github issue': "
          f"{loaded[0]['name'] if loaded else '(none)'}")
    if targets is not None:
        targets.ratio("deferred tool list size vs all definitions (500 tools)",
                      deferred / full, "<= 0.05x", 0.05)
    return {"full": full, "deferred": deferred, "after": after, "search_ms": search_ms}


if __name__ == "__main__":
    run()
