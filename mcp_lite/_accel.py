"""The one place that picks the kernels: the compiled ``_speedups`` unless
``MCP_LITE_NO_EXTENSIONS`` is set or it fails to import, else the pure-Python twin;
``USE_EXTENSIONS`` says which and ``PURE_REASON`` why (see docs/explanation/architecture.md,
"Kernels").
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

__all__ = [
    "PURE_REASON",
    "USE_EXTENSIONS",
    "Gate",
    "HeldLock",
    "LruCache",
    "NdjsonSplitter",
    "ResponseIdScanner",
    "SseEvent",
    "SseParser",
    "build_tool_name",
    "build_tool_names",
    "decode_message",
    "encode_message",
    "normalize_name",
    "normalize_names",
    "open_deferred",
    "parse_tool_name",
    "plain_shape",
    "scan_response_id",
    "write_nowait",
]

USE_EXTENSIONS = False
PURE_REASON: str | None = "MCP_LITE_NO_EXTENSIONS is set"
if not TYPE_CHECKING and os.environ.get("MCP_LITE_NO_EXTENSIONS", "") in ("", "0"):
    try:
        from mcp_lite import _speedups
    except ImportError as exc:
        # a missing module means the build had no compiler (or ran with the flag off)
        missing = isinstance(exc, ModuleNotFoundError) and exc.name == "mcp_lite._speedups"
        PURE_REASON = "not compiled at install" if missing else f"compiled module failed: {exc}"
    else:
        # An in-place build older than the sources lacks newer kernels: all or nothing.
        stale = sorted(set(__all__[2:]) - set(dir(_speedups)))
        if stale:
            PURE_REASON = f"compiled module is out of date (no {', '.join(stale)}): rebuild it"
        else:
            from mcp_lite._speedups import *  # noqa: F403

            USE_EXTENSIONS = True
            PURE_REASON = None
if TYPE_CHECKING or not USE_EXTENSIONS:
    from mcp_lite._speedups_py import (
        Gate,
        HeldLock,
        LruCache,
        NdjsonSplitter,
        ResponseIdScanner,
        SseEvent,
        SseParser,
        build_tool_name,
        build_tool_names,
        decode_message,
        encode_message,
        normalize_name,
        normalize_names,
        open_deferred,
        parse_tool_name,
        plain_shape,
        scan_response_id,
        write_nowait,
    )
