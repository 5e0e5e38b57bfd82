"""Tools whose definitions ask for a result size limit, served by the official Python SDK over
stdio, for the Hub's per-tool truncation tests (``_meta["anthropic/maxResultSizeChars"]``).

    python sized_server.py

Each tool takes ``size`` and answers that many ``x`` characters: ``plain`` (no ``_meta``),
``raised`` (200,000), ``capped`` (600,000: over the 500,000 cap), ``lower`` (50,000: below
the Hub's default budget), ``text`` ("300000"), ``fractional`` (300000.5) and ``flag`` (true).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

from mcp.server.mcpserver import MCPServer  # noqa: E402

SIZES: dict[str, Any] = {
    "raised": 200_000,
    "capped": 600_000,
    "lower": 50_000,
    "text": "300000",
    "fractional": 300_000.5,
    "flag": True,
}


def _answer(size: int) -> str:
    return "x" * size


def _tool() -> Callable[[int], str]:
    def tool(size: int) -> str:
        return _answer(size)

    return tool


def main() -> None:
    server = MCPServer("sized")
    server.add_tool(_tool(), name="plain", description="size characters")
    for name, limit in SIZES.items():
        server.add_tool(
            _tool(),
            name=name,
            description="size characters",
            meta={"anthropic/maxResultSizeChars": limit},
        )
    server.run("stdio")


if __name__ == "__main__":
    main()
