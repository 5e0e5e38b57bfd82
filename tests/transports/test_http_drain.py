"""``HttpTransport.drain_on_expiry`` (what a Hub sets on a client through its gateway): a
404 on the session fails the request it answered, while the other requests in flight keep
their own outcomes (sent to a gateway that restarted, each gets its own 404, which is safe to
send again; one running in a gateway that died must not be taken for one). Without it, every
request in flight failed with the first one's ``SessionExpired``, which a Hub took as "never
ran" and sent again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import McpError, RequestTimeout, SessionExpired


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_a_404_leaves_the_other_requests_their_own_outcome(
    request: pytest.FixtureRequest, kind: str, wait_until: Callable[..., bool]
) -> None:
    server = request.getfixturevalue("unix_fault_server" if kind == "unix" else "fault_server")
    with mcp_lite.Client(
        server.url(), protocol_version="2025-11-25", auto_reconnect=False, timeout=30
    ) as client:
        client.transport.drain_on_expiry = True  # type: ignore[union-attr]
        outcome: dict[str, Any] = {}

        def held() -> None:
            try:
                outcome["held"] = client.call_tool("hang", timeout=3)
            except McpError as exc:
                outcome["held"] = exc

        caller = threading.Thread(target=held, daemon=True)
        caller.start()
        assert wait_until(lambda: server.state.counts["tool hang"] == 1, 10.0)
        with pytest.raises(SessionExpired):
            client.call_tool("expire", timeout=10)
        caller.join(10)
        # its own outcome, its deadline (the server never answers it), not the other's 404
        assert isinstance(outcome["held"], RequestTimeout), outcome
