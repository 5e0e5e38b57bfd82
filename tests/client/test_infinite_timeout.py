"""``timeout=float("inf")`` with progress that may extend a call (``reset_timeout_on_progress``
and ``max_total_timeout``): the call's hard deadline is the total from now, never
``inf - inf`` (NaN), which no comparison or socket bound can use."""

from __future__ import annotations

import math

import mcp_lite
from mcp_lite._deadline import Deadline


def test_an_infinite_timeout_with_a_total_cap_keeps_a_real_hard_deadline() -> None:
    server = mcp_lite.Server("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with mcp_lite.connect(server, reset_timeout_on_progress=True, max_total_timeout=30) as client:
        conn = client._connection()
        call = conn._new_call(None, "tools/call", {}, Deadline.after(math.inf), 30.0, None, True)
        assert not math.isnan(call.hard.at) and math.isfinite(call.hard.at)
        got = client.call_tool("add", {"a": 1, "b": 2}, timeout=math.inf)
        assert got.data == {"result": 3}
