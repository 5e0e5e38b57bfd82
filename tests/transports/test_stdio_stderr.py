"""A stdio server that writes huge stderr lines without newlines (``fault_server.py
stderr-noise``): stderr is drained in chunks, every kept line is capped, and the tail an
error quotes stays short.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

import mcp_lite
from mcp_lite.errors import ConnectionClosed
from mcp_lite.transports.stdio import _STDERR_LINE_MAX, _STDERR_TAIL_CHARS

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

MARKER = "more bytes of this line dropped"


def test_huge_stderr_lines_are_capped_and_the_quoted_tail_stays_bounded(
    fault_cmd: Callable[..., list[str]],
    wait_until: Callable[..., bool],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_lite.stderr")
    with mcp_lite.connect(fault_cmd("stderr-noise"), timeout=30.0) as client:
        transport = client.transport
        assert wait_until(lambda: "ready" in transport.stderr_tail(), timeout=20)  # type: ignore[union-attr]
        lines = list(transport._stderr_tail)  # type: ignore[union-attr]
        assert lines[-1] == "ready"
        # 200 KB without a newline: kept to the cap, the rest counted, not held.
        assert lines[0].startswith("n" * 100)
        assert MARKER in lines[0] and str(200_000 - _STDERR_LINE_MAX) in lines[0]
        assert len(lines[0]) < _STDERR_LINE_MAX + 100

        # The server writes 300 KB without a newline and exits: the error quotes a short tail.
        with pytest.raises(ConnectionClosed) as info:
            client.call_tool("echo", {"text": "x"}, timeout=30.0)
        err = info.value
        assert err.exit_code == 3
        assert len(err.stderr_tail) <= _STDERR_TAIL_CHARS
        assert MARKER in err.stderr_tail
        assert len(str(err)) < _STDERR_TAIL_CHARS + 500
    records = [r.getMessage() for r in caplog.records if r.name == "mcp_lite.stderr"]
    assert records and all(len(m) < _STDERR_LINE_MAX + 200 for m in records)
